// GPU test main: skips (exit 77) with a reason when there is no driver or GPU (or fewer than --min-gpus);
// else supervises (every case in a process of its own, gpu_supervisor.cpp), or, as `--gpu-case`, runs the
// one case the supervisor names; child modes for the cache, fault and NCCL tests.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ptxgate/runtime/device.hpp"
#include "ptxgate/runtime/driver_api.hpp"
#include "gpu_support.hpp"

namespace ptxgate::gpu_test {

namespace {
std::unique_ptr<runtime::Runtime> g_runtime;
}

runtime::Runtime& gpu_runtime() { return *g_runtime; }

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

std::string self_command() {
  if (const char* env = std::getenv("PTXGATE_GPU_TEST_SELF"); env != nullptr && *env != '\0') return env;
  return "'" + std::filesystem::read_symlink("/proc/self/exe").string() + "'";
}

bool under_compute_sanitizer() {
  const char* flag = std::getenv("PTXGATE_UNDER_COMPUTE_SANITIZER");
  if (flag != nullptr && std::strcmp(flag, "1") == 0) return true;
  // What compute-sanitizer 2025 (CUDA 13) puts in its target's environment, children included.
  if (std::getenv("NV_SANITIZER_INJECTION_PORT_BASE") != nullptr) return true;
  for (const char* var : {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"})
    if (const char* v = std::getenv(var); v != nullptr && std::strstr(v, "sanitizer") != nullptr) return true;
  return false;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::shared_ptr<runtime::Kernel> compile_example(const std::string& name) {
  auto path = example_path(name);
  if (!std::filesystem::exists(path)) skip_case(path.string() + " not found (set PTXGATE_EXAMPLES_DIR)");
  auto k = gpu_runtime().compile(read_text(path), name, path.string());
  if (!k) FAIL(diag::render_text(k.error()));
  return *k;
}

runtime::TensorMap f32_tile_map(const runtime::DeviceBuffer& buffer, uint32_t width, uint32_t height,
                                std::array<uint32_t, 2> box) {
  validation::TensorMapDesc d;
  d.type = validation::TmaType::f32;
  d.dims = {width, height};
  d.strides = {uint64_t{width} * 4};
  d.box = {box[0], box[1]};
  auto map = runtime::encode_tensor_map(buffer, 0, d);
  if (!map) FAIL(diag::render_text(map.error()));
  return *map;
}

int cache_child(int argc, char** argv);  // gpu_cache_test.cpp
int nccl_rank_child(int argc, char** argv);  // gpu_nccl_test.cpp
int fault_child(int argc, char** argv);      // gpu_programs_test.cpp
int nccl_collectives_child(int argc, char** argv);  // gpu_multigpu_test.cpp
int nccl_mismatch_child(int argc, char** argv);     // gpu_mismatch_test.cpp

}  // namespace ptxgate::gpu_test

int main(int argc, char** argv) {
  using namespace ptxgate;
  auto api = runtime::driver();
  if (!api) {
    std::printf("SKIPPED: GPU tests need a CUDA driver and GPU: %s\n",
                diag::render_text(api.error(), false).c_str());
    return 77;
  }
  auto devices = runtime::list_live_devices();
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
  const auto& first = devices->front();
  if (argc < 2 || std::strcmp(argv[1], "--gpu-case") != 0) {
    std::printf("device: %s (%s, %u SMs), driver %d\n", first.caps.name.c_str(), first.caps.arch().c_str(),
                first.caps.sm_count, first.driver_version);
    return gpu_test::supervise(argc, argv);
  }
  argv[1] = argv[0];  // doctest reads the rest
  --argc;
  ++argv;
  auto rt = runtime::Runtime::create();
  if (!rt) {
    std::printf("FAILED: cannot open device 0: %s\n", diag::render_text(rt.error(), false).c_str());
    return 1;
  }
  gpu_test::g_runtime = std::move(*rt);
  const int rc = gpu_test::run_one_case(argc, argv);
  gpu_test::g_runtime.reset();
  return rc;
}
