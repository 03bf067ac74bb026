// The memory verdict with a kernel's shared-race verdicts remembered between launches, keyed by
// exactly the launch inputs the race search reads (internal to validation).
#pragma once

#include <memory>
#include <vector>

#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/validation/memory_safety.hpp"

namespace ptxgate::validation::internal {

/// The launch inputs find_shared_races reads for one kernel's facts (launch-independent): the
/// block always; the grid, the dynamic shared bytes and scalar parameters only where the accesses
/// it pairs (their paths, indices, written values and loops) use them.
struct RaceInputs {
  bool searched = false;         ///< a shared array is written where threads could race: a search runs
  bool grid = false;             ///< block ids or grid dimensions
  bool dynamic_shared = false;   ///< the dynamic shared bytes
  std::vector<uint32_t> params;  ///< scalar parameters, by number
};
RaceInputs race_inputs(const ir::AccessFacts& facts);

/// find_shared_races(*facts, launch, nullptr, &bounds), remembered per facts object by the values of
/// race_inputs(*facts) (a few launches' worth): the same races as the search, found again only when
/// one of those values changes. `bounds`: NodeBounds::base() of this launch.
std::vector<SharedRace> remembered_shared_races(const std::shared_ptr<const ir::AccessFacts>& facts,
                                                const MemoryLaunch& launch, const std::vector<ir::Interval>& bounds);

/// evaluate_accesses(*facts, launch) with the race part through remembered_shared_races: the same verdict.
MemoryVerdict evaluate_accesses_remembered(const std::shared_ptr<const ir::AccessFacts>& facts,
                                           const MemoryLaunch& launch);

}  // namespace ptxgate::validation::internal
