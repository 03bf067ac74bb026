// IR -> LLVM IR: Hopper operations: mbarrier, TMA, wgmma (LLVM 19 has intrinsics for mbarrier
// init/arrive/inval and setmaxnreg; the rest is inline PTX, each statement `convergent` and clobbering memory).
#include "ptxgate/codegen/internal/kernel_lowering.hpp"
#include "ptxgate/codegen/internal/nvptx.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

namespace ptxgate::codegen::lowering {

// Hopper: a loop that runs wgmma or indexes a wgmma accumulator is fully unrolled when its trip count
// is constant (llvm.loop.unroll.full: the size threshold does not apply), so that every accumulator
// index becomes a constant and SROA keeps the accumulators in registers (a 128-register epilogue is
// past LLVM's threshold; in local memory the wgmma pipeline would stall on every tile).

bool KernelLowering::is_wgmma(const ir::Expr& e) {
  return e.kind == ir::ExprKind::call && e.intrinsic &&
         (*e.intrinsic == ir::Intrinsic::wgmma_bf16 || *e.intrinsic == ir::Intrinsic::wgmma_f16);
}

bool KernelLowering::touches_wgmma_accumulator(const ir::Expr& e) {
  if (is_wgmma(e)) return true;
  if (e.kind == ir::ExprKind::index && e.symbol && wgmma_accumulators().contains(e.symbol)) return true;
  for (const auto& operand : e.operands)
    if (operand && touches_wgmma_accumulator(*operand)) return true;
  return false;
}

bool KernelLowering::touches_wgmma_accumulator(const std::vector<ir::StmtPtr>& body) {
  if (!kernel_.uses_warpgroup_operations) return false;
  for (const auto& stmt : body) {
    if (!stmt) continue;
    for (const ir::Expr* e : {stmt->target.get(), stmt->value.get(), stmt->lo.get(), stmt->hi.get(), stmt->step.get()})
      if (e && touches_wgmma_accumulator(*e)) return true;
    if (touches_wgmma_accumulator(stmt->body) || touches_wgmma_accumulator(stmt->else_body)) return true;
  }
  return false;
}

/// The local arrays some wgmma of this routine accumulates into.
const std::unordered_set<const ir::Symbol*>& KernelLowering::wgmma_accumulators() {
  if (!accumulators_) {
    accumulators_.emplace();
    std::function<void(const ir::Expr&)> expr_walk = [&](const ir::Expr& e) {
      if (is_wgmma(e) && !e.operands.empty() && e.operands[0] && e.operands[0]->symbol)
        accumulators_->insert(e.operands[0]->symbol);
      for (const auto& operand : e.operands)
        if (operand) expr_walk(*operand);
    };
    std::function<void(const std::vector<ir::StmtPtr>&)> walk = [&](const std::vector<ir::StmtPtr>& body) {
      for (const auto& stmt : body) {
        if (!stmt) continue;
        for (const ir::Expr* e : {stmt->target.get(), stmt->value.get(), stmt->lo.get(), stmt->hi.get(), stmt->step.get()})
          if (e) expr_walk(*e);
        walk(stmt->body);
        walk(stmt->else_body);
      }
    };
    walk(kernel_.body);
  }
  return *accumulators_;
}

namespace {

/// Whether every use of the local array `array` in `e` is a read by index (`read` set when there is
/// one); false when the array is used whole (a wgmma's accumulator operand).
bool only_indexed(const ir::Expr& e, const ir::Symbol* array, bool& read) {
  if (e.symbol == array) {
    if (e.kind != ir::ExprKind::index) return false;
    read = true;
  }
  for (const auto& operand : e.operands)
    if (operand && !only_indexed(*operand, array, read)) return false;
  return true;
}

/// Whether `body` only reads `array` by index: no assignment to an element, no whole use, no declaration.
bool only_indexed(const std::vector<ir::StmtPtr>& body, const ir::Symbol* array, bool& read) {
  for (const auto& stmt : body) {
    if (!stmt) continue;
    if (stmt->symbol == array) return false;
    if (const ir::Expr* target = stmt->target.get()) {
      if (target->symbol == array) return false;
      for (const auto& operand : target->operands)
        if (operand && !only_indexed(*operand, array, read)) return false;
    }
    for (const ir::Expr* e : {stmt->value.get(), stmt->lo.get(), stmt->hi.get(), stmt->step.get()})
      if (e && !only_indexed(*e, array, read)) return false;
    if (!only_indexed(stmt->body, array, read) || !only_indexed(stmt->else_body, array, read)) return false;
  }
  return true;
}

}  // namespace

/// At the optimising levels a wgmma moves its accumulator element by element through loads and stores
/// of constant index, which the first SROA promotes to one register per element, unless something
/// indexes the array at run time: the epilogue's `acc[4 * j]` in a loop that LLVM's full unroller
/// copies later. Such a loop that only reads the accumulator reads it from a vector of its elements
/// taken before the loop (an extractelement by the index, a constant once unrolled, which InstCombine
/// then folds to the element): nothing keeps the array in memory, and no pass works on the memory form
/// or on vector copies of the accumulator per wgmma (docs/benchmarks.md "Compile speed (issue 29)").
/// Only for loops of constant length without another unroll factor (LLVM unrolls them fully: no
/// vector is left indexed at run time), and not for reads checked mode guards.
std::vector<const ir::Symbol*> KernelLowering::snapshot_accumulators(const ir::Stmt& s,
                                                                     std::optional<uint64_t> trips) {
  std::vector<const ir::Symbol*> taken;
  if (!unroll_register_tiles_ || !kernel_.uses_warpgroup_operations || !trips || (s.unroll && s.unroll_factor != 0))
    return taken;
  for (const ir::Symbol* array : wgmma_accumulators()) {
    bool read = false;
    if (snapshots_.contains(array) || !only_indexed(s.body, array, read) || !read) continue;
    auto found = bindings_.find(array);
    if (found == bindings_.end() || found->second.kind != Binding::Kind::local) continue;
    const Binding& acc = found->second;
    const auto count = static_cast<unsigned>(llvm::cast<llvm::ArrayType>(acc.array_type)->getNumElements());
    llvm::Type* element = memory_type(context_, acc.type);
    llvm::Value* whole = llvm::PoisonValue::get(llvm::FixedVectorType::get(element, count));
    for (unsigned i = 0; i < count; ++i) {
      llvm::Value* at = builder_.CreateInBoundsGEP(acc.array_type, acc.value, {builder_.getInt64(0), builder_.getInt64(i)});
      whole = builder_.CreateInsertElement(whole, builder_.CreateLoad(element, at), builder_.getInt64(i));
    }
    snapshots_[array] = whole;
    taken.push_back(array);
  }
  return taken;
}

/// A void inline-PTX statement with `args` ("r" 32-bit, "l" 64-bit operands).
void KernelLowering::inline_ptx(const std::string& text, const std::string& constraints, const std::vector<llvm::Value*>& args) {
  std::vector<llvm::Type*> types;
  for (llvm::Value* a : args) types.push_back(a->getType());
  auto* type = llvm::FunctionType::get(builder_.getVoidTy(), types, false);
  std::string all = constraints.empty() ? "~{memory}" : constraints + ",~{memory}";
  llvm::CallInst* call = builder_.CreateCall(llvm::InlineAsm::get(type, text, all, /*hasSideEffects=*/true), args);
  call->addFnAttr(llvm::Attribute::Convergent);
}

/// The 32-bit shared-window address of `array[index]` (a shared array).
llvm::Value* KernelLowering::shared_element(const ir::Expr& array, const ir::Expr& index) {
  const Binding& binding = binding_of(array);
  if (binding.kind != Binding::Kind::shared) invariant_failed(fmt::format("'{}' is not a shared array", array.name));
  return builder_.CreatePtrToInt(element_address(binding, index), builder_.getInt32Ty());
}

/// The value of a verified constant operand (wait_group counts, register counts).
uint64_t KernelLowering::constant_value(const ir::Expr& e) {
  auto* c = llvm::dyn_cast<llvm::ConstantInt>(expr(e));
  if (!c) invariant_failed(fmt::format("operand of '{}' is not a constant", e.name));
  return c->getZExtValue();
}

/// The mbarrier's phase of parity `parity` has completed (one try_wait; the hardware may suspend the
/// thread for a while first).
llvm::Value* KernelLowering::mbarrier_try_wait(llvm::Value* bar, llvm::Value* parity) {
  auto* type = llvm::FunctionType::get(builder_.getInt32Ty(), {builder_.getInt32Ty(), builder_.getInt32Ty()}, false);
  auto* test = llvm::InlineAsm::get(type,
                                    "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; "
                                    "selp.u32 $0, 1, 0, p; }",
                                    "=r,r,r,~{memory}", /*hasSideEffects=*/true);
  llvm::CallInst* done = builder_.CreateCall(test, {bar, parity});
  return builder_.CreateICmpNE(done, builder_.getInt32(0));
}

llvm::Value* KernelLowering::hopper_operation(const ir::Expr& e, ir::Intrinsic which) {
  using I = ir::Intrinsic;
  namespace L = llvm::Intrinsic;
  auto arg = [&](size_t i) { return expr(*e.operands.at(i)); };
  // The mbarrier named by operands i and i + 1 (the array and the index), as element `index` of
  // `array`; in checked mode an mbarrier outside the array is recorded at site part `part` and the
  // operation skipped (`skipped`: what it gives then).
  // Its address is computed where the operand is, as in unchecked code (whose PTX stays the same).
  struct Barrier {
    const Binding* array;
    llvm::Value* index;
    llvm::Value* pointer;
    llvm::Value* address32;
  };
  auto barrier_at = [&](size_t i) {
    const Binding& array = binding_of(*e.operands.at(i));
    if (array.kind != Binding::Kind::shared) invariant_failed(fmt::format("'{}' is not a shared array", e.operands[i]->name));
    llvm::Value* index = index64(*e.operands.at(i + 1));
    llvm::Value* at = element_pointer(array, index);
    return Barrier{&array, index, at, builder_.CreatePtrToInt(at, builder_.getInt32Ty())};
  };
  auto pointer = [&](const Barrier& b) { return b.pointer; };
  auto address32 = [&](const Barrier& b) { return b.address32; };
  auto on_barrier = [&](const Barrier& b, llvm::Value* skipped, const std::function<llvm::Value*()>& operation) {
    if (!guarded(e)) return operation();
    return guard(index_in_bounds(*b.array, b.index, 8), site_of(e), contract::Violation::out_of_bounds, b.index,
                 array_length(*b.array), operation, skipped);
  };
  switch (which) {
    case I::mbarrier_init: {
      Barrier b = barrier_at(0);
      llvm::Value* count = arg(2);
      on_barrier(b, nullptr, [&]() -> llvm::Value* {
        builder_.CreateIntrinsic(L::nvvm_mbarrier_init_shared, {}, {pointer(b), count});
        return nullptr;
      });
      return nullptr;
    }
    case I::mbarrier_arrive:
    case I::mbarrier_inval: {
      Barrier b = barrier_at(0);
      on_barrier(b, nullptr, [&]() -> llvm::Value* {
        builder_.CreateIntrinsic(which == I::mbarrier_arrive ? L::nvvm_mbarrier_arrive_shared : L::nvvm_mbarrier_inval_shared,
                                 {}, {pointer(b)});
        return nullptr;
      });
      return nullptr;
    }
    case I::mbarrier_arrive_expect_tx: {
      Barrier b = barrier_at(0);
      llvm::Value* bytes = arg(2);
      on_barrier(b, nullptr, [&]() -> llvm::Value* {
        inline_ptx("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r", {address32(b), bytes});
        return nullptr;
      });
      return nullptr;
    }
    case I::mbarrier_try_wait: {
      Barrier b = barrier_at(0);
      llvm::Value* parity = arg(2);
      // An mbarrier outside its array completes at once in checked mode: a wait loop over it ends.
      return on_barrier(b, builder_.getTrue(), [&] { return mbarrier_try_wait(address32(b), parity); });
    }
    case I::mbarrier_wait: {
      Barrier b = barrier_at(0);
      llvm::Value* parity = arg(2);
      on_barrier(b, nullptr, [&]() -> llvm::Value* {
        llvm::Value* bar = address32(b);
        llvm::BasicBlock* loop = new_block("mbarrier.wait");
        llvm::BasicBlock* done = new_block("mbarrier.done");
        builder_.CreateBr(loop);
        builder_.SetInsertPoint(loop);
        builder_.CreateCondBr(mbarrier_try_wait(bar, parity), done, loop);
        builder_.SetInsertPoint(done);
        return nullptr;
      });
      return nullptr;
    }
    case I::fence_proxy_async: inline_ptx("fence.proxy.async.shared::cta;", "", {}); return nullptr;
    case I::tma_load: {
      const Binding& tile = binding_of(*e.operands.at(0));
      llvm::Value* index = index64(*e.operands.at(1));
      llvm::Value* dst = builder_.CreatePtrToInt(element_pointer(tile, index), builder_.getInt32Ty());
      llvm::Value* map = arg(2);
      Barrier b = barrier_at(3);
      std::vector<llvm::Value*> coordinates;
      for (size_t i = 5; i < e.operands.size(); ++i) coordinates.push_back(arg(i));
      checked_tile(e, tile, index, dst, coordinates, /*tile_part=*/2);
      auto copy = [&]() -> llvm::Value* {
        std::vector<llvm::Value*> args{dst, map, address32(b)};
        std::string coords, constraints = "r,l,r";
        for (size_t i = 0; i < coordinates.size(); ++i) {
          coords += fmt::format("{}${}", i > 0 ? ", " : "", args.size());
          args.push_back(coordinates[i]);
          constraints += ",r";
        }
        inline_ptx(fmt::format("cp.async.bulk.tensor.{}d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, "
                               "{{{}}}], [$2];",
                               coordinates.size(), coords),
                   constraints, args);
        return nullptr;
      };
      // The mbarrier is the operation's second site: without it the copy would complete nowhere.
      if (guarded(e, 1))
        guard(index_in_bounds(*b.array, b.index, 8), site_of(e, 1), contract::Violation::out_of_bounds, b.index,
              array_length(*b.array), copy, nullptr);
      else
        copy();
      return nullptr;
    }
    case I::tma_store: {
      llvm::Value* map = arg(0);
      const Binding& tile = binding_of(*e.operands.at(1));
      llvm::Value* index = index64(*e.operands.at(2));
      llvm::Value* src = builder_.CreatePtrToInt(element_pointer(tile, index), builder_.getInt32Ty());
      std::vector<llvm::Value*> coordinates;
      for (size_t i = 3; i < e.operands.size(); ++i) coordinates.push_back(arg(i));
      checked_tile(e, tile, index, src, coordinates, /*tile_part=*/1);
      std::vector<llvm::Value*> args{map, src};
      std::string coords, constraints = "l,r";
      for (size_t i = 0; i < coordinates.size(); ++i) {
        coords += fmt::format("{}${}", i > 0 ? ", " : "", args.size());
        args.push_back(coordinates[i]);
        constraints += ",r";
      }
      inline_ptx(fmt::format("cp.async.bulk.tensor.{}d.global.shared::cta.bulk_group [$0, {{{}}}], [$1];",
                             coordinates.size(), coords),
                 constraints, args);
      return nullptr;
    }
    case I::tma_store_commit: inline_ptx("cp.async.bulk.commit_group;", "", {}); return nullptr;
    case I::tma_store_wait:
      inline_ptx(fmt::format("cp.async.bulk.wait_group.read {};", constant_value(*e.operands[0])), "", {});
      return nullptr;
    case I::shared_address: return shared_element(*e.operands[0], *e.operands[1]);
    case I::wgmma_desc: {
      // K-major, 128-byte swizzle: start address >> 4 (bits 0-13), leading byte offset 16 >> 4 (bits 16-29),
      // stride byte offset 1024 >> 4 (bits 32-45), base offset 0, swizzle mode 1 (bits 62-63).
      llvm::Value* address = builder_.CreateZExt(shared_element(*e.operands[0], *e.operands[1]), builder_.getInt64Ty());
      llvm::Value* start = builder_.CreateLShr(builder_.CreateAnd(address, builder_.getInt64(0x3FFFF)), 4);
      return builder_.CreateOr(start, builder_.getInt64((uint64_t{1} << 16) | (uint64_t{64} << 32) | (uint64_t{1} << 62)),
                               "wgmma_desc");
    }
    case I::wgmma_fence: inline_ptx("wgmma.fence.sync.aligned;", "", {}); return nullptr;
    case I::wgmma_commit: inline_ptx("wgmma.commit_group.sync.aligned;", "", {}); return nullptr;
    case I::wgmma_wait:
      inline_ptx(fmt::format("wgmma.wait_group.sync.aligned {};", constant_value(*e.operands[0])), "", {});
      return nullptr;
    case I::wgmma_bf16:
    case I::wgmma_f16: wgmma(e, which == I::wgmma_bf16 ? "bf16" : "f16"); return nullptr;
    case I::setmaxnreg_inc:
    case I::setmaxnreg_dec: {
      const auto count = static_cast<uint32_t>(constant_value(*e.operands[0]));
      builder_.CreateIntrinsic(which == I::setmaxnreg_inc ? L::nvvm_setmaxnreg_inc_sync_aligned_u32
                                                          : L::nvvm_setmaxnreg_dec_sync_aligned_u32,
                               {}, {builder_.getInt32(count)});
      return nullptr;
    }
    default: break;
  }
  invariant_failed(fmt::format("Hopper operation '{}' has no lowering", ir::intrinsic_name(which)));
}

/// wgmma.mma_async m64nNk16 with f32 accumulators: acc (a local f32 array of N / 2 elements) = A * B (+ acc when
/// `accumulate`). The elements go through the asm as registers; an accumulate flag that is the constant false
/// does not read them, so their zeroing disappears (ptxas serialises wgmmas whose accumulators other
/// instructions write in flight).
void KernelLowering::wgmma(const ir::Expr& e, std::string_view element) {
  const Binding& acc = binding_of(*e.operands[0]);
  if (acc.kind != Binding::Kind::local) invariant_failed("wgmma accumulator is not a local array");
  const auto count = static_cast<unsigned>(llvm::cast<llvm::ArrayType>(acc.array_type)->getNumElements());
  llvm::Value* desc_a = expr(*e.operands[1]);
  llvm::Value* desc_b = expr(*e.operands[2]);
  llvm::Value* accumulate = expr(*e.operands[3]);
  auto* constant = llvm::dyn_cast<llvm::ConstantInt>(accumulate);
  const bool reads = !constant || !constant->isZero();
  // Every element is its own load and store of constant index: at the optimising levels the first SROA
  // makes each a register (snapshot_accumulators keeps the epilogue's run-time indices off the array).
  std::vector<llvm::Value*> elements(count);
  std::vector<llvm::Value*> args;
  std::string constraints, outputs;
  for (unsigned i = 0; i < count; ++i) {
    elements[i] = builder_.CreateInBoundsGEP(acc.array_type, acc.value, {builder_.getInt64(0), builder_.getInt64(i)});
    constraints += i ? ",=f" : "=f";
    outputs += fmt::format("{}${}", i ? ", " : "", i);
  }
  if (reads) {
    for (unsigned i = 0; i < count; ++i) {
      args.push_back(builder_.CreateLoad(builder_.getFloatTy(), elements[i]));
      constraints += fmt::format(",{}", i);
    }
  }
  const size_t first = count + args.size();
  args.push_back(desc_a);
  args.push_back(desc_b);
  args.push_back(builder_.CreateZExt(accumulate, builder_.getInt32Ty()));
  constraints += ",l,l,r,~{memory}";
  const std::string text = fmt::format(
      "{{ .reg .pred p; setp.ne.b32 p, ${}, 0; wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {{{}}}, ${}, ${}, p, "
      "1, 1, 0, 0; }}",
      first + 2, 2 * count, element, element, outputs, first, first + 1);
  std::vector<llvm::Type*> types;
  for (llvm::Value* a : args) types.push_back(a->getType());
  auto* result = llvm::StructType::get(context_, std::vector<llvm::Type*>(count, builder_.getFloatTy()));
  auto* type = llvm::FunctionType::get(result, types, false);
  llvm::CallInst* call = builder_.CreateCall(llvm::InlineAsm::get(type, text, constraints, /*hasSideEffects=*/true), args);
  call->addFnAttr(llvm::Attribute::Convergent);
  for (unsigned i = 0; i < count; ++i) builder_.CreateStore(builder_.CreateExtractValue(call, i), elements[i]);
}

}  // namespace ptxgate::codegen::lowering
