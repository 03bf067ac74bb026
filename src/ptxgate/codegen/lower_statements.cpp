// IR -> LLVM IR: statements, loops (unroll metadata), shared and local arrays.
#include "ptxgate/codegen/internal/kernel_lowering.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Metadata.h>

#include "ptxgate/codegen/internal/budget.hpp"

namespace ptxgate::codegen::lowering {
namespace {

/// The most iterations of a register-tile loop lowered unrolled, and of statements in all its copies
/// (nested tile loops counted unrolled): LLVM's full unroller unrolls such loops too (their local
/// array's accesses fold away), so lowering them unrolled changes which pass unrolls, not the code.
constexpr uint64_t kMaxTileTrips = 16;
constexpr uint64_t kMaxTileStatements = 256;

/// Whether `e` reads the symbol `var`.
bool reads(const ir::Expr& e, const ir::Symbol* var) {
  if (e.kind == ir::ExprKind::name && e.symbol == var) return true;
  for (const auto& operand : e.operands)
    if (operand && reads(*operand, var)) return true;
  return false;
}

/// Whether `e` indexes a local array with an index that reads `var`.
bool indexes_local_array_with(const ir::Expr& e, const ir::Symbol* var) {
  if (e.kind == ir::ExprKind::index && e.symbol && e.symbol->kind == ir::SymbolKind::local_array &&
      !e.operands.empty() && e.operands[0] && reads(*e.operands[0], var))
    return true;
  for (const auto& operand : e.operands)
    if (operand && indexes_local_array_with(*operand, var)) return true;
  return false;
}

/// A loop body seen for register_tile_trips: its statements (nested constant loops counted by their
/// iterations), whether it indexes a local array with `var`, and whether anything in it rules the
/// copying out (a jump, a loop of unknown length, a declaration of shared or local memory).
struct TileScan {
  const ir::Symbol* var = nullptr;
  uint64_t statements = 0;
  bool indexes_with_var = false;
  bool copyable = true;

  void body(const std::vector<ir::StmtPtr>& stmts, uint64_t copies) {
    for (const auto& stmt : stmts) {
      if (!stmt || !copyable) continue;
      statements += copies;
      switch (stmt->kind) {
        case ir::StmtKind::break_:
        case ir::StmtKind::continue_:
        case ir::StmtKind::return_:
        case ir::StmtKind::while_:
        case ir::StmtKind::shared_decl:
        case ir::StmtKind::local_array_decl: copyable = false; continue;
        default: break;
      }
      for (const ir::Expr* e : {stmt->target.get(), stmt->value.get(), stmt->lo.get(), stmt->hi.get(), stmt->step.get()})
        if (e && indexes_local_array_with(*e, var)) indexes_with_var = true;
      uint64_t inner = copies;
      if (stmt->kind == ir::StmtKind::for_) {
        // A nested loop's iterations, when its bounds are literals (else it stays a loop, counted once).
        const ir::Expr* lo = stmt->lo.get();
        const ir::Expr* hi = stmt->hi.get();
        if (lo && hi && lo->kind == ir::ExprKind::int_literal && hi->kind == ir::ExprKind::int_literal &&
            !stmt->step && hi->int_value > lo->int_value)
          inner = copies * std::min<uint64_t>(hi->int_value - lo->int_value, kMaxTileStatements + 1);
      }
      body(stmt->body, inner);
      body(stmt->else_body, copies);
      statements = std::min(statements, kMaxTileStatements + 1);
    }
  }
};

}  // namespace

void KernelLowering::statements(const std::vector<ir::StmtPtr>& body) {
  for (const auto& s : body) statement(*s);
}

void KernelLowering::statement(const ir::Stmt& s) {
  switch (s.kind) {
    case ir::StmtKind::let_decl: {
      const ir::Symbol& symbol = declared_symbol(s);
      llvm::Value* value = convert(expr(*s.value), s.value->type, symbol.type);
      value->setName(s.name);
      bindings_[&symbol] = Binding{Binding::Kind::value, value, symbol.type, nullptr, -1};
      return;
    }
    case ir::StmtKind::var_decl: {
      const ir::Symbol& symbol = declared_symbol(s);
      llvm::Value* initial = s.value ? convert(expr(*s.value), s.value->type, symbol.type)
                                     : llvm::Constant::getNullValue(value_type(context_, symbol.type));
      llvm::AllocaInst* slot = entry_slot(symbol.type, s.name);
      builder_.CreateStore(initial, slot);
      bindings_[&symbol] = Binding{Binding::Kind::slot, slot, symbol.type, nullptr, -1};
      return;
    }
    case ir::StmtKind::assign: return assignment(s);
    case ir::StmtKind::if_: return if_statement(s);
    case ir::StmtKind::while_: return while_statement(s);
    case ir::StmtKind::for_: return for_statement(s);
    case ir::StmtKind::break_:
    case ir::StmtKind::continue_: {
      if (loops_.empty()) invariant_failed("break or continue outside a loop");
      builder_.CreateBr(s.kind == ir::StmtKind::break_ ? loops_.back().break_target : loops_.back().continue_target);
      continue_in_dead_block();
      return;
    }
    case ir::StmtKind::return_:
      if (s.value) {
        if (!as_function_ || as_function_->result == ir::Type::void_)
          invariant_failed(fmt::format("'return' with a value in {}", kernel_.name));
        llvm::Value* result = convert(expr(*s.value), s.value->type, as_function_->result);
        builder_.CreateRet(result);
      } else {
        return_from_kernel();
      }
      continue_in_dead_block();
      return;
    case ir::StmtKind::expr:
      if (s.value) expr(*s.value);
      return;
    case ir::StmtKind::block: return statements(s.body);
    case ir::StmtKind::shared_decl: return shared_array(s);
    case ir::StmtKind::local_array_decl: return local_array(s);
    case ir::StmtKind::const_decl: invariant_failed(fmt::format("constant '{}' declared inside a kernel", s.name));
  }
}

void KernelLowering::assignment(const ir::Stmt& s) {
  const ir::Expr& target = *s.target;
  if (target.kind == ir::ExprKind::index && target.symbol && ir::is_vector(target.symbol->type)) {
    const Binding& variable = binding_of(target);  // v[k] = x: lane k of a vector var
    if (variable.kind != Binding::Kind::slot) invariant_failed(fmt::format("lane assignment to '{}'", target.name));
    llvm::Value* index = lane_index(*target.operands.at(0), variable.type);
    llvm::Value* lane = convert(expr(*s.value), s.value->type, ir::vector_element(variable.type));
    llvm::Value* old = builder_.CreateLoad(value_type(context_, variable.type), variable.value, target.name);
    builder_.CreateStore(builder_.CreateInsertElement(old, lane, index), variable.value);
    return;
  }
  if (target.kind == ir::ExprKind::index) {
    const Binding& array = binding_of(target);
    // The address first, then the value: the unchecked code's order (its PTX stays the same).
    llvm::Value* i = index64(*target.operands.at(0));
    llvm::Value* address = element_pointer(array, i);
    llvm::Value* value = to_memory(convert(expr(*s.value), s.value->type, array.type), array.type);
    checked_store(guarded(target), site_of(target), array, i, element_bytes(array.type), address,
                  [&](llvm::Value* at) { builder_.CreateStore(value, at); });
    if (array.param_index >= 0) buffer_written_[array.param_index] = true;
    return;
  }
  const Binding& variable = binding_of(target);
  if (variable.kind != Binding::Kind::slot) invariant_failed(fmt::format("assignment to '{}'", target.name));
  builder_.CreateStore(convert(expr(*s.value), s.value->type, variable.type), variable.value);
}

void KernelLowering::if_statement(const ir::Stmt& s) {
  llvm::Value* condition = expr(*s.value);
  auto* then_block = new_block("if.then");
  auto* merge = new_block("if.end");
  auto* else_block = s.has_else ? new_block("if.else") : merge;
  builder_.CreateCondBr(condition, then_block, else_block);
  builder_.SetInsertPoint(then_block);
  statements(s.body);
  branch_to(merge);
  if (s.has_else) {
    builder_.SetInsertPoint(else_block);
    statements(s.else_body);
    branch_to(merge);
  }
  merge->moveAfter(builder_.GetInsertBlock());
  builder_.SetInsertPoint(merge);
}

void KernelLowering::while_statement(const ir::Stmt& s) {
  auto* header = new_block("while.cond");
  auto* body = new_block("while.body");
  auto* exit = new_block("while.end");
  builder_.CreateBr(header);
  builder_.SetInsertPoint(header);
  builder_.CreateCondBr(expr(*s.value), body, exit);
  builder_.SetInsertPoint(body);
  loops_.push_back({header, exit});
  statements(s.body);
  loops_.pop_back();
  branch_to(header);
  exit->moveAfter(builder_.GetInsertBlock());
  builder_.SetInsertPoint(exit);
}

/// The loop metadata of `unroll` (factor 0: llvm.loop.unroll.full) and `unroll(N)`
/// (llvm.loop.unroll.count N; N = 1: llvm.loop.unroll.disable, which NVPTX passes on to ptxas as
/// .pragma "nounroll").
llvm::MDNode* KernelLowering::unroll_metadata(uint32_t factor, std::optional<uint64_t> trips) {
  llvm::Metadata* hint = nullptr;
  if (factor == 0) {
    hint = llvm::MDNode::get(context_, llvm::MDString::get(context_, "llvm.loop.unroll.full"));
  } else if (factor == 1) {
    hint = llvm::MDNode::get(context_, llvm::MDString::get(context_, "llvm.loop.unroll.disable"));
  } else {
    hint = llvm::MDNode::get(context_, {llvm::MDString::get(context_, "llvm.loop.unroll.count"),
                                        llvm::ConstantAsMetadata::get(builder_.getInt32(factor))});
  }
  std::vector<llvm::Metadata*> properties = {nullptr, hint};
  if (trips)  // for the compile budget's estimate before unrolling (internal/budget.hpp)
    properties.push_back(llvm::MDNode::get(
        context_, {llvm::MDString::get(context_, llvm::StringRef(kTripCountProperty.data(), kTripCountProperty.size())),
                   llvm::ConstantAsMetadata::get(builder_.getInt64(*trips))}));
  llvm::MDNode* loop = llvm::MDNode::getDistinct(context_, properties);
  loop->replaceOperandWith(0, loop);
  return loop;
}

/// The iterations of `for v in lo..hi step s` when the bounds and the step are constants.
std::optional<uint64_t> KernelLowering::constant_trip_count(llvm::Value* lo, llvm::Value* hi, llvm::Value* step,
                                                            bool is_signed) {
  auto* l = llvm::dyn_cast<llvm::ConstantInt>(lo);
  auto* h = llvm::dyn_cast<llvm::ConstantInt>(hi);
  auto* s = step != nullptr ? llvm::dyn_cast<llvm::ConstantInt>(step) : nullptr;
  if (l == nullptr || h == nullptr || (step != nullptr && s == nullptr)) return std::nullopt;
  const __int128 first = is_signed ? l->getSExtValue() : static_cast<__int128>(l->getZExtValue());
  const __int128 last = is_signed ? h->getSExtValue() : static_cast<__int128>(h->getZExtValue());
  const __int128 stride = s != nullptr ? static_cast<__int128>(s->getZExtValue()) : 1;  // a step is unsigned
  if (last <= first) return 0;
  if (stride == 0) return 1;  // a step of 0 ends the loop after one iteration
  return static_cast<uint64_t>((last - first + stride - 1) / stride);
}

/// The iterations of a register-tile loop, which is lowered unrolled; nothing for any other loop.
/// A register tile is a local array that a few constant iterations index with the loop variable
/// (sgemm's `acc[8 * i + j]` in `for i in 0..4 { for j in 0..4 { ... } }`): lowered as a loop, its
/// accesses are loads and stores of the array until LLVM's full unroller has copied the body (and
/// any loop around it) and the second SROA splits the array, so every pass before that works on
/// the memory form (docs/benchmarks.md "Compile speed (issue 29)"). Unrolled here, the first SROA
/// makes the array registers. Only where the unroller would unroll it anyway: at most
/// kMaxTileTrips iterations and kMaxTileStatements statements in all, no jump, no loop of run-time
/// length, no shared or local declaration in the body, and no `unroll(N)` asking for another factor.
std::optional<uint64_t> KernelLowering::register_tile_trips(const ir::Stmt& s, llvm::Value* lo, llvm::Value* hi,
                                                            llvm::Value* step, bool is_signed) const {
  if (!unroll_register_tiles_ || (s.unroll && s.unroll_factor != 0)) return std::nullopt;
  const auto trips = constant_trip_count(lo, hi, step, is_signed);
  if (!trips || *trips == 0 || *trips > kMaxTileTrips) return std::nullopt;
  TileScan scan;
  scan.var = s.symbol;
  scan.body(s.body, *trips);
  if (!scan.copyable || !scan.indexes_with_var || scan.statements > kMaxTileStatements) return std::nullopt;
  return trips;
}

/// The body once per iteration, the loop variable a constant in each copy.
void KernelLowering::unrolled_for_statement(const ir::Stmt& s, const ir::Symbol& symbol, llvm::Value* lo,
                                            llvm::Value* step, uint64_t trips) {
  const llvm::APInt first = llvm::cast<llvm::ConstantInt>(lo)->getValue();
  const llvm::APInt stride = step ? llvm::cast<llvm::ConstantInt>(step)->getValue() : llvm::APInt(first.getBitWidth(), 1);
  for (uint64_t k = 0; k < trips; ++k) {
    const llvm::APInt value = first + stride * llvm::APInt(first.getBitWidth(), k);
    bindings_[&symbol] = Binding{Binding::Kind::value, llvm::ConstantInt::get(context_, value), symbol.type, nullptr, -1};
    statements(s.body);
  }
}

/// for v in lo..hi [step s]: bounds evaluated once; the latch never wraps past hi.
void KernelLowering::for_statement(const ir::Stmt& s) {
  const ir::Symbol& symbol = declared_symbol(s);
  const ir::Type t = symbol.type;
  if (!ir::is_integer(t)) invariant_failed(fmt::format("loop variable '{}' is not an integer", s.name));
  const bool is_signed = ir::is_signed(t);
  llvm::Value* lo = convert(expr(*s.lo), s.lo->type, t);
  llvm::Value* hi = convert(expr(*s.hi), s.hi->type, t);
  llvm::Value* step = s.step ? convert(expr(*s.step), s.step->type, t) : nullptr;
  if (const auto trips = register_tile_trips(s, lo, hi, step, is_signed))
    return unrolled_for_statement(s, symbol, lo, step, *trips);
  const auto trips = constant_trip_count(lo, hi, step, is_signed);
  const std::vector<const ir::Symbol*> snapshots = snapshot_accumulators(s, trips);
  llvm::AllocaInst* slot = entry_slot(t, s.name);
  builder_.CreateStore(lo, slot);

  auto* body = new_block("for.body");
  auto* latch = new_block("for.next");
  auto* exit = new_block("for.end");
  builder_.CreateCondBr(is_signed ? builder_.CreateICmpSLT(lo, hi) : builder_.CreateICmpULT(lo, hi), body, exit);

  builder_.SetInsertPoint(body);
  bindings_[&symbol] = Binding{Binding::Kind::slot, slot, t, nullptr, -1};
  loops_.push_back({latch, exit});
  statements(s.body);
  loops_.pop_back();
  branch_to(latch);

  latch->moveAfter(builder_.GetInsertBlock());
  builder_.SetInsertPoint(latch);
  llvm::Value* current = builder_.CreateLoad(slot->getAllocatedType(), slot, s.name);
  llvm::Value* next = nullptr;
  llvm::Value* more = nullptr;
  if (!step) {  // current < hi, so current + 1 cannot wrap
    next = builder_.CreateAdd(current, llvm::ConstantInt::get(current->getType(), 1), s.name + ".next",
                              /*HasNUW=*/!is_signed, /*HasNSW=*/is_signed);
    more = is_signed ? builder_.CreateICmpSLT(next, hi) : builder_.CreateICmpULT(next, hi);
  } else {  // another iteration iff 0 < step < hi - current (as unsigned), which cannot wrap:
            // a step of 0 at run time ends the loop after its first iteration (docs/ir.md)
    llvm::Value* remaining = builder_.CreateSub(hi, current);
    llvm::Value* advances = builder_.CreateICmpNE(step, llvm::ConstantInt::get(step->getType(), 0));
    more = builder_.CreateAnd(advances, builder_.CreateICmpULT(step, remaining));
    next = builder_.CreateAdd(current, step, s.name + ".next");
  }
  builder_.CreateStore(next, slot);
  llvm::BranchInst* back = builder_.CreateCondBr(more, body, exit);
  for (const ir::Symbol* array : snapshots) snapshots_.erase(array);
  if (s.unroll) back->setMetadata(llvm::LLVMContext::MD_loop, unroll_metadata(s.unroll_factor, trips));
  else if (touches_wgmma_accumulator(s.body)) back->setMetadata(llvm::LLVMContext::MD_loop, unroll_metadata(0, trips));
  exit->moveAfter(latch);
  builder_.SetInsertPoint(exit);
}

void KernelLowering::shared_array(const ir::Stmt& s) {
  const ir::Symbol& symbol = declared_symbol(s);
  if (symbol.dynamic) return dynamic_shared_array(s, symbol);
  uint64_t count = symbol.array_size;
  if (count == 0 && s.value && s.value->kind == ir::ExprKind::int_literal) count = s.value->int_value;
  if (count == 0) invariant_failed(fmt::format("shared array '{}' has no size", s.name));
  llvm::Type* element = memory_type(context_, symbol.type);
  auto* array_type = llvm::ArrayType::get(element, count);
  auto* global = new llvm::GlobalVariable(module_, array_type, false, llvm::GlobalValue::InternalLinkage,
                                          llvm::UndefValue::get(array_type), kernel_.name + "_" + s.name, nullptr,
                                          llvm::GlobalValue::NotThreadLocal, kSharedSpace);
  global->setAlignment(llvm::Align(16));
  const uint64_t bytes = count * element_bytes(symbol.type);
  // Uninitialised shared memory holds whatever is there, not LLVM's undef: no optimiser may
  // fold a load of it to an arbitrary value.
  global->setExternallyInitialized(true);
  Binding binding{Binding::Kind::shared, global, symbol.type, array_type, -1, builder_.getInt64(bytes)};
  bindings_[&symbol] = binding;
  arrays_by_name_[s.name] = binding;
}

/// `var NAME: T[N];`: an alloca in the entry block, zeroed where the declaration runs (like
/// `var x: T;`). SROA after full unrolling turns it into registers when every index is a
/// constant by then and removes the zeroing of elements written before they are read; what
/// stays indexed at run time lives in local memory (ptxas reports its stack frame, PG3503).
void KernelLowering::local_array(const ir::Stmt& s) {
  const ir::Symbol& symbol = declared_symbol(s);
  if (symbol.array_size == 0) invariant_failed(fmt::format("local array '{}' has no size", s.name));
  llvm::Type* element = memory_type(context_, symbol.type);
  auto* array_type = llvm::ArrayType::get(element, symbol.array_size);
  llvm::BasicBlock& entry = function_->getEntryBlock();
  llvm::IRBuilder<> at_entry(&entry, entry.getFirstInsertionPt());
  llvm::AllocaInst* array = at_entry.CreateAlloca(array_type, nullptr, s.name);
  // The array's bytes in memory (a bool element takes one byte, not its 4-byte parameter size).
  const uint64_t bytes = symbol.array_size * element_bytes(symbol.type);
  builder_.CreateMemSet(array, builder_.getInt8(0), builder_.getInt64(bytes), array->getAlign());
  bindings_[&symbol] = Binding{Binding::Kind::local, array, symbol.type, array_type, -1, builder_.getInt64(bytes)};
}

/// `shared NAME: T[];`: PTX `.extern .shared .align 16 .b8 NAME[];`, the block's dynamic
/// shared memory (CUDA's `extern __shared__`), sized by the launch.
void KernelLowering::dynamic_shared_array(const ir::Stmt& s, const ir::Symbol& symbol) {
  llvm::Type* element = memory_type(context_, symbol.type);
  auto* array_type = llvm::ArrayType::get(element, 0);
  auto* global = new llvm::GlobalVariable(module_, array_type, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                          kernel_.name + "_" + s.name, nullptr, llvm::GlobalValue::NotThreadLocal,
                                          kSharedSpace);
  global->setAlignment(llvm::Align(16));
  Binding binding{Binding::Kind::shared, global, symbol.type, array_type, -1};
  bindings_[&symbol] = binding;
  arrays_by_name_[s.name] = binding;
}

}  // namespace ptxgate::codegen::lowering
