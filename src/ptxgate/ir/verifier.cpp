// The verifier's entry point, the diagnostic reporter, and the kernel-level and statement rules.
#include "ptxgate/ir/verifier.hpp"

#include <algorithm>
#include <exception>
#include <iterator>
#include <list>
#include <unordered_map>

#include <fmt/format.h>

#include "ptxgate/ir/access_analysis.hpp"
#include "ptxgate/ir/access_sites.hpp"
#include "ptxgate/ir/block_granule.hpp"
#include "ptxgate/ir/internal/verifier_internal.hpp"

namespace ptxgate::ir {
namespace verifier_detail {
namespace {

constexpr uint64_t kMaxStaticSharedBytes = device::kMaxStaticSharedBytes;
constexpr std::array<uint64_t, 3> kMaxWorkgroupDims = {1024, 1024, 64};
constexpr uint64_t kMaxWorkgroupThreads = device::kMaxThreadsPerBlock;

}  // namespace

void KernelChecker::require_target(Intrinsic fn, SourceRange range) {
  kernel_.target_requirement.raise({intrinsic_target(fn), std::string(intrinsic_name(fn)), reporter_.locate(range)});
}

std::string_view symbol_kind_words(SymbolKind kind) {
  switch (kind) {
    case SymbolKind::scalar_param: return "parameter";
    case SymbolKind::buffer_param: return "buffer parameter";
    case SymbolKind::let: return "let binding";
    case SymbolKind::var: return "variable";
    case SymbolKind::loop_var: return "loop variable";
    case SymbolKind::shared_array: return "shared array";
    case SymbolKind::constant: return "module constant";
    case SymbolKind::local_array: return "local array";
  }
  return "name";
}

namespace {

bool is_param(const Symbol& s) { return s.kind == SymbolKind::scalar_param || s.kind == SymbolKind::buffer_param; }

}  // namespace

Reporter::Reporter(std::string module_path, const diag::SourceFile* file, uint32_t max_diagnostics)
    : module_path_(std::move(module_path)), file_(file), max_diagnostics_(max_diagnostics) {}

diag::Location Reporter::locate(SourceRange range) const {
  if (file_) return diag::locate(*file_, range.offset, range.length);
  diag::Location loc;
  loc.file = module_path_;
  return loc;
}

diag::Diagnostic* Reporter::report(diag::Code code, SourceRange range, std::string message, std::string fix) {
  if (stopped_) return nullptr;
  if (max_diagnostics_ > 0 && diagnostics_.size() >= max_diagnostics_) {
    stopped_ = true;
    diag::Location loc;
    loc.file = file_ ? file_->path() : module_path_;
    diagnostics_.add(diag::Code::too_many_diagnostics,
                     fmt::format("too many diagnostics (limit {}); stopping here", max_diagnostics_), loc,
                     "fix the errors above and run again");
    return nullptr;
  }
  return &diagnostics_.add(code, std::move(message), locate(range), std::move(fix));
}

std::string Reporter::line_of(SourceRange range) const {
  if (!file_) return "earlier in the module";
  return fmt::format("at line {}", file_->line_col(range.offset).first);
}

std::string describe_type(Type t) {
  if (t == Type::int_literal) return "an integer literal";
  if (t == Type::float_literal) return "a float literal";
  return std::string(type_name(t));
}

std::optional<std::string> closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = 3;
  for (const auto& candidate : candidates) {
    if (candidate == name) continue;
    // Levenshtein distance with one row.
    std::vector<size_t> row(candidate.size() + 1);
    for (size_t j = 0; j <= candidate.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= name.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= candidate.size(); ++j) {
        size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (name[i - 1] == candidate[j - 1] ? 0 : 1)});
        diagonal = above;
      }
    }
    size_t distance = row[candidate.size()];
    if (distance < best_distance && distance < std::max<size_t>(name.size(), 2)) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

KernelChecker::KernelChecker(Kernel& kernel, Reporter& reporter, const Limits& limits,
                             const ConstantTable* constants, const FunctionTable* functions)
    : kernel_(kernel), as_kernel_(&kernel), as_function_(nullptr), reporter_(reporter), limits_(limits),
      constants_(constants), functions_(functions) {}

KernelChecker::KernelChecker(Function& function, Reporter& reporter, const Limits& limits,
                             const ConstantTable* constants, const FunctionTable* functions)
    : kernel_(function), as_kernel_(nullptr), as_function_(&function), reporter_(reporter), limits_(limits),
      constants_(constants), functions_(functions) {}

std::string KernelChecker::owner() const {
  return fmt::format("{} '{}'", as_function_ ? "function" : "kernel", kernel_.name);
}

/// Types and checks the body; a kernel's attributes and shared memory too. The divergence
/// analysis runs later (verify), once the functions' facts are known.
void KernelChecker::run() {
  kernel_.uses_grid_sync = false;
  kernel_.uses_barrier = false;
  kernel_.uses_warp_operations = false;
  kernel_.uses_warpgroup_operations = false;
  kernel_.local_array_bytes = 0;
  kernel_.stack_local_bytes = 0;
  deepest_call_local_bytes_ = 0;
  deepest_call_ = nullptr;
  kernel_.vector_alignment.assign(kernel_.params.size(), 0);
  kernel_.uses_assert = false;
  kernel_.target_requirement = {};
  kernel_.symbols.clear();
  if (as_kernel_) {
    as_kernel_->workgroup = {0, 0, 0};
    as_kernel_->cooperative = false;
    as_kernel_->static_shared_bytes = 0;
    as_kernel_->dynamic_shared_element_bytes = 0;
    as_kernel_->fp_mode.reset();
    check_attributes();
  }
  push_scope();
  declare_params();
  check_block(kernel_.body);
  pop_scope();
  if (as_kernel_) {
    check_shared_total();
    check_local_total();
    check_block_granule();
  } else if (as_function_->result != Type::void_ && !always_returns(kernel_.body)) {
    reporter_.report(diag::Code::missing_return, as_function_->name_range,
                     fmt::format("function '{}' returns {}, but it may reach the end of its body without a 'return'",
                                 kernel_.name, type_name(as_function_->result)),
                     "end every path with 'return VALUE;' (a loop does not count: add a return after it)");
  }
}

void KernelChecker::check_block_granule() {
  Kernel& kernel = *as_kernel_;
  kernel.block_granule = ir::block_granule(kernel.uses_warp_operations, kernel.uses_warpgroup_operations);
  if (!kernel.has_workgroup()) return;  // the launch is held to the granule (check_launch)
  const uint64_t threads = uint64_t{kernel.workgroup[0]} * std::max(kernel.workgroup[1], 1u) *
                           std::max(kernel.workgroup[2], 1u);
  auto violation = ir::check_block_granule(kernel.name, kernel.block_granule, threads, "its @workgroup block");
  if (!violation) return;
  SourceRange where = kernel.name_range;
  for (const auto& attr : kernel.attributes)
    if (attr.name == "workgroup") where = attr.range;
  reporter_.report(violation->code, where, std::move(violation->message),
                   fmt::format("use a block size that is a multiple of {}, e.g. @workgroup({})", kernel.block_granule,
                               violation->suggested_threads));
}

void KernelChecker::check_attributes() {
  for (auto& attr : as_kernel_->attributes) {
    if (attr.name == "workgroup") {
      check_workgroup(attr);
    } else if (attr.name == "cooperative") {
      if (saw_cooperative_)
        reporter_.report(diag::Code::invalid_attribute_argument, attr.range,
                         fmt::format("@cooperative is given twice on kernel '{}'", kernel_.name),
                         "remove the repeated attribute");
      else if (!attr.args.empty())
        reporter_.report(diag::Code::invalid_attribute_argument, attr.range,
                         fmt::format("@cooperative takes no arguments, {} given", attr.args.size()),
                         "write @cooperative without arguments");
      saw_cooperative_ = true;
      as_kernel_->cooperative = true;
    } else if (attr.name == "fp") {
      check_fp_mode(attr);
    } else {
      auto hint = closest_name(attr.name, {"workgroup", "cooperative", "fp"});
      reporter_.report(diag::Code::unknown_attribute, attr.range,
                       fmt::format("unknown attribute '@{}' on kernel '{}'", attr.name, kernel_.name),
                       hint ? fmt::format("did you mean '@{}'?", *hint)
                            : "the attributes are @workgroup(x[, y[, z]]), @cooperative and @fp(contract|exact|fast)");
    }
  }
}

void KernelChecker::check_fp_mode(Attribute& attr) {
  if (as_kernel_->fp_mode) {
    reporter_.report(diag::Code::invalid_attribute_argument, attr.range,
                     fmt::format("@fp is given twice on kernel '{}'", kernel_.name), "keep one @fp attribute");
    return;
  }
  const Expr* arg = attr.args.size() == 1 ? attr.args[0].get() : nullptr;
  std::optional<FpMode> mode;
  if (arg && arg->kind == ExprKind::name) mode = fp_mode_from_name(arg->name);
  if (!mode) {
    std::string found = attr.args.size() != 1 ? fmt::format("{} arguments", attr.args.size())
                        : arg->kind == ExprKind::name ? fmt::format("'{}'", arg->name)
                                                      : std::string("an expression");
    auto hint = arg && arg->kind == ExprKind::name ? closest_name(arg->name, {"contract", "exact", "fast"}) : std::nullopt;
    reporter_.report(diag::Code::invalid_attribute_argument, arg ? arg->range : attr.range,
                     fmt::format("@fp takes one mode, contract, exact or fast; found {}", found),
                     hint ? fmt::format("did you mean @fp({})?", *hint)
                          : "write @fp(contract) (fma contraction, the default), @fp(exact) (no contraction) or "
                            "@fp(fast) (approximate math, denormals flushed)");
    return;
  }
  as_kernel_->fp_mode = *mode;
}

void KernelChecker::check_workgroup(Attribute& attr) {
  if (saw_workgroup_) {
    reporter_.report(diag::Code::invalid_attribute_argument, attr.range,
                     fmt::format("@workgroup is given twice on kernel '{}'", kernel_.name),
                     "keep one @workgroup attribute");
    return;
  }
  saw_workgroup_ = true;
  if (attr.args.empty() || attr.args.size() > 3) {
    reporter_.report(diag::Code::invalid_attribute_argument, attr.range,
                     fmt::format("@workgroup takes 1 to 3 arguments (x, y, z), {} given", attr.args.size()),
                     "write the block size as @workgroup(x), @workgroup(x, y) or @workgroup(x, y, z)");
    return;
  }
  std::array<uint64_t, 3> dims = {1, 1, 1};
  bool valid = true;
  static constexpr std::string_view kAxis[] = {"x", "y", "z"};
  for (size_t i = 0; i < attr.args.size(); ++i) {
    Expr& arg = *attr.args[i];
    // Integer literals and module constants (and operators on them): checked before typing,
    // so that a parameter's name reads as "not a constant", not as an undefined name.
    std::string what;
    std::optional<__int128> size;
    if (is_constant_expression(arg, what)) {
      Type t = value(arg);
      if (t == Type::error) {
        valid = false;
        continue;
      }
      if (t == Type::int_literal || is_integer(t)) size = eval_int_constant(arg);
      if (t == Type::int_literal || t == Type::float_literal)
        assign_literal_types(arg, t == Type::int_literal ? Type::u32 : Type::f32);
      if (!size) what = fmt::format("an expression of type {}", describe_type(t));
    }
    if (!size || *size <= 0) {
      std::string found = size ? int128_text(*size) : what;
      reporter_.report(diag::Code::invalid_attribute_argument, arg.range,
                       fmt::format("@workgroup {} size must be a positive integer constant, found {}", kAxis[i], found),
                       "write a number or a module constant, such as @workgroup(256) or @workgroup(BLOCK)");
      valid = false;
      continue;
    }
    if (*size > static_cast<__int128>(kMaxWorkgroupDims[i])) {
      reporter_.report(diag::Code::workgroup_too_large, arg.range,
                       fmt::format("@workgroup {} size {} exceeds the limit of {}", kAxis[i], int128_text(*size),
                                   kMaxWorkgroupDims[i]),
                       fmt::format("use a {} size of at most {}", kAxis[i], kMaxWorkgroupDims[i]));
      valid = false;
      continue;
    }
    dims[i] = static_cast<uint64_t>(*size);
  }
  if (!valid) return;
  uint64_t threads = dims[0] * dims[1] * dims[2];
  if (threads > kMaxWorkgroupThreads) {
    reporter_.report(diag::Code::workgroup_too_large, attr.range,
                     fmt::format("@workgroup({}, {}, {}) of kernel '{}' is {} threads per block, over the limit of {}",
                                 dims[0], dims[1], dims[2], kernel_.name, threads, kMaxWorkgroupThreads),
                     "choose sizes whose product is at most 1024, e.g. @workgroup(256) or @workgroup(32, 8)");
    return;
  }
  as_kernel_->workgroup = {static_cast<uint32_t>(dims[0]), static_cast<uint32_t>(dims[1]), static_cast<uint32_t>(dims[2])};
}

void KernelChecker::declare_params() {
  for (size_t i = 0; i < kernel_.params.size(); ++i) {
    Param& p = kernel_.params[i];
    if (as_kernel_ || p.is_buffer)  // a device function takes and returns vector values
      reject_vector_type(p.type, p.range,
                         fmt::format("{} '{}'", p.is_buffer ? "buffer parameter" : "parameter", p.name));
    if ((p.is_buffer || !as_kernel_) && p.type == Type::tensor_map)
      reject_tensor_map_type(p.type, p.range,
                             fmt::format("{} '{}'", p.is_buffer ? "buffer parameter" : "function parameter", p.name));
    if (p.is_buffer && p.type == Type::bool_)
      reporter_.report(diag::Code::invalid_element_type, p.range,
                       fmt::format("buffer '{}' has element type bool; buffers hold numbers", p.name),
                       fmt::format("use u32 elements (0 or 1): {} {}: u32[]", access_name(p.access), p.name));
    if (as_kernel_ && !p.is_buffer && is_numeric(p.type) && bit_width(p.type) < 32) {
      const std::string_view wide = is_float(p.type) ? "f32" : is_signed(p.type) ? "i32" : "u32";
      reporter_.report(diag::Code::unsupported_parameter_type, p.range,
                       fmt::format("scalar parameter '{}' has type {}; scalar parameters are 32 or 64 bits (the "
                                   "small types are for buffer and shared elements and locals)",
                                   p.name, type_name(p.type)),
                       fmt::format("pass a {0} and convert inside the kernel: {1}: {0}, then {2}({1})", wide, p.name,
                                   type_name(p.type)));
    }
    Symbol* s = declare(p.is_buffer ? SymbolKind::buffer_param : SymbolKind::scalar_param, p.name, p.range, p.type,
                        nullptr);
    s->access = p.access;
    s->param_index = static_cast<uint32_t>(i);
    p.symbol = s;
  }
}

Symbol* KernelChecker::declare(SymbolKind kind, const std::string& name, SourceRange range, Type type,
                               const Stmt* decl) {
  auto owned = std::make_unique<Symbol>();
  owned->kind = kind;
  owned->name = name;
  owned->type = type;
  owned->range = range;
  owned->decl = decl;
  Symbol* symbol = owned.get();
  kernel_.symbols.push_back(std::move(owned));

  Symbol* previous = lookup(name);
  if (auto b = builtin_from_name(name); b && is_scalar_builtin(*b))
    reporter_.report(diag::Code::redefined_name, range,
                     fmt::format("'{}' is a builtin (a u32 value in every thread) and cannot be redefined", name),
                     fmt::format("rename this {}", symbol_kind_words(kind)));
  else if (previous) {
    std::string where = reporter_.line_of(previous->range);
    std::string message;
    if (previous->kind == SymbolKind::constant)
      message = fmt::format("'{}' is already a module constant ({})", name, where);
    else if (is_param(*previous))
      message = fmt::format("'{}' is already a parameter of {}", name, owner());
    else if (scope_of_[previous] == scope_marks_.size())
      message = fmt::format("'{}' is already defined in this scope ({} {})", name, symbol_kind_words(previous->kind),
                            where);
    else
      message = fmt::format("'{}' is already defined in an enclosing scope ({} {}); shadowing is not allowed", name,
                            symbol_kind_words(previous->kind), where);
    reporter_.report(diag::Code::redefined_name, range, std::move(message),
                     fmt::format("rename this {} or the earlier '{}'", symbol_kind_words(kind), name));
  }
  shadowed_.emplace_back(name, previous);
  visible_[name] = symbol;
  scope_of_[symbol] = static_cast<uint32_t>(scope_marks_.size());
  return symbol;
}

Symbol* KernelChecker::lookup(const std::string& name) const {
  auto found = visible_.find(name);
  if (found != visible_.end()) return found->second;
  if (constants_) {
    auto constant = constants_->find(name);
    if (constant != constants_->end()) return constant->second;
  }
  return nullptr;
}

void KernelChecker::push_scope() { scope_marks_.push_back(shadowed_.size()); }

void KernelChecker::pop_scope() {
  size_t mark = scope_marks_.back();
  scope_marks_.pop_back();
  while (shadowed_.size() > mark) {
    auto& [name, previous] = shadowed_.back();
    if (previous)
      visible_[name] = previous;
    else
      visible_.erase(name);
    shadowed_.pop_back();
  }
}

std::vector<std::string> KernelChecker::visible_names() const {
  std::vector<std::string> names;
  for (const auto& [name, symbol] : visible_)
    if (symbol) names.push_back(name);
  if (constants_)
    for (const auto& [name, symbol] : *constants_)
      if (!visible_.contains(name)) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

bool KernelChecker::enter_nesting(SourceRange range) {
  if (nesting_ < limits_.max_nesting_depth * 2) return true;
  if (!nesting_reported_)
    reporter_.report(diag::Code::nesting_too_deep, range,
                     fmt::format("{} nests deeper than the limit of {}", owner(), limits_.max_nesting_depth),
                     "split deeply nested code into simpler statements");
  nesting_reported_ = true;
  return false;
}

void KernelChecker::check_block(std::vector<StmtPtr>& body) {
  push_scope();
  ++block_depth_;
  for (auto& stmt : body) {
    if (reporter_.stopped()) break;
    if (stmt) check_stmt(*stmt);
  }
  --block_depth_;
  pop_scope();
}

void KernelChecker::check_stmt(Stmt& s) {
  if (!enter_nesting(s.range)) return;
  ++nesting_;
  switch (s.kind) {
    case StmtKind::let_decl:
    case StmtKind::var_decl: check_decl(s); break;
    case StmtKind::assign: check_assign(s); break;
    case StmtKind::if_:
      if (s.value) check_condition(*s.value, "if");
      check_block(s.body);
      if (s.has_else || !s.else_body.empty()) check_block(s.else_body);
      break;
    case StmtKind::while_:
      if (s.value) check_condition(*s.value, "while");
      ++loop_depth_;
      check_block(s.body);
      --loop_depth_;
      break;
    case StmtKind::for_: check_for(s); break;
    case StmtKind::break_:
    case StmtKind::continue_:
      if (loop_depth_ == 0) {
        std::string_view word = s.kind == StmtKind::break_ ? "break" : "continue";
        reporter_.report(diag::Code::break_outside_loop, s.range,
                         fmt::format("'{}' outside a loop in {}", word, owner()),
                         fmt::format("use break and continue only inside while or for loops; 'return;' leaves the {}",
                                     as_function_ ? "function" : "kernel"));
      }
      break;
    case StmtKind::return_: check_return(s); break;
    case StmtKind::expr: check_expr_stmt(s); break;
    case StmtKind::block: check_block(s.body); break;
    case StmtKind::shared_decl: check_shared(s); break;
    case StmtKind::local_array_decl: check_local_array(s); break;
    case StmtKind::const_decl:  // only the builder can put one here; the parser keeps them at module level
      reporter_.report(diag::Code::invalid_constant, s.range,
                       fmt::format("constant '{}' is declared inside {}", s.name, owner()),
                       fmt::format("declare it at module level, or use 'let {} = ...;' inside the kernel", s.name));
      break;
  }
  --nesting_;
}

void KernelChecker::check_return(Stmt& s) {
  if (as_kernel_) {
    if (s.value)
      reporter_.report(diag::Code::return_with_value, s.value->range,
                       fmt::format("kernel '{}' returns a value; kernels return nothing", kernel_.name),
                       "write 'return;' and store results in an out or inout buffer");
    return;
  }
  const Type result = as_function_->result;
  if (result == Type::void_) {
    if (!s.value) return;
    concrete(*s.value);
    reporter_.report(diag::Code::invalid_return, s.value->range,
                     fmt::format("function '{}' has no result type, but this 'return' gives a value", kernel_.name),
                     fmt::format("write 'return;', or declare the result: fn {}(...) -> {} {{ ... }}", kernel_.name,
                                 s.value->type == Type::error ? "TYPE" : type_name(s.value->type)));
    return;
  }
  if (!s.value) {
    reporter_.report(diag::Code::invalid_return, s.range,
                     fmt::format("function '{}' returns {}, but this 'return' gives no value", kernel_.name,
                                 type_name(result)),
                     fmt::format("return a value of type {}: return VALUE;", type_name(result)));
    return;
  }
  expect(*s.value, result, [&](Type found) {
    return fmt::format("function '{}' returns {}, but this 'return' gives a value of type {}", kernel_.name,
                       type_name(result), describe_type(found));
  });
}

void KernelChecker::check_decl(Stmt& s) {
  const bool is_let = s.kind == StmtKind::let_decl;
  Type type = Type::error;
  if (s.declared_type && reject_tensor_map_type(*s.declared_type, s.range, fmt::format("'{}'", s.name))) {
    if (s.value) concrete(*s.value);
  } else if (s.declared_type) {
    type = *s.declared_type;
    if (s.value) {
      expect(*s.value, type, [&](Type found) {
        return fmt::format("cannot initialise '{}' of type {} with a value of type {}", s.name, type_name(type),
                           describe_type(found));
      });
    } else if (is_let) {
      reporter_.report(diag::Code::cannot_infer_type, s.range,
                       fmt::format("let binding '{}' has no value", s.name),
                       fmt::format("give it a value: let {}: {} = ...;", s.name, type_name(type)));
    }
  } else if (s.value) {
    type = concrete(*s.value);
  } else {
    reporter_.report(diag::Code::cannot_infer_type, s.range,
                     fmt::format("cannot infer the type of '{}': it has neither a type nor a value", s.name),
                     fmt::format("write a type or a value: {} {}: u32 = 0;", is_let ? "let" : "var", s.name));
  }
  s.symbol = declare(is_let ? SymbolKind::let : SymbolKind::var, s.name, s.name_range, type, &s);
}

void KernelChecker::check_assign(Stmt& s) {
  if (!s.target || !s.value) return;
  Type target = infer_assign_target(*s.target);
  if (target == Type::error) {
    concrete(*s.value);
    return;
  }
  expect(*s.value, target, [&](Type found) {
    if (s.target->kind == ExprKind::index)
      return fmt::format("cannot assign {} to an element of '{}', which holds {}", describe_type(found),
                         s.target->name, type_name(target));
    return fmt::format("cannot assign {} to variable '{}' of type {}", describe_type(found), s.target->name,
                       type_name(target));
  });
}

void KernelChecker::check_for(Stmt& s) {
  Type type = Type::error;
  if (s.lo && s.hi) {
    Type lo = value(*s.lo), hi = value(*s.hi);
    if (lo == Type::int_literal && hi == Type::int_literal) {
      type = coerce(*s.lo, Type::u32) && coerce(*s.hi, Type::u32) ? Type::u32 : Type::error;
    } else if (lo != Type::error && hi != Type::error) {
      type = unify(*s.lo, *s.hi, "..", s.lo->range);
      if (type == Type::float_literal) {
        assign_literal_types(*s.lo, Type::f32);
        assign_literal_types(*s.hi, Type::f32);
        type = Type::f32;
      }
      if (type != Type::error && !is_integer(type)) {
        reporter_.report(diag::Code::type_mismatch, s.lo->range,
                         fmt::format("the bounds of the for loop over '{}' have type {}; bounds must be integers",
                                     s.name, type_name(type)),
                         "use integer bounds, converting explicitly if needed: u32(x)");
        type = Type::error;
      }
    }
  }
  if (s.step) {
    if (type != Type::error) {
      Type step = expect(*s.step, type, [&](Type found) {
        return fmt::format("the step of the for loop over '{}' has type {}, but its bounds have type {}", s.name,
                           describe_type(found), type_name(type));
      });
      std::optional<__int128> constant = step != Type::error ? eval_int_constant(*s.step) : std::nullopt;
      if (constant && *constant <= 0)
        reporter_.report(diag::Code::invalid_loop_step, s.step->range,
                         fmt::format("the step of the for loop over '{}' is {}; it must be positive (the loop "
                                     "counts up from its lower bound)",
                                     s.name, int128_text(*constant)),
                         fmt::format("use a positive step such as 'step 1'; to count down, count up and derive "
                                     "the index: for up in LO..HI {{ let {} = HI - 1 - up; ... }}",
                                     s.name));
    } else {
      concrete(*s.step);
    }
  }
  if (s.unroll) check_unroll(s, type);
  push_scope();
  s.symbol = declare(SymbolKind::loop_var, s.name, s.name_range, type, &s);
  ++loop_depth_;
  check_block(s.body);
  --loop_depth_;
  pop_scope();
}

/// `unroll(N)`: N a constant in 1..kMaxUnroll. `unroll`: bounds and step constant, at most kMaxUnroll
/// iterations (a bound on what one loop may add to a compile).
void KernelChecker::check_unroll(Stmt& s, Type type) {
  constexpr __int128 kMaxUnroll = 1024;
  if (s.unroll_count) {
    Type t = value(*s.unroll_count);
    if (t == Type::error) return;
    std::optional<__int128> n =
        t == Type::int_literal || is_integer(t) ? eval_int_constant(*s.unroll_count) : std::nullopt;
    if (!n || *n < 1 || *n > kMaxUnroll) {
      if (is_literal(t)) concrete(*s.unroll_count);
      reporter_.report(diag::Code::invalid_unroll, s.unroll_count->range,
                       n ? fmt::format("the loop over '{}' is unrolled {} times; the count must be 1..{}", s.name,
                                       int128_text(*n), int128_text(kMaxUnroll))
                         : fmt::format("the unroll count of the loop over '{}' is not a constant integer expression",
                                       s.name),
                       "write a count from 1 (do not unroll) to 1024 with literals and module constants, e.g. "
                       "unroll(4)");
      return;
    }
    if (t == Type::int_literal) coerce(*s.unroll_count, Type::u32);
    s.unroll_factor = static_cast<uint32_t>(*n);
    return;
  }
  if (type == Type::error) return;
  std::optional<__int128> lo = eval_int_constant(*s.lo), hi = eval_int_constant(*s.hi);
  std::optional<__int128> step = s.step ? eval_int_constant(*s.step) : std::optional<__int128>(1);
  if (!lo || !hi || !step) {
    reporter_.report(diag::Code::unroll_unknown_trip_count, s.range,
                     fmt::format("the loop over '{}' is unrolled completely, but its {} not constant, so its "
                                 "iteration count is not known when it is compiled",
                                 s.name, !lo || !hi ? "bounds are" : "step is"),
                     "unroll by a constant factor instead, e.g. 'unroll(4)', or write the bounds and the step with "
                     "literals and module constants");
    return;
  }
  const __int128 trips = *hi > *lo && *step > 0 ? (*hi - *lo + *step - 1) / *step : 0;
  if (trips > kMaxUnroll)
    reporter_.report(diag::Code::invalid_unroll, s.range,
                     fmt::format("unrolling the loop over '{}' completely repeats its body {} times; at most {} are "
                                 "allowed",
                                 s.name, int128_text(trips), int128_text(kMaxUnroll)),
                     "unroll by a factor instead, e.g. 'unroll(8)'");
}

void KernelChecker::check_condition(Expr& cond, std::string_view statement) {
  Type t = value(cond);
  if (t == Type::error || t == Type::bool_) return;
  std::string fix = is_integer(t) || t == Type::int_literal ? "compare explicitly, e.g. (x != 0)"
                                                            : "use a comparison such as (a < b)";
  reporter_.report(diag::Code::condition_not_bool, cond.range,
                   fmt::format("the condition of '{}' has type {}; it must be bool", statement, describe_type(t)),
                   fix);
  if (t == Type::int_literal) assign_literal_types(cond, Type::i32);
  if (t == Type::float_literal) assign_literal_types(cond, Type::f32);
}

void KernelChecker::check_expr_stmt(Stmt& s) {
  if (!s.value) return;
  Expr& e = *s.value;
  Type t = infer(e);
  // A device function may write memory or synchronise: its call is a statement like an atomic;
  // so is every call without a value (barrier, the fences, assert).
  bool has_effect = e.kind == ExprKind::call &&
                    (e.function || e.type == Type::void_ ||
                     (e.intrinsic && (is_atomic(*e.intrinsic) || is_vector_store(*e.intrinsic))));
  if (t == Type::int_literal) assign_literal_types(e, Type::i32);
  if (t == Type::float_literal) assign_literal_types(e, Type::f32);
  if (!has_effect && t != Type::error)
    reporter_.report(diag::Code::unused_result_required, e.range,
                     "the value of this expression is computed and discarded",
                     "assign it to a variable, or remove the statement");
}

void KernelChecker::check_shared(Stmt& s) {
  if (as_function_) {
    reporter_.report(diag::Code::shared_in_function, s.range,
                     fmt::format("shared array '{}' is declared in function '{}'; shared arrays belong to kernels",
                                 s.name, kernel_.name),
                     "declare the shared array in the kernel and do the shared-memory work there; a function can "
                     "compute the values and take buffers as parameters");
    if (s.value) concrete(*s.value);
    return;
  }
  if (block_depth_ != 1)
    reporter_.report(diag::Code::shared_outside_kernel_scope, s.range,
                     fmt::format("shared array '{}' is declared in a nested block", s.name),
                     fmt::format("move the declaration to the top level of kernel '{}'", kernel_.name));
  Type elem = s.declared_type.value_or(Type::error);
  bool valid = is_numeric(elem);
  reject_vector_type(elem, s.range, fmt::format("shared array '{}'", s.name));
  reject_tensor_map_type(elem, s.range, fmt::format("shared array '{}'", s.name));
  if (elem == Type::bool_)
    reporter_.report(diag::Code::invalid_element_type, s.range,
                     fmt::format("shared array '{}' has element type bool; shared arrays hold numbers", s.name),
                     "use u32 elements (0 or 1)");
  uint64_t count = 0;
  if (!s.value) {  // dynamic: one per kernel, sized by the launch
    Symbol* array = declare(SymbolKind::shared_array, s.name, s.name_range, elem, &s);
    array->dynamic = true;
    s.symbol = array;
    if (dynamic_shared_) {
      reporter_.report(diag::Code::invalid_dynamic_shared, s.range,
                       fmt::format("kernel '{}' declares a second dynamic shared array '{}'; the first is '{}' {}",
                                   kernel_.name, s.name, dynamic_shared_->name, reporter_.line_of(dynamic_shared_->range)),
                       fmt::format("dynamic shared memory is one region: declare one array and index it with "
                                   "offsets, e.g. {}[n + i]",
                                   dynamic_shared_->name));
    } else if (valid) {
      dynamic_shared_ = array;
      as_kernel_->dynamic_shared_element_bytes = byte_size(elem);
    }
    return;
  }
  if (std::optional<uint64_t> size = array_size(s, diag::Code::invalid_shared_size, "shared"))
    count = *size;
  else
    valid = false;
  Symbol* array = declare(SymbolKind::shared_array, s.name, s.name_range, elem, &s);
  array->array_size = count;
  s.symbol = array;
  if (valid && count > 0) shared_arrays_.push_back(array);
}

std::optional<uint64_t> KernelChecker::array_size(Stmt& s, diag::Code code, std::string_view what) {
  const std::string_view elem = type_name(s.declared_type.value_or(Type::error));
  const bool shared = what == "shared";
  Type size_type = value(*s.value);  // resolves the constants a size may use
  std::optional<__int128> size =
      size_type == Type::int_literal || is_integer(size_type) ? eval_int_constant(*s.value) : std::nullopt;
  if (size_type == Type::error) return std::nullopt;
  if (!size) {
    if (is_literal(size_type)) concrete(*s.value);
    reporter_.report(code, s.value->range,
                     fmt::format("the size of {} array '{}' is not a constant integer expression", what, s.name),
                     fmt::format("write the size with integer literals and module constants, e.g. {0} {1}: "
                                 "{2}[{3}]; or const N: u32 = {3}; ... {0} {1}: {2}[N];",
                                 shared ? "shared" : "var", s.name, elem, shared ? 256 : 8));
    return std::nullopt;
  }
  if (*size <= 0) {
    reporter_.report(code, s.value->range,
                     fmt::format("the size of {} array '{}' is {}; it must be positive", what, s.name,
                                 int128_text(*size)),
                     "give the array at least one element");
    if (is_literal(size_type)) assign_literal_types(*s.value, Type::i64);
    return std::nullopt;
  }
  if (size_type == Type::int_literal && !coerce(*s.value, Type::u64)) return std::nullopt;
  return static_cast<uint64_t>(*size);
}

void KernelChecker::check_local_array(Stmt& s) {
  const Type elem = s.declared_type.value_or(Type::error);
  bool valid = is_numeric(elem);
  reject_tensor_map_type(elem, s.range, fmt::format("local array '{}'", s.name));
  if (!reject_vector_type(elem, s.range, fmt::format("local array '{}'", s.name)) && elem == Type::bool_)
    reporter_.report(diag::Code::invalid_element_type, s.range,
                     fmt::format("local array '{}' has element type bool; local arrays hold numbers", s.name),
                     "use u32 elements (0 or 1)");
  uint64_t count = 0;
  if (!s.value) {
    reporter_.report(diag::Code::invalid_local_array_size, s.range,
                     fmt::format("local array '{}' has no size", s.name),
                     fmt::format("give it a constant size: var {}: {}[8];", s.name, type_name(elem)));
    valid = false;
  } else if (std::optional<uint64_t> size = array_size(s, diag::Code::invalid_local_array_size, "local")) {
    count = *size;
  } else {
    valid = false;
  }
  if (valid && count > 0) {
    const unsigned __int128 bytes = static_cast<unsigned __int128>(count) * byte_size(elem);
    const unsigned __int128 total = kernel_.local_array_bytes + bytes;
    if (total > limits_.max_local_array_bytes) {
      reporter_.report(diag::Code::local_arrays_too_large, s.range,
                       fmt::format("local array '{}' is {} bytes; with the kernel's other local arrays that is {} "
                                   "bytes per thread, over the limit of {} bytes (limit max_local_array_bytes)",
                                   s.name, int128_text(static_cast<__int128>(bytes)),
                                   int128_text(static_cast<__int128>(total)), limits_.max_local_array_bytes),
                       "keep large per-thread data in a buffer (one slice per thread) or in shared memory");
      valid = false;
      count = 0;
    } else {
      kernel_.local_array_bytes = static_cast<uint64_t>(total);
    }
  }
  Symbol* array = declare(SymbolKind::local_array, s.name, s.name_range, valid ? elem : Type::error, &s);
  array->array_size = count;
  s.symbol = array;
}

void KernelChecker::check_local_total() {
  uint64_t total = 0;
  if (__builtin_add_overflow(kernel_.local_array_bytes, deepest_call_local_bytes_, &total)) total = UINT64_MAX;
  kernel_.stack_local_bytes = total;
  if (total <= limits_.max_local_array_bytes || deepest_call_ == nullptr) return;
  reporter_.report(diag::Code::local_arrays_too_large, deepest_call_->range,
                   fmt::format("kernel '{}' needs {} bytes of local arrays per thread: {} of its own and {} in '{}' "
                               "and the functions it calls, over the limit of {} bytes (limit max_local_array_bytes)",
                               kernel_.name, total, kernel_.local_array_bytes, deepest_call_local_bytes_,
                               deepest_call_->name, limits_.max_local_array_bytes),
                   "keep large per-thread data in a buffer (one slice per thread) or in shared memory");
}

void KernelChecker::check_shared_total() {
  unsigned __int128 total = 0;
  std::vector<std::string> parts;
  for (const Symbol* array : shared_arrays_) {
    unsigned size = byte_size(array->type);
    total = (total + size - 1) / size * size + static_cast<unsigned __int128>(array->array_size) * size;
    parts.push_back(fmt::format("'{}' is {}[{}], {} bytes", array->name, type_name(array->type), array->array_size,
                                int128_text(static_cast<__int128>(array->array_size) * size)));
  }
  as_kernel_->static_shared_bytes =
      total > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(total);
  if (total <= kMaxStaticSharedBytes) return;
  diag::Diagnostic* d = reporter_.report(
      diag::Code::shared_memory_too_large, kernel_.name_range,
      fmt::format("shared memory of kernel '{}' is {} bytes, over the limit of {} bytes", kernel_.name,
                  int128_text(static_cast<__int128>(as_kernel_->static_shared_bytes)), kMaxStaticSharedBytes),
      fmt::format("make the shared arrays smaller so that together they use at most {} bytes (48 KiB)",
                  kMaxStaticSharedBytes));
  if (d)
    for (auto& part : parts) d->notes.push_back(std::move(part));
}

namespace {

/// The module's functions by name; PG1110 for a name taken by a kernel, an earlier function,
/// an intrinsic, a builtin or a type (a later duplicate is still checked, but never called).
FunctionTable declare_functions(Module& module, Reporter& reporter) {
  std::unordered_map<std::string_view, const Kernel*> kernels;
  for (const auto& kernel : module.kernels) kernels.emplace(kernel.name, &kernel);
  FunctionTable functions;
  for (auto& function : module.functions) {
    const std::string& name = function.name;
    std::string taken;
    if (auto kernel = kernels.find(name); kernel != kernels.end())
      taken = fmt::format("the name of a kernel ({})", reporter.line_of(kernel->second->name_range));
    else if (auto earlier = functions.find(name); earlier != functions.end())
      taken = fmt::format("the name of another function ({})", reporter.line_of(earlier->second->name_range));
    else if (intrinsic_from_name(name))
      taken = "the name of an intrinsic function";
    else if (builtin_from_name(name))
      taken = "the name of a builtin";
    else if (type_from_name(name))
      taken = "the name of a type (a call would be a conversion)";
    if (taken.empty()) {
      functions.emplace(name, &function);
      continue;
    }
    if (name.empty()) continue;  // a syntax error, already reported
    reporter.report(diag::Code::function_name_clash, function.name_range,
                    fmt::format("function '{}' has {}", name, taken), "rename the function");
  }
  return functions;
}

}  // namespace

}  // namespace verifier_detail

diag::Diagnostics verify(Module& module, const diag::SourceFile* file, const Limits& limits) {
  using namespace verifier_detail;
  Reporter reporter(module.path, file, limits.max_diagnostics);
  try {
    // Module constants first, in order: each sees the ones before it; every kernel sees all.
    ConstantTable constants;
    module.constant_symbols.clear();
    {
      Kernel scratch;
      scratch.name = "<module constants>";
      KernelChecker checker(scratch, reporter, limits, &constants);
      for (auto& c : module.constants) {
        if (!c || reporter.stopped()) continue;
        Symbol* symbol = checker.check_constant(*c, module.constant_symbols);
        auto [found, inserted] = constants.emplace(c->name, symbol);
        if (!inserted)
          reporter.report(diag::Code::redefined_name, c->name_range,
                          fmt::format("constant '{}' is defined twice; the first definition is {}", c->name,
                                      reporter.line_of(found->second->range)),
                          "rename one of the two constants");
      }
    }
    // Device functions: names, bodies, the call graph, then divergence callee first. Kernels
    // come after, when every function's transitive uses and facts are known.
    FunctionTable functions = declare_functions(module, reporter);
    for (auto& function : module.functions) {
      if (reporter.stopped()) break;
      KernelChecker(function, reporter, limits, &constants, &functions).run();
    }
    FunctionFactsTable facts;
    if (!reporter.stopped())
      for (Function* function : check_call_graph(module, reporter, facts)) {  // callees first
        if (reporter.stopped()) break;
        check_divergence(*function, reporter, facts);
        propagate_vector_alignment(*function);
      }
    std::unordered_map<std::string, const Kernel*> first_definition;
    for (auto& kernel : module.kernels) {
      if (reporter.stopped()) break;
      auto [found, inserted] = first_definition.emplace(kernel.name, &kernel);
      if (!inserted)
        reporter.report(diag::Code::duplicate_kernel, kernel.name_range,
                        fmt::format("kernel '{}' is defined twice; the first definition is {}", kernel.name,
                                    reporter.line_of(found->second->name_range)),
                        "rename one of the two kernels");
      KernelChecker(kernel, reporter, limits, &constants, &functions).run();
      propagate_vector_alignment(kernel);
      if (!reporter.stopped()) check_divergence(kernel, reporter, facts);
      if (reporter.stopped()) break;
    }
    if (module.kernels.empty())
      reporter.report(diag::Code::module_without_kernels, {},
                      fmt::format("module '{}' has no kernels; there is nothing to compile or launch",
                                  file ? file->path() : module.path),
                      "add a kernel, e.g. 'kernel NAME(inout y: f32[]) { ... }', or pass the file that holds "
                      "your kernels");
  } catch (const std::exception& e) {
    diag::Diagnostics result = reporter.take();
    result.add(diag::Code::internal_error, fmt::format("verifier failed: {}", e.what()), {},
               "please report this as a bug with the input that caused it");
    return result;
  }
  diag::Diagnostics result = reporter.take();
  // The access facts of every kernel of a valid module (docs/ir.md "Memory safety"): what the
  // launch check proves each launch's accesses with.
  // Every access as written is numbered first: the facts' sites name the access they come from.
  if (!result.has_errors()) {
    module.access_sites = number_access_sites(module, file);
    for (auto& kernel : module.kernels) kernel.access_facts = analyze_accesses(kernel, file);
  }
  // Source order reads best; the limit notice (PG1905), if any, stays last. list::sort is stable
  // without std::stable_sort's std::get_temporary_buffer (deprecated; clang warns in C++23).
  auto& items = result.items();
  auto end = !items.empty() && items.back().code == diag::Code::too_many_diagnostics ? items.end() - 1 : items.end();
  std::list<diag::Diagnostic> ordered(std::make_move_iterator(items.begin()), std::make_move_iterator(end));
  ordered.sort([](const diag::Diagnostic& a, const diag::Diagnostic& b) {
    return std::pair(a.location.line, a.location.column) < std::pair(b.location.line, b.location.column);
  });
  std::move(ordered.begin(), ordered.end(), items.begin());
  return result;
}

}  // namespace ptxgate::ir
