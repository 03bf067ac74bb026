// IR -> LLVM IR: checked mode's guards (docs/ir.md "Memory safety"): array lengths, the bounds
// test with the unchecked lowering's index semantics, and the record of a launch's first violation.
//
// Element and vector accesses and atomics are guarded without control flow or memory operations:
// the address becomes a 16-byte sink outside the user's memory when the access is outside its
// array (a buffer's load reads 16 zero bytes), a load's value 0, and the thread's first violation
// is held in a register latch that the kernel writes to the launch's record at its exit. The basic
// blocks stay those of the unchecked code, so the NVPTX back end contracts the same multiply-adds
// into fmas (it fuses only within a block), and nothing between two loads keeps ptxas from
// issuing them together: a correct kernel computes bit for bit what it computes unchecked.
#include "ptxgate/codegen/internal/kernel_lowering.hpp"

#include <bit>

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>

namespace ptxgate::codegen::lowering {

using contract::CheckedRecord;

bool KernelLowering::guarded(const ir::Expr& e, uint32_t part) const {
  if (!checked_) return false;
  if (e.access_site == UINT32_MAX) invariant_failed(fmt::format("an access in '{}' has no site number", kernel_.name));
  const uint32_t site = e.access_site + part;
  return site >= checked_->guards.size() || checked_->guards[site];
}

/// The hidden parameters after `first_hidden`: one length per buffer parameter, then the record.
void KernelLowering::bind_checked_parameters(size_t first_hidden) {
  auto next = static_cast<unsigned>(first_hidden);
  for (size_t i = 0; i < kernel_.params.size(); ++i) {
    if (!kernel_.params[i].is_buffer) continue;
    llvm::Argument* length = function_->getArg(next++);
    length->setName(kernel_.params[i].name + ".bytes");
    params_[i].length = length;
    if (auto it = arrays_by_name_.find(kernel_.params[i].name); it != arrays_by_name_.end()) it->second.length = length;
  }
  llvm::Argument* record = function_->getArg(next++);
  record->setName("checked_record");
  record->addAttr(llvm::Attribute::NoUndef);
  record_ = record;
  if (as_function_) {  // a device function updates its caller's latch
    llvm::Argument* latch = function_->getArg(next);
    latch->setName("checked_latch");
    latch->addAttr(llvm::Attribute::NoCapture);
    latch_ = latch;
  } else {
    make_latch();
  }
}

llvm::Value* KernelLowering::dynamic_shared_bytes() {
  auto* type = llvm::FunctionType::get(builder_.getInt32Ty(), {}, false);
  // No side effects: a value the launch fixes, so the optimiser may compute it once.
  auto* read = llvm::InlineAsm::get(type, "mov.u32 $0, %dynamic_smem_size;", "=r", /*hasSideEffects=*/false);
  return builder_.CreateZExt(builder_.CreateCall(type, read, {}), builder_.getInt64Ty(), "dynamic_smem_size");
}

llvm::Value* KernelLowering::array_length(const Binding& array) {
  if (array.length) return array.length;
  if (array.kind == Binding::Kind::shared) {  // the dynamic shared array
    dynamic_bytes_ = dynamic_shared_bytes();
    return dynamic_bytes_;
  }
  invariant_failed("checked access to an array without a length");
}

llvm::Value* KernelLowering::index_in_bounds(const Binding& array, llvm::Value* index, uint32_t stride) {
  if (!std::has_single_bit(stride)) invariant_failed(fmt::format("access of {} bytes is not a power of two", stride));
  llvm::Value* length = array_length(array);
  llvm::Value* units = builder_.CreateLShr(length, std::countr_zero(stride), "units");
  return builder_.CreateICmpULT(index, units, "in_bounds");
}

llvm::StructType* KernelLowering::latch_type() {
  return llvm::StructType::get(context_, {builder_.getInt32Ty(), builder_.getInt64Ty(), builder_.getInt64Ty()});
}

void KernelLowering::make_latch() {
  // A kernel's latch lives in registers once promoted (SROA): no memory operation at the accesses,
  // so the loads around them are scheduled as in the unchecked code.
  llvm::BasicBlock& entry = function_->getEntryBlock();
  llvm::IRBuilder<> at_entry(&entry, entry.getFirstInsertionPt());
  llvm::AllocaInst* latch = at_entry.CreateAlloca(latch_type(), nullptr, "checked.latch");
  builder_.CreateStore(llvm::ConstantStruct::get(latch_type(), {builder_.getInt32(kNoViolation), builder_.getInt64(0),
                                                                builder_.getInt64(0)}),
                       latch);
  latch_ = latch;
}

void KernelLowering::record_violation(llvm::Value* ok, uint32_t site, contract::Violation reason, llvm::Value* value,
                                      llvm::Value* limit) {
  if (!latch_) invariant_failed("checked access without a violation latch");
  if (site >= (1u << 28)) invariant_failed(fmt::format("checked site {} past the record's 28 bits", site));
  // The thread's first violation: taken where `ok` is false and none is held yet.
  const uint32_t code = site | static_cast<uint32_t>(reason) << 28;
  llvm::Type* type = latch_type();
  auto field = [&](unsigned i) { return builder_.CreateStructGEP(type, latch_, i); };
  llvm::Value* held = builder_.CreateLoad(builder_.getInt32Ty(), field(0));
  llvm::Value* take = builder_.CreateAnd(builder_.CreateNot(ok), builder_.CreateICmpEQ(held, builder_.getInt32(kNoViolation)));
  builder_.CreateStore(builder_.CreateSelect(take, builder_.getInt32(code), held), field(0));
  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::Value* old_value = builder_.CreateLoad(i64, field(1));
  builder_.CreateStore(builder_.CreateSelect(take, builder_.CreateZExtOrTrunc(value, i64), old_value), field(1));
  // A kernel's own site: the limit is a parameter, a constant or the dynamic shared size, which the
  // exit recomputes from the site (one register less held through the kernel). A device function's
  // limit depends on its caller's buffer: latched.
  if (as_kernel_ && (llvm::isa<llvm::Argument>(limit) || llvm::isa<llvm::Constant>(limit) || limit == dynamic_bytes_)) {
    kernel_limits_.emplace_back(code, limit == dynamic_bytes_ ? nullptr : limit);
    return;
  }
  llvm::Value* old_limit = builder_.CreateLoad(i64, field(2));
  builder_.CreateStore(builder_.CreateSelect(take, builder_.CreateZExtOrTrunc(limit, i64), old_limit), field(2));
}

void KernelLowering::return_from_kernel() {
  if (!latch_ || !as_kernel_) {
    builder_.CreateRetVoid();
    return;
  }
  if (!exit_) exit_ = llvm::BasicBlock::Create(context_, "checked.return", function_);
  builder_.CreateBr(exit_);
}

void KernelLowering::finish_kernel() {
  if (!exit_) return;
  exit_->moveAfter(&function_->back());
  builder_.SetInsertPoint(exit_);
  // At a kernel's exit: a thread that holds a violation counts itself in the record; the one that
  // takes the count from 0 writes its site, reason, thread, block, value and limit.
  using R = CheckedRecord;
  llvm::Type* type = latch_type();
  llvm::Value* held = builder_.CreateLoad(builder_.getInt32Ty(), builder_.CreateStructGEP(type, latch_, 0));
  auto* count = new_block("checked.flush");
  auto* write = new_block("checked.first");
  auto* done = new_block("checked.exit");
  auto cold = llvm::MDBuilder(context_).createUnlikelyBranchWeights();
  builder_.CreateCondBr(builder_.CreateICmpNE(held, builder_.getInt32(kNoViolation)), count, done, cold);
  builder_.SetInsertPoint(count);
  llvm::Value* before = builder_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, record_, builder_.getInt64(1), llvm::Align(8),
                                                 llvm::AtomicOrdering::Monotonic);
  builder_.CreateCondBr(builder_.CreateICmpEQ(before, builder_.getInt64(0)), write, done);
  builder_.SetInsertPoint(write);
  auto at = [&](uint32_t offset) { return builder_.CreateConstInBoundsGEP1_64(builder_.getInt8Ty(), record_, offset); };
  builder_.CreateStore(builder_.CreateAnd(held, builder_.getInt32((1u << 28) - 1)), at(R::kSite));
  builder_.CreateStore(builder_.CreateLShr(held, 28), at(R::kReason));
  namespace I = llvm::Intrinsic;
  const I::ID tid[3] = {I::nvvm_read_ptx_sreg_tid_x, I::nvvm_read_ptx_sreg_tid_y, I::nvvm_read_ptx_sreg_tid_z};
  const I::ID ctaid[3] = {I::nvvm_read_ptx_sreg_ctaid_x, I::nvvm_read_ptx_sreg_ctaid_y, I::nvvm_read_ptx_sreg_ctaid_z};
  for (uint32_t k = 0; k < 3; ++k) {
    builder_.CreateStore(builder_.CreateIntrinsic(tid[k], {}, {}), at(R::kThread + 4 * k));
    builder_.CreateStore(builder_.CreateIntrinsic(ctaid[k], {}, {}), at(R::kBlock + 4 * k));
  }
  llvm::Type* i64 = builder_.getInt64Ty();
  builder_.CreateStore(builder_.CreateLoad(i64, builder_.CreateStructGEP(type, latch_, 1)), at(R::kValue));
  llvm::Value* limit = builder_.CreateLoad(i64, builder_.CreateStructGEP(type, latch_, 2));
  llvm::Value* dynamic = nullptr;
  for (const auto& [code, known] : kernel_limits_) {
    llvm::Value* value = known;
    if (!value) value = dynamic ? dynamic : (dynamic = dynamic_shared_bytes());
    limit = builder_.CreateSelect(builder_.CreateICmpEQ(held, builder_.getInt32(code)),
                                  builder_.CreateZExtOrTrunc(value, i64), limit);
  }
  builder_.CreateStore(limit, at(R::kLimit));
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
  builder_.CreateRetVoid();
}

llvm::Value* KernelLowering::sink(const Binding& array) {
  if (array.kind == Binding::Kind::buffer)  // the record slot's own 16 bytes past its fields
    return builder_.CreateConstInBoundsGEP1_64(builder_.getInt8Ty(), record_, CheckedRecord::kSink, "checked.sink");
  if (array.kind == Binding::Kind::shared) {
    if (!shared_sink_) {
      auto* bytes = llvm::ArrayType::get(builder_.getInt8Ty(), 16);
      auto* global = module_.getNamedGlobal("__ptxgate_shared_sink");
      if (!global) {
        global = new llvm::GlobalVariable(module_, bytes, false, llvm::GlobalValue::InternalLinkage,
                                          llvm::UndefValue::get(bytes), "__ptxgate_shared_sink", nullptr,
                                          llvm::GlobalValue::NotThreadLocal, kSharedSpace);
        global->setAlignment(llvm::Align(16));
        global->setExternallyInitialized(true);
      }
      shared_sink_ = global;
    }
    return shared_sink_;
  }
  if (!local_sink_) {
    llvm::BasicBlock& entry = function_->getEntryBlock();
    llvm::IRBuilder<> at_entry(&entry, entry.getFirstInsertionPt());
    auto* alloca = at_entry.CreateAlloca(llvm::ArrayType::get(builder_.getInt8Ty(), 16), nullptr, "checked.sink");
    alloca->setAlignment(llvm::Align(16));
    local_sink_ = alloca;
  }
  return local_sink_;
}

llvm::Value* KernelLowering::guard(llvm::Value* ok, uint32_t site, contract::Violation reason, llvm::Value* value,
                                   llvm::Value* limit, const std::function<llvm::Value*()>& access,
                                   llvm::Value* fallback) {
  record_violation(ok, site, reason, value, limit);
  llvm::BasicBlock* before = builder_.GetInsertBlock();
  auto* run = new_block("checked.ok");
  auto* merge = new_block("checked.end");
  builder_.CreateCondBr(ok, run, merge, llvm::MDBuilder(context_).createLikelyBranchWeights());
  builder_.SetInsertPoint(run);
  llvm::Value* result = access();
  llvm::BasicBlock* run_end = builder_.GetInsertBlock();
  builder_.CreateBr(merge);
  merge->moveAfter(run_end);
  builder_.SetInsertPoint(merge);
  if (!result || !fallback) return nullptr;
  llvm::PHINode* phi = builder_.CreatePHI(result->getType(), 2, "checked");
  phi->addIncoming(result, run_end);
  phi->addIncoming(fallback, before);
  return phi;
}

llvm::Value* KernelLowering::checked_load(bool check, uint32_t site, const Binding& array, llvm::Value* index,
                                          uint32_t stride, llvm::Value* address,
                                          const std::function<llvm::Value*(llvm::Value*)>& load, bool zero_page) {
  if (!check) return load(address);
  llvm::Value* ok = index_in_bounds(array, index, stride);
  record_violation(ok, site, contract::Violation::out_of_bounds, index, array_length(array));
  if (array.kind == Binding::Kind::buffer && zero_page) {
    // A buffer's load outside it reads the record slot's 16 zero bytes: 0 without a select.
    llvm::Value* zeros =
        builder_.CreateConstInBoundsGEP1_64(builder_.getInt8Ty(), record_, CheckedRecord::kZeros, "checked.zeros");
    return load(builder_.CreateSelect(ok, address, zeros, "checked.address"));
  }
  llvm::Value* value = load(builder_.CreateSelect(ok, address, sink(array), "checked.address"));
  return builder_.CreateSelect(ok, value, llvm::Constant::getNullValue(value->getType()), "checked.value");
}

void KernelLowering::checked_store(bool check, uint32_t site, const Binding& array, llvm::Value* index,
                                   uint32_t stride, llvm::Value* address, const std::function<void(llvm::Value*)>& store) {
  if (!check) {
    store(address);
    return;
  }
  llvm::Value* ok = index_in_bounds(array, index, stride);
  record_violation(ok, site, contract::Violation::out_of_bounds, index, array_length(array));
  store(builder_.CreateSelect(ok, address, sink(array), "checked.address"));
}

void KernelLowering::checked_effect(bool check, uint32_t site, const Binding& array, llvm::Value* index,
                                    uint32_t stride, const std::function<void()>& effect) {
  if (!check) {
    effect();
    return;
  }
  llvm::Value* ok = index_in_bounds(array, index, stride);
  guard(ok, site, contract::Violation::out_of_bounds, index, array_length(array),
        [&]() -> llvm::Value* {
          effect();
          return nullptr;
        },
        nullptr);
}

void KernelLowering::checked_tile(const ir::Expr& e, const Binding& tile, llvm::Value* index, llvm::Value*& address,
                                  std::vector<llvm::Value*>& coordinates, uint32_t tile_part) {
  if (tile.kind != Binding::Kind::shared) invariant_failed("a TMA tile that is not a shared array");
  llvm::Value* redirect = builder_.getFalse();
  if (guarded(e, 0)) {
    const uint32_t bytes = element_bytes(tile.type);
    llvm::Value* inside = index_in_bounds(tile, index, bytes);
    record_violation(inside, site_of(e, 0), contract::Violation::out_of_bounds, index, array_length(tile));
    llvm::Value* aligned = builder_.CreateICmpEQ(builder_.CreateAnd(address, builder_.getInt32(127)), builder_.getInt32(0));
    // Misalignment is reported for a start inside the array (outside it, the bounds say more).
    record_violation(builder_.CreateOr(aligned, builder_.CreateNot(inside)), site_of(e, 0),
                     contract::Violation::tile_alignment, builder_.CreateZExt(address, builder_.getInt64Ty()),
                     builder_.getInt64(128));
    llvm::Value* ok = builder_.CreateAnd(inside, aligned);
    llvm::Value* base = builder_.CreatePtrToInt(element_pointer(tile, builder_.getInt64(0)), builder_.getInt32Ty());
    llvm::Value* start = builder_.CreateSelect(inside, address, base);
    address = builder_.CreateSelect(ok, address, builder_.CreateAnd(start, builder_.getInt32(~uint32_t{127})));
    redirect = builder_.CreateNot(ok);
  }
  if (!coordinates.empty() && guarded(e, tile_part)) {
    const uint32_t bytes = element_bytes(tile.type);
    llvm::Value* x = coordinates[0];
    llvm::Value* offset = builder_.CreateMul(x, builder_.getInt32(bytes));
    llvm::Value* ok = builder_.CreateICmpEQ(builder_.CreateAnd(offset, builder_.getInt32(15)), builder_.getInt32(0));
    record_violation(ok, site_of(e, tile_part), contract::Violation::tile_coordinate,
                     builder_.CreateSExt(x, builder_.getInt64Ty()), builder_.getInt64(bytes));
    redirect = builder_.CreateOr(redirect, builder_.CreateNot(ok));
  }
  if (!coordinates.empty())
    if (auto* folded = llvm::dyn_cast<llvm::ConstantInt>(redirect); !folded || !folded->isZero())
      coordinates[0] = builder_.CreateSelect(redirect, builder_.getInt32(static_cast<uint32_t>(-(1 << 30))), coordinates[0]);
}

}  // namespace ptxgate::codegen::lowering
