// The memory verdict with a kernel's shared-race verdicts remembered between launches, keyed by
// exactly the launch inputs the race search reads (internal to validation).
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/sym_bounds.hpp"
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
/// Whether `facts` have a shared-race search (race_inputs' `searched`): without one,
/// remembered_shared_races finds nothing and reads no bounds.
bool shared_races_searched(const std::shared_ptr<const ir::AccessFacts>& facts);

/// The sites of one path condition (they share its narrowing): by_path[first, end) of a SitePlan.
struct PathGroup {
  uint32_t number = 0;   ///< its place in SitePlan::groups
  uint32_t path = 0;     ///< the bool node
  uint32_t last = 0;     ///< the last node its sites read (index, width limit)
  uint32_t first = 0, end = 0;
  bool limited = false;  ///< a site of the group has a width limit (AccessSite::width_limit)
  uint64_t inputs = 0;   ///< the launch inputs the bounds its sites read depend on (ir::leaf_dependencies bits)
  /// SitePlan::cones[cone_first, cone_rest): ir::node_cone of the path; [cone_rest, cone_end): the
  /// other nodes of the cone of what its sites read (NodeBounds::under's two lists). Empty when the
  /// plan has no cones (under then passes over every node up to `last`).
  uint32_t cone_first = 0, cone_rest = 0, cone_end = 0;
  /// What a concrete evaluation of the path, the sites' indices and their width limits reads
  /// (envelope_reachable), in ascending order: SitePlan::cones[solve_first, solve_short) the cones
  /// of the path, of the indices that are not SitePlan::index_total and of the width limits (when
  /// every scalar is known), [solve_short, solve_end) the two cones above merged (otherwise). Empty
  /// without cones and when the cone reads an opaque value (the envelope then never decides the group).
  uint32_t solve_first = 0, solve_short = 0, solve_end = 0;
  /// The same two cones less the nodes of the group before's (SitePlan::groups), for a thread whose
  /// values that group's cones have just given (ConeValues::walked): SitePlan::cones[delta_first,
  /// delta_short) and [delta_short, delta_end). `delta`: the group before has those cones too.
  uint32_t delta_first = 0, delta_short = 0, delta_end = 0;
  bool delta = false;
  /// The path's launch-uniform conjuncts (conjuncts of its `&&` chain that read no thread or block
  /// id, loop variable or opaque value: the same for every thread): SitePlan::guards[guard_first,
  /// guard_end), and SitePlan::cones[guard_cone, guard_cone_end) their cones merged, ascending.
  /// When one of them is false for a launch, no thread takes the path (guard_false).
  uint32_t guard_first = 0, guard_end = 0, guard_cone = 0, guard_cone_end = 0;
  uint64_t guard_inputs = 0;  ///< the launch inputs those conjuncts read (ir::leaf_dependencies bits)
  /// SitePlan::conjuncts[conjunct_first, conjunct_end): ir::path_conjuncts of the path, for
  /// NodeBounds::direct over the cone SitePlan::cones[solve_short, solve_end).
  uint32_t conjunct_first = 0, conjunct_end = 0;
};

/// A kernel's sites in order of path, then number, and their groups (launch-independent).
struct SitePlan {
  std::vector<uint32_t> by_path;  ///< site numbers
  std::vector<PathGroup> groups;
  std::vector<uint32_t> cones;    ///< the groups' node cones, one after another
  std::vector<uint32_t> guards;   ///< the groups' launch-uniform conjuncts (PathGroup::guard_first)
  std::vector<ir::Conjunct> conjuncts;  ///< the groups' path conjuncts (PathGroup::conjunct_first)
  bool has_cones = false;
  std::vector<uint32_t> params;   ///< the scalar parameters the facts read (with cones)
  /// By site (with cones): 1 when its index reads no loop variable and no opaque value, so that any
  /// thread computes it once the scalars are known.
  std::vector<uint8_t> index_total;
  /// By node (with cones): ir::unsigned_operation, for the cones' concrete evaluation.
  std::vector<ir::UnsignedOp> unsigned_ops;
};
/// `deps`: ir::leaf_dependencies(facts) (empty: every group's inputs are all bits). `cones`: also
/// each group's node cone (what a plan kept with the kernel's BoundsMemo pays for once; a plan
/// made for one launch skips it).
void plan_sites(const ir::AccessFacts& facts, const std::vector<uint64_t>& deps, SitePlan& plan, bool cones = false);

/// The bounds a site's verdict reads: its path's, its index's and its width limit's.
struct SiteBounds {
  ir::Interval path, index, limit;
};

/// What a site's bounds (under its path) decide: unreachable (the path or the index is empty, or
/// the width limit is at most 0), proven (every byte inside the array), or neither
/// (SiteOutcome::unproven: a finding, out of bounds or not proven, which a witness search settles).
SiteOutcome bounds_outcome(const ir::AccessFacts& facts, const ir::AccessSite& site, const SiteBounds& read,
                           const MemoryLaunch& launch);

/// The envelope of a path group: whether its sites are proven in bounds without narrowing its path.
/// A site's bounds under its path lie inside its bounds without the path (narrowing only shrinks
/// them), so when every site's index bounds in `base` (NodeBounds::base of this launch), with the
/// upper end of its width limit's bounds (cp_async's byte count), keep it inside its array, the
/// narrowed ones do too: each site is proven, unless the narrowing would find the path empty or a
/// limit at most 0 (then unreachable). envelope_reachable settles that: a concrete thread of the
/// launch, with the loops it reads at their first iteration, that takes the path, computes every
/// site's index and a positive width limit, lies inside the bounds of every sound narrowing, which
/// therefore finds the path taken, each index not empty and each limit above 0. Both together
/// give the verdict the narrowing gives (every site proven) at the cost of a few comparisons and
/// one concrete evaluation of the group's cone; when either says no, the group is narrowed as before.
bool envelope_in_bounds(const ir::AccessFacts& facts, const SitePlan& plan, const PathGroup& group,
                        const std::vector<ir::Interval>& base, const MemoryLaunch& launch);
/// The concrete values of the nodes envelope_reachable evaluated for one launch, per thread it
/// tries: each node once per launch, whichever groups read it (their cones overlap: the thread and
/// block ids, the tile origins). Kept between launches for their buffers.
struct ConeValues {
  static constexpr int kThreads = 4;
  std::array<std::vector<uint64_t>, kThreads> bits;
  std::array<std::vector<uint32_t>, kThreads> stamp;  ///< == launch: evaluated for this launch
  std::array<std::vector<uint8_t>, kThreads> known;
  uint32_t launch = 0;
  /// Per thread: the group (its number + 1) whose cone it evaluated last, at launch `walked_launch`,
  /// the short cone or not (`walked_short`): the next group then walks its delta cone only.
  std::array<uint32_t, kThreads> walked{}, walked_launch{};
  std::array<bool, kThreads> walked_short{};
  /// Forgets the values of the previous launch.
  void next_launch() {
    if (++launch != 0) return;
    for (auto& s : stamp) std::fill(s.begin(), s.end(), 0);
    walked_launch.fill(0);
    launch = 1;
  }
};
/// Whether a thread of `launch` (one of a few: the first, the second, the middle and the last of
/// each grid and block dimension), with every loop its group reads at that thread's first
/// iteration, takes `group`'s path and computes each of its sites' indices and a positive width
/// limit (where a site has one). False also for a group without a cone to evaluate
/// (PathGroup::solve_first), and when an unknown scalar is read.
/// `values`: next_launch() called once before the first group of each launch.
bool envelope_reachable(const ir::AccessFacts& facts, const SitePlan& plan, const PathGroup& group,
                        const MemoryLaunch& launch, ConeValues& values);
/// Whether one of `group`'s launch-uniform conjuncts is false for `launch`, every node of their
/// cones computed (concretely, into `values`' first thread: uniform nodes have one value for every
/// thread). Then every site of the group is unreachable, as NodeBounds decides: each of those nodes'
/// bounds is the point of its concrete value, so the path's bounds are 0 or empty.
bool guard_false(const ir::AccessFacts& facts, const SitePlan& plan, const PathGroup& group,
                 const MemoryLaunch& launch, ConeValues& values);

/// Which leaves each node of a kernel's facts depends on, for the findings of a launch: opaque
/// values, scalar parameters the launch does not give, thread and block ids.
struct Dependencies {
  std::vector<uint8_t> opaque;   ///< 1: depends on an opaque leaf
  std::vector<int32_t> unknown;  ///< a parameter number it depends on whose value is unknown, or -1
  std::vector<uint8_t> thread;   ///< 1: depends on a thread or block id
};

/// One kernel's node bounds remembered from its last launch evaluated with them, so that the next
/// launch evaluates again only the nodes and path groups that depend on a launch input that changed
/// (a new grid: only what reads block ids or grid dimensions). Used under `mutex` (a launch that
/// finds it taken evaluates from scratch instead of waiting).
struct BoundsMemo {
  std::mutex mutex;
  bool planned = false;
  std::vector<uint64_t> deps;    ///< ir::leaf_dependencies (empty: nothing is reused)
  SitePlan plan;
  ir::NodeBounds bounds;         ///< bound to the facts for the launch of `key`, unless `stale`
  bool valid = false;            ///< `key` and `sites` describe one complete evaluation
  /// Whether `bounds` were ever bound (a launch that decides every group by its guards and searches
  /// no shared races leaves them as they were), and the launch inputs (ir::leaf_dependencies bits)
  /// that changed since they were last brought to a launch: the next rebind evaluates those too.
  bool bound = false;
  uint64_t stale = 0;
  std::vector<uint64_t> key;     ///< that launch's inputs (rekey)
  bool races_searched = false;   ///< shared_races_searched of the facts
  std::vector<SiteBounds> sites;  ///< by site number, for that launch
  /// By group: 1 when that launch proved the group through its envelope (its `sites` entries were
  /// then not narrowed: a later launch that changes none of its inputs checks the envelope against
  /// its own buffer lengths again, and narrows the group when it no longer proves it).
  std::vector<uint8_t> envelope;
  /// By group: 1 when one of its launch-uniform conjuncts was false for that launch (guard_false;
  /// the same for a later launch that changes none of PathGroup::guard_inputs).
  std::vector<uint8_t> guard;
  /// By group: 1 once a launch's narrowing proved every site of the group where its direct bounds
  /// (NodeBounds::direct) did not: the group then needs the narrowing's propagation, and later
  /// launches go to it at once.
  std::vector<uint8_t> narrow_needed;
  /// By group: 1 when that launch proved the group through its direct bounds (its `sites` entries
  /// hold them: a later launch that changes none of its inputs proves it again while they prove
  /// every site against its own buffer lengths, and narrows it otherwise).
  std::vector<uint8_t> direct;
  ConeValues cone_values;         ///< envelope_reachable's buffers
  /// The facts' Dependencies for a launch that gives every scalar they read (the same for every
  /// such launch: made by the first one with a finding).
  std::optional<Dependencies> known_deps;
};
/// The bounds memo of `facts` (made on first use; lives as long as the facts' race memo).
std::shared_ptr<BoundsMemo> bounds_memo(const std::shared_ptr<const ir::AccessFacts>& facts);

/// Writes the launch inputs node bounds read into `key` (as a key): the geometry, and of the scalars
/// those of `params` (the parameters the facts read, SitePlan::params; a scalar the launch does not
/// give as unknown), and returns which of them (ir::leaf_dependencies bits) differ from the key it
/// held: all bits when that held another number of words (an empty key too).
uint64_t rekey(const MemoryLaunch& launch, std::span<const uint32_t> params, std::vector<uint64_t>& key);

/// evaluate_accesses(*facts, launch) with the race part through remembered_shared_races and the
/// node bounds through the facts' BoundsMemo: the same verdict.
MemoryVerdict evaluate_accesses_remembered(const std::shared_ptr<const ir::AccessFacts>& facts,
                                           const MemoryLaunch& launch);

}  // namespace ptxgate::validation::internal
