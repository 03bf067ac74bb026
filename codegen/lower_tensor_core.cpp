// IR -> LLVM IR: tensor cores: mma.sync, ldmatrix, cp.async.
#include "ptxgate/codegen/internal/kernel_lowering.hpp"

#include <fmt/format.h>
#include <llvm/IR/Constants.h>

#include "ptxgate/codegen/internal/tensor_core.hpp"

namespace ptxgate::codegen::lowering {

/// The address of the `bytes`-sized chunk `index` of a buffer or shared array (chunk i starts
/// at byte bytes * i: aligned to `bytes` when the array's base is).
llvm::Value* KernelLowering::chunk_address(const Binding& array, const ir::Expr& index, unsigned bytes) {
  if (array.kind != Binding::Kind::buffer && array.kind != Binding::Kind::shared)
    invariant_failed("tensor-core access to something that is not a buffer or shared array");
  return builder_.CreateInBoundsGEP(llvm::ArrayType::get(builder_.getInt8Ty(), bytes), array.value, index64(index));
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

}  // namespace ptxgate::codegen::lowering
