// IR -> LLVM IR: tensor cores: mma.sync, ldmatrix, cp.async.
#include "ptxgate/codegen/internal/kernel_lowering.hpp"

#include <bit>

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "ptxgate/codegen/internal/tensor_core.hpp"

namespace ptxgate::codegen::lowering {

/// The address of the `bytes`-sized chunk `index` of a buffer or shared array (chunk i starts
/// at byte bytes * i: aligned to `bytes` when the array's base is).
llvm::Value* KernelLowering::chunk_pointer(const Binding& array, llvm::Value* index, unsigned bytes) {
  if (array.kind != Binding::Kind::buffer && array.kind != Binding::Kind::shared)
    invariant_failed("tensor-core access to something that is not a buffer or shared array");
  return builder_.CreateInBoundsGEP(llvm::ArrayType::get(builder_.getInt8Ty(), bytes), array.value, index);
}

llvm::Value* KernelLowering::tensor_core(const ir::Expr& e, ir::Intrinsic which) {
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
    llvm::Value* chunk = index64(*e.operands.at(1));
    if (guarded(e)) {
      // A warp-wide operation cannot be skipped for one lane: a row outside the array is recorded
      // and read from the array's first chunk instead. Lanes 8N.. give no row (their chunk is unused).
      llvm::Value* inside = index_in_bounds(array, chunk, 16);
      llvm::Value* unused = builder_.CreateICmpUGE(builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_laneid, {}, {}),
                                                   builder_.getInt32(8 * ir::ldmatrix_count(which)));
      record_violation(builder_.CreateOr(inside, unused), site_of(e), contract::Violation::out_of_bounds, chunk,
                       array_length(array));
      chunk = builder_.CreateSelect(inside, chunk, builder_.getInt64(0));
    }
    llvm::Value* row = chunk_pointer(array, chunk, 16);
    return emit_ldmatrix(builder_, ir::ldmatrix_count(which), ir::is_ldmatrix_trans(which), row,
                         value_type(context_, e.type));
  }
  if (ir::is_async_copy(which)) {
    const unsigned bytes = ir::async_copy_bytes(which);
    const Binding& destination = binding_of(*e.operands.at(0));
    const Binding& source = binding_of(*e.operands.at(2));
    if (destination.kind != Binding::Kind::shared || source.kind != Binding::Kind::buffer)
      invariant_failed("cp_async between arrays other than a buffer and a shared array");
    // Destination, source, count: the unchecked code's order (its PTX stays the same).
    llvm::Value* i = index64(*e.operands.at(1));
    llvm::Value* to = chunk_pointer(destination, i, bytes);
    llvm::Value* j = index64(*e.operands.at(3));
    llvm::Value* from = chunk_pointer(source, j, bytes);
    llvm::Value* count = e.operands.size() > 4 ? expr(*e.operands[4]) : nullptr;
    if (source.param_index >= 0) buffer_read_[source.param_index] = true;
    if (guarded(e, 1)) {
      // The source: the bytes read (src_bytes, at most `bytes`) inside the buffer, or none read. A
      // source outside it is recorded and the copy zero-fills instead (src_bytes 0, from the base).
      llvm::Value* length = array_length(source);
      llvm::Value* read = builder_.getInt32(bytes);
      if (count)
        read = builder_.CreateIntrinsic(llvm::Intrinsic::umin, {builder_.getInt32Ty()}, {count, builder_.getInt32(bytes)});
      llvm::Value* read64 = builder_.CreateZExt(read, builder_.getInt64Ty());
      llvm::Value* units = builder_.CreateLShr(length, std::countr_zero(bytes));
      llvm::Value* whole = builder_.CreateICmpULT(j, units);
      llvm::Value* tail = builder_.CreateAnd(builder_.CreateICmpEQ(j, units),
                                             builder_.CreateICmpULE(read64, builder_.CreateAnd(length, bytes - 1)));
      llvm::Value* ok = builder_.CreateOr(builder_.CreateICmpEQ(read, builder_.getInt32(0)), builder_.CreateOr(whole, tail));
      record_violation(ok, site_of(e, 1), contract::Violation::out_of_bounds, j, length);
      count = builder_.CreateSelect(ok, read, builder_.getInt32(0));
      from = builder_.CreateSelect(ok, from, source.value);
    }
    checked_effect(guarded(e), site_of(e), destination, i, bytes,
                   [&] { emit_cp_async(builder_, bytes, to, from, count); });
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

}  // namespace ptxgate::codegen::lowering
