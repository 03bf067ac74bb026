// block_granule and check_block_granule: whole warps and whole warpgroups, decided once.
#include "ptxgate/ir/block_granule.hpp"

#include <fmt/format.h>

#include "ptxgate/ir/limits.hpp"

namespace ptxgate::ir {

uint32_t block_granule(bool warp, bool warpgroup) {
  return warpgroup ? device::kWarpgroupSize : warp ? device::kWarpSize : 1;
}

std::optional<GranuleViolation> check_block_granule(std::string_view kernel, uint32_t granule, uint64_t threads,
                                                    std::string_view block) {
  if (keeps_block_granule(granule, threads)) return std::nullopt;
  const bool warpgroup = granule >= device::kWarpgroupSize;
  GranuleViolation v;
  v.code = warpgroup ? diag::Code::partial_warpgroup_block : diag::Code::partial_warp_block;
  v.suggested_threads = (threads / granule + 1) * granule;
  v.message = fmt::format(
      "kernel '{}' uses {}, which run on whole {}s of {} threads, but {} has {} threads, not a multiple of {} (the "
      "last {} would be partial)",
      kernel,
      warpgroup ? "warpgroup operations (wgmma, setmaxnreg)"
                : "warp-wide operations (shuffles, votes, warp reductions, mma, ldmatrix)",
      warpgroup ? "warpgroup" : "warp", granule, block, threads, granule, warpgroup ? "warpgroup" : "warp");
  return v;
}

}  // namespace ptxgate::ir
