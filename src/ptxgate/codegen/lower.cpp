// IR -> LLVM IR: the module, each kernel's signature, attributes and annotations, and name lookup;
// the bodies are lowered by the files named in internal/kernel_lowering.hpp.
#include "ptxgate/codegen/internal/lower.hpp"

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Metadata.h>

#include "ptxgate/codegen/internal/nvptx.hpp"
#include "ptxgate/codegen/internal/kernel_lowering.hpp"
#include "ptxgate/ir/access_sites.hpp"

namespace ptxgate::codegen::lowering {

void invariant_failed(std::string message) { throw InvariantFailure{std::move(message)}; }

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

llvm::Type* memory_type(llvm::LLVMContext& c, ir::Type t) {
  return t == ir::Type::bool_ ? llvm::Type::getInt8Ty(c) : value_type(c, t);
}

namespace {

/// Type of a by-value kernel parameter (bool is passed as a 4-byte integer, see KernelInfo; a tensor_map
/// as a pointer to its 128-byte byval copy, a __grid_constant__ parameter).
llvm::Type* parameter_type(llvm::LLVMContext& c, ir::Type t) {
  if (t == ir::Type::tensor_map) return llvm::PointerType::get(c, 0);
  return t == ir::Type::bool_ ? llvm::Type::getInt32Ty(c) : value_type(c, t);
}

}  // namespace

/// A device function: internal linkage (LLVM's inliner decides; an unused one is dropped),
/// scalars by value (bool as i1), buffers as `ptr addrspace(1)`, and the kernel's grid barrier
/// word appended when it (transitively) uses grid_sync. Convergent when it synchronises, so no
/// optimisation makes its calls depend on more values than the source does.
llvm::Function* declare_device_function(const ir::Function& f, llvm::Module& module, bool checked) {
  llvm::LLVMContext& c = module.getContext();
  std::vector<llvm::Type*> types;
  for (const auto& p : f.params)
    types.push_back(p.is_buffer ? llvm::PointerType::get(c, kGlobalSpace) : value_type(c, p.type));
  if (f.uses_grid_sync) types.push_back(llvm::PointerType::get(c, kGlobalSpace));
  if (checked) {  // the buffers' lengths, the record, the caller's violation latch
    for (const auto& p : f.params)
      if (p.is_buffer) types.push_back(llvm::Type::getInt64Ty(c));
    types.push_back(llvm::PointerType::get(c, kGlobalSpace));
    types.push_back(llvm::PointerType::get(c, 0));
  }
  llvm::Type* result = f.result == ir::Type::void_ ? llvm::Type::getVoidTy(c) : value_type(c, f.result);
  auto* function = llvm::Function::Create(llvm::FunctionType::get(result, types, false),
                                          llvm::GlobalValue::InternalLinkage, f.name, module);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  if (f.uses_barrier || f.uses_grid_sync || f.uses_warp_operations) function->addFnAttr(llvm::Attribute::Convergent);
  return function;
}

KernelLowering::KernelLowering(const ir::Kernel& kernel, llvm::Module& module, const FunctionMap& functions,
                               ir::FpMode module_fp_mode, const CheckedLowering* checked, bool unroll_register_tiles)
    : kernel_(kernel), as_kernel_(&kernel), module_(module), context_(module.getContext()),
      builder_(module.getContext()), fp_mode_(kernel.fp_mode.value_or(module_fp_mode)), checked_(checked),
      unroll_register_tiles_(unroll_register_tiles), functions_(functions) {}

KernelLowering::KernelLowering(const ir::Function& function, llvm::Module& module, const FunctionMap& functions,
                               ir::FpMode module_fp_mode, const CheckedLowering* checked, bool unroll_register_tiles)
    : kernel_(function), as_function_(&function), module_(module), context_(module.getContext()),
      builder_(module.getContext()), fp_mode_(module_fp_mode), checked_(checked),
      unroll_register_tiles_(unroll_register_tiles), functions_(functions) {}

void KernelLowering::run() {
  declare_function();
  statements(kernel_.body);
  if (!builder_.GetInsertBlock()->getTerminator()) {
    // The verifier proved that a function with a result returns on every path (PG1322).
    if (as_function_ && as_function_->result != ir::Type::void_) {
      builder_.CreateUnreachable();
    } else {
      return_from_kernel();
    }
  }
  finish_kernel();
  set_buffer_attributes();
  if (as_kernel_) annotate();
}

void KernelLowering::declare_function() {
  if (as_function_) {
    auto found = functions_.find(as_function_);
    if (found == functions_.end()) invariant_failed(fmt::format("function '{}' was not declared", kernel_.name));
    function_ = found->second;
  } else {
    std::vector<llvm::Type*> types;
    for (const auto& p : kernel_.params)
      types.push_back(p.is_buffer ? llvm::PointerType::get(context_, kGlobalSpace) : parameter_type(context_, p.type));
    if (kernel_.uses_grid_sync) types.push_back(llvm::PointerType::get(context_, kGlobalSpace));
    if (checked_) {  // the buffers' lengths, then the record (contract::CheckedInfo)
      for (const auto& p : kernel_.params)
        if (p.is_buffer) types.push_back(builder_.getInt64Ty());
      types.push_back(llvm::PointerType::get(context_, kGlobalSpace));
    }
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
  if (checked_) bind_checked_parameters(kernel_.params.size() + (kernel_.uses_grid_sync ? 1 : 0));
}

/// readonly / writeonly from what the kernel itself does with each buffer; never
/// noalias, because the caller may pass the same buffer twice.
void KernelLowering::set_buffer_attributes() {
  for (size_t i = 0; i < kernel_.params.size(); ++i) {
    if (!kernel_.params[i].is_buffer) continue;
    llvm::Argument* arg = function_->getArg(static_cast<unsigned>(i));
    arg->addAttr(llvm::Attribute::NoCapture);
    arg->addAttr(llvm::Attribute::NoUndef);
    if (!buffer_written_[i]) arg->addAttr(llvm::Attribute::ReadOnly);
    else if (!buffer_read_[i]) arg->addAttr(llvm::Attribute::WriteOnly);
  }
}

void KernelLowering::annotate() {
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

const Binding& KernelLowering::binding_of(const ir::Expr& e) {
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

const ir::Symbol& KernelLowering::declared_symbol(const ir::Stmt& s) {
  if (!s.symbol) invariant_failed(fmt::format("declaration of '{}' has no symbol", s.name));
  return *s.symbol;
}

llvm::AllocaInst* KernelLowering::entry_slot(ir::Type t, const std::string& name) {
  llvm::BasicBlock& entry = function_->getEntryBlock();
  llvm::IRBuilder<> at_entry(&entry, entry.getFirstInsertionPt());
  return at_entry.CreateAlloca(value_type(context_, t), nullptr, name);
}

llvm::BasicBlock* KernelLowering::new_block(const char* name) { return llvm::BasicBlock::Create(context_, name, function_); }

void KernelLowering::branch_to(llvm::BasicBlock* target) {
  if (!builder_.GetInsertBlock()->getTerminator()) builder_.CreateBr(target);
}

/// After break/continue/return: later statements of the same body go to a block with
/// no predecessors, which the optimiser deletes.
void KernelLowering::continue_in_dead_block() { builder_.SetInsertPoint(new_block("after.jump")); }

}  // namespace ptxgate::codegen::lowering

namespace ptxgate::codegen {

using lowering::CheckedLowering;
using lowering::declare_device_function;
using lowering::FunctionMap;
using lowering::InvariantFailure;
using lowering::KernelLowering;

std::expected<std::unique_ptr<llvm::Module>, diag::Diagnostics> lower_module(const ir::Module& verified,
                                                                            llvm::LLVMContext& context,
                                                                            const llvm::DataLayout& layout,
                                                                            ir::FpMode fp_mode, bool checked,
                                                                            bool unroll_register_tiles) {
  auto module = std::make_unique<llvm::Module>(verified.path.empty() ? "ptxgate" : verified.path, context);
  module->setTargetTriple(std::string(kNvptxTriple));
  module->setDataLayout(layout);
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  try {
    std::optional<CheckedLowering> checks;
    if (checked) {
      checks.emplace();
      checks->guards = ir::sites_needing_guards(verified);
    }
    const CheckedLowering* guards = checks ? &*checks : nullptr;
    FunctionMap functions;
    for (const ir::Function& function : verified.functions)
      functions.emplace(&function, declare_device_function(function, *module, checked));
    for (const ir::Function& function : verified.functions)
      KernelLowering(function, *module, functions, fp_mode, guards, unroll_register_tiles).run();
    for (const ir::Kernel& kernel : verified.kernels)
      KernelLowering(kernel, *module, functions, fp_mode, guards, unroll_register_tiles).run();
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
