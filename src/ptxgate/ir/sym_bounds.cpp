// Interval bounds of access-fact nodes for one launch, and their narrowing by path conditions.
#include "ptxgate/ir/sym_bounds.hpp"

#include <algorithm>

namespace ptxgate::ir {
namespace {


/// Every type's full range, by the type's number (asked for at every node: a table, not a switch).
constexpr std::array<Interval, 64> kRanges = [] {
  std::array<Interval, 64> r{};
  for (unsigned t = 0; t < r.size(); ++t) r[t] = full_range(static_cast<Type>(t));
  return r;
}();
inline Interval range_of(Type t) { return kRanges[static_cast<uint8_t>(t) & 63]; }
inline const Interval& range_of_ref(Type t) { return kRanges[static_cast<uint8_t>(t) & 63]; }
// The table must cover every type: `& 63` would otherwise alias a new type with an old one's range.
static_assert(static_cast<unsigned>(Type::tensor_map) < kRanges.size(),
              "kRanges (range_of) must have an entry for every ir::Type: enlarge it and its mask");

/// bits_of and value_of through the range table (no switch on the type): a type's mask is the size
/// of its range less one, and a value above its largest is the negative one with its bits.
inline uint64_t bits_in(Type t, Integer v) {
  const Interval& full = range_of_ref(t);
  return static_cast<uint64_t>(static_cast<unsigned __int128>(v)) & static_cast<uint64_t>(full.hi - full.lo);
}
inline Integer value_in(Type t, uint64_t bits) {
  const Interval& full = range_of_ref(t);
  const uint64_t mask = static_cast<uint64_t>(full.hi - full.lo);
  const Integer v = bits & mask;
  return v > full.hi ? v - Integer{mask} - 1 : v;
}

constexpr Integer kInfinity = Integer{1} << 120;
constexpr Integer kSmall = Integer{1} << 62;  ///< products of two magnitudes below this fit in 128 bits

Interval point(Integer v) { return {v, v}; }
Interval hull(Interval a, Interval b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}
Interval meet(Interval a, Interval b) { return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)}; }
Interval unbounded() { return {-kInfinity, kInfinity}; }
const Interval kBool{0, 1};

/// eq .. ge: SymOp keeps the comparisons together.
constexpr bool is_comparison(SymOp op) { return op >= SymOp::eq && op <= SymOp::ge; }

/// The comparison (eq .. ge) that holds when `op` fails.
constexpr SymOp negated_comparison(SymOp op) {
  constexpr SymOp negated[] = {SymOp::ne, SymOp::eq, SymOp::ge, SymOp::gt, SymOp::le, SymOp::lt};
  return negated[static_cast<int>(op) - static_cast<int>(SymOp::eq)];
}

/// What `x != y` says of x when y is a point at an end of x's bounds: x lies past that end. Each
/// such limit goes to `limit` (the lower end's first; both when x is that point: then x is empty).
template <class Limit>
inline void limit_unequal(const Interval& x, const Interval& y, Limit&& limit) {
  if (y.point() && x.lo == y.lo) limit(Interval{x.lo + 1, kInfinity});
  if (y.point() && x.hi == y.lo) limit(Interval{-kInfinity, x.hi - 1});
}
const Interval kNone{};  ///< an operand a node does not have

/// NodeBounds::dirty_'s bits per node: changed in the current re-evaluation pass (or limited: the
/// re-evaluation reads both alike), and limit_ is not the full range (a byte to test instead of
/// two 128-bit bounds). The last three serve the early end of narrowing (NodeBounds::narrowed): in
/// the current pass of constrain(), the node's lower or upper bound was read to compute a limit
/// (or to decide whether to), or the node was the target of narrow() (its bounds then lie in that
/// limit).
constexpr uint8_t kDirty = 1, kLimited = 2, kReadLo = 4, kReadHi = 8, kTarget = 16;
constexpr uint8_t kPassBits = kReadLo | kReadHi | kTarget;
/// Set when a bound that the current pass of constrain() read changes after the read, or the
/// re-evaluation widens a node that pass narrowed: the next pass could then narrow more. Per
/// thread (a NodeBounds object is used by one thread at a time), reset at every pass.
thread_local bool pass_read_changed = false;

/// Whether `now`, replacing `was` at a node with pass bits `flags`, changes what the current pass
/// of constrain() read or lets a bound it narrowed grow.
inline bool changes_pass(uint8_t flags, const Interval& was, const Interval& now) {
  return ((flags & kReadLo) && now.lo != was.lo) || ((flags & kReadHi) && now.hi != was.hi) ||
         ((flags & kTarget) && (now.lo < was.lo || now.hi > was.hi));
}

/// Whether a pass that re-evaluates nodes under a path's limits (NodeBounds::narrowed, direct) must
/// evaluate `n` (with pass flags `flags`; `dirty`: every node's) again: it has a limit, it is a select
/// or a loop variable (their bounds read more than their operands), or an operand changed in this
/// pass. Any other node would compute the value it already holds.
inline bool needs_pass(const SymNode& n, uint8_t flags, const std::vector<uint8_t>& dirty) {
  const unsigned operands = sym_operand_count(n.op);
  return (flags & kLimited) || n.op == SymOp::select || n.op == SymOp::loop ||
         (operands > 0 && (dirty[n.a] & kDirty)) || (operands > 1 && (dirty[n.b] & kDirty)) ||
         (operands > 2 && (dirty[n.c] & kDirty));
}

/// `r` when it lies in the type's range (no operand can wrap), else the whole range.
inline Interval fit(Type t, Interval r) {
  if (r.empty()) return r;
  const Interval full = range_of(t);
  return r.lo >= full.lo && r.hi <= full.hi ? r : full;
}
inline bool fits(Type t, Integer lo, Integer hi) {
  const Interval full = range_of(t);
  return lo >= full.lo && hi <= full.hi;
}

/// Truncating a / b and a % b (b != 0) in 64 bits when both fit, which gives the same result as
/// the 128-bit operation and avoids its library call.
inline bool in64(Integer v) { return v >= INT64_MIN && v <= INT64_MAX; }
inline Integer quotient(Integer a, Integer b) {
  if (in64(a) && in64(b) && !(a == INT64_MIN && b == -1)) return static_cast<int64_t>(a) / static_cast<int64_t>(b);
  return a / b;
}
inline Integer remainder(Integer a, Integer b) {
  if (in64(a) && in64(b) && b != -1) return static_cast<int64_t>(a) % static_cast<int64_t>(b);
  return a % b;
}
bool small(Interval a) { return a.lo > -kSmall && a.hi < kSmall; }

Integer floor_div(Integer a, Integer b) {  // b > 0
  Integer q = quotient(a, b);
  if ((remainder(a, b) != 0) && (a < 0)) --q;
  return q;
}
Integer ceil_div(Integer a, Integer b) { return -floor_div(-a, b); }  // b > 0

/// Truncating division over intervals of one sign of divisor (d excludes 0).
Interval divide(Interval a, Interval d) {
  const Integer c[4] = {quotient(a.lo, d.lo), quotient(a.lo, d.hi), quotient(a.hi, d.lo), quotient(a.hi, d.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

/// The smallest 2^k - 1 at or above v (v >= 0).
Integer all_ones_above(Integer v) {
  Integer m = 0;
  while (m < v) m = (m << 1) | 1;
  return m;
}

/// An operation's bounds from its operands' (not for leaves; NodeBounds::apply), the operands by
/// reference: forward() hands them over from the bounds vector without copies.
[[gnu::always_inline]] inline Interval operate(const std::vector<SymNode>& nodes, const SymNode& n, const Interval& a,
                                               const Interval& b, const Interval& c) {
  const Type t = n.type;
  const unsigned count = sym_operand_count(n.op);
  if (a.empty() || (count > 1 && b.empty()) || (count > 2 && c.empty())) return {};
  if (a.point() && (count < 2 || b.point()) && (count < 3 || c.point())) {
    const Type operand = nodes[n.a].type;
    const Type second = count > 1 ? nodes[n.b].type : operand;
    auto r = apply_sym_op(n.op, t, operand, bits_in(operand, a.lo), count > 1 ? bits_in(second, b.lo) : 0,
                          count > 2 ? bits_in(t, c.lo) : 0);
    if (r) return point(value_in(t, *r));
  }
  switch (n.op) {
    case SymOp::add: return fit(t, {a.lo + b.lo, a.hi + b.hi});
    case SymOp::sub: return fit(t, {a.lo - b.hi, a.hi - b.lo});
    case SymOp::mul: {
      if (!small(a) || !small(b)) return range_of(t);
      const Integer p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
      return fit(t, {*std::min_element(p, p + 4), *std::max_element(p, p + 4)});
    }
    case SymOp::div: {
      // A positive constant divisor (the common case): truncation is monotone in the dividend, so
      // the quotients of its ends are divide()'s extremes; in 64 bits where they fit.
      if (b.point() && b.lo >= 1) return fit(t, {quotient(a.lo, b.lo), quotient(a.hi, b.lo)});
      Interval r{};
      if (b.hi >= 1) r = hull(r, divide(a, {std::max<Integer>(b.lo, 1), b.hi}));
      if (b.lo <= -1) r = hull(r, divide(a, {b.lo, std::min<Integer>(b.hi, -1)}));
      if (b.lo <= 0 && b.hi >= 0) r = hull(r, point(value_of(t, bits_of(t, -1))));  // x / 0: all ones
      return fit(t, r);
    }
    case SymOp::rem: {
      const Integer m = std::max(b.hi > 0 ? b.hi : Integer{0}, b.lo < 0 ? -b.lo : Integer{0});  // largest |d|
      Interval r{};
      if (b.lo <= 0 && b.hi >= 0) r = a;  // x % 0 == x
      if (m > 0) {
        if (a.lo >= 0) r = hull(r, {0, std::min(a.hi, m - 1)});
        else if (a.hi <= 0) r = hull(r, {std::max(a.lo, -(m - 1)), 0});
        else r = hull(r, {std::max(a.lo, -(m - 1)), std::min(a.hi, m - 1)});
        // A range within one period of a positive constant divisor keeps its order.
        if (b.point() && b.lo > 0 && a.lo >= 0 && a.hi - a.lo < b.lo) {
          const Integer first = remainder(a.lo, b.lo), second = remainder(a.hi, b.lo);
          if (first <= second) r = {first, second};
        }
      }
      return fit(t, r);
    }
    case SymOp::shl: {
      if (!b.point()) return range_of(t);
      const unsigned k = static_cast<unsigned>(bits_of(nodes[n.b].type, b.lo) & (sym_width(t) - 1));
      if (!small(a) || k > 60) return range_of(t);
      return fit(t, {a.lo * (Integer{1} << k), a.hi * (Integer{1} << k)});
    }
    case SymOp::shr: {
      if (b.point()) {
        const unsigned k = static_cast<unsigned>(bits_of(nodes[n.b].type, b.lo) & (sym_width(t) - 1));
        return {a.lo >> k, a.hi >> k};
      }
      return {std::min<Integer>(a.lo, 0), std::max<Integer>(a.hi, 0)};
    }
    case SymOp::bit_and:
      if (a.lo >= 0 && b.lo >= 0) return {0, std::min(a.hi, b.hi)};
      if (a.lo >= 0) return {0, a.hi};
      if (b.lo >= 0) return {0, b.hi};
      return range_of(t);
    case SymOp::bit_or:
    case SymOp::bit_xor:
      if (a.lo >= 0 && b.lo >= 0)
        return fit(t, {n.op == SymOp::bit_or ? std::max(a.lo, b.lo) : 0, all_ones_above(std::max(a.hi, b.hi))});
      return range_of(t);
    case SymOp::min: return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    case SymOp::max: return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    case SymOp::neg: return fit(t, {-a.hi, -a.lo});
    case SymOp::bit_not:
      return sym_signed(t) ? Interval{-a.hi - 1, -a.lo - 1} : Interval{type_max(t) - a.hi, type_max(t) - a.lo};
    case SymOp::lt: return a.hi < b.lo ? point(1) : a.lo >= b.hi ? point(0) : kBool;
    case SymOp::le: return a.hi <= b.lo ? point(1) : a.lo > b.hi ? point(0) : kBool;
    case SymOp::gt: return a.lo > b.hi ? point(1) : a.hi <= b.lo ? point(0) : kBool;
    case SymOp::ge: return a.lo >= b.hi ? point(1) : a.hi < b.lo ? point(0) : kBool;
    case SymOp::eq: return meet(a, b).empty() ? point(0) : kBool;
    case SymOp::ne: return meet(a, b).empty() ? point(1) : kBool;
    case SymOp::logical_and:
      if (a == point(0) || b == point(0)) return point(0);
      return a == point(1) && b == point(1) ? point(1) : kBool;
    case SymOp::logical_or:
      if (a == point(1) || b == point(1)) return point(1);
      return a == point(0) && b == point(0) ? point(0) : kBool;
    case SymOp::logical_not: return {1 - a.hi, 1 - a.lo};
    case SymOp::cast: return fit(t, a);
    case SymOp::select:
      if (a == point(1)) return b;
      if (a == point(0)) return c;
      return hull(b, c);
    default: return range_of(t);
  }
}

[[gnu::always_inline]] inline bool bounds64(const Interval& v, Bounds64& out) {
  const uint64_t high = static_cast<uint64_t>(static_cast<unsigned __int128>(v.lo) >> 64) |
                        static_cast<uint64_t>(static_cast<unsigned __int128>(v.hi) >> 64);
  out = {static_cast<uint64_t>(v.lo), static_cast<uint64_t>(v.hi)};
  return high == 0 && out.lo <= out.hi;
}
inline Interval interval64(uint64_t lo, uint64_t hi) { return {static_cast<Integer>(lo), static_cast<Integer>(hi)}; }
/// A 64-bit copy that stands for bounds outside [0, 2^64) or empty.
constexpr Bounds64 kNo64{1, 0};

}  // namespace

NodeBounds::NodeBounds(const AccessFacts& facts, const LeafValues& leaves) { bind(facts, leaves); }

namespace {

/// Every node's limit back to the full range (`touched`: the nodes with one).
void reset_limits(std::vector<Interval>& limit, std::vector<uint8_t>& flags, std::vector<uint32_t>& touched) {
  for (uint32_t id : touched) {
    limit[id] = unbounded();
    flags[id] &= static_cast<uint8_t>(~kLimited);
  }
  touched.clear();
}

}  // namespace

void NodeBounds::bind(const AccessFacts& facts, const LeafValues& leaves) {
  facts_ = &facts;
  leaves_ = leaves;
  const size_t n = facts.nodes.size();
  limit_.assign(n, unbounded());
  dirty_.assign(n, 0);
  touched_.clear();
  fast_.resize(n);
  reads_.resize(n);
  rebound_.assign(n, 0);
  epoch_ = 0;
  visit_deps_ = nullptr;
  for (uint32_t i = 0; i < n; ++i) {
    const SymNode& x = facts.nodes[i];
    fast_[i] = static_cast<uint8_t>(general_only_ ? UnsignedOp::none : unsigned_operation(facts.nodes, i));
    const unsigned count = sym_operand_count(x.op);
    const bool always = count == 0 || x.op == SymOp::select || x.a >= n || (count > 1 && x.b >= n) ||
                        (count > 2 && x.c >= n);
    reads_[i] = always ? Reads{} : Reads{x.a, count > 1 ? x.b : x.a, count > 2 ? x.c : x.a, 0};
  }
  // From empty bounds (and their copies, kNo64), which evaluate_base replaces by every node's own.
  base_.assign(n, Interval{});
  base64_.assign(n, kNo64);
  for (uint32_t i = 0; i < n; ++i) evaluate_base(i);
}

void NodeBounds::rebind(const LeafValues& leaves, const std::vector<uint64_t>& deps, uint64_t changed) {
  leaves_ = leaves;
  // No path limits while the base bounds are evaluated (a select's branches read them).
  reset_limits(limit_, dirty_, touched_);
  // A node of plain operation (not a select, which reads its condition's operands, nor a leaf)
  // whose operands all kept their bounds keeps its own: its operation over the same bounds. So
  // only nodes whose operands' bounds changed in this pass (rebound_ at this epoch) are evaluated
  // again. The arrays through locals: a store to one does not make the loop reload the others.
  const size_t n = std::min(base_.size(), std::min(deps.size(), std::min(rebound_.size(), reads_.size())));
  if (++epoch_ == 0) {
    std::fill(rebound_.begin(), rebound_.end(), 0);
    epoch_ = 1;
  }
  const uint32_t epoch = epoch_;
  if (visit_deps_ != deps.data() || visit_size_ != n || visit_changed_ != changed) {
    visit_.clear();
    for (uint32_t i = 0; i < n; ++i)
      if (deps[i] & changed) visit_.push_back(i);
    visit_deps_ = deps.data();
    visit_size_ = n;
    visit_changed_ = changed;
  }
  const Reads* reads = reads_.data();
  uint32_t* rebound = rebound_.data();
  for (const uint32_t i : visit_) {
    const Reads& r = reads[i];
    if (!r.always && rebound[r.a] != epoch && rebound[r.b] != epoch && rebound[r.c] != epoch) continue;
    if (evaluate_base(i)) rebound[i] = epoch;
  }
}

std::vector<uint64_t> leaf_dependencies(const AccessFacts& facts) {
  const size_t n = facts.nodes.size();
  std::vector<uint64_t> deps(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    const SymNode& x = facts.nodes[i];
    uint64_t d = 0;
    switch (x.op) {
      case SymOp::thread_id: case SymOp::block_dim: d = leaf_bit_block(x.value); break;
      case SymOp::block_id: case SymOp::grid_dim: d = leaf_bit_grid(x.value); break;
      case SymOp::dynamic_shared_bytes: d = kLeafBitDynamicShared; break;
      case SymOp::param: d = leaf_bit_param(x.value); break;
      case SymOp::loop: {
        if (x.value >= facts.loops.size()) break;  // no such loop: empty bounds, whatever the launch
        const LoopFact& l = facts.loops[x.value];
        for (uint32_t from : {l.lo, l.hi, l.step, l.offset}) {
          if (from >= i) return {};
          d |= deps[from];
        }
        break;
      }
      default: {
        const unsigned count = sym_operand_count(x.op);
        if ((count > 0 && x.a >= i) || (count > 1 && x.b >= i) || (count > 2 && x.c >= i)) return {};
        if (count > 0) d |= deps[x.a];
        if (count > 1) d |= deps[x.b];
        if (count > 2) d |= deps[x.c];
      }
    }
    deps[i] = d;
  }
  return deps;
}

Interval NodeBounds::loop_bounds(uint32_t id, uint32_t loop, const std::vector<Interval>& values) const {
  if (loop >= facts_->loops.size()) return {};
  const LoopFact& l = facts_->loops[loop];
  const Type t = facts_->nodes[l.variable].type;
  // Bounds placed at or after the node that reads them are not evaluated yet when it is (forward
  // order): reading them would take another launch's entries. The analysis never builds such
  // facts; forged ones get the variable's full range, the same whatever was evaluated before.
  if (l.lo >= id || l.hi >= id || l.step >= id || (l.kind == LoopFact::Kind::induction && l.offset >= id))
    return range_of(facts_->nodes[id].type);
  const Interval lo = values[l.lo], hi = values[l.hi], step = values[l.step];
  if (lo.empty() || hi.empty() || step.empty()) return {};
  if (l.kind == LoopFact::Kind::range) return meet({lo.lo, hi.hi - 1}, range_of(t));
  if (l.kind == LoopFact::Kind::shrinking) return {0, lo.hi};
  // induction: v + a < bound (<=: inclusive) holds when an iteration starts, and v only grows
  // when no increment and no test of the condition can wrap.
  const Interval a = values[l.offset];
  if (a.empty()) return {};
  const Integer last = l.inclusive ? hi.hi - a.lo : hi.hi - a.lo - 1;
  const Integer tmax = type_max(t);
  const bool no_wrap = a.lo >= 0 && step.lo >= 0 && lo.hi + a.hi <= tmax && last + step.hi + a.hi <= tmax;
  if (!no_wrap) return range_of(t);
  return {lo.lo, last};
}

[[gnu::always_inline]] inline Interval NodeBounds::forward(uint32_t id, const std::vector<Interval>& v) const {
  const SymNode& n = facts_->nodes[id];
  const Type t = n.type;
  auto component = [&](const std::array<uint64_t, 3>& dims) { return static_cast<Integer>(dims[n.value % 3]); };
  switch (n.op) {
    case SymOp::constant: return point(value_of(t, n.value));
    case SymOp::param: {
      const auto* bits = leaves_.scalar_bits;
      if (bits && n.value < bits->size() && (*bits)[n.value]) return point(value_of(t, *(*bits)[n.value]));
      return range_of(t);
    }
    case SymOp::thread_id:
      return {0, (leaves_.ranges ? leaves_.ranges->block[n.value % 3].hi : component(leaves_.block)) - 1};
    case SymOp::block_id:
      return {0, (leaves_.ranges ? leaves_.ranges->grid[n.value % 3].hi : component(leaves_.grid)) - 1};
    case SymOp::block_dim: return leaves_.ranges ? leaves_.ranges->block[n.value % 3] : point(component(leaves_.block));
    case SymOp::grid_dim: return leaves_.ranges ? leaves_.ranges->grid[n.value % 3] : point(component(leaves_.grid));
    case SymOp::dynamic_shared_bytes:
      return leaves_.ranges ? leaves_.ranges->dynamic_shared_bytes : point(static_cast<Integer>(leaves_.dynamic_shared_bytes));
    case SymOp::loop: return loop_bounds(id, static_cast<uint32_t>(n.value), v);
    case SymOp::opaque: return range_of(t);
    default: break;
  }
  const unsigned count = sym_operand_count(n.op);
  if (n.op == SymOp::select && !v[n.a].point())
    return hull(branch(n.b, n.a, true, v), branch(n.c, n.a, false, v));
  return operate(facts_->nodes, n, v[n.a], count > 1 ? v[n.b] : kNone, count > 2 ? v[n.c] : kNone);
}

// Each case is operate()'s (and forward()'s for a select) for operands in [0, 2^64) of an unsigned
// type: points through apply_unsigned_op (apply_sym_op's bits), intervals through the same formulas,
// whose results above the type's largest value (a carry out of 64 bits included) are its full
// range, as fit's. `operand(id, bounds)` gives an operand's bounds in 64 bits, or false when they are
// empty or leave [0, 2^64). False for anything else (an operand so, a divisor that is not a positive
// point, a select of an undecided condition): forward()'s.
template <class Operand>
[[gnu::always_inline]] inline bool NodeBounds::forward64(uint32_t id, UnsignedOp op, const Operand& operand,
                                                         Bounds64& out) const {
  const SymNode& n = facts_->nodes[id];
  Bounds64 a, b{0, 0};
  if (!operand(n.a, a)) return false;
  auto set = [&out](uint64_t lo, uint64_t hi) {
    out = {lo, hi};
    return true;
  };
  // Points: the operation's bits (operate's point path).
  if (op < UnsignedOp::select) {
    if (!operand(n.b, b)) return false;
    if (a.point() && b.point()) {
      const uint64_t v = apply_unsigned_op(op, n.type, facts_->nodes[n.a].type, a.lo, b.lo, 0);
      return set(v, v);
    }
  } else if (op > UnsignedOp::select && a.point()) {
    const uint64_t v = apply_unsigned_op(op, n.type, facts_->nodes[n.a].type, a.lo, 0, 0);
    return set(v, v);
  }
  const uint64_t m = sym_detail::kTypeBits[static_cast<uint8_t>(n.type) & 63].mask;
  switch (op) {
    case UnsignedOp::add: {
      uint64_t hi;
      if (__builtin_add_overflow(a.hi, b.hi, &hi) || hi > m) return set(0, m);
      return set(a.lo + b.lo, hi);
    }
    case UnsignedOp::sub:
      if (a.lo < b.hi || a.hi - b.lo > m) return set(0, m);
      return set(a.lo - b.hi, a.hi - b.lo);
    case UnsignedOp::mul: {
      constexpr uint64_t small = uint64_t{1} << 62;  // operate's small()
      uint64_t hi;
      if (a.hi >= small || b.hi >= small || __builtin_mul_overflow(a.hi, b.hi, &hi) || hi > m) return set(0, m);
      return set(a.lo * b.lo, hi);
    }
    case UnsignedOp::div:
    case UnsignedOp::rem: {
      if (!b.point() || b.lo == 0) return false;
      const uint64_t d = b.lo;
      if (op == UnsignedOp::div) {
        const uint64_t hi = a.hi / d;
        return hi > m ? set(0, m) : set(a.lo / d, hi);
      }
      Bounds64 r{0, std::min(a.hi, d - 1)};
      if (a.hi - a.lo < d) {
        const uint64_t first = a.lo % d, second = a.hi % d;
        if (first <= second) r = {first, second};
      }
      return r.hi > m ? set(0, m) : set(r.lo, r.hi);
    }
    case UnsignedOp::min: return set(std::min(a.lo, b.lo), std::min(a.hi, b.hi));
    case UnsignedOp::max: return set(std::max(a.lo, b.lo), std::max(a.hi, b.hi));
    case UnsignedOp::bit_and: return set(0, std::min(a.hi, b.hi));
    case UnsignedOp::lt: return a.hi < b.lo ? set(1, 1) : a.lo >= b.hi ? set(0, 0) : set(0, 1);
    case UnsignedOp::le: return a.hi <= b.lo ? set(1, 1) : a.lo > b.hi ? set(0, 0) : set(0, 1);
    case UnsignedOp::gt: return a.lo > b.hi ? set(1, 1) : a.hi <= b.lo ? set(0, 0) : set(0, 1);
    case UnsignedOp::ge: return a.lo >= b.hi ? set(1, 1) : a.hi < b.lo ? set(0, 0) : set(0, 1);
    case UnsignedOp::eq: return std::max(a.lo, b.lo) > std::min(a.hi, b.hi) ? set(0, 0) : set(0, 1);
    case UnsignedOp::ne: return std::max(a.lo, b.lo) > std::min(a.hi, b.hi) ? set(1, 1) : set(0, 1);
    case UnsignedOp::logical_and:
    case UnsignedOp::logical_or: {
      const uint64_t decides = op == UnsignedOp::logical_and ? 0 : 1;
      if ((a.point() && a.lo == decides) || (b.point() && b.lo == decides)) return set(decides, decides);
      if (a.point() && a.lo == 1 - decides && b.point() && b.lo == 1 - decides) return set(1 - decides, 1 - decides);
      return set(0, 1);
    }
    case UnsignedOp::select: {
      // forward(): an undecided condition takes both branches' narrowing (branch()).
      if (!a.point() || a.lo > 1) return false;
      Bounds64 c;
      if (!operand(n.b, b) || !operand(n.c, c)) return false;
      if (b.point() && c.point()) {
        const uint64_t v = apply_unsigned_op(op, n.type, Type::bool_, a.lo, b.lo, c.lo) & m;
        return set(v, v);
      }
      out = a.lo ? b : c;
      return true;
    }
    case UnsignedOp::cast:
      if (a.hi > m) return set(0, m);
      out = a;
      return true;
    case UnsignedOp::logical_not:
      if (a.hi > 1) return false;
      return set(1 - a.hi, 1 - a.lo);
    default: return false;
  }
}

[[gnu::always_inline]] inline Interval NodeBounds::unsigned_forward(uint32_t id, const std::vector<Interval>& v) const {
  const UnsignedOp op = static_cast<UnsignedOp>(fast_[id]);
  Bounds64 r;
  if (op != UnsignedOp::none && forward64(
                                    id, op, [&v](uint32_t x, Bounds64& b) { return bounds64(v[x], b); }, r))
    return interval64(r.lo, r.hi);
  return forward(id, v);
}

[[gnu::always_inline]] inline bool NodeBounds::evaluate_base(uint32_t id) {
  // From the operands' 64-bit copies where the node's operation has a 64-bit form; the copy of a
  // node whose bounds leave [0, 2^64) (or are empty) says so (lo > hi), and its readers take forward().
  Bounds64* const base64 = base64_.data();
  const UnsignedOp op = static_cast<UnsignedOp>(fast_[id]);
  Bounds64 r;
  if (op != UnsignedOp::none && forward64(
                                    id, op,
                                    [base64](uint32_t x, Bounds64& b) {
                                      b = base64[x];
                                      return b.lo <= b.hi;
                                    },
                                    r)) {
    if (r.lo == base64[id].lo && r.hi == base64[id].hi) return false;
    base64[id] = r;
    base_[id] = interval64(r.lo, r.hi);
    return true;
  }
  const Interval now = forward(id, base_);
  if (now == base_[id]) return false;
  base_[id] = now;
  if (!bounds64(now, base64[id])) base64[id] = kNo64;
  return true;
}

Interval NodeBounds::apply(const SymNode& n, Interval a, Interval b, Interval c) const {
  return operate(facts_->nodes, n, a, b, c);
}

Interval NodeBounds::branch(uint32_t node, uint32_t cond, bool truth, const std::vector<Interval>& v) const {
  const SymNode& c = facts_->nodes[cond];
  if (!is_comparison(c.op)) return v[node];
  const SymOp op = truth ? c.op : negated_comparison(c.op);
  Interval x = v[c.a], y = v[c.b];
  if (x.empty() || y.empty()) return v[node];
  switch (op) {
    case SymOp::lt: x = meet(x, {-kInfinity, y.hi - 1}); y = meet(y, {v[c.a].lo + 1, kInfinity}); break;
    case SymOp::le: x = meet(x, {-kInfinity, y.hi}); y = meet(y, {v[c.a].lo, kInfinity}); break;
    case SymOp::gt: x = meet(x, {y.lo + 1, kInfinity}); y = meet(y, {-kInfinity, v[c.a].hi - 1}); break;
    case SymOp::ge: x = meet(x, {y.lo, kInfinity}); y = meet(y, {-kInfinity, v[c.a].hi}); break;
    case SymOp::eq: x = meet(x, y); y = x; break;
    default: return v[node];
  }
  if (x.empty() || y.empty()) return {};  // the branch is never taken
  return reevaluate(node, c.a, x, c.b, y, v, 6);
}

Interval NodeBounds::reevaluate(uint32_t id, uint32_t x, Interval xb, uint32_t y, Interval yb,
                                const std::vector<Interval>& v, int depth) const {
  if (id == x) return xb;
  if (id == y) return yb;
  const SymNode& n = facts_->nodes[id];
  const unsigned count = sym_operand_count(n.op);
  if (depth == 0 || count == 0 || id < std::min(x, y)) return v[id];
  auto operand = [&](uint32_t o) { return reevaluate(o, x, xb, y, yb, v, depth - 1); };
  return meet(operate(facts_->nodes, n, operand(n.a), count > 1 ? operand(n.b) : kNone, count > 2 ? operand(n.c) : kNone),
              limit_.empty() ? unbounded() : limit_[id]);
}

void NodeBounds::narrow(uint32_t id, Interval to, int depth) {
  Interval& at = current_[id];
  dirty_[id] |= kTarget;
  // `to` holding the bounds leaves them as they are (an empty one too): the common case once a
  // path's conjuncts have narrowed what they can, decided by two comparisons.
  if (to.lo <= at.lo && to.hi >= at.hi) return;
  const Interval now = meet(at, to);
  if (now == at) return;
  if (changes_pass(dirty_[id], at, now)) pass_read_changed = true;
  at = now;
  limit_[id] = meet(limit_[id], to);
  if (!(dirty_[id] & kLimited) && limit_[id] != unbounded()) {
    dirty_[id] |= kLimited;
    touched_.push_back(id);
  }
  changed_ = true;
  if (depth < 12 && !now.empty()) backward(id, depth + 1);
}

void NodeBounds::backward(uint32_t id, int depth) {
  const SymNode& n = facts_->nodes[id];
  const Interval r = current_[id];
  const Type t = n.type;
  const unsigned count = sym_operand_count(n.op);
  if (count == 0) return;
  const Interval a = current_[n.a], b = count > 1 ? current_[n.b] : Interval{};
  if (a.empty() || (count > 1 && b.empty())) return;
  switch (n.op) {
    case SymOp::add:
      if (fits(t, a.lo + b.lo, a.hi + b.hi)) {
        narrow(n.a, {r.lo - b.hi, r.hi - b.lo}, depth);
        narrow(n.b, {r.lo - current_[n.a].hi, r.hi - current_[n.a].lo}, depth);
      }
      break;
    case SymOp::sub:
      if (fits(t, a.lo - b.hi, a.hi - b.lo)) {
        narrow(n.a, {r.lo + b.lo, r.hi + b.hi}, depth);
        narrow(n.b, {current_[n.a].lo - r.hi, current_[n.a].hi - r.lo}, depth);
      }
      break;
    case SymOp::mul:
      if (small(a) && small(b)) {
        if (b.point() && b.lo > 0 && fits(t, a.lo * b.lo, a.hi * b.lo)) narrow(n.a, {ceil_div(r.lo, b.lo), floor_div(r.hi, b.lo)}, depth);
        else if (a.point() && a.lo > 0 && fits(t, a.lo * b.lo, a.lo * b.hi)) narrow(n.b, {ceil_div(r.lo, a.lo), floor_div(r.hi, a.lo)}, depth);
      }
      break;
    case SymOp::div:
      if (b.point() && b.lo > 0 && a.lo >= 0 && small(r)) narrow(n.a, {r.lo * b.lo, r.hi * b.lo + b.lo - 1}, depth);
      break;
    case SymOp::shr:
      if (b.point() && small(r)) {
        const unsigned k = static_cast<unsigned>(bits_of(facts_->nodes[n.b].type, b.lo) & (sym_width(t) - 1));
        if (k <= 60) narrow(n.a, {r.lo * (Integer{1} << k), (r.hi + 1) * (Integer{1} << k) - 1}, depth);
      }
      break;
    case SymOp::cast:
      if (fits(t, a.lo, a.hi)) narrow(n.a, r, depth);
      break;
    case SymOp::min:
      narrow(n.a, {r.lo, kInfinity}, depth);
      narrow(n.b, {r.lo, kInfinity}, depth);
      break;
    case SymOp::max:
      narrow(n.a, {-kInfinity, r.hi}, depth);
      narrow(n.b, {-kInfinity, r.hi}, depth);
      break;
    default:
      break;
  }
}

namespace {

/// The walk of what `path` being true implies: `&&` when true and `||` when false pass their truth
/// to both operands, `!` the opposite to its one; every node reached (those and where the walk stops:
/// comparisons and other values) is passed to `visit(node, truth)` after its operands, depth-first,
/// left before right, to depth 64. constrain() narrows each node it reaches, path_conjuncts() keeps
/// the comparisons: one walk, so that the direct tier's conjuncts are the narrowing's. A path past
/// the node list is not walked; every operand comes before its node (access_facts_from_json checks
/// it), so every id reached from a listed path is listed.
template <class Visit>
[[gnu::always_inline]] inline void walk_implied(const AccessFacts& facts, uint32_t path, Visit& visit) {
  if (path >= facts.nodes.size()) return;
  const SymNode* nodes = facts.nodes.data();
  auto go = [nodes, &visit](auto& self, uint32_t id, bool truth, int depth) -> void {
    if (depth > 64) return;
    const SymNode& n = nodes[id];
    switch (n.op) {
      case SymOp::logical_and:
        if (truth) {
          self(self, n.a, true, depth + 1);
          self(self, n.b, true, depth + 1);
        }
        break;
      case SymOp::logical_or:
        if (!truth) {
          self(self, n.a, false, depth + 1);
          self(self, n.b, false, depth + 1);
        }
        break;
      case SymOp::logical_not: self(self, n.a, !truth, depth + 1); break;
      default: break;
    }
    visit(id, truth);
  };
  go(go, path, true, 0);
}

}  // namespace

void NodeBounds::constrain_node(uint32_t id, bool truth) {
  const SymNode& n = facts_->nodes[id];
  switch (n.op) {
    case SymOp::lt: case SymOp::le: case SymOp::gt: case SymOp::ge: case SymOp::eq: case SymOp::ne: {
      const SymOp op = truth ? n.op : negated_comparison(n.op);
      const Interval a = current_[n.a], b = current_[n.b];
      // What each case reads is marked as it reads it (the pass bits): an empty operand (no
      // narrowing) as fully read, then the one bound of each operand that `<` and the like use.
      auto read = [&](uint32_t node, uint8_t bits) { dirty_[node] |= bits; };
      // The limit a `==` or `!=` puts on an operand it read does not count as a change of what it
      // read (its read marks are set aside for that narrow() only): `!=` moves the end it found
      // equal to a point past that point (the next pass finds no end equal to it: a point it makes
      // of one operand is one away from the other's), `==` leaves both operands at their meet (the
      // next pass meets them again). narrow() changes no other bound of that node (what it narrows
      // further comes before it), and any other change of what they read still counts. Not for a
      // node compared with itself.
      auto own = [&](uint32_t node, const Interval& to) {
        const uint8_t marks = n.a == n.b ? 0 : static_cast<uint8_t>(dirty_[node] & (kReadLo | kReadHi));
        dirty_[node] &= static_cast<uint8_t>(~marks);
        narrow(node, to, 0);
        dirty_[node] |= marks;
      };
      if (a.empty() || b.empty()) {
        read(n.a, kReadLo | kReadHi);
        read(n.b, kReadLo | kReadHi);
        break;
      }
      switch (op) {
        case SymOp::lt:
        case SymOp::le:
          read(n.b, kReadHi);
          read(n.a, kReadLo);
          narrow(n.a, {-kInfinity, op == SymOp::lt ? b.hi - 1 : b.hi}, 0);
          narrow(n.b, {op == SymOp::lt ? a.lo + 1 : a.lo, kInfinity}, 0);
          break;
        case SymOp::gt:
        case SymOp::ge:
          read(n.b, kReadLo);
          read(n.a, kReadHi);
          narrow(n.a, {op == SymOp::gt ? b.lo + 1 : b.lo, kInfinity}, 0);
          narrow(n.b, {-kInfinity, op == SymOp::gt ? a.hi - 1 : a.hi}, 0);
          break;
        case SymOp::eq:
          read(n.b, kReadLo | kReadHi);
          narrow(n.a, b, 0);
          read(n.a, kReadLo | kReadHi);
          own(n.b, current_[n.a]);
          break;
        case SymOp::ne:
          read(n.a, kReadLo | kReadHi);
          read(n.b, kReadLo | kReadHi);
          limit_unequal(a, b, [&](const Interval& to) { own(n.a, to); });
          limit_unequal(b, a, [&](const Interval& to) { own(n.b, to); });
          break;
        default: break;
      }
      break;
    }
    default:
      break;
  }
  narrow(id, point(truth ? 1 : 0), 64);
}

void NodeBounds::constrain(uint32_t path) {
  auto visit = [this](uint32_t id, bool truth) { constrain_node(id, truth); };
  walk_implied(*facts_, path, visit);
}

std::vector<uint32_t> node_cone(const AccessFacts& facts, const std::vector<uint32_t>& targets) {
  const size_t n = facts.nodes.size();
  std::vector<uint8_t> in(n, 0);
  for (uint32_t t : targets)
    if (t < n) in[t] = 1;
  // Operands come before the node: one pass from the last node down reaches every ancestor.
  for (size_t i = n; i-- > 0;) {
    if (!in[i]) continue;
    const SymNode& x = facts.nodes[i];
    const unsigned count = sym_operand_count(x.op);
    auto take = [&](uint32_t from) {
      if (from < i) in[from] = 1;
    };
    if (count > 0) take(x.a);
    if (count > 1) take(x.b);
    if (count > 2) take(x.c);
    if (x.op == SymOp::loop && x.value < facts.loops.size()) {
      const LoopFact& l = facts.loops[x.value];
      for (uint32_t from : {l.lo, l.hi, l.step, l.offset}) take(from);
    }
  }
  std::vector<uint32_t> cone;
  for (uint32_t i = 0; i < n; ++i)
    if (in[i]) cone.push_back(i);
  return cone;
}

const std::vector<Interval>& NodeBounds::under(uint32_t path, uint32_t last, std::span<const uint32_t> path_cone,
                                               std::span<const uint32_t> rest) {
  current_.resize(base_.size());
  for (uint32_t i : rest)
    if (i < base_.size()) current_[i] = base_[i];
  narrowed(path, last, path_cone.data(), path_cone.size());
  // The rest is read only at the end: one evaluation from the final bounds of what it reads (the
  // value the rounds leave in it: a node outside the path's cone has no limit, and each round sets
  // it to its operation over its operands' bounds of that round, or keeps it when they kept theirs).
  // A node of plain operation whose operands all kept their base bounds keeps its own (its
  // operation over the same bounds); selects and loop variables read more and are evaluated.
  auto kept = [&](uint32_t o) { return current_[o] == base_[o]; };
  for (uint32_t i : rest) {
    if (i > last || i >= current_.size()) break;
    const SymNode& n = facts_->nodes[i];
    const unsigned operands = sym_operand_count(n.op);
    if (n.op != SymOp::select && n.op != SymOp::loop && (operands < 1 || kept(n.a)) && (operands < 2 || kept(n.b)) &&
        (operands < 3 || kept(n.c)))
      continue;
    current_[i] = meet(unsigned_forward(i, current_), limit_[i]);
  }
  return current_;
}

std::vector<Conjunct> path_conjuncts(const AccessFacts& facts, uint32_t path) {
  std::vector<Conjunct> out;
  auto visit = [&](uint32_t id, bool truth) {
    const SymNode& n = facts.nodes[id];
    if (is_comparison(n.op) && n.a < id && n.b < id) out.push_back({id, truth});
  };
  walk_implied(facts, path, visit);
  return out;
}

const std::vector<Interval>& NodeBounds::direct(std::span<const Conjunct> conjuncts, std::span<const uint32_t> cone) {
  reset_limits(limit_, dirty_, touched_);
  current_.resize(base_.size());
  const size_t n = std::min(base_.size(), dirty_.size());
  // A limit that holds the base bounds limits nothing: the node's bounds under the others' limits
  // lie inside its base bounds (the operations are monotone in their operands' bounds).
  auto limit = [&](uint32_t id, Interval to) {
    const Interval& at = base_[id];
    if (to.lo <= at.lo && to.hi >= at.hi) return;
    limit_[id] = meet(limit_[id], to);
    if (!(dirty_[id] & kLimited)) {
      dirty_[id] |= kLimited;
      touched_.push_back(id);
    }
  };
  auto now = [&](uint32_t id) { return dirty_[id] & kLimited ? meet(base_[id], limit_[id]) : base_[id]; };
  for (const Conjunct& c : conjuncts) {
    if (c.node >= n) continue;
    const SymNode& x = facts_->nodes[c.node];
    if (x.a >= n || x.b >= n) continue;
    if (!is_comparison(x.op)) continue;
    const SymOp op = c.truth ? x.op : negated_comparison(x.op);
    const Interval a = now(x.a), b = now(x.b);
    if (a.empty() || b.empty()) continue;
    switch (op) {
      case SymOp::lt:
      case SymOp::le: {
        const Integer strict = op == SymOp::lt ? 1 : 0;
        limit(x.a, {-kInfinity, b.hi - strict});
        limit(x.b, {a.lo + strict, kInfinity});
        break;
      }
      case SymOp::gt:
      case SymOp::ge: {
        const Integer strict = op == SymOp::gt ? 1 : 0;
        limit(x.a, {b.lo + strict, kInfinity});
        limit(x.b, {-kInfinity, a.hi - strict});
        break;
      }
      case SymOp::eq:
        limit(x.a, b);
        limit(x.b, a);
        break;
      case SymOp::ne:
        limit_unequal(a, b, [&](const Interval& to) { limit(x.a, to); });
        limit_unequal(b, a, [&](const Interval& to) { limit(x.b, to); });
        break;
      default: break;
    }
  }
  // One pass in node order; a node that needs none (needs_pass) keeps its base bounds.
  for (uint32_t i : cone) {
    if (i >= n) break;
    const bool limited = dirty_[i] & kLimited;
    if (!needs_pass(facts_->nodes[i], dirty_[i], dirty_)) {
      current_[i] = base_[i];
      dirty_[i] = 0;
      continue;
    }
    const Interval v = limited ? meet(unsigned_forward(i, current_), limit_[i]) : unsigned_forward(i, current_);
    dirty_[i] = static_cast<uint8_t>((limited ? kLimited : 0) | (v != base_[i] ? kDirty : 0));
    current_[i] = v;
  }
  return current_;
}

const std::vector<Interval>& NodeBounds::under(uint32_t path, uint32_t last) {
  return narrowed(path, last, nullptr, size_t{last} + 1);
}

const std::vector<Interval>& NodeBounds::narrowed(uint32_t path, uint32_t last, const uint32_t* cone, size_t count) {
  reset_limits(limit_, dirty_, touched_);
  // Only nodes up to `last` (of the cone, when given) are narrowed, re-evaluated and read: a node's
  // operands, its loop's bounds and a select's branches come before it and are in its cone.
  const size_t upto = std::min<size_t>(size_t{last} + 1, base_.size());
  current_.resize(base_.size());
  dirty_.resize(std::max(dirty_.size(), upto));
  auto node_at = [&](size_t k) { return cone ? cone[k] : static_cast<uint32_t>(k); };
  for (size_t k = 0; k < count; ++k) {
    const uint32_t i = node_at(k);
    if (i >= upto) break;
    current_[i] = base_[i];
    dirty_[i] = 0;  // no limit either: reset_limits cleared them
  }
  for (int round = 0; round < 4; ++round) {
    changed_ = false;
    pass_read_changed = false;
    constrain(path);
    if (!changed_) break;
    // Re-evaluates the nodes the narrowing can change (needs_pass).
    for (size_t k = 0; k < count; ++k) {
      const uint32_t i = node_at(k);
      if (i >= upto) break;
      const bool limited = dirty_[i] & kLimited;
      if (!needs_pass(facts_->nodes[i], dirty_[i], dirty_)) {
        dirty_[i] = 0;
        continue;
      }
      // A node without a limit takes its bounds as they are (a node's bounds lie in its type's
      // range, well inside the unbounded limit).
      const Interval now = limited ? meet(unsigned_forward(i, current_), limit_[i]) : unsigned_forward(i, current_);
      if ((dirty_[i] & kPassBits) && changes_pass(dirty_[i], current_[i], now)) pass_read_changed = true;
      dirty_[i] = static_cast<uint8_t>((limited ? kLimited : 0) | (limited || now != current_[i] ? kDirty : 0));
      current_[i] = now;
    }
    // The next pass would read the bounds this one read, and find every bound it narrows already
    // inside the limit: it would change nothing, and narrowing would end there. It ends now.
    if (!pass_read_changed) {
      break;
    }
  }
  return current_;
}

}  // namespace ptxgate::ir
