// Shared pieces of the GPU tests: the runtime, example loading, random data, tolerant comparison.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/runtime/tensor_map.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "compare.hpp"

namespace ptxgate::gpu_test {

/// The runtime every GPU test shares (created in main once a device is known to exist).
runtime::Runtime& gpu_runtime();

/// examples/NAME.pg: $PTXGATE_EXAMPLES_DIR, else the source tree's examples/.
std::filesystem::path example_path(const std::string& name);
std::string read_text(const std::filesystem::path& path);
/// tests/unit/ptx/NAME (PTX written by nvcc and Triton): $PTXGATE_PTX_DIR, else the source tree's.
std::filesystem::path ptx_fixture_path(const std::string& name);

/// The exit status of a case that does not apply to this machine (and of the whole binary without a GPU).
constexpr int kCaseSkipped = 77;

/// Ends the running case as not applying to this device or machine (another architecture, no NCCL, fewer
/// GPUs, a missing file): prints "SKIPPED: <case>: <why>", tells the supervisor, which reports the case
/// SKIPPED with `why` (never as passed), and ends the case's process (each case has its own).
[[noreturn]] void skip_case(const std::string& why);

/// The supervisor (gpu_supervisor.cpp): runs every case passing the command line's filters in a child
/// process of its own, prints each result and a summary naming the failed and skipped cases; 1 when any
/// case failed. PTXGATE_GPU_CASE_TIMEOUT (seconds, default 300) limits each case.
int supervise(int argc, char** argv);
/// A child of the supervisor: runs the one case its filter names; 0 passed, kCaseSkipped, else failed. A
/// case whose name matches $PTXGATE_GPU_FAIL_CASE (a shell pattern) fails on purpose after it passed.
int run_one_case(int argc, char** argv);

/// Whether this process runs under compute-sanitizer (which serialises the device's work): the variables
/// compute-sanitizer sets in its targets' environment (NV_SANITIZER_INJECTION_*, its injection library in
/// NVTX_/CUDA_INJECTION64_PATH), or PTXGATE_UNDER_COMPUTE_SANITIZER=1 (the GPU scripts set it).
bool under_compute_sanitizer();

/// How a test starts this binary again, as shell words: $PTXGATE_GPU_TEST_SELF (a bundled loader before the
/// binary), else /proc/self/exe quoted.
std::string self_command();

/// Compiles kernel NAME of examples/NAME.pg (FAILs the test with the diagnostics otherwise; a missing file
/// skips the case).
std::shared_ptr<runtime::Kernel> compile_example(const std::string& name);

/// A 2-D tensor map of f32 over `buffer` (rows of `width` elements, `height` rows, boxes of
/// box[0] x box[1] elements, no swizzle), or the failed case with the library's diagnostics.
runtime::TensorMap f32_tile_map(const runtime::DeviceBuffer& buffer, uint32_t width, uint32_t height,
                                std::array<uint32_t, 2> box);

/// Uniform random values in [lo, hi), never exactly zero.
template <class T>
std::vector<T> random_values(size_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> out(n);
  for (auto& v : out) {
    double x = 0;
    while (static_cast<T>(x) == T(0)) x = d(rng);
    v = static_cast<T>(x);
  }
  return out;
}

/// Fails the current test with rendered diagnostics.
#define PG_REQUIRE_OK(expr)                                                   \
  do {                                                                        \
    auto&& pg_result_ = (expr);                                               \
    if (!pg_result_) FAIL(ptxgate::diag::render_text(pg_result_.error()));    \
  } while (0)

template <class T>
runtime::DeviceBuffer upload(const std::vector<T>& host) {
  auto b = gpu_runtime().upload(std::span<const T>(host));
  if (!b) FAIL(diag::render_text(b.error()));
  return std::move(*b);
}

template <class T>
std::vector<T> download(const runtime::DeviceBuffer& buffer) {
  auto v = gpu_runtime().download<T>(buffer);
  if (!v) FAIL(diag::render_text(v.error()));
  return std::move(*v);
}

}  // namespace ptxgate::gpu_test
