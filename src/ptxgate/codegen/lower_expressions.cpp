// IR -> LLVM IR: expressions, builtins, arithmetic with defined results, conversions, addresses, vectors.
#include "ptxgate/codegen/internal/kernel_lowering.hpp"

#include <optional>
#include <utility>

#include <fmt/format.h>
#include <llvm/ADT/APSInt.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace ptxgate::codegen::lowering {

llvm::Value* KernelLowering::expr(const ir::Expr& e) {
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
      llvm::Value* i = index64(*e.operands.at(0));
      if (auto snapshot = snapshots_.find(e.symbol); snapshot != snapshots_.end() && !guarded(e))
        return from_memory(builder_.CreateExtractElement(snapshot->second, i), array.type);
      if (array.param_index >= 0) buffer_read_[array.param_index] = true;
      llvm::Type* type = memory_type(context_, array.type);
      llvm::Value* loaded = checked_load(guarded(e), site_of(e), array, i, element_bytes(array.type),
                                         element_pointer(array, i),
                                         [&](llvm::Value* at) { return builder_.CreateLoad(type, at); }, true);
      return from_memory(loaded, array.type);
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
llvm::Value* KernelLowering::constant(const ir::Symbol& symbol) {
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

llvm::Value* KernelLowering::builtin(ir::Builtin which, uint8_t component) {
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
  // In a kernel with a required block (required_block_extent) block_dim is a constant, and so is
  // thread_id along a dimension of extent 1.
  const uint32_t extent = required_block_extent(component);
  auto block_size = [&]() -> llvm::Value* {
    if (extent != 0) return builder_.getInt32(extent);
    return read(ntid);
  };
  switch (which) {
    case ir::Builtin::thread_id:
      if (extent == 1) return builder_.getInt32(0);
      return read(tid);
    case ir::Builtin::block_id: return read(ctaid);
    case ir::Builtin::block_dim: return block_size();
    case ir::Builtin::grid_dim: return read(nctaid);
    case ir::Builtin::global_id: {
      // One instruction per statement: the order of function arguments' evaluation is the host
      // compiler's choice, and the emitted IR must not depend on which compiler built ptxgate.
      llvm::Value* block = read(ctaid);
      llvm::Value* size = block_size();
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
llvm::Value* KernelLowering::warp_index() {
  // One instruction per statement (see builtin): the IR must not depend on the host compiler.
  // With a required block the sizes are constants and an extent-1 dimension's index is 0, so a
  // one-dimensional block's warp is tid.x / 32, as CUDA C++ writes it.
  llvm::Value* linear = builtin(ir::Builtin::thread_id, 2);
  for (uint8_t dim : {uint8_t{1}, uint8_t{0}}) {
    llvm::Value* size = builtin(ir::Builtin::block_dim, dim);
    llvm::Value* scaled = builder_.CreateMul(linear, size);
    llvm::Value* index = builtin(ir::Builtin::thread_id, dim);
    linear = builder_.CreateAdd(scaled, index);
  }
  return builder_.CreateLShr(linear, 5, "warp_id");
}

/// The block's extent along `dim` when the kernel being lowered requires its block (@workgroup:
/// `.reqntid`, so the driver launches it with no other block, and the launch checks say so
/// before); 0 otherwise, and always in a device function, which kernels of any block may call.
uint32_t KernelLowering::required_block_extent(uint8_t dim) const {
  if (as_kernel_ == nullptr || !as_kernel_->has_workgroup() || dim > 2) return 0;
  return std::max<uint32_t>(as_kernel_->workgroup[dim], 1);
}

/// Marks an f32/f64 add, subtract or multiply as contractible in the contract and fast modes
/// (the NVPTX back end then fuses a multiply feeding an add into fma.rn). Half types are never
/// contracted (docs/ir.md, "Small types"); a folded constant has no flags to set.
llvm::Value* KernelLowering::fp_flags(llvm::Value* v, ir::Type t) {
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
llvm::Value* KernelLowering::fast_divide(llvm::Value* l, llvm::Value* r) {
  llvm::Type* f32 = builder_.getFloatTy();
  auto* type = llvm::FunctionType::get(f32, {f32, f32}, false);
  auto* divide = llvm::InlineAsm::get(type, "div.full.ftz.f32 $0, $1, $2;", "=f,f,f", /*hasSideEffects=*/false);
  return builder_.CreateCall(type, divide, {l, r});
}

llvm::Value* KernelLowering::unary(const ir::Expr& e) {
  llvm::Value* operand = expr(*e.operands.at(0));
  switch (e.unary_op) {
    case ir::UnaryOp::neg:
      return ir::is_float(e.operands[0]->type) ? builder_.CreateFNeg(operand) : builder_.CreateNeg(operand);
    case ir::UnaryOp::bit_not:
    case ir::UnaryOp::logical_not: return builder_.CreateNot(operand);
  }
  invariant_failed("unknown unary operator");
}

llvm::Value* KernelLowering::binary(const ir::Expr& e) {
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
llvm::Value* KernelLowering::integer_division(llvm::Value* l, llvm::Value* r, bool is_signed, bool remainder) {
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
llvm::Value* KernelLowering::shift_amount(llvm::Value* amount, llvm::Type* shifted) {
  llvm::Value* same_width = builder_.CreateZExtOrTrunc(amount, shifted);
  return builder_.CreateAnd(same_width, llvm::ConstantInt::get(shifted, shifted->getIntegerBitWidth() - 1));
}

llvm::Value* KernelLowering::short_circuit(const ir::Expr& e) {
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
llvm::Value* KernelLowering::convert(llvm::Value* v, ir::Type from, ir::Type to) {
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

llvm::Value* KernelLowering::to_memory(llvm::Value* v, ir::Type t) {
  return t == ir::Type::bool_ ? builder_.CreateZExt(v, builder_.getInt8Ty()) : v;
}

llvm::Value* KernelLowering::from_memory(llvm::Value* v, ir::Type t) {
  return t == ir::Type::bool_ ? builder_.CreateICmpNE(v, builder_.getInt8(0)) : v;
}

/// An integer index as an i64 (sign- or zero-extended by its type), for address arithmetic.
llvm::Value* KernelLowering::index64(const ir::Expr& index) {
  if (!ir::is_integer(index.type)) invariant_failed("non-integer index");
  llvm::Value* i = expr(index);
  if (ir::bit_width(index.type) < 64)
    i = ir::is_signed(index.type) ? builder_.CreateSExt(i, builder_.getInt64Ty())
                                  : builder_.CreateZExt(i, builder_.getInt64Ty());
  return i;
}

llvm::Value* KernelLowering::element_address(const Binding& array, const ir::Expr& index) {
  return element_pointer(array, index64(index));
}

llvm::Value* KernelLowering::element_pointer(const Binding& array, llvm::Value* i) {
  if (array.kind != Binding::Kind::buffer && array.kind != Binding::Kind::shared &&
      array.kind != Binding::Kind::local)
    invariant_failed("indexing something that is not a buffer, shared or local array");
  if (array.kind == Binding::Kind::shared || array.kind == Binding::Kind::local)
    return builder_.CreateInBoundsGEP(array.array_type, array.value, {builder_.getInt64(0), i});
  return builder_.CreateInBoundsGEP(memory_type(context_, array.type), array.value, i);
}

/// The lane `index` selects in a vector of type `vector`, taken modulo the lane count (a power of
/// two, so a mask) as an i32: defined for every value; a constant folds to a constant lane.
llvm::Value* KernelLowering::lane_index(const ir::Expr& index, ir::Type vector) {
  if (!ir::is_integer(index.type)) invariant_failed("non-integer lane index");
  llvm::Value* i = expr(index);
  llvm::Value* narrow = builder_.CreateZExtOrTrunc(i, builder_.getInt32Ty());
  return builder_.CreateAnd(narrow, builder_.getInt32(ir::vector_lanes(vector) - 1));
}

/// `T(a, b, ...)` of a vector type T: one value per lane, or one value for every lane.
llvm::Value* KernelLowering::build_vector(const ir::Expr& e) {
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
llvm::Value* KernelLowering::vector_access(const ir::Expr& e, ir::Intrinsic which) {
  const Binding& array = binding_of(*e.operands.at(0));
  if (array.kind != Binding::Kind::buffer && array.kind != Binding::Kind::shared)
    invariant_failed("vector access to something that is not a buffer or shared array");
  const std::optional<ir::Type> vector = ir::vector_of(array.type, ir::vector_access_lanes(which));
  if (!vector) invariant_failed(fmt::format("{} of {} elements", ir::intrinsic_name(which), ir::type_name(array.type)));
  llvm::Value* i = index64(*e.operands.at(1));
  llvm::Type* type = value_type(context_, *vector);
  const uint32_t bytes = ir::byte_size(*vector);
  const llvm::Align align(bytes);
  llvm::Value* address = builder_.CreateInBoundsGEP(type, array.value, i);
  if (ir::is_vector_store(which)) {
    llvm::Value* value = expr(*e.operands.at(2));
    checked_store(guarded(e), site_of(e), array, i, bytes, address,
                  [&](llvm::Value* at) { builder_.CreateAlignedStore(value, at, align); });
    if (array.param_index >= 0) buffer_written_[array.param_index] = true;
    return nullptr;
  }
  if (array.param_index >= 0) buffer_read_[array.param_index] = true;
  return checked_load(guarded(e), site_of(e), array, i, bytes, address,
                      [&](llvm::Value* at) { return builder_.CreateAlignedLoad(type, at, align); }, true);
}

}  // namespace ptxgate::codegen::lowering
