// The IR's one rounding of real numbers to its float types (to nearest, ties to even), the bits of
// such a value in its type's layout, and the value of a half's bits: what a constant expression, a
// float argument of a launch or a fill value becomes in f16, bf16, f32 or f64.
#pragma once

#include <cstdint>
#include <optional>

#include "ptxgate/ir/types.hpp"

namespace ptxgate::ir {

/// `x` rounded to the nearest value of the float type `t` (f16, bf16, f32; anything else is f64),
/// ties to even, subnormals kept; ±infinity beyond the largest finite value; zeros, infinities and
/// NaN unchanged. `x` is exact: a long double holds every 64-bit integer and every double.
double round_to(Type t, long double x);

/// The bits of the value `v` of type `t` (f16, bf16, f32, f64), rounded by round_to: an f16 or
/// bf16 in the low 16 bits, an f32 in the low 32. A NaN is the type's quiet NaN (sign kept), an
/// infinity that infinity; nullopt for a finite `v` that rounds to infinity (beyond the type's
/// largest finite value) and for a type that is not a float.
std::optional<uint64_t> float_bits(double v, Type t);

/// The value of an f16 or bf16 held in the low 16 bits of `bits` (exact in a double).
double half_value(uint16_t bits, Type t);

}  // namespace ptxgate::ir
