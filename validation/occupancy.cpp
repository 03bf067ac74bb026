// Offline occupancy: DeviceCaps + KernelResources through the toolkit's cuda_occupancy.h.
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

Occupancy compute_occupancy(const DeviceCaps& caps, const KernelResources& res, uint32_t threads_per_block,
                            uint64_t dynamic_shared_bytes) {
  Occupancy occ;
  if (threads_per_block == 0 || threads_per_block > INT_MAX || dynamic_shared_bytes > INT_MAX ||
      res.static_shared_bytes > INT_MAX)
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
  occ.active_blocks_per_sm = bound(result.activeBlocksPerMultiprocessor);
  occ.by_threads = bound(result.blockLimitWarps);
  occ.by_blocks = bound(result.blockLimitBlocks);
  occ.by_registers = bound(result.blockLimitRegs);
  occ.by_shared = bound(result.blockLimitSharedMem);
  occ.allocated_registers_per_block = static_cast<uint32_t>(result.allocatedRegistersPerBlock);
  occ.allocated_shared_per_block = result.allocatedSharedMemPerBlock;
  // Most specific factor first: a resource the user can change beats the fixed block cap.
  unsigned f = result.limitingFactors;
  if (f & OCC_LIMIT_REGISTERS) occ.limiter = OccupancyLimiter::registers;
  else if (f & OCC_LIMIT_SHARED_MEMORY) occ.limiter = OccupancyLimiter::shared_memory;
  else if (f & OCC_LIMIT_WARPS) occ.limiter = OccupancyLimiter::threads;
  else if (f & OCC_LIMIT_BLOCKS) occ.limiter = OccupancyLimiter::blocks;
  return occ;
}

}  // namespace ptxgate::validation
