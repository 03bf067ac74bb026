// Names, spellings and properties of the IR's value types and access modes.
#include "ptxgate/ir/types.hpp"

#include <array>
#include <iterator>
#include <utility>

#include <fmt/format.h>

#include "ptxgate/ir/sym_eval.hpp"

namespace ptxgate::ir {

namespace {
struct VectorType {
  std::string_view name;
  Type element;
  unsigned lanes;
};
/// In the order of enum Type, from i8x4.
constexpr VectorType kVectorTypes[] = {
    {"i8x4", Type::i8, 4},
    {"i8x8", Type::i8, 8},
    {"u8x4", Type::u8, 4},
    {"u8x8", Type::u8, 8},
    {"i16x2", Type::i16, 2},
    {"i16x4", Type::i16, 4},
    {"i16x8", Type::i16, 8},
    {"u16x2", Type::u16, 2},
    {"u16x4", Type::u16, 4},
    {"u16x8", Type::u16, 8},
    {"f16x2", Type::f16, 2},
    {"f16x4", Type::f16, 4},
    {"f16x8", Type::f16, 8},
    {"bf16x2", Type::bf16, 2},
    {"bf16x4", Type::bf16, 4},
    {"bf16x8", Type::bf16, 8},
    {"i32x2", Type::i32, 2},
    {"i32x4", Type::i32, 4},
    {"u32x2", Type::u32, 2},
    {"u32x4", Type::u32, 4},
    {"f32x2", Type::f32, 2},
    {"f32x4", Type::f32, 4},
    {"i64x2", Type::i64, 2},
    {"u64x2", Type::u64, 2},
    {"f64x2", Type::f64, 2},
};
static_assert(std::size(kVectorTypes) == static_cast<size_t>(Type::f64x2) - static_cast<size_t>(Type::i8x4) + 1);
}  // namespace

bool is_vector(Type t) { return t >= Type::i8x4 && t <= Type::f64x2; }

Type vector_element(Type t) {
  return is_vector(t) ? kVectorTypes[static_cast<size_t>(t) - static_cast<size_t>(Type::i8x4)].element : t;
}

unsigned vector_lanes(Type t) {
  return is_vector(t) ? kVectorTypes[static_cast<size_t>(t) - static_cast<size_t>(Type::i8x4)].lanes : 1;
}

std::optional<Type> vector_of(Type element, unsigned lanes) {
  for (size_t i = 0; i < std::size(kVectorTypes); ++i)
    if (kVectorTypes[i].element == element && kVectorTypes[i].lanes == lanes)
      return static_cast<Type>(static_cast<size_t>(Type::i8x4) + i);
  return std::nullopt;
}

std::string_view type_name(Type t) {
  switch (t) {
    case Type::error: return "{error}";
    case Type::void_: return "void";
    case Type::bool_: return "bool";
    case Type::i32: return "i32";
    case Type::u32: return "u32";
    case Type::i64: return "i64";
    case Type::u64: return "u64";
    case Type::f32: return "f32";
    case Type::f64: return "f64";
    case Type::int_literal: return "{integer literal}";
    case Type::float_literal: return "{float literal}";
    case Type::i8: return "i8";
    case Type::u8: return "u8";
    case Type::i16: return "i16";
    case Type::u16: return "u16";
    case Type::f16: return "f16";
    case Type::bf16: return "bf16";
    case Type::tensor_map: return "tensor_map";
    default: break;
  }
  if (is_vector(t)) return kVectorTypes[static_cast<size_t>(t) - static_cast<size_t>(Type::i8x4)].name;
  return "{error}";
}

namespace {
/// The scalar types a program can name, smallest first; with kVectorTypes, every spellable type.
constexpr std::pair<std::string_view, Type> kScalarTypes[] = {
    {"bool", Type::bool_}, {"i8", Type::i8},   {"u8", Type::u8},   {"i16", Type::i16},   {"u16", Type::u16},
    {"i32", Type::i32},    {"u32", Type::u32}, {"i64", Type::i64}, {"u64", Type::u64},   {"f16", Type::f16},
    {"bf16", Type::bf16},  {"f32", Type::f32}, {"f64", Type::f64}, {"tensor_map", Type::tensor_map}};
}  // namespace

std::optional<Type> type_from_name(std::string_view n) {
  for (auto [name, t] : kScalarTypes)
    if (name == n) return t;
  for (size_t i = 0; i < std::size(kVectorTypes); ++i)
    if (kVectorTypes[i].name == n) return static_cast<Type>(static_cast<size_t>(Type::i8x4) + i);
  return std::nullopt;
}

const std::string& spellable_types_text() {
  static const std::string text = [] {
    std::string out;
    for (auto [name, t] : kScalarTypes)
      if (t != Type::tensor_map) out += fmt::format("{}, ", name);
    out += "the vectors";
    for (const auto& v : kVectorTypes) out += fmt::format(" {}", v.name);
    return out + ", or tensor_map (a kernel parameter)";
  }();
  return text;
}

bool is_integer(Type t) {
  return t == Type::i32 || t == Type::u32 || t == Type::i64 || t == Type::u64 || t == Type::i8 || t == Type::u8 ||
         t == Type::i16 || t == Type::u16;
}
bool is_signed(Type t) { return sym_signed(t); }
bool is_float(Type t) { return t == Type::f32 || t == Type::f64 || is_half(t); }
bool is_half(Type t) { return t == Type::f16 || t == Type::bf16; }
bool is_numeric(Type t) { return is_integer(t) || is_float(t); }

unsigned bit_width(Type t) { return sym_width(t); }  // one table: src/ptxgate/ir/sym_eval.hpp

unsigned byte_size(Type t) {
  switch (t) {
    case Type::i8: case Type::u8: return 1;
    case Type::i16: case Type::u16: case Type::f16: case Type::bf16: return 2;
    case Type::bool_: case Type::i32: case Type::u32: case Type::f32: return 4;
    case Type::i64: case Type::u64: case Type::f64: return 8;
    case Type::tensor_map: return 128;
    default: return is_vector(t) ? byte_size(vector_element(t)) * vector_lanes(t) : 0;
  }
}

std::string_view access_name(Access a) {
  switch (a) {
    case Access::in: return "in";
    case Access::out: return "out";
    case Access::inout: return "inout";
  }
  return "inout";
}

}  // namespace ptxgate::ir
