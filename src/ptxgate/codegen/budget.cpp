// The compile budget: instruction counts after each stage, and the unrolled size estimated before optimisation.
#include "ptxgate/codegen/internal/budget.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/InstrTypes.h>
#include <llvm/IR/Metadata.h>

namespace ptxgate::codegen {
namespace {

constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();

uint64_t add(uint64_t a, uint64_t b) { return a > kSaturated - b ? kSaturated : a + b; }
uint64_t multiply(uint64_t a, uint64_t b) { return b != 0 && a > kSaturated / b ? kSaturated : a * b; }

diag::Diagnostics over_budget(std::string message) {
  diag::Diagnostics d;
  d.add(diag::Code::compile_budget_exceeded, std::move(message), {},
        "make the kernel smaller (fewer statements, math calls or constant-trip loops to unroll), or raise the "
        "budget: ptxgate emit --instruction-budget N, CodegenOptions::instruction_budget (0: no limit; compile time "
        "grows about linearly with it)");
  return d;
}

/// How many copies of its body unrolling `loop` makes: a complete unroll, its trip count (the
/// lowering's kTripCountProperty; without one the unroller cannot unroll it completely); unroll(N),
/// N (at most the trip count); otherwise 1 (the optimiser's own unrolling stays below its thresholds).
uint64_t unroll_factor(const llvm::Loop& loop) {
  const llvm::MDNode* id = loop.getLoopID();
  if (id == nullptr) return 1;
  bool complete = false;
  uint64_t count = 0, trips = 0;
  for (unsigned i = 1; i < id->getNumOperands(); ++i) {
    const auto* property = llvm::dyn_cast<llvm::MDNode>(id->getOperand(i));
    if (property == nullptr || property->getNumOperands() == 0) continue;
    const auto* name = llvm::dyn_cast<llvm::MDString>(property->getOperand(0));
    if (name == nullptr) continue;
    auto number = [&]() -> uint64_t {
      if (property->getNumOperands() != 2) return 0;
      const auto* value = llvm::mdconst::dyn_extract<llvm::ConstantInt>(property->getOperand(1));
      return value != nullptr ? value->getLimitedValue() : 0;
    };
    if (name->getString() == "llvm.loop.unroll.full") complete = true;
    else if (name->getString() == "llvm.loop.unroll.count") count = number();
    else if (std::string_view(name->getString()) == kTripCountProperty) trips = std::max<uint64_t>(1, number());
  }
  if (complete) return std::max<uint64_t>(1, trips);
  if (count > 1) return trips != 0 ? std::min(count, trips) : count;
  return 1;
}

/// One function's own weighted size and the defined functions it calls, each with the number of
/// copies of its call site.
struct Summary {
  uint64_t own = 0;
  std::vector<std::pair<const llvm::Function*, uint64_t>> calls;
};

Summary summarise(const llvm::Function& function) {
  Summary s;
  auto& f = const_cast<llvm::Function&>(function);  // the analyses take a non-const function; nothing changes
  llvm::DominatorTree dominators(f);
  llvm::LoopInfo loops(dominators);
  std::unordered_map<const llvm::Loop*, uint64_t> copies;  // of a loop's body: its factor times its parents'
  auto copies_of = [&](const llvm::Loop* loop) {
    std::vector<const llvm::Loop*> chain;
    for (const llvm::Loop* l = loop; l != nullptr && !copies.contains(l); l = l->getParentLoop()) chain.push_back(l);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const llvm::Loop* parent = (*it)->getParentLoop();
      copies[*it] = multiply(parent != nullptr ? copies.at(parent) : 1, unroll_factor(**it));
    }
    return copies.at(loop);
  };
  for (const llvm::BasicBlock& block : f) {
    const llvm::Loop* loop = loops.getLoopFor(&block);
    const uint64_t n = loop != nullptr ? copies_of(loop) : 1;
    for (const llvm::Instruction& instruction : block) {
      s.own = add(s.own, n);
      if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction))
        if (const llvm::Function* callee = call->getCalledFunction(); callee != nullptr && !callee->isDeclaration())
          s.calls.emplace_back(callee, n);
    }
  }
  return s;
}

}  // namespace

std::expected<void, diag::Diagnostics> check_instruction_budget(const llvm::Module& module, uint64_t budget,
                                                                std::string_view stage) {
  if (budget == 0) return {};
  uint64_t total = 0, largest = 0;
  std::string_view largest_name;
  for (const llvm::Function& f : module) {
    uint64_t count = f.getInstructionCount();
    total += count;
    if (count > largest) {
      largest = count;
      largest_name = f.getName();
    }
  }
  if (total <= budget) return {};
  return std::unexpected(over_budget(fmt::format(
      "the module has {} LLVM instructions {} ({} in '{}'), more than the compile budget of {}", total, stage, largest,
      largest_name, budget)));
}

SizeEstimate estimate_sizes(const llvm::Module& module) {
  enum class State : uint8_t { active, done };
  std::unordered_map<const llvm::Function*, Summary> summaries;
  std::unordered_map<const llvm::Function*, State> state;
  std::unordered_map<const llvm::Function*, uint64_t> size;
  SizeEstimate out;
  // Post-order over the call graph with an explicit stack. A call back into a function still
  // being summed (recursion, which the verifier rejects) counts as the call alone.
  auto size_of = [&](const llvm::Function& root) {
    std::vector<std::pair<const llvm::Function*, size_t>> stack;  // function, its next call to visit
    auto enter = [&](const llvm::Function* f) {
      state.emplace(f, State::active);
      summaries.emplace(f, summarise(*f));
      stack.emplace_back(f, 0);
    };
    if (!state.contains(&root)) enter(&root);
    while (!stack.empty()) {
      const llvm::Function* f = stack.back().first;
      const Summary& s = summaries.at(f);
      if (size_t next = stack.back().second; next < s.calls.size()) {
        ++stack.back().second;
        if (const llvm::Function* callee = s.calls[next].first; !state.contains(callee)) enter(callee);
        continue;
      }
      uint64_t total = s.own;
      for (const auto& [callee, n] : s.calls)
        if (state.at(callee) == State::done) total = add(total, multiply(n, size.at(callee)));
      size[f] = total;
      state[f] = State::done;
      out.inlining_work = add(out.inlining_work, total);
      stack.pop_back();
    }
    return size.at(&root);
  };
  for (const llvm::Function& f : module) {
    if (f.isDeclaration() || f.getCallingConv() != llvm::CallingConv::PTX_Kernel) continue;
    const uint64_t n = size_of(f);
    out.kernels = add(out.kernels, n);
    if (n >= out.largest) {
      out.largest = n;
      out.largest_kernel = f.getName().str();
    }
  }
  return out;
}

std::expected<void, diag::Diagnostics> check_estimated_budget(const llvm::Module& module, uint64_t budget) {
  if (budget == 0) return {};
  const SizeEstimate e = estimate_sizes(module);
  auto shown = [](uint64_t n) { return n == kSaturated ? std::string("more than 2^64") : std::to_string(n); };
  if (e.kernels > budget)
    return std::unexpected(over_budget(fmt::format(
        "the module would have about {} LLVM instructions after inlining and unrolling ({} in '{}'; estimated before "
        "optimising, each loop unrolled completely multiplies its body by its trip count), more than the compile "
        "budget of {}",
        shown(e.kernels), shown(e.largest), e.largest_kernel, budget)));
  if (e.inlining_work > multiply(budget, kInliningWorkPerBudget))
    return std::unexpected(over_budget(fmt::format(
        "inlining the module's functions would copy about {} LLVM instructions (each function is built with its "
        "callees inlined, so a chain of n calls copies about n^2 / 2 bodies), more than {} times the compile budget "
        "of {}",
        shown(e.inlining_work), kInliningWorkPerBudget, budget)));
  return {};
}

}  // namespace ptxgate::codegen
