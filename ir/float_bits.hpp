// The bits of a real number as a value of one of the IR's float types, rounded as the IR's casts
// round (to nearest, ties to even), and the value of a half's bits: what a float argument of a
// launch, a fill value or a constant becomes in f16, bf16, f32 or f64.
#pragma once

#include <cstdint>
#include <optional>

#include "ptxgate/ir/types.hpp"

namespace ptxgate::ir {

/// The bits of the value `v` of type `t` (f16, bf16, f32, f64), rounded to nearest, ties to even:
/// an f16 or bf16 in the low 16 bits, an f32 in the low 32. A NaN stays a (quiet) NaN and an
/// infinity that infinity; nullopt for a finite `v` beyond the type's largest finite value (it
/// would round to infinity) and for a type that is not a float.
std::optional<uint64_t> float_bits(double v, Type t);

/// The value of an f16 or bf16 held in the low 16 bits of `bits` (exact in a double).
double half_value(uint16_t bits, Type t);

}  // namespace ptxgate::ir
