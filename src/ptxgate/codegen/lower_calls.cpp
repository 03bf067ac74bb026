// IR -> LLVM IR: calls of device functions and intrinsics, atomics, assert and libdevice math.
#include "ptxgate/codegen/internal/kernel_lowering.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/MDBuilder.h>

#include "ptxgate/codegen/internal/grid_sync.hpp"
#include "ptxgate/ir/printer.hpp"

namespace ptxgate::codegen::lowering {

namespace {

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

}  // namespace

/// A call of a device function: arguments in order (one instruction per statement, see
/// builtin), buffers as the caller's pointers, the grid barrier word passed on.
llvm::Value* KernelLowering::function_call(const ir::Expr& e) {
  const ir::Function& callee = *e.function;
  auto found = functions_.find(&callee);
  if (found == functions_.end()) invariant_failed(fmt::format("function '{}' was not declared", callee.name));
  if (e.operands.size() != callee.params.size())
    invariant_failed(fmt::format("call of '{}' with {} arguments", callee.name, e.operands.size()));
  std::vector<llvm::Value*> args;
  std::vector<llvm::Value*> lengths;  // checked mode: the buffers' lengths, passed after the parameters
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
    if (checked_) {
      if (!buffer.length) invariant_failed(fmt::format("buffer '{}' has no length in checked mode", arg.name));
      lengths.push_back(buffer.length);
    }
  }
  if (callee.uses_grid_sync) {
    if (!grid_barrier_word_)
      invariant_failed(fmt::format("'{}' calls '{}', which uses grid_sync, without the barrier word", kernel_.name,
                                   callee.name));
    args.push_back(grid_barrier_word_);
  }
  if (checked_) {
    args.insert(args.end(), lengths.begin(), lengths.end());
    args.push_back(record_);
    args.push_back(latch_);
  }
  llvm::CallInst* result = builder_.CreateCall(found->second, args);
  return callee.result == ir::Type::void_ ? nullptr : result;
}

llvm::Value* KernelLowering::call(const ir::Expr& e) {
  using I = ir::Intrinsic;
  if (e.function) return function_call(e);
  if (!e.intrinsic) invariant_failed(fmt::format("call of unknown function '{}'", e.name));
  const I which = *e.intrinsic;
  if (ir::is_atomic(which)) return atomic(e, which);
  if (ir::is_warp_operation(which)) return warp_operation(e, which);
  if (ir::is_vector_access(which)) return vector_access(e, which);
  if (ir::is_hopper_operation(which)) return hopper_operation(e, which);
  if (ir::is_tensor_core(which)) return tensor_core(e, which);
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

llvm::Value* KernelLowering::atomic(const ir::Expr& e, ir::Intrinsic which) {
  using I = ir::Intrinsic;
  const Binding& array = binding_of(*e.operands.at(0));
  const ir::Type t = array.type;
  if (!ir::is_numeric(t)) invariant_failed(fmt::format("atomic on a {} array", ir::type_name(t)));
  llvm::Value* i = index64(*e.operands.at(1));
  if (array.param_index >= 0) buffer_read_[array.param_index] = buffer_written_[array.param_index] = true;
  // The operands, converted to the element type, before the access (checked mode guards only the access).
  llvm::Value* value = convert(expr(*e.operands.at(2)), e.operands[2]->type, t);
  llvm::Value* desired = which == I::atomic_cas ? convert(expr(*e.operands.at(3)), e.operands[3]->type, t) : nullptr;
  // Outside the array the atomic acts on the sink and gives 0.
  return checked_load(guarded(e), site_of(e), array, i, element_bytes(t), element_pointer(array, i),
                      [&](llvm::Value* at) { return atomic_access(e, which, array, at, value, desired); });
}

/// The atomic itself on `address`: `value` is its operand (atomic_cas: the expected value, and
/// `desired` the new one), both of the element type.
llvm::Value* KernelLowering::atomic_access(const ir::Expr& e, ir::Intrinsic which, const Binding& array,
                                           llvm::Value* address, llvm::Value* value, llvm::Value* desired) {
  using I = ir::Intrinsic;
  const ir::Type t = array.type;
  const llvm::Align align(ir::byte_size(t));
  const auto relaxed = llvm::AtomicOrdering::Monotonic;
  const bool is_float = ir::is_float(t), is_signed = ir::is_signed(t);
  if (e.memory_order != ir::MemoryOrder::relaxed || e.memory_scope != ir::MemoryScope::device)
    return ordered_atomic(e, which, array, address, value, desired);
  if (which == I::atomic_cas) {
    llvm::Value* expected = value;
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
  return builder_.CreateAtomicRMW(op, address, value, align, relaxed);
}

/// An atomic with a written order or scope: one PTX `atom{.sem}{.scope}{.space}.op.type`
/// (LLVM 19's NVPTX back end has no scoped, ordered atomics), returning the old value.
llvm::Value* KernelLowering::ordered_atomic(const ir::Expr& e, ir::Intrinsic which, const Binding& array,
                                            llvm::Value* address, llvm::Value* value, llvm::Value* desired) {
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
  if (which == I::atomic_sub) value = is_float ? builder_.CreateFNeg(value) : builder_.CreateNeg(value);
  auto as_register = [&](llvm::Value* v) { return half ? builder_.CreateBitCast(v, reg_ty) : v; };
  llvm::Value* pointer = builder_.CreatePtrToInt(address, builder_.getInt64Ty());
  std::vector<llvm::Value*> args{pointer};
  args.push_back(as_register(value));
  if (which == I::atomic_cas) args.push_back(as_register(desired));
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
void KernelLowering::lower_assert(const ir::Expr& e) {
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

}  // namespace ptxgate::codegen::lowering
