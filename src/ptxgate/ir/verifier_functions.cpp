// Device functions at module level: the return rule, the call graph (recursion, transitive uses).
#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "ptxgate/ir/internal/verifier_internal.hpp"

namespace ptxgate::ir::verifier_detail {
namespace {

/// The most functions a recursion diagnostic names.
constexpr size_t kShownCycle = 8;

template <typename Visit>
void for_each_call(const Expr& e, const Visit& visit) {
  if (e.kind == ExprKind::call) visit(e);
  for (const auto& operand : e.operands)
    if (operand) for_each_call(*operand, visit);
}

/// Every call expression of `body`, in source order.
template <typename Visit>
void for_each_call(const std::vector<StmtPtr>& body, const Visit& visit) {
  for (const auto& s : body) {
    if (!s) continue;
    for (const Expr* e : {s->target.get(), s->value.get(), s->lo.get(), s->hi.get(), s->step.get()})
      if (e) for_each_call(*e, visit);
    for_each_call(s->body, visit);
    for_each_call(s->else_body, visit);
  }
}

}  // namespace

bool always_returns(const std::vector<StmtPtr>& body) {
  for (const auto& s : body) {
    if (!s) continue;
    switch (s->kind) {
      case StmtKind::return_: return true;
      case StmtKind::block:
        if (always_returns(s->body)) return true;
        break;
      case StmtKind::if_:
        if (s->has_else && always_returns(s->body) && always_returns(s->else_body)) return true;
        break;
      default: break;
    }
  }
  return false;
}

void propagate_vector_alignment(Routine& routine) {
  routine.vector_alignment.resize(routine.params.size(), 0);
  for_each_call(routine.body, [&](const Expr& e) {
    if (!e.function) return;
    const Function& callee = *e.function;
    for (size_t i = 0; i < callee.params.size() && i < e.operands.size() && i < callee.vector_alignment.size(); ++i) {
      const Expr* arg = e.operands[i].get();
      if (!callee.params[i].is_buffer || !arg || !arg->symbol || arg->symbol->kind != SymbolKind::buffer_param ||
          arg->symbol->param_index >= routine.vector_alignment.size())
        continue;
      uint32_t& alignment = routine.vector_alignment[arg->symbol->param_index];
      alignment = std::max(alignment, callee.vector_alignment[i]);
    }
  });
}

std::vector<Function*> check_call_graph(Module& module, Reporter& reporter, FunctionFactsTable& facts) {
  const size_t n = module.functions.size();
  std::unordered_map<const Function*, size_t> index;
  for (size_t i = 0; i < n; ++i) index.emplace(&module.functions[i], i);

  // Each function's calls of device functions, and its own first synchronising operations.
  std::vector<std::vector<std::pair<size_t, const Expr*>>> calls(n);
  for (size_t i = 0; i < n; ++i) {
    Function& f = module.functions[i];
    FunctionFacts& own = facts[&f];
    for_each_call(f.body, [&](const Expr& e) {
      if (e.function) {
        if (auto callee = index.find(e.function); callee != index.end()) calls[i].emplace_back(callee->second, &e);
        return;
      }
      if (!e.intrinsic) return;
      ReachedOperation* slot = *e.intrinsic == Intrinsic::barrier     ? &own.barrier
                               : *e.intrinsic == Intrinsic::grid_sync ? &own.grid_sync
                               : is_warp_collective(*e.intrinsic)     ? &own.warp_operation
                                                                      : nullptr;
      if (slot && !slot->operation) *slot = ReachedOperation{&e, &f};
    });
  }

  // Depth-first over the call graph in source order, without recursion on the host stack:
  // a call of a function still on the path closes a cycle (reported there, once per call).
  enum class State : uint8_t { unvisited, on_path, done };
  std::vector<State> state(n, State::unvisited);
  std::vector<Function*> order;
  order.reserve(n);
  struct Frame {
    size_t node;
    size_t next_call = 0;
  };
  std::vector<Frame> path;
  for (size_t root = 0; root < n; ++root) {
    if (state[root] != State::unvisited) continue;
    state[root] = State::on_path;
    path.push_back({root});
    while (!path.empty()) {
      Frame& top = path.back();
      if (top.next_call == calls[top.node].size()) {
        state[top.node] = State::done;
        order.push_back(&module.functions[top.node]);
        path.pop_back();
        continue;
      }
      auto [callee, call] = calls[top.node][top.next_call++];
      if (state[callee] == State::unvisited) {
        state[callee] = State::on_path;
        path.push_back({callee});
        continue;
      }
      if (state[callee] != State::on_path) continue;
      std::vector<size_t> members;
      for (const Frame& frame : path)
        if (!members.empty() || frame.node == callee) members.push_back(frame.node);
      members.push_back(callee);
      std::string cycle;
      for (size_t m = 0; m < members.size(); ++m) {
        // A long cycle shows its first and last functions.
        if (members.size() > kShownCycle && m == kShownCycle / 2) {
          cycle += fmt::format("... ({} more) -> ", members.size() - kShownCycle);
          m = members.size() - kShownCycle / 2;
        }
        cycle += fmt::format("'{}'{}", module.functions[members[m]].name, m + 1 < members.size() ? " -> " : "");
      }
      const std::string& caller = module.functions[top.node].name;
      reporter.report(diag::Code::recursive_function, call->range,
                      callee == top.node
                          ? fmt::format("function '{}' calls itself; device functions cannot be recursive", caller)
                          : fmt::format("recursive call: {}; device functions cannot call themselves, directly or "
                                        "through other functions",
                                        cycle),
                      "rewrite the recursion as a loop (with a local array or buffer as the stack if one is needed)");
    }
  }

  // Callee first: each function's uses include its callees' (a cycle was reported above).
  for (Function* f : order) {
    FunctionFacts& own = facts[f];
    f->stack_local_bytes = f->local_array_bytes;
    for (const auto& [callee_index, call] : calls[index.at(f)]) {
      const Function& callee = module.functions[callee_index];
      const FunctionFacts& theirs = facts[&callee];
      uint64_t through = 0;  // saturating: the kernel's check reports what is over the limit
      if (__builtin_add_overflow(f->local_array_bytes, callee.stack_local_bytes, &through)) through = UINT64_MAX;
      f->stack_local_bytes = std::max(f->stack_local_bytes, through);
      f->uses_barrier = f->uses_barrier || callee.uses_barrier;
      f->uses_grid_sync = f->uses_grid_sync || callee.uses_grid_sync;
      f->uses_warp_operations = f->uses_warp_operations || callee.uses_warp_operations;
      f->target_requirement.raise(callee.target_requirement);
      if (!own.barrier.operation) own.barrier = theirs.barrier;
      if (!own.grid_sync.operation) own.grid_sync = theirs.grid_sync;
      if (!own.warp_operation.operation) own.warp_operation = theirs.warp_operation;
    }
  }
  return order;
}

}  // namespace ptxgate::ir::verifier_detail
