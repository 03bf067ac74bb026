// The IR's integer semantics on concrete values, for symbolic nodes: constant folding in the access
// analysis and concrete witnesses in the launch's memory-safety check use this one definition.
#pragma once

#include <cstdint>
#include <optional>

#include "ptxgate/ir/access_facts.hpp"
#include "ptxgate/ir/types.hpp"

namespace ptxgate::ir {

/// A value as a mathematical integer: 128 bits hold every value of every integer type, and
/// products of two 63-bit magnitudes.
using Integer = __int128;

/// The smallest and largest value of an integer type (0 and 1 for bool).
Integer type_min(Type t);
Integer type_max(Type t);

/// The mathematical value of `bits` (the type's bits, zero-extended) in type `t`: sign-extended
/// for signed types.
Integer value_of(Type t, uint64_t bits);
/// The bits of `value` wrapped to type `t` (modulo 2^N), zero-extended.
uint64_t bits_of(Type t, Integer value);

/// The result bits of `op` applied to operands of type `operand` (the node's own type, except for
/// comparisons and casts) with bits `a`, `b`, `c`, as docs/ir.md defines it: wrapping + - * <<,
/// x / 0 all ones, x % 0 == x, MIN / -1 == MIN, shift amounts modulo the width, truncating or
/// extending casts. Leaves (constant, param, builtins, loop, opaque) have no operation: nullopt.
std::optional<uint64_t> apply_sym_op(SymOp op, Type type, Type operand, uint64_t a, uint64_t b, uint64_t c);

/// The number of operands of a node of operation `op` (0 for leaves).
unsigned sym_operand_count(SymOp op);

}  // namespace ptxgate::ir
