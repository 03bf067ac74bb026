// Names, spellings and properties of IR types, operators, builtins and intrinsics.
#include "ptxgate/ir/ast.hpp"

#include <array>
#include <utility>

#include <fmt/format.h>

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
bool is_signed(Type t) { return t == Type::i32 || t == Type::i64 || t == Type::i8 || t == Type::i16; }
bool is_float(Type t) { return t == Type::f32 || t == Type::f64 || is_half(t); }
bool is_half(Type t) { return t == Type::f16 || t == Type::bf16; }
bool is_numeric(Type t) { return is_integer(t) || is_float(t); }

unsigned bit_width(Type t) {
  switch (t) {
    case Type::bool_: return 1;
    case Type::i8: case Type::u8: return 8;
    case Type::i16: case Type::u16: case Type::f16: case Type::bf16: return 16;
    case Type::i32: case Type::u32: case Type::f32: return 32;
    case Type::i64: case Type::u64: case Type::f64: return 64;
    default: return 0;
  }
}

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

std::string_view op_spelling(BinaryOp op) {
  switch (op) {
    case BinaryOp::add: return "+";
    case BinaryOp::sub: return "-";
    case BinaryOp::mul: return "*";
    case BinaryOp::div: return "/";
    case BinaryOp::rem: return "%";
    case BinaryOp::shl: return "<<";
    case BinaryOp::shr: return ">>";
    case BinaryOp::bit_and: return "&";
    case BinaryOp::bit_or: return "|";
    case BinaryOp::bit_xor: return "^";
    case BinaryOp::eq: return "==";
    case BinaryOp::ne: return "!=";
    case BinaryOp::lt: return "<";
    case BinaryOp::le: return "<=";
    case BinaryOp::gt: return ">";
    case BinaryOp::ge: return ">=";
    case BinaryOp::logical_and: return "&&";
    case BinaryOp::logical_or: return "||";
  }
  return "?";
}

std::string_view op_spelling(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg: return "-";
    case UnaryOp::bit_not: return "~";
    case UnaryOp::logical_not: return "!";
  }
  return "?";
}

int precedence(BinaryOp op) {
  switch (op) {
    case BinaryOp::logical_or: return 1;
    case BinaryOp::logical_and: return 2;
    case BinaryOp::bit_or: return 3;
    case BinaryOp::bit_xor: return 4;
    case BinaryOp::bit_and: return 5;
    case BinaryOp::eq: case BinaryOp::ne: return 6;
    case BinaryOp::lt: case BinaryOp::le: case BinaryOp::gt: case BinaryOp::ge: return 7;
    case BinaryOp::shl: case BinaryOp::shr: return 8;
    case BinaryOp::add: case BinaryOp::sub: return 9;
    case BinaryOp::mul: case BinaryOp::div: case BinaryOp::rem: return 10;
  }
  return 0;
}

namespace {
constexpr std::array<std::string_view, 8> kBuiltins = {"thread_id", "block_id", "block_dim", "grid_dim",
                                                      "global_id", "lane_id",  "warp_id",   "warpgroup_id"};
/// In the order of enum Intrinsic.
constexpr std::array<std::string_view, 91> kIntrinsics = {
    "sqrt", "rsqrt", "exp", "log", "sin", "cos", "tanh", "pow", "fma", "min", "max", "abs", "floor", "ceil",
    "select", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor",
    "atomic_exch", "atomic_cas", "barrier", "grid_sync", "shfl_xor", "shfl_down", "shfl_up", "shfl_idx", "ballot",
    "any", "all", "warp_sum", "warp_min", "warp_max", "load2", "load4", "load8", "store2", "store4", "store8",
    "exp2", "log2", "log10", "erf", "tan", "asin", "acos", "atan", "sinh", "cosh", "atan2", "fence_block",
    "fence_device", "fence_system", "assert",
    // Hopper: mbarrier, TMA, wgmma
    "mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_expect_tx", "mbarrier_try_wait", "mbarrier_wait",
    "mbarrier_inval", "fence_proxy_async", "tma_load", "tma_store", "tma_store_commit", "tma_store_wait",
    "wgmma_desc", "wgmma_fence", "wgmma_commit", "wgmma_wait", "wgmma_bf16", "wgmma_f16", "setmaxnreg_inc",
    "setmaxnreg_dec", "shared_address",
    // tensor cores: mma.sync, ldmatrix, cp.async
    "mma_m16n8k16", "mma_m16n8k8", "ldmatrix_x1", "ldmatrix_x2", "ldmatrix_x4", "ldmatrix_x1_trans",
    "ldmatrix_x2_trans", "ldmatrix_x4_trans", "cp_async4", "cp_async8", "cp_async16", "cp_async_commit",
    "cp_async_wait", "tf32"};
static_assert(kIntrinsics.size() == static_cast<size_t>(Intrinsic::tf32) + 1);
constexpr std::array<std::string_view, 4> kOrders = {"relaxed", "acquire", "release", "acq_rel"};
constexpr std::array<std::string_view, 3> kScopes = {"block", "device", "system"};
constexpr std::array<std::string_view, 3> kFpModes = {"contract", "exact", "fast"};

template <class E, size_t N>
std::optional<E> from_table(const std::array<std::string_view, N>& table, std::string_view n) {
  for (size_t i = 0; i < N; ++i)
    if (table[i] == n) return static_cast<E>(i);
  return std::nullopt;
}
static_assert(kBuiltins.size() == static_cast<size_t>(Builtin::warpgroup_id) + 1);
}  // namespace

bool is_scalar_builtin(Builtin b) {
  return b == Builtin::lane_id || b == Builtin::warp_id || b == Builtin::warpgroup_id;
}

std::string_view builtin_name(Builtin b) { return kBuiltins[static_cast<size_t>(b)]; }

std::optional<Builtin> builtin_from_name(std::string_view n) {
  for (size_t i = 0; i < kBuiltins.size(); ++i)
    if (kBuiltins[i] == n) return static_cast<Builtin>(i);
  return std::nullopt;
}

std::string_view intrinsic_name(Intrinsic i) { return kIntrinsics[static_cast<size_t>(i)]; }

std::optional<Intrinsic> intrinsic_from_name(std::string_view n) {
  for (size_t i = 0; i < kIntrinsics.size(); ++i)
    if (kIntrinsics[i] == n) return static_cast<Intrinsic>(i);
  return std::nullopt;
}

size_t intrinsic_count() { return kIntrinsics.size(); }

std::string_view memory_order_name(MemoryOrder o) { return kOrders[static_cast<size_t>(o)]; }
std::string_view memory_scope_name(MemoryScope s) { return kScopes[static_cast<size_t>(s)]; }
std::string_view fp_mode_name(FpMode m) { return kFpModes[static_cast<size_t>(m)]; }
std::optional<MemoryOrder> memory_order_from_name(std::string_view n) { return from_table<MemoryOrder>(kOrders, n); }
std::optional<MemoryScope> memory_scope_from_name(std::string_view n) { return from_table<MemoryScope>(kScopes, n); }
std::optional<FpMode> fp_mode_from_name(std::string_view n) { return from_table<FpMode>(kFpModes, n); }

bool is_atomic(Intrinsic i) { return i >= Intrinsic::atomic_add && i <= Intrinsic::atomic_cas; }
bool is_warp_operation(Intrinsic i) { return i >= Intrinsic::shfl_xor && i <= Intrinsic::warp_max; }
bool is_vector_access(Intrinsic i) { return i >= Intrinsic::load2 && i <= Intrinsic::store8; }
bool is_vector_store(Intrinsic i) { return i >= Intrinsic::store2 && i <= Intrinsic::store8; }
bool is_hopper_operation(Intrinsic i) { return i >= Intrinsic::mbarrier_init && i <= Intrinsic::shared_address; }
bool is_warpgroup_operation(Intrinsic i) { return i >= Intrinsic::wgmma_fence && i <= Intrinsic::setmaxnreg_dec; }

unsigned vector_access_lanes(Intrinsic i) {
  switch (i) {
    case Intrinsic::load2: case Intrinsic::store2: return 2;
    case Intrinsic::load4: case Intrinsic::store4: return 4;
    case Intrinsic::load8: case Intrinsic::store8: return 8;
    default: return 0;
  }
}

// tensor cores: mma.sync, ldmatrix, cp.async
bool is_mma(Intrinsic i) { return i == Intrinsic::mma_m16n8k16 || i == Intrinsic::mma_m16n8k8; }
bool is_ldmatrix(Intrinsic i) { return i >= Intrinsic::ldmatrix_x1 && i <= Intrinsic::ldmatrix_x4_trans; }
bool is_ldmatrix_trans(Intrinsic i) { return i >= Intrinsic::ldmatrix_x1_trans && i <= Intrinsic::ldmatrix_x4_trans; }

unsigned ldmatrix_count(Intrinsic i) {
  switch (i) {
    case Intrinsic::ldmatrix_x1: case Intrinsic::ldmatrix_x1_trans: return 1;
    case Intrinsic::ldmatrix_x2: case Intrinsic::ldmatrix_x2_trans: return 2;
    case Intrinsic::ldmatrix_x4: case Intrinsic::ldmatrix_x4_trans: return 4;
    default: return 0;
  }
}

bool is_async_copy(Intrinsic i) { return i >= Intrinsic::cp_async4 && i <= Intrinsic::cp_async16; }

unsigned async_copy_bytes(Intrinsic i) {
  switch (i) {
    case Intrinsic::cp_async4: return 4;
    case Intrinsic::cp_async8: return 8;
    case Intrinsic::cp_async16: return 16;
    default: return 0;
  }
}

bool is_warp_collective(Intrinsic i) { return is_warp_operation(i) || is_mma(i) || is_ldmatrix(i); }

unsigned intrinsic_min_sm(Intrinsic i) { return i >= Intrinsic::mma_m16n8k16 && i <= Intrinsic::tf32 ? 80 : 0; }

const Kernel* Module::find_kernel(std::string_view name) const {
  for (const auto& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

const Function* Module::find_function(std::string_view name) const {
  for (const auto& f : functions)
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace ptxgate::ir
