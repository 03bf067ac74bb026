// The block granule of a kernel: the number of threads its block must be a whole multiple of (1;
// a warp of 32 for warp-wide operations; a warpgroup of 128 for wgmma and setmaxnreg), and the one
// check of a block size against it (the verifier's for @workgroup, check_launch's for a launch).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::ir {

/// The granule of a kernel that uses warp-wide operations (shuffles, votes, warp reductions, mma,
/// ldmatrix; `warp`) and/or warpgroup operations (`warpgroup`): 128, 32 or 1.
uint32_t block_granule(bool warp, bool warpgroup);

/// A block size that breaks its kernel's granule: the code (PG1320 for warps, PG1358 for
/// warpgroups), a message naming the kernel, the block size, the granule and why, and the
/// nearest larger block size that keeps it.
struct GranuleViolation {
  diag::Code code = diag::Code::partial_warp_block;
  std::string message;
  uint64_t suggested_threads = 0;
};

/// Whether a block of `threads` threads keeps a granule (0 threads: nothing to check): the test
/// check_block_granule makes, for a caller that formats the block's description only when needed.
inline bool keeps_block_granule(uint32_t granule, uint64_t threads) {
  return granule <= 1 || threads == 0 || threads % granule == 0;
}

/// Whether a block of `threads` threads keeps the granule of kernel `kernel` (nullopt) or not.
/// `block` says which block it is, e.g. "its @workgroup block" or "the block 96x1x1".
std::optional<GranuleViolation> check_block_granule(std::string_view kernel, uint32_t granule, uint64_t threads,
                                                    std::string_view block);

}  // namespace ptxgate::ir
