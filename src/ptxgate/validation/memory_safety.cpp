// Memory safety of one launch: bounds of every access under its path condition, concrete witnesses
// for accesses that go out of bounds, and the diagnostics that name them.
#include "ptxgate/validation/memory_safety.hpp"

#include <algorithm>
#include <iterator>
#include <span>
#include <tuple>

#include <fmt/format.h>

#include "ptxgate/ir/access_sites.hpp"
#include "ptxgate/ir/sym_bounds.hpp"
#include "ptxgate/validation/internal/race_memo.hpp"

namespace ptxgate::validation {
namespace {

using ir::Interval;
using ir::Integer;
using ir::SymOp;

std::string text(Integer v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  unsigned __int128 m = negative ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string s;
  while (m > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(m % 10)));
    m /= 10;
  }
  if (negative) s.push_back('-');
  return {s.rbegin(), s.rend()};
}

using internal::Dependencies;

Dependencies dependencies(const ir::AccessFacts& facts, const MemoryLaunch& launch) {
  Dependencies d{std::vector<uint8_t>(facts.nodes.size(), 0), std::vector<int32_t>(facts.nodes.size(), -1),
                 std::vector<uint8_t>(facts.nodes.size(), 0)};
  for (uint32_t i = 0; i < facts.nodes.size(); ++i) {
    const ir::SymNode& n = facts.nodes[i];
    if (n.op == SymOp::opaque) d.opaque[i] = 1;
    if (n.op == SymOp::thread_id || n.op == SymOp::block_id) d.thread[i] = 1;
    if (n.op == SymOp::param && (n.value >= launch.scalar_bits.size() || !launch.scalar_bits[n.value]))
      d.unknown[i] = static_cast<int32_t>(n.value);
    auto take = [&](uint32_t from) {
      d.opaque[i] |= d.opaque[from];
      d.thread[i] |= d.thread[from];
      if (d.unknown[i] < 0) d.unknown[i] = d.unknown[from];
    };
    const unsigned count = ir::sym_operand_count(n.op);
    if (count > 0) take(n.a);
    if (count > 1) take(n.b);
    if (count > 2) take(n.c);
    if (n.op == SymOp::loop && n.value < facts.loops.size()) {
      const ir::LoopFact& l = facts.loops[n.value];
      if (l.lo < i) take(l.lo);
      if (l.hi < i) take(l.hi);
      if (l.step < i) take(l.step);
    }
  }
  return d;
}

/// The loops around a site, outermost first.
std::vector<uint32_t> loop_chain(const ir::AccessFacts& facts, int32_t innermost) {
  std::vector<uint32_t> chain;
  for (int32_t l = innermost; l >= 0 && chain.size() < facts.loops.size(); l = facts.loops[l].parent)
    chain.push_back(static_cast<uint32_t>(l));
  std::reverse(chain.begin(), chain.end());
  return chain;
}

std::optional<uint64_t> array_length(const ir::AccessFacts& facts, const ir::AccessSite& site, const MemoryLaunch& launch) {
  if (site.space == ir::Space::global)
    return site.array < launch.buffer_bytes.size() ? launch.buffer_bytes[site.array] : std::nullopt;
  if (site.array >= facts.arrays.size()) return std::nullopt;
  const ir::ArrayFact& a = facts.arrays[site.array];
  if (a.dynamic) return launch.dynamic_shared_bytes;
  return a.elements * a.element_bytes;
}

std::string array_name(const ir::AccessFacts& facts, const ir::AccessSite& site, const MemoryLaunch& launch) {
  if (site.space == ir::Space::global)
    return site.array < launch.names.size() ? std::string(launch.names[site.array])
                                            : fmt::format("parameter {}", site.array);
  return site.array < facts.arrays.size() ? facts.arrays[site.array].name : "?";
}

/// Whether a path's bounds leave no thread on it (then each of its sites is unreachable).
inline bool path_untaken(const Interval& p) { return p.empty() || p == Interval{0, 0}; }

/// outcome_of for a site whose path some thread may take (not path_untaken).
[[gnu::always_inline]] inline SiteOutcome taken_outcome(const ir::AccessFacts& facts, const ir::AccessSite& site,
                                                        const Interval& index, const Interval& limit,
                                                        const MemoryLaunch& launch) {
  uint64_t width = site.width;
  if (index.empty()) return SiteOutcome::unreachable;
  if (site.width_limit >= 0) {
    if (limit.empty() || limit.hi <= 0) return SiteOutcome::unreachable;
    width = static_cast<uint64_t>(std::min<Integer>(limit.hi, width));
  }
  const std::optional<uint64_t> length = array_length(facts, site, launch);
  if (!length) return SiteOutcome::unproven;
  // In 64 bits where the bytes' end cannot overflow them (the common case), else in 128.
  constexpr Integer kSmallIndex = Integer{1} << 40;
  if (index.lo >= 0 && index.hi < kSmallIndex && site.stride < (uint32_t{1} << 20))
    return static_cast<uint64_t>(index.hi) * site.stride + width <= *length ? SiteOutcome::proven
                                                                            : SiteOutcome::unproven;
  const Integer first = index.lo * site.stride, end = index.hi * site.stride + width;
  return first >= 0 && end <= static_cast<Integer>(*length) ? SiteOutcome::proven : SiteOutcome::unproven;
}

/// internal::bounds_outcome, inline in the verdict's loop over every site.
[[gnu::always_inline]] inline SiteOutcome outcome_of(const ir::AccessFacts& facts, const ir::AccessSite& site,
                                                     const internal::SiteBounds& read, const MemoryLaunch& launch) {
  if (path_untaken(read.path)) return SiteOutcome::unreachable;
  return taken_outcome(facts, site, read.index, read.limit, launch);
}

/// Searches threads of the launch (and iterations of the site's loops) for one that runs the site
/// and touches bytes outside [0, length). Every candidate is checked by concrete evaluation, so a
/// witness is real: that thread computes that index on that path.
class WitnessSearch {
 public:
  WitnessSearch(const ir::AccessFacts& facts, const MemoryLaunch& launch) : facts_(facts), launch_(launch), eval_(facts, launch.grid, launch.block, launch.dynamic_shared_bytes, launch.scalar_bits) {}

  std::optional<Witness> find(const ir::AccessSite& site, uint64_t length, Interval index_bounds) {
    site_ = &site;
    length_ = length;
    loops_ = loop_chain(facts_, site.loop);
    const std::array<uint64_t, 6> extent{launch_.block[0], launch_.block[1], launch_.block[2],
                                         launch_.grid[0], launch_.grid[1], launch_.grid[2]};
    std::vector<unsigned> varying;
    for (unsigned k = 0; k < 6; ++k)
      if (extent[k] > 1) varying.push_back(k);
    // First the threads solved for a target index (the first index past the end, -1, the bounds'
    // extremes), so that the witness is the first thread to leave the array when there is one.
    const Integer elements_past = site.stride > 0 ? (static_cast<Integer>(length) - site.width) / site.stride + 1 : 0;
    std::vector<Integer> targets{std::max<Integer>(elements_past, 0), -1, index_bounds.hi, index_bounds.lo};
    for (int last = 0; last < 2; ++last) {
      std::array<uint64_t, 6> zero{};
      auto c0 = index_at(zero, last);
      if (!c0) continue;
      std::vector<std::pair<Integer, unsigned>> slope;
      for (unsigned k : varying) {
        std::array<uint64_t, 6> unit{};
        unit[k] = 1;
        auto ck = index_at(unit, last);
        if (ck && *ck - *c0 > 0) slope.emplace_back(*ck - *c0, k);
      }
      std::sort(slope.begin(), slope.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
      for (Integer target : targets) {
        // Greedy by slope, largest first, with a few smaller values of each coordinate tried when
        // the path does not hold (a guard on a composite of them, e.g. r = 16 by + ty < rows).
        std::array<uint64_t, 6> at{};
        int budget = 96;
        if (auto w = solve(slope, 0, target - *c0, at, extent, budget)) return w;
      }
    }
    // The corners of the launch: where the largest and smallest indices of monotone expressions are.
    const size_t corners = size_t{1} << varying.size();
    for (size_t mask = 0; mask < corners; ++mask) {
      std::array<uint64_t, 6> at{};
      for (size_t j = 0; j < varying.size(); ++j) at[varying[j]] = (mask >> j & 1) ? extent[varying[j]] - 1 : 0;
      if (auto w = try_thread(at)) return w;
    }
    // The last corner with its coordinates rounded down to multiples of 2, 4, ... 1024: where a
    // guard like `lane_id == 0` holds for the largest warp, row or tile.
    for (unsigned k = 1; k <= 10; ++k) {
      std::array<uint64_t, 6> at{};
      for (unsigned c : varying) at[c] = (extent[c] - 1) & ~((uint64_t{1} << k) - 1);
      if (auto w = try_thread(at)) return w;
    }
    return std::nullopt;
  }

 private:
  /// Assigns the coordinates of `slope` from `j` on so that the index reaches `rest` more, trying
  /// the greedy value of each and up to two below it; each complete assignment is tried.
  std::optional<Witness> solve(const std::vector<std::pair<Integer, unsigned>>& slope, size_t j, Integer rest,
                               std::array<uint64_t, 6>& at, const std::array<uint64_t, 6>& extent, int& budget) {
    if (budget <= 0) return std::nullopt;
    if (j == slope.size()) {
      --budget;
      return try_thread(at);
    }
    const auto [step, k] = slope[j];
    const Integer greedy = std::min<Integer>(rest > 0 ? rest / step : 0, static_cast<Integer>(extent[k] - 1));
    for (Integer value = greedy; value >= 0 && value >= greedy - 2; --value) {
      at[k] = static_cast<uint64_t>(value);
      if (auto w = solve(slope, j + 1, rest - value * step, at, extent, budget)) return w;
    }
    at[k] = 0;
    return std::nullopt;
  }

  /// The index at coordinates with every loop at its first (or last) iteration; nullopt if unknown.
  std::optional<Integer> index_at(const std::array<uint64_t, 6>& at, int last) {
    eval_.reset(at);
    for (uint32_t loop : loops_)
      if (!enter(loop, last != 0)) return std::nullopt;
    auto v = eval_.value(site_->index);
    if (!v) return std::nullopt;
    return ir::value_of(facts_.nodes[site_->index].type, *v);
  }

  bool enter(uint32_t loop, bool last) { return eval_.enter_loop(loop, last).has_value(); }

  std::optional<Witness> try_thread(const std::array<uint64_t, 6>& at) {
    // Every combination of first and last iterations of the enclosing loops (at most 16).
    const size_t depth = std::min<size_t>(loops_.size(), 4);
    for (size_t mask = 0; mask < (size_t{1} << depth); ++mask) {
      eval_.reset(at);
      bool entered = true;
      Witness w;
      for (size_t j = 0; j < loops_.size() && entered; ++j) {
        entered = enter(loops_[j], j < depth && (mask >> j & 1));
        if (entered) {
          auto v = eval_.value(facts_.loops[loops_[j]].variable);
          w.loops.emplace_back(loops_[j], ir::value_of(facts_.nodes[facts_.loops[loops_[j]].variable].type, *v));
        }
      }
      if (!entered) continue;
      // The variables the entered loops only shrink, as they start (part of the witness too).
      for (uint32_t v = 0; v < facts_.loops.size(); ++v)
        if (facts_.loops[v].kind == ir::LoopFact::Kind::shrinking)
          if (auto value = eval_.value(facts_.loops[v].variable))
            w.loops.emplace_back(v, ir::value_of(facts_.nodes[facts_.loops[v].variable].type, *value));
      auto path = eval_.value(site_->path);
      auto index = eval_.value(site_->index);
      if (!path || !(*path & 1) || !index) continue;
      uint64_t width = site_->width;
      if (site_->width_limit >= 0) {
        auto limit = eval_.value(static_cast<uint32_t>(site_->width_limit));
        if (!limit) continue;
        width = std::min<uint64_t>(width, *limit);
        if (width == 0) continue;
      }
      const Integer i = ir::value_of(facts_.nodes[site_->index].type, *index);
      const Integer first = i * site_->stride, end = first + width;
      if (first >= 0 && end <= static_cast<Integer>(length_)) continue;
      w.thread = {at[0], at[1], at[2]};
      w.block = {at[3], at[4], at[5]};
      w.index = i;
      w.bytes = width;
      return w;
    }
    return std::nullopt;
  }

  const ir::AccessFacts& facts_;
  const MemoryLaunch& launch_;
  ir::ConcreteNodes eval_;
  const ir::AccessSite* site_ = nullptr;
  uint64_t length_ = 0;
  std::vector<uint32_t> loops_;
};

}  // namespace

void internal::plan_sites(const ir::AccessFacts& facts, const std::vector<uint64_t>& deps, SitePlan& plan, bool cones) {
  plan.by_path.resize(facts.sites.size());
  for (uint32_t i = 0; i < facts.sites.size(); ++i) plan.by_path[i] = i;
  std::sort(plan.by_path.begin(), plan.by_path.end(), [&](uint32_t x, uint32_t y) {
    return std::pair(facts.sites[x].path, x) < std::pair(facts.sites[y].path, y);
  });
  plan.groups.clear();
  auto inputs_of = [&](int64_t id) {
    return deps.empty() ? ~uint64_t{0} : id >= 0 && static_cast<size_t>(id) < deps.size() ? deps[id] : 0;
  };
  for (uint32_t first = 0, end = 0; first < plan.by_path.size(); first = end) {
    PathGroup g;
    g.path = facts.sites[plan.by_path[first]].path;
    g.last = g.path;
    g.first = first;
    g.inputs = inputs_of(g.path);
    for (end = first; end < plan.by_path.size() && facts.sites[plan.by_path[end]].path == g.path; ++end) {
      const ir::AccessSite& site = facts.sites[plan.by_path[end]];
      g.last = std::max(g.last, site.index);
      g.inputs |= inputs_of(site.index);
      if (site.width_limit >= 0) {
        g.limited = true;
        g.last = std::max<uint32_t>(g.last, static_cast<uint32_t>(site.width_limit));
        g.inputs |= inputs_of(site.width_limit);
      }
    }
    g.end = end;
    g.number = static_cast<uint32_t>(plan.groups.size());
    plan.groups.push_back(g);
  }
  plan.cones.clear();
  plan.guards.clear();
  plan.conjuncts.clear();
  plan.has_cones = cones;
  plan.params.clear();
  plan.index_total.clear();
  plan.unsigned_ops.clear();
  if (!cones) return;
  plan.unsigned_ops.resize(facts.nodes.size());
  for (uint32_t i = 0; i < facts.nodes.size(); ++i) plan.unsigned_ops[i] = ir::unsigned_operation(facts.nodes, i);
  std::vector<uint32_t> targets;
  plan.params = ir::parameters_read(facts);
  plan.index_total.resize(facts.sites.size());
  for (uint32_t i = 0; i < facts.sites.size(); ++i) {
    bool total = true;
    for (uint32_t id : ir::node_cone(facts, {facts.sites[i].index}))
      total = total && facts.nodes[id].op != SymOp::loop && facts.nodes[id].op != SymOp::opaque;
    plan.index_total[i] = total;
  }
  // The previous group's cones (for the delta cones; empty: it has none).
  std::vector<uint32_t> previous_short, previous_cone;
  bool previous = false;
  for (PathGroup& g : plan.groups) {
    const bool after = previous;
    previous = false;
    targets.assign({g.path});
    for (uint32_t k = g.first; k < g.end; ++k) {
      const ir::AccessSite& site = facts.sites[plan.by_path[k]];
      targets.push_back(site.index);
      if (site.width_limit >= 0) targets.push_back(static_cast<uint32_t>(site.width_limit));
    }
    const std::vector<uint32_t> path_cone = ir::node_cone(facts, {g.path});
    const std::vector<uint32_t> cone = ir::node_cone(facts, targets);
    g.cone_first = static_cast<uint32_t>(plan.cones.size());
    plan.cones.insert(plan.cones.end(), path_cone.begin(), path_cone.end());
    g.cone_rest = static_cast<uint32_t>(plan.cones.size());
    std::set_difference(cone.begin(), cone.end(), path_cone.begin(), path_cone.end(), std::back_inserter(plan.cones));
    g.cone_end = static_cast<uint32_t>(plan.cones.size());
    g.solve_first = g.solve_short = g.solve_end = g.cone_end;
    // The path's launch-uniform conjuncts: through its && chain, each operand whose cone reads no
    // thread or block id, loop variable or opaque value (guard_false).
    g.guard_first = static_cast<uint32_t>(plan.guards.size());
    std::vector<uint32_t> pending{g.path};
    while (!pending.empty()) {
      const uint32_t id = pending.back();
      pending.pop_back();
      if (id >= facts.nodes.size()) continue;
      const ir::SymNode& n = facts.nodes[id];
      if (n.op == SymOp::logical_and) {
        pending.push_back(n.a);
        pending.push_back(n.b);
        continue;
      }
      bool uniform = true;
      for (uint32_t c : ir::node_cone(facts, {id})) {
        const SymOp op = facts.nodes[c].op;
        uniform = uniform && op != SymOp::thread_id && op != SymOp::block_id && op != SymOp::loop && op != SymOp::opaque;
      }
      if (uniform && std::find(plan.guards.begin() + g.guard_first, plan.guards.end(), id) == plan.guards.end())
        plan.guards.push_back(id);
    }
    g.guard_end = static_cast<uint32_t>(plan.guards.size());
    for (uint32_t k = g.guard_first; k < g.guard_end; ++k) g.guard_inputs |= inputs_of(plan.guards[k]);
    g.guard_cone = g.guard_end > g.guard_first ? static_cast<uint32_t>(plan.cones.size()) : g.cone_end;
    if (g.guard_end > g.guard_first) {
      const std::vector<uint32_t> guard_cone = ir::node_cone(
          facts, std::vector<uint32_t>(plan.guards.begin() + g.guard_first, plan.guards.end()));
      plan.cones.insert(plan.cones.end(), guard_cone.begin(), guard_cone.end());
    }
    g.guard_cone_end = static_cast<uint32_t>(plan.cones.size());
    g.solve_first = g.solve_short = g.solve_end = g.guard_cone_end;
    g.conjunct_first = static_cast<uint32_t>(plan.conjuncts.size());
    for (const ir::Conjunct& c : ir::path_conjuncts(facts, g.path)) plan.conjuncts.push_back(c);
    g.conjunct_end = static_cast<uint32_t>(plan.conjuncts.size());
    // No envelope where the path, an index or a width limit reads an opaque value (no thread is
    // ever known to take it: a concrete evaluation would be wasted).
    bool opaque = false;
    for (uint32_t id : cone) opaque = opaque || facts.nodes[id].op == SymOp::opaque;
    if (opaque) continue;
    // The short cone: the path's, that of each index that reads a loop variable (the others are
    // computed by every thread once the scalars are known: they need no evaluation) and that of
    // each width limit (the thread found must copy bytes: envelope_reachable).
    targets.assign({g.path});
    for (uint32_t k = g.first; k < g.end; ++k) {
      const ir::AccessSite& site = facts.sites[plan.by_path[k]];
      if (!plan.index_total[plan.by_path[k]]) targets.push_back(site.index);
      if (site.width_limit >= 0) targets.push_back(static_cast<uint32_t>(site.width_limit));
    }
    const std::vector<uint32_t> short_cone = ir::node_cone(facts, targets);
    plan.cones.insert(plan.cones.end(), short_cone.begin(), short_cone.end());
    g.solve_short = static_cast<uint32_t>(plan.cones.size());
    plan.cones.insert(plan.cones.end(), cone.begin(), cone.end());
    g.solve_end = static_cast<uint32_t>(plan.cones.size());
    if (after) {
      g.delta = true;
      g.delta_first = static_cast<uint32_t>(plan.cones.size());
      std::set_difference(short_cone.begin(), short_cone.end(), previous_short.begin(), previous_short.end(),
                          std::back_inserter(plan.cones));
      g.delta_short = static_cast<uint32_t>(plan.cones.size());
      std::set_difference(cone.begin(), cone.end(), previous_cone.begin(), previous_cone.end(),
                          std::back_inserter(plan.cones));
      g.delta_end = static_cast<uint32_t>(plan.cones.size());
    }
    previous_short = short_cone;
    previous_cone = cone;
    previous = true;
  }
}

SiteOutcome internal::bounds_outcome(const ir::AccessFacts& facts, const ir::AccessSite& site, const SiteBounds& read,
                                     const MemoryLaunch& launch) {
  return outcome_of(facts, site, read, launch);
}

bool internal::envelope_in_bounds(const ir::AccessFacts& facts, const SitePlan& plan, const PathGroup& group,
                                  const std::vector<Interval>& base, const MemoryLaunch& launch) {
  // The test the verdict makes of the narrowed bounds, on bounds that contain them. A width limit's
  // narrowed upper end is at most its end here, so the bytes a site may touch only shrink; that the
  // narrowed limit leaves a byte to copy (else the site is unreachable) is envelope_reachable's.
  if (group.solve_first == group.solve_end || group.path >= base.size()) return false;
  // The path's test once for the group (its sites would each be unreachable, not proven).
  if (path_untaken(base[group.path])) return false;
  // One loop, without the limits' reads where no site has one (most groups; it costs sgemm 0.4 %).
  auto all_proven = [&]<bool kLimited>() {
    for (uint32_t k = group.first; k < group.end; ++k) {
      const ir::AccessSite& site = facts.sites[plan.by_path[k]];
      if (site.index >= base.size()) return false;
      Interval limit{};
      if (kLimited && site.width_limit >= 0) {
        if (static_cast<size_t>(site.width_limit) >= base.size()) return false;
        limit = base[static_cast<uint32_t>(site.width_limit)];
      }
      if (taken_outcome(facts, site, base[site.index], limit, launch) != SiteOutcome::proven) return false;
    }
    return true;
  };
  return group.limited ? all_proven.template operator()<true>() : all_proven.template operator()<false>();
}

namespace {

/// The concrete value of every node of `cone` (ascending) not evaluated yet for this launch, for the
/// thread at `at` (its thread ids, then its block ids) with the first
/// iteration of every loop the cone reads, into `values`' arrays of thread `pick`.
/// Inlined into its two callers: the envelope's thread loop is the hot one (a call there costs the
/// GEMMs' verdicts about 1 %).
[[gnu::always_inline]] inline void evaluate_cone(const ir::AccessFacts& facts, const internal::SitePlan& plan,
                                                 const MemoryLaunch& launch, const std::array<uint64_t, 6>& at,
                                                 std::span<const uint32_t> cone, internal::ConeValues& values,
                                                 int pick) {
  std::vector<uint64_t>& bits = values.bits[pick];
  std::vector<uint32_t>& stamp = values.stamp[pick];
  std::vector<uint8_t>& known = values.known[pick];
  if (stamp.size() < facts.nodes.size()) {
    bits.resize(facts.nodes.size());
    stamp.resize(facts.nodes.size(), 0);
    known.resize(facts.nodes.size());
  }
  // The arrays through locals (nothing resizes them below): a byte store to `known` does not make the
  // loop reload every vector it reads.
  uint64_t* const bits_at = bits.data();
  uint32_t* const stamp_at = stamp.data();
  uint8_t* const known_at = known.data();
  const ir::SymNode* const nodes = facts.nodes.data();
  const uint32_t launch_number = values.launch;
  // The pointers by value (by reference the loop reloads them: gemm_bf16_mma's verdict +730 instructions).
  const auto known_of = [known_at](uint32_t id) { return known_at[id] != 0; };
  const auto bits_of = [bits_at](uint32_t id) { return bits_at[id]; };
  auto value = [&](uint32_t id) { return known_at[id] ? std::optional<uint64_t>(bits_at[id]) : std::nullopt; };
  // This thread (with the first iteration of every loop the cone reads): the value of every node of
  // the cone not evaluated yet for this launch, in node order (operands and loop bounds come first
  // and are in the cone).
  const ir::UnsignedOp* unsigned_ops = plan.unsigned_ops.size() >= facts.nodes.size() ? plan.unsigned_ops.data()
                                                                                      : nullptr;
  for (uint32_t id : cone) {
    if (stamp_at[id] == launch_number) continue;
    stamp_at[id] = launch_number;
    const ir::SymNode& n = nodes[id];
    // A node of unsigned operands, all known: its bits in 64-bit arithmetic (apply_sym_op's).
    uint64_t fast = 0;
    if (ir::evaluate_unsigned_node(unsigned_ops ? unsigned_ops[id] : ir::UnsignedOp::none, n, nodes, known_of, bits_of,
                                   fast)) {
      bits_at[id] = fast;
      known_at[id] = 1;
      continue;
    }
    std::optional<uint64_t> v;
    switch (n.op) {
      case SymOp::constant: v = n.value; break;
      case SymOp::param:
        if (n.value < launch.scalar_bits.size()) v = launch.scalar_bits[n.value];
        break;
      case SymOp::thread_id: v = at[n.value % 3]; break;
      case SymOp::block_id: v = at[3 + n.value % 3]; break;
      case SymOp::block_dim: v = launch.block[n.value % 3]; break;
      case SymOp::grid_dim: v = launch.grid[n.value % 3]; break;
      case SymOp::dynamic_shared_bytes: v = launch.dynamic_shared_bytes; break;
      case SymOp::opaque: break;
      case SymOp::loop: {
        if (n.value >= facts.loops.size()) break;
        const ir::LoopFact& l = facts.loops[n.value];
        const bool induction = l.kind == ir::LoopFact::Kind::induction;
        // Bounds placed at or after the variable are not in its cone (unknown here).
        if (l.lo >= id || (l.kind != ir::LoopFact::Kind::shrinking && (l.hi >= id || l.step >= id)) ||
            (induction && l.offset >= id))
          break;
        const auto lo = value(l.lo);
        if (!lo) break;
        if (l.kind == ir::LoopFact::Kind::shrinking) {
          // Its value before the loop: within its bounds [0, lo] only when not negative.
          if (ir::value_of(n.type, *lo) >= 0) v = *lo & ir::sym_mask(n.type);
          break;
        }
        const auto hi = value(l.hi), step = value(l.step);
        const auto offset = induction ? value(l.offset) : std::optional<uint64_t>(0);
        if (!hi || !step || !offset) break;
        if (auto first = ir::loop_pass_value(l, n.type, *lo, *hi, *step, *offset, false)) v = ir::bits_of(n.type, *first);
        break;
      }
      default: v = ir::evaluate_sym_node(n, nodes[n.a].type, known_of, bits_of);
    }
    known_at[id] = v.has_value();
    if (v) bits_at[id] = *v;
  }
}

}  // namespace

namespace {

/// Whether `launch` gives every scalar the facts read (SitePlan::params: a plan with cones).
bool every_scalar_known(const internal::SitePlan& plan, const MemoryLaunch& launch) {
  for (uint32_t p : plan.params)
    if (p >= launch.scalar_bits.size() || !launch.scalar_bits[p]) return false;
  return true;
}

}  // namespace

bool internal::envelope_reachable(const ir::AccessFacts& facts, const SitePlan& plan, const PathGroup& group,
                                  const MemoryLaunch& launch, ConeValues& values) {
  if (group.solve_first == group.solve_end) return false;
  // With every scalar known, an index that reads no loop variable (nor an opaque value) is computed
  // by any thread: only the path and the other indices are evaluated (the short cone).
  const bool known_scalars = every_scalar_known(plan, launch);
  const uint32_t first = known_scalars ? group.solve_first : group.solve_short;
  const uint32_t end = known_scalars ? group.solve_short : group.solve_end;
  const std::span<const uint32_t> cone = std::span(plan.cones).subspan(first, end - first);
  // A thread that has just evaluated the group before's cone of the same kind at this launch holds
  // the values of their common nodes: it evaluates the rest (the delta cone) only.
  const uint32_t number = group.number;
  const std::span<const uint32_t> delta = group.delta
                                              ? std::span(plan.cones)
                                                    .subspan(known_scalars ? group.delta_first : group.delta_short,
                                                             known_scalars ? group.delta_short - group.delta_first
                                                                           : group.delta_end - group.delta_short)
                                              : cone;
  const std::array<uint64_t, 6> extent{launch.block[0], launch.block[1], launch.block[2],
                                       launch.grid[0], launch.grid[1], launch.grid[2]};
  // The first thread, the second, the middle one and the last of each dimension: guards such as
  // `i < n`, `x > 0 && x < width - 1` or `lane_id == 0` hold for one of them.
  for (int pick = 0; pick < ConeValues::kThreads; ++pick) {
    std::array<uint64_t, 6> at{};
    for (unsigned c = 0; c < 6; ++c) {
      const uint64_t e = std::max<uint64_t>(extent[c], 1);
      at[c] = pick == 0 ? 0 : pick == 1 ? std::min<uint64_t>(1, e - 1) : pick == 2 ? e / 2 : e - 1;
    }
    const bool after_previous = group.delta && values.walked_launch[pick] == values.launch &&
                                values.walked[pick] == number && values.walked_short[pick] == known_scalars;
    evaluate_cone(facts, plan, launch, at, after_previous ? delta : cone, values, pick);
    values.walked[pick] = number + 1;
    values.walked_launch[pick] = values.launch;
    values.walked_short[pick] = known_scalars;
    const std::vector<uint64_t>& bits = values.bits[pick];
    const std::vector<uint8_t>& known = values.known[pick];
    auto value = [&](uint32_t id) { return known[id] ? std::optional<uint64_t>(bits[id]) : std::nullopt; };
    const auto taken = value(group.path);
    if (!taken || !(*taken & 1)) continue;
    // Each site's index computed, and its width limit (if any) a positive number of bytes: then
    // every sound narrowing keeps that limit, so it finds the site reachable.
    bool computed = true;
    for (uint32_t k = group.first; k < group.end && computed; ++k) {
      const uint32_t site = plan.by_path[k];
      computed = (known_scalars && plan.index_total[site]) || known[facts.sites[site].index];
    }
    // The limits in a pass of their own, over limited groups only (in the loop above they cost
    // sgemm, which has none, 0.6 %).
    for (uint32_t k = group.first; k < group.end && computed && group.limited; ++k)
      if (const int64_t limit = facts.sites[plan.by_path[k]].width_limit; limit >= 0)
        computed = known[limit] && ir::value_of(facts.nodes[limit].type, bits[limit]) > 0;
    if (computed) return true;
  }
  return false;
}

bool internal::guard_false(const ir::AccessFacts& facts, const SitePlan& plan, const PathGroup& group,
                           const MemoryLaunch& launch, ConeValues& values) {
  if (group.guard_first == group.guard_end) return false;
  // Uniform nodes read no thread or block id: the first thread's arrays hold them for every thread.
  evaluate_cone(facts, plan, launch, {},
                std::span(plan.cones).subspan(group.guard_cone, group.guard_cone_end - group.guard_cone), values, 0);
  const std::vector<uint8_t>& known = values.known[0];
  for (uint32_t k = group.guard_cone; k < group.guard_cone_end; ++k)
    if (!known[plan.cones[k]]) return false;
  for (uint32_t k = group.guard_first; k < group.guard_end; ++k)
    if (!(values.bits[0][plan.guards[k]] & 1)) return true;
  return false;
}

std::string_view site_outcome_name(SiteOutcome o) {
  switch (o) {
    case SiteOutcome::proven: return "proven";
    case SiteOutcome::unreachable: return "unreachable";
    case SiteOutcome::out_of_bounds: return "out_of_bounds";
    case SiteOutcome::unproven: return "unproven";
  }
  return "?";
}

double MemoryVerdict::coverage_percent() const {
  const uint32_t all = sites + unmodelled;
  return all == 0 ? 100.0 : 100.0 * (proven + unreachable) / all;
}

namespace {

/// evaluate_accesses; with `owner` (the shared facts), the race part through their memo.
/// A launch's bounds and plan evaluated without the kernel's memo (a one-off evaluation, or the memo
/// in use by another launch).
struct Scratch {
  ir::NodeBounds bounds;
  internal::SitePlan plan;
};
Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

MemoryVerdict evaluate(const ir::AccessFacts& facts, const MemoryLaunch& launch,
                       const std::shared_ptr<const ir::AccessFacts>* owner) {
  MemoryVerdict verdict;
  verdict.analysed = true;
  verdict.complete = facts.complete;
  verdict.unmodelled = facts.unmodelled;
  verdict.sites = static_cast<uint32_t>(facts.sites.size());
  if (facts.sites.empty()) return verdict;
  for (unsigned k = 0; k < 3; ++k)
    if (launch.grid[k] == 0 || launch.block[k] == 0) {  // no thread runs: geometry checks report it
      verdict.unreachable = verdict.sites;
      return verdict;
    }
  ir::LeafValues leaves{launch.grid, launch.block, launch.dynamic_shared_bytes, &launch.scalar_bits};
  // The kernel's remembered bounds (through its shared facts) when no other launch of it uses them
  // now; else this thread's.
  std::shared_ptr<internal::BoundsMemo> memo = owner ? internal::bounds_memo(*owner) : nullptr;
  std::unique_lock<std::mutex> memo_lock;
  if (memo) {
    memo_lock = std::unique_lock(memo->mutex, std::try_to_lock);
    if (!memo_lock.owns_lock()) memo = nullptr;
  }
  if (memo && !memo->planned) {
    memo->deps = ir::leaf_dependencies(facts);
    internal::plan_sites(facts, memo->deps, memo->plan, true);
    memo->sites.assign(facts.sites.size(), {});
    memo->envelope.assign(memo->plan.groups.size(), 0);
    memo->guard.assign(memo->plan.groups.size(), 0);
    memo->narrow_needed.assign(memo->plan.groups.size(), 0);
    memo->direct.assign(memo->plan.groups.size(), 0);
    memo->races_searched = internal::shared_races_searched(*owner);
    memo->planned = true;
  }
  // Without the memo, this thread's bounds and plan, which keep their buffers from launch to launch.
  Scratch* scratch = memo ? nullptr : &thread_scratch();
  ir::NodeBounds& bounds = memo ? memo->bounds : scratch->bounds;
  if (!memo) internal::plan_sites(facts, {}, scratch->plan);
  const internal::SitePlan& plan = memo ? memo->plan : scratch->plan;
  // Which launch inputs changed since the memo's launch: only the nodes and path groups that
  // depend on one of them are evaluated again (nothing is reused without a complete earlier launch).
  const bool reuse = memo && memo->valid && !memo->deps.empty();
  uint64_t changed = ~uint64_t{0};
  if (memo) {
    const uint64_t differ = internal::rekey(launch, memo->plan.params, memo->key);
    if (reuse) changed = differ;
    memo->valid = false;
  }
  // The node bounds are brought to this launch when first read: a launch whose groups are all
  // decided by their launch-uniform guards (and that searches no shared races) reads none.
  bool bound = false;
  auto bind_bounds = [&] {
    if (bound) return;
    bound = true;
    if (!memo) return bounds.bind(facts, leaves);
    if (reuse && memo->bound) bounds.rebind(leaves, memo->deps, changed | memo->stale);
    else bounds.bind(facts, leaves);
    memo->bound = true;
    memo->stale = 0;
  };
  // Which leaves each node depends on, computed for the first site that is not proven: the kernel's
  // memo keeps the answer for launches that give every scalar (it is then launch-independent).
  std::optional<Dependencies> own_deps;
  const Dependencies* deps = nullptr;
  auto need_deps = [&] {
    if (deps) return;
    if (memo == nullptr || !every_scalar_known(plan, launch)) {
      own_deps = dependencies(facts, launch);
      deps = &*own_deps;
      return;
    }
    if (!memo->known_deps) memo->known_deps = dependencies(facts, launch);
    deps = &*memo->known_deps;
  };
  std::optional<WitnessSearch> search;
  if (memo) memo->cone_values.next_launch();
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const internal::PathGroup& group = plan.groups[g];
    const uint32_t path = group.path;
    bool remembered = reuse && (group.inputs & changed) == 0;
    // A path one of whose launch-uniform conjuncts is false for this launch: no thread takes it, and
    // its bounds are 0 or empty (guard_false), so every site is unreachable, as below. The last
    // launch's answer holds while the conjuncts' inputs are the same.
    if (memo && !remembered && (!reuse || (group.guard_inputs & changed) != 0))
      memo->guard[g] = internal::guard_false(facts, plan, group, launch, memo->cone_values);
    if (memo && !remembered && memo->guard[g]) {
      for (uint32_t k = group.first; k < group.end; ++k) memo->sites[plan.by_path[k]] = {Interval{0, 0}, {}, {}};
      memo->envelope[g] = 0;
      memo->direct[g] = 0;
      verdict.unreachable += group.end - group.first;
      continue;
    }
    // A remembered group proven by its direct bounds is proven again when they still prove every site
    // against this launch's buffers (the bounds and the thread that takes the path depend only on the
    // inputs that did not change); otherwise it is narrowed (their coarser bounds would otherwise
    // show in its findings).
    if (remembered && memo->direct[g]) {
      bool proven = true;
      for (uint32_t k = group.first; k < group.end && proven; ++k) {
        const uint32_t s = plan.by_path[k];
        proven = outcome_of(facts, facts.sites[s], memo->sites[s], launch) == SiteOutcome::proven;
      }
      if (proven) {
        verdict.proven += group.end - group.first;
        continue;
      }
      remembered = false;
    }
    if (memo) memo->direct[g] = 0;
    // A remembered group not proven by its envelope reads only its remembered sites.
    if (!remembered || memo->envelope[g]) bind_bounds();
    // The envelope (with the kernel's plan): the sites' bounds without the path already keep them
    // inside their arrays and a thread is found that takes the path: every site is proven, as the
    // narrowing would find. A remembered group that was proven so is proven again when its bounds
    // still fit this launch's buffers (a found thread depends only on the inputs that did not change).
    // A path true for every thread needs no narrowing, nor one no thread takes (its sites are
    // unreachable: narrowing only shrinks bounds).
    const Interval taken = bound ? bounds.base()[path] : Interval{};
    const bool plain = taken == Interval{1, 1} || taken == Interval{0, 0} || taken.empty();
    // Whether a thread takes the path (envelope_reachable), once asked.
    std::optional<bool> reachable;
    if (memo && !plain && (!remembered || memo->envelope[g])) {
      if (internal::envelope_in_bounds(facts, plan, group, bounds.base(), launch) &&
          (remembered || *(reachable = internal::envelope_reachable(facts, plan, group, launch, memo->cone_values)))) {
        memo->envelope[g] = 1;
        verdict.proven += group.end - group.first;
        continue;
      }
      remembered = false;  // a remembered group proven by its envelope kept no narrowed bounds
      memo->envelope[g] = 0;
    } else if (memo) {
      if (memo->envelope[g]) remembered = false;
      memo->envelope[g] = 0;
    }
    // The direct bounds under the path (its comparisons' limits, one pass: NodeBounds::direct) prove
    // every site, and a thread takes the path: the narrowing, whose bounds lie inside these, would
    // prove every site too (envelope_in_bounds says why the thread settles reachability).
    const bool try_direct = memo && !remembered && !plain && group.solve_short != group.solve_end &&
                            !memo->narrow_needed[g] && reachable != false;
    if (try_direct) {
      const std::vector<Interval>& direct = bounds.direct(
          std::span(plan.conjuncts).subspan(group.conjunct_first, group.conjunct_end - group.conjunct_first),
          std::span(plan.cones).subspan(group.solve_short, group.solve_end - group.solve_short));
      bool proven = true;
      for (uint32_t k = group.first; k < group.end && proven; ++k) {
        const ir::AccessSite& site = facts.sites[plan.by_path[k]];
        const internal::SiteBounds read{
            direct[path], direct[site.index],
            site.width_limit >= 0 ? direct[static_cast<uint32_t>(site.width_limit)] : Interval{}};
        proven = outcome_of(facts, site, read, launch) == SiteOutcome::proven;
      }
      if (proven &&
          (reachable ? *reachable : internal::envelope_reachable(facts, plan, group, launch, memo->cone_values))) {
        for (uint32_t k = group.first; k < group.end; ++k) {
          const uint32_t s = plan.by_path[k];
          const ir::AccessSite& site = facts.sites[s];
          memo->sites[s] = {direct[path], direct[site.index],
                            site.width_limit >= 0 ? direct[static_cast<uint32_t>(site.width_limit)] : Interval{}};
        }
        memo->direct[g] = 1;
        verdict.proven += group.end - group.first;
        continue;
      }
    }
    const uint32_t proven_before = verdict.proven;
    const std::vector<Interval>* values = nullptr;
    if (!remembered) {
      if (plain) values = &bounds.base();
      else if (plan.has_cones)
        values = &bounds.under(path, group.last,
                               std::span(plan.cones).subspan(group.cone_first, group.cone_rest - group.cone_first),
                               std::span(plan.cones).subspan(group.cone_rest, group.cone_end - group.cone_rest));
      else values = &bounds.under(path, group.last);
    }
    for (uint32_t k = group.first; k < group.end; ++k) {
      const uint32_t s = plan.by_path[k];
      const ir::AccessSite& site = facts.sites[s];
      internal::SiteBounds read;
      if (remembered) {
        read = memo->sites[s];
      } else {
        read.path = (*values)[path];
        read.index = (*values)[site.index];
        if (site.width_limit >= 0) read.limit = (*values)[static_cast<uint32_t>(site.width_limit)];
        if (memo) memo->sites[s] = read;
      }
      const SiteOutcome outcome = outcome_of(facts, site, read, launch);
      if (outcome == SiteOutcome::unreachable) {
        ++verdict.unreachable;
        continue;
      }
      if (outcome == SiteOutcome::proven) {
        ++verdict.proven;
        continue;
      }
      const Interval index = read.index;
      const std::optional<uint64_t> length = array_length(facts, site, launch);
      // A finding: only now its record (with strings) is built; a proven site costs the test above.
      // Findings are few: one allocation holds the first eight.
      if (verdict.findings.capacity() == 0) verdict.findings.reserve(8);
      SiteVerdict v;
      v.site = s;
      v.index_min = index.lo;
      v.index_max = index.hi;
      v.length_bytes = length;
      need_deps();
      if (v.length_bytes && site.witness_exact && !deps->opaque[site.index]) {
        if (!search) search.emplace(facts, launch);
        if (auto w = search->find(site, *v.length_bytes, index)) {
          v.outcome = SiteOutcome::out_of_bounds;
          v.witness = std::move(*w);
          v.index_varies_by_thread = deps->thread[site.index];
          ++verdict.out_of_bounds;
          verdict.findings.push_back(std::move(v));
          continue;
        }
      }
      v.outcome = SiteOutcome::unproven;
      if (!v.length_bytes)
        v.reason = fmt::format("the size of '{}' is not known{}", array_name(facts, site, launch),
                               site.space == ir::Space::global ? " (give the argument: --arg or --elements)" : "");
      else if (deps->opaque[site.index])
        v.reason = "its index depends on a value the analysis does not follow (a load, a shuffle, an atomic's "
                   "result or a floating-point value)";
      else if (deps->unknown[site.index] >= 0 || deps->unknown[site.path] >= 0) {
        const int32_t p = deps->unknown[site.index] >= 0 ? deps->unknown[site.index] : deps->unknown[site.path];
        v.reason = fmt::format("the value of scalar '{}' is not known (give it with --arg)",
                               p < static_cast<int32_t>(launch.names.size()) ? launch.names[p] : std::string_view("?"));
      } else {
        const uint32_t elem = site.element_bytes;
        v.reason = fmt::format(
            "the index lies in {}..{} by the analysis and '{}' holds {} elements, but no thread "
            "was found that leaves it",
            text(index.lo), text(index.hi), array_name(facts, site, launch),
            *v.length_bytes / std::max<uint32_t>(elem, 1));
      }
      ++verdict.unproven;
      verdict.findings.push_back(std::move(v));
    }
    if (try_direct && verdict.proven - proven_before == group.end - group.first) memo->narrow_needed[g] = 1;
  }
  if (memo ? memo->races_searched : !owner || internal::shared_races_searched(*owner)) {
    bind_bounds();
    verdict.races = owner ? internal::remembered_shared_races(*owner, launch, bounds.base())
                          : find_shared_races(facts, launch, nullptr, &bounds.base());
  }
  if (memo) {
    if (!bound && memo->bound) memo->stale |= changed;
    memo->valid = true;
  }
  // Source order, findings of one position in the order found: a sort over (line, column, order
  // found), which needs no std::stable_sort (its std::get_temporary_buffer is deprecated in C++23).
  if (verdict.findings.size() < 2) return verdict;
  std::vector<std::tuple<uint32_t, uint32_t, size_t>> order;
  order.reserve(verdict.findings.size());
  for (size_t i = 0; i < verdict.findings.size(); ++i) {
    const ir::AccessSite& site = facts.sites[verdict.findings[i].site];
    order.emplace_back(site.line, site.column, i);
  }
  if (std::is_sorted(order.begin(), order.end())) return verdict;
  std::sort(order.begin(), order.end());
  std::vector<SiteVerdict> sorted;
  sorted.reserve(order.size());
  for (const auto& [line, column, i] : order) sorted.push_back(std::move(verdict.findings[i]));
  verdict.findings = std::move(sorted);
  return verdict;
}

}  // namespace

MemoryVerdict evaluate_accesses(const ir::AccessFacts& facts, const MemoryLaunch& launch) {
  return evaluate(facts, launch, nullptr);
}

MemoryVerdict internal::evaluate_accesses_remembered(const std::shared_ptr<const ir::AccessFacts>& facts,
                                                     const MemoryLaunch& launch) {
  return evaluate(*facts, launch, &facts);
}

nlohmann::json MemoryVerdict::to_json(const ir::AccessFacts& facts) const {
  nlohmann::json found = nlohmann::json::array();
  for (const SiteVerdict& v : findings) {
    const ir::AccessSite& s = facts.sites[v.site];
    nlohmann::json f{{"outcome", std::string(site_outcome_name(v.outcome))},
                     {"operation", s.operation},
                     {"space", std::string(ir::space_name(s.space))},
                     {"line", s.line},
                     {"column", s.column}};
    if (v.outcome == SiteOutcome::out_of_bounds)
      f["witness"] = {{"thread", v.witness.thread}, {"block", v.witness.block}, {"index", text(v.witness.index)}};
    else
      f["reason"] = v.reason;
    if (v.length_bytes) f["length_bytes"] = *v.length_bytes;
    found.push_back(std::move(f));
  }
  nlohmann::json race_list = nlohmann::json::array();
  for (const SharedRace& r : races)
    race_list.push_back({{"write", facts.sites[r.first_site].operation},
                         {"write_line", facts.sites[r.first_site].line},
                         {"other", facts.sites[r.second_site].operation},
                         {"other_line", facts.sites[r.second_site].line},
                         {"threads", {r.first_thread, r.second_thread}},
                         {"byte", r.byte}});
  return {{"analysed", analysed},   {"complete", complete},         {"sites", sites},
          {"races", race_list},
          {"proven", proven},       {"unreachable", unreachable},   {"out_of_bounds", out_of_bounds},
          {"unproven", unproven},   {"unmodelled", unmodelled},     {"coverage_percent", coverage_percent()},
          {"findings", found}};
}

void report_memory_safety(diag::Diagnostics& out, const ir::AccessFacts& facts, const MemoryVerdict& verdict,
                          const MemoryLaunch& launch, const std::string& kernel, const std::string& file,
                          const MemoryReportOptions& options) {
  auto location_of = [&](const ir::AccessSite& s) { return ir::site_location(s, file); };
  for (const SiteVerdict& v : verdict.findings) {
    const ir::AccessSite& s = facts.sites[v.site];
    // An unproven site is reported only when asked for (most launches with one report nothing).
    if (v.outcome != SiteOutcome::out_of_bounds && !options.require_proof && !options.list_unproven) continue;
    const std::string name = array_name(facts, s, launch);
    const uint32_t elem = std::max<uint32_t>(s.element_bytes, 1);
    const char* verb = s.kind == ir::AccessKind::read ? "reads" : s.kind == ir::AccessKind::write ? "writes" : "updates";
    const char* where = s.space == ir::Space::global ? "buffer" : s.space == ir::Space::shared ? "shared array" : "local array";
    if (v.outcome == SiteOutcome::out_of_bounds) {
      const Witness& w = v.witness;
      std::string loops;
      for (const auto& [loop, value] : w.loops) {
        const std::string& var = facts.loops[loop].name;
        loops += fmt::format(", {} = {}", var.empty() ? "loop variable" : var, text(value));
      }
      const Integer first_byte = w.index * s.stride;
      const uint64_t length = v.length_bytes.value_or(0);
      std::string message = fmt::format(
          "kernel '{}': {} {} {} '{}' out of bounds: thread ({}, {}, {}) of block ({}, {}, {}){} computes {} = {}, "
          "bytes {}..{} of '{}', which holds {} bytes ({} elements of {} bytes)",
          kernel, s.operation, verb, where, name, w.thread[0], w.thread[1], w.thread[2], w.block[0], w.block[1],
          w.block[2], loops, s.index_text.empty() ? "the index" : s.index_text, text(w.index), text(first_byte),
          text(first_byte + static_cast<Integer>(w.bytes) - 1), name, length, length / elem, elem);
      std::string fix;
      const Integer needed_bytes = v.index_max * s.stride + s.width;
      if (w.index < 0)
        fix = fmt::format("the index is negative: guard the access with `if ({} >= 0)` or compute it in an unsigned type",
                          s.index_text);
      else if (s.space == ir::Space::global)
        fix = fmt::format("guard the access (`if ({} < {})`), {}or give '{}' at least {} bytes", s.index_text,
                          length / std::max<uint32_t>(s.stride, 1),
                          v.index_varies_by_thread ? "launch fewer threads, " : "", name, text(needed_bytes));
      else if (s.space == ir::Space::shared && s.array < facts.arrays.size() && facts.arrays[s.array].dynamic)
        fix = fmt::format("launch with at least {} bytes of dynamic shared memory, or guard the access", text(needed_bytes));
      else
        fix = fmt::format("declare '{}' with at least {} elements, or guard the access", name,
                          text((needed_bytes + elem - 1) / elem));
      out.add(diag::Code::access_out_of_bounds, std::move(message), location_of(s), std::move(fix));
    } else if (options.require_proof || options.list_unproven) {
      diag::Diagnostic& d = out.add(diag::Code::access_not_proven,
                                    fmt::format("kernel '{}': {} ({} of {} '{}') is not proven in bounds for this launch: {}",
                                                kernel, s.operation, s.kind == ir::AccessKind::read ? "a read" :
                                                s.kind == ir::AccessKind::write ? "a write" : "an update", where, name,
                                                v.reason),
                                    location_of(s),
                                    options.require_proof ? "guard the access so that its index is provably inside the "
                                                            "array, or launch without --require-proof" : "");
      d.severity = options.require_proof ? diag::Severity::error : diag::Severity::note;
    }
  }
  for (const SharedRace& r : verdict.races) {
    const ir::AccessSite& w = facts.sites[r.first_site];
    const ir::AccessSite& o = facts.sites[r.second_site];
    const std::string name = array_name(facts, w, launch);
    std::string loops;
    for (const auto& [loop, value] : r.loops) {
      const std::string& var = facts.loops[loop].name;
      loops += fmt::format(", {} = {}", var.empty() ? "loop variable" : var, text(value));
    }
    auto where = [](const ir::AccessSite& s) { return s.line ? fmt::format("line {}", s.line) : std::string("the kernel"); };
    diag::Diagnostic& d = out.add(
        diag::Code::shared_memory_race,
        fmt::format("kernel '{}': threads ({}, {}, {}) and ({}, {}, {}) of a block touch byte {} of shared array '{}' "
                    "with no barrier between{}: {} writes it ({}) and {} {} it ({})",
                    kernel, r.first_thread[0], r.first_thread[1], r.first_thread[2], r.second_thread[0],
                    r.second_thread[1], r.second_thread[2], r.byte, name, loops, w.operation, where(w), o.operation,
                    o.kind == ir::AccessKind::read ? "reads" : "writes", where(o)),
        location_of(w), "give each thread its own elements, or put a barrier() between the two accesses");
    if (o.line) d.notes.push_back(fmt::format("{}:{}:{}: the other access: {}", file, o.line, o.column, o.operation));
  }
  if ((options.require_proof || options.list_unproven) && (verdict.unmodelled > 0 || !verdict.complete)) {
    diag::Diagnostic& d = out.add(
        diag::Code::access_not_proven,
        fmt::format("kernel '{}': {}{} not proven: the analysis does not model {}", kernel,
                    verdict.unmodelled > 0 ? fmt::format("{} access{} ", verdict.unmodelled, verdict.unmodelled == 1 ? "" : "es") : "",
                    verdict.complete ? "are" : "and the rest of the kernel (past the analysis's size limit) are",
                    "TMA tiles, wgmma operands and calls nested too deep"),
        {}, options.require_proof ? "launch without --require-proof" : "");
    d.severity = options.require_proof ? diag::Severity::error : diag::Severity::note;
  }
}

}  // namespace ptxgate::validation
