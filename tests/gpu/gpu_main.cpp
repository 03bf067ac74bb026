// GPU test main: skips (exit 77) with a reason when there is no driver or GPU (or fewer than --min-gpus);
// child modes for the cache and NCCL tests.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ptxgate/backend/device.hpp"
#include "ptxgate/backend/driver_api.hpp"
#include "gpu_support.hpp"

namespace ptxgate::gpu_test {

namespace {
std::unique_ptr<backend::Runtime> g_runtime;
}

backend::Runtime& runtime() { return *g_runtime; }

std::filesystem::path example_path(const std::string& name) {
  const char* dir = std::getenv("PTXGATE_EXAMPLES_DIR");
  std::filesystem::path base = dir ? dir : PTXGATE_SOURCE_DIR "/examples";
  return base / (name + ".pg");
}

std::filesystem::path ptx_fixture_path(const std::string& name) {
  const char* dir = std::getenv("PTXGATE_PTX_DIR");
  std::filesystem::path base = dir ? dir : PTXGATE_SOURCE_DIR "/tests/unit/ptx";
  return base / name;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::shared_ptr<backend::Kernel> compile_example(const std::string& name) {
  auto path = example_path(name);
  auto k = runtime().compile(read_text(path), name, path.string());
  if (!k) FAIL(diag::render_text(k.error()));
  return *k;
}

int cache_child(int argc, char** argv);  // gpu_cache_test.cpp
int nccl_rank_child(int argc, char** argv);  // gpu_nccl_test.cpp
int fault_child(int argc, char** argv);      // gpu_programs_test.cpp
int nccl_collectives_child(int argc, char** argv);  // gpu_multigpu_test.cpp
int nccl_mismatch_child(int argc, char** argv);     // gpu_mismatch_test.cpp

}  // namespace ptxgate::gpu_test

int main(int argc, char** argv) {
  using namespace ptxgate;
  auto api = backend::driver();
  if (!api) {
    std::printf("SKIPPED: GPU tests need a CUDA driver and GPU: %s\n",
                diag::render_text(api.error(), false).c_str());
    return 77;
  }
  auto devices = backend::list_live_devices();
  if (!devices) {
    std::printf("SKIPPED: no usable GPU: %s\n", diag::render_text(devices.error(), false).c_str());
    return 77;
  }
  if (argc >= 2 && std::strcmp(argv[1], "--cache-child") == 0) return gpu_test::cache_child(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "--nccl-rank") == 0) return gpu_test::nccl_rank_child(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "--fault-child") == 0) return gpu_test::fault_child(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "--nccl-collectives") == 0) return gpu_test::nccl_collectives_child(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "--nccl-mismatch") == 0) return gpu_test::nccl_mismatch_child(argc, argv);
  // `--min-gpus N` (first): skip the whole run on a machine with fewer GPUs (the multigpu label).
  if (argc >= 3 && std::strcmp(argv[1], "--min-gpus") == 0) {
    const size_t need = static_cast<size_t>(std::atoi(argv[2]));
    if (devices->size() < need) {
      std::printf("SKIPPED: needs %zu GPUs, found %zu\n", need, devices->size());
      return 77;
    }
    argv[2] = argv[0];  // doctest reads the rest
    argc -= 2;
    argv += 2;
  }
  auto rt = backend::Runtime::create();
  if (!rt) {
    std::printf("FAILED: cannot open device 0: %s\n", diag::render_text(rt.error(), false).c_str());
    return 1;
  }
  gpu_test::g_runtime = std::move(*rt);
  const auto& caps = gpu_test::g_runtime->caps();
  std::printf("device: %s (%s, %u SMs), driver %d, target %s\n", caps.name.c_str(), caps.arch().c_str(), caps.sm_count,
              devices->front().driver_version, gpu_test::g_runtime->target().c_str());
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  int rc = context.run();
  gpu_test::g_runtime.reset();
  return rc;
}
