// Runtime end to end on the CPU: real compile through the module cache, a fake driver for load and launch.
#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>
#include <sstream>

#include "ptxgate/runtime/internal/launch_cache.hpp"
#include "ptxgate/runtime/runtime.hpp"
#include "runtime_fake_driver.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using testing::fake_state;

namespace {

std::string example_text(const std::string& name) {
  std::ifstream in(std::string(PTXGATE_SOURCE_DIR) + "/examples/" + name + ".pg");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<Runtime> fake_runtime(const DriverApi& api) {
  auto ctx = Context::open(0, &api);
  REQUIRE(ctx);
  RuntimeOptions options;
  options.cache.use_disk = false;
  return std::make_unique<Runtime>(*ctx, options);
}

/// saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) loaded over the fake driver, with two buffers
/// of 1024 floats (the launch-cache tests' kernel).
struct FakeSaxpy {
  std::unique_ptr<Runtime> rt;
  std::shared_ptr<Kernel> k;
  std::optional<DeviceBuffer> y, x;
};

FakeSaxpy fake_saxpy() {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  FakeSaxpy s;
  s.rt = fake_runtime(api);
  auto k = s.rt->compile(example_text("saxpy"), "saxpy", "saxpy.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  s.k = *k;
  auto y = s.rt->allocate(4096), x = s.rt->allocate(4096);
  REQUIRE((y && x));
  s.y.emplace(std::move(*y));
  s.x.emplace(std::move(*x));
  fake_state().param_sizes = {8, 8, 4, 4};
  return s;
}

}  // namespace

TEST_CASE("backend runtime: compile goes through the cache once; launches bind and reach the driver") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt = fake_runtime(api);
  CHECK(rt->target() == ir::Target(90));
  auto k = rt->compile(example_text("saxpy"), "saxpy", "saxpy.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  CHECK((*k)->cache_outcome() == module_cache::CacheOutcome::compiled);
  CHECK((*k)->entry().ptx.find(".entry saxpy") != std::string::npos);
  CHECK((*k)->info().params.size() == 4);
  auto again = rt->compile(example_text("saxpy"), "saxpy", "saxpy.pg");
  REQUIRE(again);
  CHECK((*again)->cache_outcome() == module_cache::CacheOutcome::memory_hit);
  CHECK(&(*again)->function() == &(*k)->function());

  auto y = rt->allocate(4000), x = rt->allocate(4000);
  REQUIRE(y);
  REQUIRE(x);
  fake_state().param_sizes = {8, 8, 4, 4};
  for (int i = 0; i < 5; ++i) REQUIRE((*k)->launch(LaunchConfig::linear(4, 256), {*y, *x, 2.0f, 1000u}));
  CHECK(fake_state().launches == 5);
  CHECK((*k)->counters().validated == 1);
  CHECK((*k)->counters().cached == 4);
  CHECK(fake_state().last_params[0] == y->pointer());
  CHECK(fake_state().last_params[1] == x->pointer());
  CHECK(fake_state().last_params[2] == 0x40000000u);  // 2.0f
  CHECK(fake_state().last_params[3] == 1000u);

  auto wrong = (*k)->launch(LaunchConfig::linear(4, 256), {*y, *x, 2.0, 1000u});
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().items()[0].code == diag::Code::argument_size_mismatch);
  auto missing = (*k)->launch(LaunchConfig::linear(4, 256), {*y, *x, 2.0f});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().items()[0].code == diag::Code::argument_count_mismatch);
  CHECK(fake_state().launches == 5);

  auto none = rt->compile(example_text("saxpy"), "nope", "saxpy.pg");
  REQUIRE_FALSE(none);
  CHECK(none.error().items()[0].code == diag::Code::kernel_not_found);
}

TEST_CASE("backend runtime: the steady launch path rebinds values but revalidates any change of shape") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt = fake_runtime(api);
  auto k = rt->compile(example_text("saxpy"), "saxpy", "saxpy.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  auto y = rt->allocate(4000), x = rt->allocate(4000), z = rt->allocate(4000), small = rt->allocate(400);
  REQUIRE((y && x && z && small));
  fake_state().param_sizes = {8, 8, 4, 4};
  const auto cfg = LaunchConfig::linear(4, 256);
  REQUIRE((*k)->launch(cfg, {*y, *x, 2.0f, 1000u}));
  CHECK((*k)->counters().validated == 1);

  // New buffers of the same size and a new value of a (a scalar the memory-safety proof does not
  // use): steady, values rebound.
  REQUIRE((*k)->launch(cfg, {*z, *y, 0.5f, 1000u}));
  CHECK((*k)->counters().validated == 1);
  CHECK(fake_state().last_params[0] == z->pointer());
  CHECK(fake_state().last_params[1] == y->pointer());
  CHECK(fake_state().last_params[2] == 0x3F000000u);  // 0.5f
  CHECK(fake_state().last_params[3] == 1000u);
  // A new value of n, which guards the kernel's accesses, is a new verdict: validated once, then known.
  REQUIRE((*k)->launch(cfg, {*z, *y, 0.5f, 999u}));
  REQUIRE((*k)->launch(cfg, {*z, *y, 1.5f, 999u}));
  CHECK((*k)->counters().validated == 2);
  CHECK(fake_state().last_params[3] == 999u);
  // An i32 for the u32 n binds (converted, on the general path) to the same validated plans: the
  // launch cache answers, no new validation.
  REQUIRE((*k)->launch(cfg, {*y, *x, 2.0f, int32_t{1000}}));
  REQUIRE((*k)->launch(cfg, {*y, *x, 2.0f, int32_t{999}}));
  CHECK((*k)->counters().validated == 2);
  CHECK((*k)->counters().cached == 4);
  CHECK(fake_state().last_params[3] == 999u);

  // Same shape, a value that does not fit: PG3007 from the steady path's fallback, no driver call.
  const int before = fake_state().launches;
  auto negative = (*k)->launch(cfg, {*y, *x, 2.0f, int32_t{-1}});
  REQUIRE_FALSE(negative);
  CHECK(negative.error().items()[0].code == diag::Code::argument_size_mismatch);
  CHECK(fake_state().launches == before);

  // A null buffer, a smaller buffer, another grid, another stream kind: each is validated, not relaunched.
  auto null_ptr = (*k)->launch(cfg, {Arg::device_pointer(0, 4000), *x, 2.0f, 1000u});
  REQUIRE_FALSE(null_ptr);
  CHECK(null_ptr.error().items()[0].code == diag::Code::null_buffer);
  REQUIRE((*k)->launch(cfg, {*small, *x, 2.0f, 100u}));
  CHECK((*k)->counters().validated == 3);
  REQUIRE((*k)->launch(LaunchConfig::linear(8, 256), {*y, *x, 2.0f, 1000u}));
  CHECK((*k)->counters().validated == 4);
  CHECK(fake_state().last_grid[0] == 8);
  auto blocked = (*k)->launch(LaunchConfig::linear(4, 2048), {*y, *x, 2.0f, 1000u});
  REQUIRE_FALSE(blocked);
  CHECK(fake_state().last_grid[0] == 8);
  auto stream = rt->create_stream();
  REQUIRE(stream);
  REQUIRE((*k)->launch(cfg, {*y, *x, 2.0f, 1000u}, &*stream));
  CHECK(fake_state().last_stream == stream->handle());
  const auto validated = (*k)->counters().validated;
  REQUIRE((*k)->launch(cfg, {*y, *x, 2.0f, 1000u}, &*stream));
  REQUIRE((*k)->launch(cfg, {*y, *x, 2.0f, 1000u}));
  CHECK((*k)->counters().validated == validated);
  CHECK(fake_state().last_stream == nullptr);
}

TEST_CASE("backend runtime: a grid_sync kernel launches cooperatively with the backend's barrier word") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt = fake_runtime(api);
  auto k = rt->compile(example_text("normalize"), "normalize", "normalize.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  REQUIRE((*k)->info().hidden_grid_barrier_param);
  auto x = rt->allocate(400), acc = rt->allocate(4);
  REQUIRE(x);
  REQUIRE(acc);
  fake_state().param_sizes = {8, 8, 4, 8};
  REQUIRE((*k)->launch(LaunchConfig{{132, 1, 1}, {256, 1, 1}, 0, true}, {*x, *acc, 100u}));
  CHECK(fake_state().cooperative_launches == 1);
  auto word = rt->context().grid_barrier_word(nullptr);
  REQUIRE(word);
  CHECK(fake_state().last_params[0] == x->pointer());
  CHECK(fake_state().last_params[2] == 100u);
  CHECK(fake_state().last_params[3] == *word);
}

TEST_CASE("backend runtime: concurrent launches from many threads share the function's launch cache") {
  FakeSaxpy s = fake_saxpy();
  auto* k = &s.k;
  auto& y = s.y;
  auto& x = s.x;
  constexpr int kThreads = 8, kLaunches = 500;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kLaunches; ++i) {
        // Two shapes per thread (grid 4 and 2), a value that changes every launch (a, which the
        // memory-safety proof does not use; n, which it does, stays).
        const auto cfg = LaunchConfig::linear(i % 2 == 0 ? 4 : 2, 256);
        if (!(*k)->launch(cfg, {*y, *x, float(t * kLaunches + i), 1000u})) failures.fetch_add(1);
      }
      // A value that does not fit, on a known shape: rejected on every thread.
      if ((*k)->launch(LaunchConfig::linear(4, 256), {*y, *x, 1.0f, int32_t{-t - 1}})) failures.fetch_add(1);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0);
  const auto c = (*k)->counters();
  CHECK(fake_state().launches == kThreads * kLaunches);
  CHECK(c.driver_calls == uint64_t(kThreads * kLaunches));
  // Each of the two shapes is validated at least once and by each thread at most once (a thread
  // that validated a shape finds it afterwards); every other launch is a cache hit.
  CHECK(c.validated >= 2);
  CHECK(c.validated <= uint64_t(kThreads * 2));
  CHECK(c.validated + c.cached == uint64_t(kThreads * kLaunches));
  CHECK(c.blocked == 0);
}

TEST_CASE("backend runtime: new grids from many threads get the verdicts of their own grids") {
  FakeSaxpy s = fake_saxpy();
  auto* k = &s.k;
  auto& y = s.y;
  auto& x = s.x;
  // n = 2048 over buffers of 1024 floats: blocks of 256 threads stay in bounds up to 4 blocks. More
  // grids than the launch cache holds, so most launches derive their verdict from the function's
  // last fresh validation, which the threads take from each other (or validate afresh when another
  // thread holds it).
  constexpr int kThreads = 6, kRounds = 40;
  std::atomic<int> wrong{0}, launched{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const uint64_t grid = 1 + (i * 7 + t * 3) % 24;
        auto r = (*k)->launch(LaunchConfig::linear(grid, 256), {*y, *x, 1.0f, 2048u});
        if (r.has_value() != (grid <= 4)) wrong.fetch_add(1);
        if (r) launched.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(wrong.load() == 0);
  CHECK(fake_state().launches == launched.load());
}

TEST_CASE("backend runtime: a shape validated on one thread relaunches on another without validation") {
  FakeSaxpy s = fake_saxpy();
  auto* k = &s.k;
  auto& y = s.y;
  auto& x = s.x;
  REQUIRE((*k)->launch(LaunchConfig::linear(4, 256), {*y, *x, 1.0f, 1000u}));
  CHECK((*k)->counters().validated == 1);
  bool ok = false;
  std::thread([&] { ok = bool((*k)->launch(LaunchConfig::linear(4, 256), {*x, *y, 2.0f, 1000u})); }).join();
  CHECK(ok);
  CHECK((*k)->counters().validated == 1);
  CHECK((*k)->counters().cached == 1);
  CHECK(fake_state().last_params[0] == x->pointer());
  CHECK(fake_state().last_params[2] == 0x40000000u);  // 2.0f
  // More shapes than the cache holds: the oldest is validated again, every verdict stays right.
  for (uint64_t g = 1; g <= 20; ++g) REQUIRE((*k)->launch(LaunchConfig::linear(g, 256), {*y, *x, 1.0f, 1000u}));
  const auto validated = (*k)->counters().validated;
  REQUIRE((*k)->launch(LaunchConfig::linear(20, 256), {*y, *x, 1.0f, 1000u}));
  CHECK((*k)->counters().validated == validated);
  REQUIRE((*k)->launch(LaunchConfig::linear(1, 256), {*y, *x, 1.0f, 1000u}));
  CHECK((*k)->counters().validated == validated + 1);
  auto blocked = (*k)->launch(LaunchConfig::linear(20, 2048), {*y, *x, 1.0f, 1000u});
  CHECK_FALSE(blocked);
}

TEST_CASE("backend runtime: a kernel without @workgroup gets the library's one default block in launch and check") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt = fake_runtime(api);
  const char* text = "kernel scale(inout y: f32[]) { y[global_id.x] = 2.0 * y[global_id.x]; }\n";
  auto k = rt->compile(text, "scale", "scale.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  REQUIRE_FALSE((*k)->info().has_required_block());
  auto y = rt->allocate(4096);
  REQUIRE(y);
  fake_state().param_sizes = {8};
  LaunchConfig config;
  config.grid = {4, 1, 1};
  auto verdict = (*k)->check(config, {});
  CHECK(verdict.launchable);
  CHECK(verdict.block == validation::kDefaultBlock);
  REQUIRE((*k)->launch(config, {*y}));
  CHECK(fake_state().last_block[0] == validation::kDefaultBlock[0]);
  CHECK(fake_state().last_block[1] == 1);
  CHECK(fake_state().last_block[2] == 1);
  // An explicit zero block is a zero block, never the default.
  config.block_given = true;
  auto zero = (*k)->launch(config, {*y});
  REQUIRE_FALSE(zero);
  CHECK(zero.error().items()[0].code == diag::Code::zero_dimension);
  CHECK(fake_state().launches == 1);
}

TEST_CASE("backend runtime: a blocked launch is validated once, never asks the driver's occupancy, and is reported whole") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt = fake_runtime(api);
  auto k = rt->compile(example_text("saxpy"), "saxpy", "saxpy.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  auto y = rt->allocate(4000), x = rt->allocate(4000);
  REQUIRE(y);
  REQUIRE(x);
  fake_state().param_sizes = {8, 8, 4, 4};
  // saxpy has @workgroup(256): block 512 is blocked by geometry (PG3105, PG3302); grid 4 < 132 SMs warns.
  auto blocked = (*k)->launch(LaunchConfig::linear(4, 512), {*y, *x, 2.0f, 1000u});
  REQUIRE_FALSE(blocked);
  CHECK((*k)->counters().validated == 1);
  CHECK((*k)->counters().blocked == 1);
  CHECK(fake_state().occupancy_calls == 0);
  CHECK(fake_state().launches == 0);
  bool warned = false;
  for (const auto& d : blocked.error()) warned = warned || d.code == diag::Code::grid_smaller_than_sms;
  CHECK(warned);
  // A launchable shape asks the driver once.
  REQUIRE((*k)->launch(LaunchConfig::linear(132, 256), {*y, *x, 2.0f, 1000u}));
  CHECK(fake_state().occupancy_calls == 1);
}

TEST_CASE("backend runtime: a stream of another context is blocked before the driver, naming both contexts (PG4008)") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt = fake_runtime(api);
  auto other = fake_runtime(api);
  REQUIRE(&rt->context() != &other->context());
  auto k = rt->compile(example_text("saxpy"), "saxpy", "saxpy.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  auto y = rt->allocate(4000), x = rt->allocate(4000);
  REQUIRE(y);
  REQUIRE(x);
  fake_state().param_sizes = {8, 8, 4, 4};
  auto foreign = other->create_stream();
  REQUIRE(foreign);
  auto blocked = (*k)->launch(LaunchConfig::linear(4, 256), {*y, *x, 2.0f, 1000u}, &*foreign);
  REQUIRE_FALSE(blocked);
  CHECK(blocked.error().items()[0].code == diag::Code::foreign_object);
  CHECK(blocked.error().items()[0].message.find("the stream belongs to the context of device") != std::string::npos);
  CHECK(blocked.error().items()[0].message.find("loaded in the context of device") != std::string::npos);
  CHECK(fake_state().launches == 0);
  auto verdict = (*k)->check(LaunchConfig::linear(4, 256), {}, &*foreign);
  CHECK_FALSE(verdict.launchable);
  auto own = rt->create_stream();
  REQUIRE(own);
  REQUIRE((*k)->launch(LaunchConfig::linear(4, 256), {*y, *x, 2.0f, 1000u}, &*own));
  CHECK(fake_state().launches == 1);
}

TEST_CASE("backend runtime: exact arguments take the one-pass path; its shapes and values equal the binding path's") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt = fake_runtime(api);
  auto k = rt->compile(R"(kernel mixed(out y: f32[], flag: bool, d: f64, big: i64, n: u32) {
  let i = global_id.x;
  if (flag && i < n) { y[i] = f32(d) + f32(big); }
}
)",
                       "mixed", "mixed.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  auto y = rt->allocate(4096);
  REQUIRE(y);
  fake_state().param_sizes = {8, 4, 8, 8, 4};  // a bool parameter is 4 bytes
  const auto cfg = LaunchConfig::linear(4, 256);
  // Every argument of the parameter's exact type: the driver's slots are the arguments' own values.
  REQUIRE((*k)->launch(cfg, {*y, true, 2.5, int64_t{-7}, 1000u}));
  CHECK((*k)->counters().validated == 1);
  CHECK(fake_state().last_params[0] == y->pointer());
  CHECK(fake_state().last_params[1] == 1);
  CHECK(fake_state().last_params[2] == 0x4004000000000000ull);  // 2.5
  CHECK(fake_state().last_params[3] == static_cast<uint64_t>(int64_t{-7}));
  CHECK(fake_state().last_params[4] == 1000);
  // New values of d and big (the memory-safety proof uses flag and n, not them): the same shape.
  REQUIRE((*k)->launch(cfg, {*y, true, -1.0, int64_t{1} << 40, 1000u}));
  CHECK((*k)->counters().validated == 1);
  CHECK(fake_state().last_params[1] == 1);
  CHECK(fake_state().last_params[2] == 0xBFF0000000000000ull);  // -1.0
  CHECK(fake_state().last_params[3] == uint64_t{1} << 40);
  CHECK(fake_state().last_params[4] == 1000);
  // Converted arguments (an f32 for the f64, an i32 for the i64 and for the u32) bind through the
  // other path and find the same validated shape.
  REQUIRE((*k)->launch(cfg, {*y, true, 0.5f, int32_t{-3}, int32_t{1000}}));
  CHECK((*k)->counters().validated == 1);
  CHECK(fake_state().last_params[2] == 0x3FE0000000000000ull);  // 0.5 widened
  CHECK(fake_state().last_params[3] == static_cast<uint64_t>(int64_t{-3}));
  CHECK(fake_state().last_params[4] == 1000);
  // Another value of flag or n is another verdict, validated once on either path.
  REQUIRE((*k)->launch(cfg, {*y, false, 2.5, int64_t{1}, 5u}));
  REQUIRE((*k)->launch(cfg, {*y, false, 2.5f, int32_t{1}, int32_t{5}}));
  CHECK((*k)->counters().validated == 2);
  CHECK(fake_state().last_params[1] == 0);
  CHECK(fake_state().last_params[4] == 5);
  // A new grid through the one-pass path validates once, and is cached for the binding path too.
  REQUIRE((*k)->launch(LaunchConfig::linear(9, 256), {*y, true, 2.5, int64_t{1}, 1u}));
  CHECK((*k)->counters().validated == 3);
  REQUIRE((*k)->launch(LaunchConfig::linear(9, 256), {*y, true, 2.5f, int32_t{1}, 1u}));
  CHECK((*k)->counters().validated == 3);
  // Blocked through the one-pass path: reported whole, never cached, never at the driver.
  const int launches = fake_state().launches;
  for (int i = 0; i < 2; ++i) {
    auto blocked = (*k)->launch(LaunchConfig::linear(4, 2048), {*y, true, 2.5, int64_t{1}, 1u});
    REQUIRE_FALSE(blocked);
  }
  CHECK(fake_state().launches == launches);
  CHECK((*k)->counters().blocked == 2);
}

TEST_CASE("backend runtime: a foreign kernel's pointer takes a buffer of any element type, on both launch paths") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt = fake_runtime(api);
  std::ifstream in(std::string(PTXGATE_SOURCE_DIR) + "/tests/unit/ptx/nvcc_saxpy.ptx");
  std::stringstream ss;
  ss << in.rdbuf();
  auto k = rt->load_foreign(ss.str(), "_Z5saxpyifPKfPf", "nvcc_saxpy.ptx");
  if (!k) FAIL(diag::render_text(k.error()));
  CHECK(fake_state().ptx_loads == 1);
  auto x = rt->allocate_array<float>(1000), y = rt->allocate_array<double>(1000);
  REQUIRE(x);
  REQUIRE(y);
  fake_state().param_sizes = {4, 4, 8, 8};
  // Typed buffers (f32, f64) for the PTX's pointers of unknown type: the steady path and, for
  // a u32 parameter given an i32 (the general path's binding), the other.
  REQUIRE((*k)->launch(LaunchConfig::linear(4, 256), {1000u, 2.0f, *x, *y}));
  REQUIRE((*k)->launch(LaunchConfig::linear(4, 256), {int32_t(1000), 2.0f, *x, *y}));
  CHECK(fake_state().launches == 2);
  CHECK(fake_state().last_params[2] == x->pointer());
  CHECK(fake_state().last_params[3] == y->pointer());
  // A scalar where the PTX has a pointer is still refused.
  auto scalar = (*k)->launch(LaunchConfig::linear(4, 256), {1000u, 2.0f, uint64_t(x->pointer()), *y});
  REQUIRE_FALSE(scalar);
  CHECK(scalar.error().items()[0].code == diag::Code::argument_kind_mismatch);
  CHECK(fake_state().launches == 2);
}

TEST_CASE("backend runtime: the launch cache's front holds the last steady shape; every other shape takes the cache") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt = fake_runtime(api);
  auto k = rt->compile(example_text("saxpy"), "saxpy", "saxpy.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  auto y = rt->allocate(4000), x = rt->allocate(4000);
  REQUIRE((y && x));
  fake_state().param_sizes = {8, 8, 4, 4};
  // Two shapes in turn: each validated once, then found (in the front or behind it) with its own grid.
  for (int i = 0; i < 6; ++i) {
    const unsigned grid = i % 2 == 0 ? 4 : 5;
    REQUIRE((*k)->launch(LaunchConfig::linear(grid, 256), {*y, *x, 2.0f, 1000u}));
    CHECK(fake_state().last_grid[0] == grid);
    CHECK(fake_state().last_block[0] == 256);
  }
  CHECK((*k)->counters().validated == 2);
  CHECK((*k)->counters().cached == 4);
  CHECK((*k)->counters().driver_calls == 6);
  // The front packs the configuration into 32-bit halves: values past 32 bits never alias a known
  // shape (grid 2^32 + 4 is not grid 4, dynamic shared 2^32 bytes are not 0); they are validated and blocked.
  const int launches = fake_state().launches;
  auto wide_grid = (*k)->launch(LaunchConfig{{(uint64_t{1} << 32) + 4, 1, 1}, {256, 1, 1}, 0, false},
                                {*y, *x, 2.0f, 1000u});
  CHECK_FALSE(wide_grid);
  auto wide_shared = (*k)->launch(LaunchConfig{{4, 1, 1}, {256, 1, 1}, uint64_t{1} << 32, false},
                                  {*y, *x, 2.0f, 1000u});
  CHECK_FALSE(wide_shared);
  CHECK(fake_state().launches == launches);
  CHECK((*k)->counters().blocked == 2);
  // The same grid and block launched cooperatively is another shape: validated, and launched cooperatively.
  REQUIRE((*k)->launch(LaunchConfig::linear(4, 256), {*y, *x, 2.0f, 1000u}));
  REQUIRE((*k)->launch(LaunchConfig{{4, 1, 1}, {256, 1, 1}, 0, true}, {*y, *x, 2.0f, 1000u}));
  CHECK(fake_state().cooperative_launches == 1);
  CHECK((*k)->counters().validated == 5);  // the two shapes, the two blocked launches, the cooperative one
  REQUIRE((*k)->launch(LaunchConfig::linear(4, 256), {*y, *x, 2.0f, 1000u}));
  CHECK(fake_state().cooperative_launches == 1);
  CHECK(fake_state().launches == launches + 2);
}

TEST_CASE("backend runtime: a kernel of more buffers than the front holds launches steadily through the cache") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt = fake_runtime(api);
  // 13 buffers and n: 14 key words, more than a SteadyKey's 12.
  auto k = rt->compile(R"(kernel many(out y: f32[], in a: f32[], in b: f32[], in c: f32[], in d: f32[], in e: f32[],
                        in f: f32[], in g: f32[], in h: f32[], in p: f32[], in q: f32[], in r: f32[],
                        in s: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = a[i] + b[i] + c[i] + d[i] + e[i] + f[i] + g[i] + h[i] + p[i] + q[i] + r[i] + s[i]; }
}
)",
                       "many", "many.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  std::vector<DeviceBuffer> b;
  for (int i = 0; i < 14; ++i) {
    auto made = rt->allocate(4096);
    REQUIRE(made);
    b.push_back(std::move(*made));
  }
  // The launch's arguments: buffers b[first], b[1..12] and then `last` as the 13th, and n.
  auto args = [&](size_t first, const DeviceBuffer& last, uint32_t n) {
    std::vector<Arg> a{Arg(b[first])};
    for (size_t i = 1; i < 12; ++i) a.emplace_back(b[i]);
    a.emplace_back(last);
    a.emplace_back(n);
    return a;
  };
  fake_state().param_sizes = {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 4};
  for (int round = 0; round < 3; ++round) {
    const size_t first = round % 2 == 0 ? 0 : 13;  // other buffers each round: the values are rebound
    REQUIRE((*k)->launch(LaunchConfig::linear(4, 256), args(first, b[12], 1000u)));
    CHECK(fake_state().last_params[0] == b[first].pointer());
    CHECK(fake_state().last_params[12] == b[12].pointer());
    CHECK(fake_state().last_params[13] == 1000u);
  }
  CHECK((*k)->counters().validated == 1);
  CHECK((*k)->counters().cached == 2);
  // A smaller thirteenth buffer is another shape, and so is another n.
  auto small = rt->allocate(400);
  REQUIRE(small);
  REQUIRE((*k)->launch(LaunchConfig::linear(4, 256), args(0, *small, 100u)));
  CHECK((*k)->counters().validated == 2);
  REQUIRE((*k)->launch(LaunchConfig::linear(4, 256), args(0, b[12], 999u)));
  CHECK((*k)->counters().validated == 3);
}

TEST_CASE("backend runtime: the launch cache finds each of its last 16 shapes through its slots") {
  LaunchCache cache(2);
  auto shape_of = [](uint64_t grid, uint64_t bytes) {
    validation::LaunchShape s;
    s.start({grid, 1, 1}, {64, 1, 1}, 0, {});
    s.add_words(validation::LaunchShape::kBufferBytesKnown | 1, bytes);
    s.add_words(0, 7);
    return s;
  };
  // Shape after shape (their tags share slots: 200 shapes, 64 slots): each of the last 16 is found
  // with its own block, the one before them and another buffer size are not.
  for (uint64_t i = 0; i < 200; ++i) {
    cache.insert(shape_of(1 + i, 256), {i + 1, 2, 1});
    for (uint64_t j = i >= 15 ? i - 15 : 0; j <= i; ++j) {
      auto block = cache.find(shape_of(1 + j, 256));
      REQUIRE(block);
      CHECK((*block)[0] == j + 1);
    }
    if (i >= 16) CHECK_FALSE(cache.find(shape_of(1 + i - 16, 256)));
    CHECK_FALSE(cache.find(shape_of(1 + i, 512)));
  }
  // A shape given the grid-free mix of one that differs from it in its grid only has the tag it
  // would compute itself, and is found; a mix of another shape misses (but for the entry of the last
  // hit, which is compared word by word without its tag).
  auto adopted = shape_of(195, 256);
  adopted.adopt_grid_free_mix(shape_of(3, 256).grid_free_mix());
  CHECK(adopted.tag() == shape_of(195, 256).tag());
  CHECK(cache.find(adopted));
  REQUIRE(cache.find(shape_of(190, 256)));
  auto wrong = shape_of(195, 256);
  wrong.adopt_grid_free_mix(shape_of(3, 512).grid_free_mix());
  CHECK(wrong.tag() != adopted.tag());
  CHECK_FALSE(cache.find(wrong));
}
