// Shared-memory races of one launch: two threads of a block touching the same shared byte between
// the same barriers, at least one writing, found by evaluating every thread of the block exactly,
// after a symbolic step that proves most groups race-free without enumerating a thread.
#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "ptxgate/ir/sym_bounds.hpp"
#include "ptxgate/ir/sym_eval.hpp"
#include "ptxgate/validation/memory_safety.hpp"

namespace ptxgate::validation {
namespace {

/// Who touched a byte first in this epoch: the thread, the site, and for a write its value.
struct Touch {
  uint32_t thread = 0;
  uint32_t site = 0;
  bool write = false;
  std::optional<uint64_t> value;
};

/// The loops around `innermost`, outermost first.
std::vector<uint32_t> chain_of(const ir::AccessFacts& facts, int32_t innermost) {
  std::vector<uint32_t> chain;
  for (int32_t l = innermost; l >= 0 && chain.size() < facts.loops.size(); l = facts.loops[l].parent)
    chain.insert(chain.begin(), static_cast<uint32_t>(l));
  return chain;
}

/// Enters every loop of `chain` at the current thread's first (or last) iteration; false when
/// the thread does not enter one.
bool enter_all(ir::ConcreteNodes& eval, const std::vector<uint32_t>& chain, bool last,
               std::vector<std::pair<uint32_t, ir::Integer>>& values) {
  values.clear();
  for (uint32_t loop : chain) {
    auto v = eval.enter_loop(loop, last);
    if (!v) return false;
    values.emplace_back(loop, *v);
  }
  return true;
}


using ir::Integer;
using ir::Interval;
using ir::SymOp;

/// Per node: 1 when its value may differ between the threads of one block (it depends on a thread
/// id, or on the variable of a loop whose bounds do, or is a variable a loop only shrinks).
std::vector<uint8_t> thread_varying(const ir::AccessFacts& facts) {
  std::vector<uint8_t> varying(facts.nodes.size(), 0);
  // A loop's bounds may come after its variable: repeat until nothing changes (a few rounds).
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t i = 0; i < facts.nodes.size(); ++i) {
      if (varying[i]) continue;
      const ir::SymNode& n = facts.nodes[i];
      uint8_t v = n.op == SymOp::thread_id;
      const unsigned count = ir::sym_operand_count(n.op);
      if (count > 0) v |= varying[n.a];
      if (count > 1) v |= varying[n.b];
      if (count > 2) v |= varying[n.c];
      if (n.op == SymOp::loop && n.value < facts.loops.size()) {
        const ir::LoopFact& l = facts.loops[n.value];
        v |= l.kind == ir::LoopFact::Kind::shrinking || varying[l.lo] || varying[l.hi] || varying[l.step] ||
             (l.kind == ir::LoopFact::Kind::induction && varying[l.offset]);
      }
      if (v) varying[i] = changed = true;
    }
  }
  return varying;
}

/// One unknown of an affine form: a thread coordinate (0 x, 1 y, 2 z), the iteration count of a
/// loop whose start varies by thread, or a thread-dependent node the forms do not look into (an
/// atom: a division, a remainder, a bit operation...), known only to lie within its bounds.
struct Term {
  enum class Kind : uint8_t { thread, iteration, atom };
  Kind kind = Kind::thread;
  uint32_t id = 0;
  Integer coefficient = 0;
  bool operator<(const Term& o) const { return std::pair(kind, id) < std::pair(o.kind, o.id); }
};

/// A node's value for every thread of a block, exactly: constant + sum of coefficient * unknown,
/// terms sorted by unknown, none with a zero coefficient.
struct Form {
  Integer constant = 0;
  std::vector<Term> terms;
};

Form combine(const Form& a, const Form& b, Integer scale_b) {
  Form r{a.constant + scale_b * b.constant, {}};
  size_t i = 0, j = 0;
  while (i < a.terms.size() || j < b.terms.size()) {
    Term t;
    if (j == b.terms.size() || (i < a.terms.size() && a.terms[i] < b.terms[j])) {
      t = a.terms[i++];
    } else if (i == a.terms.size() || b.terms[j] < a.terms[i]) {
      t = b.terms[j++];
      t.coefficient *= scale_b;
    } else {
      t = a.terms[i++];
      t.coefficient += scale_b * b.terms[j++].coefficient;
    }
    if (t.coefficient != 0) r.terms.push_back(t);
  }
  return r;
}

constexpr Integer kLarge = Integer{1} << 60;  ///< coefficients, constants and ranges: products stay below 2^127

/// The symbolic step of the race search: proves, for one pass (every thread at the first or at
/// the last iteration of the loops whose bounds do not vary by thread), that no two different
/// threads of a block touch one element of a group's array with at least one of them writing.
/// Never enumerates threads; answers false whenever it cannot prove it.
class RaceProof {
  using Type = ir::Type;

 public:
  RaceProof(const ir::AccessFacts& facts, const MemoryLaunch& launch, const std::vector<Interval>& bounds)
      : facts_(facts), launch_(launch), bounds_(bounds), varying_(thread_varying(facts)),
        eval_(facts, launch.grid, launch.block, launch.dynamic_shared_bytes, launch.scalar_bits),
        memo_(facts.nodes.size()), done_(facts.nodes.size(), 0) {
    // The forms of nodes that read no loop variable are the same in every pass and group.
    std::vector<uint8_t> loops(facts.nodes.size(), 0);
    for (uint32_t i = 0; i < facts.nodes.size(); ++i) {
      const ir::SymNode& n = facts.nodes[i];
      const unsigned count = ir::sym_operand_count(n.op);
      loops[i] = n.op == SymOp::loop || (count > 0 && loops[n.a]) || (count > 1 && loops[n.b]) || (count > 2 && loops[n.c]);
      if (loops[i]) per_pass_.push_back(i);
    }
  }

  bool excludes(const std::vector<std::pair<uint32_t, uint32_t>>& pairs, const std::vector<uint32_t>& chain, bool last) {
    // The values every thread shares, at block 0 (the block the search evaluates) and this
    // pass's iteration of the loops whose bounds every thread shares.
    eval_.reset({0, 0, 0, 0, 0, 0});
    for (uint32_t loop : chain)
      if (!varying_[facts_.loops[loop].variable] && !eval_.enter_loop(loop, last))
        return true;  // no thread enters the loop: nothing of the group runs in this pass
    chain_ = &chain;
    for (uint32_t id : per_pass_) done_[id] = 0;
    for (const auto& [x, y] : pairs)
      if (!disjoint(facts_.sites[x], facts_.sites[y])) return false;
    return true;
  }

 private:
  /// The range of one unknown; empty when it has none the analysis knows.
  Interval range(const Term& t) const {
    switch (t.kind) {
      case Term::Kind::thread: return {0, static_cast<Integer>(launch_.block[t.id]) - 1};
      case Term::Kind::iteration: return {0, iterations_[t.id]};
      case Term::Kind::atom: return bounds_[t.id];
    }
    return {};
  }

  std::optional<Interval> range(const Form& f) const {
    if (f.constant < -kLarge || f.constant > kLarge) return std::nullopt;
    Interval r{f.constant, f.constant};
    for (const Term& t : f.terms) {
      const Interval u = range(t);
      if (u.empty() || u.lo < -kLarge || u.hi > kLarge || t.coefficient < -kLarge || t.coefficient > kLarge)
        return std::nullopt;
      const Integer a = t.coefficient * u.lo, b = t.coefficient * u.hi;
      r.lo += std::min(a, b);
      r.hi += std::max(a, b);
    }
    return r;
  }

  /// The node's exact form, or nullopt (a value every thread shares but the launch does not give).
  const std::optional<Form>& form(uint32_t id) {
    if (!done_[id]) {
      memo_[id] = compute(id);
      done_[id] = 1;
    }
    return memo_[id];
  }

  std::optional<Form> atom(uint32_t id) const {
    const Interval b = bounds_[id];
    if (b.empty() || b.lo < -kLarge || b.hi > kLarge) return std::nullopt;
    return Form{0, {Term{Term::Kind::atom, id, 1}}};
  }

  std::optional<Integer> shared_value(uint32_t id) {
    if (varying_[id]) return std::nullopt;
    auto v = eval_.value(id);
    if (!v) return std::nullopt;
    return ir::value_of(facts_.nodes[id].type, *v);
  }

  std::optional<Form> compute(uint32_t id) {
    const ir::SymNode& n = facts_.nodes[id];
    if (!varying_[id]) {
      auto v = shared_value(id);
      if (!v) return std::nullopt;
      return Form{*v, {}};
    }
    std::optional<Form> r;
    switch (n.op) {
      case SymOp::thread_id: r = Form{0, {Term{Term::Kind::thread, static_cast<uint32_t>(n.value % 3), 1}}}; break;
      case SymOp::loop: r = loop_form(static_cast<uint32_t>(n.value)); break;
      case SymOp::add: case SymOp::sub: {
        const auto& a = form(n.a);
        const auto& b = form(n.b);
        if (a && b) r = combine(*a, *b, n.op == SymOp::add ? 1 : -1);
        break;
      }
      case SymOp::mul: case SymOp::shl: {
        std::optional<Integer> k;
        uint32_t other = n.a;
        if (n.op == SymOp::shl) {
          if (auto s = shared_value(n.b)) {
            const unsigned bits = static_cast<unsigned>(ir::bits_of(facts_.nodes[n.b].type, *s) & (ir::sym_width(n.type) - 1));
            if (bits < 64) k = Integer{1} << bits;
          }
        } else if (auto x = shared_value(n.b)) {
          k = *x;
        } else if (auto y = shared_value(n.a)) {
          k = *y;
          other = n.b;
        }
        if (k && *k > -kLarge && *k < kLarge)
          if (const auto& f = form(other)) r = combine(Form{}, *f, *k);
        break;
      }
      case SymOp::cast: r = form(n.a); break;
      default: break;
    }
    // Exact only when no thread's value wraps in the node's type: else the node is an atom.
    if (r) {
      auto span = range(*r);
      if (!span || span->lo < ir::type_min(n.type) || span->hi > ir::type_max(n.type)) r.reset();
    }
    return r ? r : atom(id);
  }

  /// A loop around the group whose start varies by thread: its variable is start + step * m for
  /// the iteration count m of that thread (from 0 to what the variable's bounds allow).
  std::optional<Form> loop_form(uint32_t loop) {
    const auto in_chain = std::find(chain_->begin(), chain_->end(), loop) != chain_->end();
    const ir::LoopFact& l = facts_.loops[loop];
    if (!in_chain || l.kind == ir::LoopFact::Kind::shrinking) return std::nullopt;
    const Type t = facts_.nodes[l.variable].type;
    auto step = shared_value(l.step);
    const auto& start = form(l.lo);
    const Interval v = bounds_[l.variable];
    if (!step || !start || v.empty() || v == ir::full_range(t)) return std::nullopt;
    const Integer s = static_cast<Integer>(ir::bits_of(t, *step));  // the step as unsigned
    if (s == 0) return start;
    auto first = range(*start);
    if (!first || s >= kLarge) return std::nullopt;
    if (iterations_.size() < facts_.loops.size()) iterations_.resize(facts_.loops.size());
    iterations_[loop] = std::max<Integer>((v.hi - first->lo) / s, 0);
    return combine(*start, Form{0, {Term{Term::Kind::iteration, loop, 1}}}, s);
  }
  /// One unknown of the difference of two threads' element numbers.
  struct Unknown {
    Integer coefficient;
    Interval range;
    bool thread_difference;  ///< the difference of one coordinate of the two threads
  };

  /// True when no element site `x` touches in one thread meets one site `y` touches in another.
  bool disjoint(const ir::AccessSite& x, const ir::AccessSite& y) {
    const uint32_t e = x.element_bytes;
    if (e == 0 || y.element_bytes != e || x.stride % e || y.stride % e) return false;
    const auto& fx = form(x.index);
    const auto& fy = form(y.index);
    if (!fx || !fy) return false;
    // Element numbers: first_x = sx * fx(thread 1), first_y = sy * fy(thread 2); they meet when
    // first_x - first_y lies in [-(wx - 1), wy - 1] (widths in elements).
    const Integer sx = x.stride / e, sy = y.stride / e;
    const Integer wx = (x.width + e - 1) / e, wy = (y.width + e - 1) / e;
    if (sx == 0 || sy == 0 || wx == 0 || wy == 0) return false;  // every thread at one element, or none
    std::vector<Unknown> unknowns;
    Integer constant = sx * fx->constant - sy * fy->constant;
    // Whether "two different threads" can constrain the unknowns: every coordinate that varies in
    // the block appears in both forms with one coefficient (then some difference is not 0).
    bool distinct = true;
    std::array<bool, 3> seen{};
    size_t i = 0, j = 0;
    while (i < fx->terms.size() || j < fy->terms.size()) {
      const bool take_x = j == fy->terms.size() || (i < fx->terms.size() && !(fy->terms[j] < fx->terms[i]));
      const bool take_y = i == fx->terms.size() || (j < fy->terms.size() && !(fx->terms[i] < fy->terms[j]));
      const Term& t = take_x ? fx->terms[i] : fy->terms[j];
      const Integer cx = take_x ? sx * fx->terms[i].coefficient : 0;
      const Integer cy = take_y ? sy * fy->terms[j].coefficient : 0;
      const Interval r = range(t);
      if (r.empty() || cx < -kLarge || cx > kLarge || cy < -kLarge || cy > kLarge) return false;
      if (cx == cy) {
        unknowns.push_back({cx, {r.lo - r.hi, r.hi - r.lo}, t.kind == Term::Kind::thread});
        if (t.kind == Term::Kind::thread) seen[t.id] = true;
      } else {
        if (cx != 0) unknowns.push_back({cx, r, false});
        if (cy != 0) unknowns.push_back({-cy, r, false});
        if (t.kind == Term::Kind::thread) distinct = false;
      }
      i += take_x;
      j += take_y;
    }
    for (unsigned c = 0; c < 3; ++c)
      if (launch_.block[c] > 1 && !seen[c]) distinct = false;  // two threads may differ there alone
    std::sort(unknowns.begin(), unknowns.end(), [](const Unknown& a, const Unknown& b) {
      return (a.coefficient < 0 ? -a.coefficient : a.coefficient) > (b.coefficient < 0 ? -b.coefficient : b.coefficient);
    });
    // The sums' ranges from each unknown on.
    std::vector<Interval> rest(unknowns.size() + 1, Interval{0, 0});
    for (size_t k = unknowns.size(); k-- > 0;) {
      const Integer a = unknowns[k].coefficient * unknowns[k].range.lo, b = unknowns[k].coefficient * unknowns[k].range.hi;
      rest[k] = {rest[k + 1].lo + std::min(a, b), rest[k + 1].hi + std::max(a, b)};
    }
    int budget = 256;
    return !may_meet(unknowns, rest, 0, -(wx - 1) - constant, wy - 1 - constant, distinct, budget);
  }

  /// Whether the unknowns from `k` on can sum to a value in [lo, hi] (with some thread difference
  /// not 0 while `need_distinct`): each unknown, largest coefficient first, takes the few values
  /// that leave the rest able to reach the window; true (undecided) when they are too many.
  static bool may_meet(const std::vector<Unknown>& u, const std::vector<Interval>& rest, size_t k, Integer lo,
                       Integer hi, bool need_distinct, int& budget) {
    if (hi < rest[k].lo || lo > rest[k].hi) return false;
    if (k == u.size()) return !need_distinct;
    if (--budget < 0) return true;
    const Integer c = u[k].coefficient;
    // c * v must lie in [lo - rest.hi, hi - rest.lo].
    const Integer a = lo - rest[k + 1].hi, b = hi - rest[k + 1].lo;
    auto floor_div = [](Integer p, Integer q) { Integer r = p / q; return (p % q != 0 && ((p < 0) != (q < 0))) ? r - 1 : r; };
    auto ceil_div = [&](Integer p, Integer q) { return -floor_div(-p, q); };
    Integer from = c > 0 ? ceil_div(a, c) : ceil_div(b, c), to = c > 0 ? floor_div(b, c) : floor_div(a, c);
    from = std::max(from, u[k].range.lo);
    to = std::min(to, u[k].range.hi);
    if (from > to) return false;
    if (to - from >= 8) return true;
    for (Integer v = from; v <= to; ++v)
      if (may_meet(u, rest, k + 1, lo - c * v, hi - c * v, need_distinct && !(u[k].thread_difference && v != 0), budget))
        return true;
    return false;
  }

  const ir::AccessFacts& facts_;
  const MemoryLaunch& launch_;
  const std::vector<Interval>& bounds_;
  std::vector<uint8_t> varying_;
  ir::ConcreteNodes eval_;
  const std::vector<uint32_t>* chain_ = nullptr;
  std::vector<std::optional<Form>> memo_;
  std::vector<uint8_t> done_;
  std::vector<uint32_t> per_pass_;  ///< nodes whose form depends on the pass (they read a loop variable)
  std::vector<Integer> iterations_;
};

/// The pairs of sites of a group whose meeting would count as a race: a write and a read, or two
/// writes of integer values (writes of other values never count: their values are not known).
std::vector<std::pair<uint32_t, uint32_t>> conflicting_pairs(const ir::AccessFacts& facts, const std::vector<uint32_t>& sites) {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (size_t i = 0; i < sites.size(); ++i)
    for (size_t j = i; j < sites.size(); ++j) {
      const ir::AccessSite& x = facts.sites[sites[i]];
      const ir::AccessSite& y = facts.sites[sites[j]];
      const bool wx = x.kind == ir::AccessKind::write, wy = y.kind == ir::AccessKind::write;
      if ((wx && wy) ? (x.value >= 0 && y.value >= 0) : (wx || wy)) pairs.emplace_back(sites[i], sites[j]);
    }
  return pairs;
}

}  // namespace

std::vector<SharedRace> find_shared_races(const ir::AccessFacts& facts, const MemoryLaunch& launch,
                                          SharedRaceSearch* search, const std::vector<Interval>* bounds, bool prove) {
  std::vector<SharedRace> races;
  SharedRaceSearch unused;
  SharedRaceSearch& counts = search ? *search : unused;
  const uint64_t threads = launch.block[0] * launch.block[1] * launch.block[2];
  if (threads < 2 || threads > 1024) return races;
  // The accesses that can race, by array, epoch and loop: plain reads and writes of shared arrays
  // whose path the facts follow exactly.
  std::map<std::tuple<uint32_t, uint32_t, int32_t>, std::vector<uint32_t>> groups;
  for (uint32_t i = 0; i < facts.sites.size(); ++i) {
    const ir::AccessSite& s = facts.sites[i];
    if (s.space == ir::Space::shared && s.kind != ir::AccessKind::atomic && s.witness_exact)
      groups[{s.array, s.epoch, s.loop}].push_back(i);
  }
  ir::ConcreteNodes eval(facts, launch.grid, launch.block, launch.dynamic_shared_bytes, launch.scalar_bits);
  std::optional<ir::NodeBounds> own_bounds;
  std::optional<RaceProof> proof;
  std::vector<std::pair<uint32_t, ir::Integer>> loop_values;
  for (const auto& [key, sites] : groups) {
    bool writes = false;
    for (uint32_t s : sites) writes |= facts.sites[s].kind == ir::AccessKind::write;
    if (!writes) continue;
    ++counts.groups;
    const auto pairs = conflicting_pairs(facts, sites);
    if (prove && pairs.empty()) {
      ++counts.no_conflict;
      continue;
    }
    const std::vector<uint32_t> chain = chain_of(facts, std::get<2>(key));
    if (prove && !proof) {
      if (!bounds) bounds = &own_bounds.emplace(facts, ir::LeafValues{launch.grid, launch.block, launch.dynamic_shared_bytes, &launch.scalar_bits}).base();
      proof.emplace(facts, launch, *bounds);
    }
    bool found = false;
    for (int last = 0; last < (chain.empty() ? 1 : 2) && !found; ++last) {
      if (prove && proof->excludes(pairs, chain, last != 0)) {
        ++counts.proven;
        continue;
      }
      ++counts.enumerated;
      std::unordered_map<uint64_t, Touch> touched;
      for (uint32_t t = 0; t < threads && !found; ++t) {
        const std::array<uint64_t, 6> at{t % launch.block[0], t / launch.block[0] % launch.block[1],
                                         t / (launch.block[0] * launch.block[1]), 0, 0, 0};
        eval.reset(at);
        if (!enter_all(eval, chain, last != 0, loop_values)) continue;
        for (uint32_t s : sites) {
          const ir::AccessSite& site = facts.sites[s];
          auto path = eval.value(site.path);
          auto index = eval.value(site.index);
          if (!path || !(*path & 1) || !index) continue;
          uint64_t width = site.width;
          if (site.width_limit >= 0) {
            auto limit = eval.value(static_cast<uint32_t>(site.width_limit));
            if (!limit) continue;
            width = std::min<uint64_t>(width, *limit);
          }
          const ir::Integer first = ir::value_of(facts.nodes[site.index].type, *index) * site.stride;
          if (first < 0) continue;  // out of bounds: PG3801's to report
          const bool write = site.kind == ir::AccessKind::write;
          std::optional<uint64_t> value = write && site.value >= 0 ? eval.value(static_cast<uint32_t>(site.value)) : std::nullopt;
          for (uint64_t b = static_cast<uint64_t>(first); b < static_cast<uint64_t>(first) + width; b += site.element_bytes) {
            auto [it, inserted] = touched.try_emplace(b, Touch{t, s, write, value});
            if (inserted) continue;
            Touch& other = it->second;
            if (other.thread == t) {
              if (write && !other.write) other = Touch{t, s, write, value};
              continue;
            }
            if (!write && !other.write) continue;
            // Two writes race when they may store different values: only known, different integers count.
            if (write && other.write && !(value && other.value && *value != *other.value)) continue;
            SharedRace r;
            const bool this_first = write && !other.write;
            r.first_site = this_first ? s : other.site;
            r.second_site = this_first ? other.site : s;
            auto coords = [&](uint32_t linear) {
              return std::array<uint64_t, 3>{linear % launch.block[0], linear / launch.block[0] % launch.block[1],
                                             linear / (launch.block[0] * launch.block[1])};
            };
            r.first_thread = coords(this_first ? t : other.thread);
            r.second_thread = coords(this_first ? other.thread : t);
            r.loops = loop_values;
            r.byte = b;
            races.push_back(std::move(r));
            found = true;
            break;
          }
          if (found) break;
        }
      }
    }
  }
  return races;
}

}  // namespace ptxgate::validation
