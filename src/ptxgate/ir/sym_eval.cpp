// The IR's integer semantics on concrete values (docs/ir.md "Results of every operation").
#include "ptxgate/ir/sym_eval.hpp"

#include <algorithm>
#include <array>

namespace ptxgate::ir {
namespace {

constexpr unsigned width_of(Type t) { return sym_width(t); }
constexpr uint64_t mask_of(Type t) { return sym_mask(t); }
constexpr bool unsigned_integer(Type t) { return t == Type::u8 || t == Type::u16 || t == Type::u32 || t == Type::u64; }
constexpr bool unsigned_or_bool(Type t) { return unsigned_integer(t) || t == Type::bool_; }

}  // namespace

UnsignedOp unsigned_operation(const std::vector<SymNode>& nodes, uint32_t id) {
  const SymNode& n = nodes[id];
  const unsigned count = sym_operand_count(n.op);
  if (count == 0 || n.a >= nodes.size() || (count > 1 && n.b >= nodes.size()) || (count > 2 && n.c >= nodes.size()))
    return UnsignedOp::none;
  const Type t = n.type, ta = nodes[n.a].type, tb = count > 1 ? nodes[n.b].type : ta;
  auto arithmetic = [&](UnsignedOp u) { return unsigned_integer(t) && ta == t && tb == t ? u : UnsignedOp::none; };
  auto comparison = [&](UnsignedOp u) {
    return t == Type::bool_ && unsigned_or_bool(ta) && tb == ta ? u : UnsignedOp::none;
  };
  auto logical = [&](UnsignedOp u) { return t == Type::bool_ && ta == t && tb == t ? u : UnsignedOp::none; };
  switch (n.op) {
    case SymOp::add: return arithmetic(UnsignedOp::add);
    case SymOp::sub: return arithmetic(UnsignedOp::sub);
    case SymOp::mul: return arithmetic(UnsignedOp::mul);
    case SymOp::div: return arithmetic(UnsignedOp::div);
    case SymOp::rem: return arithmetic(UnsignedOp::rem);
    case SymOp::min: return arithmetic(UnsignedOp::min);
    case SymOp::max: return arithmetic(UnsignedOp::max);
    case SymOp::bit_and: return arithmetic(UnsignedOp::bit_and);
    case SymOp::lt: return comparison(UnsignedOp::lt);
    case SymOp::le: return comparison(UnsignedOp::le);
    case SymOp::gt: return comparison(UnsignedOp::gt);
    case SymOp::ge: return comparison(UnsignedOp::ge);
    case SymOp::eq: return comparison(UnsignedOp::eq);
    case SymOp::ne: return comparison(UnsignedOp::ne);
    case SymOp::logical_and: return logical(UnsignedOp::logical_and);
    case SymOp::logical_or: return logical(UnsignedOp::logical_or);
    case SymOp::logical_not: return logical(UnsignedOp::logical_not);
    case SymOp::cast: return unsigned_or_bool(t) && unsigned_or_bool(ta) ? UnsignedOp::cast : UnsignedOp::none;
    case SymOp::select:
      return unsigned_or_bool(t) && ta == Type::bool_ && tb == t && nodes[n.c].type == t ? UnsignedOp::select
                                                                                         : UnsignedOp::none;
    default: return UnsignedOp::none;
  }
}

std::optional<uint64_t> apply_sym_op_wide(SymOp op, Type type, Type operand, uint64_t a, uint64_t b, uint64_t c) {
  const Integer x = value_of(operand, a), y = value_of(operand, b);
  const unsigned w = width_of(operand);
  auto wrap = [&](Integer v) { return bits_of(type, v); };
  switch (op) {
    case SymOp::add: return wrap(x + y);
    case SymOp::sub: return wrap(x - y);
    case SymOp::mul: {
      // Two 64-bit operands can exceed 128 bits: multiply their bits modulo 2^64, which is the
      // wrapped product in every width.
      const uint64_t product = (a & mask_of(operand)) * (b & mask_of(operand));
      return wrap(value_of(type, product));
    }
    case SymOp::div:
      if (y == 0) return mask_of(type);
      if (y == -1) return wrap(-x);  // MIN / -1 == MIN (the wrapped quotient)
      return wrap(x / y);            // C: truncated toward zero
    case SymOp::rem:
      if (y == 0) return wrap(x);
      if (y == -1) return 0;
      return wrap(x % y);            // C: the sign of x
    case SymOp::shl: return wrap(x << (b & (w - 1)));
    case SymOp::shr: return wrap(x >> (b & (w - 1)));  // arithmetic for signed (x is signed), else logical
    case SymOp::bit_and: return (a & b) & mask_of(type);
    case SymOp::bit_or: return (a | b) & mask_of(type);
    case SymOp::bit_xor: return (a ^ b) & mask_of(type);
    case SymOp::min: return wrap(x < y ? x : y);
    case SymOp::max: return wrap(x > y ? x : y);
    case SymOp::neg: return wrap(-x);
    case SymOp::bit_not: return ~a & mask_of(type);
    case SymOp::eq: return x == y;
    case SymOp::ne: return x != y;
    case SymOp::lt: return x < y;
    case SymOp::le: return x <= y;
    case SymOp::gt: return x > y;
    case SymOp::ge: return x >= y;
    case SymOp::logical_and: return (a & 1) && (b & 1);
    case SymOp::logical_or: return (a & 1) || (b & 1);
    case SymOp::logical_not: return !(a & 1);
    case SymOp::cast: return wrap(x);  // truncates, or extends (sign-extending from signed types)
    case SymOp::select: return (a & 1) ? b : c;
    default: return std::nullopt;
  }
}

void ConcreteNodes::reset(const std::array<uint64_t, 6>& coordinates) {
  coordinates_ = coordinates;
  loop_values_.assign(facts_.loops.size(), std::nullopt);
  values_.assign(facts_.nodes.size(), std::nullopt);
  valid_up_to_ = 0;
}

void ConcreteNodes::set_loop(uint32_t loop, uint64_t bits) {
  if (loop >= loop_values_.size()) return;
  loop_values_[loop] = bits;
  valid_up_to_ = std::min<uint32_t>(valid_up_to_, facts_.loops[loop].variable);
}

std::optional<Integer> loop_pass_value(const LoopFact& l, Type t, uint64_t lo, uint64_t hi, uint64_t step,
                                       uint64_t offset, bool last) {
  const Integer first = value_of(t, lo), end = value_of(t, hi);
  const Integer s = static_cast<Integer>(bits_of(t, static_cast<Integer>(step)));  // the step as unsigned
  Integer at = first;
  if (l.kind == LoopFact::Kind::range) {
    if (first >= end) return std::nullopt;
    if (last && !l.exits_early && s > 0) at = first + (end - 1 - first) / s * s;
  } else {
    const Integer a = value_of(t, offset);
    const Integer bound = l.inclusive ? end - a : end - a - 1;  // the largest value the condition admits
    if (a < 0 || first > bound) return std::nullopt;
    if (last && !l.exits_early && s > 0) at = first + (bound - first) / s * s;
    if (at + a > type_max(t)) return std::nullopt;
  }
  return at;
}

std::optional<Integer> ConcreteNodes::enter_loop(uint32_t loop, bool last) {
  if (loop >= facts_.loops.size()) return std::nullopt;
  const LoopFact& l = facts_.loops[loop];
  if (l.kind == LoopFact::Kind::shrinking) return std::nullopt;
  const Type t = facts_.nodes[l.variable].type;
  auto lo = value(l.lo), hi = value(l.hi), step = value(l.step);
  if (!lo || !hi || !step) return std::nullopt;
  std::optional<uint64_t> offset = 0;
  if (l.kind == LoopFact::Kind::induction) offset = value(l.offset);
  if (!offset) return std::nullopt;
  const auto at = loop_pass_value(l, t, *lo, *hi, *step, *offset, last);
  if (!at) return std::nullopt;
  set_loop(loop, bits_of(t, *at));
  if (*at == value_of(t, *lo))
    for (uint32_t v = 0; v < facts_.loops.size(); ++v)
      if (facts_.loops[v].kind == LoopFact::Kind::shrinking && facts_.loops[v].parent == static_cast<int32_t>(loop))
        if (auto init = value(facts_.loops[v].lo)) set_loop(v, *init);
  return at;
}

std::optional<uint64_t> ConcreteNodes::value(uint32_t id) {
  if (id >= values_.size()) return std::nullopt;
  for (; valid_up_to_ <= id; ++valid_up_to_) values_[valid_up_to_] = compute(valid_up_to_);
  return values_[id];
}

std::optional<uint64_t> ConcreteNodes::compute(uint32_t id) const {
  const SymNode& n = facts_.nodes[id];
  const unsigned c = n.value % 3;
  switch (n.op) {
    case SymOp::constant: return n.value;
    case SymOp::param: return n.value < scalar_bits_.size() ? scalar_bits_[n.value] : std::nullopt;
    case SymOp::thread_id: return coordinates_[c];
    case SymOp::block_id: return coordinates_[3 + c];
    case SymOp::block_dim: return block_[c];
    case SymOp::grid_dim: return grid_[c];
    case SymOp::dynamic_shared_bytes: return dynamic_shared_bytes_;
    case SymOp::loop: return n.value < loop_values_.size() ? loop_values_[n.value] : std::nullopt;
    case SymOp::opaque: return std::nullopt;
    default: break;
  }
  return evaluate_sym_node(
      n, facts_.nodes[n.a].type, [&](uint32_t id) { return values_[id].has_value(); },
      [&](uint32_t id) { return *values_[id]; });
}

std::optional<uint64_t> apply_sym_node(const SymNode& n, Type operand, std::optional<uint64_t> a,
                                       std::optional<uint64_t> b, std::optional<uint64_t> c) {
  // Short circuits decide without the unknown side.
  if (n.op == SymOp::logical_and && ((a && !(*a & 1)) || (b && !(*b & 1)))) return 0;
  if (n.op == SymOp::logical_or && ((a && (*a & 1)) || (b && (*b & 1)))) return 1;
  if (n.op == SymOp::select && a) return (*a & 1) ? b : c;
  if (!a || !b || !c) return std::nullopt;
  return apply_sym_op(n.op, n.type, operand, *a, *b, *c);
}

}  // namespace ptxgate::ir
