// The node bounds a kernel remembers between launches: only what depends on a changed launch input
// is evaluated again, each path group narrows over its node cone only, and the verdict equals a
// fresh evaluation's for every launch; a loop whose bounds come after its reader is deterministic;
// every thread's concrete values lie in the bounds.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <random>
#include <span>
#include <string>

#include "ir_check_support.hpp"
#include "shipped_memory_launch.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/sym_bounds.hpp"
#include "ptxgate/validation/internal/race_memo.hpp"
#include "ptxgate/validation/memory_safety.hpp"

using namespace ptxgate;

namespace {

std::shared_ptr<const ir::AccessFacts> facts_of(testing::Checked& checked, const std::string& file,
                                                const std::string& text, const std::string& kernel) {
  return testing::checked_kernel(checked, file, text, kernel).access_facts;
}

/// A value near `v`: the same, one more or less, half or double (never below 1 when `v` is not 0).
uint64_t nearby(uint64_t v, std::mt19937& rng) {
  switch (rng() % 6) {
    case 0: return v + 1;
    case 1: return v > 1 ? v - 1 : v;
    case 2: return v > 1 ? v / 2 : v;
    case 3: return v * 2;
    default: return v;
  }
}

/// For every path group of `facts` at `launch`: the bounds under the group's path computed over its
/// cone (`drop`: a cone position to leave out, for the planted bug) against the pass over every
/// node, on every node of the cone. Returns the number of groups where they differ.
int cone_mismatches(const ir::AccessFacts& facts, const validation::MemoryLaunch& launch, int drop = -1) {
  validation::internal::SitePlan plan;
  validation::internal::plan_sites(facts, ir::leaf_dependencies(facts), plan, true);
  REQUIRE(plan.has_cones);
  const ir::LeafValues leaves{launch.grid, launch.block, launch.dynamic_shared_bytes, &launch.scalar_bits};
  ir::NodeBounds whole(facts, leaves), coned(facts, leaves);
  int mismatches = 0;
  for (const validation::internal::PathGroup& g : plan.groups) {
    const std::vector<uint32_t> cone(plan.cones.begin() + g.cone_first, plan.cones.begin() + g.cone_end);
    std::vector<uint32_t> path_cone(plan.cones.begin() + g.cone_first, plan.cones.begin() + g.cone_rest);
    std::vector<uint32_t> rest(plan.cones.begin() + g.cone_rest, plan.cones.begin() + g.cone_end);
    CHECK(std::find(path_cone.begin(), path_cone.end(), g.path) != path_cone.end());
    const std::vector<ir::Interval> all = whole.under(g.path, g.last);
    // The planted bug: one node left out of the path's cone (or, when it is too small, of the rest).
    std::vector<uint32_t>& victim = path_cone.size() > 2 ? path_cone : rest;
    if (drop >= 0 && victim.size() > 1) victim.erase(victim.begin() + std::min<size_t>(drop, victim.size() - 2));
    const std::vector<ir::Interval>& part = coned.under(g.path, g.last, path_cone, rest);
    bool same = true;
    for (uint32_t id : cone) same = same && all[id] == part[id];
    mismatches += !same;
  }
  return mismatches;
}

/// Every thread of `threads` random ones of `launch` against the node bounds (the interval engine's
/// fast path: the kernel's plan with cones, bounds through rebind from the launch `before`) and the
/// IR's concrete semantics (ir::ConcreteNodes, the witnesses' evaluation): every node a thread
/// computes lies in its base bounds, and in the bounds under each group's path the thread takes, for
/// every node of that group's cone. `planted`: an off-by-one planted in the bounds read (the upper
/// bound of node `planted` one smaller), which the comparison must catch. Returns the values outside.
int outside_bounds(const ir::AccessFacts& facts, const validation::MemoryLaunch& before,
                   const validation::MemoryLaunch& launch, std::mt19937& rng, int threads, int64_t planted = -1) {
  validation::internal::SitePlan plan;
  const std::vector<uint64_t> deps = ir::leaf_dependencies(facts);
  validation::internal::plan_sites(facts, deps, plan, true);
  const ir::LeafValues first{before.grid, before.block, before.dynamic_shared_bytes, &before.scalar_bits};
  const ir::LeafValues leaves{launch.grid, launch.block, launch.dynamic_shared_bytes, &launch.scalar_bits};
  ir::NodeBounds bounds(facts, first);
  if (deps.empty()) bounds.bind(facts, leaves);
  else bounds.rebind(leaves, deps, ~uint64_t{0});
  auto holds = [&](const ir::Interval& r, uint32_t id, uint64_t bits) {
    ir::Interval b = r;
    if (static_cast<int64_t>(id) == planted && !b.empty()) --b.hi;
    const ir::Integer v = ir::value_of(facts.nodes[id].type, bits);
    return b.lo <= v && v <= b.hi;
  };
  const std::vector<ir::Interval> base = bounds.base();
  std::vector<std::vector<ir::Interval>> under(plan.groups.size());
  const std::span<const uint32_t> cones(plan.cones);
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const validation::internal::PathGroup& group = plan.groups[g];
    under[g] = bounds.under(group.path, group.last, cones.subspan(group.cone_first, group.cone_rest - group.cone_first),
                            cones.subspan(group.cone_rest, group.cone_end - group.cone_rest));
  }
  ir::ConcreteNodes eval(facts, launch.grid, launch.block, launch.dynamic_shared_bytes, launch.scalar_bits);
  int outside = 0;
  for (int t = 0; t < threads; ++t) {
    std::array<uint64_t, 6> at{};
    for (unsigned c = 0; c < 3; ++c) {
      at[c] = rng() % launch.block[c];
      at[3 + c] = rng() % launch.grid[c];
    }
    eval.reset(at);
    for (uint32_t id = 0; id < facts.nodes.size(); ++id)
      if (auto v = eval.value(id)) outside += !holds(base[id], id, *v);
    for (size_t g = 0; g < plan.groups.size(); ++g) {
      const validation::internal::PathGroup& group = plan.groups[g];
      const auto taken = eval.value(group.path);
      if (!taken || !(*taken & 1)) continue;
      for (uint32_t k = group.cone_first; k < group.cone_end; ++k)
        if (auto v = eval.value(plan.cones[k])) outside += !holds(under[g][plan.cones[k]], plan.cones[k], *v);
    }
  }
  return outside;
}

}  // namespace

TEST_CASE("bounds memo: the shipped kernels over random launch sequences give the fresh verdict") {
  std::mt19937 rng(27);
  for (const shipped::Launch& l : shipped::shipped_launches()) {
    const std::string where = std::string(l.file) + " " + l.kernel;
    CAPTURE(where);
    testing::Checked checked;
    const ir::Kernel& k = testing::shipped_kernel(l, checked);
    const std::shared_ptr<const ir::AccessFacts> facts = k.access_facts;
    const validation::MemoryLaunch documented = testing::memory_launch_of(k, l);
    validation::MemoryLaunch launch = documented;
    for (int step = 0; step < 24; ++step) {
      CAPTURE(step);
      // One or two inputs at a time (what a memo can keep), or back to the documented launch.
      const unsigned what = rng() % 7;
      if (what == 0) {
        launch = documented;
      } else if (what <= 2) {
        const unsigned c = rng() % 3;
        launch.grid[c] = std::max<uint64_t>(nearby(launch.grid[c], rng), 1);
      } else if (what == 3) {
        const unsigned c = rng() % 3;
        const uint64_t b = std::max<uint64_t>(nearby(launch.block[c], rng), 1);
        if (b * launch.block[(c + 1) % 3] * launch.block[(c + 2) % 3] <= 1024) launch.block[c] = b;
      } else if (what == 4) {
        launch.dynamic_shared_bytes = nearby(launch.dynamic_shared_bytes, rng);
      } else {
        // A scalar's value (or, one time in four, not known), or a buffer's length.
        const size_t p = rng() % launch.scalar_bits.size();
        if (launch.scalar_bits[p]) launch.scalar_bits[p] = rng() % 4 == 0 ? std::nullopt
                                                                            : std::optional(nearby(*launch.scalar_bits[p], rng));
        else if (launch.buffer_bytes[p]) launch.buffer_bytes[p] = nearby(*launch.buffer_bytes[p], rng);
        else launch.scalar_bits[p] = documented.scalar_bits[p];
      }
      testing::same_as_fresh(facts, launch);
    }
  }
}

TEST_CASE("bounds memo: a change of an input the verdict depends on is evaluated again") {
  testing::Checked checked;
  // y[i] is guarded by n (a scalar) and its index reads the grid; s[t] reads only the block.
  auto facts = facts_of(checked, "k.pg", R"(
kernel k(out y: f32[], n: u32) {
  shared s: f32[128];
  let t = thread_id.x;
  let i = global_id.x;
  s[t] = 1.0;
  barrier();
  if (i < n) {
    y[i] = s[t];
  }
}
)", "k");
  validation::MemoryLaunch launch = testing::y_n_launch(16, 128, 1000, 4000);
  CHECK(testing::same_as_fresh(facts, launch).out_of_bounds == 0);
  // Only the scalar: y[i]'s group depends on it and goes out of bounds (2048 threads, 1000 elements).
  launch.scalar_bits[1] = 2000;
  validation::MemoryVerdict v = testing::same_as_fresh(facts, launch);
  CHECK(v.out_of_bounds == 1);
  REQUIRE(v.findings.size() == 1);
  CHECK(v.findings[0].witness.index == 1000);
  // Only the grid: 4 blocks of 128 stay below 1000 elements, 16 do not.
  launch.scalar_bits[1] = 100000;
  launch.grid[0] = 4;
  CHECK(testing::same_as_fresh(facts, launch).out_of_bounds == 0);
  launch.grid[0] = 16;
  CHECK(testing::same_as_fresh(facts, launch).out_of_bounds == 1);
  launch.grid[0] = 3;
  CHECK(testing::same_as_fresh(facts, launch).out_of_bounds == 0);
  // Only the block: s[t] goes past its 128 elements.
  launch.block[0] = 256;
  v = testing::same_as_fresh(facts, launch);
  CHECK(v.out_of_bounds == 2);
}

TEST_CASE("bounds memo: a path a launch-uniform guard closes is unreachable without its bounds") {
  testing::Checked checked;
  // n == 7 reads only a scalar: another n closes the path for every thread, whatever the grid.
  auto facts = facts_of(checked, "k.pg", R"(
kernel k(out y: f32[], n: u32) {
  let i = global_id.x;
  if (n == 7 && i < 100000) {
    y[i] = 1.0;
  }
}
)", "k");
  validation::internal::SitePlan plan;
  validation::internal::plan_sites(*facts, ir::leaf_dependencies(*facts), plan, true);
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups[0].guard_end - plan.groups[0].guard_first == 1);
  validation::MemoryLaunch launch = testing::y_n_launch(4, 128, 7, 4000);
  CHECK(testing::same_as_fresh(facts, launch).proven == 1);  // 512 threads, 1000 elements
  // Closed: unreachable, and the bounds are not brought to the new grid.
  launch.scalar_bits[1] = 1;
  launch.grid[0] = 16;
  CHECK(testing::same_as_fresh(facts, launch).unreachable == 1);
  launch.grid[0] = 32;
  CHECK(testing::same_as_fresh(facts, launch).unreachable == 1);
  // Open again: the grid that changed while the path was closed is evaluated too (4096 threads).
  launch.scalar_bits[1] = 7;
  validation::MemoryVerdict v = testing::same_as_fresh(facts, launch);
  CHECK(v.out_of_bounds == 1);
  REQUIRE(v.findings.size() == 1);
  CHECK(v.findings[0].witness.index == 1000);
  // An unknown n decides nothing: the path's bounds are evaluated.
  launch.scalar_bits[1] = std::nullopt;
  CHECK(testing::same_as_fresh(facts, launch).unproven == 1);
  launch.scalar_bits[1] = 7;
  launch.grid[0] = 2;
  CHECK(testing::same_as_fresh(facts, launch).proven == 1);
}

TEST_CASE("bounds memo: the launch inputs each node depends on") {
  testing::Checked checked;
  auto facts = facts_of(checked, "k.pg", R"(
kernel k(out y: f32[], n: u32, m: u32) {
  let i = global_id.x;
  if (thread_id.y + m < n) {
    y[i] = 1.0;
  }
}
)", "k");
  const std::vector<uint64_t> deps = ir::leaf_dependencies(*facts);
  REQUIRE(deps.size() == facts->nodes.size());
  REQUIRE(facts->sites.size() == 1);
  const ir::AccessSite& site = facts->sites[0];
  CHECK(deps[site.index] == (ir::leaf_bit_grid(0) | ir::leaf_bit_block(0)));
  CHECK(deps[site.path] == (ir::leaf_bit_block(1) | ir::leaf_bit_param(1) | ir::leaf_bit_param(2)));
  std::vector<uint64_t> key;
  validation::MemoryLaunch launch;
  launch.scalar_bits = {std::nullopt, uint64_t{5}, uint64_t{6}};
  const std::vector<uint32_t> read{1, 2};  // the scalars the facts read (y, the buffer, is parameter 0)
  CHECK(validation::internal::rekey(launch, read, key) == ~uint64_t{0});  // an empty key
  CHECK(key.size() == 7 + 2 * read.size());
  CHECK(validation::internal::rekey(launch, read, key) == 0);
  launch.grid[1] = 7;
  launch.scalar_bits[2].reset();
  CHECK(validation::internal::rekey(launch, read, key) == (ir::leaf_bit_grid(1) | ir::leaf_bit_param(2)));
  launch.scalar_bits[1] = uint64_t{0};  // another value
  launch.block[2] = 3;
  launch.dynamic_shared_bytes = 64;
  CHECK(validation::internal::rekey(launch, read, key) ==
        (ir::leaf_bit_param(1) | ir::leaf_bit_block(2) | ir::kLeafBitDynamicShared));
  launch.scalar_bits[0] = uint64_t{9};  // a parameter no node reads: no input of the bounds changed
  CHECK(validation::internal::rekey(launch, read, key) == 0);
  launch.scalar_bits[2] = uint64_t{0};  // known now, with the value an unknown one's word holds
  CHECK(validation::internal::rekey(launch, read, key) == ir::leaf_bit_param(2));
  launch.scalar_bits.pop_back();  // not given: unknown
  CHECK(validation::internal::rekey(launch, read, key) == ir::leaf_bit_param(2));
  CHECK(validation::internal::rekey(launch, std::vector<uint32_t>{1}, key) == ~uint64_t{0});  // other facts
}

TEST_CASE("bounds cones: every shipped kernel at many launches narrows to the bounds of the full pass") {
  std::mt19937 rng(2711);
  int launches = 0, out_of_bounds = 0;
  testing::each_shipped_kernel([&](const ir::Kernel& k, const validation::MemoryLaunch& documented) {
    for (int step = 0; step < 40; ++step) {
      CAPTURE(step);
      const validation::MemoryLaunch launch = step == 0 ? documented : testing::varied(documented, rng);
      CHECK(cone_mismatches(*k.access_facts, launch) == 0);
      // The verdict through the kernel's memo (its plan has the cones) against a fresh one (no
      // cones): the same outcome per site, the same witnesses and races.
      ++launches;
      out_of_bounds += testing::same_as_fresh(k.access_facts, launch).out_of_bounds > 0;
    }
  });
  // The variations reach both kinds of verdict.
  CHECK(out_of_bounds > 20);
  CHECK(launches - out_of_bounds > 20);
}

TEST_CASE("bounds cones: a cone missing one node is caught by the comparison") {
  // The planted bug: each group's cone without one of its nodes (that node then keeps whatever an
  // earlier group left in it). The comparison above must see it on some kernel.
  std::mt19937 rng(5);
  int mismatches = 0;
  testing::each_shipped_kernel([&](const ir::Kernel& k, const validation::MemoryLaunch& documented) {
    for (int step = 0; step < 4; ++step)
      for (int drop = 0; drop < 4; ++drop) mismatches += cone_mismatches(*k.access_facts, testing::varied(documented, rng), drop);
  });
  CHECK(mismatches > 0);
}

TEST_CASE("node bounds: a loop whose bounds come after the node reading it gets its full range") {
  // Forged facts (the analysis places a loop's bounds before its variable): node 0 names loop 0,
  // whose bounds are nodes 1-3. Reading them in forward order would take the entries another launch
  // (or another kernel) left there; the bounds must be the same whatever was evaluated before.
  ir::AccessFacts facts;
  facts.nodes = {
      {ir::SymOp::loop, ir::Type::u32, 0, 0, 0, 0},
      {ir::SymOp::constant, ir::Type::u32, 0, 0, 0, 0},
      {ir::SymOp::param, ir::Type::u32, 0, 0, 0, 1},
      {ir::SymOp::constant, ir::Type::u32, 0, 0, 0, 1},
      {ir::SymOp::constant, ir::Type::bool_, 0, 0, 0, 1},
      {ir::SymOp::loop, ir::Type::u32, 0, 0, 0, 0},
  };
  ir::LoopFact loop;
  loop.variable = 5;
  loop.lo = 1;
  loop.hi = 2;
  loop.step = 3;
  loop.offset = 1;
  facts.loops = {loop};
  ir::AccessSite site;
  site.space = ir::Space::global;
  site.array = 0;
  site.index = 0;
  site.path = 4;
  site.operation = "y[i]";
  facts.sites = {site};
  std::vector<std::optional<uint64_t>> small{std::nullopt, uint64_t{10}}, large{std::nullopt, uint64_t{100000}};
  const ir::LeafValues at_small{{1, 1, 1}, {32, 1, 1}, 0, &small}, at_large{{1, 1, 1}, {32, 1, 1}, 0, &large};
  const ir::NodeBounds fresh(facts, at_small);
  CHECK(fresh.base()[0] == ir::full_range(ir::Type::u32));
  CHECK(fresh.base()[5] == ir::Interval{0, 9});  // the loop's own variable, after its bounds
  ir::NodeBounds reused(facts, at_large);
  reused.bind(facts, at_small);
  CHECK(reused.base() == fresh.base());
  CHECK(ir::leaf_dependencies(facts).empty());  // the memo then never reuses these bounds
  // The verdict: not provable (index of unknown range), the same after another launch of the facts.
  validation::MemoryLaunch launch;
  launch.block = {32, 1, 1};
  launch.scalar_bits = small;
  launch.buffer_bytes = {uint64_t{40}, std::nullopt};
  launch.names = {"y", "n"};
  validation::MemoryLaunch other = launch;
  other.scalar_bits = large;
  const validation::MemoryVerdict first = validation::evaluate_accesses(facts, launch);
  validation::evaluate_accesses(facts, other);
  const validation::MemoryVerdict again = validation::evaluate_accesses(facts, launch);
  CHECK(first.unproven == 1);
  CHECK(again.unproven == 1);
  CHECK(again.unreachable == 0);
}

TEST_CASE("node bounds: every thread's values lie in the fast path's bounds, for every shipped kernel") {
  // The interval engine's fast path (rebind from another launch, narrowing over the group's cone,
  // the early outs of narrow and of the re-evaluation) against the IR's concrete semantics: random
  // threads of many random launches, every node they compute, every group's path they take.
  std::mt19937 rng(3141);
  int launches = 0;
  testing::each_shipped_kernel([&](const ir::Kernel& k, const validation::MemoryLaunch& documented) {
    validation::MemoryLaunch before = documented;
    for (int step = 0; step < 12; ++step) {
      CAPTURE(step);
      const validation::MemoryLaunch launch = step == 0 ? documented : testing::varied(documented, rng);
      CHECK(outside_bounds(*k.access_facts, before, launch, rng, 24) == 0);
      before = launch;
      ++launches;
    }
  });
  CHECK(launches > 100);
}

TEST_CASE("node bounds: an upper bound one too small is caught by the concrete comparison") {
  // The planted bug: one node's bounds with their upper end one smaller (the off-by-one a wrong
  // narrowing would leave). The comparison above must see it for some node of some kernel.
  std::mt19937 rng(17);
  int caught = 0;
  testing::each_shipped_kernel([&](const ir::Kernel& k, const validation::MemoryLaunch& documented) {
    const size_t nodes = k.access_facts->nodes.size();
    for (size_t node = 0; node < nodes; node += std::max<size_t>(nodes / 8, 1))
      caught += outside_bounds(*k.access_facts, documented, documented, rng, 64, static_cast<int64_t>(node)) > 0;
  });
  CHECK(caught > 10);
}

TEST_CASE("node bounds: rebind over a random launch sequence equals a fresh bind, node by node") {
  // rebind() evaluates again only nodes that depend on a changed input and, of those, only leaves,
  // selects and nodes one of whose operands' bounds changed: its bounds must be bind()'s.
  std::mt19937 rng(2024);
  int launches = 0;
  testing::each_shipped_kernel([&](const ir::Kernel& k, const validation::MemoryLaunch& documented) {
    const ir::AccessFacts& facts = *k.access_facts;
    const std::vector<uint64_t> deps = ir::leaf_dependencies(facts);
    if (deps.empty()) return;
    ir::NodeBounds reused(facts, {documented.grid, documented.block, documented.dynamic_shared_bytes,
                                  &documented.scalar_bits});
    validation::MemoryLaunch before = documented;
    for (int step = 0; step < 24; ++step) {
      CAPTURE(step);
      const validation::MemoryLaunch launch = step % 5 == 4 ? documented : testing::varied(documented, rng);
      const ir::LeafValues leaves{launch.grid, launch.block, launch.dynamic_shared_bytes, &launch.scalar_bits};
      uint64_t changed = 0;
      for (unsigned c = 0; c < 3; ++c) {
        if (launch.grid[c] != before.grid[c]) changed |= ir::leaf_bit_grid(c);
        if (launch.block[c] != before.block[c]) changed |= ir::leaf_bit_block(c);
      }
      if (launch.dynamic_shared_bytes != before.dynamic_shared_bytes) changed |= ir::kLeafBitDynamicShared;
      for (size_t p = 0; p < launch.scalar_bits.size(); ++p)
        if (launch.scalar_bits[p] != before.scalar_bits[p]) changed |= ir::leaf_bit_param(p);
      reused.rebind(leaves, deps, changed);
      const ir::NodeBounds fresh(facts, leaves);
      CHECK(reused.base() == fresh.base());
      before = launch;
      ++launches;
    }
  });
  CHECK(launches > 300);
}

namespace {

/// Two NodeBounds of one kernel's facts, one through the general 128-bit operations only, compared
/// at `leaves`: the base bounds after bind() and after rebind() from `previous`, and, for every
/// path in `paths`, under() and direct() (over every node).
void compare_general(const ir::AccessFacts& facts, const ir::LeafValues& previous, const ir::LeafValues& leaves,
                     const std::vector<uint32_t>& paths) {
  ir::NodeBounds fast, general;
  general.set_general_only(true);
  fast.bind(facts, leaves);
  general.bind(facts, leaves);
  REQUIRE(fast.base() == general.base());
  const std::vector<uint64_t> deps = ir::leaf_dependencies(facts);
  if (!deps.empty()) {
    ir::NodeBounds fast_again, general_again;
    general_again.set_general_only(true);
    fast_again.bind(facts, previous);
    general_again.bind(facts, previous);
    fast_again.rebind(leaves, deps, ~uint64_t{0});
    general_again.rebind(leaves, deps, ~uint64_t{0});
    CHECK(fast_again.base() == general.base());
    CHECK(general_again.base() == general.base());
  }
  const uint32_t last = static_cast<uint32_t>(facts.nodes.size() - 1);
  std::vector<uint32_t> every(facts.nodes.size());
  for (uint32_t i = 0; i < every.size(); ++i) every[i] = i;
  for (uint32_t path : paths) {
    CAPTURE(path);
    const std::vector<ir::Interval> a = fast.under(path, last), b = general.under(path, last);
    CHECK(a == b);
    const std::vector<ir::Conjunct> conjuncts = ir::path_conjuncts(facts, path);
    const std::vector<ir::Interval> c = fast.direct(conjuncts, every), d = general.direct(conjuncts, every);
    CHECK(c == d);
  }
}

}  // namespace

TEST_CASE("node bounds: unsigned operands in 64 bits give the general operations' bounds") {
  // NodeBounds evaluates nodes of unsigned operands (add .. bit_and, comparisons, && || !, casts and
  // selects) in 64-bit arithmetic (unsigned_forward): its bounds must be the 128-bit operations'
  // exactly, at the shipped kernels' launches, varied and extreme ones, and on random forged facts
  // whose constants and launch values sit at the edges of their types (wrap-around, carries out of
  // 64 bits, products past 2^62, division by 0).
  std::mt19937 rng(77);
  const uint64_t edges[] = {0,
                            1,
                            2,
                            3,
                            31,
                            255,
                            65535,
                            0xFFFFFFFFu,
                            0x100000000ull,
                            (uint64_t{1} << 62) - 1,
                            uint64_t{1} << 62,
                            ~uint64_t{0} - 1,
                            ~uint64_t{0}};
  auto edge = [&] { return rng() % 3 ? rng() % 2000 : edges[rng() % std::size(edges)]; };
  int compared = 0;
  testing::each_shipped_kernel([&](const ir::Kernel& k, const validation::MemoryLaunch& documented) {
    const ir::AccessFacts& facts = *k.access_facts;
    std::vector<uint32_t> paths;
    for (const ir::AccessSite& site : facts.sites)
      if (std::find(paths.begin(), paths.end(), site.path) == paths.end()) paths.push_back(site.path);
    validation::MemoryLaunch before = documented;
    for (int step = 0; step < 6; ++step) {
      CAPTURE(step);
      validation::MemoryLaunch launch = testing::varied(documented, rng);
      if (step % 3 == 2)
        for (auto& bits : launch.scalar_bits)
          if (bits) bits = edge();
      const ir::LeafValues was{before.grid, before.block, before.dynamic_shared_bytes, &before.scalar_bits};
      const ir::LeafValues leaves{launch.grid, launch.block, launch.dynamic_shared_bytes, &launch.scalar_bits};
      compare_general(facts, was, leaves, paths);
      before = launch;
      ++compared;
    }
  });
  CHECK(compared > 100);

  // Random facts: unsigned and signed nodes of every operation, operands of the types they need.
  const ir::Type types[] = {ir::Type::bool_, ir::Type::u8, ir::Type::u16, ir::Type::u32, ir::Type::u64, ir::Type::i32};
  const ir::SymOp binary[] = {ir::SymOp::add,    ir::SymOp::sub, ir::SymOp::mul, ir::SymOp::div,
                              ir::SymOp::rem,    ir::SymOp::min, ir::SymOp::max, ir::SymOp::bit_and,
                              ir::SymOp::bit_or, ir::SymOp::shl, ir::SymOp::shr};
  const ir::SymOp compare[] = {ir::SymOp::lt, ir::SymOp::le, ir::SymOp::gt,
                               ir::SymOp::ge, ir::SymOp::eq, ir::SymOp::ne};
  for (int round = 0; round < 300; ++round) {
    CAPTURE(round);
    ir::AccessFacts facts;
    std::vector<std::vector<uint32_t>> of(std::size(types));
    auto add = [&](ir::SymNode n, size_t t) {
      of[t].push_back(static_cast<uint32_t>(facts.nodes.size()));
      facts.nodes.push_back(n);
    };
    auto pick = [&](size_t t) { return of[t][rng() % of[t].size()]; };
    for (size_t t = 0; t < std::size(types); ++t)
      for (int j = 0; j < 3; ++j) add({ir::SymOp::constant, types[t], 0, 0, 0, ir::bits_of(types[t], edge())}, t);
    for (uint64_t p = 0; p < 4; ++p) {
      const size_t t = 1 + rng() % (std::size(types) - 1);
      add({ir::SymOp::param, types[t], 0, 0, 0, p}, t);
    }
    add({ir::SymOp::thread_id, ir::Type::u32, 0, 0, 0, 0}, 3);
    add({ir::SymOp::block_id, ir::Type::u32, 0, 0, 0, 0}, 3);
    add({ir::SymOp::block_dim, ir::Type::u32, 0, 0, 0, 0}, 3);
    add({ir::SymOp::grid_dim, ir::Type::u32, 0, 0, 0, 0}, 3);
    add({ir::SymOp::dynamic_shared_bytes, ir::Type::u64, 0, 0, 0, 0}, 4);
    for (int j = 0; j < 60; ++j) {
      const size_t t = rng() % std::size(types);
      switch (rng() % 6) {
        case 0:
        case 1:
          if (t == 0) break;
          add({binary[rng() % std::size(binary)], types[t], pick(t), pick(t), 0, 0}, t);
          break;
        case 2: {
          const uint32_t a = pick(t), b = pick(t);
          add({compare[rng() % std::size(compare)], ir::Type::bool_, a, b, 0, 0}, 0);
          break;
        }
        case 3: {
          const ir::SymOp op = rng() % 3 == 0 ? ir::SymOp::logical_and
                               : rng() % 2    ? ir::SymOp::logical_or
                                              : ir::SymOp::logical_not;
          add({op, ir::Type::bool_, pick(0), pick(0), 0, 0}, 0);
          break;
        }
        case 4: add({ir::SymOp::cast, types[t], pick(rng() % std::size(types)), 0, 0, 0}, t); break;
        default: add({ir::SymOp::select, types[t], pick(0), pick(t), pick(t), 0}, t); break;
      }
    }
    std::vector<std::optional<uint64_t>> scalars(4), earlier(4);
    for (auto& s : scalars) s = edge();
    for (auto& s : earlier) s = edge();
    auto dim = [&] { return std::max<uint64_t>(1, rng() % 4 ? rng() % 1025 : edge() & 0xFFFFFFFFu); };
    const ir::LeafValues leaves{{dim(), 1, 1}, {dim(), 1, 1}, edge(), &scalars};
    const ir::LeafValues was{{dim(), 1, 1}, {dim(), 1, 1}, edge(), &earlier};
    std::vector<uint32_t> paths;
    for (int j = 0; j < 4; ++j) paths.push_back(pick(0));
    compare_general(facts, was, leaves, paths);
  }
}

TEST_CASE("node bounds: rebind evaluates a select again when only its condition's operands changed") {
  // select(tid < n, min(tid, 100), 0): a new n leaves the condition ([0, 1]) and both branches'
  // bounds as they were, but the branch taken when tid < n is narrowed by n.
  ir::AccessFacts facts;
  facts.nodes = {
      {ir::SymOp::thread_id, ir::Type::u32, 0, 0, 0, 0},
      {ir::SymOp::param, ir::Type::u32, 0, 0, 0, 0},
      {ir::SymOp::lt, ir::Type::bool_, 0, 1, 0, 0},
      {ir::SymOp::constant, ir::Type::u32, 0, 0, 0, 100},
      {ir::SymOp::min, ir::Type::u32, 0, 3, 0, 0},
      {ir::SymOp::constant, ir::Type::u32, 0, 0, 0, 0},
      {ir::SymOp::select, ir::Type::u32, 2, 4, 5, 0},
  };
  const std::vector<uint64_t> deps = ir::leaf_dependencies(facts);
  REQUIRE(!deps.empty());
  std::vector<std::optional<uint64_t>> first{uint64_t{50}}, second{uint64_t{80}};
  const ir::LeafValues at_first{{1, 1, 1}, {200, 1, 1}, 0, &first}, at_second{{1, 1, 1}, {200, 1, 1}, 0, &second};
  ir::NodeBounds reused(facts, at_first);
  CHECK(reused.base()[6] == ir::Interval{0, 49});
  reused.rebind(at_second, deps, ir::leaf_bit_param(0));
  CHECK(reused.base()[2] == ir::Interval{0, 1});
  CHECK(reused.base()[4] == ir::Interval{0, 100});
  CHECK(reused.base()[6] == ir::Interval{0, 79});
  CHECK(reused.base() == ir::NodeBounds(facts, at_second).base());
}

TEST_CASE("facts: nodes nothing reads are dropped, the others renumbered, and the verdict is the same") {
  testing::Checked checked;
  // e + f only feeds a float that is stored: the analysis builds its node, no evaluation reads it.
  auto facts = facts_of(checked, "k.pg", R"(
kernel k(out y: f32[], e: i32, f: i32, n: u32) {
  let i = global_id.x;
  let s = e + f;
  if (i < n) {
    y[i] = f32(s);
  }
  for j in 0..n / 64 {
    y[j * 64 + i % 64] = 1.0;
  }
}
)",
                        "k");
  const std::vector<bool> read = ir::read_nodes(*facts);
  CHECK(std::count(read.begin(), read.end(), false) == 0);  // the analysis kept only read nodes
  const std::vector<bool> used = ir::parameters_used(*facts, 4);
  CHECK(used == std::vector<bool>{false, false, false, true});
  // Forged facts with unread nodes in front of, between and after the read ones.
  ir::AccessFacts wide;
  std::vector<uint32_t> at;  // old id -> id in `wide`
  auto junk = [&] { wide.nodes.push_back({ir::SymOp::param, ir::Type::i32, 0, 0, 0, 1}); };
  junk();
  for (const ir::SymNode& node : facts->nodes) {
    ir::SymNode n = node;
    const unsigned operands = ir::sym_operand_count(n.op);
    if (operands > 0) n.a = at[n.a];
    if (operands > 1) n.b = at[n.b];
    if (operands > 2) n.c = at[n.c];
    at.push_back(static_cast<uint32_t>(wide.nodes.size()));
    wide.nodes.push_back(n);
    if (at.size() % 3 == 0) junk();
  }
  junk();
  wide.loops = facts->loops;
  for (ir::LoopFact& l : wide.loops)
    for (uint32_t* ref : {&l.variable, &l.lo, &l.hi, &l.step, &l.offset}) *ref = at[*ref];
  wide.sites = facts->sites;
  for (ir::AccessSite& s : wide.sites) {
    s.index = at[s.index];
    s.path = at[s.path];
    if (s.width_limit >= 0) s.width_limit = static_cast<int32_t>(at[static_cast<uint32_t>(s.width_limit)]);
    if (s.value >= 0) s.value = static_cast<int32_t>(at[static_cast<uint32_t>(s.value)]);
  }
  wide.arrays = facts->arrays;
  CHECK(ir::parameters_used(wide, 4) == used);  // the junk reads parameter 1, but nothing reads the junk
  ir::AccessFacts narrow = wide;
  ir::drop_unread_nodes(narrow);
  CHECK(narrow.nodes == facts->nodes);
  CHECK(narrow.loops.size() == facts->loops.size());
  for (size_t s = 0; s < narrow.sites.size(); ++s) {
    CHECK(narrow.sites[s].index == facts->sites[s].index);
    CHECK(narrow.sites[s].path == facts->sites[s].path);
  }
  for (uint64_t n : {100, 4096, 5000}) {
    validation::MemoryLaunch launch;
    launch.grid = {40, 1, 1};
    launch.block = {128, 1, 1};
    launch.scalar_bits = {std::nullopt, uint64_t{2}, uint64_t{3}, n};
    launch.buffer_bytes = {uint64_t{4} * 4096, std::nullopt, std::nullopt, std::nullopt};
    const validation::MemoryVerdict a = validation::evaluate_accesses(wide, launch);
    const validation::MemoryVerdict b = validation::evaluate_accesses(narrow, launch);
    CHECK(a.proven == b.proven);
    CHECK(a.unreachable == b.unreachable);
    CHECK(a.out_of_bounds == b.out_of_bounds);
    CHECK(a.unproven == b.unproven);
    CHECK(b.out_of_bounds == (n > 4096 ? 2u : 0u));
  }
}
