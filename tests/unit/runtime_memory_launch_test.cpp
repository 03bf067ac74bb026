// The memory-safety verdict on every launch path over the fake driver: the values of the scalars a
// kernel's proof uses are part of each verdict and of the launch cache's keys.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "ptxgate/runtime/graph.hpp"
#include "ptxgate/runtime/internal/launch_path.hpp"
#include "ptxgate/runtime/launch.hpp"
#include "runtime_programs_fixture.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using namespace ptxgate::runtime::testing;

namespace {

// copy(out dst: f32[], in src: f32[], n: u32) writes dst[i] for i < n: with buffers of 256 floats
// and 512 threads, n = 256 is proven in bounds and n = 512 goes out of bounds at thread 256. The
// two launches have the same geometry and buffers: only n tells them apart.
const LaunchConfig kWide = LaunchConfig::linear(8, 64);
constexpr uint32_t kInBounds = 256, kOutOfBounds = 512;

bool has_code(const diag::Diagnostics& d, diag::Code code) {
  for (const auto& item : d)
    if (item.code == code) return true;
  return false;
}

/// The result blocked with PG3801 (an access proven out of bounds), before the driver.
void check_out_of_bounds(const std::expected<void, diag::Diagnostics>& r, int launches_before) {
  REQUIRE_FALSE(r);
  INFO(diag::render_text(r.error()));
  CHECK(has_code(r.error(), diag::Code::access_out_of_bounds));
  CHECK(fake_state().launches == launches_before);
}

const char* const kData = R"(
kernel gather(out y: f32[], in idx: u32[], in x: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = x[idx[i]]; }
}
)";

const char* const kScale = R"(
kernel scale(inout y: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = y[i] * a; }
}
kernel fill(out y: f32[], a: f32) {
  y[global_id.x] = a;
}
)";

}  // namespace

TEST_CASE("memory launch: n that is proof-relevant is part of the verdict on Kernel::launch's steady and new-shape paths") {
  ProgramFixture f;
  auto dst = f.buffer(), src = f.buffer();
  REQUIRE(f.copy->info().params[2].value_in_access_proof);  // n guards the write
  // The in-bounds launch validates once, then launches from the launch cache's front.
  REQUIRE(f.copy->launch(kWide, {dst, src, kInBounds}));
  REQUIRE(f.copy->launch(kWide, {dst, src, kInBounds}));
  CHECK(f.copy->counters().validated == 1);
  CHECK(fake_state().launches == 2);
  // Same shape, larger n: not the front's key, not a cached shape: validated and blocked, every time.
  for (int i = 0; i < 2; ++i) check_out_of_bounds(f.copy->launch(kWide, {dst, src, kOutOfBounds}), 2);
  CHECK(f.copy->counters().validated == 3);
  CHECK(f.copy->counters().blocked == 2);
  // The in-bounds value is still known; another shape takes the front, and the cached shape of
  // n = 256 launches off the front (launch_new_shape) without a validation, n = 512 still blocked.
  REQUIRE(f.copy->launch(kWide, {dst, src, kInBounds}));
  REQUIRE(f.copy->launch(LaunchConfig::linear(4, 64), {dst, src, kInBounds}));
  CHECK(f.copy->counters().validated == 4);
  REQUIRE(f.copy->launch(kWide, {dst, src, kInBounds}));
  CHECK(f.copy->counters().validated == 4);
  check_out_of_bounds(f.copy->launch(kWide, {dst, src, kOutOfBounds}), fake_state().launches);
  // A smaller n is in bounds too: one more validation, then cached.
  REQUIRE(f.copy->launch(kWide, {dst, src, 100u}));
  REQUIRE(f.copy->launch(kWide, {dst, src, 100u}));
  CHECK(f.copy->counters().validated == 6);
}

TEST_CASE("memory launch: the general path, Kernel::check and the raw argument table give the same verdict") {
  ProgramFixture f;
  auto dst = f.buffer(), src = f.buffer();
  REQUIRE(f.copy->launch(kWide, {dst, src, kInBounds}));
  const int launched = fake_state().launches;

  SUBCASE("general path: an int64 n binds by conversion, once, with its value") {
    REQUIRE(f.copy->launch(kWide, {dst, src, int64_t{kInBounds}}));
    check_out_of_bounds(f.copy->launch(kWide, {dst, src, int64_t{kOutOfBounds}}), launched + 1);
  }
  SUBCASE("Kernel::check") {
    CHECK(f.copy->check(kWide, std::vector<Arg>{dst, src, kInBounds}).launchable);
    auto v = f.copy->check(kWide, std::vector<Arg>{dst, src, kOutOfBounds});
    CHECK_FALSE(v.launchable);
    CHECK(has_code(v.diagnostics, diag::Code::access_out_of_bounds));
    REQUIRE(v.memory);
    CHECK(v.memory->out_of_bounds == 2);  // dst[i] and src[i]
  }
  SUBCASE("launch_cuda_function reads n from its slot; a ticket keeps the value it was validated with") {
    contract::LaunchPlan plan;
    plan.grid = kWide.grid;
    plan.block = kWide.block;
    plan.block_given = true;
    plan.stream_is_null = true;
    plan.arguments_known = true;
    for (const DeviceBuffer* b : {&dst, &src}) {
      contract::ArgumentDesc d;
      d.kind = contract::ArgumentDesc::Kind::buffer;
      d.size_bytes = 8;
      d.buffer_bytes = b->size_bytes();
      plan.arguments.push_back(d);
    }
    contract::ArgumentDesc n;
    n.kind = contract::ArgumentDesc::Kind::scalar;
    n.size_bytes = 4;
    n.scalar_type = ir::Type::u32;
    n.scalar_bits = kInBounds;  // what the caller says: the slot decides
    plan.arguments.push_back(n);
    CUdeviceptr d_ptr = dst.pointer(), s_ptr = src.pointer();
    uint32_t value = kInBounds;
    std::vector<void*> slots{&d_ptr, &s_ptr, &value};
    LaunchTicket ticket;
    const uint64_t validated = f.copy->counters().validated;
    REQUIRE(launch_cuda_function(f.rt->context(), f.copy->function(), plan, slots, nullptr, nullptr, &ticket));
    REQUIRE(ticket.valid());
    // The same shape and value as Kernel::launch's first launch: the launch cache's verdict.
    CHECK(f.copy->counters().validated == validated);
    value = kOutOfBounds;  // the plan still says 256
    check_out_of_bounds(launch_cuda_function(f.rt->context(), f.copy->function(), plan, slots, nullptr),
                        launched + 1);
    // The ticket was validated with n = 256: another value is refused, before the driver.
    auto by_ticket = launch_cuda_function(f.rt->context(), f.copy->function(), ticket, slots, nullptr);
    REQUIRE_FALSE(by_ticket);
    CHECK(by_ticket.error().items()[0].code == diag::Code::internal_error);
    CHECK(by_ticket.error().items()[0].message.find("parameter 'n'") != std::string::npos);
    CHECK(fake_state().launches == launched + 1);
    value = kInBounds;
    REQUIRE(launch_cuda_function(f.rt->context(), f.copy->function(), ticket, slots, nullptr));
    CHECK(fake_state().launches == launched + 2);
  }
}

TEST_CASE("memory launch: graph nodes and graph updates carry the verdict for their values") {
  ProgramFixture f;
  auto dst = f.buffer(), src = f.buffer();
  auto g = Graph::create(f.rt->shared_context());
  REQUIRE(g);
  // The launch of n = 256 was cached by a direct launch; the node of n = 512 is still blocked.
  REQUIRE(f.copy->launch(kWide, {dst, src, kInBounds}));
  auto blocked = g->launch(*f.copy, kWide, {dst, src, kOutOfBounds});
  REQUIRE_FALSE(blocked);
  CHECK(has_code(blocked.error(), diag::Code::access_out_of_bounds));
  auto node = g->launch(*f.copy, kWide, {dst, src, kInBounds});
  REQUIRE(node);
  auto exec = g->instantiate();
  REQUIRE(exec);
  // An update to the out-of-bounds value is refused; the node keeps its arguments.
  auto update = exec->update(*node, kWide, {dst, src, kOutOfBounds});
  REQUIRE_FALSE(update);
  CHECK(has_code(update.error(), diag::Code::access_out_of_bounds));
  CHECK(fake_programs().updates.empty());
  REQUIRE(exec->update(*node, kWide, {dst, src, 128u}));
  CHECK(fake_programs().updates.size() == 1);
}

TEST_CASE("memory launch: scalars the proof does not use stay out of the keys, and a kernel without any keeps one key") {
  ProgramFixture f;
  auto y = f.buffer();
  // A float that only feeds a stored value is never a proof scalar; n, which guards the write, is.
  auto k = f.rt->compile(kScale, "scale", "scale.pg");
  REQUIRE(k);
  const auto& params = (*k)->info().params;
  CHECK_FALSE(params[1].value_in_access_proof);
  CHECK(params[2].value_in_access_proof);
  for (float a : {1.0f, 2.0f, 3.0f, 4.0f}) REQUIRE((*k)->launch(LaunchConfig::linear(1, 64), {y, a, 64u}));
  CHECK((*k)->counters().validated == 1);  // a new float every launch is not a new verdict

  auto fill = f.rt->compile(kScale, "fill", "scale.pg");
  REQUIRE(fill);
  for (float a : {1.0f, 2.0f}) REQUIRE((*fill)->launch(LaunchConfig::linear(1, 64), {y, a}));
  CHECK((*fill)->counters().validated == 1);
  // 512 threads write a 256-float buffer whatever the scalars: proven out of bounds.
  auto over = (*fill)->launch(LaunchConfig::linear(8, 64), {y, 1.0f});
  REQUIRE_FALSE(over);
  CHECK(has_code(over.error(), diag::Code::access_out_of_bounds));
}

TEST_CASE("memory launch: RuntimeOptions::require_memory_proof blocks an access not proven (PG3802)") {
  RuntimeOptions strict;
  strict.require_memory_proof = true;
  ProgramFixture f(strict);
  auto y = f.buffer(), idx = f.buffer(), x = f.buffer();
  auto gather = f.rt->compile(kData, "gather", "gather.pg");
  REQUIRE(gather);
  // x[idx[i]] depends on data: not provable. Blocked with require_memory_proof, every path.
  auto r = (*gather)->launch(LaunchConfig::linear(1, 64), {y, idx, x, 64u});
  REQUIRE_FALSE(r);
  CHECK(has_code(r.error(), diag::Code::access_not_proven));
  CHECK_FALSE((*gather)->check(LaunchConfig::linear(1, 64), std::vector<Arg>{y, idx, x, 64u}).launchable);
  // A kernel whose accesses are all proven launches.
  auto dst = f.buffer(), src = f.buffer();
  REQUIRE(f.copy->launch(kWide, {dst, src, kInBounds}));

  // Without the option the same launch goes ahead: its access is merely not proven.
  ProgramFixture lenient;
  auto y2 = lenient.buffer(), idx2 = lenient.buffer(), x2 = lenient.buffer();
  auto gather2 = lenient.rt->compile(kData, "gather", "gather.pg");
  REQUIRE(gather2);
  REQUIRE((*gather2)->launch(LaunchConfig::linear(1, 64), {y2, idx2, x2, 64u}));
}

TEST_CASE(
    "memory launch: a new grid's verdict, derived from the last shape validated afresh, is a fresh validation's") {
  ProgramFixture f;
  auto y = f.buffer(), dst = f.buffer(), src = f.buffer();  // 256 floats each
  auto fill = f.rt->compile(kScale, "fill", "scale.pg");
  REQUIRE(fill);
  // Each launch's verdict against Kernel::check's (a fresh validation of the same launch): grids the
  // launch cache does not hold are derived from the shape validated afresh before them (only what
  // reads the grid is checked again); a grid that is blocked is then validated afresh and reported.
  auto agree = [&](Kernel& k, const LaunchConfig& c, std::vector<Arg> args, bool launchable, diag::Code code) {
    INFO("grid ", c.grid[0], "x", c.grid[1], "x", c.grid[2], " block ", c.block[0]);
    const int before = fake_state().launches + fake_state().cooperative_launches;
    CHECK(k.check(c, args).launchable == launchable);
    auto launched = k.launch(c, args);
    CHECK(launched.has_value() == launchable);
    CHECK(fake_state().launches + fake_state().cooperative_launches == before + (launchable ? 1 : 0));
    if (!launched) CHECK(has_code(launched.error(), code));
  };
  // fill writes y[global_id.x]: blocks of 32 threads stay in bounds up to 8 blocks.
  for (uint64_t grid : {1, 2, 8, 9, 3, 40, 7, 8, 1, 12, 5, 6, 4, 100, 2})
    agree(**fill, LaunchConfig::linear(grid, 32), {y, 1.0f}, grid <= 8, diag::Code::access_out_of_bounds);
  // The same launches again, the launchable ones now in the launch cache: no new validation.
  const uint64_t validated = (*fill)->counters().validated;
  for (uint64_t grid : {3, 7, 4}) REQUIRE((*fill)->launch(LaunchConfig::linear(grid, 32), {y, 1.0f}));
  CHECK((*fill)->counters().validated == validated);
  // A grid dimension past the device's limit (65535 on y) after a launchable shape of another grid.
  LaunchConfig tall = LaunchConfig::linear(1, 32);
  tall.grid = {1, 70000, 1};
  agree(**fill, tall, {y, 1.0f}, false, diag::Code::grid_dim_exceeded);
  agree(**fill, LaunchConfig::linear(2, 32), {y, 1.0f}, true, diag::Code::internal_error);

  // copy writes dst[i] for i < n: with n = 512, 64-thread blocks stay in bounds up to 4 blocks; with
  // n = 256 every grid does (n is in the key: the two are different bases).
  for (uint64_t grid : {1, 4, 5, 2, 16, 3})
    agree(*f.copy, LaunchConfig::linear(grid, 64), {dst, src, kOutOfBounds}, grid <= 4,
          diag::Code::access_out_of_bounds);
  for (uint64_t grid : {1, 16, 5, 200})
    agree(*f.copy, LaunchConfig::linear(grid, 64), {dst, src, kInBounds}, true, diag::Code::internal_error);

  // A cooperative grid against resident capacity: the fake driver answers 8 blocks an SM, 132 SMs.
  LaunchConfig cooperative = LaunchConfig::linear(1, 32);
  cooperative.cooperative = true;
  for (uint64_t grid : {1, 1056, 1057, 2, 5000, 8}) {
    cooperative.grid = {grid, 1, 1};
    // Past 8 blocks fill goes out of bounds; past 1056 the residency check blocks it first.
    agree(**fill, cooperative, {y, 1.0f}, grid <= 8,
          grid <= 1056 ? diag::Code::access_out_of_bounds : diag::Code::cooperative_grid_too_large);
  }
}
