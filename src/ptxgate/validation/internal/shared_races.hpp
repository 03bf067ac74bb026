// The shared-race search's per-kernel plan (its groups of accesses, their pairs and loops, built once
// from the facts) and the race-free proofs it remembers by the values they read (internal to validation).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/sym_bounds.hpp"
#include "ptxgate/validation/memory_safety.hpp"

namespace ptxgate::validation::internal {

/// Everything a symbolic race-free proof of one pass read from its launch, so that another launch
/// can tell whether the same proof holds for it (docs/ir.md "Shared-memory races"): the block, the
/// values of the nodes every thread shares (at this pass's iteration of the loops around the group),
/// and the bounds of the nodes it took only as ranges (atoms, loop variables). The proof is a
/// function of exactly these; it is monotone in the ranges (a narrower range only removes candidate
/// element pairs), so a launch whose values are equal and whose ranges lie within the recorded ones
/// (not empty) is race-free by the same argument. `exact_ranges`: the proof also decided on a range
/// in a way that is not monotone (an index taken as wrapping), so the ranges must be equal.
/// `bounded`: loop variables whose iteration counts the proof took as anything their type allows
/// (valid for every trip count), which only needs their bounds not to be the type's full range.
/// `evaluation`: the nodes those values are computed from, ascending (operands first), for their
/// evaluation in one pass when the proof is replayed.
struct ProofTrace {
  std::array<uint64_t, 3> block{};
  std::vector<std::pair<uint32_t, ir::Interval>> ranges;
  std::vector<uint32_t> bounded;
  std::vector<std::pair<uint32_t, std::optional<ir::Integer>>> values;
  std::vector<uint32_t> evaluation;
  bool exact_ranges = false;
};

/// One group of accesses the search pairs: one shared array, epoch and innermost loop, with a write.
struct RaceGroup {
  std::vector<uint32_t> sites;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;  ///< the pairs whose meeting would count as a race
  std::vector<uint32_t> chain;                       ///< the loops around it, outermost first
};

/// A kernel's race search, prepared once from its facts (launch-independent), and the proofs it
/// remembers per group and pass (first or last iteration), a few each, replaced in turn.
struct RacePlan {
  const ir::AccessFacts* facts = nullptr;
  std::vector<RaceGroup> groups;
  std::vector<uint8_t> varying;    ///< per node: its value may differ between the threads of a block
  std::vector<uint8_t> fixed;      ///< per node: computed from constants only (the same in every launch)
  std::vector<uint32_t> per_pass;  ///< nodes whose form depends on the pass (they read a loop variable)
  std::vector<uint8_t> reads_loop;  ///< per node: it is in per_pass (its value at a pass is the pass's alone)
  std::vector<ir::UnsignedOp> unsigned_ops;  ///< per node: ir::unsigned_operation

  static constexpr size_t kProofs = 4;
  struct Remembered {
    std::vector<ProofTrace> proofs;
    size_t next = 0;
  };
  std::vector<std::array<Remembered, 2>> remembered;  ///< by group, then pass
  std::mutex mutex;                                   ///< guards `remembered` (try_lock: a busy plan is not used)
  uint64_t replayed = 0;                              ///< passes served by a remembered proof (tests)
};

/// The plan of `facts` (the facts must outlive it).
void plan_races(const ir::AccessFacts& facts, RacePlan& plan);

/// find_shared_races with the kernel's prepared plan; with `remember`, the plan's remembered proofs
/// serve a pass whose trace matches this launch, and new proofs are remembered (`plan.mutex` must be
/// held). The same races as find_shared_races(facts, launch, search, bounds, prove).
std::vector<SharedRace> search_shared_races(const ir::AccessFacts& facts, const MemoryLaunch& launch, RacePlan& plan,
                                            bool remember, SharedRaceSearch* search,
                                            const std::vector<ir::Interval>* bounds, bool prove);

}  // namespace ptxgate::validation::internal
