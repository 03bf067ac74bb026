// The ptxgate IR: types, expressions, statements, kernels and modules (no LLVM, no CUDA).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/target.hpp"
#include "ptxgate/ir/types.hpp"

namespace ptxgate::ir {

/// Byte range in the source text. Nodes built by the builder API have offset 0, length 0.
struct SourceRange {
  uint32_t offset = 0;
  uint32_t length = 0;
};

enum class BinaryOp : uint8_t {
  add, sub, mul, div, rem,
  shl, shr, bit_and, bit_or, bit_xor,
  eq, ne, lt, le, gt, ge,
  logical_and, logical_or,
};
enum class UnaryOp : uint8_t { neg, bit_not, logical_not };
std::string_view op_spelling(BinaryOp op);  ///< "+", "<<", "&&", ...
std::string_view op_spelling(UnaryOp op);   ///< "-", "~", "!"
/// C-like precedence, higher binds tighter: || 1, && 2, | 3, ^ 4, & 5, == != 6,
/// < <= > >= 7, << >> 8, + - 9, * / % 10.
int precedence(BinaryOp op);

/// The five builtin id vectors, each with components .x .y .z of type u32, and the two
/// scalar u32 builtins `lane_id` (0..31 within the warp) and `warp_id` (the linear thread
/// index in the block / 32), written without a component.
/// Hopper: `warpgroup_id` (u32, scalar) is the linear thread index / 128, the warpgroup of wgmma.
enum class Builtin : uint8_t { thread_id, block_id, block_dim, grid_dim, global_id, lane_id, warp_id, warpgroup_id };
/// lane_id, warp_id and warpgroup_id: written without a component.
bool is_scalar_builtin(Builtin b);
std::string_view builtin_name(Builtin b);
std::optional<Builtin> builtin_from_name(std::string_view);

/// Intrinsic functions callable in expressions or as statements.
enum class Intrinsic : uint8_t {
  // math (float operands; min/max/abs also integers)
  sqrt, rsqrt, exp, log, sin, cos, tanh, pow, fma, min, max, abs, floor, ceil,
  select,
  // atomics on buffers and shared arrays: (buf, index, value) or cas (buf, index, expected, value)
  atomic_add, atomic_sub, atomic_min, atomic_max, atomic_and, atomic_or, atomic_xor, atomic_exch, atomic_cas,
  // synchronisation (statements, no value)
  barrier, grid_sync,
  // warp operations (all 32 lanes of the warp take part; the verifier checks convergence)
  shfl_xor, shfl_down, shfl_up, shfl_idx, ballot, any, all, warp_sum, warp_min, warp_max,
  // vector memory access: loadN(array, i) reads elements N*i .. N*i+N-1 as one vector,
  // storeN(array, i, v) writes them (buffers and shared arrays; N*i keeps the alignment)
  load2, load4, load8, store2, store4, store8,
  // more math (f32 or f64; atan2 takes two)
  exp2, log2, log10, erf, tan, asin, acos, atan, sinh, cosh, atan2,
  // memory fences (statements, no value): CUDA's __threadfence_block, __threadfence, __threadfence_system
  fence_block, fence_device, fence_system,
  // device assert (statement): `assert(condition)` traps the kernel when the condition is false
  assert_,
  // Hopper (sm_90a): mbarrier, TMA, wgmma (docs/ir.md "Hopper"). mbarriers are elements of a shared
  // u64 array: (array, index, ...).
  mbarrier_init, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_try_wait, mbarrier_wait, mbarrier_inval,
  fence_proxy_async,
  // TMA: tma_load(dst, dst_index, map, bars, bar_index, c0 [, c1 .. c4]) global -> shared, completing
  // on the mbarrier; tma_store(map, src, src_index, c0 [, ...]) shared -> global, with commit / wait.
  tma_load, tma_store, tma_store_commit, tma_store_wait,
  // warpgroup MMA: descriptors of shared tiles, fence / commit / wait, the MMAs on a local f32 array,
  // and the register moves between warpgroups; shared_address gives an element's shared-window address.
  wgmma_desc, wgmma_fence, wgmma_commit, wgmma_wait, wgmma_bf16, wgmma_f16, setmaxnreg_inc, setmaxnreg_dec,
  shared_address,
  // tensor cores (sm_80+): mma.sync, ldmatrix, cp.async (docs/ir.md "Tensor cores").
  // mma_SHAPE(a, b, c) -> f32x4: one warp-wide D = A * B + C; the element type follows the fragments
  mma_m16n8k16, mma_m16n8k8,
  // ldmatrix_xN[_trans](shared, chunk): N 8x8 matrices of 16-bit elements from shared memory, warp-wide
  ldmatrix_x1, ldmatrix_x2, ldmatrix_x4, ldmatrix_x1_trans, ldmatrix_x2_trans, ldmatrix_x4_trans,
  // cp_asyncN(shared, i, buffer, j[, src_bytes]): N bytes global -> shared without registers, per thread
  cp_async4, cp_async8, cp_async16,
  cp_async_commit,  ///< statement: closes the thread's group of cp_async copies
  cp_async_wait,    ///< statement: cp_async_wait(N), N a constant: waits until at most N groups are pending
  tf32,             ///< tf32(x: f32) -> f32: x rounded to TF32 (cvt.rna.tf32.f32), low 13 mantissa bits zero
};
std::string_view intrinsic_name(Intrinsic i);
std::optional<Intrinsic> intrinsic_from_name(std::string_view);
bool is_atomic(Intrinsic i);
/// shfl_*, ballot, any, all and the warp reductions.
bool is_warp_operation(Intrinsic i);
/// load2 load4 load8 store2 store4 store8.
bool is_vector_access(Intrinsic i);
bool is_vector_store(Intrinsic i);
/// 2, 4 or 8 for the vector accesses, 0 otherwise.
unsigned vector_access_lanes(Intrinsic i);
// tensor cores: mma.sync, ldmatrix, cp.async
/// The tensor-core family: mma, ldmatrix, cp.async (with its commit and wait) and tf32.
bool is_tensor_core(Intrinsic i);
/// mma_m16n8k16 and mma_m16n8k8.
bool is_mma(Intrinsic i);
/// ldmatrix_x1 .. ldmatrix_x4_trans.
bool is_ldmatrix(Intrinsic i);
/// 1, 2 or 4 (matrices) for the ldmatrix forms, 0 otherwise.
unsigned ldmatrix_count(Intrinsic i);
/// The ldmatrix forms with `.trans`.
bool is_ldmatrix_trans(Intrinsic i);
/// cp_async4, cp_async8, cp_async16.
bool is_async_copy(Intrinsic i);
/// 4, 8 or 16 (bytes) for the cp_async forms, 0 otherwise.
unsigned async_copy_bytes(Intrinsic i);
/// Operations every lane of a warp executes together, so the convergence rule (PG1318) and the
/// whole-warp launch rule (PG1320) apply: the warp operations, mma and ldmatrix.
bool is_warp_collective(Intrinsic i);
/// The weakest target that has an intrinsic: sm_80 for the tensor-core family, sm_90a for Hopper's
/// operations, sm 0 (any target ptxgate compiles for) for the rest.
Target intrinsic_target(Intrinsic i);

/// The number of intrinsics (for iterating over all of them).
size_t intrinsic_count();
/// Hopper: mbarrier_init .. shared_address (they need target sm_90a).
bool is_hopper_operation(Intrinsic i);
/// Hopper: wgmma_fence .. setmaxnreg_dec: every thread of the warpgroup (128 threads) takes part.
bool is_warpgroup_operation(Intrinsic i);

/// The memory-model semantics of an atomic (PTX `.sem`): `relaxed` is the default. There is no
/// sequentially consistent atomic in PTX: use a fence (fence_device()) with acq_rel atomics.
enum class MemoryOrder : uint8_t { relaxed, acquire, release, acq_rel };
/// The threads an atomic or fence orders against (PTX `.scope`): `device` (.gpu) is the default.
enum class MemoryScope : uint8_t { block, device, system };
std::string_view memory_order_name(MemoryOrder o);
std::string_view memory_scope_name(MemoryScope s);
std::optional<MemoryOrder> memory_order_from_name(std::string_view);
std::optional<MemoryScope> memory_scope_from_name(std::string_view);

/// Floating-point code generation of a kernel (`@fp(MODE)`, or the compile option).
/// contract: f32/f64 `a * b + c` may become one fma (like nvcc's default -fmad=true);
/// exact: every operation rounds on its own (-ffp-contract=off);
/// fast: contraction, approximate division, square root and transcendentals, f32 denormals
/// flushed to zero (nvcc's --use_fast_math).
enum class FpMode : uint8_t { contract, exact, fast };
std::string_view fp_mode_name(FpMode m);
std::optional<FpMode> fp_mode_from_name(std::string_view);

struct Symbol;
struct Function;
struct AccessFacts;
struct AccessSiteTable;

enum class ExprKind : uint8_t {
  int_literal,    ///< int_value, text
  float_literal,  ///< float_value, text
  bool_literal,   ///< bool_value
  name,           ///< name (-> symbol after verify)
  builtin,        ///< builtin, component (0..2)
  index,          ///< name[operands[0]] (-> symbol after verify); of a vector let/var, a lane
                  ///< (taken modulo the lane count)
  unary,          ///< unary_op operands[0]
  binary,         ///< operands[0] binary_op operands[1]
  cast,           ///< cast_type(operands[0]); for a vector type, cast_type(lane, ...) builds a
                  ///< vector from one value per lane, or from one value for every lane
  call,           ///< intrinsic, device function or unknown `name`; operands are arguments. For
                  ///< atomics, operands[0] is a `name` expression naming the buffer/shared array;
                  ///< for a device function's buffer parameter, a `name` naming the caller's buffer.
};

struct Expr {
  ExprKind kind = ExprKind::int_literal;
  SourceRange range;
  Type type = Type::error;  ///< set by the verifier; concrete after a successful verify

  std::string name;         ///< name / index target / call callee as written
  std::string text;         ///< literal spelling as written
  uint64_t int_value = 0;   ///< int_literal magnitude (always non-negative; `-` is unary)
  double float_value = 0;
  bool bool_value = false;
  Builtin builtin = Builtin::thread_id;
  uint8_t component = 0;    ///< 0=x 1=y 2=z
  UnaryOp unary_op = UnaryOp::neg;
  BinaryOp binary_op = BinaryOp::add;
  Type cast_type = Type::error;
  std::optional<Intrinsic> intrinsic;  ///< for calls; empty for an unknown callee
  std::vector<std::unique_ptr<Expr>> operands;
  /// Atomics: the order and scope written after the operands (`atomic_add(a, i, v, acq_rel, block)`);
  /// relaxed and device when none is written.
  MemoryOrder memory_order = MemoryOrder::relaxed;
  MemoryScope memory_scope = MemoryScope::device;
  /// assert: the 1-based source line of the call (0 when built with the builder API) and the
  /// condition as written (else the canonical text); the device prints both when it fails.
  uint32_t source_line = 0;
  /// A memory access: its first number in the module's AccessSiteTable (src/ptxgate/ir/access_sites.hpp), set
  /// by the verifier; UINT32_MAX for other expressions.
  uint32_t access_site = UINT32_MAX;

  const Symbol* symbol = nullptr;  ///< resolved by the verifier for name/index
  const Function* function = nullptr;  ///< call of a device function, resolved by the verifier
};
using ExprPtr = std::unique_ptr<Expr>;

enum class StmtKind : uint8_t {
  let_decl,     ///< let name [: type] = value
  var_decl,     ///< var name [: type] = value   (value optional only if type given)
  assign,       ///< target = value  (target is a name or index expression)
  if_,          ///< if (cond) then_body [else else_body]
  while_,       ///< while (cond) body
  for_,         ///< for name in lo..hi [step s] [unroll | unroll(n)] body
  break_, continue_, return_,
  expr,         ///< expression statement (a call)
  block,        ///< { body }
  shared_decl,  ///< shared name: elem[size_expr], or elem[] (value null: dynamic, sized by the launch)
  const_decl,   ///< module level: const name: type = value (in Module::constants)
  local_array_decl,  ///< var name: elem[size_expr] (value: the size): a per-thread array, zeroed
};

struct Stmt {
  StmtKind kind = StmtKind::expr;
  SourceRange range;
  std::string name;                 ///< declared name (let/var/for/shared)
  SourceRange name_range;
  std::optional<Type> declared_type;  ///< let/var annotation; shared element type
  ExprPtr target;                   ///< assign
  ExprPtr value;                    ///< let/var init, assign rhs, if/while cond, expr stmt, shared size
  ExprPtr lo, hi, step;             ///< for (step may be null)
  bool unroll = false;              ///< for: `unroll` or `unroll(N)` written after the bounds
  ExprPtr unroll_count;             ///< for: N of `unroll(N)`; null for `unroll` (completely)
  uint32_t unroll_factor = 0;       ///< for: N, set by the verifier; 0 with `unroll`: completely
  std::vector<std::unique_ptr<Stmt>> body;       ///< if-then, while, for, block
  std::vector<std::unique_ptr<Stmt>> else_body;  ///< if-else (an `else if` is one nested if_ stmt)
  bool has_else = false;

  const Symbol* symbol = nullptr;   ///< declaration's symbol, set by the verifier
};
using StmtPtr = std::unique_ptr<Stmt>;

struct Attribute {
  std::string name;           ///< "workgroup", "cooperative"
  std::vector<ExprPtr> args;
  SourceRange range;
};

struct Param {
  std::string name;
  bool is_buffer = false;
  Access access = Access::inout;  ///< buffers only
  Type type = Type::f32;          ///< element type for buffers, value type for scalars
  SourceRange range;
  const Symbol* symbol = nullptr;
};

enum class SymbolKind : uint8_t { scalar_param, buffer_param, let, var, loop_var, shared_array, constant, local_array };

/// A resolved declaration; owned by its Kernel or Function, created by the verifier.
struct Symbol {
  SymbolKind kind = SymbolKind::let;
  std::string name;
  Type type = Type::error;       ///< value type, or element type for buffers/shared arrays
  Access access = Access::inout; ///< buffer_param only
  uint32_t param_index = 0;      ///< params only: position in the signature
  uint64_t array_size = 0;       ///< shared_array, local_array: element count (0 for a dynamic array)
  bool dynamic = false;          ///< shared_array only: `shared NAME: T[];`
  /// constant of integer or bool type: its value, as the type's bits (two's complement,
  /// zero-extended to 64 bits). Float constants are lowered from `decl->value`.
  uint64_t constant_bits = 0;
  /// constant of float type: its value (exact in a double for every float type), computed with
  /// run-time semantics; empty when an integer step inside cannot be computed exactly.
  std::optional<double> float_value;
  SourceRange range;
  const Stmt* decl = nullptr;    ///< declaring statement (null for params)
};

/// What kernels and device functions share: a name, parameters, a body, and what the
/// verifier records about them.
struct Routine {
  std::string name;
  SourceRange name_range;
  SourceRange range;
  std::vector<Param> params;
  std::vector<StmtPtr> body;

  // Filled by the verifier; they include what the device functions called (transitively) use.
  bool uses_grid_sync = false;
  bool uses_barrier = false;
  bool uses_warp_operations = false;  ///< shuffles, votes or warp reductions
  /// Bytes of the routine's own local arrays (`var a: f32[8];`) per thread, before LLVM promotes
  /// those it can to registers.
  uint64_t local_array_bytes = 0;
  /// Bytes of local arrays per thread along its deepest chain of calls: its own and the largest of
  /// the device functions it calls (theirs the same way). A kernel's is held to the 512 KiB limit
  /// (PG1911) with its functions' arrays counted.
  uint64_t stack_local_bytes = 0;
  /// Per parameter, in order: the bytes of the widest vector access (load4, store8, ...) of that
  /// buffer, its own or through the device functions it is passed to, which its base address must
  /// be aligned to; 0 for scalars and buffers without one.
  std::vector<uint32_t> vector_alignment;
  bool uses_assert = false;           ///< calls assert(...) in its own body
  bool uses_warpgroup_operations = false;  ///< wgmma_* or setmaxnreg_* in its own body
  /// The weakest target that has every operation the routine uses, itself or through the functions
  /// it calls (intrinsic_target of each), with the operation that asks for it: check_target
  /// refuses another target (PG1331, PG1350) and target_for_module picks sm_90a for sm_90.
  TargetRequirement target_requirement;
  std::vector<std::unique_ptr<Symbol>> symbols;
};

struct Kernel : Routine {
  std::vector<Attribute> attributes;

  // Filled by the verifier from the attributes.
  std::array<uint32_t, 3> workgroup{0, 0, 0};  ///< required block size; all 0 = none
  bool cooperative = false;
  /// From `@fp(contract|exact|fast)`; empty: the compile option's mode. It applies to the kernel's
  /// own body; device functions follow the compile option.
  std::optional<FpMode> fp_mode;
  uint64_t static_shared_bytes = 0;
  /// The element size of the kernel's dynamic shared array (`shared NAME: T[];`); 0: none.
  uint32_t dynamic_shared_element_bytes = 0;
  /// Every memory access as symbolic expressions of the launch (src/ptxgate/ir/access_analysis.hpp); set by
  /// the verifier for the kernels of a valid module.
  std::shared_ptr<const AccessFacts> access_facts;
  /// The number of threads every block of this kernel must be a whole multiple of: 128 with
  /// warpgroup operations, 32 with warp-wide operations (its own or its functions'), else 1
  /// (src/ptxgate/ir/block_granule.hpp). Launches are held to it (check_launch), @workgroup too (PG1320, PG1358).
  uint32_t block_granule = 1;

  bool has_workgroup() const { return workgroup[0] != 0; }
};

/// A device function: `fn NAME(PARAMS) [-> TYPE] { ... }` at module level, callable from
/// every kernel and function. Scalar parameters are values; buffer parameters pass the
/// caller's buffer through with an access mode.
struct Function : Routine {
  Type result = Type::void_;     ///< the value type after `->`, or void
  SourceRange result_range;      ///< the type after `->` (empty when void)
};

struct Module {
  std::string path;  ///< file name used in diagnostics ("<stdin>", "<builder>")
  /// `const NAME: T = EXPR;` declarations (StmtKind::const_decl) in source order; each is
  /// visible in every kernel and in the constants after it.
  std::vector<StmtPtr> constants;
  std::vector<Kernel> kernels;
  /// `fn` declarations in source order; each is visible in every kernel and function.
  std::vector<Function> functions;
  /// Symbols of the constants, owned here; created by the verifier.
  std::vector<std::unique_ptr<Symbol>> constant_symbols;
  /// Every memory access as written, numbered (src/ptxgate/ir/access_sites.hpp); set by the verifier for a
  /// valid module.
  std::shared_ptr<const AccessSiteTable> access_sites;

  const Kernel* find_kernel(std::string_view name) const;
  const Function* find_function(std::string_view name) const;
};

}  // namespace ptxgate::ir
