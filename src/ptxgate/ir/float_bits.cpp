// Rounding to the IR's float types (one place for the constant evaluator, launch arguments and
// fills), the IEEE layouts of f16, bf16, f32 and f64 values, and half values.
#include "ptxgate/ir/float_bits.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace ptxgate::ir {
namespace {

/// A binary floating-point format: significand bits (with the implicit one) and the exponent
/// range of its normal numbers as frexp reports them (C's FLT_MIN_EXP .. FLT_MAX_EXP).
struct FloatFormat {
  int precision, min_exp, max_exp;
};

FloatFormat format_of(Type t) {
  switch (t) {
    case Type::f16: return {11, -13, 16};
    case Type::bf16: return {8, -125, 128};
    case Type::f32: return {24, -125, 128};
    default: return {53, -1021, 1024};  // f64
  }
}

/// The bits of `r`, a value of the format with `exp_bits` exponent and `man_bits` fraction bits
/// (IEEE layout, sign on top): exact, `r` already rounded to it.
uint64_t encode(double r, unsigned exp_bits, unsigned man_bits) {
  const uint64_t sign = std::signbit(r) ? uint64_t{1} << (exp_bits + man_bits) : 0;
  const uint64_t all_ones = (uint64_t{1} << exp_bits) - 1;
  if (std::isnan(r)) return sign | (all_ones << man_bits) | (uint64_t{1} << (man_bits - 1));
  if (std::isinf(r)) return sign | (all_ones << man_bits);
  if (r == 0) return sign;
  const double a = std::fabs(r);
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e with m in [0.5, 1): the unbiased exponent is e - 1
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int biased = e - 1 + bias;
  if (biased < 1)  // a subnormal: a = field * 2^(1 - bias - man_bits)
    return sign | static_cast<uint64_t>(std::ldexp(a, static_cast<int>(man_bits) + bias - 1));
  const auto significand = static_cast<uint64_t>(std::ldexp(a, static_cast<int>(man_bits) - (e - 1)));
  return sign | (static_cast<uint64_t>(biased) << man_bits) | (significand - (uint64_t{1} << man_bits));
}

}  // namespace

double round_to(Type t, long double x) {
  if (x == 0 || !std::isfinite(x)) return static_cast<double>(x);
  const FloatFormat f = format_of(t);
  int exponent = 0;
  std::frexp(x, &exponent);
  // The unit in the last place of the result: 2^q. Scaling by powers of two is exact, and
  // nearbyint rounds to the nearest even integer in the default rounding mode.
  const int q = std::max(exponent, f.min_exp) - f.precision;
  const long double rounded = std::ldexp(std::nearbyint(std::ldexp(x, -q)), q);
  if (std::fabs(rounded) >= std::ldexp(1.0L, f.max_exp)) return x < 0 ? -HUGE_VAL : HUGE_VAL;
  return static_cast<double>(rounded);
}

std::optional<uint64_t> float_bits(double v, Type t) {
  if (t != Type::f16 && t != Type::bf16 && t != Type::f32 && t != Type::f64) return std::nullopt;
  // Every launch's float arguments come here: f64 and f32 of a number take the hardware's
  // conversion, which is round_to's rounding (to nearest, ties to even, in the current rounding
  // mode; subnormals kept) without its long double arithmetic. NaN keeps the general path.
  if (t == Type::f64 && !std::isnan(v)) return std::bit_cast<uint64_t>(v);
  if (t == Type::f32 && !std::isnan(v)) {
    const float f = static_cast<float>(v);
    if (std::isinf(f) && std::isfinite(v)) return std::nullopt;
    return std::bit_cast<uint32_t>(f);
  }
  const double r = round_to(t, v);
  if (std::isinf(r) && std::isfinite(v)) return std::nullopt;
  switch (t) {
    case Type::f64: return std::bit_cast<uint64_t>(r);
    case Type::f32: return std::bit_cast<uint32_t>(static_cast<float>(r));  // exact: r is an f32 value
    case Type::f16: return encode(r, 5, 10);
    default: return encode(r, 8, 7);  // bf16
  }
}

double half_value(uint16_t bits, Type t) {
  if (t == Type::bf16) return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
  const bool negative = (bits & 0x8000) != 0;
  const int exponent = (bits >> 10) & 0x1f;
  const int fraction = bits & 0x3ff;
  double value;
  if (exponent == 0x1f)
    value = fraction != 0 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (exponent == 0)
    value = std::ldexp(fraction, -24);
  else
    value = std::ldexp(1024 + fraction, exponent - 25);
  return negative ? -value : value;
}

}  // namespace ptxgate::ir
