// Tensor cores (sm_80+): mma.sync, ldmatrix, cp.async and tf32 rounding as LLVM 19 NVPTX intrinsics.
#include "ptxgate/codegen/internal/tensor_core.hpp"

#include <vector>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

namespace ptxgate::codegen {
namespace {

/// The 32-bit words of a 4-, 8- or 16-byte vector, in lane order.
std::vector<llvm::Value*> words_of(llvm::IRBuilder<>& b, llvm::Value* v) {
  const unsigned bits = static_cast<unsigned>(v->getType()->getPrimitiveSizeInBits().getFixedValue());
  llvm::Value* as_words = b.CreateBitCast(v, llvm::FixedVectorType::get(b.getInt32Ty(), bits / 32));
  std::vector<llvm::Value*> words;
  for (unsigned i = 0; i < bits / 32; ++i) words.push_back(b.CreateExtractElement(as_words, uint64_t{i}));
  return words;
}

/// The intrinsic's declaration; an overloaded one (ldmatrix takes any pointer) over `overloads`.
llvm::Function* declaration(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Type*> overloads = {}) {
  return llvm::Intrinsic::getDeclaration(b.GetInsertBlock()->getModule(), id,
                                         llvm::Intrinsic::isOverloaded(id) ? overloads : llvm::ArrayRef<llvm::Type*>{});
}

}  // namespace

llvm::Value* emit_mma(llvm::IRBuilder<>& b, ir::Intrinsic shape, ir::Type a_type, llvm::Value* a, llvm::Value* bm,
                      llvm::Value* c) {
  namespace I = llvm::Intrinsic;
  const I::ID id = shape == ir::Intrinsic::mma_m16n8k8                   ? I::nvvm_mma_m16n8k8_row_col_tf32
                   : ir::vector_element(a_type) == ir::Type::bf16 ? I::nvvm_mma_m16n8k16_row_col_bf16
                                                                  : I::nvvm_mma_m16n8k16_row_col_f32_f32;
  llvm::Function* mma = declaration(b, id);
  // The intrinsic takes each fragment as 32-bit registers (i32, <2 x half> or float): A's words,
  // then B's, then C's, each cast to its parameter's type.
  std::vector<llvm::Value*> args;
  for (llvm::Value* fragment : {a, bm, c})
    for (llvm::Value* word : words_of(b, fragment))
      args.push_back(b.CreateBitCast(word, mma->getFunctionType()->getParamType(static_cast<unsigned>(args.size()))));
  llvm::Value* d = b.CreateCall(mma, args);
  llvm::Value* out = llvm::PoisonValue::get(llvm::FixedVectorType::get(b.getFloatTy(), 4));
  for (unsigned i = 0; i < 4; ++i) out = b.CreateInsertElement(out, b.CreateExtractValue(d, {i}), uint64_t{i});
  return out;
}

llvm::Value* emit_ldmatrix(llvm::IRBuilder<>& b, unsigned count, bool trans, llvm::Value* row, llvm::Type* result_type) {
  namespace I = llvm::Intrinsic;
  const I::ID id = count == 1   ? (trans ? I::nvvm_ldmatrix_sync_aligned_m8n8_x1_trans_b16
                                         : I::nvvm_ldmatrix_sync_aligned_m8n8_x1_b16)
                   : count == 2 ? (trans ? I::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16
                                         : I::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16)
                                : (trans ? I::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16
                                         : I::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16);
  llvm::Value* loaded = b.CreateCall(declaration(b, id, {row->getType()}), {row});
  llvm::Value* words = llvm::PoisonValue::get(llvm::FixedVectorType::get(b.getInt32Ty(), count));
  for (unsigned i = 0; i < count; ++i) {
    llvm::Value* word = loaded->getType()->isStructTy() ? b.CreateExtractValue(loaded, {i}) : loaded;
    words = b.CreateInsertElement(words, word, uint64_t{i});
  }
  return b.CreateBitCast(words, result_type);
}

void emit_cp_async(llvm::IRBuilder<>& b, unsigned bytes, llvm::Value* destination, llvm::Value* source,
                   llvm::Value* source_bytes) {
  namespace I = llvm::Intrinsic;
  const bool zero_fill = source_bytes != nullptr;
  const I::ID id = bytes == 4   ? (zero_fill ? I::nvvm_cp_async_ca_shared_global_4_s : I::nvvm_cp_async_ca_shared_global_4)
                   : bytes == 8 ? (zero_fill ? I::nvvm_cp_async_ca_shared_global_8_s : I::nvvm_cp_async_ca_shared_global_8)
                                : (zero_fill ? I::nvvm_cp_async_cg_shared_global_16_s
                                             : I::nvvm_cp_async_cg_shared_global_16);
  llvm::Function* copy = declaration(b, id, {destination->getType(), source->getType()});
  if (!zero_fill) {
    b.CreateCall(copy, {destination, source});
    return;
  }
  // PTX requires src-size <= cp-size: a larger count reads the whole copy.
  llvm::Value* clamped = b.CreateIntrinsic(I::umin, {b.getInt32Ty()}, {source_bytes, b.getInt32(bytes)});
  b.CreateCall(copy, {destination, source, clamped});
}

void emit_cp_async_commit(llvm::IRBuilder<>& b) { b.CreateCall(declaration(b, llvm::Intrinsic::nvvm_cp_async_commit_group), {}); }

void emit_cp_async_wait(llvm::IRBuilder<>& b, uint32_t groups) {
  b.CreateCall(declaration(b, llvm::Intrinsic::nvvm_cp_async_wait_group), {b.getInt32(groups)});
}

llvm::Value* emit_tf32(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* bits = b.CreateCall(declaration(b, llvm::Intrinsic::nvvm_f2tf32_rna), {x});
  return b.CreateBitCast(bits, b.getFloatTy());
}

}  // namespace ptxgate::codegen
