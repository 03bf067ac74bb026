// Names, spellings and properties of IR operators, builtins and intrinsics.
#include "ptxgate/ir/ast.hpp"

#include <array>
#include <utility>

namespace ptxgate::ir {

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

bool is_tensor_core(Intrinsic i) { return i >= Intrinsic::mma_m16n8k16 && i <= Intrinsic::tf32; }

bool is_warp_collective(Intrinsic i) { return is_warp_operation(i) || is_mma(i) || is_ldmatrix(i); }

Target intrinsic_target(Intrinsic i) {
  if (is_hopper_operation(i)) return Target(90, Target::Variant::arch_specific);
  return is_tensor_core(i) ? Target(80) : Target();
}

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
