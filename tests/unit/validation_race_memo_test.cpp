// The shared-race verdicts a kernel remembers between launches: keyed by exactly what the race
// search reads, so a change that alters the verdict is searched again and the verdict equals a fresh one.
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "ir_check_support.hpp"
#include "shipped_memory_launch.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/validation/internal/race_memo.hpp"
#include "ptxgate/validation/internal/shared_races.hpp"
#include "ptxgate/validation/memory_safety.hpp"

using namespace ptxgate;

namespace {

std::shared_ptr<const ir::AccessFacts> facts_of(const std::string& text) {
  testing::Checked checked;
  return testing::checked_kernel(checked, "k.pg", text, "k").access_facts;
}

/// A launch of one buffer `y` (large enough) and scalars by parameter number.
validation::MemoryLaunch launch_of(size_t params, std::array<uint64_t, 3> grid, std::array<uint64_t, 3> block,
                                   std::vector<std::pair<size_t, uint64_t>> scalars) {
  validation::MemoryLaunch l;
  l.grid = grid;
  l.block = block;
  l.scalar_bits.resize(params);
  l.buffer_bytes.assign(params, std::optional<uint64_t>(uint64_t{1} << 30));
  l.names.assign(params, "p");
  for (const auto& [i, bits] : scalars) {
    l.scalar_bits[i] = bits;
    l.buffer_bytes[i].reset();
  }
  return l;
}

/// The remembered verdict's races, checked against a fresh search of the same launch.
size_t races(const std::shared_ptr<const ir::AccessFacts>& facts, const validation::MemoryLaunch& launch) {
  const validation::MemoryVerdict remembered = validation::internal::evaluate_accesses_remembered(facts, launch);
  const validation::MemoryVerdict fresh = validation::evaluate_accesses(*facts, launch);
  REQUIRE(remembered.races.size() == fresh.races.size());
  for (size_t i = 0; i < fresh.races.size(); ++i) {
    CHECK(remembered.races[i].first_site == fresh.races[i].first_site);
    CHECK(remembered.races[i].second_site == fresh.races[i].second_site);
    CHECK(remembered.races[i].first_thread == fresh.races[i].first_thread);
    CHECK(remembered.races[i].second_thread == fresh.races[i].second_thread);
    CHECK(remembered.races[i].byte == fresh.races[i].byte);
  }
  CHECK(remembered.proven == fresh.proven);
  CHECK(remembered.unreachable == fresh.unreachable);
  return fresh.races.size();
}

/// Threads race on t exactly when m is below the block's threads.
const char* kModuloM = R"(
kernel k(out y: u32[], m: u32) {
  shared t: u32[256];
  t[thread_id.x % m] = thread_id.x;
  barrier();
  y[thread_id.x] = t[thread_id.x % m];
}
)";

}  // namespace

TEST_CASE("race memo: the inputs are what the shared accesses read") {
  auto thread_only = facts_of(R"(
kernel k(out y: u32[], n: u32) {
  shared t: u32[256];
  t[thread_id.x] = thread_id.x;
  barrier();
  let v = t[255 - thread_id.x];
  let i = global_id.x;
  if (i < n) { y[i] = v; }
}
)");
  const auto in = validation::internal::race_inputs(*thread_only);
  CHECK(in.searched);
  CHECK_FALSE(in.grid);  // the guard on n and the block id decide the global access only
  CHECK(in.params.empty());
  CHECK_FALSE(in.dynamic_shared);

  auto scalar = facts_of(kModuloM);
  const auto with_m = validation::internal::race_inputs(*scalar);
  CHECK(with_m.searched);
  CHECK(with_m.params == std::vector<uint32_t>{1});

  auto reads_only = facts_of(R"(
kernel k(out y: u32[], in x: u32[]) {
  shared t: u32[256];
  y[thread_id.x] = t[thread_id.x] + x[thread_id.x];
}
)");
  CHECK_FALSE(validation::internal::race_inputs(*reads_only).searched);
}

TEST_CASE("race memo: a scalar, block or grid that changes the races is searched again") {
  // A race exactly when m < the block's threads: the remembered verdict for m = 256 must not serve m = 128.
  auto by_scalar = facts_of(kModuloM);
  CHECK(races(by_scalar, launch_of(2, {4, 1, 1}, {256, 1, 1}, {{1, 256}})) == 0);
  CHECK(races(by_scalar, launch_of(2, {4, 1, 1}, {256, 1, 1}, {{1, 128}})) == 1);
  CHECK(races(by_scalar, launch_of(2, {9, 1, 1}, {256, 1, 1}, {{1, 256}})) == 0);  // new grid: remembered
  CHECK(races(by_scalar, launch_of(2, {9, 1, 1}, {256, 1, 1}, {{1, 128}})) == 1);
  CHECK(races(by_scalar, launch_of(2, {9, 1, 1}, {256, 1, 1}, {})) == 0);  // m unknown: nothing proven racy

  // A race exactly when the block has more than 64 threads.
  auto by_block = facts_of(R"(
kernel k(out y: u32[]) {
  shared t: u32[64];
  t[thread_id.x % 64] = thread_id.x;
  barrier();
  y[thread_id.x] = t[thread_id.x % 64];
}
)");
  CHECK(races(by_block, launch_of(1, {2, 1, 1}, {64, 1, 1}, {})) == 0);
  CHECK(races(by_block, launch_of(1, {2, 1, 1}, {128, 1, 1}, {})) == 1);
  CHECK(races(by_block, launch_of(1, {3, 1, 1}, {64, 1, 1}, {})) == 0);

  // A race exactly when the grid has more than one block: the grid is part of the key here.
  auto by_grid = facts_of(R"(
kernel k(out y: u32[]) {
  shared t: u32[64];
  if (grid_dim.x > 1) { t[0] = thread_id.x; }
  barrier();
  y[global_id.x] = t[0];
}
)");
  CHECK(validation::internal::race_inputs(*by_grid).grid);
  CHECK(races(by_grid, launch_of(1, {1, 1, 1}, {64, 1, 1}, {})) == 0);
  CHECK(races(by_grid, launch_of(1, {2, 1, 1}, {64, 1, 1}, {})) == 1);
  CHECK(races(by_grid, launch_of(1, {1, 1, 1}, {64, 1, 1}, {})) == 0);
}

TEST_CASE("race memo: a copy of the facts is a kernel of its own") {
  auto facts = facts_of(kModuloM);
  CHECK(races(facts, launch_of(2, {1, 1, 1}, {256, 1, 1}, {{1, 128}})) == 1);
  // Other facts (here the copy with its race-candidate write dropped) never get this kernel's verdict.
  auto copy = std::make_shared<ir::AccessFacts>(*facts);
  for (ir::AccessSite& s : copy->sites)
    if (s.space == ir::Space::shared && s.kind == ir::AccessKind::write) s.space = ir::Space::local;
  std::shared_ptr<const ir::AccessFacts> other = copy;
  CHECK(races(other, launch_of(2, {1, 1, 1}, {256, 1, 1}, {{1, 128}})) == 0);
}

namespace {

/// The races of `launch` through `plan`'s remembered proofs, checked against the enumeration of every
/// thread (no symbolic step): the same races, sites, threads, iteration and byte.
size_t same_as_enumeration(const ir::AccessFacts& facts, validation::internal::RacePlan& plan,
                           const validation::MemoryLaunch& launch) {
  validation::SharedRaceSearch counts;
  const auto remembered = validation::internal::search_shared_races(facts, launch, plan, true, &counts, nullptr, true);
  const auto enumerated = validation::find_shared_races(facts, launch, nullptr, nullptr, /*prove=*/false);
  REQUIRE(remembered.size() == enumerated.size());
  for (size_t i = 0; i < enumerated.size(); ++i) {
    CHECK(remembered[i].first_site == enumerated[i].first_site);
    CHECK(remembered[i].second_site == enumerated[i].second_site);
    CHECK(remembered[i].first_thread == enumerated[i].first_thread);
    CHECK(remembered[i].second_thread == enumerated[i].second_thread);
    CHECK(remembered[i].loops == enumerated[i].loops);
    CHECK(remembered[i].byte == enumerated[i].byte);
  }
  return enumerated.size();
}

}  // namespace

TEST_CASE("race proofs: remembered proofs give the enumeration's races on the shipped kernels over many launches") {
  std::mt19937 rng(2711);
  uint64_t replayed = 0;
  testing::each_shipped_kernel([&](const ir::Kernel& k, const validation::MemoryLaunch& documented) {
    const ir::AccessFacts& facts = *k.access_facts;
    validation::internal::RacePlan plan;
    validation::internal::plan_races(facts, plan);
    if (plan.groups.empty()) return;
    // At its documented launch every group is proven race-free without enumerating a thread.
    validation::SharedRaceSearch counts;
    CHECK(validation::find_shared_races(facts, documented, &counts).empty());
    CHECK(counts.enumerated == 0);
    validation::MemoryLaunch launch = documented;
    for (int step = 0; step < 20; ++step) {
      CAPTURE(step);
      // A new k, cols or n (any value, or one of a few multiples of 8), a new block or grid.
      const unsigned what = rng() % 6;
      if (what <= 2) {
        const size_t p = rng() % launch.scalar_bits.size();
        if (documented.scalar_bits[p]) {
          const uint64_t base = *documented.scalar_bits[p];
          launch.scalar_bits[p] = what == 0 ? base - std::min<uint64_t>(base, rng() % 64)
                                            : std::max<uint64_t>(8, (base / 8 + rng() % 9 - 4) * 8);
        }
      } else if (what == 3) {
        launch.block[0] = std::max<uint64_t>(32, documented.block[0] - 32 * (rng() % 4));
      } else if (what == 4) {
        launch.grid[0] = 1 + rng() % (2 * documented.grid[0]);
      } else {
        launch = documented;
      }
      same_as_enumeration(facts, plan, launch);
    }
    replayed += plan.replayed;
  });
  CHECK(replayed > 0);  // the proofs of earlier launches served later ones
}

TEST_CASE("race proofs: a remembered proof serves a new trip count, never a change that makes a race") {
  // Each thread's elements j = t + STEP * m: race-free for every n when the step is the block's
  // threads, which the proof shows for any trip count; a step of 64 lets threads meet.
  auto facts = facts_of(R"(
@workgroup(128)
kernel k(out y: u32[], n: u32, step: u32) {
  shared s: u32[8192];
  var j = thread_id.x;
  while (j < n) { s[j] = s[j] + 1; j = j + step; }
  barrier();
  y[thread_id.x] = s[thread_id.x];
}
)");
  validation::internal::RacePlan plan;
  validation::internal::plan_races(*facts, plan);
  auto with = [&](uint64_t n, uint64_t step) {
    return same_as_enumeration(*facts, plan, launch_of(3, {1, 1, 1}, {128, 1, 1}, {{1, n}, {2, step}}));
  };
  CHECK(with(1024, 128) == 0);
  CHECK(plan.replayed == 0);
  CHECK(with(4000, 128) == 0);  // another trip count: the same proof
  CHECK(plan.replayed > 0);
  const uint64_t before = plan.replayed;
  CHECK(with(4000, 64) == 1);   // another step: proven again, fails, the threads are found
  CHECK(with(77, 128) == 0);
  CHECK(plan.replayed > before);

  // The read's elements 100 - (t % d) meet the writes' 0..63 once d > 37: a proof made with the
  // range of t % d for d = 16 serves any narrower range (d = 8), not a wider one (d = 50).
  auto ranged = facts_of(R"(
@workgroup(64)
kernel k(out y: u32[], d: u32) {
  shared s: u32[128];
  s[thread_id.x] = thread_id.x;
  y[thread_id.x] = s[100 - thread_id.x % d];
}
)");
  validation::internal::RacePlan by_range;
  validation::internal::plan_races(*ranged, by_range);
  auto with_d = [&](uint64_t d) {
    return same_as_enumeration(*ranged, by_range, launch_of(2, {1, 1, 1}, {64, 1, 1}, {{1, d}}));
  };
  CHECK(with_d(16) == 0);
  CHECK(with_d(8) == 0);
  CHECK(by_range.replayed == 1);
  CHECK(with_d(50) == 1);
  CHECK(by_range.replayed == 1);
  CHECK(with_d(16) == 0);
}

TEST_CASE("bounds memo: a finding's reason is the fresh one whether or not the launch gives every scalar") {
  // The memo keeps which leaves each node depends on for launches that give every scalar; a launch
  // that leaves one out must still name it (and the next launch that gives it must not).
  auto facts = facts_of(R"(
kernel k(out y: f32[], in x: f32[], in idx: u32[], n: u32, m: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = x[idx[i]]; }
  if (i < m) { y[i + m] = 1.0; }
}
)");
  auto launch = [](std::optional<uint64_t> m) {
    validation::MemoryLaunch l;
    l.grid = {4, 1, 1};
    l.block = {256, 1, 1};
    l.scalar_bits = {std::nullopt, std::nullopt, std::nullopt, 1024, m};
    l.buffer_bytes = {uint64_t{1} << 20, uint64_t{1} << 20, uint64_t{1} << 20, std::nullopt, std::nullopt};
    l.names = {"y", "x", "idx", "n", "m"};
    return l;
  };
  for (std::optional<uint64_t> m :
       {std::optional<uint64_t>(8), std::optional<uint64_t>(), std::optional<uint64_t>(9), std::optional<uint64_t>()}) {
    const validation::MemoryLaunch l = launch(m);
    const validation::MemoryVerdict remembered = validation::internal::evaluate_accesses_remembered(facts, l);
    const validation::MemoryVerdict fresh = validation::evaluate_accesses(*facts, l);
    REQUIRE(remembered.findings.size() == fresh.findings.size());
    for (size_t f = 0; f < fresh.findings.size(); ++f) {
      CHECK(remembered.findings[f].site == fresh.findings[f].site);
      CHECK(remembered.findings[f].outcome == fresh.findings[f].outcome);
      CHECK(remembered.findings[f].reason == fresh.findings[f].reason);
    }
    // x[idx[i]] is never proven; with m unknown, the second store's reason names m.
    bool names_m = false, gather = false;
    for (const validation::SiteVerdict& v : fresh.findings) {
      names_m = names_m || v.reason.find("scalar 'm'") != std::string::npos;
      gather = gather || v.reason.find("does not follow") != std::string::npos;
    }
    CHECK(gather);
    CHECK(names_m == !m.has_value());
  }
}

TEST_CASE("race memo: a remembered proof replayed after a new proof of another group at the same launch") {
  // Two race groups (one per loop) whose proofs read p and q. The second launch changes p only: the
  // first group is proven again (a new proof, recorded in a trace that ends with that group's search),
  // then the second group's remembered proof is replayed, reading q. The replay must record nothing
  // (under AddressSanitizer a write into the first group's trace is a stack-use-after-scope), and each
  // launch is race-free, as a fresh search finds.
  auto facts = facts_of(R"(
@workgroup(128)
kernel k(out y: u32[], p: u32, q: u32) {
  shared s: u32[4096];
  shared r: u32[4096];
  for a in 0..4 {
    s[thread_id.x + p * a] = a;
  }
  for b in 0..4 {
    r[thread_id.x + q * b] = b;
  }
  barrier();
  y[thread_id.x] = s[thread_id.x] + r[thread_id.x];
}
)");
  auto with = [&](uint64_t p, uint64_t q) {
    return races(facts, launch_of(3, {1, 1, 1}, {128, 1, 1}, {{1, p}, {2, q}}));
  };
  CHECK(with(128, 128) == 0);
  CHECK(with(256, 128) == 0);
  CHECK(with(128, 256) == 0);
}
