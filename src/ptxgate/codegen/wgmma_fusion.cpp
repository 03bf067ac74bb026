// After the kernel pipeline: consecutive wgmma statements on one accumulator become one inline-PTX statement.
#include "ptxgate/codegen/internal/nvptx.hpp"

#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <llvm/ADT/STLExtras.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

namespace ptxgate::codegen {
namespace {

/// A wgmma statement as the lowering emits it (lowering::KernelLowering::wgmma): an inline-PTX call
/// returning the N accumulator elements as a struct, whose operands are the N elements it reads
/// (tied to its outputs: constraints "0".."N-1"; none when it does not accumulate), then operands of
/// its own (descriptors, the accumulate flag), and a memory clobber.
struct Wgmma {
  llvm::CallInst* call = nullptr;
  llvm::InlineAsm* assembly = nullptr;
  unsigned outputs = 0;  ///< N
  unsigned tied = 0;     ///< N or 0
  std::vector<std::string> own_constraints;

  unsigned own_operands() const { return call->arg_size() - tied; }
};

std::vector<std::string> split_constraints(std::string_view constraints) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= constraints.size()) {
    const size_t comma = constraints.find(',', start);
    const size_t end = comma == std::string_view::npos ? constraints.size() : comma;
    parts.emplace_back(constraints.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::optional<Wgmma> as_wgmma(llvm::Instruction& instruction) {
  auto* call = llvm::dyn_cast<llvm::CallInst>(&instruction);
  auto* assembly = call ? llvm::dyn_cast<llvm::InlineAsm>(call->getCalledOperand()) : nullptr;
  if (!assembly || !assembly->hasSideEffects() || assembly->getAsmString().find("wgmma.mma_async") == std::string::npos)
    return std::nullopt;
  auto* result = llvm::dyn_cast<llvm::StructType>(call->getType());
  if (!result) return std::nullopt;
  Wgmma w{call, assembly, result->getNumElements(), 0, {}};
  const std::vector<std::string> parts = split_constraints(assembly->getConstraintString());
  if (parts.size() < w.outputs + 1 || parts.back() != "~{memory}") return std::nullopt;
  for (unsigned i = 0; i < w.outputs; ++i)
    if (parts[i] != "=f") return std::nullopt;
  // Tied inputs: "0", "1", ... in order, right after the outputs.
  while (w.outputs + w.tied < parts.size() - 1 && parts[w.outputs + w.tied] == std::to_string(w.tied)) ++w.tied;
  if (w.tied != 0 && w.tied != w.outputs) return std::nullopt;
  w.own_constraints.assign(parts.begin() + w.outputs + w.tied, parts.end() - 1);
  if (w.own_constraints.size() != w.own_operands()) return std::nullopt;
  return w;
}

/// Whether `next` reads exactly `first`'s results as its accumulator (element i from extractvalue i,
/// used by nothing else), in the same block with only computation (no memory, no side effects) between.
bool chained(const Wgmma& first, const Wgmma& next) {
  if (next.tied != next.outputs || first.outputs != next.outputs || first.call->getParent() != next.call->getParent() ||
      first.call->getType() != next.call->getType() || first.call->isConvergent() != next.call->isConvergent())
    return false;
  unsigned extracts = 0;
  for (const llvm::User* user : first.call->users()) {
    const auto* extract = llvm::dyn_cast<llvm::ExtractValueInst>(user);
    if (!extract || extract->getNumIndices() != 1 || !extract->hasOneUse()) return false;
    const unsigned i = extract->getIndices()[0];
    if (i >= next.tied || next.call->getArgOperand(i) != extract) return false;
    ++extracts;
  }
  if (extracts != next.outputs) return false;
  for (auto it = std::next(first.call->getIterator()); &*it != next.call; ++it)
    if (it->mayHaveSideEffects() || it->mayReadOrWriteMemory()) return false;
  return true;
}

/// `text` with every operand reference $k at or past `from` moved by `shift`.
std::string renumbered(std::string_view text, unsigned from, int shift) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] != '$' || i + 1 >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i + 1]))) continue;
    size_t end = i + 1;
    unsigned k = 0;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) k = k * 10 + (text[end++] - '0');
    out += std::to_string(k >= from ? k + shift : k);
    i = end - 1;
  }
  return out;
}

/// One statement that runs `first`'s wgmma and then `next`'s, at `next`'s place: `first`'s tied and
/// own operands, then `next`'s own operands; `next`'s text renumbered to them.
void fuse(const Wgmma& first, const Wgmma& next) {
  std::vector<llvm::Value*> args(first.call->arg_begin(), first.call->arg_end());
  for (unsigned i = next.tied; i < next.call->arg_size(); ++i) args.push_back(next.call->getArgOperand(i));
  std::string constraints;
  for (const auto& part : split_constraints(first.assembly->getConstraintString()))
    if (part != "~{memory}") constraints += (constraints.empty() ? "" : ",") + part;
  for (const auto& part : next.own_constraints) constraints += "," + part;
  constraints += ",~{memory}";
  // next's own operand j was $(outputs + tied + j); it is now $(outputs + first's operands + j).
  const int shift = static_cast<int>(first.call->arg_size()) - static_cast<int>(next.tied);
  const std::string text =
      first.assembly->getAsmString() + "\n\t" + renumbered(next.assembly->getAsmString(), next.outputs + next.tied, shift);
  std::vector<llvm::Type*> types;
  for (llvm::Value* a : args) types.push_back(a->getType());
  auto* type = llvm::FunctionType::get(next.call->getType(), types, false);
  auto* fused = llvm::CallInst::Create(type, llvm::InlineAsm::get(type, text, constraints, /*hasSideEffects=*/true), args,
                                       "", next.call->getIterator());
  fused->setAttributes(next.call->getAttributes());
  fused->takeName(next.call);
  next.call->replaceAllUsesWith(fused);
  next.call->eraseFromParent();
  for (llvm::User* user : llvm::make_early_inc_range(first.call->users())) llvm::cast<llvm::Instruction>(user)->eraseFromParent();
  first.call->eraseFromParent();
}

}  // namespace

void fuse_wgmma_chains(llvm::Module& module) {
  for (llvm::Function& f : module)
    for (llvm::BasicBlock& block : f) {
      std::optional<Wgmma> previous;
      for (llvm::Instruction& instruction : llvm::make_early_inc_range(block)) {
        std::optional<Wgmma> current = as_wgmma(instruction);
        if (!current) continue;
        if (previous && chained(*previous, *current)) {
          llvm::CallInst* at = current->call;
          llvm::Instruction* after = at->getNextNode();
          fuse(*previous, *current);
          current = as_wgmma(*after->getPrevNode());
        }
        previous = current;
      }
    }
}

}  // namespace ptxgate::codegen
