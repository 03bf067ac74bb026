// grid_sync(): a self-resetting grid-wide barrier on one backend-owned u32 word.
#include "ptxgate/codegen/internal/grid_sync.hpp"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace ptxgate::codegen {
namespace {

llvm::Value* special_register(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id) { return b.CreateIntrinsic(id, {}, {}); }

/// The three registers combined left to right by `combine`, read one per statement: the order of
/// function arguments' evaluation is the host compiler's, and the IR must not depend on it.
template <class Combine>
llvm::Value* fold3(llvm::IRBuilder<>& b, llvm::Intrinsic::ID x, llvm::Intrinsic::ID y, llvm::Intrinsic::ID z,
                   Combine combine) {
  llvm::Value* vx = special_register(b, x);
  llvm::Value* vy = special_register(b, y);
  llvm::Value* xy = combine(vx, vy);
  llvm::Value* vz = special_register(b, z);
  return combine(xy, vz);
}

}  // namespace

void emit_grid_barrier(llvm::IRBuilder<>& b, llvm::Value* barrier_word) {
  namespace I = llvm::Intrinsic;
  llvm::Function* function = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& context = b.getContext();
  llvm::Type* u32 = b.getInt32Ty();
  const llvm::Align word_align(4);
  constexpr uint32_t kTopBit = 0x80000000u;

  b.CreateIntrinsic(I::nvvm_barrier0, {}, {});

  auto orr = [&](llvm::Value* l, llvm::Value* r) { return b.CreateOr(l, r); };
  auto mul = [&](llvm::Value* l, llvm::Value* r) { return b.CreateMul(l, r); };
  llvm::Value* thread_bits =
      fold3(b, I::nvvm_read_ptx_sreg_tid_x, I::nvvm_read_ptx_sreg_tid_y, I::nvvm_read_ptx_sreg_tid_z, orr);
  auto* arrive = llvm::BasicBlock::Create(context, "grid_sync.arrive", function);
  auto* wait = llvm::BasicBlock::Create(context, "grid_sync.wait", function);
  auto* arrived = llvm::BasicBlock::Create(context, "grid_sync.arrived", function);
  auto* release = llvm::BasicBlock::Create(context, "grid_sync.release", function);
  b.CreateCondBr(b.CreateICmpEQ(thread_bits, b.getInt32(0)), arrive, release);

  b.SetInsertPoint(arrive);
  llvm::Value* block_bits =
      fold3(b, I::nvvm_read_ptx_sreg_ctaid_x, I::nvvm_read_ptx_sreg_ctaid_y, I::nvvm_read_ptx_sreg_ctaid_z, orr);
  llvm::Value* blocks =
      fold3(b, I::nvvm_read_ptx_sreg_nctaid_x, I::nvvm_read_ptx_sreg_nctaid_y, I::nvvm_read_ptx_sreg_nctaid_z, mul);
  llvm::Value* first_block_adds = b.CreateSub(b.getInt32(kTopBit), b.CreateSub(blocks, b.getInt32(1)));
  llvm::Value* increment = b.CreateSelect(b.CreateICmpEQ(block_bits, b.getInt32(0)), first_block_adds, b.getInt32(1));
  b.CreateIntrinsic(I::nvvm_membar_gl, {}, {});
  llvm::Value* seen = b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, barrier_word, increment, word_align,
                                        llvm::AtomicOrdering::Monotonic);
  b.CreateBr(wait);

  b.SetInsertPoint(wait);
  llvm::LoadInst* now = b.CreateAlignedLoad(u32, barrier_word, word_align, /*isVolatile=*/true);
  llvm::Value* flipped = b.CreateAnd(b.CreateXor(seen, now), b.getInt32(kTopBit));
  b.CreateCondBr(b.CreateICmpEQ(flipped, b.getInt32(0)), wait, arrived);

  b.SetInsertPoint(arrived);
  b.CreateIntrinsic(I::nvvm_membar_gl, {}, {});
  b.CreateBr(release);

  b.SetInsertPoint(release);
  b.CreateIntrinsic(I::nvvm_barrier0, {}, {});
}

}  // namespace ptxgate::codegen
