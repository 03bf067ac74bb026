// check_launch: every check at, just under and just over its limit, on sm_75, sm_80, sm_89 and sm_90 profiles.
#include "validation_test_support.hpp"

#include "ptxgate/validation/launch_shape.hpp"

using namespace validation_test;
using diag::Code;

namespace {
constexpr const char* kProfiles[] = {"t4", "a100-sxm", "l4", "h100-sxm"};
}

TEST_CASE("threads per block: at, under and over the device limit") {
  for (auto name : kProfiles) {
    CAPTURE(name);
    auto caps = caps_of(name);
    auto k = kernel();
    auto r = resources(16);
    uint64_t max = caps.max_threads_per_block;
    CHECK(only_warnings(check_launch(k, r, plan({1000, 1, 1}, {max, 1, 1}), caps)));
    CHECK(only_warnings(check_launch(k, r, plan({1000, 1, 1}, {max - 32, 1, 1}), caps)));
    auto over = check_launch(k, r, plan({1000, 1, 1}, {max + 1, 1, 1}), caps);
    CHECK_FALSE(over.launchable);
    CHECK(count(over, Code::threads_per_block_exceeded) == 1);
    auto over_2d = check_launch(k, r, plan({1000, 1, 1}, {32, 33, 1}), caps);
    CHECK(count(over_2d, Code::threads_per_block_exceeded) == 1);
    CHECK(over_2d.diagnostics.items()[0].message.find(std::to_string(max)) != std::string::npos);
  }
}

TEST_CASE("block axes: at and over each axis limit") {
  for (auto name : kProfiles) {
    CAPTURE(name);
    auto caps = caps_of(name);
    auto k = kernel();
    auto r = resources(16);
    CHECK(only_warnings(check_launch(k, r, plan({1000, 1, 1}, {1, 1, caps.max_block_dim[2]}), caps)));
    auto z = check_launch(k, r, plan({1000, 1, 1}, {1, 1, caps.max_block_dim[2] + 1}), caps);
    CHECK(count(z, Code::block_dim_exceeded) == 1);
    CHECK(count(z, Code::threads_per_block_exceeded) == 0);
    auto y = check_launch(k, r, plan({1000, 1, 1}, {1, caps.max_block_dim[1] + 1, 1}), caps);
    CHECK(count(y, Code::block_dim_exceeded) == 1);
    CHECK(count(y, Code::threads_per_block_exceeded) == 1);
  }
}

TEST_CASE("grid axes: at, under and over each axis limit") {
  for (auto name : kProfiles) {
    CAPTURE(name);
    auto caps = caps_of(name);
    auto k = kernel();
    auto r = resources(16);
    for (int axis = 0; axis < 3; ++axis) {
      CAPTURE(axis);
      std::array<uint64_t, 3> g{1, 1, 1};
      g[axis] = caps.max_grid_dim[axis];
      CHECK(check_launch(k, r, plan(g, {128, 1, 1}), caps).launchable);
      g[axis] -= 1;
      CHECK(check_launch(k, r, plan(g, {128, 1, 1}), caps).launchable);
      g[axis] += 2;
      auto v = check_launch(k, r, plan(g, {128, 1, 1}), caps);
      CHECK_FALSE(v.launchable);
      CHECK(count(v, Code::grid_dim_exceeded) == 1);
    }
    auto all = check_launch(k, r, plan({caps.max_grid_dim[0] + 1ull, 65536, 65536}, {128, 1, 1}), caps);
    CHECK(count(all, Code::grid_dim_exceeded) == 3);
  }
}

TEST_CASE("zero dimensions are PG3101; no block size means @workgroup, else the one default block") {
  auto caps = caps_of("h100-sxm");
  auto r = resources(16);
  CHECK(count(check_launch(kernel(), r, plan({0, 1, 1}, {128, 1, 1}), caps), Code::zero_dimension) == 1);
  CHECK(count(check_launch(kernel(), r, plan({1, 1, 1}, {128, 0, 1}), caps), Code::zero_dimension) == 1);
  // No block and no @workgroup: kDefaultBlock, the same default `run` and Kernel::launch use.
  auto defaulted = check_launch(kernel(), r, plan({200, 1, 1}, {0, 0, 0}), caps);
  CHECK(defaulted.launchable);
  CHECK(defaulted.block == kDefaultBlock);
  CHECK(defaulted.block == std::array<uint64_t, 3>{256, 1, 1});
  auto workgroup = check_launch(kernel({64, 2, 1}), r, plan({200, 1, 1}, {0, 0, 0}), caps);
  CHECK(workgroup.launchable);
  CHECK(workgroup.block == std::array<uint64_t, 3>{64, 2, 1});
  // A block of 0,0,0 asked for explicitly is a zero block, with or without @workgroup, and the
  // message says what was given.
  for (auto k : {kernel(), kernel({256, 1, 1})}) {
    auto p = plan({200, 1, 1}, {0, 0, 0});
    p.block_given = true;
    auto v = check_launch(k, r, p, caps);
    CHECK_FALSE(v.launchable);
    CHECK(count(v, Code::zero_dimension) == 1);
    CHECK(v.diagnostics.items()[0].message.find("block 0x0x0 has a zero dimension") != std::string::npos);
    // Like --block 0: a @workgroup kernel also reports the mismatch.
    auto one_zero = check_launch(k, r, plan({200, 1, 1}, {0, 1, 1}), caps);
    CHECK(count(v, Code::workgroup_mismatch) == count(one_zero, Code::workgroup_mismatch));
    CHECK(count(v, Code::workgroup_mismatch) == (k.has_required_block() ? 1u : 0u));
  }
  auto both = check_launch(kernel(), r, plan({1, 0, 1}, {4, 4, 0}), caps);
  CHECK(count(both, Code::zero_dimension) == 2);
  CHECK_FALSE(both.launchable);
}

TEST_CASE("geometry products that overflow 64 bits are PG3106, not a crash") {
  auto caps = caps_of("h100-sxm");
  uint64_t big = uint64_t{1} << 40;
  auto v = check_launch(kernel(), resources(16), plan({big, big, big}, {big, big, 1}), caps);
  CHECK(count(v, Code::geometry_overflow) == 2);
  CHECK(count(v, Code::grid_dim_exceeded) == 3);
  CHECK(count(v, Code::block_dim_exceeded) == 2);
  CHECK_FALSE(v.launchable);
  // The largest legal grid times the largest block has 2^73 threads and is still legal.
  auto huge = check_launch(kernel(), resources(16), plan({2147483647, 65535, 65535}, {1024, 1, 1}), caps);
  CHECK(huge.launchable);
}

TEST_CASE("@workgroup: the default block, and a differing block is PG3105") {
  auto caps = caps_of("l4");
  auto k = kernel({256, 1, 1});
  auto dflt = check_launch(k, resources(16), plan({100, 1, 1}, {0, 0, 0}), caps);
  CHECK(dflt.launchable);
  CHECK(dflt.block == std::array<uint64_t, 3>{256, 1, 1});
  CHECK(check_launch(k, resources(16), plan({100, 1, 1}, {256, 1, 1}), caps).launchable);
  auto bad = check_launch(k, resources(16), plan({100, 1, 1}, {128, 2, 1}), caps);
  CHECK(count(bad, Code::workgroup_mismatch) == 1);
  CHECK_FALSE(bad.launchable);
}

TEST_CASE("shared memory: default limit, opt-in maximum, static + dynamic") {
  for (auto name : kProfiles) {
    CAPTURE(name);
    auto caps = caps_of(name);
    auto k = kernel();
    auto at_default = check_launch(k, resources(16), plan({1000, 1, 1}, {128, 1, 1}, caps.shared_per_block), caps);
    CHECK(at_default.launchable);
    CHECK_FALSE(at_default.needs_shared_opt_in);
    CHECK(count(at_default, Code::shared_memory_opt_in) == 0);
    auto above_default =
        check_launch(k, resources(16), plan({1000, 1, 1}, {128, 1, 1}, caps.shared_per_block + 1), caps);
    CHECK(above_default.launchable);
    CHECK(above_default.needs_shared_opt_in);
    CHECK(count(above_default, Code::shared_memory_opt_in) == 1);
    auto at_max = check_launch(k, resources(16, 1024), plan({1000, 1, 1}, {128, 1, 1}, caps.shared_per_block_optin - 1024), caps);
    CHECK(at_max.launchable);
    CHECK(at_max.total_shared_bytes == caps.shared_per_block_optin);
    REQUIRE(at_max.occupancy.has_value());
    CHECK(at_max.occupancy->active_blocks_per_sm >= 1);
    auto over = check_launch(k, resources(16, 1024), plan({1000, 1, 1}, {128, 1, 1}, caps.shared_per_block_optin - 1023), caps);
    CHECK_FALSE(over.launchable);
    CHECK(count(over, Code::shared_memory_exceeded) == 1);
    CHECK(over.diagnostics.items()[0].fix.find(std::to_string(caps.shared_per_block_optin - 1024)) != std::string::npos);
    auto static_over = check_launch(k, resources(16, caps.shared_per_block_optin + 1), plan({1000, 1, 1}, {128, 1, 1}), caps);
    CHECK(count(static_over, Code::shared_memory_exceeded) == 1);
  }
  auto caps = caps_of("h100-sxm");
  auto wrap = check_launch(kernel(), resources(16, 100), plan({1000, 1, 1}, {128, 1, 1}, UINT64_MAX), caps);
  CHECK(count(wrap, Code::shared_memory_exceeded) == 1);
}

TEST_CASE("registers: per-warp rounding and sub-partition rounding, like the driver") {
  for (auto name : kProfiles) {
    CAPTURE(name);
    auto caps = caps_of(name);
    auto k = kernel();
    uint64_t max = caps.max_threads_per_block;
    // 64 regs x 1024 threads is exactly 65536.
    CHECK(check_launch(k, resources(64), plan({1000, 1, 1}, {max, 1, 1}), caps).diagnostics.error_count() == 0);
    // 65 regs round to 72 per thread: 73728 > 65536.
    auto over = check_launch(k, resources(65), plan({1000, 1, 1}, {max, 1, 1}), caps);
    CHECK(count(over, Code::registers_exceeded) == 1);
    CHECK(over.diagnostics.items()[0].fix.find("896 threads") != std::string::npos);
    CHECK(check_launch(k, resources(65), plan({1000, 1, 1}, {max - 128, 1, 1}), caps).launchable);
    // 200 regs: 10 warps (320 threads) would fit by count, but warps are charged in fours -> 12 x 6400.
    CHECK(check_launch(k, resources(200), plan({1000, 1, 1}, {256, 1, 1}), caps).launchable);
    auto sub = check_launch(k, resources(200), plan({1000, 1, 1}, {320, 1, 1}), caps);
    CHECK(count(sub, Code::registers_exceeded) == 1);
    // The same verdict as cuda_occupancy.h's register bound.
    CHECK(compute_occupancy(caps, resources(200), 320, 0).by_registers == 0);
    CHECK(compute_occupancy(caps, resources(200), 256, 0).by_registers > 0);
    auto too_many = check_launch(k, resources(caps.max_registers_per_thread + 1), plan({1000, 1, 1}, {32, 1, 1}), caps);
    CHECK(count(too_many, Code::registers_exceeded) == 1);
  }
}

TEST_CASE("the kernel's own thread limit is PG3302") {
  auto caps = caps_of("a100-sxm");
  auto r = resources(16, 0, 128);
  CHECK(check_launch(kernel(), r, plan({1000, 1, 1}, {128, 1, 1}), caps).launchable);
  auto v = check_launch(kernel(), r, plan({1000, 1, 1}, {129, 1, 1}), caps);
  CHECK(count(v, Code::threads_exceed_kernel_max) == 1);
  CHECK_FALSE(v.launchable);
}

TEST_CASE("cooperative grids: capacity = occupancy x SMs, at and one past") {
  struct C {
    const char* profile;
    uint64_t threads;
    uint32_t regs;
    uint64_t capacity;
  };
  // h100: 256 threads at 32 regs -> 8 blocks/SM x 132; t4: 256 threads -> 4 x 40; l4: 512 -> 3 x 58; a100: 1024 -> 2 x 108.
  for (const C& c : {C{"h100-sxm", 256, 32, 1056}, C{"t4", 256, 32, 160}, C{"l4", 512, 32, 174}, C{"a100-sxm", 1024, 16, 216}}) {
    CAPTURE(c.profile);
    auto caps = caps_of(c.profile);
    auto k = kernel();
    k.uses_grid_sync = true;
    auto at = check_launch(k, resources(c.regs), plan({c.capacity, 1, 1}, {c.threads, 1, 1}, 0, true), caps);
    CHECK(at.launchable);
    CHECK(at.max_cooperative_grid == c.capacity);
    auto past = check_launch(k, resources(c.regs), plan({c.capacity + 1, 1, 1}, {c.threads, 1, 1}, 0, true), caps);
    CHECK_FALSE(past.launchable);
    REQUIRE(count(past, Code::cooperative_grid_too_large) == 1);
    CHECK(past.diagnostics.items()[0].message.find(std::to_string(c.capacity)) != std::string::npos);
    CHECK(past.diagnostics.items()[0].fix.find(std::to_string(c.capacity)) != std::string::npos);
    auto in_2d = check_launch(k, resources(c.regs), plan({c.capacity / 2 + 1, 2, 1}, {c.threads, 1, 1}, 0, true), caps);
    CHECK(count(in_2d, Code::cooperative_grid_too_large) == 1);
  }
  auto caps = caps_of("h100-sxm");
  // The driver's answer, when given, replaces the offline occupancy.
  int asked = 0;
  auto one_block = [&](uint64_t threads, uint64_t dynamic_shared) -> std::optional<uint32_t> {
    ++asked;
    CHECK(threads == 256);
    CHECK(dynamic_shared == 0);
    return 1u;
  };
  auto driver = check_launch(kernel(), resources(32), plan({133, 1, 1}, {256, 1, 1}, 0, true), caps, {}, one_block);
  CHECK(count(driver, Code::cooperative_grid_too_large) == 1);
  CHECK(driver.max_cooperative_grid == 132);
  CHECK(asked == 1);
  // Asked only once geometry, shared memory and registers pass: never for a launch they block.
  (void)check_launch(kernel(), resources(32), plan({1, 1, 1}, {2048, 1, 1}, 0, true), caps, {}, one_block);
  (void)check_launch(kernel(), resources(32), plan({1, 1, 1}, {256, 1, 1}, 1u << 30, true), caps, {}, one_block);
  (void)check_launch(kernel(), resources(255), plan({1, 1, 1}, {1024, 1, 1}, 0, true), caps, {}, one_block);
  CHECK(asked == 1);
  // No answer from the provider: the offline model's occupancy stands.
  auto no_answer = [](uint64_t, uint64_t) -> std::optional<uint32_t> { return std::nullopt; };
  auto offline = check_launch(kernel(), resources(32), plan({133, 1, 1}, {256, 1, 1}, 0, true), caps, {}, no_answer);
  CHECK(offline.launchable);
  CHECK(offline.max_cooperative_grid == check_launch(kernel(), resources(32), plan({133, 1, 1}, {256, 1, 1}, 0, true), caps).max_cooperative_grid);
  // A grid too large for residency is fine without --cooperative (no grid_sync).
  CHECK(check_launch(kernel(), resources(32), plan({5000, 1, 1}, {256, 1, 1}), caps).launchable);
}

TEST_CASE("cooperative preconditions: device support, grid_sync, residency") {
  auto caps = caps_of("h100-sxm");
  auto k = kernel();
  k.uses_grid_sync = true;
  auto not_coop = check_launch(k, resources(32), plan({132, 1, 1}, {256, 1, 1}), caps);
  CHECK(count(not_coop, Code::grid_sync_needs_cooperative) == 1);
  CHECK_FALSE(not_coop.launchable);
  auto no_support = caps;
  no_support.cooperative_launch = false;
  CHECK(count(check_launch(k, resources(32), plan({132, 1, 1}, {256, 1, 1}, 0, true), no_support),
              Code::cooperative_unsupported) == 1);
  auto small_sm = caps;
  small_sm.max_threads_per_sm = 512;
  auto none = check_launch(k, resources(32), plan({1, 1, 1}, {1024, 1, 1}, 0, true), small_sm);
  CHECK(count(none, Code::kernel_cannot_be_resident) == 1);
  CHECK_FALSE(none.launchable);
}

TEST_CASE("warnings do not block: warp multiple, grid smaller than the SM count") {
  for (auto name : kProfiles) {
    CAPTURE(name);
    auto caps = caps_of(name);
    auto odd = check_launch(kernel(), resources(16), plan({1000, 1, 1}, {48, 1, 1}), caps);
    CHECK(odd.launchable);
    CHECK(count(odd, Code::block_not_warp_multiple) == 1);
    CHECK(odd.diagnostics.items()[0].fix.find("64") != std::string::npos);
    auto small = check_launch(kernel(), resources(16), plan({caps.sm_count - 1ull, 1, 1}, {64, 1, 1}), caps);
    CHECK(small.launchable);
    CHECK(count(small, Code::grid_smaller_than_sms) == 1);
    CHECK(check_launch(kernel(), resources(16), plan({caps.sm_count, 1, 1}, {64, 1, 1}), caps).diagnostics.empty());
  }
}

TEST_CASE("argument checks: handle, stream, table, slots, count, kinds, widths, buffers") {
  auto caps = caps_of("h100-sxm");
  auto k = kernel();
  auto good_args = [] {
    contract::ArgumentDesc y{contract::ArgumentDesc::Kind::buffer, 8, false, false, std::nullopt, 4096};
    contract::ArgumentDesc n{contract::ArgumentDesc::Kind::scalar, 4, false, false, ir::Type::u32, std::nullopt};
    return std::vector<contract::ArgumentDesc>{y, n};
  };
  auto base = plan({1000, 1, 1}, {128, 1, 1});
  base.arguments_known = true;
  base.arguments = good_args();
  base.required_elements = {{0, 1024}};
  CHECK(check_launch(k, resources(16), base, caps).diagnostics.empty());

  auto p = base;
  p.function_is_null = true;
  p.stream_is_null = true;
  p.stream_policy = contract::StreamPolicy::require_explicit;
  auto v = check_launch(k, resources(16), p, caps);
  CHECK(count(v, Code::null_function) == 1);
  CHECK(count(v, Code::null_stream) == 1);
  p.stream_policy = contract::StreamPolicy::allow_legacy_default;
  CHECK(count(check_launch(k, resources(16), p, caps), Code::null_stream) == 0);

  p = base;
  p.arguments.clear();
  CHECK(count(check_launch(k, resources(16), p, caps), Code::empty_argument_table) == 1);

  p = base;
  p.arguments[1].slot_is_null = true;
  auto slot = check_launch(k, resources(16), p, caps);
  CHECK(count(slot, Code::null_argument_slot) == 1);
  CHECK(slot.diagnostics.items()[0].message.find("slot 1") != std::string::npos);

  p = base;
  p.arguments.push_back(p.arguments[1]);
  CHECK(count(check_launch(k, resources(16), p, caps), Code::argument_count_mismatch) == 1);

  p = base;
  std::swap(p.arguments[0], p.arguments[1]);
  CHECK(count(check_launch(k, resources(16), p, caps), Code::argument_kind_mismatch) == 2);

  p = base;
  p.arguments[1].size_bytes = 8;
  CHECK(count(check_launch(k, resources(16), p, caps), Code::argument_size_mismatch) == 1);

  p = base;
  p.arguments[0].pointer_is_null = true;
  CHECK(count(check_launch(k, resources(16), p, caps), Code::null_buffer) == 1);

  p = base;
  p.required_elements = {{0, 1025}};
  auto small = check_launch(k, resources(16), p, caps);
  CHECK(count(small, Code::buffer_too_small) == 1);
  CHECK(small.diagnostics.items()[0].message.find("4096") != std::string::npos);
  CHECK(small.diagnostics.items()[0].message.find("4100") != std::string::npos);
}

TEST_CASE("every independent problem is reported in one run, with the location and a fix") {
  auto caps = caps_of("t4");
  auto k = kernel({256, 1, 1});
  k.uses_grid_sync = true;
  diag::Location loc;
  loc.file = "k.pg";
  loc.line = 3;
  loc.column = 8;
  auto v = check_launch(k, resources(300), plan({0, 70000, 1}, {2000, 1, 1}, 1 << 20), caps, loc);
  CHECK_FALSE(v.launchable);
  for (auto c : {Code::zero_dimension, Code::grid_dim_exceeded, Code::threads_per_block_exceeded,
                 Code::block_dim_exceeded, Code::workgroup_mismatch, Code::shared_memory_exceeded,
                 Code::registers_exceeded, Code::grid_sync_needs_cooperative})
    CHECK_MESSAGE(count(v, c) == 1, diag::info(c).name);
  for (const auto& d : v.diagnostics) {
    CHECK(d.location.file == "k.pg");
    CHECK(d.location.line == 3);
    if (d.severity == diag::Severity::error) CHECK_FALSE(d.fix.empty());
  }
}

TEST_CASE("the verdict line and JSON are self-consistent") {
  auto caps = caps_of("h100-sxm");
  auto ok_plan = plan({264, 1, 1}, {256, 1, 1});
  auto ok = check_launch(kernel(), resources(32), ok_plan, caps);
  auto line = ok.summary_line("k", ok_plan);
  CHECK(line.starts_with("verdict: status=launchable errors=0 warnings=0 kernel=k grid=264x1x1 block=256x1x1"));
  CHECK(line.find("blocks_per_sm=8 limiter=") != std::string::npos);
  auto bad_plan = plan({264, 1, 1}, {32, 64, 1});
  auto bad = check_launch(kernel(), resources(32), bad_plan, caps);
  CHECK(bad.summary_line("k", bad_plan).starts_with("verdict: status=blocked errors=1 "));
  auto j = bad.to_json("k", bad_plan);
  CHECK(j["status"] == "blocked");
  CHECK(j["launchable"] == false);
  CHECK(j["errors"] == 1);
  CHECK(j["diagnostics"].size() == 1);
  CHECK(j["diagnostics"][0]["code"] == "PG3102");
}

TEST_CASE("LaunchShape keys on everything a verdict depends on, and not on values") {
  auto p = plan({10, 1, 1}, {128, 1, 1});
  const auto base = LaunchShape::of(p);
  CHECK(base.cacheable());
  CHECK(base == LaunchShape::of(p));
  CHECK(base.tag() == LaunchShape::of(p).tag());
  auto differs = [&](auto change) {
    auto q = p;
    change(q);
    return !(LaunchShape::of(q) == base) && LaunchShape::of(q).tag() != base.tag();
  };
  CHECK(differs([](contract::LaunchPlan& q) { q.grid[2] = 2; }));
  CHECK(differs([](contract::LaunchPlan& q) { q.block[1] = 2; }));
  CHECK(differs([](contract::LaunchPlan& q) { q.block_given = true; }));
  CHECK(differs([](contract::LaunchPlan& q) { q.dynamic_shared_bytes = 1; }));
  CHECK(differs([](contract::LaunchPlan& q) { q.cooperative = true; }));
  CHECK(differs([](contract::LaunchPlan& q) { q.arguments_known = true; }));
  CHECK(differs([](contract::LaunchPlan& q) { q.stream_is_null = true; }));
  CHECK(differs([](contract::LaunchPlan& q) { q.stream_policy = contract::StreamPolicy::require_explicit; }));
  CHECK(differs([](contract::LaunchPlan& q) { q.function_is_null = true; }));

  auto q = p;
  q.arguments_known = true;
  q.arguments.push_back({contract::ArgumentDesc::Kind::buffer, 8, false, false, std::nullopt, 64});
  q.arguments.push_back({contract::ArgumentDesc::Kind::scalar, 4, false, false, ir::Type::f32, std::nullopt});
  const auto with_args = LaunchShape::of(q);
  CHECK(with_args.arguments() == 2);
  auto argument_differs = [&](auto change) {
    auto r = q;
    change(r);
    return !(LaunchShape::of(r) == with_args);
  };
  CHECK(argument_differs([](contract::LaunchPlan& r) { r.arguments[0].pointer_is_null = true; }));
  CHECK(argument_differs([](contract::LaunchPlan& r) { r.arguments[0].slot_is_null = true; }));
  CHECK(argument_differs([](contract::LaunchPlan& r) { r.arguments[0].buffer_bytes = 128; }));
  CHECK(argument_differs([](contract::LaunchPlan& r) { r.arguments[0].buffer_bytes.reset(); }));
  CHECK(argument_differs([](contract::LaunchPlan& r) { r.arguments[1].scalar_type = ir::Type::u32; }));
  CHECK(argument_differs([](contract::LaunchPlan& r) { r.arguments[1].size_bytes = 8; }));
  CHECK(argument_differs([](contract::LaunchPlan& r) { r.arguments[1].kind = contract::ArgumentDesc::Kind::buffer; }));
  CHECK(argument_differs([](contract::LaunchPlan& r) { r.arguments.pop_back(); }));

  // Built argument by argument, as the backend's steady path does, it is the plan's shape.
  LaunchShape incremental;
  incremental.start(q.grid, q.block, q.dynamic_shared_bytes,
                    {q.cooperative, q.block_given, q.arguments_known, q.stream_is_null, q.stream_policy,
                     q.function_is_null});
  for (const auto& a : q.arguments) incremental.add(a);
  CHECK(incremental == with_args);
  CHECK(incremental.tag() == with_args.tag());

  // Shapes whose verdict depends on more than the words hold are never cached.
  auto required = q;
  required.required_elements.push_back({0, 100});
  CHECK_FALSE(LaunchShape::of(required).cacheable());
  auto many = p;
  many.arguments_known = true;
  many.arguments.assign(LaunchShape::kMaxArguments + 1, {contract::ArgumentDesc::Kind::scalar, 4, false, false, ir::Type::u32,
                                                         std::nullopt});
  CHECK_FALSE(LaunchShape::of(many).cacheable());
}

TEST_CASE("a blocked verdict renders as SARIF 2.1.0 with the required fields") {
  auto caps = caps_of("h100-sxm");
  auto v = check_launch(kernel(), resources(32), plan({1057, 1, 1}, {256, 1, 1}, 0, true), caps);
  auto sarif = nlohmann::json::parse(diag::render_sarif(v.diagnostics));
  CHECK(sarif["version"] == "2.1.0");
  REQUIRE(sarif["runs"].size() == 1);
  CHECK(sarif["runs"][0]["tool"]["driver"]["name"] == "ptxgate");
  REQUIRE(sarif["runs"][0]["results"].size() == 1);
  CHECK(sarif["runs"][0]["results"][0]["ruleId"] == "PG3403");
  CHECK(sarif["runs"][0]["results"][0]["message"]["text"].get<std::string>().find("1056") != std::string::npos);
}

TEST_CASE("validation: check_launch without warnings: the same verdict, launchable without notes, blocked reported whole") {
  const auto caps = caps_of("h100-sxm");
  const auto k = kernel();
  for (uint64_t grid : {1u, 131u, 132u, 5000u}) {
    for (uint64_t block : {31u, 32u, 1024u, 1025u}) {
      for (uint64_t dyn : {0u, 60000u, 300000u}) {
        auto p = plan({grid, 1, 1}, {block, 1, 1}, dyn);
        auto full = check_launch(k, resources(32), p, caps, {}, {}, true);
        auto quiet = check_launch(k, resources(32), p, caps, {}, {}, false);
        CHECK(full.launchable == quiet.launchable);
        CHECK(full.needs_shared_opt_in == quiet.needs_shared_opt_in);
        CHECK(full.diagnostics.error_count() == quiet.diagnostics.error_count());
        if (quiet.launchable) {
          CHECK(quiet.diagnostics.warning_count() == 0);
          for (const auto& d : quiet.diagnostics) CHECK(d.severity == diag::Severity::error);
        } else {
          // A blocked launch is validated once: its report is the full one, in the same order.
          REQUIRE(quiet.diagnostics.size() == full.diagnostics.size());
          for (size_t i = 0; i < full.diagnostics.size(); ++i) {
            CHECK(quiet.diagnostics.items()[i].code == full.diagnostics.items()[i].code);
            CHECK(quiet.diagnostics.items()[i].message == full.diagnostics.items()[i].message);
          }
        }
      }
    }
  }
}
