// Internal pieces of the verifier shared by its source files (not a public interface).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptxgate/ir/verifier.hpp"

namespace ptxgate::ir::verifier_detail {

/// Collects the verifier's diagnostics with source locations; stops at the diagnostic limit.
class Reporter {
 public:
  Reporter(std::string module_path, const diag::SourceFile* file, uint32_t max_diagnostics);

  /// Adds a diagnostic of `code` at `range`; returns null (and drops it) once the limit is reached.
  diag::Diagnostic* report(diag::Code code, SourceRange range, std::string message, std::string fix);
  /// "line 3" for notes and messages; "an earlier line" when there is no source file.
  std::string line_of(SourceRange range) const;
  /// True once the diagnostic limit was reached.
  bool stopped() const { return stopped_; }
  diag::Diagnostics take() { return std::move(diagnostics_); }
  /// The location of `range` (the module's path alone when there is no source file).
  diag::Location locate(SourceRange range) const;

 private:

  std::string module_path_;
  const diag::SourceFile* file_;
  uint32_t max_diagnostics_;
  bool stopped_ = false;
  diag::Diagnostics diagnostics_;
};

/// "parameter", "let binding", "shared array", ... for messages.
std::string_view symbol_kind_words(SymbolKind kind);
/// "u32", or "an integer literal" / "a float literal" for untyped literals.
std::string describe_type(Type t);
/// The closest of `candidates` to `name` (edit distance at most 2), for "did you mean" hints.
std::optional<std::string> closest_name(std::string_view name, const std::vector<std::string>& candidates);
/// The value of an integer expression built only from literals, constants, operators and casts
/// (a float operand of a cast is evaluated by eval_float_constant and saturated, as at run time);
/// nullopt when it is not constant, divides by zero or leaves a safe range, with the reason in
/// `why` when given.
std::optional<__int128> eval_int_constant(const Expr& e, std::string* why = nullptr);
/// The value of a typed float expression of literals, float constants, arithmetic and casts,
/// rounded as at run time (verifier_constants.cpp); nullopt (the reason in `why`) otherwise.
std::optional<double> eval_float_constant(const Expr& e, std::string* why = nullptr);
/// The largest and smallest value of an integer type.
uint64_t max_value(Type t);
__int128 min_value(Type t);
/// Decimal spelling of a 128-bit integer.
std::string int128_text(__int128 v);

/// An untyped literal (or an expression of literals) whose type its context decides.
inline bool is_literal(Type t) { return t == Type::int_literal || t == Type::float_literal; }
/// bool or a number: what values, casts and literals may have.
inline bool is_value_type(Type t) { return t == Type::bool_ || is_numeric(t); }
/// == != < <= > >=
inline bool is_comparison(BinaryOp op) {
  return op == BinaryOp::eq || op == BinaryOp::ne || op == BinaryOp::lt || op == BinaryOp::le ||
         op == BinaryOp::gt || op == BinaryOp::ge;
}
/// & | ^ << >>
inline bool is_bitwise(BinaryOp op) {
  return op == BinaryOp::bit_and || op == BinaryOp::bit_or || op == BinaryOp::bit_xor || op == BinaryOp::shl ||
         op == BinaryOp::shr;
}
/// The fix of a type mismatch from `from` to `to` ("convert explicitly with T(...)", ...).
std::string conversion_fix(Type from, Type to);
/// The call forms of the warp operations and the tensor-core operations, for messages
/// (verifier_warp.cpp, verifier_tensor.cpp).
std::string_view warp_signature(Intrinsic fn);
std::string_view tensor_core_signature(Intrinsic fn);

/// The module's constants by name (symbols owned by the Module).
using ConstantTable = std::unordered_map<std::string, Symbol*>;

/// The module's device functions by name (owned by the Module).
using FunctionTable = std::unordered_map<std::string, Function*>;

/// A synchronising operation (barrier, grid_sync or a warp operation) that running a device
/// function reaches: the call expression of the operation and the function whose body holds it.
struct ReachedOperation {
  const Expr* operation = nullptr;
  const Function* in = nullptr;
};

/// What the verifier learns about a device function for its callers.
struct FunctionFacts {
  ReachedOperation barrier, grid_sync, warp_operation;  ///< the first of each, its own or a callee's
  /// Whether its result may differ between the threads of a block (index 0) or the lanes of a
  /// warp (index 1) even when every argument is the same in all of them.
  bool result_varies[2] = {true, true};
  bool analysed = false;  ///< the divergence analysis has run on it (callees come first)
};
using FunctionFactsTable = std::unordered_map<const Function*, FunctionFacts>;

/// Resolves names, types every expression and checks the kernel rules of one kernel or
/// device function. `constants` are visible everywhere in the kernel (outside every scope,
/// so a parameter or local of the same name is a redefinition); `functions` may be called.
class KernelChecker {
 public:
  KernelChecker(Kernel& kernel, Reporter& reporter, const Limits& limits, const ConstantTable* constants = nullptr,
                const FunctionTable* functions = nullptr);
  KernelChecker(Function& function, Reporter& reporter, const Limits& limits, const ConstantTable* constants,
                const FunctionTable* functions);
  void run();
  /// Checks one module constant against the constants before it (the table this checker
  /// was made with), evaluates integer and bool constants, and returns its new symbol,
  /// owned by `owner`. Run on a checker over an empty scratch kernel.
  Symbol* check_constant(Stmt& s, std::vector<std::unique_ptr<Symbol>>& owner);

 private:
  // Kernel-level pieces (verifier.cpp).
  void check_attributes();
  void check_workgroup(Attribute& attr);
  void check_fp_mode(Attribute& attr);
  void declare_params();
  void check_block(std::vector<StmtPtr>& body);
  void check_stmt(Stmt& s);
  void check_decl(Stmt& s);
  void check_assign(Stmt& s);
  void check_for(Stmt& s);
  void check_unroll(Stmt& s, Type type);
  void check_shared(Stmt& s);
  void check_local_array(Stmt& s);
  /// The value of a constant array size (shared or local), or nullopt after reporting `code`.
  std::optional<uint64_t> array_size(Stmt& s, diag::Code code, std::string_view what);
  void check_condition(Expr& cond, std::string_view statement);
  void check_expr_stmt(Stmt& s);
  void check_shared_total();
  /// PG1911 for the local arrays of the kernel and of its deepest chain of device functions;
  /// records the kernel's stack_local_bytes.
  void check_local_total();
  /// Records the kernel's block granule (src/ptxgate/ir/block_granule.hpp) and holds its @workgroup to it:
  /// PG1320 (not whole warps), PG1358 (not whole warpgroups).
  void check_block_granule();
  Symbol* declare(SymbolKind kind, const std::string& name, SourceRange range, Type type, const Stmt* decl);
  Symbol* lookup(const std::string& name) const;
  void push_scope();
  void pop_scope();
  std::vector<std::string> visible_names() const;
  bool enter_nesting(SourceRange range);

  // Expressions (verifier_expr.cpp; literal typing in verifier_literals.cpp). `infer` may return a
  // literal type or void.
  Type infer(Expr& e);
  /// infer, rejecting void (PG1107).
  Type value(Expr& e);
  /// value, then untyped literals take their default type (i32 / f32).
  Type concrete(Expr& e);
  /// value, then the expression must have type `target` (literals take it); otherwise
  /// PG1201 with `mismatch(found)` as the message. Returns the resulting type or error.
  Type expect(Expr& e, Type target, const std::function<std::string(Type found)>& mismatch);
  /// Gives a literal-typed expression the concrete type `target`, checking ranges.
  bool coerce(Expr& e, Type target);
  bool coerce_tree(Expr& e, Type target, bool under_negation);
  void assign_literal_types(Expr& e, Type target);
  /// Untyped literals in `e` take their default type (i32 / f32) without range checks (after an error).
  void default_literal_types(Expr& e);
  /// The common type of two operands; literals take the other side's type.
  Type unify(Expr& a, Expr& b, std::string_view what, SourceRange where);
  Type infer_name(Expr& e);
  Type infer_builtin(Expr& e);
  Type infer_index(Expr& e, bool is_write);
  Type infer_unary(Expr& e);
  Type infer_binary(Expr& e);
  Type infer_cast(Expr& e);
  // Calls (verifier_calls.cpp): intrinsics by family, device functions.
  Type infer_call(Expr& e);
  Type infer_math(Expr& e, Intrinsic fn);
  Type infer_select(Expr& e);
  Type infer_atomic(Expr& e, Intrinsic fn);
  // Warp operations (verifier_warp.cpp).
  Type infer_warp(Expr& e, Intrinsic fn);
  /// A call of a device function: arguments against its parameters, its uses into this routine's.
  Type infer_function_call(Expr& e, const Function& callee);
  void check_buffer_argument(Expr& arg, const Param& param, const Function& callee);
  void check_return(Stmt& s);
  /// "kernel 'k'" or "function 'f'", for messages.
  std::string owner() const;
  // Vectors (verifier_vector.cpp).
  Type infer_vector_access(Expr& e, Intrinsic fn);
  Type infer_vector_build(Expr& e);
  Type infer_vector_binary(Expr& e, Type ta, Type tb);
  Type infer_lane(Expr& e, Symbol& vector);
  // Tensor cores: mma.sync, ldmatrix, cp.async (verifier_tensor.cpp).
  Type infer_tensor_core(Expr& e, Intrinsic fn);
  Type infer_mma(Expr& e, Intrinsic fn);
  Type infer_ldmatrix(Expr& e, Intrinsic fn);
  Type infer_async_copy(Expr& e, Intrinsic fn);
  Type infer_async_wait(Expr& e);
  /// Raises the routine's target requirement to what `fn` needs, remembering where (verifier.cpp).
  void require_target(Intrinsic fn, SourceRange range);
  /// PG1220 when `t` is a vector type where only scalars may stand; true if reported.
  bool reject_vector_type(Type t, SourceRange range, std::string_view what);
  Type index_operand(Expr& index, const std::string& target);
  /// Resolves a name that must denote a buffer or shared array (indexing, atomics).
  Symbol* storage(Expr& e, std::string_view use, bool allow_local = false);
  /// The first argument of an atomic or a vector access: a buffer or shared array named by
  /// `target` (PG1108 for anything else, with `call_form` as the fix); null when it is not one.
  Symbol* array_argument(Expr& target, std::string_view name, std::string_view call_form);
  bool check_arity(Expr& e, std::string_view fn, size_t expected);
  void report_undefined(Expr& e);
  /// Types the target of an assignment (a write: `in` buffers are rejected, `out` allowed).
  Type infer_assign_target(Expr& target);

  // Hopper: mbarrier, TMA, wgmma (verifier_hopper.cpp).
  Type infer_hopper(Expr& e, Intrinsic fn);
  /// PG1351 when `t` is tensor_map where only values or elements may stand; true if reported.
  bool reject_tensor_map_type(Type t, SourceRange range, std::string_view what);
  /// `bars[index]` of an mbarrier operation: a shared u64 array (PG1352); null when it is not one.
  Symbol* mbarrier_operand(Expr& bars, Expr& index, std::string_view fn);
  /// `array[index]` of a TMA copy, descriptor or shared address: a shared numeric array (`code`).
  Symbol* shared_tile_operand(Expr& array, Expr& index, std::string_view fn, diag::Code code);
  /// The map of a TMA copy: a tensor_map parameter, by name (PG1353).
  bool tensor_map_operand(Expr& map, std::string_view fn);
  /// PG1360: a constant innermost coordinate of a TMA copy that is not a multiple of 16 bytes of the
  /// tile's element type (the box's elements are the shared array's).
  void tma_innermost_coordinate(Expr& c0, const Symbol& tile, std::string_view fn);
  /// A u32 constant in lo..hi, a multiple of `multiple` (PG1355 otherwise).
  std::optional<uint64_t> constant_operand(Expr& e, uint64_t lo, uint64_t hi, uint64_t multiple, std::string_view fn,
                                           std::string_view what);

  /// Whether `e` only uses literals, constants, operators and casts (PG1109 otherwise);
  /// `what` receives the first thing that is not constant.
  bool is_constant_expression(const Expr& e, std::string& what) const;

  Routine& kernel_;             ///< the kernel or device function being checked
  Kernel* const as_kernel_;     ///< null while checking a device function
  Function* const as_function_; ///< null while checking a kernel
  Reporter& reporter_;
  const Limits& limits_;
  const ConstantTable* constants_;
  const FunctionTable* functions_;
  std::unordered_map<std::string, Symbol*> visible_;
  std::unordered_map<const Symbol*, uint32_t> scope_of_;
  std::vector<std::pair<std::string, Symbol*>> shadowed_;  ///< undo log for pop_scope
  std::vector<size_t> scope_marks_;
  uint32_t loop_depth_ = 0;
  uint32_t block_depth_ = 0;  ///< 1 at the kernel's top level
  uint32_t nesting_ = 0;
  bool nesting_reported_ = false;
  bool saw_workgroup_ = false;
  bool saw_cooperative_ = false;
  /// A kernel's call of the device function with the most local arrays along its calls (PG1911).
  const Expr* deepest_call_ = nullptr;
  uint64_t deepest_call_local_bytes_ = 0;
  std::vector<const Symbol*> shared_arrays_;
  const Symbol* dynamic_shared_ = nullptr;  ///< the kernel's `shared NAME: T[];`, if any
};

/// The divergence analysis: PG1305 for barrier() and PG1312 for grid_sync() reached under
/// control flow that depends on thread-varying values, and PG1318 for warp operations under
/// control flow that depends on lane-varying values. Needs resolved symbols.
/// A call of a device function counts as its barrier, grid_sync and warp operations, and its
/// result varies as `facts` say. Run on functions callee first: a function's parameters are
/// taken as thread-varying (any caller may pass such values), and its facts are completed.
/// Hopper: PG1356 for warpgroup operations (wgmma, setmaxnreg) under control flow that depends on values
/// that differ within a warpgroup (warp_id, lane_id, thread ids, loads, ...; warpgroup_id and block_id
/// are uniform there).
void check_divergence(const Kernel& kernel, Reporter& reporter, const FunctionFactsTable& facts);
void check_divergence(const Function& function, Reporter& reporter, FunctionFactsTable& facts);

/// Whether running `body` always ends in a `return` (if/else both returning counts; loops
/// never do, since the verifier does not evaluate their conditions).
bool always_returns(const std::vector<StmtPtr>& body);

/// Module-level checks of device functions: names that clash (PG1110), recursion (PG1321, each
/// cycle once, named in full), then each function's transitive uses (barrier, grid_sync, warp
/// operations) and reached operations in `facts`. Returns the functions callee first (every
/// function after the ones it calls; functions on a cycle in source order).
std::vector<Function*> check_call_graph(Module& module, Reporter& reporter, FunctionFactsTable& facts);

/// Raises `routine`'s vector_alignment of each buffer parameter it passes to a device function
/// to what that function's parameter needs (run on functions callee first, then on kernels).
void propagate_vector_alignment(Routine& routine);

}  // namespace ptxgate::ir::verifier_detail
