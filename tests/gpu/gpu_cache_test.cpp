// Module cache on the GPU: cold compile, in-process hit, disk hit in a new process, corrupted entry.
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "gpu_support.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;
using runtime::LaunchConfig;

namespace ptxgate::gpu_test {

namespace {

std::expected<std::unique_ptr<runtime::Runtime>, diag::Diagnostics> runtime_with_cache(const std::string& dir) {
  runtime::RuntimeOptions options;
  options.cache.directory = dir;
  return runtime::Runtime::create(options);
}

/// Runs saxpy once on random data and checks it; true when correct.
bool saxpy_works(runtime::Runtime& rt, runtime::Kernel& k) {
  const uint32_t n = 1000;
  auto x = random_values<float>(n, -1, 1, 11), y = random_values<float>(n, -1, 1, 12);
  auto dx = rt.upload(std::span<const float>(x)), dy = rt.upload(std::span<const float>(y));
  if (!dx || !dy) return false;
  if (!k.launch(LaunchConfig::linear(4, 256), {*dy, *dx, 3.0f, n}) || !rt.synchronize()) return false;
  auto got = rt.download<float>(*dy);
  if (!got) return false;
  for (uint32_t i = 0; i < n; ++i)
    if (std::fabs((*got)[i] - (3.0 * x[i] + y[i])) > 1e-5) return false;
  return true;
}

}  // namespace

/// `--cache-child DIR OUTCOME [WARNING_CODE]`: compile saxpy with the cache in DIR in this
/// fresh process and exit 0 when the outcome (and warning) is as expected and saxpy works.
int cache_child(int argc, char** argv) {
  if (argc < 4) return 2;
  auto rt = runtime_with_cache(argv[2]);
  if (!rt) return 3;
  auto path = example_path("saxpy");
  auto k = (*rt)->compile(read_text(path), "saxpy", path.string());
  if (!k) {
    std::fputs(diag::render_text(k.error()).c_str(), stderr);
    return 4;
  }
  std::string outcome(module_cache::outcome_name((*k)->cache_outcome()));
  auto warnings = (*rt)->take_warnings();
  std::string codes;
  for (const auto& w : warnings) codes += std::string(diag::info(w.code).name) + " ";
  std::printf("child: outcome=%s warnings=%s\n", outcome.c_str(), codes.c_str());
  if (outcome != argv[3]) return 5;
  if (argc >= 5 && codes.find(argv[4]) == std::string::npos) return 6;
  return saxpy_works(**rt, **k) ? 0 : 7;
}

}  // namespace ptxgate::gpu_test

TEST_CASE("module cache: cold compile, in-process hit, disk hit in a new process, corrupted entry") {
  std::string dir = (std::filesystem::temp_directory_path() / fmt::format("ptxgate-gpu-cache-{}", getpid())).string();
  std::filesystem::remove_all(dir);
  {
    auto rt = runtime_with_cache(dir);
    if (!rt) FAIL(diag::render_text(rt.error()));
    auto path = example_path("saxpy");
    auto cold = (*rt)->compile(read_text(path), "saxpy", path.string());
    if (!cold) FAIL(diag::render_text(cold.error()));
    CHECK((*cold)->cache_outcome() == module_cache::CacheOutcome::compiled);
    MESSAGE("loaded from " << ((*cold)->loaded_from_cubin() ? "cubin" : "PTX (JIT)"));
    CHECK(saxpy_works(**rt, **cold));
    auto warm = (*rt)->compile(read_text(path), "saxpy", path.string());
    REQUIRE(warm);
    CHECK((*warm)->cache_outcome() == module_cache::CacheOutcome::memory_hit);
    CHECK(&(*warm)->function() == &(*cold)->function());  // same loaded module and CUfunction
  }
  std::string self = self_command();
  auto child = [&](const std::string& expect, const std::string& warning = "") {
    std::string cmd = fmt::format("{} --cache-child '{}' {} {}", self, dir, expect, warning);
    return std::system(cmd.c_str());
  };
  CHECK(child("disk_hit") == 0);

  // Corrupt every payload of the entry: the next process must discard it, warn, and recompile.
  int corrupted = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) {
    auto name = f.path().filename().string();
    if (!f.is_regular_file() || (name != "module.ptx" && name != "module.cubin")) continue;
    std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(20);
    io.write("CORRUPTED", 9);
    ++corrupted;
  }
  REQUIRE(corrupted > 0);
  CHECK(child("compiled", "PG4101") == 0);
  CHECK(child("disk_hit") == 0);
  std::filesystem::remove_all(dir);
}
