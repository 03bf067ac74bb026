// A runtime over the fake driver with two small kernels (copy: out dst, in src; bump: inout y),
// for the tests of programs: pools, graphs, faults and profiling.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string_view>

#include "ptxgate/runtime/runtime.hpp"
#include "runtime_fake_order.hpp"
#include "runtime_fake_programs.hpp"

namespace ptxgate::runtime::testing {

inline constexpr const char* kProgramKernels = R"(
kernel copy(out dst: f32[], in src: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { dst[i] = src[i]; }
}
kernel bump(inout y: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = y[i] + 1.0; }
}
)";

struct ProgramFixture {
  DriverApi api = make_fake_driver();
  std::unique_ptr<Runtime> rt;
  std::shared_ptr<Kernel> copy, bump;
  LaunchConfig config = LaunchConfig::linear(1, 64);

  explicit ProgramFixture(RuntimeOptions options = {}) {
    reset_fake_state();
    add_fake_programs(api);
    auto ctx = Context::open(0, &api);
    REQUIRE(ctx);
    options.cache.use_disk = false;
    rt = std::make_unique<Runtime>(*ctx, options);
    auto c = rt->compile(kProgramKernels, "copy", "programs.pg");
    if (!c) FAIL(diag::render_text(c.error()));
    auto b = rt->compile(kProgramKernels, "bump", "programs.pg");
    REQUIRE(b);
    copy = *c;
    bump = *b;
    fake_state().param_sizes = {8, 8};
  }
  DeviceBuffer buffer(size_t bytes = 1024) {
    auto b = rt->allocate(bytes);
    if (!b) FAIL(diag::render_text(b.error()));
    return std::move(*b);
  }
  Stream stream() {
    auto s = rt->create_stream();
    REQUIRE(s);
    return std::move(*s);
  }
  void copy_on(const Stream& s, const DeviceBuffer& dst, const DeviceBuffer& src) {
    auto ok = copy->launch(config, {dst, src, 16u}, &s);
    if (!ok) FAIL(diag::render_text(ok.error()));
  }
  void bump_on(const Stream& s, const DeviceBuffer& y) {
    auto ok = bump->launch(config, {y, 16u}, &s);
    if (!ok) FAIL(diag::render_text(ok.error()));
  }
};

/// Index in the log of the first call named `name` on memory at `dst` (allocations, frees, copies, fills).
inline size_t call_on(std::string_view name, uint64_t dst, size_t nth = 0) {
  return HappensBefore(fake_state().calls).find([&](const FakeCall& c) { return c.name == name && c.dst == dst; }, nth);
}

/// Index in the log of the `nth` launch whose first argument is `dst` (the buffer it writes).
inline size_t launch_writing(uint64_t dst, size_t nth = 0) {
  return HappensBefore(fake_state().calls).find([&](const FakeCall& c) {
    return c.name == "cuLaunchKernel" && !c.params.empty() && c.params[0] == dst;
  }, nth);
}

/// Whether logged call `a` happens before logged call `b` (both must exist).
inline bool happens_before(size_t a, size_t b) {
  REQUIRE(a != HappensBefore::npos);
  REQUIRE(b != HappensBefore::npos);
  return HappensBefore(fake_state().calls).ordered(a, b);
}

inline diag::Code first_code(const diag::Diagnostics& d) {
  REQUIRE_FALSE(d.items().empty());
  return d.items().front().code;
}

}  // namespace ptxgate::runtime::testing
