// Divergence analysis: barrier() and grid_sync() must be reached by every thread, so they may not sit
// under control flow that depends on thread-varying values (PG1305, PG1312).
//
// A value is divergent when it depends on thread_id, global_id or block_id, on a load from a buffer
// or shared array, or on an atomic's result. Divergence flows through let/var/loop variables; a var
// assigned under divergent control becomes divergent. Control is divergent inside an if/while/for
// whose condition or bounds are divergent, after a `continue` taken under divergent control (rest of
// the iteration), inside a whole loop with a `break` or `return` taken under divergent control, and
// after a `return` taken under divergent control (rest of the kernel). Loops feed values back to
// their conditions, so the walk repeats until nothing new becomes divergent; a final walk reports.
//
// Warp operations (shuffles, votes, warp reductions; PG1318) need every lane of the warp, so the
// same walk runs a second time at warp scope: there block_id and warp_id are uniform (the same in
// every lane of a warp), and so are the results of ballot/any/all and the warp reductions, while
// lane_id and shuffle results vary by lane. At block scope every warp operation's result, lane_id
// and warp_id are divergent.
//
// Device functions are analysed callee first. Inside a function its scalar parameters count as
// divergent (a caller may pass thread-varying values), so a barrier or warp operation under a
// condition on a parameter is reported in the function itself. A call counts as the barrier,
// grid_sync and warp operations its function reaches (reported at the call, naming the operation
// inside). A call's result is divergent when an argument is, or when the function's result may
// differ between threads even with uniform arguments: a second walk of the function with uniform
// parameters finds whether a returned value depends on a thread-varying source (a load, an atomic,
// thread_id, ...) or a return sits under divergent control.
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ptxgate/ir/internal/verifier_internal.hpp"

namespace ptxgate::ir::verifier_detail {
namespace {

/// Walks to a fixed point are linear each; past this many the analysis assumes every local is divergent.
constexpr int kMaxPasses = 64;

/// Why a value is divergent: `root` is the thread-varying source, `shown` how the expression reaches it.
struct Origin {
  std::string root;
  std::string shown;
};

/// Why control is divergent at some point, as a phrase for the diagnostic.
struct Control {
  std::string reason;
};

/// Divergent exits found while walking statements.
struct Exits {
  std::optional<Control> loop_exit;       ///< break, or return, under divergent control
  std::optional<Control> iteration_exit;  ///< continue under divergent control
  std::optional<Control> kernel_exit;     ///< return under divergent control

  void merge(const Exits& other) {
    if (!loop_exit) loop_exit = other.loop_exit;
    if (!iteration_exit) iteration_exit = other.iteration_exit;
    if (!kernel_exit) kernel_exit = other.kernel_exit;
  }
};

/// Which threads must agree: those of a block (barrier, grid_sync), the lanes of a warp, or (Hopper:
/// wgmma, setmaxnreg) the 128 threads of a warpgroup.
enum class Scope : uint8_t { block, warp, warpgroup };

/// How a routine is walked: whether its scalar parameters count as divergent, and whether the
/// final walk reports (a function's second walk, with uniform parameters, only computes).
struct Walk {
  bool params_vary = false;
  bool report = true;
};

class DivergenceAnalysis {
 public:
  DivergenceAnalysis(const Routine& routine, std::string owner, Reporter& reporter, Scope scope,
                     const FunctionFactsTable& facts, Walk walk)
      : kernel_(routine), owner_(std::move(owner)), reporter_(reporter), scope_(scope), facts_(facts),
        report_(walk.report) {
    if (walk.params_vary)
      for (const Param& p : routine.params)
        if (!p.is_buffer && p.symbol)
          divergent_.emplace(p.symbol, "its caller's argument (which may vary between threads)");
  }

  /// After run(): whether a value returned may be divergent, or a return is taken under divergent control.
  bool result_varies() const { return result_varies_; }

  void run() {
    bool converged = false;
    for (int pass = 0; pass < kMaxPasses && !converged; ++pass) {
      changed_ = false;
      returned_.reset();
      walk_list(kernel_.body, nullptr);
      converged = !changed_;
    }
    if (!converged) {
      for (const auto& symbol : kernel_.symbols)
        if (symbol->kind == SymbolKind::let || symbol->kind == SymbolKind::var ||
            symbol->kind == SymbolKind::loop_var)
          divergent_.emplace(symbol.get(), "a value the analysis could not follow (too many dependencies)");
      everything_exits_ = true;
    }
    reporting_ = report_;
    final_walk_ = true;
    returned_.reset();
    walk_list(kernel_.body, nullptr);
  }

 private:
  void mark(const Symbol* symbol, const std::string& root) {
    if (!symbol) return;
    if (divergent_.emplace(symbol, root).second) changed_ = true;
  }

  std::optional<Origin> origin(const Expr& e) const {
    switch (e.kind) {
      case ExprKind::builtin: {
        const bool varies = e.builtin == Builtin::thread_id || e.builtin == Builtin::global_id ||
                            e.builtin == Builtin::lane_id ||
                            (scope_ == Scope::block && (e.builtin == Builtin::block_id || e.builtin == Builtin::warp_id ||
                                                        e.builtin == Builtin::warpgroup_id)) ||
                            (scope_ == Scope::warpgroup && e.builtin == Builtin::warp_id);
        if (!varies) return std::nullopt;
        std::string text = is_scalar_builtin(e.builtin)
                               ? std::string(builtin_name(e.builtin))
                               : fmt::format("{}.{}", builtin_name(e.builtin), "xyz"[e.component % 3]);
        return Origin{text, text};
      }
      case ExprKind::name: {
        auto found = divergent_.find(e.symbol);
        if (!e.symbol || found == divergent_.end()) return std::nullopt;
        return Origin{found->second, fmt::format("'{}', which depends on {}", e.name, found->second)};
      }
      case ExprKind::index: {
        if (e.symbol && is_vector(e.symbol->type)) {  // a lane of a vector let/var: as the vector and the lane vary
          auto found = divergent_.find(e.symbol);
          if (found != divergent_.end())
            return Origin{found->second, fmt::format("'{}', which depends on {}", e.name, found->second)};
          break;
        }
        std::string text = fmt::format("a load from '{}'", e.name);
        return Origin{text, text};
      }
      case ExprKind::call:
        if (e.function) {
          for (const auto& operand : e.operands)
            if (operand)
              if (auto found = origin(*operand)) return found;
          auto facts = facts_.find(e.function);
          // A function's result that is the same in every thread of a block is the same in a warpgroup.
          if (facts != facts_.end() && !facts->second.result_varies[scope_ == Scope::warp ? 1 : 0]) return std::nullopt;
          std::string text = fmt::format("the result of {}()", e.name);
          return Origin{text, text};
        }
        if (e.intrinsic && (is_atomic(*e.intrinsic) || (is_warp_collective(*e.intrinsic) && lane_varying(*e.intrinsic)))) {
          std::string text = fmt::format("the result of {}", intrinsic_name(*e.intrinsic));
          return Origin{text, text};
        }
        if (e.intrinsic && is_warp_operation(*e.intrinsic)) return std::nullopt;  // the same in every lane
        if (e.intrinsic && *e.intrinsic == Intrinsic::mbarrier_try_wait) {  // each thread's own test
          std::string text = "the result of mbarrier_try_wait";
          return Origin{text, text};
        }
        if (e.intrinsic && is_vector_access(*e.intrinsic)) {
          std::string text = fmt::format("a load from '{}'", e.operands.empty() || !e.operands[0] ? std::string()
                                                                                                 : e.operands[0]->name);
          return Origin{text, text};
        }
        break;
      default: break;
    }
    for (const auto& operand : e.operands)
      if (operand)
        if (auto found = origin(*operand)) return found;
    return std::nullopt;
  }

  /// Whether a warp operation's result differs between the threads of this scope: at block
  /// scope every one (warps differ), at warp scope the shuffles and the matrix fragments (mma,
  /// ldmatrix: each lane holds its own elements).
  bool lane_varying(Intrinsic fn) const {
    return scope_ != Scope::warp || fn == Intrinsic::shfl_xor || fn == Intrinsic::shfl_down ||
           fn == Intrinsic::shfl_up || fn == Intrinsic::shfl_idx || is_mma(fn) || is_ldmatrix(fn);
  }

  /// Reports barrier()/grid_sync() calls (block scope) or warp operations (warp scope) inside
  /// `e` when control is divergent.
  /// "'f' reaches barrier() at line 12 in 'g'", for a call's diagnostic.
  std::string reached(const Expr& call, const ReachedOperation& op) const {
    std::string where = op.in && op.in != call.function ? fmt::format(" in '{}'", op.in->name) : "";
    return fmt::format("'{}' reaches {}() {}{}", call.name,
                       op.operation && op.operation->intrinsic ? intrinsic_name(*op.operation->intrinsic) : "",
                       reporter_.line_of(op.operation ? op.operation->range : SourceRange{}), where);
  }

  /// A call of a device function under divergent control that reaches a synchronising operation.
  void check_call(const Expr& e, const Control& control) {
    auto found = facts_.find(e.function);
    if (found == facts_.end()) return;
    const FunctionFacts& f = found->second;
    if (scope_ == Scope::warp) {
      if (f.warp_operation.operation)
        reporter_.report(diag::Code::divergent_warp_operation, e.range,
                         fmt::format("call of '{}' in {} may be reached by only some lanes of the warp, and {}: {}",
                                     e.name, owner_, reached(e, f.warp_operation), control.reason),
                         "call it where every lane of the warp arrives, e.g. compute the value under the branch "
                         "and call the function after it");
      return;
    }
    if (f.barrier.operation)
      reporter_.report(diag::Code::divergent_barrier, e.range,
                       fmt::format("call of '{}' in {} may be reached by only some threads of the block, and {}: {}",
                                   e.name, owner_, reached(e, f.barrier), control.reason),
                       "move the call out of the thread-dependent branch or loop so that every thread of the block "
                       "reaches it");
    if (f.grid_sync.operation)
      reporter_.report(diag::Code::divergent_grid_sync, e.range,
                       fmt::format("call of '{}' in {} may be reached by only some threads of the grid, and {}: {}",
                                   e.name, owner_, reached(e, f.grid_sync), control.reason),
                       "move the call out of the thread-dependent branch or loop so that every thread of the grid "
                       "reaches it");
  }

  void check_sync(const Expr* e, const Control* control) {
    if (!e) return;
    if (scope_ == Scope::warpgroup) {  // device functions hold no warpgroup operations (PG1357)
      if (e->kind == ExprKind::call && e->intrinsic && is_warpgroup_operation(*e->intrinsic) && control && reporting_)
        reporter_.report(diag::Code::divergent_warpgroup_operation, e->range,
                         fmt::format("{}() in {} may be reached by only some threads of the warpgroup (128 threads "
                                     "that run it together): {}",
                                     intrinsic_name(*e->intrinsic), owner_, control->reason),
                         "branch on warpgroup_id, block_id or uniform values only, e.g. if (warpgroup_id == 1) { ... }; "
                         "warp_id and lane_id differ within a warpgroup");
      for (const auto& operand : e->operands) check_sync(operand.get(), control);
      return;
    }
    if (e->kind == ExprKind::call && e->function && control && reporting_) check_call(*e, *control);
    if (scope_ == Scope::warp) {
      if (e->kind == ExprKind::call && e->intrinsic && is_warp_collective(*e->intrinsic) && control && reporting_)
        reporter_.report(diag::Code::divergent_warp_operation, e->range,
                         fmt::format("{}() in {} may be reached by only some lanes of the warp: {}",
                                     intrinsic_name(*e->intrinsic), owner_, control->reason),
                         "call it where every lane of the warp arrives: compute the value under the branch and call "
                         "it after, e.g. var v = 0.0; if (c) { v = x[i]; } let s = warp_sum(v); (conditions on "
                         "warp_id, block_id and uniform values are fine)");
      for (const auto& operand : e->operands) check_sync(operand.get(), control);
      return;
    }
    if (e->kind == ExprKind::call && e->intrinsic && control && reporting_) {
      if (*e->intrinsic == Intrinsic::barrier)
        reporter_.report(diag::Code::divergent_barrier, e->range,
                         fmt::format("barrier() in {} may be reached by only some threads of the block: {}",
                                     owner_, control->reason),
                         "move barrier() out of the thread-dependent branch or loop so that every thread of the "
                         "block reaches it");
      if (*e->intrinsic == Intrinsic::grid_sync)
        reporter_.report(diag::Code::divergent_grid_sync, e->range,
                         fmt::format("grid_sync() in {} may be reached by only some threads of the grid: {}",
                                     owner_, control->reason),
                         "move grid_sync() out of the thread-dependent branch or loop so that every thread of the "
                         "grid reaches it");
    }
    for (const auto& operand : e->operands) check_sync(operand.get(), control);
  }

  Exits walk_list(const std::vector<StmtPtr>& list, const Control* control) {
    Exits exits;
    std::optional<Control> after_exit;
    for (const auto& stmt : list) {
      if (!stmt) continue;
      const Control* here = control;
      if (!here && after_exit) here = &*after_exit;
      if (!here && returned_) here = &*returned_;
      Exits found = walk_stmt(*stmt, here);
      exits.merge(found);
      if (!after_exit) {
        if (found.kernel_exit) after_exit = found.kernel_exit;
        else if (found.loop_exit) after_exit = found.loop_exit;
        else if (found.iteration_exit) after_exit = found.iteration_exit;
      }
    }
    return exits;
  }

  Control condition_control(const Origin& why, SourceRange where, std::string_view what) const {
    return Control{fmt::format("{} {} depends on {}", what, reporter_.line_of(where), why.shown)};
  }

  Exits walk_loop(const Stmt& s, const Control* control, std::optional<Control> own) {
    auto marked = exit_loops_.find(&s);
    if (!own && marked != exit_loops_.end()) own = marked->second;
    if (!own && everything_exits_) own = Control{"the analysis could not prove the loop uniform"};
    const Control* inside = control ? control : (own ? &*own : nullptr);
    Exits body = walk_list(s.body, inside);
    std::optional<Control> exit = body.loop_exit ? body.loop_exit : body.kernel_exit;
    if (exit && exit_loops_.emplace(&s, Control{fmt::format("some threads leave the loop {} early ({})",
                                                            reporter_.line_of(s.range), exit->reason)})
                    .second)
      changed_ = true;
    Exits out;
    out.kernel_exit = body.kernel_exit;
    return out;
  }

  Exits walk_stmt(const Stmt& s, const Control* control) {
    Exits exits;
    switch (s.kind) {
      case StmtKind::let_decl:
      case StmtKind::var_decl:
        check_sync(s.value.get(), control);
        if (s.value)
          if (auto why = origin(*s.value)) mark(s.symbol, why->root);
        break;
      case StmtKind::assign: {
        check_sync(s.target.get(), control);
        check_sync(s.value.get(), control);
        if (!s.target || !s.value) break;
        // A name, or a lane of a vector var (the vector then varies as the lane does).
        if (s.target->kind != ExprKind::name && !(s.target->symbol && is_vector(s.target->symbol->type))) break;
        if (auto why = origin(*s.value))
          mark(s.target->symbol, why->root);
        else if (control)
          mark(s.target->symbol, fmt::format("an assignment to '{}' {} under thread-dependent control",
                                             s.target->name, reporter_.line_of(s.range)));
        break;
      }
      case StmtKind::if_: {
        check_sync(s.value.get(), control);
        std::optional<Control> own;
        if (!control && s.value)
          if (auto why = origin(*s.value)) own = condition_control(*why, s.value->range, "the condition");
        const Control* inside = control ? control : (own ? &*own : nullptr);
        exits.merge(walk_list(s.body, inside));
        exits.merge(walk_list(s.else_body, inside));
        break;
      }
      case StmtKind::while_: {
        check_sync(s.value.get(), control);
        std::optional<Control> own;
        if (s.value)
          if (auto why = origin(*s.value)) own = condition_control(*why, s.value->range, "the loop condition");
        exits = walk_loop(s, control, std::move(own));
        break;
      }
      case StmtKind::for_: {
        std::optional<Control> own;
        for (const Expr* bound : {s.lo.get(), s.hi.get(), s.step.get()}) {
          check_sync(bound, control);
          if (!bound || own) continue;
          if (auto why = origin(*bound)) {
            own = condition_control(*why, bound->range, "the loop bound");
            mark(s.symbol, why->root);
          }
        }
        exits = walk_loop(s, control, std::move(own));
        break;
      }
      case StmtKind::break_:
        if (control)
          exits.loop_exit = Control{fmt::format("the 'break' {} is taken by only some threads ({})",
                                                reporter_.line_of(s.range), control->reason)};
        break;
      case StmtKind::continue_:
        if (control)
          exits.iteration_exit = Control{fmt::format("the 'continue' {} is taken by only some threads ({})",
                                                     reporter_.line_of(s.range), control->reason)};
        break;
      case StmtKind::return_:
        check_sync(s.value.get(), control);
        if (final_walk_ && (control || (s.value && origin(*s.value)))) result_varies_ = true;
        if (control) {
          Control after{fmt::format("the 'return' {} is taken by only some threads ({})", reporter_.line_of(s.range),
                                    control->reason)};
          exits.kernel_exit = after;
          if (!returned_) returned_ = after;
        }
        break;
      case StmtKind::expr: check_sync(s.value.get(), control); break;
      case StmtKind::block: exits = walk_list(s.body, control); break;
      case StmtKind::shared_decl:
      case StmtKind::local_array_decl:  // its elements are loads: varying wherever they are read
      case StmtKind::const_decl: break;
    }
    return exits;
  }

  const Routine& kernel_;
  const std::string owner_;  ///< "kernel 'k'" or "function 'f'"
  Reporter& reporter_;
  const Scope scope_;
  const FunctionFactsTable& facts_;
  const bool report_;
  bool final_walk_ = false;
  bool result_varies_ = false;
  std::unordered_map<const Symbol*, std::string> divergent_;  ///< symbol -> root origin
  std::unordered_map<const Stmt*, Control> exit_loops_;       ///< loops some threads leave early
  std::optional<Control> returned_;                            ///< set after a divergent return
  bool changed_ = false;
  bool reporting_ = false;
  bool everything_exits_ = false;
};

}  // namespace

void check_divergence(const Kernel& kernel, Reporter& reporter, const FunctionFactsTable& facts) {
  const std::string owner = fmt::format("kernel '{}'", kernel.name);
  DivergenceAnalysis(kernel, owner, reporter, Scope::block, facts, Walk{}).run();
  if (kernel.uses_warp_operations) DivergenceAnalysis(kernel, owner, reporter, Scope::warp, facts, Walk{}).run();
  if (kernel.uses_warpgroup_operations)
    DivergenceAnalysis(kernel, owner, reporter, Scope::warpgroup, facts, Walk{}).run();
}

void check_divergence(const Function& function, Reporter& reporter, FunctionFactsTable& facts) {
  const std::string owner = fmt::format("function '{}'", function.name);
  const Walk checking{.params_vary = true, .report = true};
  const Walk result{.params_vary = false, .report = false};
  bool varies[2] = {false, false};
  for (Scope scope : {Scope::block, Scope::warp}) {
    const bool synchronises = scope == Scope::block ? function.uses_barrier || function.uses_grid_sync
                                                    : function.uses_warp_operations;
    if (synchronises) DivergenceAnalysis(function, owner, reporter, scope, facts, checking).run();
    if (function.result == Type::void_) continue;
    DivergenceAnalysis walk(function, owner, reporter, scope, facts, result);
    walk.run();
    varies[scope == Scope::warp ? 1 : 0] = walk.result_varies();
  }
  FunctionFacts& own = facts[&function];
  own.result_varies[0] = varies[0];
  own.result_varies[1] = varies[1];
  own.analysed = true;
}

}  // namespace ptxgate::ir::verifier_detail
