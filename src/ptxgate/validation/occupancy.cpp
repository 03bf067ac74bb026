// Offline occupancy: DeviceCaps + KernelResources through the toolkit's cuda_occupancy.h.
#include <algorithm>
#include <climits>
#include <cstring>

#include <cuda_occupancy.h>

#include "ptxgate/validation/check.hpp"

namespace ptxgate::validation {

std::string_view limiter_name(OccupancyLimiter l) {
  switch (l) {
    case OccupancyLimiter::none: return "none";
    case OccupancyLimiter::threads: return "threads";
    case OccupancyLimiter::warps: return "warps";
    case OccupancyLimiter::blocks: return "blocks";
    case OccupancyLimiter::registers: return "registers";
    case OccupancyLimiter::shared_memory: return "shared_memory";
  }
  return "none";
}

uint64_t registers_charged_per_block(const DeviceCaps& caps, uint32_t registers_per_thread, uint64_t threads_per_block) {
  uint64_t warp = caps.warp_size ? caps.warp_size : 32;
  uint64_t unit = caps.register_allocation_unit ? caps.register_allocation_unit : 1;
  uint64_t per_warp = (uint64_t{registers_per_thread} * warp + unit - 1) / unit * unit;
  uint64_t warps = (threads_per_block + warp - 1) / warp;
  uint64_t warps_rounded = (warps + kSmSubPartitions - 1) / kSmSubPartitions * kSmSubPartitions;
  return per_warp * warps_rounded;
}

namespace {

uint32_t bound(int v) { return v == INT_MAX ? UINT32_MAX : static_cast<uint32_t>(v < 0 ? 0 : v); }

}  // namespace

namespace {

bool fits_int(uint64_t v) { return v <= static_cast<uint64_t>(INT_MAX); }

// The shared memory one block is charged with the profile's allocation unit, and the blocks
// of that size one SM holds in the carveout cuda_occupancy.h would pick for it; 0 blocks when
// the allocation does not fit (the header has reported that case already).
uint32_t blocks_by_shared(const DeviceCaps& caps, const cudaOccDeviceProp& prop, const cudaOccDeviceState& state,
                          uint64_t per_block_bytes, uint64_t& allocated) {
  uint64_t unit = caps.shared_allocation_unit;
  allocated = (per_block_bytes + unit - 1) / unit * unit;
  if (allocated == 0) return UINT32_MAX;
  size_t preference = 0;
  if (cudaOccSMemPerMultiprocessor(&preference, &prop, &state) != CUDA_OCC_SUCCESS) return 0;
  size_t per_sm = preference;
  if (preference < allocated) {
    per_sm = static_cast<size_t>(allocated);
    if (prop.computeMajor < 7 || cudaOccAlignUpShmemSizeVoltaPlus(&per_sm, &prop) != CUDA_OCC_SUCCESS)
      per_sm = caps.shared_per_sm;
  }
  return static_cast<uint32_t>(std::min<uint64_t>(per_sm / allocated, UINT32_MAX));
}

}  // namespace

Occupancy compute_occupancy(const DeviceCaps& caps, const contract::KernelResources& res, uint32_t threads_per_block,
                            uint64_t dynamic_shared_bytes) {
  Occupancy occ;
  // cuda_occupancy.h computes in int: a value it cannot represent leaves occupancy unknown
  // (computed = false), which every residency check treats as blocking.
  if (threads_per_block == 0 || !fits_int(threads_per_block) || !fits_int(dynamic_shared_bytes) ||
      !fits_int(res.static_shared_bytes) || !fits_int(res.static_shared_bytes + dynamic_shared_bytes +
                                                      caps.reserved_shared_per_block + caps.shared_allocation_unit) ||
      caps.cc_major <= 0 || caps.cc_minor < 0 || caps.warp_size == 0 || caps.sm_count == 0 ||
      caps.shared_allocation_unit == 0 || caps.max_blocks_per_sm == 0 || !fits_int(caps.max_threads_per_block) ||
      !fits_int(caps.max_threads_per_sm) || !fits_int(caps.registers_per_block) ||
      !fits_int(caps.registers_per_sm) || !fits_int(caps.warp_size) || !fits_int(caps.sm_count) ||
      !fits_int(caps.shared_per_block_optin) || !fits_int(caps.shared_per_sm) ||
      !fits_int(res.registers_per_thread) || !fits_int(res.max_threads_per_block))
    return occ;
  cudaOccDeviceProp prop;
  prop.computeMajor = caps.cc_major;
  prop.computeMinor = caps.cc_minor;
  prop.maxThreadsPerBlock = static_cast<int>(caps.max_threads_per_block);
  prop.maxThreadsPerMultiprocessor = static_cast<int>(caps.max_threads_per_sm);
  prop.regsPerBlock = static_cast<int>(caps.registers_per_block);
  prop.regsPerMultiprocessor = static_cast<int>(caps.registers_per_sm);
  prop.warpSize = static_cast<int>(caps.warp_size);
  prop.sharedMemPerBlock = caps.shared_per_block;
  prop.sharedMemPerMultiprocessor = caps.shared_per_sm;
  prop.numSms = static_cast<int>(caps.sm_count);
  prop.sharedMemPerBlockOptin = caps.shared_per_block_optin;
  prop.reservedSharedMemPerBlock = caps.reserved_shared_per_block;

  cudaOccFuncAttributes attr;
  attr.maxThreadsPerBlock = static_cast<int>(res.max_threads_per_block);
  attr.numRegs = static_cast<int>(res.registers_per_thread);
  attr.sharedSizeBytes = res.static_shared_bytes;
  attr.partitionedGCConfig = PARTITIONED_GC_OFF;
  attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
  uint64_t optin_dynamic = caps.shared_per_block_optin > res.static_shared_bytes
                               ? caps.shared_per_block_optin - res.static_shared_bytes
                               : 0;
  attr.maxDynamicSharedSizeBytes = optin_dynamic;
  attr.numBlockBarriers = 1;
  attr.virtualResourceCount = 0;

  cudaOccDeviceState state;
  cudaOccResult result;
  std::memset(&result, 0, sizeof result);
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state, static_cast<int>(threads_per_block),
                                              dynamic_shared_bytes) != CUDA_OCC_SUCCESS)
    return occ;
  occ.computed = true;
  occ.by_threads = bound(result.blockLimitWarps);
  occ.by_registers = bound(result.blockLimitRegs);
  occ.allocated_registers_per_block = static_cast<uint32_t>(result.allocatedRegistersPerBlock);
  // The header takes blocks/SM and the shared allocation unit from its own per-architecture
  // tables; the profile's values bind too (a profile may describe a part the tables do not).
  occ.by_blocks = std::min(bound(result.blockLimitBlocks), caps.max_blocks_per_sm);
  uint64_t per_block_shared = res.static_shared_bytes + caps.reserved_shared_per_block + dynamic_shared_bytes;
  occ.by_shared = bound(result.blockLimitSharedMem);
  occ.allocated_shared_per_block = result.allocatedSharedMemPerBlock;
  if (occ.by_shared != 0 && per_block_shared > 0) {
    uint64_t allocated = 0;
    uint32_t by_unit = blocks_by_shared(caps, prop, state, per_block_shared, allocated);
    if (allocated > occ.allocated_shared_per_block) occ.allocated_shared_per_block = allocated;
    occ.by_shared = std::min(occ.by_shared, by_unit);
  }
  occ.active_blocks_per_sm = std::min({bound(result.activeBlocksPerMultiprocessor), occ.by_blocks, occ.by_shared});
  // Most specific factor first: a resource the user can change beats the fixed block cap.
  const uint32_t a = occ.active_blocks_per_sm;
  if (occ.by_registers == a) occ.limiter = OccupancyLimiter::registers;
  else if (occ.by_shared == a) occ.limiter = OccupancyLimiter::shared_memory;
  else if (occ.by_threads == a) occ.limiter = OccupancyLimiter::threads;
  else if (occ.by_blocks == a) occ.limiter = OccupancyLimiter::blocks;
  return occ;
}

std::vector<uint32_t> allowed_block_sizes(const contract::KernelInfo& kernel, uint32_t limit, uint32_t warp_size) {
  std::vector<uint32_t> sizes;
  if (kernel.has_required_block()) {
    const uint64_t required = uint64_t{kernel.required_block[0]} * std::max(kernel.required_block[1], 1u) *
                              std::max(kernel.required_block[2], 1u);
    if (required >= 1 && required <= limit) sizes.push_back(static_cast<uint32_t>(required));
    return sizes;
  }
  const uint32_t granule = std::max(kernel.block_granule, 1u);
  const uint32_t step = std::max(std::max(warp_size, 1u), granule);
  for (uint64_t n = step; n <= limit; n += step) sizes.push_back(static_cast<uint32_t>(n));
  if (limit > 0 && limit % granule == 0 && (sizes.empty() || sizes.back() != limit)) sizes.push_back(limit);
  return sizes;
}

OccupancyTable occupancy_table(const contract::KernelInfo& kernel, const DeviceCaps& caps, const contract::KernelResources& res,
                               uint64_t dynamic_shared_bytes) {
  OccupancyTable table;
  const uint32_t warp = caps.warp_size ? caps.warp_size : 32;
  table.block_limit = std::min<uint32_t>(caps.max_threads_per_block, res.max_threads_per_block);
  const uint32_t warp_slots = caps.max_threads_per_sm / warp;
  for (uint32_t threads : allowed_block_sizes(kernel, table.block_limit, warp)) {
    BlockSizeOccupancy row;
    row.block_threads = threads;
    row.occupancy = compute_occupancy(caps, res, row.block_threads, dynamic_shared_bytes);
    // One verdict: the size is offered only when `check` would let one block of it launch.
    contract::LaunchPlan plan;
    plan.grid = {1, 1, 1};
    plan.block = {threads, 1, 1};
    plan.block_given = true;
    plan.dynamic_shared_bytes = dynamic_shared_bytes;
    if (kernel.has_required_block())
      for (int i = 0; i < 3; ++i) plan.block[i] = std::max(kernel.required_block[i], 1u);
    row.launchable = check_launch(kernel, res, plan, caps, {}).launchable;
    const uint32_t blocks = row.occupancy.computed ? row.occupancy.active_blocks_per_sm : 0;
    row.active_warps_per_sm = blocks * ((row.block_threads + warp - 1) / warp);
    row.occupancy_percent = warp_slots ? 100.0 * row.active_warps_per_sm / warp_slots : 0;
    table.rows.push_back(row);
  }
  // The header's search: from the largest size down, keep a size only when it holds strictly
  // more threads per SM, so ties go to the larger block.
  uint64_t best_threads = 0;
  for (auto it = table.rows.rbegin(); it != table.rows.rend(); ++it) {
    if (!it->launchable) continue;
    const uint64_t blocks = it->occupancy.computed ? it->occupancy.active_blocks_per_sm : 0;
    if (blocks * it->block_threads > best_threads) {
      best_threads = blocks * it->block_threads;
      table.suggested_block = it->block_threads;
      table.min_grid_for_full_occupancy = blocks * caps.sm_count;
    }
  }
  return table;
}

}  // namespace ptxgate::validation
