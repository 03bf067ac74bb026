// Helpers of the C API tests: a diagnostics list owned like a C caller owns it, and PTX fixtures.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ptxgate/capi/ptxgate.h"
#include "runtime_fake_driver.hpp"

namespace ptxgate::testing {

/// Owns the diagnostics list a C API call hands out (`out()` frees the previous one).
struct CapiDiagnostics {
  ptxgate_diagnostics* list = nullptr;
  CapiDiagnostics() = default;
  CapiDiagnostics(const CapiDiagnostics&) = delete;
  CapiDiagnostics& operator=(const CapiDiagnostics&) = delete;
  ~CapiDiagnostics() { ptxgate_diagnostics_free(list); }
  ptxgate_diagnostics** out() {
    ptxgate_diagnostics_free(list);
    list = nullptr;
    return &list;
  }
  std::vector<std::string> codes() const {
    std::vector<std::string> c;
    for (size_t i = 0; i < ptxgate_diagnostics_count(list); ++i) {
      ptxgate_diagnostic d;
      REQUIRE(ptxgate_diagnostics_get(list, i, &d) == PTXGATE_OK);
      c.emplace_back(d.code);
    }
    return c;
  }
  bool has(const std::string& code) const {
    for (const auto& c : codes())
      if (c == code) return true;
    return false;
  }
  std::string first_code() const {
    auto c = codes();
    return c.empty() ? "" : c.front();
  }
  std::string text() { return list ? ptxgate_diagnostics_render(list, "text") : "(no list)"; }
};

/// A C API runtime over the fake driver (sm_90, fresh fake state, no disk cache); the real
/// driver table is restored when it goes.
struct FakeCapiRuntime {
  ptxgate_runtime* rt = nullptr;
  /// ptxgate_runtime_options' require_memory_proof and checked.
  explicit FakeCapiRuntime(bool require_memory_proof = false, bool checked = false) {
    runtime::testing::reset_fake_state();
    static runtime::DriverApi api = runtime::testing::make_fake_driver();
    runtime::install_driver_for_testing(&api);
    ptxgate_runtime_options ro;
    ptxgate_runtime_options_init(&ro);
    ro.disk_cache = 0;
    ro.require_memory_proof = require_memory_proof ? 1 : 0;
    ro.checked = checked ? 1 : 0;
    CapiDiagnostics d;
    REQUIRE_MESSAGE(ptxgate_runtime_create(&ro, &rt, d.out()) == PTXGATE_OK, d.text());
  }
  FakeCapiRuntime(const FakeCapiRuntime&) = delete;
  FakeCapiRuntime& operator=(const FakeCapiRuntime&) = delete;
  ~FakeCapiRuntime() {
    ptxgate_runtime_free(rt);
    runtime::install_driver_for_testing(nullptr);
  }
};

/// C arguments as a C caller fills them.
inline ptxgate_arg scalar(ptxgate_dtype type, uint64_t bits) {
  ptxgate_arg a{};
  a.kind = PTXGATE_ARG_SCALAR;
  a.dtype = type;
  a.device = -1;
  a.bits = bits;
  return a;
}

inline ptxgate_arg real(double v) {
  ptxgate_arg a{};
  a.kind = PTXGATE_ARG_REAL;
  a.device = -1;
  std::memcpy(&a.bits, &v, 8);
  return a;
}

inline ptxgate_arg integer(int64_t v) {
  ptxgate_arg a{};
  a.kind = PTXGATE_ARG_INTEGER;
  a.device = -1;
  a.bits = static_cast<uint64_t>(v);
  return a;
}

inline ptxgate_arg buffer(ptxgate_buffer* b, ptxgate_dtype type = PTXGATE_DTYPE_UNKNOWN, uint64_t elements = 0) {
  ptxgate_arg a{};
  a.kind = PTXGATE_ARG_BUFFER;
  a.dtype = type;
  a.device = -1;
  a.buffer = b;
  a.elements = elements;
  return a;
}

inline ptxgate_arg pointer(uint64_t p, ptxgate_dtype type, uint64_t elements, int device) {
  ptxgate_arg a{};
  a.kind = PTXGATE_ARG_POINTER;
  a.dtype = type;
  a.device = device;
  a.pointer = p;
  a.elements = elements;
  return a;
}

inline uint64_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

/// A launch configuration of `grid` blocks of the kernel's own block size.
inline ptxgate_launch_config linear(uint64_t grid, uint64_t block = 0) {
  ptxgate_launch_config c{};
  c.grid[0] = grid;
  c.grid[1] = c.grid[2] = 1;
  c.block[0] = block;
  c.block[1] = c.block[2] = block != 0 ? 1 : 0;
  return c;
}

/// The text of tests/unit/ptx/NAME (PTX written by nvcc, NVRTC and Triton).
inline std::string ptx_fixture(const std::string& name) {
  std::ifstream in(std::string(PTXGATE_SOURCE_DIR) + "/tests/unit/ptx/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  REQUIRE_MESSAGE(!ss.str().empty(), name);
  return ss.str();
}

}  // namespace ptxgate::testing
