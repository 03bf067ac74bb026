// The guarded launch through a fake driver: steady path, blocked plans, opt-in, cooperative, barrier word, binding.
#include <doctest/doctest.h>

#include <limits>
#include <atomic>
#include <thread>

#include <vector>

#include "ptxgate/runtime/arg.hpp"
#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/launch.hpp"
#include "ptxgate/runtime/internal/launch_path.hpp"
#include "runtime_fake_launch.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using testing::fake_state;

namespace {

contract::KernelInfo saxpy_info() {
  contract::KernelInfo k;
  k.name = "saxpy";
  k.params = {{"y", 0, true, ir::Access::inout, ir::Type::f32, 8},
              {"x", 1, true, ir::Access::in, ir::Type::f32, 8},
              {"a", 2, false, ir::Access::inout, ir::Type::f32, 4},
              {"n", 3, false, ir::Access::inout, ir::Type::u32, 4}};
  return k;
}

contract::LaunchPlan plan_for(uint64_t grid, uint64_t block, size_t args, uint64_t shared = 0, bool coop = false) {
  contract::LaunchPlan p = testing::fake_plan(grid, block, 2, {ir::Type::f32, ir::Type::u32}, args);
  p.dynamic_shared_bytes = shared;
  p.cooperative = coop;
  return p;
}

struct Fixture : testing::FakeContext {
  CUdeviceptr y = 0x100, x = 0x200;
  float a = 2.0f;
  uint32_t n = 1000;
  std::vector<void*> args{&y, &x, &a, &n};
};

}  // namespace

TEST_CASE("backend launch: a repeated plan shape validates once and then only calls the driver") {
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  REQUIRE(fn);
  auto plan = plan_for(4, 256, 4);
  for (int i = 0; i < 10; ++i) REQUIRE(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr));
  auto c = (*fn)->counters();
  CHECK(c.validated == 1);
  CHECK(c.cached == 9);
  CHECK(c.driver_calls == 10);
  CHECK(fake_state().launches == 10);
  CHECK(fake_state().occupancy_calls == 1);
  CHECK(fake_state().last_grid[0] == 4);
  CHECK(fake_state().last_block[0] == 256);

  auto other = plan_for(8, 128, 4);
  REQUIRE(launch_cuda_function(*f.ctx, **fn, other, f.args, nullptr));
  CHECK((*fn)->counters().validated == 2);
  CHECK(fake_state().occupancy_calls == 2);

  // Another grid of a known block size is validated again, with the occupancy answer it already has.
  fake_state().occupancy_answer = 1;  // would block a cooperative launch if it were asked again
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan_for(9, 128, 4), f.args, nullptr));
  CHECK((*fn)->counters().validated == 3);
  CHECK(fake_state().occupancy_calls == 2);
  // Another block size or dynamic shared size asks the driver.
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan_for(9, 64, 4), f.args, nullptr));
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan_for(9, 64, 4, 1024), f.args, nullptr));
  CHECK(fake_state().occupancy_calls == 4);
}

TEST_CASE("backend launch: a blocked plan never reaches the driver, every time") {
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  REQUIRE(fn);
  auto plan = plan_for(4, 1025, 4);
  for (int i = 0; i < 3; ++i) {
    auto r = launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr);
    REQUIRE_FALSE(r);
    bool threads = false;
    for (const auto& d : r.error()) threads |= d.code == diag::Code::threads_per_block_exceeded;
    CHECK(threads);
  }
  CHECK(fake_state().launches == 0);
  CHECK((*fn)->counters().blocked == 3);
}

TEST_CASE("backend launch: an argument count mismatch is blocked before the driver") {
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  REQUIRE(fn);
  auto plan = plan_for(4, 256, 3);
  std::vector<void*> three(f.args.begin(), f.args.begin() + 3);
  auto r = launch_cuda_function(*f.ctx, **fn, plan, three, nullptr);
  REQUIRE_FALSE(r);
  CHECK(r.error().items()[0].code == diag::Code::argument_count_mismatch);
  CHECK(fake_state().launches == 0);
}

TEST_CASE("backend launch: a plan that does not describe the call is an internal error") {
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  REQUIRE(fn);
  auto plan = plan_for(4, 256, 4);
  std::vector<void*> with_null = f.args;
  with_null[1] = nullptr;
  auto r = launch_cuda_function(*f.ctx, **fn, plan, with_null, nullptr);
  REQUIRE_FALSE(r);
  CHECK(r.error().items()[0].code == diag::Code::internal_error);
  CHECK(fake_state().launches == 0);
}

TEST_CASE("backend launch: a thread's repeated plan relaunches by its verdict; every change is checked afresh") {
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  REQUIRE(fn);
  auto plan = plan_for(4, 256, 4);
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr));
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr));
  CHECK((*fn)->counters().validated == 1);
  CHECK((*fn)->counters().cached == 1);
  CHECK(fake_state().launches == 2);

  // The same object with one description changed is another shape: validated, and blocked.
  plan.arguments[3].size_bytes = 8;  // n is a 4-byte parameter
  auto changed = launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr);
  REQUIRE_FALSE(changed);
  CHECK(changed.error().has_errors());
  CHECK((*fn)->counters().validated == 2);
  CHECK(fake_state().launches == 2);
  plan.arguments[3].size_bytes = 4;
  // Another geometry likewise.
  plan.grid[0] = 5;
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr));
  CHECK((*fn)->counters().validated == 3);
  CHECK(fake_state().last_grid[0] == 5);
  plan.grid[0] = 4;

  // A copy of the plan, and the plan launched from another thread: the verdict it has, no validation.
  const auto copy = plan;
  REQUIRE(launch_cuda_function(*f.ctx, **fn, copy, f.args, nullptr));
  bool other_thread = false;
  std::thread([&] { other_thread = bool(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr)); }).join();
  CHECK(other_thread);
  CHECK((*fn)->counters().validated == 3);
  CHECK(fake_state().launches == 5);
  CHECK(fake_state().last_grid[0] == 4);

  // A table the plan does not describe is the internal error it always is, before the driver.
  std::vector<void*> with_null = f.args;
  with_null[1] = nullptr;
  auto undescribed = launch_cuda_function(*f.ctx, **fn, plan, with_null, nullptr);
  REQUIRE_FALSE(undescribed);
  CHECK(undescribed.error().items()[0].code == diag::Code::internal_error);
  auto on_stream = launch_cuda_function(*f.ctx, **fn, plan, f.args, reinterpret_cast<CUstream>(0x77));
  REQUIRE_FALSE(on_stream);
  CHECK(on_stream.error().items()[0].code == diag::Code::internal_error);
  CHECK(fake_state().launches == 5);

  // A poisoned context refuses the remembered plan too.
  fake_state().fail["cuLaunchKernel"] = CUDA_ERROR_LAUNCH_FAILED;
  REQUIRE_FALSE(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr));
  REQUIRE(f.ctx->poisoned());
  fake_state().fail.erase("cuLaunchKernel");
  auto poisoned = launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr);
  REQUIRE_FALSE(poisoned);
  CHECK(poisoned.error().items()[0].code == diag::Code::context_poisoned);
}

TEST_CASE(
    "backend launch: concurrent launches of one function with plans of their own share its remembered plan safely") {
  // The function's memo of its last plan is one slot (FunctionState::guarded): threads that launch
  // it with other plans in turn replace it or, finding it taken, take the launch cache; every launch
  // gets its own plan's verdict and geometry either way.
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  REQUIRE(fn);
  std::vector<contract::LaunchPlan> plans;
  for (uint64_t grid = 1; grid <= 4; ++grid) plans.push_back(plan_for(grid, 256, 4));
  auto blocked = plan_for(4, 256, 4);
  blocked.arguments[3].size_bytes = 8;  // n is a 4-byte parameter: never launched
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const bool block = (i + t) % 10 == 0;
        const auto launched = launch_cuda_function(*f.ctx, **fn, block ? blocked : plans[(t + i) % 4], f.args, nullptr);
        if (launched.has_value() == block) ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(fake_state().launches == 4 * 180);
  // A blocked verdict is not cached: the 80 blocked launches validated every time; each of the four
  // launchable shapes once, or once per thread that missed the cache with it.
  CHECK((*fn)->counters().validated >= 80 + 4);
  CHECK((*fn)->counters().validated <= 80 + 4 * 4);
}

TEST_CASE("backend launch: plans of other shapes take their own verdicts: a known size of 0, a described scalar value, another stream policy") {
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  REQUIRE(fn);
  auto plan = plan_for(4, 256, 4);
  plan.arguments[0].buffer_bytes = 4096;
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr));
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr));
  CHECK((*fn)->counters().validated == 1);
  CHECK((*fn)->counters().cached == 1);

  // A known size of 0 is another shape than an unknown size.
  auto empty = plan;
  empty.arguments[1].buffer_bytes = 0;
  (void)launch_cuda_function(*f.ctx, **fn, empty, f.args, nullptr);
  CHECK((*fn)->counters().validated == 2);
  // A scalar the proof does not use, with its value described, is another shape too.
  auto valued = plan;
  valued.arguments[2].scalar_bits = 0x40000000;
  REQUIRE(launch_cuda_function(*f.ctx, **fn, valued, f.args, nullptr));
  CHECK((*fn)->counters().validated == 3);
  // A plan of another stream policy than the context's gets its own verdict: PG3002 on the null stream.
  auto strict = plan;
  strict.stream_policy = contract::StreamPolicy::require_explicit;
  auto blocked = launch_cuda_function(*f.ctx, **fn, strict, f.args, nullptr);
  REQUIRE_FALSE(blocked);
  CHECK(blocked.error().items()[0].code == diag::Code::null_stream);
  // Another buffer size is validated once, then known; the first plan still is.
  auto larger = plan;
  larger.arguments[0].buffer_bytes = 8192;
  REQUIRE(launch_cuda_function(*f.ctx, **fn, larger, f.args, nullptr));
  REQUIRE(launch_cuda_function(*f.ctx, **fn, larger, f.args, nullptr));
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr));
  CHECK((*fn)->counters().validated == 5);
  CHECK((*fn)->counters().cached == 3);
  // The remembered plan with required elements added is not the remembered plan: validated, and
  // blocked when the buffer is too small for them (PG3008), before the driver.
  const auto launches = fake_state().launches;
  auto required = plan;
  required.required_elements = {{0, 2048}};  // x holds 4096 bytes: 1024 f32 elements
  auto too_small = launch_cuda_function(*f.ctx, **fn, required, f.args, nullptr);
  REQUIRE_FALSE(too_small);
  CHECK(too_small.error().items()[0].code == diag::Code::buffer_too_small);
  CHECK((*fn)->counters().validated == 6);
  CHECK(fake_state().launches == launches);
}

TEST_CASE("backend launch: the remembered plan launches only a plan equal in every field") {
  // The guarded memo compares each field of the plan's header with the remembered one's: a plan that
  // differs in one of them, right after the remembered plan launched, takes its own verdict.
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  REQUIRE(fn);
  const auto plan = plan_for(4, 256, 4);
  auto remembered = [&] {
    REQUIRE(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr));
    REQUIRE(launch_cuda_function(*f.ctx, **fn, plan, f.args, nullptr));
  };
  // Another stream policy: PG3002 on the null stream, not the remembered verdict.
  remembered();
  auto strict = plan;
  strict.stream_policy = contract::StreamPolicy::require_explicit;
  auto blocked = launch_cuda_function(*f.ctx, **fn, strict, f.args, nullptr);
  REQUIRE_FALSE(blocked);
  CHECK(blocked.error().items()[0].code == diag::Code::null_stream);
  // A memory proof required, another grid, block or dynamic shared size, a cooperative launch: each
  // validated afresh (the launch cache knows none of them yet).
  std::vector<contract::LaunchPlan> others(5, plan);
  others[0].require_memory_proof = true;
  others[1].grid[1] = 2;
  others[2].block[0] = 128;
  others[3].dynamic_shared_bytes = 16;
  others[4].cooperative = true;
  for (const contract::LaunchPlan& other : others) {
    remembered();
    const uint64_t validated = (*fn)->counters().validated;
    (void)launch_cuda_function(*f.ctx, **fn, other, f.args, nullptr);
    CHECK((*fn)->counters().validated == validated + 1);
  }
}

TEST_CASE("backend launch: shared memory above 48 KiB opts in once per function, at the maximum") {
  Fixture f;
  fake_state().static_shared = 1024;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  REQUIRE(fn);
  CHECK((*fn)->resources().static_shared_bytes == 1024);
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan_for(4, 256, 4, 4096), f.args, nullptr));
  CHECK(fake_state().set_attribute_calls == 0);
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan_for(4, 256, 4, 100000), f.args, nullptr));
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan_for(4, 256, 4, 120000), f.args, nullptr));
  CHECK(fake_state().set_attribute_calls == 1);
  CHECK(fake_state().last_max_dynamic_shared == 232448 - 1024);
  CHECK(fake_state().last_shared == 120000);
  auto too_big = launch_cuda_function(*f.ctx, **fn, plan_for(4, 256, 4, 232448), f.args, nullptr);
  REQUIRE_FALSE(too_big);
  CHECK(too_big.error().items()[0].code == diag::Code::shared_memory_exceeded);
}

TEST_CASE("backend launch: grid_sync kernels launch cooperatively with the barrier word appended") {
  Fixture f;
  auto info = saxpy_info();
  info.cooperative = true;
  info.uses_grid_sync = true;
  info.hidden_grid_barrier_param = true;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), info);
  REQUIRE(fn);
  fake_state().occupancy_answer = 2;
  fake_state().param_sizes = {8, 8, 4, 4, 8};
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan_for(264, 256, 4, 0, true), f.args, nullptr));
  CHECK(fake_state().cooperative_launches == 1);
  CHECK(fake_state().launches == 0);
  REQUIRE(fake_state().last_params.size() == 5);
  CHECK(fake_state().last_params[0] == f.y);
  CHECK(fake_state().last_params[3] == 1000);
  auto word = f.ctx->grid_barrier_word(nullptr);
  REQUIRE(word);
  CHECK(fake_state().last_params[4] == *word);
  CHECK(fake_state().memsets == 1);  // zeroed once at allocation

  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan_for(264, 256, 4, 0, true), f.args, nullptr));
  CHECK(fake_state().memsets == 1);  // no per-launch reset

  auto too_large = launch_cuda_function(*f.ctx, **fn, plan_for(265, 256, 4, 0, true), f.args, nullptr);
  REQUIRE_FALSE(too_large);
  CHECK(too_large.error().items()[0].code == diag::Code::cooperative_grid_too_large);
  auto not_coop = launch_cuda_function(*f.ctx, **fn, plan_for(4, 256, 4, 0, false), f.args, nullptr);
  REQUIRE_FALSE(not_coop);
  bool needs = false;
  for (const auto& d : not_coop.error()) needs |= d.code == diag::Code::grid_sync_needs_cooperative;
  CHECK(needs);
  CHECK(fake_state().cooperative_launches == 2);
}

TEST_CASE("backend launch: a driver rejection is PG4005; a sticky one poisons, then PG4003") {
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  REQUIRE(fn);
  fake_state().fail["cuLaunchKernel"] = CUDA_ERROR_INVALID_VALUE;
  auto r = launch_cuda_function(*f.ctx, **fn, plan_for(4, 256, 4), f.args, nullptr);
  REQUIRE_FALSE(r);
  CHECK(r.error().items()[0].code == diag::Code::launch_failed);
  CHECK(r.error().items()[0].message.find("cuLaunchKernel") != std::string::npos);
  CHECK(r.error().items()[0].message.find("saxpy") != std::string::npos);
  CHECK_FALSE(f.ctx->poisoned());

  fake_state().fail["cuLaunchKernel"] = CUDA_ERROR_LAUNCH_FAILED;
  REQUIRE_FALSE(launch_cuda_function(*f.ctx, **fn, plan_for(4, 256, 4), f.args, nullptr));
  CHECK(f.ctx->poisoned());
  int launches = fake_state().launches;
  auto after = launch_cuda_function(*f.ctx, **fn, plan_for(4, 256, 4), f.args, nullptr);
  REQUIRE_FALSE(after);
  CHECK(after.error().items()[0].code == diag::Code::context_poisoned);
  CHECK(fake_state().launches == launches);
}

TEST_CASE("backend launch: the driver's occupancy answer decides the cooperative limit") {
  Fixture f;
  auto info = saxpy_info();
  info.cooperative = true;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), info);
  REQUIRE(fn);
  fake_state().occupancy_answer = 1;
  auto v = validate_launch(*f.ctx, **fn, plan_for(133, 256, 4, 0, true), nullptr);
  CHECK_FALSE(v.launchable);
  CHECK(v.max_cooperative_grid == 132);
  CHECK(validate_launch(*f.ctx, **fn, plan_for(132, 256, 4, 0, true), nullptr).launchable);
}

TEST_CASE("backend arg: binding checks kind, type family, width and range") {
  contract::ParamInfo buf{"x", 0, true, ir::Access::in, ir::Type::f32, 8};
  contract::ParamInfo f32{"a", 1, false, ir::Access::inout, ir::Type::f32, 4};
  contract::ParamInfo f64{"b", 2, false, ir::Access::inout, ir::Type::f64, 8};
  contract::ParamInfo u32{"n", 3, false, ir::Access::inout, ir::Type::u32, 4};
  contract::ParamInfo i64{"m", 4, false, ir::Access::inout, ir::Type::i64, 8};

  auto ok = bind_argument(Arg(2.5f), f32, "k");
  REQUIRE(ok);
  float got;
  std::memcpy(&got, ok->bytes, 4);
  CHECK(got == 2.5f);
  CHECK(ok->size == 4);

  auto wrong_kind = bind_argument(Arg(2.5f), buf, "k");
  REQUIRE_FALSE(wrong_kind);
  CHECK(wrong_kind.error().items()[0].code == diag::Code::argument_kind_mismatch);
  CHECK(wrong_kind.error().items()[0].message.find("'x'") != std::string::npos);

  auto dbl = bind_argument(Arg(2.5), f32, "k");
  REQUIRE_FALSE(dbl);
  CHECK(dbl.error().items()[0].code == diag::Code::argument_size_mismatch);
  CHECK(dbl.error().items()[0].fix.find("2.0f") != std::string::npos);

  auto widened = bind_argument(Arg(1.5f), f64, "k");
  REQUIRE(widened);
  double d;
  std::memcpy(&d, widened->bytes, 8);
  CHECK(d == 1.5);

  auto n = bind_argument(Arg(1000), u32, "k");
  REQUIRE(n);
  uint32_t nv;
  std::memcpy(&nv, n->bytes, 4);
  CHECK(nv == 1000);
  CHECK_FALSE(bind_argument(Arg(-1), u32, "k"));
  CHECK_FALSE(bind_argument(Arg(uint64_t{1} << 32), u32, "k"));
  CHECK_FALSE(bind_argument(Arg(1.0f), u32, "k"));
  auto m = bind_argument(Arg(-7), i64, "k");
  REQUIRE(m);
  int64_t mv;
  std::memcpy(&mv, m->bytes, 8);
  CHECK(mv == -7);

  auto null_buffer = bind_argument(Arg::device_pointer(0, 64), buf, "k");
  REQUIRE_FALSE(null_buffer);
  CHECK(null_buffer.error().items()[0].code == diag::Code::null_buffer);
  auto p = bind_argument(Arg::device_pointer(0xabc0, 64), buf, "k");
  REQUIRE(p);
  uint64_t pv;
  std::memcpy(&pv, p->bytes, 8);
  CHECK(pv == 0xabc0);
}

TEST_CASE("backend arg: small integers are range-checked by their width; a real number rounds to the float parameter") {
  contract::ParamInfo u8{"c", 0, false, ir::Access::inout, ir::Type::u8, 1};
  contract::ParamInfo i16{"s", 1, false, ir::Access::inout, ir::Type::i16, 2};
  contract::ParamInfo f16{"h", 2, false, ir::Access::inout, ir::Type::f16, 2};
  contract::ParamInfo bf16{"b", 3, false, ir::Access::inout, ir::Type::bf16, 2};
  contract::ParamInfo f32{"a", 4, false, ir::Access::inout, ir::Type::f32, 4};
  contract::ParamInfo u32{"n", 5, false, ir::Access::inout, ir::Type::u32, 4};
  // The product was wrong here before: every value fitted an 8- or 16-bit parameter.
  CHECK(bind_argument(Arg(255), u8, "k"));
  CHECK_FALSE(bind_argument(Arg(256), u8, "k"));
  CHECK_FALSE(bind_argument(Arg(-1), u8, "k"));
  CHECK(bind_argument(Arg(-32768), i16, "k"));
  CHECK_FALSE(bind_argument(Arg(-32769), i16, "k"));
  CHECK_FALSE(bind_argument(Arg(32768), i16, "k"));
  auto s = bind_argument(Arg(-2), i16, "k");
  REQUIRE(s);
  CHECK(s->size == 2);
  CHECK(s->bytes[0] == 0xfe);
  CHECK(s->bytes[1] == 0xff);
  CHECK(s->bytes[2] == 0);  // nothing past the parameter's width

  auto h = bind_argument(Arg::real(1.00048828125), f16, "k");  // a tie: to the even neighbour, 1.0
  REQUIRE(h);
  CHECK(h->size == 2);
  uint16_t hv;
  std::memcpy(&hv, h->bytes, 2);
  CHECK(hv == 0x3c00);
  auto b = bind_argument(Arg::real(-3.0), bf16, "k");
  REQUIRE(b);
  std::memcpy(&hv, b->bytes, 2);
  CHECK(hv == 0xc040);
  auto big = bind_argument(Arg::real(65520.0), f16, "k");  // rounds past 65504
  REQUIRE_FALSE(big);
  CHECK(big.error().items()[0].code == diag::Code::argument_size_mismatch);
  CHECK(big.error().items()[0].message.find("a real number (65520)") != std::string::npos);
  CHECK(big.error().items()[0].fix.find("within the range of f16") != std::string::npos);
  auto a = bind_argument(Arg::real(0.1), f32, "k");
  REQUIRE(a);
  float av;
  std::memcpy(&av, a->bytes, 4);
  CHECK(av == 0.1f);
  CHECK_FALSE(bind_argument(Arg::real(1.0), u32, "k"));  // a real number is no integer
  CHECK(bind_argument(Arg::real(std::numeric_limits<double>::infinity()), f16, "k"));
  CHECK(bind_argument(Arg::scalar(ir::Type::f16, 0x3c00), f16, "k"));
  CHECK_FALSE(bind_argument(Arg::scalar(ir::Type::bf16, 0x3f80), f16, "k"));
}

TEST_CASE("backend launch: a ticket relaunches its validated shape with new values, and only for its function") {
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  auto other = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  REQUIRE(fn);
  REQUIRE(other);
  fake_state().param_sizes = {8, 8, 4, 4};
  LaunchTicket ticket;
  CHECK_FALSE(ticket.valid());
  // A blocked plan issues no ticket.
  REQUIRE_FALSE(launch_cuda_function(*f.ctx, **fn, plan_for(4, 2048, 4), f.args, nullptr, nullptr, &ticket));
  CHECK_FALSE(ticket.valid());
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan_for(4, 256, 4), f.args, nullptr, nullptr, &ticket));
  REQUIRE(ticket.valid());

  f.y = 0x900;
  f.n = 77;
  REQUIRE(launch_cuda_function(*f.ctx, **fn, ticket, f.args, nullptr));
  CHECK(fake_state().launches == 2);
  REQUIRE(fake_state().last_params.size() == 4);
  CHECK(fake_state().last_grid[0] == 4);
  CHECK(fake_state().last_block[0] == 256);
  CHECK(fake_state().last_params[0] == 0x900);
  CHECK(fake_state().last_params[3] == 77);
  CHECK((*fn)->counters().validated == 2);  // the blocked plan and the launched one
  CHECK((*fn)->counters().blocked == 1);
  CHECK((*fn)->counters().cached == 1);
  CHECK((*fn)->counters().driver_calls == 2);

  // Another function, another stream kind or another argument count: internal error, no driver call.
  auto wrong_fn = launch_cuda_function(*f.ctx, **other, ticket, f.args, nullptr);
  REQUIRE_FALSE(wrong_fn);
  CHECK(wrong_fn.error().items()[0].code == diag::Code::internal_error);
  auto wrong_stream = launch_cuda_function(*f.ctx, **fn, ticket, f.args, reinterpret_cast<CUstream>(0x77));
  REQUIRE_FALSE(wrong_stream);
  CHECK(wrong_stream.error().items()[0].code == diag::Code::internal_error);
  std::vector<void*> three(f.args.begin(), f.args.begin() + 3);
  auto wrong_count = launch_cuda_function(*f.ctx, **fn, ticket, three, nullptr);
  REQUIRE_FALSE(wrong_count);
  CHECK(wrong_count.error().items()[0].code == diag::Code::internal_error);
  CHECK(fake_state().launches == 2);

  // A ticket does not outlive a poisoned context.
  fake_state().fail["cuLaunchKernel"] = CUDA_ERROR_LAUNCH_FAILED;
  REQUIRE_FALSE(launch_cuda_function(*f.ctx, **fn, ticket, f.args, nullptr));
  CHECK(f.ctx->poisoned());
  fake_state().fail.erase("cuLaunchKernel");
  int launches = fake_state().launches;
  auto after = launch_cuda_function(*f.ctx, **fn, ticket, f.args, nullptr);
  REQUIRE_FALSE(after);
  CHECK(after.error().items()[0].code == diag::Code::context_poisoned);
  CHECK(fake_state().launches == launches);
}

namespace guard_probe {

using internal::DriverGeometry;
using internal::FunctionState;

// True when an unqualified call `driver_launch(ctx, fn, ticket, args, stream)` resolves, by
// ordinary or argument-dependent lookup, from code outside the backend.
template <class C, class F, class T>
concept driver_launch_reachable = requires(C& c, F& f, const T& t, std::span<void* const> a, CUstream s) {
  driver_launch(c, f, t, a, s);
};
// The driver call itself.
template <class P>
concept drive_reachable = requires(Context& c, FunctionState& f, const DriverGeometry& g, std::span<void* const> a,
                                   CUstream s) { P::drive(c, f, g, a, s, false); };
// The bodies of the two launch_cuda_function overloads and the steady paths: each trusts what it is
// given (a shape, a ticket, a key), so none may be callable from outside.
template <class P>
concept shape_launch_reachable = requires(Context& c, FunctionState& f, const contract::LaunchPlan& p,
                                          const validation::LaunchShape& sh, std::span<void* const> a, CUstream s) {
  P::launch(c, f, p, sh, a, s, nullptr, nullptr);
};
template <class P>
concept relaunch_reachable = requires(Context& c, FunctionState& f, const LaunchTicket& t, std::span<void* const> a,
                                      CUstream s) { P::relaunch(c, f, t, a, s); };
template <class P>
concept steady_reachable = requires(Context& c, FunctionState& f, const SteadyKey& k, std::span<void* const> a,
                                    CUstream s) { P::launch_steady(c, f, k, a, s); };
// The verdict step, by contrast, reaches no driver launch entry point: graphs use it.
template <class P>
concept admit_reachable = requires(Context& c, FunctionState& f, const contract::LaunchPlan& p,
                                   const validation::LaunchShape& sh) { P::admit(c, f, p, sh, nullptr); };

}  // namespace guard_probe

TEST_CASE("backend launch: nothing outside the guarded path reaches the driver's launch entry points") {
  static_assert(!guard_probe::driver_launch_reachable<Context, LoadedFunction, LaunchTicket>,
                "driver_launch must not be reachable by ADL");
  static_assert(!guard_probe::drive_reachable<internal::LaunchPath>, "LaunchPath::drive must be private");
  static_assert(!guard_probe::shape_launch_reachable<internal::LaunchPath>, "LaunchPath::launch must be private");
  static_assert(!guard_probe::relaunch_reachable<internal::LaunchPath>, "LaunchPath::relaunch must be private");
  static_assert(!guard_probe::steady_reachable<internal::LaunchPath>, "LaunchPath::launch_steady must be private");
  static_assert(guard_probe::admit_reachable<internal::LaunchPath>, "the probe itself must be able to say yes");
  Fixture f;
  auto fn = LoadedFunction::resolve(*f.ctx, reinterpret_cast<CUmodule>(0x4000), saxpy_info());
  REQUIRE(fn);
  fake_state().param_sizes = {8, 8, 4, 4};
  // A default ticket (never issued) reaches no driver.
  LaunchTicket never_issued;
  auto unissued = launch_cuda_function(*f.ctx, **fn, never_issued, f.args, nullptr);
  REQUIRE_FALSE(unissued);
  CHECK(unissued.error().items()[0].code == diag::Code::internal_error);
  CHECK(fake_state().launches == 0);
  // The ticket path checks null slots like the validating path does (PG3004), before the driver.
  LaunchTicket ticket;
  REQUIRE(launch_cuda_function(*f.ctx, **fn, plan_for(4, 256, 4), f.args, nullptr, nullptr, &ticket));
  CHECK(fake_state().launches == 1);
  std::vector<void*> holed = f.args;
  holed[2] = nullptr;
  auto null_slot = launch_cuda_function(*f.ctx, **fn, ticket, holed, nullptr);
  REQUIRE_FALSE(null_slot);
  CHECK(null_slot.error().items()[0].code == diag::Code::null_argument_slot);
  CHECK(null_slot.error().items()[0].message.find("slot 2") != std::string::npos);
  CHECK(fake_state().launches == 1);
}
