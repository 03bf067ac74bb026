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

#include "ptxgate/backend/runtime.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "compare.hpp"

namespace ptxgate::gpu_test {

/// The runtime every GPU test shares (created in main once a device is known to exist).
backend::Runtime& runtime();

/// examples/NAME.pg: $PTXGATE_EXAMPLES_DIR, else the source tree's examples/.
std::filesystem::path example_path(const std::string& name);
std::string read_text(const std::filesystem::path& path);
/// tests/unit/ptx/NAME (PTX written by nvcc and Triton): $PTXGATE_PTX_DIR, else the source tree's.
std::filesystem::path ptx_fixture_path(const std::string& name);

/// Compiles kernel NAME of examples/NAME.pg (FAILs the test with the diagnostics otherwise).
std::shared_ptr<backend::Kernel> compile_example(const std::string& name);

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
backend::DeviceBuffer upload(const std::vector<T>& host) {
  auto b = runtime().upload(std::span<const T>(host));
  if (!b) FAIL(diag::render_text(b.error()));
  return std::move(*b);
}

template <class T>
std::vector<T> download(const backend::DeviceBuffer& buffer) {
  auto v = runtime().download<T>(buffer);
  if (!v) FAIL(diag::render_text(v.error()));
  return std::move(*v);
}

}  // namespace ptxgate::gpu_test
