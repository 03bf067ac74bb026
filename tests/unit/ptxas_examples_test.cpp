// Every examples/*.pg builds (PTX, then the toolkit's ptxas) for sm_80 and sm_90 with resources for each kernel.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/toolchain/build.hpp"

namespace fs = std::filesystem;
using namespace ptxgate;

namespace {

std::vector<fs::path> example_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(PTXGATE_SOURCE_DIR) / "examples"))
    if (entry.is_regular_file() && entry.path().extension() == ".pg") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("ptxas assembles the PTX of every example for sm_80 and sm_90") {
  const auto toolkit = toolchain::discover();
  if (!toolkit.ptxas) {
    MESSAGE("skipped: " << toolkit.ptxas.error().items()[0].message << " (install the CUDA Toolkit to run this test)");
    return;
  }
  const auto files = example_files();
  REQUIRE_FALSE(files.empty());
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto loaded = ir::load_module(diag::SourceFile(file.filename().string(), std::move(text)));
    CAPTURE(file.filename().string());
    REQUIRE_MESSAGE(loaded.has_value(), (loaded ? "" : diag::render_text(loaded.error())));
    for (const char* target : {"sm_80", "sm_90"}) {
      CAPTURE(target);
      codegen::CodegenOptions options;
      options.target = *ir::Target::parse(target);
      auto built = toolchain::build(loaded->module, options, toolkit, /*assemble_cubin=*/true);
      REQUIRE_MESSAGE(built.has_value(), (built ? "" : diag::render_text(built.error())));
      CHECK(built->kernels.size() == loaded->module.kernels.size());
      CHECK(built->cubin.substr(0, 4) == "\x7f" "ELF");
      for (const auto& kernel : built->kernels) CHECK(built->resources.contains(kernel.name));
    }
  }
}

TEST_CASE("the installed ptxas assembles every target ptxgate offers (Blackwell from sm_90 PTX)") {
  const auto toolkit = toolchain::discover();
  if (!toolkit.ptxas) {
    MESSAGE("skipped: " << toolkit.ptxas.error().items()[0].message << " (install the CUDA Toolkit to run this test)");
    return;
  }
  std::ifstream in(fs::path(PTXGATE_SOURCE_DIR) / "examples" / "block_sum.pg", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto loaded = ir::load_module(diag::SourceFile("block_sum.pg", std::move(text)));
  REQUIRE(loaded.has_value());
  for (const ir::Target target : ir::supported_targets()) {
    CAPTURE(target.name());
    codegen::CodegenOptions options;
    options.target = target;
    auto built = toolchain::build(loaded->module, options, toolkit, /*assemble_cubin=*/true);
    REQUIRE_MESSAGE(built.has_value(), (built ? "" : diag::render_text(built.error())));
    CHECK(built->cubin.substr(0, 4) == "\x7f" "ELF");
    CHECK_FALSE(built->resources.empty());
  }
}
