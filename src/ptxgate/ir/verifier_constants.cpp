// Values of constant expressions (module constants, array sizes, attribute and intrinsic operands):
// integers exactly (no wrapping; integer casts wrap as at run time), floats with run-time semantics
// (docs/ir.md, "Defined behaviour"): every operation rounds to its type (to nearest, ties to even),
// halves are computed in f32 and rounded after every operation, integers and wider floats convert
// with one rounding, and a float to integer cast truncates toward zero and saturates.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ptxgate/ir/float_bits.hpp"
#include "ptxgate/ir/internal/verifier_internal.hpp"

namespace ptxgate::ir::verifier_detail {
namespace {

/// Integer constant arithmetic is exact within +-2^100; beyond, a constant is not computed.
constexpr __int128 kConstantLimit = static_cast<__int128>(1) << 100;

/// One arithmetic operation of type `t` on values of that type. f32 and f64 compute natively (one
/// IEEE operation, so one rounding); halves in f32, then rounded to the half type.
std::optional<double> arithmetic(Type t, BinaryOp op, double a, double b) {
  if (t == Type::f64) {
    switch (op) {
      case BinaryOp::add: return a + b;
      case BinaryOp::sub: return a - b;
      case BinaryOp::mul: return a * b;
      case BinaryOp::div: return a / b;
      case BinaryOp::rem: return std::fmod(a, b);
      default: return std::nullopt;
    }
  }
  const float x = static_cast<float>(a), y = static_cast<float>(b);  // exact: the operands are of type t
  float r = 0;
  switch (op) {
    case BinaryOp::add: r = x + y; break;
    case BinaryOp::sub: r = x - y; break;
    case BinaryOp::mul: r = x * y; break;
    case BinaryOp::div: r = x / y; break;
    case BinaryOp::rem: r = std::fmod(x, y); break;
    default: return std::nullopt;
  }
  return is_half(t) ? round_to(t, r) : static_cast<double>(r);
}

}  // namespace

uint64_t max_value(Type t) {
  switch (t) {
    case Type::i8: return INT8_MAX;
    case Type::u8: return UINT8_MAX;
    case Type::i16: return INT16_MAX;
    case Type::u16: return UINT16_MAX;
    case Type::i32: return INT32_MAX;
    case Type::u32: return UINT32_MAX;
    case Type::i64: return INT64_MAX;
    default: return UINT64_MAX;
  }
}

__int128 min_value(Type t) {
  switch (t) {
    case Type::i8: return INT8_MIN;
    case Type::i16: return INT16_MIN;
    case Type::i32: return INT32_MIN;
    case Type::i64: return INT64_MIN;
    default: return 0;
  }
}

std::optional<__int128> eval_int_constant(const Expr& e, std::string* why) {
  auto fail = [why](std::string reason) -> std::optional<__int128> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  auto bounded = [&](__int128 v) -> std::optional<__int128> {
    if (v > kConstantLimit || v < -kConstantLimit)
      return fail(fmt::format("'{}' leaves the range of +-2^100 on the way", op_spelling(e.binary_op)));
    return v;
  };
  switch (e.kind) {
    case ExprKind::int_literal: return static_cast<__int128>(e.int_value);
    case ExprKind::name: {
      // A module constant of integer type (its symbol is resolved once the name is typed).
      if (!e.symbol || e.symbol->kind != SymbolKind::constant || !is_integer(e.symbol->type))
        return fail(fmt::format("'{}' is not an integer constant with a value", e.name));
      const unsigned spare = 64 - bit_width(e.symbol->type);
      const uint64_t raw = e.symbol->constant_bits;
      if (!is_signed(e.symbol->type)) return static_cast<__int128>(raw);
      return static_cast<__int128>(static_cast<int64_t>(raw << spare) >> spare);
    }
    case ExprKind::cast: {
      if (!is_integer(e.cast_type) || e.operands.size() != 1 || !e.operands[0])
        return fail("it is not an integer expression");
      const Type from = e.operands[0]->type;
      const unsigned width = bit_width(e.cast_type);
      if (is_float(from)) {
        // Float to integer: truncated toward zero and saturated, NaN is 0 (docs/ir.md, Casts).
        auto f = eval_float_constant(*e.operands[0], why);
        if (!f) return std::nullopt;
        if (std::isnan(*f)) return 0;
        const long double t = std::trunc(static_cast<long double>(*f));
        if (t <= static_cast<long double>(min_value(e.cast_type))) return min_value(e.cast_type);
        if (t >= static_cast<long double>(max_value(e.cast_type))) return static_cast<__int128>(max_value(e.cast_type));
        return static_cast<__int128>(t);
      }
      // Integer to integer: the value wrapped into the target type, as at run time.
      if (!is_integer(from) && from != Type::int_literal) return fail(fmt::format("it casts {}", describe_type(from)));
      auto v = eval_int_constant(*e.operands[0], why);
      if (!v) return std::nullopt;
      const unsigned __int128 modulus = static_cast<unsigned __int128>(1) << width;
      unsigned __int128 wrapped = static_cast<unsigned __int128>(*v) & (modulus - 1);
      if (is_signed(e.cast_type) && (wrapped >> (width - 1)) != 0)
        return static_cast<__int128>(wrapped) - static_cast<__int128>(modulus);
      return static_cast<__int128>(wrapped);
    }
    case ExprKind::unary: {
      if (e.unary_op != UnaryOp::neg || e.operands.size() != 1 || !e.operands[0])
        return fail(fmt::format("'{}' is not evaluated in constants", op_spelling(e.unary_op)));
      auto v = eval_int_constant(*e.operands[0], why);
      if (!v) return std::nullopt;
      return -*v;
    }
    case ExprKind::binary: {
      if (e.operands.size() != 2 || !e.operands[0] || !e.operands[1]) return fail("an operand is missing");
      auto a = eval_int_constant(*e.operands[0], why);
      if (!a) return std::nullopt;
      auto b = eval_int_constant(*e.operands[1], why);
      if (!b) return std::nullopt;
      const std::string op(op_spelling(e.binary_op));
      switch (e.binary_op) {
        case BinaryOp::add: return bounded(*a + *b);
        case BinaryOp::sub: return bounded(*a - *b);
        case BinaryOp::mul: {
          if (*a != 0 && (*b > kConstantLimit / (*a < 0 ? -*a : *a) || *b < -kConstantLimit / (*a < 0 ? -*a : *a)))
            return fail(fmt::format("'{}' leaves the range of +-2^100 on the way", op));
          return bounded(*a * *b);
        }
        case BinaryOp::div:
        case BinaryOp::rem:
          if (*b == 0) return fail(fmt::format("'{} {} 0' divides by zero", int128_text(*a), op));
          return e.binary_op == BinaryOp::div ? *a / *b : *a % *b;
        case BinaryOp::shl:
          if (*b < 0 || *b > 100 || *a < 0)
            return fail(fmt::format("'{} << {}' shifts {}", int128_text(*a), int128_text(*b),
                                    *a < 0 ? "a negative value" : "by a negative amount or more than 100"));
          return bounded(*a << static_cast<int>(*b));
        case BinaryOp::shr:
          if (*b < 0 || *b > 127 || *a < 0)
            return fail(fmt::format("'{} >> {}' shifts {}", int128_text(*a), int128_text(*b),
                                    *a < 0 ? "a negative value" : "by a negative amount or more than 127"));
          return *a >> static_cast<int>(*b);
        case BinaryOp::bit_and:
        case BinaryOp::bit_or:
        case BinaryOp::bit_xor:
          if (*a < 0 || *b < 0)
            return fail(fmt::format("'{}' of a negative value ({} {} {}) is not evaluated exactly", op,
                                    int128_text(*a), op, int128_text(*b)));
          return e.binary_op == BinaryOp::bit_and ? (*a & *b) : e.binary_op == BinaryOp::bit_or ? (*a | *b) : (*a ^ *b);
        default: return fail(fmt::format("'{}' has no integer value", op));
      }
    }
    default: return fail("it is not an expression of literals, constants, arithmetic and casts");
  }
}

std::optional<double> eval_float_constant(const Expr& e, std::string* why) {
  const Type t = e.type;
  if (!is_float(t)) {
    if (why) *why = fmt::format("it uses a value of type {} where a float was expected", describe_type(t));
    return std::nullopt;
  }
  switch (e.kind) {
    case ExprKind::float_literal: return round_to(t, e.float_value);
    case ExprKind::int_literal: return round_to(t, static_cast<long double>(e.int_value));
    case ExprKind::name:
      if (e.symbol && e.symbol->kind == SymbolKind::constant && e.symbol->float_value) return *e.symbol->float_value;
      if (why) *why = fmt::format("'{}' has no value (it is not a valid constant)", e.name);
      return std::nullopt;
    case ExprKind::unary: {
      if (e.unary_op != UnaryOp::neg || e.operands.size() != 1 || !e.operands[0]) break;
      auto v = eval_float_constant(*e.operands[0], why);
      if (!v) return std::nullopt;
      return -*v;
    }
    case ExprKind::binary: {
      if (e.operands.size() != 2 || !e.operands[0] || !e.operands[1]) break;
      auto a = eval_float_constant(*e.operands[0], why);
      if (!a) return std::nullopt;
      auto b = eval_float_constant(*e.operands[1], why);
      if (!b) return std::nullopt;
      if (auto r = arithmetic(t, e.binary_op, *a, *b)) return r;
      break;
    }
    case ExprKind::cast: {
      if (e.operands.size() != 1 || !e.operands[0]) break;
      const Expr& operand = *e.operands[0];
      if (is_integer(operand.type) || operand.type == Type::int_literal) {
        auto v = eval_int_constant(operand, why);
        if (!v) return std::nullopt;
        return round_to(t, static_cast<long double>(*v));  // |v| < 2^100: exact in long double's range
      }
      auto v = eval_float_constant(operand, why);
      if (!v) return std::nullopt;
      return round_to(t, *v);
    }
    default: break;
  }
  if (why) *why = "it is not an expression of literals, constants, arithmetic and casts";
  return std::nullopt;
}

}  // namespace ptxgate::ir::verifier_detail
