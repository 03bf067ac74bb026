// The IR's integer semantics on concrete values, for symbolic nodes: constant folding in the access
// analysis and concrete witnesses in the launch's memory-safety check use this one definition.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/types.hpp"

namespace ptxgate::ir {

/// A value as a mathematical integer: 128 bits hold every value of every integer type, and
/// products of two 63-bit magnitudes.
using Integer = __int128;

/// Inline (the bounds, the race search and the concrete evaluation ask these for every node they
/// visit): a value type's width in bits (1 for bool; ir::bit_width answers with this) and whether it
/// is a signed integer.
constexpr unsigned sym_width(Type t) {
  switch (t) {
    case Type::bool_: return 1;
    case Type::i8: case Type::u8: return 8;
    case Type::i16: case Type::u16: case Type::f16: case Type::bf16: return 16;
    case Type::i32: case Type::u32: case Type::f32: return 32;
    case Type::i64: case Type::u64: case Type::f64: return 64;
    default: return 0;
  }
}
constexpr bool sym_signed(Type t) { return t == Type::i32 || t == Type::i64 || t == Type::i8 || t == Type::i16; }
/// The mask of a type's bits.
constexpr uint64_t sym_mask(Type t) {
  const unsigned w = sym_width(t);
  return w >= 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
}

/// The smallest and largest value of an integer type (0 and 1 for bool).
constexpr Integer type_min(Type t) {
  if (t == Type::bool_ || !sym_signed(t)) return 0;
  return -(Integer{1} << (sym_width(t) - 1));
}
constexpr Integer type_max(Type t) {
  if (t == Type::bool_) return 1;
  const unsigned w = sym_width(t);
  return sym_signed(t) ? (Integer{1} << (w - 1)) - 1 : (Integer{1} << w) - 1;
}

/// The mathematical value of `bits` (the type's bits, zero-extended) in type `t`: sign-extended
/// for signed types.
constexpr Integer value_of(Type t, uint64_t bits) {
  bits &= sym_mask(t);
  if (t != Type::bool_ && sym_signed(t)) {
    const unsigned w = sym_width(t);
    if (bits >> (w - 1) & 1) return static_cast<Integer>(bits) - (Integer{1} << w);
  }
  return static_cast<Integer>(bits);
}
/// The bits of `value` wrapped to type `t` (modulo 2^N), zero-extended.
constexpr uint64_t bits_of(Type t, Integer value) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(value)) & sym_mask(t);
}

/// apply_sym_op in mathematical integers (128 bits): its definition, and what it computes for a
/// type without an integer width.
std::optional<uint64_t> apply_sym_op_wide(SymOp op, Type type, Type operand, uint64_t a, uint64_t b, uint64_t c);

namespace sym_detail {
/// A type's width, mask and signedness in one table entry (apply_sym_op asks for them at every
/// evaluated node).
struct TypeBits {
  uint64_t mask = 0;
  uint8_t width = 0;
  bool is_signed = false;
};
constexpr std::array<TypeBits, 64> kTypeBits = [] {
  std::array<TypeBits, 64> r{};
  for (unsigned t = 0; t < r.size(); ++t)
    r[t] = {sym_mask(static_cast<Type>(t)), static_cast<uint8_t>(sym_width(static_cast<Type>(t))),
            sym_signed(static_cast<Type>(t))};
  return r;
}();
static_assert(static_cast<unsigned>(Type::tensor_map) < kTypeBits.size(), "kTypeBits must cover every ir::Type");
}  // namespace sym_detail

/// The result bits of `op` applied to operands of type `operand` (the node's own type, except for
/// comparisons and casts) with bits `a`, `b`, `c`, as docs/ir.md defines it: wrapping + - * <<,
/// x / 0 all ones, x % 0 == x, MIN / -1 == MIN, shift amounts modulo the width, truncating or
/// extending casts. Leaves (constant, param, builtins, loop, opaque) have no operation: nullopt.
/// In 64-bit arithmetic: an operand as its type's value modulo 2^64 (sign-extended from its width
/// for signed types), which gives the same bits as apply_sym_op_wide for every wrapping operation
/// (+ - * << neg and casts are exact modulo 2^64); compares, divides and right shifts in the
/// operand's signedness, where every value of a type of at most 64 bits fits as it is. Inline: the
/// bounds' point path and the envelope's concrete evaluation call it at every node they evaluate.
[[gnu::always_inline]] inline std::optional<uint64_t> apply_sym_op(SymOp op, Type type, Type operand, uint64_t a,
                                                                   uint64_t b, uint64_t c) {
  using sym_detail::kTypeBits;
  const sym_detail::TypeBits in = kTypeBits[static_cast<uint8_t>(operand) & 63];
  const uint64_t out = kTypeBits[static_cast<uint8_t>(type) & 63].mask;
  if (in.width == 0 || kTypeBits[static_cast<uint8_t>(type) & 63].width == 0)
    return apply_sym_op_wide(op, type, operand, a, b, c);
  const unsigned unused = 64u - in.width;
  auto value = [&](uint64_t v) {
    v &= in.mask;
    return in.is_signed ? static_cast<uint64_t>(static_cast<int64_t>(v << unused) >> unused) : v;
  };
  auto less = [&](uint64_t x, uint64_t y) {  // operands as value()
    return in.is_signed ? static_cast<int64_t>(x) < static_cast<int64_t>(y) : x < y;
  };
  switch (op) {
    case SymOp::add: return (value(a) + value(b)) & out;
    case SymOp::sub: return (value(a) - value(b)) & out;
    case SymOp::mul: return ((a & in.mask) * (b & in.mask)) & out;
    case SymOp::div:
    case SymOp::rem: {
      const uint64_t x = value(a), y = value(b);
      if (y == 0) return op == SymOp::div ? out : x & out;
      if (in.is_signed && y == ~uint64_t{0}) return op == SymOp::div ? (uint64_t{0} - x) & out : 0;
      if (!in.is_signed) return (op == SymOp::div ? x / y : x % y) & out;
      const int64_t sx = static_cast<int64_t>(x), sy = static_cast<int64_t>(y);
      return static_cast<uint64_t>(op == SymOp::div ? sx / sy : sx % sy) & out;
    }
    case SymOp::shl: return (value(a) << (b & (in.width - 1u))) & out;
    case SymOp::shr: {
      const uint64_t x = value(a);
      const unsigned k = static_cast<unsigned>(b & (in.width - 1u));
      return (in.is_signed ? static_cast<uint64_t>(static_cast<int64_t>(x) >> k) : x >> k) & out;
    }
    case SymOp::bit_and: return (a & b) & out;
    case SymOp::bit_or: return (a | b) & out;
    case SymOp::bit_xor: return (a ^ b) & out;
    case SymOp::min:
    case SymOp::max: {
      const uint64_t x = value(a), y = value(b);
      return ((less(x, y) == (op == SymOp::min)) ? x : y) & out;
    }
    case SymOp::neg: return (uint64_t{0} - value(a)) & out;
    case SymOp::bit_not: return ~a & out;
    case SymOp::eq: return (a & in.mask) == (b & in.mask);
    case SymOp::ne: return (a & in.mask) != (b & in.mask);
    case SymOp::lt: return less(value(a), value(b));
    case SymOp::le: return !less(value(b), value(a));
    case SymOp::gt: return less(value(b), value(a));
    case SymOp::ge: return !less(value(a), value(b));
    case SymOp::logical_and: return (a & 1) && (b & 1);
    case SymOp::logical_or: return (a & 1) || (b & 1);
    case SymOp::logical_not: return !(a & 1);
    case SymOp::cast: return value(a) & out;
    case SymOp::select: return (a & 1) ? b : c;
    default: return std::nullopt;
  }
}

/// The bits of node `n` (not a leaf) from its operands' bits (`operand`: the first operand's type;
/// nullopt: unknown; operands it does not have: 0): && and || decide without an unknown side when
/// the other decides, and select without the branch it does not take; else apply_sym_op.
std::optional<uint64_t> apply_sym_node(const SymNode& n, Type operand, std::optional<uint64_t> a,
                                       std::optional<uint64_t> b, std::optional<uint64_t> c);

namespace sym_detail {
/// The number of operands of a node of operation `op` (0 for leaves): the definition of
/// sym_operand_count, which reads it from a table.
constexpr unsigned operand_count_of(SymOp op) {
  switch (op) {
    case SymOp::constant: case SymOp::param: case SymOp::thread_id: case SymOp::block_id:
    case SymOp::block_dim: case SymOp::grid_dim: case SymOp::dynamic_shared_bytes: case SymOp::loop:
    case SymOp::opaque:
      return 0;
    case SymOp::neg: case SymOp::bit_not: case SymOp::logical_not: case SymOp::cast:
      return 1;
    case SymOp::select:
      return 3;
    default:
      return 2;
  }
}
constexpr std::array<uint8_t, 64> kOperandCounts = [] {
  std::array<uint8_t, 64> r{};
  for (unsigned op = 0; op < r.size(); ++op) r[op] = static_cast<uint8_t>(operand_count_of(static_cast<SymOp>(op)));
  return r;
}();
static_assert(static_cast<unsigned>(SymOp::select) < kOperandCounts.size(), "kOperandCounts must cover every SymOp");
}  // namespace sym_detail

/// The number of operands of a node of operation `op` (0 for leaves). Inline, and one load from a
/// table: the bounds and the concrete evaluation ask it for every node they visit (against the
/// switch: gemm_bf16_mma's verdict 90 215 -> 89 596 instructions, jacobi's 15 727 -> 15 501).
constexpr unsigned sym_operand_count(SymOp op) { return sym_detail::kOperandCounts[static_cast<uint8_t>(op) & 63]; }

/// The operations a node of unsigned operands has in 64-bit arithmetic (unsigned_operation):
/// binary ones first, then select, then the unary ones. The bounds (NodeBounds) and the concrete
/// evaluation of a cone (the memory verdict's envelope) take them without apply_sym_op's and the
/// interval operations' general checks.
enum class UnsignedOp : uint8_t {
  none,
  add,
  sub,
  mul,
  div,
  rem,
  min,
  max,
  bit_and,
  lt,
  le,
  gt,
  ge,
  eq,
  ne,
  logical_and,
  logical_or,
  select,
  cast,
  logical_not,
};

/// Node `id`'s UnsignedOp: its result and operands are unsigned integers (or bools where the
/// operation takes them) of one type as the operation requires (a comparison's two operands one
/// type, a cast's any unsigned type or bool, a select's branches the node's); none for any other
/// node (leaves, signed or float operands, shifts, or, xor, negations) and for operands past the list.
UnsignedOp unsigned_operation(const std::vector<SymNode>& nodes, uint32_t id);

/// apply_sym_op for a node of UnsignedOp `op` (not none) of type `type` whose first operand has
/// type `operand`: the same bits (its masks, with the signed cases left out).
[[gnu::always_inline]] inline uint64_t apply_unsigned_op(UnsignedOp op, Type type, Type operand, uint64_t a, uint64_t b,
                                                         uint64_t c) {
  const uint64_t m = sym_detail::kTypeBits[static_cast<uint8_t>(type) & 63].mask;
  switch (op) {
    case UnsignedOp::add: return (a + b) & m;
    case UnsignedOp::sub: return (a - b) & m;
    case UnsignedOp::mul: return (a * b) & m;
    case UnsignedOp::div:
    case UnsignedOp::rem: {
      const uint64_t x = a & m, y = b & m;
      if (y == 0) return op == UnsignedOp::div ? m : x;
      return op == UnsignedOp::div ? x / y : x % y;
    }
    case UnsignedOp::min:
    case UnsignedOp::max: {
      const uint64_t x = a & m, y = b & m;
      return (x < y) == (op == UnsignedOp::min) ? x : y;
    }
    case UnsignedOp::bit_and: return a & b & m;
    case UnsignedOp::logical_and: return (a & 1) && (b & 1);
    case UnsignedOp::logical_or: return (a & 1) || (b & 1);
    case UnsignedOp::logical_not: return !(a & 1);
    case UnsignedOp::select: return (a & 1) ? b : c;
    default: break;
  }
  const uint64_t in = sym_detail::kTypeBits[static_cast<uint8_t>(operand) & 63].mask;
  const uint64_t x = a & in, y = b & in;
  switch (op) {
    case UnsignedOp::lt: return x < y;
    case UnsignedOp::le: return x <= y;
    case UnsignedOp::gt: return x > y;
    case UnsignedOp::ge: return x >= y;
    case UnsignedOp::eq: return x == y;
    case UnsignedOp::ne: return x != y;
    default: return x & m;  // cast
  }
}

/// Node `n` (of `nodes`) by its UnsignedOp `op` when every operand it reads is known, as `known(id)`
/// (bool) and `bits(id)` give them: its bits (apply_unsigned_op) into `out`, true; false for
/// UnsignedOp::none or an unknown operand (the caller takes evaluate_sym_node then). The fast step
/// of the concrete evaluations (the envelope's cones, the race proof's uniform values).
template <class Known, class Bits>
[[gnu::always_inline]] inline bool evaluate_unsigned_node(UnsignedOp op, const SymNode& n, const SymNode* nodes,
                                                          Known&& known, Bits&& bits, uint64_t& out) {
  if (op == UnsignedOp::none) return false;
  const bool ready = op < UnsignedOp::select    ? known(n.a) && known(n.b)
                     : op == UnsignedOp::select ? known(n.a) && known(n.b) && known(n.c)
                                                : known(n.a);
  if (!ready) return false;
  const uint64_t b = op <= UnsignedOp::select ? bits(n.b) : 0;
  const uint64_t c = op == UnsignedOp::select ? bits(n.c) : 0;
  out = apply_unsigned_op(op, n.type, nodes[n.a].type, bits(n.a), b, c);
  return true;
}

/// The bits of node `n` (not a leaf) from its operands as `known(id)` (bool) and `bits(id)` (the
/// bits of a known one) give them: apply_sym_op when every operand is known (the common case, inline
/// in the caller's loop; asked before any optional is built, which measured ~4 % fewer instructions
/// a verdict than building them first), else apply_sym_node (its short circuits give the same bits
/// on known operands). The one place every concrete evaluation of a node goes through.
template <class Known, class Bits>
[[gnu::always_inline]] inline std::optional<uint64_t> evaluate_sym_node(const SymNode& n, Type operand, Known&& known,
                                                                        Bits&& bits) {
  const unsigned count = sym_operand_count(n.op);
  if (known(n.a) && (count < 2 || known(n.b)) && (count < 3 || known(n.c)))
    return apply_sym_op(n.op, n.type, operand, bits(n.a), count > 1 ? bits(n.b) : 0, count > 2 ? bits(n.c) : 0);
  auto value = [&](uint32_t id) { return known(id) ? std::optional<uint64_t>(bits(id)) : std::nullopt; };
  return apply_sym_node(n, operand, value(n.a), count > 1 ? value(n.b) : std::optional<uint64_t>(0),
                        count > 2 ? value(n.c) : std::optional<uint64_t>(0));
}

/// The variable of loop `l` (a range or induction loop whose variable has type `t`) at its first
/// iteration, or at its last one (only the first for a loop that may leave early), from the bits of
/// its bounds (`offset`: induction loops only); nullopt when no iteration runs.
std::optional<Integer> loop_pass_value(const LoopFact& l, Type t, uint64_t lo, uint64_t hi, uint64_t step,
                                       uint64_t offset, bool last);

/// Every node of a kernel's facts evaluated for one thread of a launch: thread and block
/// coordinates and loop variables assigned, scalar parameters from the launch (unknown ones, and
/// opaque values, make what depends on them unknown), operations by apply_sym_op. Evaluates
/// lazily in node order; assigning a loop variable re-evaluates the nodes after it.
class ConcreteNodes {
 public:
  ConcreteNodes(const AccessFacts& facts, const std::array<uint64_t, 3>& grid, const std::array<uint64_t, 3>& block,
                uint64_t dynamic_shared_bytes, const std::vector<std::optional<uint64_t>>& scalar_bits)
      : facts_(facts), grid_(grid), block_(block), dynamic_shared_bytes_(dynamic_shared_bytes), scalar_bits_(scalar_bits) {}

  /// Starts a thread: coordinates thread x y z, block x y z; every loop variable unknown.
  void reset(const std::array<uint64_t, 6>& coordinates);
  /// Assigns loop `loop`'s variable (AccessFacts::loops).
  void set_loop(uint32_t loop, uint64_t bits);
  /// Enters loop `loop` (a range or induction loop) at this thread's first iteration, or its last
  /// one (only the first for a loop that may leave early): assigns the variable (and, in the first
  /// iteration, the variables the loop only shrinks) and returns its value; nullopt when the thread
  /// does not enter the loop or a bound is unknown.
  std::optional<Integer> enter_loop(uint32_t loop, bool last);
  /// The node's bits, or nullopt when it depends on something unknown.
  std::optional<uint64_t> value(uint32_t id);

 private:
  std::optional<uint64_t> compute(uint32_t id) const;

  const AccessFacts& facts_;
  std::array<uint64_t, 3> grid_, block_;
  uint64_t dynamic_shared_bytes_;
  const std::vector<std::optional<uint64_t>>& scalar_bits_;
  std::array<uint64_t, 6> coordinates_{};
  std::vector<std::optional<uint64_t>> loop_values_;
  std::vector<std::optional<uint64_t>> values_;
  uint32_t valid_up_to_ = 0;
};

}  // namespace ptxgate::ir
