// Offline occupancy (cuda_occupancy.h over profile caps) against hand-computed values.
#include "validation_test_support.hpp"

using namespace validation_test;

namespace {

struct Case {
  const char* profile;
  uint32_t threads, regs;
  uint64_t dyn;
  uint32_t expect_blocks;
  OccupancyLimiter expect_limiter;
};

// Hand computation (sm_90 h100-sxm: 64 warps, 32 blocks, 65536 regs in 4 sub-partitions, 233472 B/SM,
// 1 KiB reserved/block, 128 B shared granularity; a100 167936 B/SM; l4 48 warps, 24 blocks, 102400 B/SM;
// t4 32 warps, 16 blocks, 65536 B/SM, 256 B granularity, nothing reserved):
constexpr Case kCases[] = {
    // 1024 threads = 32 warps -> 64/32 = 2; regs 16*32=512/warp -> 32 warps/sub-partition -> 4 blocks.
    {"h100-sxm", 1024, 16, 0, 2, OccupancyLimiter::threads},
    // 256 threads at 128 regs: 4096/warp -> 4 warps/sub-partition = 16 warps/SM -> 2 blocks of 8 warps.
    {"h100-sxm", 256, 128, 0, 2, OccupancyLimiter::registers},
    // 100000 + 1024 reserved = 101024 -> 101120 (x128); 233472 / 101120 = 2.
    {"h100-sxm", 128, 32, 100000, 2, OccupancyLimiter::shared_memory},
    // one warp, 16 regs: warps allow 64, registers 128, shared 228 -> the 32-block cap.
    {"h100-sxm", 32, 16, 0, 32, OccupancyLimiter::blocks},
    {"a100-sxm", 1024, 16, 0, 2, OccupancyLimiter::threads},
    // 255 regs -> 8160 -> 8192/warp -> 2 warps/sub-partition = 8 warps -> 2 blocks of 4 warps.
    {"a100-sxm", 128, 255, 0, 2, OccupancyLimiter::registers},
    // 50000 + 1024 = 51024 -> 51072; 167936 / 51072 = 3.
    {"a100-sxm", 128, 32, 50000, 3, OccupancyLimiter::shared_memory},
    {"a100-sxm", 32, 16, 0, 32, OccupancyLimiter::blocks},
    // 512 threads = 16 warps -> 48/16 = 3; registers allow 4.
    {"l4", 512, 32, 0, 3, OccupancyLimiter::threads},
    // 40000 + 1024 = 41024 -> 41088; 102400 / 41088 = 2 (threads allow 6).
    {"l4", 256, 16, 40000, 2, OccupancyLimiter::shared_memory},
    {"l4", 32, 16, 0, 24, OccupancyLimiter::blocks},
    {"l4", 256, 128, 0, 2, OccupancyLimiter::registers},
    {"t4", 1024, 16, 0, 1, OccupancyLimiter::threads},
    // 10000 -> 10240 (x256, nothing reserved); 65536 / 10240 = 6.
    {"t4", 64, 16, 10000, 6, OccupancyLimiter::shared_memory},
    {"t4", 32, 16, 0, 16, OccupancyLimiter::blocks},
    // 128 regs: 4096/warp -> 16 warps/SM -> 2 blocks of 8 warps (threads allow 4).
    {"t4", 256, 128, 0, 2, OccupancyLimiter::registers},
};

// Independent arithmetic for each factor, to cross-check cuda_occupancy.h.
uint32_t by_registers(const DeviceCaps& c, uint32_t threads, uint32_t regs) {
  uint32_t per_warp = (regs * c.warp_size + c.register_allocation_unit - 1) / c.register_allocation_unit *
                      c.register_allocation_unit;
  uint32_t warps = (threads + c.warp_size - 1) / c.warp_size;
  uint32_t warps_per_sm = c.registers_per_sm / kSmSubPartitions / per_warp * kSmSubPartitions;
  return warps_per_sm / warps;
}

uint32_t by_shared(const DeviceCaps& c, uint64_t static_shared, uint64_t dyn) {
  uint64_t per_block = static_shared + dyn + c.reserved_shared_per_block;
  per_block = (per_block + c.shared_allocation_unit - 1) / c.shared_allocation_unit * c.shared_allocation_unit;
  if (per_block == 0) return UINT32_MAX;  // no shared memory at all does not bound residency
  return static_cast<uint32_t>(c.shared_per_sm / per_block);
}

}  // namespace

TEST_CASE("offline occupancy matches hand-computed values and names the limiter") {
  for (const auto& tc : kCases) {
    CAPTURE(tc.profile);
    CAPTURE(tc.threads);
    CAPTURE(tc.regs);
    CAPTURE(tc.dyn);
    auto caps = caps_of(tc.profile);
    auto occ = compute_occupancy(caps, resources(tc.regs), tc.threads, tc.dyn);
    REQUIRE(occ.computed);
    CHECK(occ.active_blocks_per_sm == tc.expect_blocks);
    CHECK(limiter_name(occ.limiter) == limiter_name(tc.expect_limiter));
    CHECK(occ.by_threads == caps.max_threads_per_sm / caps.warp_size / ((tc.threads + 31) / 32));
    CHECK(occ.by_blocks == caps.max_blocks_per_sm);
    CHECK(occ.by_registers == by_registers(caps, tc.threads, tc.regs));
    CHECK(occ.by_shared == by_shared(caps, 0, tc.dyn));
    CHECK(occ.active_blocks_per_sm ==
          std::min({occ.by_threads, occ.by_blocks, occ.by_registers, occ.by_shared}));
  }
}

TEST_CASE("occupancy reports nothing for an impossible block") {
  auto caps = caps_of("h100-sxm");
  CHECK_FALSE(compute_occupancy(caps, resources(16), 0, 0).computed);
  auto too_big = compute_occupancy(caps, resources(16), 2048, 0);
  CHECK(too_big.active_blocks_per_sm == 0);
  auto too_many_regs = compute_occupancy(caps, resources(255), 1024, 0);
  CHECK(too_many_regs.by_registers == 0);
}

TEST_CASE("registers charged per block follow the per-warp and sub-partition rounding") {
  auto caps = caps_of("h100-sxm");
  CHECK(registers_charged_per_block(caps, 64, 1024) == 65536);
  CHECK(registers_charged_per_block(caps, 65, 1024) == 72 * 1024);  // 65*32 = 2080 -> 2304 per warp
  CHECK(registers_charged_per_block(caps, 200, 320) == 6400 * 12);  // 10 warps count as 12
  CHECK(registers_charged_per_block(caps, 32, 1) == 1024 * 4);
}
