// Shared-race verdicts remembered per kernel: the launch inputs the race search reads, found once
// per kernel from its facts, key a few remembered verdicts, so a launch that changes only what the
// search does not read (most often the grid) reuses the verdict instead of searching again.
#include "ptxgate/validation/internal/race_memo.hpp"

#include <algorithm>
#include <mutex>

#include "ptxgate/ir/sym_eval.hpp"
#include "ptxgate/validation/internal/shared_races.hpp"
#include "ptxgate/support/thread_object.hpp"

namespace ptxgate::validation::internal {
namespace {

/// One kernel's remembered verdicts. The weak reference keeps the facts' control block, so no
/// other facts object can take its identity while the memo lives.
struct RaceMemo {
  std::weak_ptr<const ir::AccessFacts> owner;
  const ir::AccessFacts* facts = nullptr;
  RaceInputs inputs;
  static constexpr size_t kEntries = 8;
  std::vector<std::pair<std::vector<uint64_t>, std::vector<SharedRace>>> entries;
  size_t next = 0;  ///< the entry the next new verdict replaces once all are used
  /// The race search's groups, built once, and the race-free proofs it remembers by what they read.
  std::unique_ptr<RacePlan> plan;
  std::shared_ptr<BoundsMemo> bounds = std::make_shared<BoundsMemo>();
};

/// Memos of the kernels launched lately (at most kMemos; expired ones go first).
constexpr size_t kMemos = 64;
std::mutex g_mutex;
std::vector<std::shared_ptr<RaceMemo>> g_memos;

bool same_owner(const RaceMemo& m, const std::shared_ptr<const ir::AccessFacts>& facts) {
  return m.facts == facts.get() && !m.owner.owner_before(facts) && !facts.owner_before(m.owner) && !m.owner.expired();
}

/// The memo of `facts`, made (with its inputs) on first use. Under g_mutex.
std::shared_ptr<RaceMemo> memo_of(const std::shared_ptr<const ir::AccessFacts>& facts) {
  for (size_t i = 0; i < g_memos.size(); ++i)
    if (same_owner(*g_memos[i], facts)) {
      if (i > 0) std::swap(g_memos[i], g_memos[i - 1]);  // the kernels launched most come first
      return g_memos[i > 0 ? i - 1 : 0];
    }
  auto m = std::make_shared<RaceMemo>();
  m->owner = facts;
  m->facts = facts.get();
  m->inputs = race_inputs(*facts);
  if (m->inputs.searched) {
    m->plan = std::make_unique<RacePlan>();
    plan_races(*facts, *m->plan);
  }
  std::erase_if(g_memos, [](const std::shared_ptr<RaceMemo>& x) { return x->owner.expired(); });
  if (g_memos.size() >= kMemos) g_memos.pop_back();
  g_memos.push_back(m);
  return m;
}

/// The memo of `facts` as memo_of finds it, remembered by this thread for the kernel it asked for
/// last: a launch of the same kernel finds it without the lock (a memo's owner, facts and inputs
/// never change once it is made). A memo dropped from g_memos meanwhile still describes the same
/// facts, so using it is correct.
/// Reached through a function that is never inlined: one thread-local lookup a call.
[[gnu::noinline]] std::shared_ptr<RaceMemo>& thread_last_memo() {
  return support::thread_object<std::shared_ptr<RaceMemo>>();
}

const std::shared_ptr<RaceMemo>& thread_memo(const std::shared_ptr<const ir::AccessFacts>& facts) {
  std::shared_ptr<RaceMemo>& last = thread_last_memo();
  if (last && same_owner(*last, facts)) [[likely]]
    return last;
  std::lock_guard lock(g_mutex);
  last = memo_of(facts);
  return last;
}

void key_of(const RaceInputs& in, const MemoryLaunch& launch, std::vector<uint64_t>& key) {
  key.assign(launch.block.begin(), launch.block.end());
  if (in.grid) key.insert(key.end(), launch.grid.begin(), launch.grid.end());
  if (in.dynamic_shared) key.push_back(launch.dynamic_shared_bytes);
  for (uint32_t p : in.params) {
    const bool known = p < launch.scalar_bits.size() && launch.scalar_bits[p];
    key.push_back(known);
    key.push_back(known ? *launch.scalar_bits[p] : 0);
  }
}

}  // namespace

RaceInputs race_inputs(const ir::AccessFacts& facts) {
  RaceInputs in;
  const size_t n = facts.nodes.size(), loops = facts.loops.size();
  std::vector<uint8_t> node(n, 0), loop(loops, 0);
  bool changed = false;
  auto mark = [&](int64_t id) {
    if (id >= 0 && static_cast<size_t>(id) < n && !node[id]) node[id] = 1, changed = true;
  };
  auto mark_loop = [&](int64_t l) {
    if (l >= 0 && static_cast<size_t>(l) < loops && !loop[l]) loop[l] = 1, changed = true;
  };
  // The accesses find_shared_races pairs, what decides them, and the loops around them.
  for (const ir::AccessSite& s : facts.sites) {
    if (s.space != ir::Space::shared || s.kind == ir::AccessKind::atomic || !s.witness_exact) continue;
    in.searched |= s.kind == ir::AccessKind::write;
    mark(s.path);
    mark(s.index);
    mark(s.width_limit);
    mark(s.value);
    for (int32_t l = s.loop, depth = 0; l >= 0 && static_cast<size_t>(l) < loops && depth <= static_cast<int>(loops);
         l = facts.loops[l].parent, ++depth)
      mark_loop(l);
  }
  if (!in.searched) return in;
  // Everything those nodes are computed from, the bounds of the loops they are in, and the
  // variables those loops shrink (entering a loop assigns them), until nothing new is reached.
  do {
    changed = false;
    for (size_t l = 0; l < loops; ++l) {
      if (!loop[l]) continue;
      const ir::LoopFact& f = facts.loops[l];
      for (uint32_t id : {f.variable, f.lo, f.hi, f.step, f.offset}) mark(id);
      for (size_t v = 0; v < loops; ++v)
        if (facts.loops[v].kind == ir::LoopFact::Kind::shrinking && facts.loops[v].parent == static_cast<int32_t>(l))
          mark_loop(static_cast<int64_t>(v));
    }
    for (size_t i = n; i-- > 0;) {
      if (!node[i]) continue;
      const ir::SymNode& x = facts.nodes[i];
      const unsigned count = ir::sym_operand_count(x.op);
      if (count > 0) mark(x.a);
      if (count > 1) mark(x.b);
      if (count > 2) mark(x.c);
      if (x.op == ir::SymOp::loop) mark_loop(static_cast<int64_t>(std::min<uint64_t>(x.value, INT64_MAX)));
    }
  } while (changed);
  for (size_t i = 0; i < n; ++i) {
    if (!node[i]) continue;
    const ir::SymNode& x = facts.nodes[i];
    if (x.op == ir::SymOp::grid_dim || x.op == ir::SymOp::block_id) in.grid = true;
    if (x.op == ir::SymOp::dynamic_shared_bytes) in.dynamic_shared = true;
    if (x.op == ir::SymOp::param && x.value <= UINT32_MAX) in.params.push_back(static_cast<uint32_t>(x.value));
  }
  std::sort(in.params.begin(), in.params.end());
  in.params.erase(std::unique(in.params.begin(), in.params.end()), in.params.end());
  return in;
}

std::shared_ptr<BoundsMemo> bounds_memo(const std::shared_ptr<const ir::AccessFacts>& facts) {
  return thread_memo(facts)->bounds;
}

uint64_t rekey(const MemoryLaunch& launch, std::span<const uint32_t> params, std::vector<uint64_t>& key) {
  // Written in place and compared word by word in one pass: a launch of the same kernel finds the
  // vector at its size. Each word that differs sets its input's ir::leaf_bit_* (a parameter's two
  // words one bit). Only the scalars the facts read: no node's bounds depend on any other scalar (a
  // 16-argument kernel whose facts read one scalar keys 9 words, not 39).
  uint64_t changed = 0;
  if (key.size() != 7 + 2 * params.size()) {
    key.assign(7 + 2 * params.size(), 0);
    changed = ~uint64_t{0};
  }
  uint64_t* k = key.data();
  auto put = [&](size_t at, uint64_t value, uint64_t bit) {
    changed |= k[at] != value ? bit : 0;
    k[at] = value;
  };
  for (unsigned d = 0; d < 3; ++d) {
    put(d, launch.grid[d], ir::leaf_bit_grid(d));
    put(3 + d, launch.block[d], ir::leaf_bit_block(d));
  }
  put(6, launch.dynamic_shared_bytes, ir::kLeafBitDynamicShared);
  const size_t given = launch.scalar_bits.size();
  for (size_t i = 0; i < params.size(); ++i) {
    const uint32_t p = params[i];
    const uint64_t bit = ir::leaf_bit_param(p);
    const bool known = p < given && launch.scalar_bits[p].has_value();
    put(7 + 2 * i, known, bit);
    put(8 + 2 * i, known ? *launch.scalar_bits[p] : 0, bit);
  }
  return changed;
}

bool shared_races_searched(const std::shared_ptr<const ir::AccessFacts>& facts) {
  return thread_memo(facts)->inputs.searched;
}

std::vector<SharedRace> remembered_shared_races(const std::shared_ptr<const ir::AccessFacts>& facts,
                                                const MemoryLaunch& launch, const std::vector<ir::Interval>& bounds) {
  thread_local std::vector<uint64_t> key;
  // A kernel without a search (no shared array written where threads could race) takes no lock.
  if (!thread_memo(facts)->inputs.searched) return {};
  const std::shared_ptr<RaceMemo> memo = thread_memo(facts);
  {
    std::lock_guard lock(g_mutex);
    key_of(memo->inputs, launch, key);
    for (const auto& [k, races] : memo->entries)
      if (k == key) return races;
  }
  // The plan's remembered proofs, unless another launch of the kernel searches with them now.
  std::unique_lock plan_lock(memo->plan->mutex, std::try_to_lock);
  std::vector<SharedRace> races =
      search_shared_races(*facts, launch, *memo->plan, plan_lock.owns_lock(), nullptr, &bounds, true);
  if (plan_lock.owns_lock()) plan_lock.unlock();
  std::lock_guard lock(g_mutex);
  if (memo->entries.size() < RaceMemo::kEntries) {
    memo->entries.emplace_back(key, races);
  } else {
    memo->entries[memo->next] = {key, races};
    memo->next = (memo->next + 1) % RaceMemo::kEntries;
  }
  return races;
}

}  // namespace ptxgate::validation::internal
