// The shared-race verdicts a kernel remembers between launches: keyed by exactly what the race
// search reads, so a change that alters the verdict is searched again and the verdict equals a fresh one.
#include <doctest/doctest.h>

#include <string>

#include "ir_check_support.hpp"
#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/validation/internal/race_memo.hpp"
#include "ptxgate/validation/memory_safety.hpp"

using namespace ptxgate;

namespace {

std::shared_ptr<const ir::AccessFacts> facts_of(const std::string& text) {
  testing::Checked checked = testing::check_module("k.pg", text);
  REQUIRE_MESSAGE(!checked.diags.has_errors(), diag::render_text(checked.diags));
  const ir::Kernel* kernel = checked.module.find_kernel("k");
  REQUIRE(kernel);
  REQUIRE(kernel->access_facts);
  return kernel->access_facts;
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
