// Shared helpers of the validation unit tests: profiles, kernels and plans.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>

#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/profiles.hpp"

namespace validation_test {

using namespace ptxgate;
using namespace ptxgate::validation;

inline DeviceCaps caps_of(std::string_view name) {
  auto caps = load_profile(name);
  REQUIRE_MESSAGE(caps.has_value(), "profile ", name, " did not load");
  return *caps;
}

/// A kernel `k(inout y: f32[], n: u32)` with an optional @workgroup.
inline contract::KernelInfo kernel(std::array<uint32_t, 3> workgroup = {0, 0, 0}) {
  contract::KernelInfo k;
  k.name = "k";
  k.params.push_back({"y", 0, true, ir::Access::inout, ir::Type::f32, 8});
  k.params.push_back({"n", 1, false, ir::Access::inout, ir::Type::u32, 4});
  k.required_block = workgroup;
  return k;
}

inline contract::KernelResources resources(uint32_t regs, uint64_t static_shared = 0, uint32_t max_threads = 1024) {
  contract::KernelResources r;
  r.registers_per_thread = regs;
  r.static_shared_bytes = static_shared;
  r.max_threads_per_block = max_threads;
  return r;
}

inline contract::LaunchPlan plan(std::array<uint64_t, 3> grid, std::array<uint64_t, 3> block, uint64_t dyn = 0,
                       bool cooperative = false) {
  contract::LaunchPlan p;
  p.grid = grid;
  p.block = block;
  p.dynamic_shared_bytes = dyn;
  p.cooperative = cooperative;
  return p;
}

inline size_t count(const Verdict& v, diag::Code c) {
  return static_cast<size_t>(std::count_if(v.diagnostics.begin(), v.diagnostics.end(),
                                           [&](const diag::Diagnostic& d) { return d.code == c; }));
}

inline bool only_warnings(const Verdict& v) { return v.launchable && !v.diagnostics.has_errors(); }

}  // namespace validation_test
