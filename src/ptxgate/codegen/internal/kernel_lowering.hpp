// The lowering of one kernel or device function to LLVM IR: one class whose members live in one
// file per family (lower.cpp: signature and names; lower_statements.cpp; lower_expressions.cpp;
// lower_warp.cpp; lower_calls.cpp: calls, atomics, assert, math; lower_hopper.cpp; lower_tensor_core.cpp;
// lower_checked.cpp: checked mode's guards).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "ptxgate/contract/checked.hpp"
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
/// Bytes of an element in memory: memory_type's size (bool takes one byte).
inline uint32_t element_bytes(ir::Type t) { return t == ir::Type::bool_ ? 1 : ir::byte_size(t); }

/// What a resolved name stands for while lowering one kernel.
struct Binding {
  enum class Kind : uint8_t { value, slot, buffer, shared, local } kind = Kind::value;
  llvm::Value* value = nullptr;        ///< SSA value, alloca, buffer pointer, shared global or local array
  ir::Type type = ir::Type::error;     ///< value type, or element type of buffer/shared/local
  llvm::Type* array_type = nullptr;    ///< shared, local: [N x T]
  int param_index = -1;                ///< buffer: signature position
  /// Checked mode: the array's length in bytes (i64): a buffer's hidden parameter, a static shared
  /// or local array's size; null for the dynamic shared array (read from %dynamic_smem_size).
  llvm::Value* length = nullptr;
};

/// Checked mode for one module (codegen::CodegenOptions::checked): the sites that need a guard
/// (ir::sites_needing_guards).
struct CheckedLowering {
  std::vector<bool> guards;
};

/// The LLVM function of each device function, declared before any body is lowered.
using FunctionMap = std::unordered_map<const ir::Function*, llvm::Function*>;

/// A device function's declaration (lower.cpp); in checked mode with a hidden length per buffer
/// parameter and the record pointer after its parameters (and grid-barrier word).
llvm::Function* declare_device_function(const ir::Function& f, llvm::Module& module, bool checked);

/// Lowers the body of one kernel or device function.
class KernelLowering {
 public:
  /// `checked`: checked mode's guards (null: none). `unroll_register_tiles`: lower register-tile
  /// loops unrolled (register_tile_trips; the optimising levels, whose unroller would unroll them).
  KernelLowering(const ir::Kernel& kernel, llvm::Module& module, const FunctionMap& functions, ir::FpMode module_fp_mode,
                 const CheckedLowering* checked = nullptr, bool unroll_register_tiles = false);
  /// A device function follows the compile option's floating-point mode (a kernel's @fp covers
  /// its own body).
  KernelLowering(const ir::Function& function, llvm::Module& module, const FunctionMap& functions,
                 ir::FpMode module_fp_mode, const CheckedLowering* checked = nullptr,
                 bool unroll_register_tiles = false);

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
  std::optional<uint64_t> register_tile_trips(const ir::Stmt& s, llvm::Value* lo, llvm::Value* hi, llvm::Value* step,
                                              bool is_signed) const;
  void unrolled_for_statement(const ir::Stmt& s, const ir::Symbol& symbol, llvm::Value* lo, llvm::Value* step,
                              uint64_t trips);
  void shared_array(const ir::Stmt& s);
  void local_array(const ir::Stmt& s);
  void dynamic_shared_array(const ir::Stmt& s, const ir::Symbol& symbol);

  // ---- expressions, conversions, addresses, vectors (lower_expressions.cpp) ----
  llvm::Value* expr(const ir::Expr& e);
  llvm::Value* constant(const ir::Symbol& symbol);
  llvm::Value* builtin(ir::Builtin which, uint8_t component);
  llvm::Value* warp_index();
  uint32_t required_block_extent(uint8_t dim) const;
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
  /// The address of element `index` (an i64) of `array`.
  llvm::Value* element_pointer(const Binding& array, llvm::Value* index);
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
  llvm::Value* atomic_access(const ir::Expr& e, ir::Intrinsic which, const Binding& array, llvm::Value* address,
                             llvm::Value* value, llvm::Value* desired);
  llvm::Value* ordered_atomic(const ir::Expr& e, ir::Intrinsic which, const Binding& array, llvm::Value* address,
                              llvm::Value* value, llvm::Value* desired);
  void lower_assert(const ir::Expr& e);

  // ---- Hopper: mbarrier, TMA, wgmma (lower_hopper.cpp) ----
  static bool is_wgmma(const ir::Expr& e);
  bool touches_wgmma_accumulator(const ir::Expr& e);
  bool touches_wgmma_accumulator(const std::vector<ir::StmtPtr>& body);
  const std::unordered_set<const ir::Symbol*>& wgmma_accumulators();
  void inline_ptx(const std::string& text, const std::string& constraints, const std::vector<llvm::Value*>& args);
  llvm::Value* shared_element(const ir::Expr& array, const ir::Expr& index);
  uint64_t constant_value(const ir::Expr& e);
  llvm::Value* mbarrier_try_wait(llvm::Value* bar, llvm::Value* parity);
  llvm::Value* hopper_operation(const ir::Expr& e, ir::Intrinsic which);
  void wgmma(const ir::Expr& e, std::string_view element);
  /// The wgmma accumulators that loop `s` (of `trips` iterations, unrolled by LLVM) reads by index and
  /// does not write, each taken once before it as one vector (snapshots_): what it reads with the loop
  /// variable then comes from registers, so the first SROA promotes the accumulator.
  std::vector<const ir::Symbol*> snapshot_accumulators(const ir::Stmt& s, std::optional<uint64_t> trips);

  // ---- checked mode (lower_checked.cpp) ----
  /// Whether part `part` of access `e` (ir::site_count) gets a guard: checked mode, and not proven
  /// in bounds for every launch.
  bool guarded(const ir::Expr& e, uint32_t part = 0) const;
  uint32_t site_of(const ir::Expr& e, uint32_t part = 0) const { return e.access_site + part; }
  void bind_checked_parameters(size_t first_hidden);
  /// The array's length in bytes (i64).
  llvm::Value* array_length(const Binding& array);
  /// Whether `index` (an i64, in units of `stride` bytes, a power of two) starts a `stride`-byte
  /// access inside the array: index < length / stride as unsigned (a negative index is huge).
  llvm::Value* index_in_bounds(const Binding& array, llvm::Value* index, uint32_t stride);
  /// The latch's type: {i32 site | reason << 28 (kNoViolation: none), i64 value, i64 limit}.
  llvm::StructType* latch_type();
  static constexpr uint32_t kNoViolation = 0xFFFFFFFFu;
  /// A kernel's latch of the thread's first violation, made at its entry (device functions get
  /// their caller's as a hidden parameter).
  void make_latch();
  /// Where `ok` is false and the thread holds no violation yet, the latch takes `reason` at `site`
  /// with `value` and `limit`: selects, no control flow and no memory operation once promoted.
  void record_violation(llvm::Value* ok, uint32_t site, contract::Violation reason, llvm::Value* value,
                        llvm::Value* limit);
  /// A kernel's `return` (and the end of its body): with a latch, a branch to the one exit block
  /// that finish_kernel() fills; else `ret void`.
  void return_from_kernel();
  /// After the body: the exit block, where a thread that holds a violation counts itself in the
  /// launch's record and the first one writes it (contract::CheckedRecord). One block for every
  /// return, made last, so that it knows the limit of every site the kernel latches.
  void finish_kernel();
  /// 16 bytes, 16-aligned, in `array`'s address space, that no user code reads: where a stopped
  /// access goes (a buffer: its record's sink; shared: a module sink; local: an alloca).
  llvm::Value* sink(const Binding& array);
  /// Runs `access` where `ok` holds (a branch: for operations that cannot be redirected, such as
  /// mbarrier operations); elsewhere records `reason` at `site` and gives `fallback`. Returns the
  /// access's value merged with `fallback` (null for an access without a value).
  llvm::Value* guard(llvm::Value* ok, uint32_t site, contract::Violation reason, llvm::Value* value, llvm::Value* limit,
                     const std::function<llvm::Value*()>& access, llvm::Value* fallback);
  /// `load` at `address` (element `index` of `array`, `stride` bytes), guarded at `site` when
  /// `check`: outside the array it loads the sink and gives 0 (with `zero_page`, a buffer's load
  /// reads the record slot's zero bytes instead: a plain load, not an atomic). No control flow.
  llvm::Value* checked_load(bool check, uint32_t site, const Binding& array, llvm::Value* index, uint32_t stride,
                            llvm::Value* address, const std::function<llvm::Value*(llvm::Value*)>& load,
                            bool zero_page = false);
  /// `store` (a store or an atomic) at `address`, redirected to the sink outside the array.
  void checked_store(bool check, uint32_t site, const Binding& array, llvm::Value* index, uint32_t stride,
                     llvm::Value* address, const std::function<void(llvm::Value*)>& store);
  /// An operation without a value that is skipped outside the array when `check` (a branch).
  void checked_effect(bool check, uint32_t site, const Binding& array, llvm::Value* index, uint32_t stride,
                      const std::function<void()>& effect);
  /// The block's dynamic shared memory in bytes (%dynamic_smem_size), as an i64.
  llvm::Value* dynamic_shared_bytes();
  /// A TMA tile's checks (tma_load, tma_store `e`): its shared address `address` (element `index`
  /// of `tile`) inside the array and 128-byte aligned (site part 0), the innermost coordinate
  /// times the element size a multiple of 16 bytes (part `tile_part`). A violation is recorded and
  /// the copy redirected so that it faults nowhere: the coordinate to -2^30 (a box wholly outside
  /// the tensor: a load writes zeros and still completes its bytes, a store writes nothing), the
  /// shared address down to a 128-byte boundary (from the array's start when the index is outside it).
  void checked_tile(const ir::Expr& e, const Binding& tile, llvm::Value* index, llvm::Value*& address,
                    std::vector<llvm::Value*>& coordinates, uint32_t tile_part);

  // ---- tensor cores: mma.sync, ldmatrix, cp.async (lower_tensor_core.cpp) ----
  /// The address of the `bytes`-sized chunk `index` (an i64) of a buffer or shared array.
  llvm::Value* chunk_pointer(const Binding& array, llvm::Value* index, unsigned bytes);
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
  const CheckedLowering* checked_ = nullptr;
  llvm::Value* record_ = nullptr;       ///< checked mode: the launch's CheckedRecord (ptr addrspace(1))
  llvm::Value* latch_ = nullptr;        ///< checked mode: the thread's first violation (latch_type())
  /// Checked mode, a kernel's own sites: the limit of each latched code (site | reason << 28), a
  /// parameter or constant, or null for the dynamic shared size; finish_kernel selects by code.
  std::vector<std::pair<uint32_t, llvm::Value*>> kernel_limits_;
  llvm::Value* dynamic_bytes_ = nullptr;  ///< the last array_length() of the dynamic shared array
  llvm::BasicBlock* exit_ = nullptr;      ///< checked mode: a kernel's one exit block (return_from_kernel)
  llvm::Value* shared_sink_ = nullptr;  ///< checked mode: sink(), made on first use
  llvm::Value* local_sink_ = nullptr;
  std::vector<Binding> params_;
  std::unordered_map<const ir::Symbol*, Binding> bindings_;
  std::unordered_map<const ir::Symbol*, llvm::Constant*> constant_values_;  ///< bool and float module constants
  bool in_constant_ = false;  ///< lowering a module constant's value expression
  std::optional<std::unordered_set<const ir::Symbol*>> accumulators_;  ///< Hopper: wgmma_accumulators()
  /// Hopper: the accumulators of the loops being lowered as one <N x float> each (snapshot_accumulators).
  std::unordered_map<const ir::Symbol*, llvm::Value*> snapshots_;
  std::unordered_map<std::string, Binding> arrays_by_name_;
  std::vector<LoopTargets> loops_;
  bool unroll_register_tiles_ = false;  ///< register-tile loops lowered unrolled (register_tile_trips)
  std::vector<bool> buffer_read_, buffer_written_;
  const FunctionMap& functions_;
};

}  // namespace ptxgate::codegen::lowering
