// `ptxgate occupancy`: a kernel compiled for a device profile, its occupancy over block sizes and
// the block size cuOccupancyMaxPotentialBlockSize would suggest, computed offline.
#pragma once

#include <expected>
#include <string>

#include <nlohmann/json.hpp>

#include "ptxgate/commands/offline_check.hpp"
#include "ptxgate/validation/check.hpp"

namespace ptxgate::commands {

struct OccupancyRequest {
  std::string input;                       ///< .pg path, or "-" for standard input
  std::string kernel;
  std::string profile;                     ///< device profile NAME or PATH
  std::string shared_bytes = "0";          ///< dynamic shared memory per block, at every block size
  ir::FpMode fp_mode = ir::FpMode::contract;  ///< --fp-contract off / --fast-math
  module_cache::ModuleCacheOptions cache;
};

struct OccupancyReport {
  ProfiledKernel compiled;
  uint64_t dynamic_shared_bytes = 0;
  validation::OccupancyTable table;
};

/// compile_for_profile, then validation::occupancy_table over the block sizes the kernel allows
/// (its @workgroup or .reqntid, else multiples of its block granule). Stops: a malformed
/// --shared-bytes (usage, PG5004); the compile's diagnostics; `check`'s own diagnostics when it
/// would block every allowed size (one verdict: PG3301 for too many registers, say); PG5007 when
/// no block size lets a block be resident.
[[nodiscard]] std::expected<OccupancyReport, OfflineStop> occupancy_offline(const OccupancyRequest& request);

/// {"schema_version", "kernel", "profile", "arch", "sm_count", "dynamic_shared_bytes",
///  "resources": {"registers", "static_shared_bytes", "local_bytes", "max_threads_per_block"},
///  "block_limit", "suggested_block", "min_grid_for_full_occupancy",
///  "rows": [{"block", "launchable", "active_blocks_per_sm", "active_warps_per_sm", "occupancy_percent", "limiter",
///            "by_threads", "by_registers", "by_shared", "by_blocks"}]}
/// (a factor that does not bound residency is null).
[[nodiscard]] nlohmann::json occupancy_json(const OccupancyReport& report);
/// The table (with `verbose`, each factor's bound too) and the suggestion.
[[nodiscard]] std::string occupancy_text(const OccupancyReport& report, bool verbose);

}  // namespace ptxgate::commands
