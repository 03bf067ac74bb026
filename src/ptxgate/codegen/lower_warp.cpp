// IR -> LLVM IR: warp operations (votes, shuffles, butterfly reductions).
#include "ptxgate/codegen/internal/kernel_lowering.hpp"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace ptxgate::codegen::lowering {

/// One shfl.sync of a 32- or 64-bit value (64-bit values move as two 32-bit halves).
/// `lane` is the shfl operand b (only its low 5 bits count).
llvm::Value* KernelLowering::shuffle(ir::Intrinsic mode, llvm::Value* v, llvm::Value* lane) {
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
llvm::Value* KernelLowering::warp_operation(const ir::Expr& e, ir::Intrinsic which) {
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

}  // namespace ptxgate::codegen::lowering
