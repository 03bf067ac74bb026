// The per-kernel node cones of the memory verdict: narrowing a path group over only the nodes its
// sites read gives the bounds the pass over every node gives, for every shipped kernel at many
// launches (legal and out of bounds); and a loop whose bounds come after its reader is deterministic.
#include <doctest/doctest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "ir_check_support.hpp"
#include "shipped_launches.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/sym_bounds.hpp"
#include "ptxgate/validation/internal/race_memo.hpp"
#include "ptxgate/validation/memory_safety.hpp"

using namespace ptxgate;

namespace {

std::string read(const std::string& relative) {
  std::ifstream in(std::string(PTXGATE_SOURCE_DIR) + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

validation::MemoryLaunch launch_of(const ir::Kernel& k, const shipped::Launch& l) {
  validation::MemoryLaunch launch;
  launch.grid = l.grid;
  launch.block = l.block;
  launch.dynamic_shared_bytes = l.dynamic_shared;
  launch.scalar_bits.assign(k.params.size(), std::nullopt);
  launch.buffer_bytes.assign(k.params.size(), std::nullopt);
  for (size_t i = 0; i < k.params.size(); ++i) {
    launch.names.push_back(k.params[i].name);
    for (const auto& [name, value] : l.arguments)
      if (name == k.params[i].name) (k.params[i].is_buffer ? launch.buffer_bytes[i] : launch.scalar_bits[i]) = value;
  }
  return launch;
}

/// A launch new in every input (bench/new_shapes.hpp's kind of change, larger and in both
/// directions): grid components, block, dynamic shared bytes, every scalar and every buffer length
/// moved at once, often far enough that accesses go out of bounds.
validation::MemoryLaunch varied(const validation::MemoryLaunch& documented, std::mt19937& rng) {
  validation::MemoryLaunch l = documented;
  auto move = [&](uint64_t v) -> uint64_t {
    switch (rng() % 6) {
      case 0: return v + 1 + rng() % 64;
      case 1: return v > 64 ? v - rng() % 64 : v;
      case 2: return v / 2;
      case 3: return v * 2;
      case 4: return v > 1 ? v - 1 : v;
      default: return v;
    }
  };
  for (unsigned c = 0; c < 3; ++c) l.grid[c] = std::max<uint64_t>(move(l.grid[c]), 1);
  if (rng() % 2) {
    const uint64_t b = std::max<uint64_t>(move(l.block[0]), 1);
    if (b * l.block[1] * l.block[2] <= 1024) l.block[0] = b;
  }
  l.dynamic_shared_bytes = move(l.dynamic_shared_bytes);
  for (auto& bits : l.scalar_bits)
    if (bits) bits = move(*bits);
  for (auto& bytes : l.buffer_bytes)
    if (bytes) bytes = move(*bytes);
  return l;
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
    std::vector<uint32_t> cone(plan.cones.begin() + g.cone_first, plan.cones.begin() + g.cone_end);
    CHECK(std::find(cone.begin(), cone.end(), g.path) != cone.end());
    const std::vector<ir::Interval> all = whole.under(g.path, g.last);
    std::vector<uint32_t> used = cone;
    if (drop >= 0 && cone.size() > 2) used.erase(used.begin() + std::min<size_t>(drop, cone.size() - 2));
    const std::vector<ir::Interval>& part = coned.under(g.path, g.last, used);
    bool same = true;
    for (uint32_t id : cone) same = same && all[id] == part[id];
    mismatches += !same;
  }
  return mismatches;
}

}  // namespace

TEST_CASE("bounds cones: every shipped kernel at many launches narrows to the bounds of the full pass") {
  std::mt19937 rng(2711);
  int launches = 0, out_of_bounds = 0;
  for (const shipped::Launch& l : shipped::shipped_launches()) {
    const std::string where = std::string(l.file) + " " + l.kernel;
    CAPTURE(where);
    testing::Checked checked = testing::check_module(l.file, read(l.file));
    REQUIRE_MESSAGE(!checked.diags.has_errors(), diag::render_text(checked.diags));
    const ir::Kernel* k = checked.module.find_kernel(l.kernel);
    REQUIRE(k);
    REQUIRE(k->access_facts);
    const validation::MemoryLaunch documented = launch_of(*k, l);
    for (int step = 0; step < 40; ++step) {
      CAPTURE(step);
      const validation::MemoryLaunch launch = step == 0 ? documented : varied(documented, rng);
      CHECK(cone_mismatches(*k->access_facts, launch) == 0);
      // The verdict through the kernel's memo (its plan has the cones) against a fresh one (no
      // cones): the same outcome per site, the same witnesses.
      const validation::MemoryVerdict fresh = validation::evaluate_accesses(*k->access_facts, launch);
      const validation::MemoryVerdict coned = validation::internal::evaluate_accesses_remembered(k->access_facts, launch);
      CHECK(coned.proven == fresh.proven);
      CHECK(coned.unreachable == fresh.unreachable);
      CHECK(coned.out_of_bounds == fresh.out_of_bounds);
      CHECK(coned.unproven == fresh.unproven);
      REQUIRE(coned.findings.size() == fresh.findings.size());
      for (size_t i = 0; i < fresh.findings.size(); ++i) {
        CHECK(coned.findings[i].site == fresh.findings[i].site);
        CHECK(coned.findings[i].outcome == fresh.findings[i].outcome);
        CHECK(coned.findings[i].witness.thread == fresh.findings[i].witness.thread);
        CHECK(coned.findings[i].witness.block == fresh.findings[i].witness.block);
        CHECK(coned.findings[i].witness.index == fresh.findings[i].witness.index);
        CHECK(coned.findings[i].reason == fresh.findings[i].reason);
      }
      ++launches;
      out_of_bounds += fresh.out_of_bounds > 0;
    }
  }
  // The variations reach both kinds of verdict.
  CHECK(out_of_bounds > 20);
  CHECK(launches - out_of_bounds > 20);
}

TEST_CASE("bounds cones: a cone missing one node is caught by the comparison") {
  // The planted bug: each group's cone without one of its nodes (that node then keeps whatever an
  // earlier group left in it). The comparison above must see it on some kernel.
  std::mt19937 rng(5);
  int mismatches = 0;
  for (const shipped::Launch& l : shipped::shipped_launches()) {
    testing::Checked checked = testing::check_module(l.file, read(l.file));
    const ir::Kernel* k = checked.module.find_kernel(l.kernel);
    REQUIRE(k);
    const validation::MemoryLaunch documented = launch_of(*k, l);
    for (int step = 0; step < 4; ++step)
      for (int drop = 0; drop < 4; ++drop) mismatches += cone_mismatches(*k->access_facts, varied(documented, rng), drop);
  }
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
