// Every examples/*.pg compiles to PTX that the toolkit's ptxas assembles for sm_80 and sm_90.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"

namespace fs = std::filesystem;
using namespace ptxgate;

namespace {

struct CommandResult {
  int status = -1;
  std::string output;
};

CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  result.status = pclose(pipe);
  return result;
}

std::string shell_quote(const std::string& s) {
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::vector<fs::path> example_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(PTXGATE_SOURCE_DIR) / "examples"))
    if (entry.is_regular_file() && entry.path().extension() == ".pg") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("ptxas assembles the PTX of every example for sm_80 and sm_90") {
  const std::string ptxas = PTXGATE_PTXAS;
  if (!fs::exists(ptxas)) {
    MESSAGE("skipped: ptxas not found at " << ptxas << " (install the CUDA Toolkit to run this test)");
    return;
  }
  const auto files = example_files();
  REQUIRE_FALSE(files.empty());
  const fs::path scratch = fs::temp_directory_path() / fmt::format("ptxgate-ptxas-test-{}", getpid());
  fs::create_directories(scratch);

  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto loaded = ir::load_module(diag::SourceFile(file.filename().string(), std::move(text)));
    CAPTURE(file.filename().string());
    REQUIRE_MESSAGE(loaded.has_value(), (loaded ? "" : diag::render_text(loaded.error())));
    for (const char* target : {"sm_80", "sm_90"}) {
      CAPTURE(target);
      codegen::CodegenOptions options;
      options.target = target;
      auto compiled = codegen::compile(loaded->module, options);
      REQUIRE_MESSAGE(compiled.has_value(), (compiled ? "" : diag::render_text(compiled.error())));
      CHECK(compiled->kernels.size() == loaded->module.kernels.size());
      const fs::path ptx_file = scratch / fmt::format("{}.{}.ptx", file.stem().string(), target);
      std::ofstream(ptx_file, std::ios::binary) << compiled->ptx;
      auto assembled = run_command(fmt::format("{} -arch={} {} -o /dev/null", shell_quote(ptxas), target,
                                               shell_quote(ptx_file.string())));
      CHECK_MESSAGE(assembled.status == 0, assembled.output);
    }
  }
  fs::remove_all(scratch);
}
