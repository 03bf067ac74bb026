// The IR's value types (scalars, vectors, tensor maps) and buffer access modes: what kernels'
// signatures and the launch contract are made of, without the syntax tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ptxgate::ir {

/// Scalar value types. `int_literal`/`float_literal` are the types of untyped
/// literals before the verifier gives them the type their context needs; after a
/// successful verify no expression has them. `error` marks an expression whose type
/// could not be determined (an error was already reported).
enum class Type : uint8_t {
  error, void_, bool_, i32, u32, i64, u64, f32, f64, int_literal, float_literal,
  i8, u8, i16, u16, f16, bf16,  ///< the small types (appended: the values above keep their numbers)
  /// Vector values of 4, 8 or 16 bytes (element x lanes), for vector loads and stores
  /// (`load4`/`store4`); lets and vars only: never parameters, buffer or array elements.
  i8x4, i8x8, u8x4, u8x8,
  i16x2, i16x4, i16x8, u16x2, u16x4, u16x8, f16x2, f16x4, f16x8, bf16x2, bf16x4, bf16x8,
  i32x2, i32x4, u32x2, u32x4, f32x2, f32x4,
  i64x2, u64x2, f64x2,
  /// Hopper: a TMA descriptor (CUtensorMap, 128 bytes) passed by value as a kernel parameter
  /// (`m: tensor_map`, a __grid_constant__ parameter); never a value, only named by tma_load/tma_store.
  tensor_map,
};

std::string_view type_name(Type t);                    ///< "f32", "{integer literal}", ...
std::optional<Type> type_from_name(std::string_view);  ///< the spellable types (scalars and vectors)
/// Every type a program can name, for messages: "bool, i8, ..., f64, the vectors i8x4 ... f64x2, or
/// tensor_map (a kernel parameter)"; from the table type_from_name reads.
const std::string& spellable_types_text();
bool is_integer(Type t);   ///< i8 u8 i16 u16 i32 u32 i64 u64 (not int_literal)
bool is_signed(Type t);    ///< i8 i16 i32 i64
bool is_float(Type t);     ///< f16 bf16 f32 f64 (not float_literal)
bool is_half(Type t);      ///< f16 bf16: arithmetic as if in f32, rounded after every operation
bool is_numeric(Type t);   ///< integer or float
unsigned bit_width(Type t);  ///< 1 for bool, 8/16/32/64 for numbers, 0 otherwise
unsigned byte_size(Type t);  ///< 4 for bool (as a kernel parameter), 1/2/4/8 for numbers, 4/8/16 for vectors
bool is_vector(Type t);      ///< f32x4, f16x8, ... (the vector types)
Type vector_element(Type t); ///< f32 for f32x4; `t` itself for a scalar
unsigned vector_lanes(Type t);  ///< 4 for f32x4; 1 for a scalar
/// The vector type of `lanes` elements of `element` (f32, 4 -> f32x4); nullopt when there is
/// none: a vector is 4, 8 or 16 bytes of 2, 4 or 8 numeric lanes.
std::optional<Type> vector_of(Type element, unsigned lanes);

/// Access mode of a buffer parameter.
enum class Access : uint8_t { in, out, inout };
std::string_view access_name(Access a);

}  // namespace ptxgate::ir
