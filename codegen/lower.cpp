// IR -> LLVM IR: kernel signatures, statements, expressions, builtins, atomics and math calls.
#include "ptxgate/codegen/internal/lower.hpp"

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <llvm/ADT/APSInt.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Metadata.h>

#include "ptxgate/codegen/internal/budget.hpp"
#include "ptxgate/codegen/internal/grid_sync.hpp"
#include "ptxgate/codegen/internal/nvptx.hpp"
#include "ptxgate/codegen/internal/tensor_core.hpp"
#include "ptxgate/ir/printer.hpp"

namespace ptxgate::codegen {
namespace {

/// A broken verifier invariant; caught by lower_module and reported as PG9000.
struct InvariantFailure {
  std::string message;
};

[[noreturn]] void invariant_failed(std::string message) { throw InvariantFailure{std::move(message)}; }

constexpr unsigned kGlobalSpace = 1;
constexpr unsigned kSharedSpace = 3;

/// Type of a value in registers (bool is i1).
llvm::Type* value_type(llvm::LLVMContext& c, ir::Type t) {
  switch (t) {
    case ir::Type::bool_: return llvm::Type::getInt1Ty(c);
    case ir::Type::i32: case ir::Type::u32: return llvm::Type::getInt32Ty(c);
    case ir::Type::i64: case ir::Type::u64: return llvm::Type::getInt64Ty(c);
    case ir::Type::f32: return llvm::Type::getFloatTy(c);
    case ir::Type::f64: return llvm::Type::getDoubleTy(c);
    case ir::Type::i8: case ir::Type::u8: return llvm::Type::getInt8Ty(c);
    case ir::Type::i16: case ir::Type::u16: return llvm::Type::getInt16Ty(c);
    case ir::Type::f16: return llvm::Type::getHalfTy(c);
    case ir::Type::bf16: return llvm::Type::getBFloatTy(c);
    default:
      if (ir::is_vector(t)) return llvm::FixedVectorType::get(value_type(c, ir::vector_element(t)), ir::vector_lanes(t));
      invariant_failed(fmt::format("type '{}' reached code generation", ir::type_name(t)));
  }
}

/// Type of an element in buffers and shared arrays (bool takes one byte).
llvm::Type* memory_type(llvm::LLVMContext& c, ir::Type t) {
  return t == ir::Type::bool_ ? llvm::Type::getInt8Ty(c) : value_type(c, t);
}

/// Type of a by-value kernel parameter (bool is passed as a 4-byte integer, see KernelInfo; a tensor_map
/// as a pointer to its 128-byte byval copy, a __grid_constant__ parameter).
llvm::Type* parameter_type(llvm::LLVMContext& c, ir::Type t) {
  if (t == ir::Type::tensor_map) return llvm::PointerType::get(c, 0);
  return t == ir::Type::bool_ ? llvm::Type::getInt32Ty(c) : value_type(c, t);
}

std::string_view libdevice_stem(ir::Intrinsic i) {
  switch (i) {
    case ir::Intrinsic::rsqrt: return "rsqrt";
    case ir::Intrinsic::exp: return "exp";
    case ir::Intrinsic::log: return "log";
    case ir::Intrinsic::sin: return "sin";
    case ir::Intrinsic::cos: return "cos";
    case ir::Intrinsic::tanh: return "tanh";
    case ir::Intrinsic::pow: return "pow";
    case ir::Intrinsic::exp2: return "exp2";
    case ir::Intrinsic::log2: return "log2";
    case ir::Intrinsic::log10: return "log10";
    case ir::Intrinsic::erf: return "erf";
    case ir::Intrinsic::tan: return "tan";
    case ir::Intrinsic::asin: return "asin";
    case ir::Intrinsic::acos: return "acos";
    case ir::Intrinsic::atan: return "atan";
    case ir::Intrinsic::sinh: return "sinh";
    case ir::Intrinsic::cosh: return "cosh";
    case ir::Intrinsic::atan2: return "atan2";
    default: return {};
  }
}

/// The f32 libdevice function of the fast mode (nvcc's --use_fast_math), empty when there is none.
std::string_view fast_libdevice_f32(ir::Intrinsic i) {
  switch (i) {
    case ir::Intrinsic::exp: return "__nv_fast_expf";
    case ir::Intrinsic::log: return "__nv_fast_logf";
    case ir::Intrinsic::log2: return "__nv_fast_log2f";
    case ir::Intrinsic::log10: return "__nv_fast_log10f";
    case ir::Intrinsic::sin: return "__nv_fast_sinf";
    case ir::Intrinsic::cos: return "__nv_fast_cosf";
    case ir::Intrinsic::tan: return "__nv_fast_tanf";
    case ir::Intrinsic::tanh: return "__nv_fast_tanhf";
    case ir::Intrinsic::pow: return "__nv_fast_powf";
    default: return {};
  }
}

/// PTX spelling of a memory order / scope qualifier.
std::string_view ptx_sem(ir::MemoryOrder o) {
  switch (o) {
    case ir::MemoryOrder::relaxed: return ".relaxed";
    case ir::MemoryOrder::acquire: return ".acquire";
    case ir::MemoryOrder::release: return ".release";
    case ir::MemoryOrder::acq_rel: return ".acq_rel";
  }
  return ".relaxed";
}
std::string_view ptx_scope(ir::MemoryScope s) {
  switch (s) {
    case ir::MemoryScope::block: return ".cta";
    case ir::MemoryScope::device: return ".gpu";
    case ir::MemoryScope::system: return ".sys";
  }
  return ".gpu";
}

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

/// A device function: internal linkage (LLVM's inliner decides; an unused one is dropped),
/// scalars by value (bool as i1), buffers as `ptr addrspace(1)`, and the kernel's grid barrier
/// word appended when it (transitively) uses grid_sync. Convergent when it synchronises, so no
/// optimisation makes its calls depend on more values than the source does.
llvm::Function* declare_device_function(const ir::Function& f, llvm::Module& module) {
  llvm::LLVMContext& c = module.getContext();
  std::vector<llvm::Type*> types;
  for (const auto& p : f.params)
    types.push_back(p.is_buffer ? llvm::PointerType::get(c, kGlobalSpace) : value_type(c, p.type));
  if (f.uses_grid_sync) types.push_back(llvm::PointerType::get(c, kGlobalSpace));
  llvm::Type* result = f.result == ir::Type::void_ ? llvm::Type::getVoidTy(c) : value_type(c, f.result);
  auto* function = llvm::Function::Create(llvm::FunctionType::get(result, types, false),
                                          llvm::GlobalValue::InternalLinkage, f.name, module);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  if (f.uses_barrier || f.uses_grid_sync || f.uses_warp_operations) function->addFnAttr(llvm::Attribute::Convergent);
  return function;
}

/// Lowers the body of one kernel or device function.
class KernelLowering {
 public:
  KernelLowering(const ir::Kernel& kernel, llvm::Module& module, const FunctionMap& functions, ir::FpMode module_fp_mode)
      : kernel_(kernel), as_kernel_(&kernel), module_(module), context_(module.getContext()),
        builder_(module.getContext()), fp_mode_(kernel.fp_mode.value_or(module_fp_mode)), functions_(functions) {}
  /// A device function follows the compile option's floating-point mode (a kernel's @fp covers
  /// its own body).
  KernelLowering(const ir::Function& function, llvm::Module& module, const FunctionMap& functions,
                 ir::FpMode module_fp_mode)
      : kernel_(function), as_function_(&function), module_(module), context_(module.getContext()),
        builder_(module.getContext()), fp_mode_(module_fp_mode), functions_(functions) {}

  void run() {
    declare_function();
    statements(kernel_.body);
    if (!builder_.GetInsertBlock()->getTerminator()) {
      // The verifier proved that a function with a result returns on every path (PG1322).
      if (as_function_ && as_function_->result != ir::Type::void_) builder_.CreateUnreachable();
      else builder_.CreateRetVoid();
    }
    set_buffer_attributes();
    if (as_kernel_) annotate();
  }

 private:
  struct LoopTargets {
    llvm::BasicBlock* continue_target;
    llvm::BasicBlock* break_target;
  };

  // ---- signature, attributes, annotations ----

  void declare_function() {
    if (as_function_) {
      auto found = functions_.find(as_function_);
      if (found == functions_.end()) invariant_failed(fmt::format("function '{}' was not declared", kernel_.name));
      function_ = found->second;
    } else {
      std::vector<llvm::Type*> types;
      for (const auto& p : kernel_.params)
        types.push_back(p.is_buffer ? llvm::PointerType::get(context_, kGlobalSpace) : parameter_type(context_, p.type));
      if (kernel_.uses_grid_sync) types.push_back(llvm::PointerType::get(context_, kGlobalSpace));
      auto* signature = llvm::FunctionType::get(llvm::Type::getVoidTy(context_), types, false);
      function_ = llvm::Function::Create(signature, llvm::GlobalValue::ExternalLinkage, kernel_.name, module_);
      if (function_->getName() != kernel_.name)
        invariant_failed(fmt::format("kernel name '{}' is used twice in one module", kernel_.name));
      function_->setCallingConv(llvm::CallingConv::PTX_Kernel);
      function_->addFnAttr(llvm::Attribute::NoUnwind);
    }
    // fast: f32 operations flush denormal inputs and results to zero (PTX .ftz), as nvcc's
    // --use_fast_math; f64 keeps denormals (PTX has no f64 .ftz).
    if (fp_mode_ == ir::FpMode::fast) function_->addFnAttr("denormal-fp-math-f32", "preserve-sign,preserve-sign");
    builder_.SetInsertPoint(llvm::BasicBlock::Create(context_, "entry", function_));

    params_.resize(kernel_.params.size());
    buffer_read_.assign(kernel_.params.size(), false);
    buffer_written_.assign(kernel_.params.size(), false);
    for (size_t i = 0; i < kernel_.params.size(); ++i) {
      const ir::Param& p = kernel_.params[i];
      llvm::Argument* arg = function_->getArg(static_cast<unsigned>(i));
      arg->setName(p.name);
      Binding binding;
      binding.type = p.type;
      if (p.type == ir::Type::tensor_map) {
        // Hopper: the CUtensorMap by value (`.param .align 64 .b8 NAME[128]`); grid_constant (annotate) lets
        // NVPTX take its address in the param space (cvta.param) instead of copying it to local memory.
        arg->addAttr(llvm::Attribute::getWithByValType(context_, llvm::ArrayType::get(builder_.getInt8Ty(), 128)));
        arg->addAttr(llvm::Attribute::getWithAlignment(context_, llvm::Align(64)));
        arg->addAttr(llvm::Attribute::NoUndef);
        binding.value = arg;
        params_[i] = binding;
        continue;
      }
      if (p.is_buffer) {
        binding.kind = Binding::Kind::buffer;
        binding.value = arg;
        binding.param_index = static_cast<int>(i);
        arrays_by_name_[p.name] = binding;
      } else {
        // A kernel's bool arrives as a 4-byte integer; a device function's is already i1.
        binding.value = p.type == ir::Type::bool_ && as_kernel_
                            ? builder_.CreateICmpNE(arg, builder_.getInt32(0), p.name + ".bool")
                            : static_cast<llvm::Value*>(arg);
      }
      params_[i] = binding;
    }
    if (kernel_.uses_grid_sync) {
      grid_barrier_word_ = function_->getArg(static_cast<unsigned>(kernel_.params.size()));
      grid_barrier_word_->setName("grid_barrier_word");
      grid_barrier_word_->addAttr(llvm::Attribute::NoCapture);
      grid_barrier_word_->addAttr(llvm::Attribute::NoUndef);
    }
  }

  /// readonly / writeonly from what the kernel itself does with each buffer; never
  /// noalias, because the caller may pass the same buffer twice.
  void set_buffer_attributes() {
    for (size_t i = 0; i < kernel_.params.size(); ++i) {
      if (!kernel_.params[i].is_buffer) continue;
      llvm::Argument* arg = function_->getArg(static_cast<unsigned>(i));
      arg->addAttr(llvm::Attribute::NoCapture);
      arg->addAttr(llvm::Attribute::NoUndef);
      if (!buffer_written_[i]) arg->addAttr(llvm::Attribute::ReadOnly);
      else if (!buffer_read_[i]) arg->addAttr(llvm::Attribute::WriteOnly);
    }
  }

  void annotate() {
    llvm::NamedMDNode* annotations = module_.getOrInsertNamedMetadata("nvvm.annotations");
    auto add = [&](const char* key, uint32_t value) {
      llvm::Metadata* fields[] = {llvm::ValueAsMetadata::get(function_), llvm::MDString::get(context_, key),
                                  llvm::ConstantAsMetadata::get(builder_.getInt32(value))};
      annotations->addOperand(llvm::MDNode::get(context_, fields));
    };
    add("kernel", 1);
    const ir::Kernel& kernel = *as_kernel_;
    if (kernel.has_workgroup()) {
      add("reqntidx", kernel.workgroup[0]);
      add("reqntidy", kernel.workgroup[1] ? kernel.workgroup[1] : 1);
      add("reqntidz", kernel.workgroup[2] ? kernel.workgroup[2] : 1);
    }
    // Hopper: tensor_map parameters are __grid_constant__ (1-based parameter numbers).
    std::vector<llvm::Metadata*> grid_constants;
    for (size_t i = 0; i < kernel.params.size(); ++i)
      if (kernel.params[i].type == ir::Type::tensor_map)
        grid_constants.push_back(llvm::ConstantAsMetadata::get(builder_.getInt32(static_cast<uint32_t>(i + 1))));
    if (!grid_constants.empty()) {
      llvm::Metadata* fields[] = {llvm::ValueAsMetadata::get(function_), llvm::MDString::get(context_, "grid_constant"),
                                  llvm::MDNode::get(context_, grid_constants)};
      annotations->addOperand(llvm::MDNode::get(context_, fields));
    }
  }

  // ---- names ----

  const Binding& binding_of(const ir::Expr& e) {
    if (e.symbol) {
      if (e.symbol->kind == ir::SymbolKind::scalar_param || e.symbol->kind == ir::SymbolKind::buffer_param) {
        if (e.symbol->param_index < params_.size()) return params_[e.symbol->param_index];
      } else if (auto it = bindings_.find(e.symbol); it != bindings_.end()) {
        return it->second;
      }
    }
    if (auto it = arrays_by_name_.find(e.name); it != arrays_by_name_.end()) return it->second;
    invariant_failed(fmt::format("name '{}' in kernel '{}' was not resolved", e.name, kernel_.name));
  }

  const ir::Symbol& declared_symbol(const ir::Stmt& s) {
    if (!s.symbol) invariant_failed(fmt::format("declaration of '{}' has no symbol", s.name));
    return *s.symbol;
  }

  llvm::AllocaInst* entry_slot(ir::Type t, const std::string& name) {
    llvm::BasicBlock& entry = function_->getEntryBlock();
    llvm::IRBuilder<> at_entry(&entry, entry.getFirstInsertionPt());
    return at_entry.CreateAlloca(value_type(context_, t), nullptr, name);
  }

  // ---- control flow helpers ----

  llvm::BasicBlock* new_block(const char* name) { return llvm::BasicBlock::Create(context_, name, function_); }

  void branch_to(llvm::BasicBlock* target) {
    if (!builder_.GetInsertBlock()->getTerminator()) builder_.CreateBr(target);
  }

  /// After break/continue/return: later statements of the same body go to a block with
  /// no predecessors, which the optimiser deletes.
  void continue_in_dead_block() { builder_.SetInsertPoint(new_block("after.jump")); }

  // ---- statements ----

  void statements(const std::vector<ir::StmtPtr>& body) {
    for (const auto& s : body) statement(*s);
  }

  void statement(const ir::Stmt& s) {
    switch (s.kind) {
      case ir::StmtKind::let_decl: {
        const ir::Symbol& symbol = declared_symbol(s);
        llvm::Value* value = convert(expr(*s.value), s.value->type, symbol.type);
        value->setName(s.name);
        bindings_[&symbol] = Binding{Binding::Kind::value, value, symbol.type, nullptr, -1};
        return;
      }
      case ir::StmtKind::var_decl: {
        const ir::Symbol& symbol = declared_symbol(s);
        llvm::Value* initial = s.value ? convert(expr(*s.value), s.value->type, symbol.type)
                                       : llvm::Constant::getNullValue(value_type(context_, symbol.type));
        llvm::AllocaInst* slot = entry_slot(symbol.type, s.name);
        builder_.CreateStore(initial, slot);
        bindings_[&symbol] = Binding{Binding::Kind::slot, slot, symbol.type, nullptr, -1};
        return;
      }
      case ir::StmtKind::assign: return assignment(s);
      case ir::StmtKind::if_: return if_statement(s);
      case ir::StmtKind::while_: return while_statement(s);
      case ir::StmtKind::for_: return for_statement(s);
      case ir::StmtKind::break_:
      case ir::StmtKind::continue_: {
        if (loops_.empty()) invariant_failed("break or continue outside a loop");
        builder_.CreateBr(s.kind == ir::StmtKind::break_ ? loops_.back().break_target : loops_.back().continue_target);
        continue_in_dead_block();
        return;
      }
      case ir::StmtKind::return_:
        if (s.value) {
          if (!as_function_ || as_function_->result == ir::Type::void_)
            invariant_failed(fmt::format("'return' with a value in {}", kernel_.name));
          llvm::Value* result = convert(expr(*s.value), s.value->type, as_function_->result);
          builder_.CreateRet(result);
        } else {
          builder_.CreateRetVoid();
        }
        continue_in_dead_block();
        return;
      case ir::StmtKind::expr:
        if (s.value) expr(*s.value);
        return;
      case ir::StmtKind::block: return statements(s.body);
      case ir::StmtKind::shared_decl: return shared_array(s);
      case ir::StmtKind::local_array_decl: return local_array(s);
      case ir::StmtKind::const_decl: invariant_failed(fmt::format("constant '{}' declared inside a kernel", s.name));
    }
  }

  void assignment(const ir::Stmt& s) {
    const ir::Expr& target = *s.target;
    if (target.kind == ir::ExprKind::index && target.symbol && ir::is_vector(target.symbol->type)) {
      const Binding& variable = binding_of(target);  // v[k] = x: lane k of a vector var
      if (variable.kind != Binding::Kind::slot) invariant_failed(fmt::format("lane assignment to '{}'", target.name));
      llvm::Value* index = lane_index(*target.operands.at(0), variable.type);
      llvm::Value* lane = convert(expr(*s.value), s.value->type, ir::vector_element(variable.type));
      llvm::Value* old = builder_.CreateLoad(value_type(context_, variable.type), variable.value, target.name);
      builder_.CreateStore(builder_.CreateInsertElement(old, lane, index), variable.value);
      return;
    }
    if (target.kind == ir::ExprKind::index) {
      const Binding& array = binding_of(target);
      llvm::Value* address = element_address(array, *target.operands.at(0));
      llvm::Value* value = convert(expr(*s.value), s.value->type, array.type);
      builder_.CreateStore(to_memory(value, array.type), address);
      if (array.param_index >= 0) buffer_written_[array.param_index] = true;
      return;
    }
    const Binding& variable = binding_of(target);
    if (variable.kind != Binding::Kind::slot) invariant_failed(fmt::format("assignment to '{}'", target.name));
    builder_.CreateStore(convert(expr(*s.value), s.value->type, variable.type), variable.value);
  }

  void if_statement(const ir::Stmt& s) {
    llvm::Value* condition = expr(*s.value);
    auto* then_block = new_block("if.then");
    auto* merge = new_block("if.end");
    auto* else_block = s.has_else ? new_block("if.else") : merge;
    builder_.CreateCondBr(condition, then_block, else_block);
    builder_.SetInsertPoint(then_block);
    statements(s.body);
    branch_to(merge);
    if (s.has_else) {
      builder_.SetInsertPoint(else_block);
      statements(s.else_body);
      branch_to(merge);
    }
    merge->moveAfter(builder_.GetInsertBlock());
    builder_.SetInsertPoint(merge);
  }

  void while_statement(const ir::Stmt& s) {
    auto* header = new_block("while.cond");
    auto* body = new_block("while.body");
    auto* exit = new_block("while.end");
    builder_.CreateBr(header);
    builder_.SetInsertPoint(header);
    builder_.CreateCondBr(expr(*s.value), body, exit);
    builder_.SetInsertPoint(body);
    loops_.push_back({header, exit});
    statements(s.body);
    loops_.pop_back();
    branch_to(header);
    exit->moveAfter(builder_.GetInsertBlock());
    builder_.SetInsertPoint(exit);
  }

  /// The loop metadata of `unroll` (factor 0: llvm.loop.unroll.full) and `unroll(N)`
  /// (llvm.loop.unroll.count N; N = 1: llvm.loop.unroll.disable, which NVPTX passes on to ptxas as
  /// .pragma "nounroll").
  llvm::MDNode* unroll_metadata(uint32_t factor, std::optional<uint64_t> trips = std::nullopt) {
    llvm::Metadata* hint = nullptr;
    if (factor == 0) {
      hint = llvm::MDNode::get(context_, llvm::MDString::get(context_, "llvm.loop.unroll.full"));
    } else if (factor == 1) {
      hint = llvm::MDNode::get(context_, llvm::MDString::get(context_, "llvm.loop.unroll.disable"));
    } else {
      hint = llvm::MDNode::get(context_, {llvm::MDString::get(context_, "llvm.loop.unroll.count"),
                                          llvm::ConstantAsMetadata::get(builder_.getInt32(factor))});
    }
    std::vector<llvm::Metadata*> properties = {nullptr, hint};
    if (trips)  // for the compile budget's estimate before unrolling (internal/budget.hpp)
      properties.push_back(llvm::MDNode::get(
          context_, {llvm::MDString::get(context_, llvm::StringRef(kTripCountProperty.data(), kTripCountProperty.size())), llvm::ConstantAsMetadata::get(builder_.getInt64(*trips))}));
    llvm::MDNode* loop = llvm::MDNode::getDistinct(context_, properties);
    loop->replaceOperandWith(0, loop);
    return loop;
  }

  /// The iterations of `for v in lo..hi step s` when the bounds and the step are constants.
  static std::optional<uint64_t> constant_trip_count(llvm::Value* lo, llvm::Value* hi, llvm::Value* step, bool is_signed) {
    auto* l = llvm::dyn_cast<llvm::ConstantInt>(lo);
    auto* h = llvm::dyn_cast<llvm::ConstantInt>(hi);
    auto* s = step != nullptr ? llvm::dyn_cast<llvm::ConstantInt>(step) : nullptr;
    if (l == nullptr || h == nullptr || (step != nullptr && s == nullptr)) return std::nullopt;
    const __int128 first = is_signed ? l->getSExtValue() : static_cast<__int128>(l->getZExtValue());
    const __int128 last = is_signed ? h->getSExtValue() : static_cast<__int128>(h->getZExtValue());
    const __int128 stride = s != nullptr ? static_cast<__int128>(s->getZExtValue()) : 1;  // a step is unsigned
    if (last <= first) return 0;
    if (stride == 0) return 1;  // a step of 0 ends the loop after one iteration
    return static_cast<uint64_t>((last - first + stride - 1) / stride);
  }

  /// for v in lo..hi [step s]: bounds evaluated once; the latch never wraps past hi.
  void for_statement(const ir::Stmt& s) {
    const ir::Symbol& symbol = declared_symbol(s);
    const ir::Type t = symbol.type;
    if (!ir::is_integer(t)) invariant_failed(fmt::format("loop variable '{}' is not an integer", s.name));
    const bool is_signed = ir::is_signed(t);
    llvm::Value* lo = convert(expr(*s.lo), s.lo->type, t);
    llvm::Value* hi = convert(expr(*s.hi), s.hi->type, t);
    llvm::Value* step = s.step ? convert(expr(*s.step), s.step->type, t) : nullptr;
    llvm::AllocaInst* slot = entry_slot(t, s.name);
    builder_.CreateStore(lo, slot);

    auto* body = new_block("for.body");
    auto* latch = new_block("for.next");
    auto* exit = new_block("for.end");
    builder_.CreateCondBr(is_signed ? builder_.CreateICmpSLT(lo, hi) : builder_.CreateICmpULT(lo, hi), body, exit);

    builder_.SetInsertPoint(body);
    bindings_[&symbol] = Binding{Binding::Kind::slot, slot, t, nullptr, -1};
    loops_.push_back({latch, exit});
    statements(s.body);
    loops_.pop_back();
    branch_to(latch);

    latch->moveAfter(builder_.GetInsertBlock());
    builder_.SetInsertPoint(latch);
    llvm::Value* current = builder_.CreateLoad(slot->getAllocatedType(), slot, s.name);
    llvm::Value* next = nullptr;
    llvm::Value* more = nullptr;
    if (!step) {  // current < hi, so current + 1 cannot wrap
      next = builder_.CreateAdd(current, llvm::ConstantInt::get(current->getType(), 1), s.name + ".next",
                                /*HasNUW=*/!is_signed, /*HasNSW=*/is_signed);
      more = is_signed ? builder_.CreateICmpSLT(next, hi) : builder_.CreateICmpULT(next, hi);
    } else {  // another iteration iff 0 < step < hi - current (as unsigned), which cannot wrap:
              // a step of 0 at run time ends the loop after its first iteration (docs/ir.md)
      llvm::Value* remaining = builder_.CreateSub(hi, current);
      llvm::Value* advances = builder_.CreateICmpNE(step, llvm::ConstantInt::get(step->getType(), 0));
      more = builder_.CreateAnd(advances, builder_.CreateICmpULT(step, remaining));
      next = builder_.CreateAdd(current, step, s.name + ".next");
    }
    builder_.CreateStore(next, slot);
    llvm::BranchInst* back = builder_.CreateCondBr(more, body, exit);
    const auto trips = constant_trip_count(lo, hi, step, is_signed);
    if (s.unroll) back->setMetadata(llvm::LLVMContext::MD_loop, unroll_metadata(s.unroll_factor, trips));
    else if (touches_wgmma_accumulator(s.body)) back->setMetadata(llvm::LLVMContext::MD_loop, unroll_metadata(0, trips));
    exit->moveAfter(latch);
    builder_.SetInsertPoint(exit);
  }

  // Hopper: a loop that runs wgmma or indexes a wgmma accumulator is fully unrolled when its trip count
  // is constant (llvm.loop.unroll.full: the size threshold does not apply), so that every accumulator
  // index becomes a constant and SROA keeps the accumulators in registers (a 128-register epilogue is
  // past LLVM's threshold; in local memory the wgmma pipeline would stall on every tile).

  static bool is_wgmma(const ir::Expr& e) {
    return e.kind == ir::ExprKind::call && e.intrinsic &&
           (*e.intrinsic == ir::Intrinsic::wgmma_bf16 || *e.intrinsic == ir::Intrinsic::wgmma_f16);
  }

  bool touches_wgmma_accumulator(const ir::Expr& e) {
    if (is_wgmma(e)) return true;
    if (e.kind == ir::ExprKind::index && e.symbol && wgmma_accumulators().contains(e.symbol)) return true;
    for (const auto& operand : e.operands)
      if (operand && touches_wgmma_accumulator(*operand)) return true;
    return false;
  }

  bool touches_wgmma_accumulator(const std::vector<ir::StmtPtr>& body) {
    if (!kernel_.uses_warpgroup_operations) return false;
    for (const auto& stmt : body) {
      if (!stmt) continue;
      for (const ir::Expr* e : {stmt->target.get(), stmt->value.get(), stmt->lo.get(), stmt->hi.get(), stmt->step.get()})
        if (e && touches_wgmma_accumulator(*e)) return true;
      if (touches_wgmma_accumulator(stmt->body) || touches_wgmma_accumulator(stmt->else_body)) return true;
    }
    return false;
  }

  /// The local arrays some wgmma of this routine accumulates into.
  const std::unordered_set<const ir::Symbol*>& wgmma_accumulators() {
    if (!accumulators_) {
      accumulators_.emplace();
      std::function<void(const ir::Expr&)> expr_walk = [&](const ir::Expr& e) {
        if (is_wgmma(e) && !e.operands.empty() && e.operands[0] && e.operands[0]->symbol)
          accumulators_->insert(e.operands[0]->symbol);
        for (const auto& operand : e.operands)
          if (operand) expr_walk(*operand);
      };
      std::function<void(const std::vector<ir::StmtPtr>&)> walk = [&](const std::vector<ir::StmtPtr>& body) {
        for (const auto& stmt : body) {
          if (!stmt) continue;
          for (const ir::Expr* e : {stmt->target.get(), stmt->value.get(), stmt->lo.get(), stmt->hi.get(), stmt->step.get()})
            if (e) expr_walk(*e);
          walk(stmt->body);
          walk(stmt->else_body);
        }
      };
      walk(kernel_.body);
    }
    return *accumulators_;
  }

  void shared_array(const ir::Stmt& s) {
    const ir::Symbol& symbol = declared_symbol(s);
    if (symbol.dynamic) return dynamic_shared_array(s, symbol);
    uint64_t count = symbol.array_size;
    if (count == 0 && s.value && s.value->kind == ir::ExprKind::int_literal) count = s.value->int_value;
    if (count == 0) invariant_failed(fmt::format("shared array '{}' has no size", s.name));
    llvm::Type* element = memory_type(context_, symbol.type);
    auto* array_type = llvm::ArrayType::get(element, count);
    auto* global = new llvm::GlobalVariable(module_, array_type, false, llvm::GlobalValue::InternalLinkage,
                                            llvm::UndefValue::get(array_type), kernel_.name + "_" + s.name, nullptr,
                                            llvm::GlobalValue::NotThreadLocal, kSharedSpace);
    global->setAlignment(llvm::Align(16));
    // Uninitialised shared memory holds whatever is there, not LLVM's undef: no optimiser may
    // fold a load of it to an arbitrary value.
    global->setExternallyInitialized(true);
    Binding binding{Binding::Kind::shared, global, symbol.type, array_type, -1};
    bindings_[&symbol] = binding;
    arrays_by_name_[s.name] = binding;
  }

  /// `var NAME: T[N];`: an alloca in the entry block, zeroed where the declaration runs (like
  /// `var x: T;`). SROA after full unrolling turns it into registers when every index is a
  /// constant by then and removes the zeroing of elements written before they are read; what
  /// stays indexed at run time lives in local memory (ptxas reports its stack frame, PG3503).
  void local_array(const ir::Stmt& s) {
    const ir::Symbol& symbol = declared_symbol(s);
    if (symbol.array_size == 0) invariant_failed(fmt::format("local array '{}' has no size", s.name));
    llvm::Type* element = memory_type(context_, symbol.type);
    auto* array_type = llvm::ArrayType::get(element, symbol.array_size);
    llvm::BasicBlock& entry = function_->getEntryBlock();
    llvm::IRBuilder<> at_entry(&entry, entry.getFirstInsertionPt());
    llvm::AllocaInst* array = at_entry.CreateAlloca(array_type, nullptr, s.name);
    const uint64_t bytes = symbol.array_size * ir::byte_size(symbol.type);
    builder_.CreateMemSet(array, builder_.getInt8(0), builder_.getInt64(bytes), array->getAlign());
    bindings_[&symbol] = Binding{Binding::Kind::local, array, symbol.type, array_type, -1};
  }

  /// `shared NAME: T[];`: PTX `.extern .shared .align 16 .b8 NAME[];`, the block's dynamic
  /// shared memory (CUDA's `extern __shared__`), sized by the launch.
  void dynamic_shared_array(const ir::Stmt& s, const ir::Symbol& symbol) {
    llvm::Type* element = memory_type(context_, symbol.type);
    auto* array_type = llvm::ArrayType::get(element, 0);
    auto* global = new llvm::GlobalVariable(module_, array_type, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                            kernel_.name + "_" + s.name, nullptr, llvm::GlobalValue::NotThreadLocal,
                                            kSharedSpace);
    global->setAlignment(llvm::Align(16));
    Binding binding{Binding::Kind::shared, global, symbol.type, array_type, -1};
    bindings_[&symbol] = binding;
    arrays_by_name_[s.name] = binding;
  }

  // ---- expressions ----

  llvm::Value* expr(const ir::Expr& e) {
    switch (e.kind) {
      case ir::ExprKind::int_literal:
        if (ir::is_float(e.type)) return llvm::ConstantFP::get(value_type(context_, e.type), double(e.int_value));
        if (!ir::is_integer(e.type)) invariant_failed(fmt::format("integer literal '{}' has no integer type", e.text));
        return llvm::ConstantInt::get(value_type(context_, e.type), e.int_value);
      case ir::ExprKind::float_literal:
        if (!ir::is_float(e.type)) invariant_failed(fmt::format("float literal '{}' has no float type", e.text));
        return llvm::ConstantFP::get(value_type(context_, e.type), e.float_value);
      case ir::ExprKind::bool_literal: return builder_.getInt1(e.bool_value);
      case ir::ExprKind::name: {
        if (e.symbol && e.symbol->kind == ir::SymbolKind::constant) return constant(*e.symbol);
        const Binding& b = binding_of(e);
        if (b.kind == Binding::Kind::value) return b.value;
        if (b.kind == Binding::Kind::slot) return builder_.CreateLoad(value_type(context_, b.type), b.value, e.name);
        invariant_failed(fmt::format("array '{}' used as a value", e.name));
      }
      case ir::ExprKind::builtin: return builtin(e.builtin, e.component);
      case ir::ExprKind::index: {
        if (e.symbol && ir::is_vector(e.symbol->type)) {  // v[k]: lane k of a vector let/var
          const Binding& b = binding_of(e);
          llvm::Value* index = lane_index(*e.operands.at(0), b.type);
          llvm::Value* vector = b.kind == Binding::Kind::slot
                                    ? builder_.CreateLoad(value_type(context_, b.type), b.value, e.name)
                                    : b.value;
          return builder_.CreateExtractElement(vector, index);
        }
        const Binding& array = binding_of(e);
        llvm::Value* address = element_address(array, *e.operands.at(0));
        if (array.param_index >= 0) buffer_read_[array.param_index] = true;
        return from_memory(builder_.CreateLoad(memory_type(context_, array.type), address), array.type);
      }
      case ir::ExprKind::unary: return unary(e);
      case ir::ExprKind::binary: return binary(e);
      case ir::ExprKind::cast:
        if (ir::is_vector(e.cast_type)) return build_vector(e);
        return convert(expr(*e.operands.at(0)), e.operands[0]->type, e.cast_type);
      case ir::ExprKind::call: return call(e);
    }
    invariant_failed("unknown expression kind");
  }

  /// A module constant: integers from the value the verifier computed, bool and float
  /// constants from their (constant, so folded) value expression, folded once per kernel: a
  /// constant that uses an earlier one twice (`const B = A * A;`) would otherwise cost twice
  /// its predecessor, 2^n for a chain of n.
  llvm::Value* constant(const ir::Symbol& symbol) {
    if (ir::is_integer(symbol.type)) return llvm::ConstantInt::get(value_type(context_, symbol.type), symbol.constant_bits);
    if (auto known = constant_values_.find(&symbol); known != constant_values_.end()) return known->second;
    if (!symbol.decl || !symbol.decl->value)
      invariant_failed(fmt::format("constant '{}' has no value", symbol.name));
    const ir::Expr& value = *symbol.decl->value;
    const bool outer = std::exchange(in_constant_, true);
    llvm::Value* folded = convert(expr(value), value.type, symbol.type);
    in_constant_ = outer;
    if (auto* result = llvm::dyn_cast<llvm::Constant>(folded)) constant_values_.emplace(&symbol, result);
    return folded;
  }

  llvm::Value* builtin(ir::Builtin which, uint8_t component) {
    namespace I = llvm::Intrinsic;
    if (which == ir::Builtin::lane_id) return builder_.CreateIntrinsic(I::nvvm_read_ptx_sreg_laneid, {}, {});
    if (which == ir::Builtin::warp_id) return warp_index();
    if (which == ir::Builtin::warpgroup_id) return builder_.CreateLShr(warp_index(), 2, "warpgroup_id");
    if (component > 2) invariant_failed("builtin component out of range");
    static constexpr I::ID tid[3] = {I::nvvm_read_ptx_sreg_tid_x, I::nvvm_read_ptx_sreg_tid_y, I::nvvm_read_ptx_sreg_tid_z};
    static constexpr I::ID ctaid[3] = {I::nvvm_read_ptx_sreg_ctaid_x, I::nvvm_read_ptx_sreg_ctaid_y,
                                       I::nvvm_read_ptx_sreg_ctaid_z};
    static constexpr I::ID ntid[3] = {I::nvvm_read_ptx_sreg_ntid_x, I::nvvm_read_ptx_sreg_ntid_y,
                                      I::nvvm_read_ptx_sreg_ntid_z};
    static constexpr I::ID nctaid[3] = {I::nvvm_read_ptx_sreg_nctaid_x, I::nvvm_read_ptx_sreg_nctaid_y,
                                        I::nvvm_read_ptx_sreg_nctaid_z};
    auto read = [&](const I::ID (&ids)[3]) { return builder_.CreateIntrinsic(ids[component], {}, {}); };
    switch (which) {
      case ir::Builtin::thread_id: return read(tid);
      case ir::Builtin::block_id: return read(ctaid);
      case ir::Builtin::block_dim: return read(ntid);
      case ir::Builtin::grid_dim: return read(nctaid);
      case ir::Builtin::global_id: {
        // One instruction per statement: the order of function arguments' evaluation is the host
        // compiler's choice, and the emitted IR must not depend on which compiler built ptxgate.
        llvm::Value* block = read(ctaid);
        llvm::Value* size = read(ntid);
        llvm::Value* scaled = builder_.CreateMul(block, size);
        llvm::Value* thread = read(tid);
        return builder_.CreateAdd(scaled, thread);
      }
      case ir::Builtin::lane_id:
      case ir::Builtin::warp_id:
      case ir::Builtin::warpgroup_id: break;
    }
    invariant_failed("unknown builtin");
  }

  /// warp_id: the thread's linear index in the block (x fastest, as CUDA numbers warps) / 32.
  /// Not %warpid, which names a hardware slot and may change while the thread runs.
  llvm::Value* warp_index() {
    namespace I = llvm::Intrinsic;
    auto read = [&](I::ID id) { return builder_.CreateIntrinsic(id, {}, {}); };
    // One instruction per statement (see builtin): the IR must not depend on the host compiler.
    llvm::Value* linear = read(I::nvvm_read_ptx_sreg_tid_z);
    for (auto [ntid, tid] : {std::pair{I::nvvm_read_ptx_sreg_ntid_y, I::nvvm_read_ptx_sreg_tid_y},
                             std::pair{I::nvvm_read_ptx_sreg_ntid_x, I::nvvm_read_ptx_sreg_tid_x}}) {
      llvm::Value* size = read(ntid);
      llvm::Value* scaled = builder_.CreateMul(linear, size);
      llvm::Value* index = read(tid);
      linear = builder_.CreateAdd(scaled, index);
    }
    return builder_.CreateLShr(linear, 5, "warp_id");
  }

  // ---- warp operations (the verifier guarantees all 32 lanes arrive) ----

  static constexpr uint32_t kFullWarp = 0xffffffffu;

  /// One shfl.sync of a 32- or 64-bit value (64-bit values move as two 32-bit halves).
  /// `lane` is the shfl operand b (only its low 5 bits count).
  llvm::Value* shuffle(ir::Intrinsic mode, llvm::Value* v, llvm::Value* lane) {
    namespace I = llvm::Intrinsic;
    I::ID id_i32 = I::nvvm_shfl_sync_bfly_i32, id_f32 = I::nvvm_shfl_sync_bfly_f32;
    uint32_t clamp = 0x1f;
    switch (mode) {
      case ir::Intrinsic::shfl_xor: break;
      case ir::Intrinsic::shfl_down: id_i32 = I::nvvm_shfl_sync_down_i32; id_f32 = I::nvvm_shfl_sync_down_f32; break;
      case ir::Intrinsic::shfl_up:
        id_i32 = I::nvvm_shfl_sync_up_i32;
        id_f32 = I::nvvm_shfl_sync_up_f32;
        clamp = 0;
        break;
      case ir::Intrinsic::shfl_idx: id_i32 = I::nvvm_shfl_sync_idx_i32; id_f32 = I::nvvm_shfl_sync_idx_f32; break;
      default: invariant_failed("not a shuffle");
    }
    auto& b = builder_;
    llvm::Value* mask = b.getInt32(kFullWarp);
    llvm::Value* c = b.getInt32(clamp);
    llvm::Type* t = v->getType();
    if (t->isFloatTy()) return b.CreateIntrinsic(id_f32, {}, {mask, v, lane, c});
    if (t->isIntegerTy(32)) return b.CreateIntrinsic(id_i32, {}, {mask, v, lane, c});
    if (t->getPrimitiveSizeInBits() != 64) invariant_failed("shuffle of a value that is not 32 or 64 bits");
    llvm::Value* bits = t->isIntegerTy() ? v : b.CreateBitCast(v, b.getInt64Ty());
    llvm::Value* lo = b.CreateTrunc(bits, b.getInt32Ty());
    llvm::Value* hi = b.CreateTrunc(b.CreateLShr(bits, 32), b.getInt32Ty());
    lo = b.CreateIntrinsic(id_i32, {}, {mask, lo, lane, c});
    hi = b.CreateIntrinsic(id_i32, {}, {mask, hi, lane, c});
    llvm::Value* low = b.CreateZExt(lo, b.getInt64Ty());
    llvm::Value* high = b.CreateShl(b.CreateZExt(hi, b.getInt64Ty()), 32);
    llvm::Value* joined = b.CreateOr(low, high);
    return t->isIntegerTy() ? joined : b.CreateBitCast(joined, t);
  }

  /// ballot/any/all, shuffles and the butterfly warp reductions (every lane gets the result;
  /// IEEE addition is commutative, so every lane's float sum is the same bits).
  llvm::Value* warp_operation(const ir::Expr& e, ir::Intrinsic which) {
    namespace I = llvm::Intrinsic;
    auto& b = builder_;
    llvm::Value* v = expr(*e.operands.at(0));
    switch (which) {
      case ir::Intrinsic::ballot: return b.CreateIntrinsic(I::nvvm_vote_ballot_sync, {}, {b.getInt32(kFullWarp), v});
      case ir::Intrinsic::any: return b.CreateIntrinsic(I::nvvm_vote_any_sync, {}, {b.getInt32(kFullWarp), v});
      case ir::Intrinsic::all: return b.CreateIntrinsic(I::nvvm_vote_all_sync, {}, {b.getInt32(kFullWarp), v});
      case ir::Intrinsic::shfl_xor:
      case ir::Intrinsic::shfl_down:
      case ir::Intrinsic::shfl_up:
      case ir::Intrinsic::shfl_idx: {
        llvm::Value* lane = convert(expr(*e.operands.at(1)), e.operands[1]->type, ir::Type::u32);
        return shuffle(which, v, lane);
      }
      case ir::Intrinsic::warp_sum:
      case ir::Intrinsic::warp_min:
      case ir::Intrinsic::warp_max: {
        const ir::Type t = e.operands[0]->type;
        const bool is_float = ir::is_float(t), is_signed = ir::is_signed(t);
        for (uint32_t offset = 16; offset > 0; offset /= 2) {
          llvm::Value* other = shuffle(ir::Intrinsic::shfl_xor, v, b.getInt32(offset));
          if (which == ir::Intrinsic::warp_sum) {
            v = is_float ? b.CreateFAdd(v, other) : b.CreateAdd(v, other);
          } else {
            const bool is_min = which == ir::Intrinsic::warp_min;
            I::ID id = is_float ? (is_min ? I::minnum : I::maxnum)
                       : is_signed ? (is_min ? I::smin : I::smax)
                                   : (is_min ? I::umin : I::umax);
            v = b.CreateIntrinsic(id, {v->getType()}, {v, other});
          }
        }
        return v;
      }
      default: invariant_failed("not a warp operation");
    }
  }

  /// Marks an f32/f64 add, subtract or multiply as contractible in the contract and fast modes
  /// (the NVPTX back end then fuses a multiply feeding an add into fma.rn). Half types are never
  /// contracted (docs/ir.md, "Small types"); a folded constant has no flags to set.
  llvm::Value* fp_flags(llvm::Value* v, ir::Type t) {
    if (fp_mode_ == ir::FpMode::exact || (t != ir::Type::f32 && t != ir::Type::f64)) return v;
    if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v)) {
      llvm::FastMathFlags flags;
      flags.setAllowContract(true);
      if (fp_mode_ == ir::FpMode::fast) flags.setApproxFunc(true);
      inst->setFastMathFlags(flags);
    }
    return v;
  }

  /// f32 division in the fast mode: div.full.ftz.f32 (nvcc's -prec-div=false; about 2 ulp).
  llvm::Value* fast_divide(llvm::Value* l, llvm::Value* r) {
    llvm::Type* f32 = builder_.getFloatTy();
    auto* type = llvm::FunctionType::get(f32, {f32, f32}, false);
    auto* divide = llvm::InlineAsm::get(type, "div.full.ftz.f32 $0, $1, $2;", "=f,f,f", /*hasSideEffects=*/false);
    return builder_.CreateCall(type, divide, {l, r});
  }

  llvm::Value* unary(const ir::Expr& e) {
    llvm::Value* operand = expr(*e.operands.at(0));
    switch (e.unary_op) {
      case ir::UnaryOp::neg:
        return ir::is_float(e.operands[0]->type) ? builder_.CreateFNeg(operand) : builder_.CreateNeg(operand);
      case ir::UnaryOp::bit_not:
      case ir::UnaryOp::logical_not: return builder_.CreateNot(operand);
    }
    invariant_failed("unknown unary operator");
  }

  llvm::Value* binary(const ir::Expr& e) {
    using Op = ir::BinaryOp;
    if (e.binary_op == Op::logical_and || e.binary_op == Op::logical_or) return short_circuit(e);
    const ir::Type t = ir::vector_element(e.operands.at(0)->type);  // vectors: + - * / lane by lane
    const bool is_float = ir::is_float(t), is_signed = ir::is_signed(t);
    llvm::Value* l = expr(*e.operands[0]);
    llvm::Value* r = expr(*e.operands.at(1));
    auto& b = builder_;
    switch (e.binary_op) {
      case Op::add: return is_float ? fp_flags(b.CreateFAdd(l, r), t) : b.CreateAdd(l, r);
      case Op::sub: return is_float ? fp_flags(b.CreateFSub(l, r), t) : b.CreateSub(l, r);
      case Op::mul: return is_float ? fp_flags(b.CreateFMul(l, r), t) : b.CreateMul(l, r);
      case Op::div:
        // A module constant's value is computed once, exactly, at compile time (docs/ir.md).
        if (is_float && fp_mode_ == ir::FpMode::fast && t == ir::Type::f32 && !in_constant_) return fast_divide(l, r);
        return is_float ? b.CreateFDiv(l, r) : integer_division(l, r, is_signed, /*remainder=*/false);
      case Op::rem: return is_float ? b.CreateFRem(l, r) : integer_division(l, r, is_signed, /*remainder=*/true);
      case Op::shl: return b.CreateShl(l, shift_amount(r, l->getType()));
      case Op::shr: {
        llvm::Value* amount = shift_amount(r, l->getType());
        return is_signed ? b.CreateAShr(l, amount) : b.CreateLShr(l, amount);
      }
      case Op::bit_and: return b.CreateAnd(l, r);
      case Op::bit_or: return b.CreateOr(l, r);
      case Op::bit_xor: return b.CreateXor(l, r);
      case Op::eq: return is_float ? b.CreateFCmpOEQ(l, r) : b.CreateICmpEQ(l, r);
      case Op::ne: return is_float ? b.CreateFCmpUNE(l, r) : b.CreateICmpNE(l, r);
      case Op::lt: return is_float ? b.CreateFCmpOLT(l, r) : is_signed ? b.CreateICmpSLT(l, r) : b.CreateICmpULT(l, r);
      case Op::le: return is_float ? b.CreateFCmpOLE(l, r) : is_signed ? b.CreateICmpSLE(l, r) : b.CreateICmpULE(l, r);
      case Op::gt: return is_float ? b.CreateFCmpOGT(l, r) : is_signed ? b.CreateICmpSGT(l, r) : b.CreateICmpUGT(l, r);
      case Op::ge: return is_float ? b.CreateFCmpOGE(l, r) : is_signed ? b.CreateICmpSGE(l, r) : b.CreateICmpUGE(l, r);
      case Op::logical_and:
      case Op::logical_or: break;
    }
    invariant_failed("unknown binary operator");
  }

  /// Integer / and % defined for every operand (docs/ir.md, "Results of every operation"):
  /// x / 0 is all ones (u: max, i: -1), x % 0 is x; MIN / -1 is MIN (wraps) and MIN % -1 is 0.
  /// The divisor the hardware sees is never 0 nor (for MIN) -1, so LLVM never meets its
  /// undefined cases; a constant divisor folds the guards away.
  llvm::Value* integer_division(llvm::Value* l, llvm::Value* r, bool is_signed, bool remainder) {
    auto& b = builder_;
    llvm::Type* t = l->getType();
    llvm::Value* zero = llvm::ConstantInt::get(t, 0);
    llvm::Value* one = llvm::ConstantInt::get(t, 1);
    llvm::Value* by_zero = b.CreateICmpEQ(r, zero, "div.by.zero");
    llvm::Value* unsafe = by_zero;
    if (is_signed) {
      llvm::Value* min = llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(t->getIntegerBitWidth()));
      llvm::Value* l_is_min = b.CreateICmpEQ(l, min);
      llvm::Value* r_is_minus_one = b.CreateICmpEQ(r, llvm::ConstantInt::getAllOnesValue(t));
      llvm::Value* overflow = b.CreateAnd(l_is_min, r_is_minus_one, "div.overflow");
      unsafe = b.CreateOr(by_zero, overflow);
    }
    // MIN / 1 == MIN and MIN % 1 == 0 are exactly the wrapped results of MIN / -1 and MIN % -1.
    llvm::Value* divisor = b.CreateSelect(unsafe, one, r, "divisor");
    llvm::Value* result = remainder ? (is_signed ? b.CreateSRem(l, divisor) : b.CreateURem(l, divisor))
                                    : (is_signed ? b.CreateSDiv(l, divisor) : b.CreateUDiv(l, divisor));
    llvm::Value* if_zero = remainder ? l : llvm::ConstantInt::getAllOnesValue(t);
    return b.CreateSelect(by_zero, if_zero, result);
  }

  /// The shift amount in the shifted value's width, modulo that width.
  llvm::Value* shift_amount(llvm::Value* amount, llvm::Type* shifted) {
    llvm::Value* same_width = builder_.CreateZExtOrTrunc(amount, shifted);
    return builder_.CreateAnd(same_width, llvm::ConstantInt::get(shifted, shifted->getIntegerBitWidth() - 1));
  }

  llvm::Value* short_circuit(const ir::Expr& e) {
    const bool is_and = e.binary_op == ir::BinaryOp::logical_and;
    llvm::Value* left = expr(*e.operands.at(0));
    // A constant left side (module constants, literals) decides without a branch.
    if (auto* known = llvm::dyn_cast<llvm::ConstantInt>(left))
      return known->isOne() == is_and ? expr(*e.operands.at(1)) : left;
    llvm::BasicBlock* left_end = builder_.GetInsertBlock();
    auto* right_block = new_block(is_and ? "and.rhs" : "or.rhs");
    auto* merge = new_block(is_and ? "and.end" : "or.end");
    if (is_and) builder_.CreateCondBr(left, right_block, merge);
    else builder_.CreateCondBr(left, merge, right_block);
    builder_.SetInsertPoint(right_block);
    llvm::Value* right = expr(*e.operands.at(1));
    llvm::BasicBlock* right_end = builder_.GetInsertBlock();
    builder_.CreateBr(merge);
    merge->moveAfter(right_end);
    builder_.SetInsertPoint(merge);
    llvm::PHINode* result = builder_.CreatePHI(builder_.getInt1Ty(), 2);
    result->addIncoming(builder_.getInt1(!is_and), left_end);
    result->addIncoming(right, right_end);
    return result;
  }

  /// Explicit and implicit conversions between value types.
  llvm::Value* convert(llvm::Value* v, ir::Type from, ir::Type to) {
    if (from == to) return v;
    auto& b = builder_;
    llvm::Type* target = value_type(context_, to);
    if (to == ir::Type::bool_)
      return ir::is_float(from) ? b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0))
                                : b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    if (from == ir::Type::bool_) return ir::is_float(to) ? b.CreateUIToFP(v, target) : b.CreateZExt(v, target);
    if (ir::is_integer(from) && ir::is_integer(to)) return b.CreateIntCast(v, target, ir::is_signed(from));
    if (ir::is_integer(from) && ir::is_float(to))
      return ir::is_signed(from) ? b.CreateSIToFP(v, target) : b.CreateUIToFP(v, target);
    if (auto* known = llvm::dyn_cast<llvm::ConstantFP>(v); known && ir::is_float(from) && ir::is_integer(to)) {
      // What fptosi.sat / fptoui.sat fold to (NaN is 0, out of range saturates), as a constant.
      llvm::APSInt result(target->getIntegerBitWidth(), !ir::is_signed(to));
      bool exact = false;
      (void)known->getValueAPF().convertToInteger(result, llvm::APFloat::rmTowardZero, &exact);
      return llvm::ConstantInt::get(target, result);
    }
    if (ir::is_float(from) && ir::is_integer(to))
      return b.CreateIntrinsic(ir::is_signed(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat,
                               {target, v->getType()}, {v});
    if (ir::is_float(from) && ir::is_float(to)) {
      // f16 <-> bf16: through f32 (exact for either), then one rounding; CreateFPCast would bitcast
      // two 16-bit types. Every narrowing rounds to nearest even (fptrunc).
      if (ir::is_half(from) && ir::is_half(to)) v = b.CreateFPExt(v, b.getFloatTy());
      return b.CreateFPCast(v, target);
    }
    invariant_failed(fmt::format("conversion from {} to {}", ir::type_name(from), ir::type_name(to)));
  }

  llvm::Value* to_memory(llvm::Value* v, ir::Type t) {
    return t == ir::Type::bool_ ? builder_.CreateZExt(v, builder_.getInt8Ty()) : v;
  }
  llvm::Value* from_memory(llvm::Value* v, ir::Type t) {
    return t == ir::Type::bool_ ? builder_.CreateICmpNE(v, builder_.getInt8(0)) : v;
  }

  /// An integer index as an i64 (sign- or zero-extended by its type), for address arithmetic.
  llvm::Value* index64(const ir::Expr& index) {
    if (!ir::is_integer(index.type)) invariant_failed("non-integer index");
    llvm::Value* i = expr(index);
    if (ir::bit_width(index.type) < 64)
      i = ir::is_signed(index.type) ? builder_.CreateSExt(i, builder_.getInt64Ty())
                                    : builder_.CreateZExt(i, builder_.getInt64Ty());
    return i;
  }

  llvm::Value* element_address(const Binding& array, const ir::Expr& index) {
    if (array.kind != Binding::Kind::buffer && array.kind != Binding::Kind::shared &&
        array.kind != Binding::Kind::local)
      invariant_failed("indexing something that is not a buffer, shared or local array");
    llvm::Value* i = index64(index);
    if (array.kind == Binding::Kind::shared || array.kind == Binding::Kind::local)
      return builder_.CreateInBoundsGEP(array.array_type, array.value, {builder_.getInt64(0), i});
    return builder_.CreateInBoundsGEP(memory_type(context_, array.type), array.value, i);
  }

  // ---- Hopper: mbarrier, TMA, wgmma (LLVM 19 has intrinsics for mbarrier init/arrive/inval and setmaxnreg;
  // the rest is inline PTX, each statement `convergent` and clobbering memory) ----

  /// A void inline-PTX statement with `args` ("r" 32-bit, "l" 64-bit operands).
  void inline_ptx(const std::string& text, const std::string& constraints, const std::vector<llvm::Value*>& args) {
    std::vector<llvm::Type*> types;
    for (llvm::Value* a : args) types.push_back(a->getType());
    auto* type = llvm::FunctionType::get(builder_.getVoidTy(), types, false);
    std::string all = constraints.empty() ? "~{memory}" : constraints + ",~{memory}";
    llvm::CallInst* call = builder_.CreateCall(llvm::InlineAsm::get(type, text, all, /*hasSideEffects=*/true), args);
    call->addFnAttr(llvm::Attribute::Convergent);
  }

  /// The 32-bit shared-window address of `array[index]` (a shared array).
  llvm::Value* shared_element(const ir::Expr& array, const ir::Expr& index) {
    const Binding& binding = binding_of(array);
    if (binding.kind != Binding::Kind::shared) invariant_failed(fmt::format("'{}' is not a shared array", array.name));
    return builder_.CreatePtrToInt(element_address(binding, index), builder_.getInt32Ty());
  }

  llvm::Value* mbarrier_pointer(const ir::Expr& bars, const ir::Expr& index) {
    const Binding& binding = binding_of(bars);
    if (binding.kind != Binding::Kind::shared) invariant_failed(fmt::format("'{}' is not a shared array", bars.name));
    return element_address(binding, index);
  }

  /// The value of a verified constant operand (wait_group counts, register counts).
  uint64_t constant_value(const ir::Expr& e) {
    auto* c = llvm::dyn_cast<llvm::ConstantInt>(expr(e));
    if (!c) invariant_failed(fmt::format("operand of '{}' is not a constant", e.name));
    return c->getZExtValue();
  }

  /// The mbarrier's phase of parity `parity` has completed (one try_wait; the hardware may suspend the
  /// thread for a while first).
  llvm::Value* mbarrier_try_wait(llvm::Value* bar, llvm::Value* parity) {
    auto* type = llvm::FunctionType::get(builder_.getInt32Ty(), {builder_.getInt32Ty(), builder_.getInt32Ty()}, false);
    auto* test = llvm::InlineAsm::get(type,
                                      "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; "
                                      "selp.u32 $0, 1, 0, p; }",
                                      "=r,r,r,~{memory}", /*hasSideEffects=*/true);
    llvm::CallInst* done = builder_.CreateCall(test, {bar, parity});
    return builder_.CreateICmpNE(done, builder_.getInt32(0));
  }

  llvm::Value* hopper_operation(const ir::Expr& e, ir::Intrinsic which) {
    using I = ir::Intrinsic;
    namespace L = llvm::Intrinsic;
    auto arg = [&](size_t i) { return expr(*e.operands.at(i)); };
    auto bar = [&](size_t i) { return mbarrier_pointer(*e.operands.at(i), *e.operands.at(i + 1)); };
    auto bar32 = [&](size_t i) { return builder_.CreatePtrToInt(bar(i), builder_.getInt32Ty()); };
    switch (which) {
      case I::mbarrier_init: {
        llvm::Value* b = bar(0);
        builder_.CreateIntrinsic(L::nvvm_mbarrier_init_shared, {}, {b, arg(2)});
        return nullptr;
      }
      case I::mbarrier_arrive: builder_.CreateIntrinsic(L::nvvm_mbarrier_arrive_shared, {}, {bar(0)}); return nullptr;
      case I::mbarrier_inval: builder_.CreateIntrinsic(L::nvvm_mbarrier_inval_shared, {}, {bar(0)}); return nullptr;
      case I::mbarrier_arrive_expect_tx: {
        llvm::Value* b = bar32(0);
        inline_ptx("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r", {b, arg(2)});
        return nullptr;
      }
      case I::mbarrier_try_wait: {
        llvm::Value* b = bar32(0);
        return mbarrier_try_wait(b, arg(2));
      }
      case I::mbarrier_wait: {
        llvm::Value* b = bar32(0);
        llvm::Value* parity = arg(2);
        llvm::BasicBlock* loop = new_block("mbarrier.wait");
        llvm::BasicBlock* done = new_block("mbarrier.done");
        builder_.CreateBr(loop);
        builder_.SetInsertPoint(loop);
        builder_.CreateCondBr(mbarrier_try_wait(b, parity), done, loop);
        builder_.SetInsertPoint(done);
        return nullptr;
      }
      case I::fence_proxy_async: inline_ptx("fence.proxy.async.shared::cta;", "", {}); return nullptr;
      case I::tma_load: {
        llvm::Value* dst = shared_element(*e.operands[0], *e.operands[1]);
        llvm::Value* map = arg(2);
        llvm::Value* b = bar32(3);
        std::vector<llvm::Value*> args{dst, map, b};
        std::string coords, constraints = "r,l,r";
        for (size_t i = 5; i < e.operands.size(); ++i) {
          coords += fmt::format("{}${}", i > 5 ? ", " : "", args.size());
          args.push_back(arg(i));
          constraints += ",r";
        }
        inline_ptx(fmt::format("cp.async.bulk.tensor.{}d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {{{}}}], "
                        "[$2];",
                        e.operands.size() - 5, coords),
            constraints, args);
        return nullptr;
      }
      case I::tma_store: {
        llvm::Value* map = arg(0);
        llvm::Value* src = shared_element(*e.operands[1], *e.operands[2]);
        std::vector<llvm::Value*> args{map, src};
        std::string coords, constraints = "l,r";
        for (size_t i = 3; i < e.operands.size(); ++i) {
          coords += fmt::format("{}${}", i > 3 ? ", " : "", args.size());
          args.push_back(arg(i));
          constraints += ",r";
        }
        inline_ptx(fmt::format("cp.async.bulk.tensor.{}d.global.shared::cta.bulk_group [$0, {{{}}}], [$1];",
                        e.operands.size() - 3, coords),
            constraints, args);
        return nullptr;
      }
      case I::tma_store_commit: inline_ptx("cp.async.bulk.commit_group;", "", {}); return nullptr;
      case I::tma_store_wait:
        inline_ptx(fmt::format("cp.async.bulk.wait_group.read {};", constant_value(*e.operands[0])), "", {});
        return nullptr;
      case I::shared_address: return shared_element(*e.operands[0], *e.operands[1]);
      case I::wgmma_desc: {
        // K-major, 128-byte swizzle: start address >> 4 (bits 0-13), leading byte offset 16 >> 4 (bits 16-29),
        // stride byte offset 1024 >> 4 (bits 32-45), base offset 0, swizzle mode 1 (bits 62-63).
        llvm::Value* address = builder_.CreateZExt(shared_element(*e.operands[0], *e.operands[1]), builder_.getInt64Ty());
        llvm::Value* start = builder_.CreateLShr(builder_.CreateAnd(address, builder_.getInt64(0x3FFFF)), 4);
        return builder_.CreateOr(start, builder_.getInt64((uint64_t{1} << 16) | (uint64_t{64} << 32) | (uint64_t{1} << 62)),
                                 "wgmma_desc");
      }
      case I::wgmma_fence: inline_ptx("wgmma.fence.sync.aligned;", "", {}); return nullptr;
      case I::wgmma_commit: inline_ptx("wgmma.commit_group.sync.aligned;", "", {}); return nullptr;
      case I::wgmma_wait:
        inline_ptx(fmt::format("wgmma.wait_group.sync.aligned {};", constant_value(*e.operands[0])), "", {});
        return nullptr;
      case I::wgmma_bf16:
      case I::wgmma_f16: wgmma(e, which == I::wgmma_bf16 ? "bf16" : "f16"); return nullptr;
      case I::setmaxnreg_inc:
      case I::setmaxnreg_dec: {
        const auto count = static_cast<uint32_t>(constant_value(*e.operands[0]));
        builder_.CreateIntrinsic(which == I::setmaxnreg_inc ? L::nvvm_setmaxnreg_inc_sync_aligned_u32
                                                            : L::nvvm_setmaxnreg_dec_sync_aligned_u32,
                                 {}, {builder_.getInt32(count)});
        return nullptr;
      }
      default: break;
    }
    invariant_failed(fmt::format("Hopper operation '{}' has no lowering", ir::intrinsic_name(which)));
  }

  /// wgmma.mma_async m64nNk16 with f32 accumulators: acc (a local f32 array of N / 2 elements) = A * B (+ acc when
  /// `accumulate`). The elements go through the asm as registers; an accumulate flag that is the constant false
  /// does not read them, so their zeroing disappears (ptxas serialises wgmmas whose accumulators other
  /// instructions write in flight).
  void wgmma(const ir::Expr& e, std::string_view element) {
    const Binding& acc = binding_of(*e.operands[0]);
    if (acc.kind != Binding::Kind::local) invariant_failed("wgmma accumulator is not a local array");
    const auto count = static_cast<unsigned>(llvm::cast<llvm::ArrayType>(acc.array_type)->getNumElements());
    llvm::Value* desc_a = expr(*e.operands[1]);
    llvm::Value* desc_b = expr(*e.operands[2]);
    llvm::Value* accumulate = expr(*e.operands[3]);
    auto* constant = llvm::dyn_cast<llvm::ConstantInt>(accumulate);
    const bool reads = !constant || !constant->isZero();
    std::vector<llvm::Value*> elements(count);
    std::vector<llvm::Value*> args;
    std::string constraints, outputs;
    for (unsigned i = 0; i < count; ++i) {
      elements[i] = builder_.CreateInBoundsGEP(acc.array_type, acc.value, {builder_.getInt64(0), builder_.getInt64(i)});
      constraints += i ? ",=f" : "=f";
      outputs += fmt::format("{}${}", i ? ", " : "", i);
    }
    if (reads)
      for (unsigned i = 0; i < count; ++i) {
        args.push_back(builder_.CreateLoad(builder_.getFloatTy(), elements[i]));
        constraints += fmt::format(",{}", i);
      }
    const size_t first = count + args.size();
    args.push_back(desc_a);
    args.push_back(desc_b);
    args.push_back(builder_.CreateZExt(accumulate, builder_.getInt32Ty()));
    constraints += ",l,l,r,~{memory}";
    const std::string text = fmt::format(
        "{{ .reg .pred p; setp.ne.b32 p, ${}, 0; wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {{{}}}, ${}, ${}, p, "
        "1, 1, 0, 0; }}",
        first + 2, 2 * count, element, element, outputs, first, first + 1);
    std::vector<llvm::Type*> types;
    for (llvm::Value* a : args) types.push_back(a->getType());
    auto* result = llvm::StructType::get(context_, std::vector<llvm::Type*>(count, builder_.getFloatTy()));
    auto* type = llvm::FunctionType::get(result, types, false);
    llvm::CallInst* call = builder_.CreateCall(llvm::InlineAsm::get(type, text, constraints, /*hasSideEffects=*/true), args);
    call->addFnAttr(llvm::Attribute::Convergent);
    for (unsigned i = 0; i < count; ++i) builder_.CreateStore(builder_.CreateExtractValue(call, i), elements[i]);
  }

  // ---- calls ----

  /// A call of a device function: arguments in order (one instruction per statement, see
  /// builtin), buffers as the caller's pointers, the grid barrier word passed on.
  llvm::Value* function_call(const ir::Expr& e) {
    const ir::Function& callee = *e.function;
    auto found = functions_.find(&callee);
    if (found == functions_.end()) invariant_failed(fmt::format("function '{}' was not declared", callee.name));
    if (e.operands.size() != callee.params.size())
      invariant_failed(fmt::format("call of '{}' with {} arguments", callee.name, e.operands.size()));
    std::vector<llvm::Value*> args;
    for (size_t i = 0; i < callee.params.size(); ++i) {
      const ir::Param& param = callee.params[i];
      const ir::Expr& arg = *e.operands[i];
      if (!param.is_buffer) {
        llvm::Value* value = convert(expr(arg), arg.type, param.type);
        args.push_back(value);
        continue;
      }
      const Binding& buffer = binding_of(arg);
      if (buffer.kind != Binding::Kind::buffer)
        invariant_failed(fmt::format("'{}' passed to buffer parameter '{}' is not a buffer", arg.name, param.name));
      if (buffer.param_index >= 0) {
        if (param.access != ir::Access::out) buffer_read_[buffer.param_index] = true;
        if (param.access != ir::Access::in) buffer_written_[buffer.param_index] = true;
      }
      args.push_back(buffer.value);
    }
    if (callee.uses_grid_sync) {
      if (!grid_barrier_word_)
        invariant_failed(fmt::format("'{}' calls '{}', which uses grid_sync, without the barrier word", kernel_.name,
                                     callee.name));
      args.push_back(grid_barrier_word_);
    }
    llvm::CallInst* result = builder_.CreateCall(found->second, args);
    return callee.result == ir::Type::void_ ? nullptr : result;
  }

  llvm::Value* call(const ir::Expr& e) {
    using I = ir::Intrinsic;
    if (e.function) return function_call(e);
    if (!e.intrinsic) invariant_failed(fmt::format("call of unknown function '{}'", e.name));
    const I which = *e.intrinsic;
    if (ir::is_atomic(which)) return atomic(e, which);
    if (ir::is_warp_operation(which)) return warp_operation(e, which);
    if (ir::is_vector_access(which)) return vector_access(e, which);
    if (ir::is_hopper_operation(which)) return hopper_operation(e, which);
    if (ir::intrinsic_min_sm(which) >= 80) return tensor_core(e, which);
    auto arg = [&](size_t i) { return expr(*e.operands.at(i)); };
    switch (which) {
      case I::barrier: builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); return nullptr;
      case I::fence_block: builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_membar_cta, {}, {}); return nullptr;
      case I::fence_device: builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_membar_gl, {}, {}); return nullptr;
      case I::fence_system: builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_membar_sys, {}, {}); return nullptr;
      case I::assert_: lower_assert(e); return nullptr;
      case I::grid_sync:
        if (!grid_barrier_word_) invariant_failed(fmt::format("kernel '{}' calls grid_sync but uses_grid_sync is unset", kernel_.name));
        emit_grid_barrier(builder_, grid_barrier_word_);
        return nullptr;
      case I::select: {
        llvm::Value* condition = arg(0);
        llvm::Value* if_true = arg(1);
        return builder_.CreateSelect(condition, if_true, arg(2));
      }
      case I::fma: {
        llvm::Value* a = arg(0);
        llvm::Value* b = arg(1);
        llvm::Value* c = arg(2);
        return builder_.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, b, c});
      }
      case I::min:
      case I::max: {
        const ir::Type t = e.operands.at(0)->type;
        llvm::Value* a = arg(0);
        llvm::Value* b = arg(1);
        const bool is_min = which == I::min;
        llvm::Intrinsic::ID id = ir::is_float(t) ? (is_min ? llvm::Intrinsic::minnum : llvm::Intrinsic::maxnum)
                                 : ir::is_signed(t) ? (is_min ? llvm::Intrinsic::smin : llvm::Intrinsic::smax)
                                                    : (is_min ? llvm::Intrinsic::umin : llvm::Intrinsic::umax);
        return builder_.CreateIntrinsic(id, {a->getType()}, {a, b});
      }
      case I::abs: {
        const ir::Type t = e.operands.at(0)->type;
        llvm::Value* a = arg(0);
        if (ir::is_float(t)) return builder_.CreateIntrinsic(llvm::Intrinsic::fabs, {a->getType()}, {a});
        if (!ir::is_signed(t)) return a;
        return builder_.CreateIntrinsic(llvm::Intrinsic::abs, {a->getType()}, {a, builder_.getFalse()});
      }
      case I::sqrt:  // correctly rounded (sqrt.rn); libdevice's __nv_sqrtf would pick sqrt.approx under LLVM 19
        if (fp_mode_ == ir::FpMode::fast && e.operands.at(0)->type == ir::Type::f32) {
          llvm::Value* a = arg(0);
          return builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_sqrt_approx_ftz_f, {}, {a});
        }
        [[fallthrough]];
      case I::floor:
      case I::ceil: {
        llvm::Value* a = arg(0);
        llvm::Intrinsic::ID id = which == I::sqrt    ? llvm::Intrinsic::sqrt
                                 : which == I::floor ? llvm::Intrinsic::floor
                                                     : llvm::Intrinsic::ceil;
        return builder_.CreateIntrinsic(id, {a->getType()}, {a});
      }
      default: break;
    }
    std::string_view stem = libdevice_stem(which);
    if (stem.empty()) invariant_failed(fmt::format("intrinsic '{}' has no lowering", ir::intrinsic_name(which)));
    const ir::Type t = e.operands.at(0)->type;
    if (!ir::is_float(t)) invariant_failed(fmt::format("'{}' of a non-float operand", ir::intrinsic_name(which)));
    std::vector<llvm::Value*> args;
    for (size_t i = 0; i < e.operands.size(); ++i) args.push_back(arg(i));
    llvm::Type* type = value_type(context_, t);
    const bool fast = fp_mode_ == ir::FpMode::fast && t == ir::Type::f32;
    if (fast && which == I::exp2) return builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {args[0]});
    std::string name = fast && !fast_libdevice_f32(which).empty()
                           ? std::string(fast_libdevice_f32(which))
                           : fmt::format("__nv_{}{}", stem, t == ir::Type::f32 ? "f" : "");
    std::vector<llvm::Type*> parameter_types(args.size(), type);
    llvm::FunctionCallee callee = module_.getOrInsertFunction(name, llvm::FunctionType::get(type, parameter_types, false));
    return builder_.CreateCall(callee, args);
  }

  /// The lane `index` selects in a vector of type `vector`, taken modulo the lane count (a power of
  /// two, so a mask) as an i32: defined for every value; a constant folds to a constant lane.
  llvm::Value* lane_index(const ir::Expr& index, ir::Type vector) {
    if (!ir::is_integer(index.type)) invariant_failed("non-integer lane index");
    llvm::Value* i = expr(index);
    llvm::Value* narrow = builder_.CreateZExtOrTrunc(i, builder_.getInt32Ty());
    return builder_.CreateAnd(narrow, builder_.getInt32(ir::vector_lanes(vector) - 1));
  }

  /// `T(a, b, ...)` of a vector type T: one value per lane, or one value for every lane.
  llvm::Value* build_vector(const ir::Expr& e) {
    const ir::Type element = ir::vector_element(e.cast_type);
    const unsigned lanes = ir::vector_lanes(e.cast_type);
    if (e.operands.size() == 1) {
      llvm::Value* lane = convert(expr(*e.operands[0]), e.operands[0]->type, element);
      return builder_.CreateVectorSplat(lanes, lane);
    }
    if (e.operands.size() != lanes) invariant_failed(fmt::format("{}(...) with {} lanes", ir::type_name(e.cast_type), e.operands.size()));
    llvm::Value* vector = llvm::PoisonValue::get(value_type(context_, e.cast_type));
    for (unsigned i = 0; i < lanes; ++i) {
      llvm::Value* lane = convert(expr(*e.operands[i]), e.operands[i]->type, element);
      vector = builder_.CreateInsertElement(vector, lane, uint64_t{i});
    }
    return vector;
  }

  /// loadN(array, i) / storeN(array, i, v): elements N*i .. N*i+N-1 as one N-lane vector, one
  /// ld/st.v2/.v4 (the address is aligned to the vector's size when the array's base is: shared
  /// arrays are 16-byte aligned, buffer bases are checked at launch, KernelInfo alignment).
  llvm::Value* vector_access(const ir::Expr& e, ir::Intrinsic which) {
    const Binding& array = binding_of(*e.operands.at(0));
    if (array.kind != Binding::Kind::buffer && array.kind != Binding::Kind::shared)
      invariant_failed("vector access to something that is not a buffer or shared array");
    const std::optional<ir::Type> vector = ir::vector_of(array.type, ir::vector_access_lanes(which));
    if (!vector) invariant_failed(fmt::format("{} of {} elements", ir::intrinsic_name(which), ir::type_name(array.type)));
    llvm::Value* i = index64(*e.operands.at(1));
    llvm::Type* type = value_type(context_, *vector);
    llvm::Value* address = builder_.CreateInBoundsGEP(type, array.value, i);
    const llvm::Align align(ir::byte_size(*vector));
    if (ir::is_vector_store(which)) {
      llvm::Value* value = expr(*e.operands.at(2));
      builder_.CreateAlignedStore(value, address, align);
      if (array.param_index >= 0) buffer_written_[array.param_index] = true;
      return nullptr;
    }
    if (array.param_index >= 0) buffer_read_[array.param_index] = true;
    return builder_.CreateAlignedLoad(type, address, align);
  }

  // ---- tensor cores: mma.sync, ldmatrix, cp.async ----

  /// The address of the `bytes`-sized chunk `index` of a buffer or shared array (chunk i starts
  /// at byte bytes * i: aligned to `bytes` when the array's base is).
  llvm::Value* chunk_address(const Binding& array, const ir::Expr& index, unsigned bytes) {
    if (array.kind != Binding::Kind::buffer && array.kind != Binding::Kind::shared)
      invariant_failed("tensor-core access to something that is not a buffer or shared array");
    return builder_.CreateInBoundsGEP(llvm::ArrayType::get(builder_.getInt8Ty(), bytes), array.value, index64(index));
  }

  llvm::Value* tensor_core(const ir::Expr& e, ir::Intrinsic which) {
    using I = ir::Intrinsic;
    if (ir::is_mma(which)) {
      llvm::Value* a = expr(*e.operands.at(0));
      llvm::Value* b = expr(*e.operands.at(1));
      llvm::Value* c = expr(*e.operands.at(2));
      return emit_mma(builder_, which, e.operands[0]->type, a, b, c);
    }
    if (ir::is_ldmatrix(which)) {
      const Binding& array = binding_of(*e.operands.at(0));
      if (array.kind != Binding::Kind::shared) invariant_failed("ldmatrix of something that is not a shared array");
      llvm::Value* row = chunk_address(array, *e.operands.at(1), 16);
      return emit_ldmatrix(builder_, ir::ldmatrix_count(which), ir::is_ldmatrix_trans(which), row,
                           value_type(context_, e.type));
    }
    if (ir::is_async_copy(which)) {
      const unsigned bytes = ir::async_copy_bytes(which);
      const Binding& destination = binding_of(*e.operands.at(0));
      const Binding& source = binding_of(*e.operands.at(2));
      if (destination.kind != Binding::Kind::shared || source.kind != Binding::Kind::buffer)
        invariant_failed("cp_async between arrays other than a buffer and a shared array");
      llvm::Value* to = chunk_address(destination, *e.operands.at(1), bytes);
      llvm::Value* from = chunk_address(source, *e.operands.at(3), bytes);
      llvm::Value* count = e.operands.size() > 4 ? expr(*e.operands[4]) : nullptr;
      if (source.param_index >= 0) buffer_read_[source.param_index] = true;
      emit_cp_async(builder_, bytes, to, from, count);
      return nullptr;
    }
    switch (which) {
      case I::cp_async_commit: emit_cp_async_commit(builder_); return nullptr;
      case I::cp_async_wait: {
        // A constant expression (the verifier's rule): the builder folds it to its value.
        auto* groups = llvm::dyn_cast<llvm::ConstantInt>(expr(*e.operands.at(0)));
        if (!groups) invariant_failed("cp_async_wait with a group count that is not a constant");
        emit_cp_async_wait(builder_, static_cast<uint32_t>(groups->getZExtValue()));
        return nullptr;
      }
      case I::tf32: return emit_tf32(builder_, expr(*e.operands.at(0)));
      default: break;
    }
    invariant_failed(fmt::format("intrinsic '{}' has no lowering", ir::intrinsic_name(which)));
  }

  llvm::Value* atomic(const ir::Expr& e, ir::Intrinsic which) {
    using I = ir::Intrinsic;
    const Binding& array = binding_of(*e.operands.at(0));
    const ir::Type t = array.type;
    if (!ir::is_numeric(t)) invariant_failed(fmt::format("atomic on a {} array", ir::type_name(t)));
    llvm::Value* address = element_address(array, *e.operands.at(1));
    if (array.param_index >= 0) buffer_read_[array.param_index] = buffer_written_[array.param_index] = true;
    const llvm::Align align(ir::byte_size(t));
    const auto relaxed = llvm::AtomicOrdering::Monotonic;
    const bool is_float = ir::is_float(t), is_signed = ir::is_signed(t);
    if (e.memory_order != ir::MemoryOrder::relaxed || e.memory_scope != ir::MemoryScope::device)
      return ordered_atomic(e, which, array, address);
    if (which == I::atomic_cas) {
      llvm::Value* expected = convert(expr(*e.operands.at(2)), e.operands[2]->type, t);
      llvm::Value* desired = convert(expr(*e.operands.at(3)), e.operands[3]->type, t);
      llvm::Type* bits = builder_.getIntNTy(ir::bit_width(t));
      if (is_float) {
        expected = builder_.CreateBitCast(expected, bits);
        desired = builder_.CreateBitCast(desired, bits);
      }
      llvm::Value* pair = builder_.CreateAtomicCmpXchg(address, expected, desired, align, relaxed, relaxed);
      llvm::Value* old = builder_.CreateExtractValue(pair, 0);
      return is_float ? builder_.CreateBitCast(old, value_type(context_, t)) : old;
    }
    using Rmw = llvm::AtomicRMWInst;
    Rmw::BinOp op = Rmw::Xchg;
    switch (which) {
      case I::atomic_add: op = is_float ? Rmw::FAdd : Rmw::Add; break;
      case I::atomic_sub: op = is_float ? Rmw::FSub : Rmw::Sub; break;
      case I::atomic_min: op = is_float ? Rmw::FMin : is_signed ? Rmw::Min : Rmw::UMin; break;
      case I::atomic_max: op = is_float ? Rmw::FMax : is_signed ? Rmw::Max : Rmw::UMax; break;
      case I::atomic_and: op = Rmw::And; break;
      case I::atomic_or: op = Rmw::Or; break;
      case I::atomic_xor: op = Rmw::Xor; break;
      case I::atomic_exch: op = Rmw::Xchg; break;
      default: invariant_failed("unknown atomic");
    }
    if (is_float && (op == Rmw::And || op == Rmw::Or || op == Rmw::Xor))
      invariant_failed("bitwise atomic on a float array");
    llvm::Value* value = convert(expr(*e.operands.at(2)), e.operands[2]->type, t);
    return builder_.CreateAtomicRMW(op, address, value, align, relaxed);
  }

  /// An atomic with a written order or scope: one PTX `atom{.sem}{.scope}{.space}.op.type`
  /// (LLVM 19's NVPTX back end has no scoped, ordered atomics), returning the old value.
  llvm::Value* ordered_atomic(const ir::Expr& e, ir::Intrinsic which, const Binding& array, llvm::Value* address) {
    using I = ir::Intrinsic;
    const ir::Type t = array.type;
    const unsigned bits = ir::bit_width(t);
    const bool is_float = ir::is_float(t), is_signed = ir::is_signed(t), half = ir::is_half(t);
    std::string op;
    switch (which) {
      case I::atomic_add:
      case I::atomic_sub:
        op = half ? fmt::format("add.noftz.{}", ir::type_name(t))
             : is_float ? fmt::format("add.f{}", bits)
                        : fmt::format("add.u{}", bits);
        break;
      case I::atomic_min: op = fmt::format("min.{}{}", is_signed ? 's' : 'u', bits); break;
      case I::atomic_max: op = fmt::format("max.{}{}", is_signed ? 's' : 'u', bits); break;
      case I::atomic_and: op = fmt::format("and.b{}", bits); break;
      case I::atomic_or: op = fmt::format("or.b{}", bits); break;
      case I::atomic_xor: op = fmt::format("xor.b{}", bits); break;
      case I::atomic_exch: op = fmt::format("exch.b{}", bits); break;
      case I::atomic_cas: op = fmt::format("cas.b{}", bits); break;
      default: invariant_failed("unknown atomic");
    }
    // Register constraints: h 16-bit, r 32-bit integer, f f32, l 64-bit integer, d f64.
    const char reg = bits == 16 ? 'h' : bits == 32 ? (is_float ? 'f' : 'r') : (is_float ? 'd' : 'l');
    llvm::Type* value_ty = value_type(context_, t);
    llvm::Type* reg_ty = half ? builder_.getInt16Ty() : value_ty;  // halves travel as their bits
    auto operand = [&](size_t i) {
      llvm::Value* v = convert(expr(*e.operands.at(i)), e.operands[i]->type, t);
      if (which == I::atomic_sub && i == 2) v = is_float ? builder_.CreateFNeg(v) : builder_.CreateNeg(v);
      return half ? builder_.CreateBitCast(v, reg_ty) : v;
    };
    llvm::Value* pointer = builder_.CreatePtrToInt(address, builder_.getInt64Ty());
    std::vector<llvm::Value*> args{pointer};
    args.push_back(operand(2));
    if (which == I::atomic_cas) args.push_back(operand(3));
    const std::string_view space = array.kind == Binding::Kind::shared ? ".shared" : ".global";
    std::string text = fmt::format("atom{}{}{}.{} $0, [$1], $2{};", ptx_sem(e.memory_order), ptx_scope(e.memory_scope),
                                   space, op, which == I::atomic_cas ? ", $3" : "");
    std::string constraints = fmt::format("={},l,{}{},~{{memory}}", reg, reg, which == I::atomic_cas ? fmt::format(",{}", reg) : "");
    std::vector<llvm::Type*> arg_types;
    for (llvm::Value* a : args) arg_types.push_back(a->getType());
    auto* type = llvm::FunctionType::get(reg_ty, arg_types, false);
    auto* atom = llvm::InlineAsm::get(type, text, constraints, /*hasSideEffects=*/true);
    llvm::Value* old = builder_.CreateCall(type, atom, args);
    return half ? builder_.CreateBitCast(old, value_ty) : old;
  }

  /// assert(c): when c is false, __assertfail(condition, file, line, kernel, 1) (the CUDA
  /// runtime's device assert: the driver prints the message and the launch fails with
  /// CUDA_ERROR_ASSERT), then trap in case it returns.
  void lower_assert(const ir::Expr& e) {
    llvm::Value* condition = expr(*e.operands.at(0));
    auto* fail = llvm::BasicBlock::Create(context_, "assert.fail", function_);
    auto* pass = llvm::BasicBlock::Create(context_, "assert.pass", function_);
    builder_.CreateCondBr(condition, pass, fail, llvm::MDBuilder(context_).createLikelyBranchWeights());
    builder_.SetInsertPoint(fail);
    auto text = [&](const std::string& s, const char* name) {
      return builder_.CreateGlobalString(s, name, kGlobalSpace, &module_);
    };
    auto generic = [&](llvm::Value* global) {
      return builder_.CreateAddrSpaceCast(global, llvm::PointerType::get(context_, 0));
    };
    llvm::Value* message = generic(text(e.text.empty() ? ir::print(*e.operands[0]) : e.text, "assert.condition"));
    llvm::Value* file = generic(text(module_.getName().str(), "assert.file"));
    llvm::Value* function = generic(text(kernel_.name, "assert.kernel"));
    llvm::Type* ptr = llvm::PointerType::get(context_, 0);
    auto* type = llvm::FunctionType::get(builder_.getVoidTy(),
                                         {ptr, ptr, builder_.getInt32Ty(), ptr, builder_.getInt64Ty()}, false);
    llvm::FunctionCallee callee = module_.getOrInsertFunction("__assertfail", type);
    builder_.CreateCall(callee, {message, file, builder_.getInt32(e.source_line), function, builder_.getInt64(1)});
    builder_.CreateIntrinsic(llvm::Intrinsic::trap, {}, {});
    builder_.CreateUnreachable();
    builder_.SetInsertPoint(pass);
  }

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

}  // namespace

std::expected<std::unique_ptr<llvm::Module>, diag::Diagnostics> lower_module(const ir::Module& verified,
                                                                            llvm::LLVMContext& context,
                                                                            const llvm::DataLayout& layout,
                                                                            ir::FpMode fp_mode) {
  auto module = std::make_unique<llvm::Module>(verified.path.empty() ? "ptxgate" : verified.path, context);
  module->setTargetTriple(std::string(kNvptxTriple));
  module->setDataLayout(layout);
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  try {
    FunctionMap functions;
    for (const ir::Function& function : verified.functions)
      functions.emplace(&function, declare_device_function(function, *module));
    for (const ir::Function& function : verified.functions) KernelLowering(function, *module, functions, fp_mode).run();
    for (const ir::Kernel& kernel : verified.kernels) KernelLowering(kernel, *module, functions, fp_mode).run();
  } catch (const InvariantFailure& failure) {
    diag::Diagnostics d;
    d.add(diag::Code::internal_error, "code generation received a module that breaks a verifier invariant: " +
                                          failure.message,
          {}, "run ir::verify on the module first; if it passed, report this as a ptxgate bug");
    return std::unexpected(std::move(d));
  }
  return module;
}

}  // namespace ptxgate::codegen
