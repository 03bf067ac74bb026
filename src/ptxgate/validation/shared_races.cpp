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
#include "ptxgate/validation/internal/shared_races.hpp"
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
/// Never enumerates threads; answers false whenever it cannot prove it. With a trace, it records
/// every launch value it read (internal::ProofTrace), so that holds() can tell later whether the
/// same proof serves another launch.
class RaceProof {
  using Type = ir::Type;

 public:
  /// RaceProof's buffers, which a thread keeps from launch to launch (once they are large enough,
  /// a launch allocates nothing for them).
  struct Scratch {
    std::vector<std::optional<uint64_t>> values;
    std::vector<uint32_t> seen;
    uint32_t generation = 1;
    std::vector<uint32_t> launch_seen;  ///< per node that reads no loop variable: == launch, computed
    uint32_t launch = 0;
    std::vector<std::optional<uint64_t>> loop_values;
    std::vector<uint32_t> stack;
    std::vector<std::optional<Form>> memo;
    std::vector<uint8_t> done, stamp;
    std::vector<Integer> iterations;
  };

  RaceProof(const ir::AccessFacts& facts, const internal::RacePlan& plan, const MemoryLaunch& launch,
            const std::vector<Interval>& bounds, Scratch& scratch)
      : facts_(facts),
        plan_(plan),
        launch_(launch),
        bounds_(bounds),
        values_(scratch.values),
        seen_(scratch.seen),
        generation_(scratch.generation),
        launch_seen_(scratch.launch_seen),
        launch_generation_(scratch.launch),
        loop_values_(scratch.loop_values),
        stack_(scratch.stack),
        memo_(scratch.memo),
        done_(scratch.done),
        iterations_(scratch.iterations),
        stamp_(scratch.stamp) {
    const size_t n = facts.nodes.size(), loops = facts.loops.size();
    if (values_.size() < n) values_.resize(n);
    if (seen_.size() < n) seen_.resize(n, 0);
    if (launch_seen_.size() < n) launch_seen_.resize(n, 0);
    // A new launch: the values of nodes that read no loop variable are computed again once.
    if (++launch_generation_ == 0) {
      std::fill(launch_seen_.begin(), launch_seen_.end(), 0);
      launch_generation_ = 1;
    }
    if (loop_values_.size() < loops) loop_values_.resize(loops);
    if (iterations_.size() < loops) iterations_.resize(loops);
  }

  /// Starts a pass: the values every thread shares, at block 0 (the block the search evaluates) and
  /// this pass's iteration of the loops of `chain` whose bounds every thread shares. False when no
  /// thread enters one of them: nothing of the group runs in this pass.
  bool enter(const std::vector<uint32_t>& chain, bool last) {
    // The pass of the group before (groups of one loop share it): its values stay valid.
    if (chain_ && *chain_ == chain && last == last_) return entered_;
    chain_ = &chain;
    last_ = last;
    entered_ = enter_loops(chain, last);
    return entered_;
  }

 private:
  bool enter_loops(const std::vector<uint32_t>& chain, bool last) {
    std::fill(loop_values_.begin(), loop_values_.begin() + static_cast<std::ptrdiff_t>(facts_.loops.size()), std::nullopt);
    next_generation();
    for (uint32_t loop : chain) {
      const ir::LoopFact& l = facts_.loops[loop];
      if (plan_.varying[l.variable] || l.kind == ir::LoopFact::Kind::shrinking) continue;
      const auto lo = uniform(l.lo), hi = uniform(l.hi), step = uniform(l.step);
      const auto offset = l.kind == ir::LoopFact::Kind::induction ? uniform(l.offset) : std::optional<uint64_t>(0);
      if (!lo || !hi || !step || !offset) return false;
      const ir::Type t = facts_.nodes[l.variable].type;
      const auto at = ir::loop_pass_value(l, t, *lo, *hi, *step, *offset, last);
      if (!at) return false;
      loop_values_[loop] = ir::bits_of(t, *at);
      next_generation();  // what was computed before may read the variable
    }
    return true;
  }

 public:

  /// Whether the proof `t` recorded holds for this launch at the entered pass.
  bool holds(const internal::ProofTrace& t) {
    if (t.block != launch_.block) return false;
    // The values' nodes in one ascending pass (what uniform() would reach from each value, without
    // its stack).
    for (uint32_t id : t.evaluation)
      if (!computed(id)) compute_uniform(id);
    for (const auto& [id, v] : t.values)
      if (shared_value(id) != v) return false;
    for (uint32_t id : t.bounded)
      if (bounds_[id] == ir::full_range(facts_.nodes[id].type)) return false;
    for (const auto& [id, r] : t.ranges) {
      const Interval b = bounds_[id];
      if (t.exact_ranges ? b != r : (b.empty() || b.lo < r.lo || b.hi > r.hi)) return false;
    }
    return true;
  }

  /// Fills `t.evaluation` (a trace excludes() made): the nodes uniform() reads for its values.
  void prepare(internal::ProofTrace& t) const {
    std::vector<uint8_t> seen(facts_.nodes.size(), 0);
    std::vector<uint32_t> pending;
    for (const auto& [id, v] : t.values)
      if (id < facts_.nodes.size() && !plan_.varying[id]) pending.push_back(id);
    while (!pending.empty()) {
      const uint32_t x = pending.back();
      pending.pop_back();
      if (seen[x]) continue;
      seen[x] = 1;
      t.evaluation.push_back(x);
      const ir::SymNode& n = facts_.nodes[x];
      const unsigned count = ir::sym_operand_count(n.op);
      const uint32_t operands[3] = {n.a, n.b, n.c};
      for (unsigned k = 0; k < count; ++k)
        if (!seen[operands[k]]) pending.push_back(operands[k]);
    }
    std::sort(t.evaluation.begin(), t.evaluation.end());
  }

  /// Proves the pairs race-free at the entered pass, first with every iteration count a loop's type
  /// allows (a proof for every trip count), then, where that fails, with this launch's bounds of the
  /// loop variables. `trace`: what the successful attempt read.
  bool excludes(const std::vector<std::pair<uint32_t, uint32_t>>& pairs, internal::ProofTrace* trace) {
    const bool proven = attempt_excludes(pairs, trace);
    // The trace is this call's: what holds() and later passes read is recorded nowhere (the caller's
    // trace may be gone by then).
    trace_ = nullptr;
    return proven;
  }

 private:
  bool attempt_excludes(const std::vector<std::pair<uint32_t, uint32_t>>& pairs, internal::ProofTrace* trace) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      universal_ = attempt == 0;
      used_universal_ = false;
      start(trace);
      bool all = true;
      for (const auto& [x, y] : pairs)
        if (!disjoint(facts_.sites[x], facts_.sites[y])) {
          all = false;
          break;
        }
      if (all) return true;
      if (!used_universal_) return false;  // the second attempt would read the same
    }
    return false;
  }

 private:
  void next_generation() {
    if (++generation_ == 0) {
      std::fill(seen_.begin(), seen_.end(), 0);
      generation_ = 1;
    }
  }

  /// Whether uniform() computed node `id` for this pass: at this generation for a node that reads a
  /// loop variable, else once for the launch (its value is the same at every pass).
  bool computed(uint32_t id) const {
    return plan_.reads_loop[id] ? seen_[id] == generation_ : launch_seen_[id] == launch_generation_;
  }

  /// A node's bits at this pass for every thread of block 0 (a node that does not vary by thread),
  /// computed on demand from only the nodes it reads (ir::ConcreteNodes's values for those nodes).
  std::optional<uint64_t> uniform(uint32_t id) {
    if (computed(id)) return values_[id];
    stack_.assign(1, id);
    while (!stack_.empty()) {
      const uint32_t x = stack_.back();
      if (computed(x)) {
        stack_.pop_back();
        continue;
      }
      const ir::SymNode& n = facts_.nodes[x];
      const unsigned count = ir::sym_operand_count(n.op);
      const uint32_t operands[3] = {n.a, n.b, n.c};
      bool ready = true;
      for (unsigned k = 0; k < count; ++k)
        if (!computed(operands[k])) {
          stack_.push_back(operands[k]);
          ready = false;
        }
      if (!ready) continue;
      stack_.pop_back();
      compute_uniform(x);
    }
    return values_[id];
  }

  /// Node `x`'s value at this pass from its operands' (computed()), marked computed.
  void compute_uniform(uint32_t x) {
    const ir::SymNode& n = facts_.nodes[x];
    const ir::UnsignedOp u = x < plan_.unsigned_ops.size() ? plan_.unsigned_ops[x] : ir::UnsignedOp::none;
    // A node of unsigned operands, all known: its bits in 64-bit arithmetic (apply_sym_op's).
    const auto known = [&](uint32_t o) { return values_[o].has_value(); };
    const auto bits_of = [&](uint32_t o) { return *values_[o]; };
    uint64_t bits = 0;
    if (ir::evaluate_unsigned_node(u, n, facts_.nodes.data(), known, bits_of, bits)) values_[x] = bits;
    else if (ir::sym_operand_count(n.op) == 0) values_[x] = leaf(n);
    else values_[x] = ir::evaluate_sym_node(n, facts_.nodes[n.a].type, known, bits_of);
    if (plan_.reads_loop[x]) seen_[x] = generation_;
    else launch_seen_[x] = launch_generation_;
  }

  /// A leaf's bits in thread 0 of block 0 at this pass.
  std::optional<uint64_t> leaf(const ir::SymNode& n) const {
    const unsigned c = n.value % 3;
    switch (n.op) {
      case SymOp::constant: return n.value;
      case SymOp::param: return n.value < launch_.scalar_bits.size() ? launch_.scalar_bits[n.value] : std::nullopt;
      case SymOp::thread_id: case SymOp::block_id: return 0;
      case SymOp::block_dim: return launch_.block[c];
      case SymOp::grid_dim: return launch_.grid[c];
      case SymOp::dynamic_shared_bytes: return launch_.dynamic_shared_bytes;
      case SymOp::loop: return n.value < loop_values_.size() ? loop_values_[n.value] : std::nullopt;
      default: return std::nullopt;
    }
  }

  /// Forgets the forms of this pass (all of them when recording: each trace holds all it read).
  void start(internal::ProofTrace* trace) {
    trace_ = trace;
    const size_t n = facts_.nodes.size();
    if (!started_ || trace) {
      if (memo_.size() < n) memo_.resize(n);
      if (stamp_.size() < n) stamp_.resize(n);
      done_.assign(n, 0);
      started_ = true;
    } else {
      for (uint32_t id : plan_.per_pass) done_[id] = 0;
    }
    if (trace) {
      *trace = internal::ProofTrace{};
      trace->block = launch_.block;
      std::fill(stamp_.begin(), stamp_.begin() + static_cast<std::ptrdiff_t>(n), 0);
    }
  }

  /// A node's bounds, recorded in the trace.
  Interval bound(uint32_t id) {
    const Interval b = bounds_[id];
    if (trace_ && !(stamp_[id] & kRange)) {
      stamp_[id] |= kRange;
      trace_->ranges.emplace_back(id, b);
      if (b.empty()) trace_->exact_ranges = true;
    }
    return b;
  }
  /// The trace's ranges decided something a narrower range could decide otherwise.
  void not_monotone() {
    if (trace_) trace_->exact_ranges = true;
  }

  /// The range of one unknown; empty when it has none the analysis knows.
  Interval range(const Term& t) {
    switch (t.kind) {
      case Term::Kind::thread: return {0, static_cast<Integer>(launch_.block[t.id]) - 1};
      case Term::Kind::iteration: return {0, iterations_[t.id]};
      case Term::Kind::atom: return bound(t.id);
    }
    return {};
  }

  std::optional<Interval> range(const Form& f) {
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

  std::optional<Form> atom(uint32_t id) {
    const Interval b = bound(id);
    if (b.empty() || b.lo < -kLarge || b.hi > kLarge) {
      not_monotone();
      return std::nullopt;
    }
    return Form{0, {Term{Term::Kind::atom, id, 1}}};
  }

  /// The value every thread shares at this pass (recorded unless it is the same in every launch).
  std::optional<Integer> shared_value(uint32_t id) {
    if (plan_.varying[id]) return std::nullopt;
    auto v = uniform(id);
    std::optional<Integer> r;
    if (v) r = ir::value_of(facts_.nodes[id].type, *v);
    if (trace_ && !plan_.fixed[id] && !(stamp_[id] & kValue)) {
      stamp_[id] |= kValue;
      trace_->values.emplace_back(id, r);
    }
    return r;
  }

  std::optional<Form> compute(uint32_t id) {
    const ir::SymNode& n = facts_.nodes[id];
    if (!plan_.varying[id]) {
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
      if (!span || span->lo < ir::type_min(n.type) || span->hi > ir::type_max(n.type)) {
        r.reset();
        not_monotone();
      }
    }
    return r ? r : atom(id);
  }

  /// A loop around the group whose start varies by thread: its variable is start + step * m for
  /// the iteration count m of that thread, from 0 to what the variable's bounds allow (in the
  /// universal attempt: to what its type allows, for every trip count of every launch).
  std::optional<Form> loop_form(uint32_t loop) {
    const auto in_chain = std::find(chain_->begin(), chain_->end(), loop) != chain_->end();
    const ir::LoopFact& l = facts_.loops[loop];
    if (!in_chain || l.kind == ir::LoopFact::Kind::shrinking) return std::nullopt;
    const Type t = facts_.nodes[l.variable].type;
    auto step = shared_value(l.step);
    const auto& start = form(l.lo);
    if (!step || !start) return std::nullopt;
    // The variable's bounds: not the full range means it never wraps (it is start + step * m).
    Interval v;
    if (universal_) {
      if (bounds_[l.variable] == ir::full_range(t)) {
        bound(l.variable);
        not_monotone();
        return std::nullopt;
      }
      if (trace_) trace_->bounded.push_back(l.variable);
      used_universal_ = true;
      v = {ir::type_min(t), ir::type_max(t)};
    } else {
      v = bound(l.variable);
      if (v.empty() || v == ir::full_range(t)) {
        not_monotone();
        return std::nullopt;
      }
    }
    const Integer s = static_cast<Integer>(ir::bits_of(t, *step));  // the step as unsigned
    if (s == 0) return start;
    auto first = range(*start);
    if (!first) not_monotone();
    if (!first || s >= kLarge) return std::nullopt;
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

  static constexpr uint8_t kRange = 1, kValue = 2;
  const ir::AccessFacts& facts_;
  const internal::RacePlan& plan_;
  const MemoryLaunch& launch_;
  const std::vector<Interval>& bounds_;
  std::vector<std::optional<uint64_t>>& values_;  ///< uniform(): per node, valid where computed()
  std::vector<uint32_t>& seen_;
  uint32_t& generation_;
  std::vector<uint32_t>& launch_seen_;
  uint32_t& launch_generation_;
  std::vector<std::optional<uint64_t>>& loop_values_;  ///< per loop: its variable at this pass (uniform loops entered)
  std::vector<uint32_t>& stack_;
  std::vector<std::optional<Form>>& memo_;
  std::vector<uint8_t>& done_;
  std::vector<Integer>& iterations_;
  std::vector<uint8_t>& stamp_;  ///< per node: what the trace already holds of it (kRange, kValue)
  const std::vector<uint32_t>* chain_ = nullptr;  ///< the pass entered
  bool last_ = false, entered_ = false;
  bool started_ = false;  ///< memo_ and done_ are sized and cleared for these facts
  internal::ProofTrace* trace_ = nullptr;
  bool universal_ = false, used_universal_ = false;
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

namespace internal {

void plan_races(const ir::AccessFacts& facts, RacePlan& plan) {
  plan.facts = &facts;
  plan.groups.clear();
  plan.remembered.clear();
  // The accesses that can race, by array, epoch and loop: plain reads and writes of shared arrays
  // whose path the facts follow exactly; a group without a write has nothing to find.
  std::map<std::tuple<uint32_t, uint32_t, int32_t>, std::vector<uint32_t>> groups;
  for (uint32_t i = 0; i < facts.sites.size(); ++i) {
    const ir::AccessSite& s = facts.sites[i];
    if (s.space == ir::Space::shared && s.kind != ir::AccessKind::atomic && s.witness_exact)
      groups[{s.array, s.epoch, s.loop}].push_back(i);
  }
  for (auto& [key, sites] : groups) {
    bool writes = false;
    for (uint32_t s : sites) writes |= facts.sites[s].kind == ir::AccessKind::write;
    if (!writes) continue;
    RaceGroup g;
    g.pairs = conflicting_pairs(facts, sites);
    g.chain = chain_of(facts, std::get<2>(key));
    g.sites = std::move(sites);
    plan.groups.push_back(std::move(g));
  }
  plan.remembered.resize(plan.groups.size());
  plan.varying = thread_varying(facts);
  // Nodes computed from constants only, and those whose form reads a loop variable.
  const size_t n = facts.nodes.size();
  plan.fixed.assign(n, 0);
  plan.per_pass.clear();
  std::vector<uint8_t>& loops = plan.reads_loop;
  loops.assign(n, 0);
  plan.unsigned_ops.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    plan.unsigned_ops[i] = ir::unsigned_operation(facts.nodes, i);
    const ir::SymNode& x = facts.nodes[i];
    const unsigned count = ir::sym_operand_count(x.op);
    plan.fixed[i] = x.op == SymOp::constant ||
                    (count > 0 && plan.fixed[x.a] && (count < 2 || plan.fixed[x.b]) && (count < 3 || plan.fixed[x.c]));
    loops[i] = x.op == SymOp::loop || (count > 0 && loops[x.a]) || (count > 1 && loops[x.b]) || (count > 2 && loops[x.c]);
    if (loops[i]) plan.per_pass.push_back(i);
  }
}

std::vector<SharedRace> search_shared_races(const ir::AccessFacts& facts, const MemoryLaunch& launch, RacePlan& plan,
                                            bool remember, SharedRaceSearch* search,
                                            const std::vector<Interval>* bounds, bool prove) {
  std::vector<SharedRace> races;
  SharedRaceSearch unused;
  SharedRaceSearch& counts = search ? *search : unused;
  const uint64_t threads = launch.block[0] * launch.block[1] * launch.block[2];
  if (threads < 2 || threads > 1024) return races;
  ir::ConcreteNodes eval(facts, launch.grid, launch.block, launch.dynamic_shared_bytes, launch.scalar_bits);
  std::optional<ir::NodeBounds> own_bounds;
  thread_local RaceProof::Scratch scratch;
  std::optional<RaceProof> proof;
  std::vector<std::pair<uint32_t, ir::Integer>> loop_values;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const RaceGroup& group = plan.groups[g];
    const std::vector<uint32_t>& sites = group.sites;
    const std::vector<uint32_t>& chain = group.chain;
    ++counts.groups;
    if (prove && group.pairs.empty()) {
      ++counts.no_conflict;
      continue;
    }
    if (prove && !proof) {
      if (!bounds) bounds = &own_bounds.emplace(facts, ir::LeafValues{launch.grid, launch.block, launch.dynamic_shared_bytes, &launch.scalar_bits}).base();
      proof.emplace(facts, plan, launch, *bounds, scratch);
    }
    bool found = false;
    for (int last = 0; last < (chain.empty() ? 1 : 2) && !found; ++last) {
      if (prove) {
        if (!proof->enter(chain, last != 0)) {
          ++counts.proven;  // no thread enters a loop around the group: nothing runs in this pass
          continue;
        }
        RacePlan::Remembered* kept = remember ? &plan.remembered[g][last] : nullptr;
        if (kept && std::any_of(kept->proofs.begin(), kept->proofs.end(),
                                [&](const ProofTrace& t) { return proof->holds(t); })) {
          ++counts.proven;
          ++plan.replayed;
          continue;
        }
        ProofTrace trace;
        if (proof->excludes(group.pairs, kept ? &trace : nullptr)) {
          ++counts.proven;
          if (kept) {
            proof->prepare(trace);
            if (kept->proofs.size() < RacePlan::kProofs) {
              kept->proofs.push_back(std::move(trace));
            } else {
              kept->proofs[kept->next] = std::move(trace);
              kept->next = (kept->next + 1) % RacePlan::kProofs;
            }
          }
          continue;
        }
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

}  // namespace internal

std::vector<SharedRace> find_shared_races(const ir::AccessFacts& facts, const MemoryLaunch& launch,
                                          SharedRaceSearch* search, const std::vector<Interval>* bounds, bool prove) {
  internal::RacePlan plan;
  internal::plan_races(facts, plan);
  return internal::search_shared_races(facts, launch, plan, false, search, bounds, prove);
}

}  // namespace ptxgate::validation
