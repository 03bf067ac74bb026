// Fuzz-style property test: ~100k random plans never crash check_launch, its verdict is
// self-consistent, monotone under grid shrinking, and agrees with cuda_occupancy.h.
#include "validation_test_support.hpp"

#include <random>

#include <fmt/format.h>

using namespace validation_test;
using diag::Code;

namespace {

// Values clustered around every limit, plus a few wild ones.
uint64_t pick(std::mt19937_64& rng, std::initializer_list<uint64_t> limits) {
  std::uniform_int_distribution<int> mode(0, 9);
  int m = mode(rng);
  if (m == 0) return rng();
  if (m <= 2) return std::uniform_int_distribution<uint64_t>(0, 4)(rng);
  auto it = limits.begin();
  std::advance(it, std::uniform_int_distribution<size_t>(0, limits.size() - 1)(rng));
  int64_t delta = std::uniform_int_distribution<int64_t>(-3, 3)(rng);
  if (m <= 5) return static_cast<uint64_t>(std::max<int64_t>(0, static_cast<int64_t>(*it) + delta));
  return std::uniform_int_distribution<uint64_t>(1, *it + 1)(rng);
}

}  // namespace

TEST_CASE("random plans: no crash, consistent verdicts, monotone grids, occupancy agreement") {
  std::mt19937_64 rng(0x5eed'1234);
  std::vector<DeviceCaps> caps;
  for (auto name : {"t4", "a100-sxm", "l4", "h100-sxm"}) caps.push_back(caps_of(name));
  size_t launchable = 0, blocked = 0, cooperative_checked = 0;
  for (int iter = 0; iter < 100000; ++iter) {
    const auto& c = caps[static_cast<size_t>(iter) % caps.size()];
    auto k = kernel();
    if (rng() % 4 == 0) k.required_block = {256, 1, 1};
    k.uses_grid_sync = rng() % 8 == 0;
    contract::KernelResources r;
    r.registers_per_thread = static_cast<uint32_t>(pick(rng, {16, 32, 64, 65, 128, 200, 255, 256}) % 300);
    r.static_shared_bytes = rng() % 3 == 0 ? pick(rng, {1024, 49152, c.shared_per_block_optin}) : 0;
    r.max_threads_per_block = rng() % 5 == 0 ? 256 : 1024;
    contract::LaunchPlan p;
    p.grid = {pick(rng, {c.max_grid_dim[0], c.sm_count, 1056}), pick(rng, {c.max_grid_dim[1], 2}),
              pick(rng, {c.max_grid_dim[2], 2})};
    if (rng() % 3) p.grid[1] = p.grid[2] = 1;
    p.block = {pick(rng, {32, 256, 1024, c.max_block_dim[0]}), pick(rng, {1, 32, c.max_block_dim[1]}),
               pick(rng, {1, 4, c.max_block_dim[2]})};
    if (rng() % 2) p.block[1] = p.block[2] = 1;
    if (rng() % 10 == 0) p.block = {0, 0, 0};
    p.dynamic_shared_bytes = rng() % 2 ? pick(rng, {c.shared_per_block, c.shared_per_block_optin, 100000}) : 0;
    p.cooperative = rng() % 3 == 0;

    Verdict v = check_launch(k, r, p, c);
    REQUIRE(v.launchable == !v.diagnostics.has_errors());
    auto line = v.summary_line(k.name, p);
    REQUIRE((line.find("status=blocked") != std::string::npos) == !v.launchable);
    REQUIRE(line.find(fmt::format("errors={} ", v.diagnostics.error_count())) != std::string::npos);
    for (const auto& d : v.diagnostics) {
      REQUIRE(!d.message.empty());
      if (d.severity == diag::Severity::error) REQUIRE(!d.fix.empty());
    }
    if (!v.launchable) {
      ++blocked;
      continue;
    }
    ++launchable;
    // A launchable plan fits every driver limit and cuda_occupancy.h places at least one block.
    uint64_t threads = v.block[0] * v.block[1] * v.block[2];
    REQUIRE(threads >= 1);
    REQUIRE(threads <= c.max_threads_per_block);
    REQUIRE(v.total_shared_bytes <= c.shared_per_block_optin);
    REQUIRE(registers_charged_per_block(c, r.registers_per_thread, threads) <= c.registers_per_block);
    REQUIRE(v.occupancy.has_value());
    REQUIRE(v.occupancy->by_registers > 0);
    REQUIRE(v.occupancy->by_shared > 0);
    if (p.cooperative) {
      ++cooperative_checked;
      REQUIRE(p.grid[0] * p.grid[1] * p.grid[2] <= uint64_t{v.occupancy->active_blocks_per_sm} * c.sm_count);
    }
    // Monotone: halving any grid axis keeps the launch legal.
    auto smaller = p;
    size_t axis = static_cast<size_t>(rng() % 3);
    smaller.grid[axis] = std::max<uint64_t>(1, smaller.grid[axis] / 2);
    REQUIRE(check_launch(k, r, smaller, c).launchable);
  }
  MESSAGE("random plans: ", launchable, " launchable, ", blocked, " blocked, ", cooperative_checked,
          " cooperative within capacity");
  CHECK(launchable > 1000);
  CHECK(blocked > 1000);
  CHECK(cooperative_checked > 100);
}

TEST_CASE("register verdict agrees with cuda_occupancy.h over a full sweep") {
  for (auto name : {"t4", "a100-sxm", "l4", "h100-sxm"}) {
    auto c = caps_of(name);
    for (uint32_t regs = 1; regs <= 255; ++regs) {
      for (uint64_t threads = 32; threads <= 1024; threads += 32) {
        bool ours = registers_charged_per_block(c, regs, threads) <= c.registers_per_block;
        bool theirs = compute_occupancy(c, resources(regs), static_cast<uint32_t>(threads), 0).by_registers > 0;
        REQUIRE_MESSAGE(ours == theirs, name, " regs=", regs, " threads=", threads);
      }
    }
  }
}
