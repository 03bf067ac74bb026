// Rounding a double to the IR's float types (f16 and bf16 by their IEEE layouts), and half values.
#include "ptxgate/ir/float_bits.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace ptxgate::ir {
namespace {

/// `v` rounded to nearest, ties to even, in a binary format of `exp_bits` exponent and `man_bits`
/// fraction bits (IEEE layout, sign on top); a finite value too large becomes infinity.
uint64_t round_to_format(double v, unsigned exp_bits, unsigned man_bits) {
  const uint64_t d = std::bit_cast<uint64_t>(v);
  const uint64_t sign = (d >> 63) << (exp_bits + man_bits);
  const int exponent = static_cast<int>((d >> 52) & 0x7ff);
  const uint64_t fraction = d & ((uint64_t{1} << 52) - 1);
  const uint64_t all_ones = (uint64_t{1} << exp_bits) - 1;
  if (exponent == 0x7ff) {  // infinity, or NaN (kept quiet, with the top fraction bits that fit)
    const uint64_t nan = fraction != 0 ? (uint64_t{1} << (man_bits - 1)) | (fraction >> (52 - man_bits)) : 0;
    return sign | (all_ones << man_bits) | nan;
  }
  if (exponent == 0) return sign;  // zero, or a double subnormal: far below the smallest half
  const int bias = (1 << (exp_bits - 1)) - 1;
  int target = exponent - 1023 + bias;  // the biased exponent in the target format
  const uint64_t significand = (uint64_t{1} << 52) | fraction;
  // Bits dropped: the fraction beyond the target's, and more below its smallest normal exponent.
  const int shift = static_cast<int>(52 - man_bits) + (target < 1 ? 1 - target : 0);
  if (shift > 54) return sign;  // below half the smallest subnormal: rounds to zero
  uint64_t kept = significand >> shift;
  const uint64_t rest = significand & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (kept & 1) != 0)) ++kept;
  if (target < 1) return sign | kept;  // a subnormal (or, rounded up, the smallest normal)
  if (kept == (uint64_t{1} << (man_bits + 1))) {  // rounding carried into the exponent
    kept >>= 1;
    ++target;
  }
  if (static_cast<uint64_t>(target) >= all_ones) return sign | (all_ones << man_bits);
  return sign | (static_cast<uint64_t>(target) << man_bits) | (kept & ((uint64_t{1} << man_bits) - 1));
}

}  // namespace

std::optional<uint64_t> float_bits(double v, Type t) {
  unsigned exp_bits = 0, man_bits = 0;
  switch (t) {
    case Type::f64: return std::bit_cast<uint64_t>(v);
    case Type::f32: {
      const float f = static_cast<float>(v);  // round to nearest even (the default mode)
      if (std::isinf(f) && std::isfinite(v)) return std::nullopt;
      return std::bit_cast<uint32_t>(f);
    }
    case Type::f16: exp_bits = 5, man_bits = 10; break;
    case Type::bf16: exp_bits = 8, man_bits = 7; break;
    default: return std::nullopt;
  }
  const uint64_t bits = round_to_format(v, exp_bits, man_bits);
  const uint64_t infinity_exponent = ((uint64_t{1} << exp_bits) - 1) << man_bits;
  if (std::isfinite(v) && (bits & infinity_exponent) == infinity_exponent) return std::nullopt;
  return bits;
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
