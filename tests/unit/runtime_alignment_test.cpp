// Buffer alignment for vector accesses through a fake driver: a kernel that uses load4/store4 on a
// buffer gets a misaligned base blocked (PG3011) on every launch path, an aligned one launched, and
// kernels without vector accesses are not checked.
#include <doctest/doctest.h>

#include <vector>

#include "ptxgate/runtime/arg.hpp"
#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/launch.hpp"
#include "ptxgate/runtime/runtime.hpp"
#include "runtime_fake_launch.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using testing::fake_state;

namespace {

/// copy4(out y: f32[], in x: f32[], n4: u32) with load4(x, ...) and store2(y, ...).
contract::KernelInfo copy_info(uint32_t x_alignment, uint32_t y_alignment) {
  contract::KernelInfo k;
  k.name = "copy4";
  k.params = {{"y", 0, true, ir::Access::out, ir::Type::f32, 8},
              {"x", 1, true, ir::Access::in, ir::Type::f32, 8},
              {"n4", 2, false, ir::Access::inout, ir::Type::u32, 4}};
  k.params[0].alignment = y_alignment;
  k.params[1].alignment = x_alignment;
  return k;
}

contract::LaunchPlan plan_for_copy() { return testing::fake_plan(4, 256, 2, {ir::Type::u32}); }

struct Fixture : testing::FakeContext {
  CUdeviceptr y = 0x1000, x = 0x2000;
  uint32_t n4 = 256;
  std::vector<void*> args{&y, &x, &n4};

  Fixture() { fake_state().param_sizes = {8, 8, 4}; }
};

diag::Code first_code(const diag::Diagnostics& d) {
  REQUIRE_FALSE(d.items().empty());
  return d.items().front().code;
}

}  // namespace

TEST_CASE("alignment: launch_cuda_function launches aligned buffers and blocks a misaligned one on every path") {
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), copy_info(16, 8));
  REQUIRE(fn);
  const auto plan = plan_for_copy();
  LaunchTicket ticket;
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr, nullptr, &ticket));
  CHECK(fake_state().launches == 1);

  // The same plan is a cached shape now: the address is still checked, before the driver.
  f.x = 0x2004;
  auto blocked = launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr);
  REQUIRE_FALSE(blocked);
  CHECK(first_code(blocked.error()) == diag::Code::misaligned_buffer);
  const auto& message = blocked.error().items().front().message;
  CHECK(message.find("'x'") != std::string::npos);
  CHECK(message.find("0x2004") != std::string::npos);
  CHECK(message.find("16") != std::string::npos);
  CHECK_FALSE(blocked.error().items().front().fix.empty());
  CHECK(fake_state().launches == 1);

  // The ticket path (relaunch) checks too.
  auto by_ticket = launch_cuda_function(*f.ctx, **fn, ticket, f.args, nullptr);
  REQUIRE_FALSE(by_ticket);
  CHECK(first_code(by_ticket.error()) == diag::Code::misaligned_buffer);
  CHECK(fake_state().launches == 1);

  // y needs 8 bytes: 0x1008 passes, 0x1004 does not; both buffers wrong give two diagnostics.
  f.x = 0x2010;
  f.y = 0x1008;
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr));
  CHECK(fake_state().launches == 2);
  f.x = 0x2008;
  f.y = 0x1004;
  auto both = launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr);
  REQUIRE_FALSE(both);
  CHECK(both.error().error_count() == 2);
  CHECK(fake_state().launches == 2);
}

TEST_CASE("alignment: a plan that knows the address blocks in validation; kernels without vector access are not checked") {
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), copy_info(16, 0));
  REQUIRE(fn);
  auto plan = plan_for_copy();
  f.x = 0x2004;
  plan.arguments[1].address = f.x;
  auto verdict = validate_launch(*f.ctx, **fn, plan, nullptr);
  CHECK_FALSE(verdict.launchable);
  CHECK(first_code(verdict.diagnostics) == diag::Code::misaligned_buffer);
  plan.arguments[1].address = 0x2040;
  CHECK(validate_launch(*f.ctx, **fn, plan, nullptr).launchable);

  auto plain = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), copy_info(0, 0));
  REQUIRE(plain);
  f.y = 0x1001;
  REQUIRE(launch_cuda_function(*f.ctx, **plain, plan_for_copy(), f.args, nullptr));
  CHECK(fake_state().launches == 1);
}

TEST_CASE("alignment: Kernel::launch (steady path and its general path) checks a compiled kernel's vector buffers") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto ctx = Context::open(0, &api);
  REQUIRE(ctx);
  RuntimeOptions options;
  options.cache.use_disk = false;
  Runtime rt(*ctx, options);
  auto kernel = rt.compile(
      "kernel copy4(out y: f32[], in x: f32[], n4: u32) {\n  let i = global_id.x;\n  if (i < n4) {\n"
      "    store4(y, i, load4(x, i));\n  }\n}\n",
      "copy4", "copy4.pg");
  if (!kernel) FAIL(diag::render_text(kernel.error()));
  CHECK((*kernel)->info().params.at(1).alignment == 16);
  auto y = *rt.allocate_array<float>(1024);
  auto x = *rt.allocate_array<float>(1024);
  fake_state().param_sizes = {8, 8, 4};
  const LaunchConfig config = LaunchConfig::linear(1, 256);
  REQUIRE((*kernel)->launch(config, {y, x, 256u}));
  REQUIRE((*kernel)->launch(config, {y, x, 256u}));  // steady: a known shape
  CHECK(fake_state().launches == 2);

  // A view 16 floats in is aligned; one float in is not, with the same shape (bytes) as the first.
  const uint64_t bytes = 1000 * sizeof(float);
  REQUIRE((*kernel)->launch(config, {y, Arg::buffer_range(x, 64, bytes, ir::Type::f32), 250u}));
  auto blocked = (*kernel)->launch(config, {y, Arg::buffer_range(x, 4, bytes, ir::Type::f32), 250u});
  REQUIRE_FALSE(blocked);
  CHECK(first_code(blocked.error()) == diag::Code::misaligned_buffer);
  auto raw = (*kernel)->launch(config, {y, Arg::device_pointer(x.pointer() + 8), 250u});
  REQUIRE_FALSE(raw);
  CHECK(first_code(raw.error()) == diag::Code::misaligned_buffer);
  CHECK(fake_state().launches == 3);

  // saxpy has no vector access: a view one float in launches.
  auto saxpy = rt.compile("kernel saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) {\n  let i = global_id.x;\n"
                          "  if (i < n) {\n    y[i] = a * x[i] + y[i];\n  }\n}\n",
                          "saxpy", "saxpy.pg");
  REQUIRE(saxpy);
  fake_state().param_sizes = {8, 8, 4, 4};
  REQUIRE((*saxpy)->launch(config, {y, Arg::buffer_range(x, 4, bytes, ir::Type::f32), 2.0f, 250u}));
  CHECK(fake_state().launches == 4);
}
