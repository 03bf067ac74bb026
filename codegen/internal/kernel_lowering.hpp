// The lowering of one kernel or device function to LLVM IR: one class whose members live in one
// file per family (lower.cpp: signature and names; lower_statements.cpp; lower_expressions.cpp;
// lower_warp.cpp; lower_calls.cpp: calls, atomics, assert, math; lower_hopper.cpp; lower_tensor_core.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "ptxgate/ir/ast.hpp"

namespace ptxgate::codegen::lowering {

/// A broken verifier invariant; caught by lower_module and reported as PG9000.
struct InvariantFailure {
  std::string message;
};

[[noreturn]] void invariant_failed(std::string message);

constexpr unsigned kGlobalSpace = 1;
constexpr unsigned kSharedSpace = 3;

/// Type of a value in registers (bool is i1).
llvm::Type* value_type(llvm::LLVMContext& c, ir::Type t);
/// Type of an element in buffers and shared arrays (bool takes one byte).
llvm::Type* memory_type(llvm::LLVMContext& c, ir::Type t);

/// What a resolved name stands for while lowering one kernel.
struct Binding {
  enum class Kind : uint8_t { value, slot, buffer, shared, local } kind = Kind::value;
  llvm::Value* value = nullptr;        ///< SSA value, alloca, buffer pointer, shared global or local array
  ir::Type type = ir::Type::error;     ///< value type, or element type of buffer/shared/local
  llvm::Type* array_type = nullptr;    ///< shared, local: [N x T]
  int param_index = -1;                ///< buffer: signature position
};

/// The LLVM function of each device function, declared before any body is lowered.
using FunctionMap = std::unordered_map<const ir::Function*, llvm::Function*>;

/// A device function's declaration (lower.cpp).
llvm::Function* declare_device_function(const ir::Function& f, llvm::Module& module);

/// Lowers the body of one kernel or device function.
class KernelLowering {
 public:
  KernelLowering(const ir::Kernel& kernel, llvm::Module& module, const FunctionMap& functions, ir::FpMode module_fp_mode);
  /// A device function follows the compile option's floating-point mode (a kernel's @fp covers
  /// its own body).
  KernelLowering(const ir::Function& function, llvm::Module& module, const FunctionMap& functions,
                 ir::FpMode module_fp_mode);

  void run();

 private:
  struct LoopTargets {
    llvm::BasicBlock* continue_target;
    llvm::BasicBlock* break_target;
  };

  // ---- signature, attributes, annotations, names, control flow helpers (lower.cpp) ----
  void declare_function();
  void set_buffer_attributes();
  void annotate();
  const Binding& binding_of(const ir::Expr& e);
  const ir::Symbol& declared_symbol(const ir::Stmt& s);
  llvm::AllocaInst* entry_slot(ir::Type t, const std::string& name);
  llvm::BasicBlock* new_block(const char* name);
  void branch_to(llvm::BasicBlock* target);
  void continue_in_dead_block();

  // ---- statements (lower_statements.cpp) ----
  void statements(const std::vector<ir::StmtPtr>& body);
  void statement(const ir::Stmt& s);
  void assignment(const ir::Stmt& s);
  void if_statement(const ir::Stmt& s);
  void while_statement(const ir::Stmt& s);
  llvm::MDNode* unroll_metadata(uint32_t factor, std::optional<uint64_t> trips = std::nullopt);
  static std::optional<uint64_t> constant_trip_count(llvm::Value* lo, llvm::Value* hi, llvm::Value* step,
                                                     bool is_signed);
  void for_statement(const ir::Stmt& s);
  void shared_array(const ir::Stmt& s);
  void local_array(const ir::Stmt& s);
  void dynamic_shared_array(const ir::Stmt& s, const ir::Symbol& symbol);

  // ---- expressions, conversions, addresses, vectors (lower_expressions.cpp) ----
  llvm::Value* expr(const ir::Expr& e);
  llvm::Value* constant(const ir::Symbol& symbol);
  llvm::Value* builtin(ir::Builtin which, uint8_t component);
  llvm::Value* warp_index();
  llvm::Value* fp_flags(llvm::Value* v, ir::Type t);
  llvm::Value* fast_divide(llvm::Value* l, llvm::Value* r);
  llvm::Value* unary(const ir::Expr& e);
  llvm::Value* binary(const ir::Expr& e);
  llvm::Value* integer_division(llvm::Value* l, llvm::Value* r, bool is_signed, bool remainder);
  llvm::Value* shift_amount(llvm::Value* amount, llvm::Type* shifted);
  llvm::Value* short_circuit(const ir::Expr& e);
  llvm::Value* convert(llvm::Value* v, ir::Type from, ir::Type to);
  llvm::Value* to_memory(llvm::Value* v, ir::Type t);
  llvm::Value* from_memory(llvm::Value* v, ir::Type t);
  llvm::Value* index64(const ir::Expr& index);
  llvm::Value* element_address(const Binding& array, const ir::Expr& index);
  llvm::Value* lane_index(const ir::Expr& index, ir::Type vector);
  llvm::Value* build_vector(const ir::Expr& e);
  llvm::Value* vector_access(const ir::Expr& e, ir::Intrinsic which);

  // ---- warp operations (lower_warp.cpp; the verifier guarantees all 32 lanes arrive) ----
  static constexpr uint32_t kFullWarp = 0xffffffffu;
  llvm::Value* shuffle(ir::Intrinsic mode, llvm::Value* v, llvm::Value* lane);
  llvm::Value* warp_operation(const ir::Expr& e, ir::Intrinsic which);

  // ---- calls, atomics, assert, math functions (lower_calls.cpp) ----
  llvm::Value* function_call(const ir::Expr& e);
  llvm::Value* call(const ir::Expr& e);
  llvm::Value* atomic(const ir::Expr& e, ir::Intrinsic which);
  llvm::Value* ordered_atomic(const ir::Expr& e, ir::Intrinsic which, const Binding& array, llvm::Value* address);
  void lower_assert(const ir::Expr& e);

  // ---- Hopper: mbarrier, TMA, wgmma (lower_hopper.cpp) ----
  static bool is_wgmma(const ir::Expr& e);
  bool touches_wgmma_accumulator(const ir::Expr& e);
  bool touches_wgmma_accumulator(const std::vector<ir::StmtPtr>& body);
  const std::unordered_set<const ir::Symbol*>& wgmma_accumulators();
  void inline_ptx(const std::string& text, const std::string& constraints, const std::vector<llvm::Value*>& args);
  llvm::Value* shared_element(const ir::Expr& array, const ir::Expr& index);
  llvm::Value* mbarrier_pointer(const ir::Expr& bars, const ir::Expr& index);
  uint64_t constant_value(const ir::Expr& e);
  llvm::Value* mbarrier_try_wait(llvm::Value* bar, llvm::Value* parity);
  llvm::Value* hopper_operation(const ir::Expr& e, ir::Intrinsic which);
  void wgmma(const ir::Expr& e, std::string_view element);

  // ---- tensor cores: mma.sync, ldmatrix, cp.async (lower_tensor_core.cpp) ----
  llvm::Value* chunk_address(const Binding& array, const ir::Expr& index, unsigned bytes);
  llvm::Value* tensor_core(const ir::Expr& e, ir::Intrinsic which);

  const ir::Routine& kernel_;                 ///< the kernel or device function being lowered
  const ir::Kernel* as_kernel_ = nullptr;     ///< null while lowering a device function
  const ir::Function* as_function_ = nullptr; ///< null while lowering a kernel
  llvm::Module& module_;
  llvm::LLVMContext& context_;
  llvm::IRBuilder<> builder_;
  const ir::FpMode fp_mode_;
  llvm::Function* function_ = nullptr;
  llvm::Argument* grid_barrier_word_ = nullptr;
  std::vector<Binding> params_;
  std::unordered_map<const ir::Symbol*, Binding> bindings_;
  std::unordered_map<const ir::Symbol*, llvm::Constant*> constant_values_;  ///< bool and float module constants
  bool in_constant_ = false;  ///< lowering a module constant's value expression
  std::optional<std::unordered_set<const ir::Symbol*>> accumulators_;  ///< Hopper: wgmma_accumulators()
  std::unordered_map<std::string, Binding> arrays_by_name_;
  std::vector<LoopTargets> loops_;
  std::vector<bool> buffer_read_, buffer_written_;
  const FunctionMap& functions_;
};

}  // namespace ptxgate::codegen::lowering
