// The IR's integer semantics on concrete values (docs/ir.md "Results of every operation").
#include "ptxgate/ir/sym_eval.hpp"

namespace ptxgate::ir {
namespace {

unsigned width_of(Type t) { return t == Type::bool_ ? 1 : bit_width(t); }

uint64_t mask_of(Type t) {
  const unsigned w = width_of(t);
  return w >= 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
}

}  // namespace

Integer type_min(Type t) {
  if (t == Type::bool_ || !is_signed(t)) return 0;
  return -(Integer{1} << (width_of(t) - 1));
}

Integer type_max(Type t) {
  if (t == Type::bool_) return 1;
  const unsigned w = width_of(t);
  return is_signed(t) ? (Integer{1} << (w - 1)) - 1 : (Integer{1} << w) - 1;
}

Integer value_of(Type t, uint64_t bits) {
  bits &= mask_of(t);
  if (t != Type::bool_ && is_signed(t)) {
    const unsigned w = width_of(t);
    if (bits >> (w - 1) & 1) return static_cast<Integer>(bits) - (Integer{1} << w);
  }
  return static_cast<Integer>(bits);
}

uint64_t bits_of(Type t, Integer value) { return static_cast<uint64_t>(static_cast<unsigned __int128>(value)) & mask_of(t); }

unsigned sym_operand_count(SymOp op) {
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

std::optional<uint64_t> apply_sym_op(SymOp op, Type type, Type operand, uint64_t a, uint64_t b, uint64_t c) {
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

}  // namespace ptxgate::ir
