// After the kernel pipeline: a pair of f32 values rounded to bf16 or f16 and packed is one cvt.rn.*x2.f32.
#include "ptxgate/codegen/internal/nvptx.hpp"

#include <vector>

#include <llvm/ADT/STLExtras.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

namespace ptxgate::codegen {
namespace {

/// The f32 value `value` rounds to its 16-bit element (an fptrunc from float), or null.
llvm::Value* rounded_float(llvm::Value* value) {
  auto* trunc = llvm::dyn_cast<llvm::FPTruncInst>(value);
  if (!trunc || !trunc->getSrcTy()->isFloatTy()) return nullptr;
  return trunc->getOperand(0);
}

/// The constant index of an insertelement, or -1.
int64_t insert_index(const llvm::InsertElementInst& insert) {
  auto* index = llvm::dyn_cast<llvm::ConstantInt>(insert.getOperand(2));
  return index ? index->getSExtValue() : -1;
}

}  // namespace

size_t pack_half_pairs(llvm::Module& module, unsigned sm) {
  if (sm < 80) return 0;  // cvt.rn.{bf16x2,f16x2}.f32 needs sm_80
  std::vector<llvm::InsertElementInst*> packs;
  for (llvm::Function& f : module)
    for (llvm::BasicBlock& block : f)
      for (llvm::Instruction& inst : block) {
        auto* high = llvm::dyn_cast<llvm::InsertElementInst>(&inst);
        if (!high || insert_index(*high) != 1) continue;
        auto* type = llvm::cast<llvm::FixedVectorType>(high->getType());
        if (type->getNumElements() != 2 || !(type->getElementType()->isBFloatTy() || type->getElementType()->isHalfTy()))
          continue;
        auto* low = llvm::dyn_cast<llvm::InsertElementInst>(high->getOperand(0));
        if (!low || insert_index(*low) != 0 || !low->hasOneUse() || !llvm::isa<llvm::UndefValue>(low->getOperand(0)))
          continue;
        if (rounded_float(low->getOperand(1)) && rounded_float(high->getOperand(1))) packs.push_back(high);
      }
  for (llvm::InsertElementInst* high : packs) {
    auto* low = llvm::cast<llvm::InsertElementInst>(high->getOperand(0));
    auto* low_trunc = llvm::cast<llvm::Instruction>(low->getOperand(1));
    auto* high_trunc = llvm::cast<llvm::Instruction>(high->getOperand(1));
    const bool bf16 = high->getType()->getScalarType()->isBFloatTy();
    // The intrinsic's first operand is the upper half (element 1), as cvt's first source is.
    llvm::Function* convert = llvm::Intrinsic::getDeclaration(
        &module, bf16 ? llvm::Intrinsic::nvvm_ff2bf16x2_rn : llvm::Intrinsic::nvvm_ff2f16x2_rn);
    llvm::IRBuilder<> builder(high);
    llvm::Value* packed = builder.CreateCall(convert, {rounded_float(high_trunc), rounded_float(low_trunc)});
    packed->takeName(high);
    high->replaceAllUsesWith(packed);
    high->eraseFromParent();
    low->eraseFromParent();
    if (high_trunc->use_empty()) high_trunc->eraseFromParent();
    if (low_trunc != high_trunc && low_trunc->use_empty()) low_trunc->eraseFromParent();
  }
  return packs.size();
}

}  // namespace ptxgate::codegen
