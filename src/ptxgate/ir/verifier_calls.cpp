// The verifier's calls: intrinsic dispatch by family, arity, math functions, select, assert, atomics,
// and calls of device functions.
#include <algorithm>

#include <fmt/format.h>

#include "ptxgate/ir/internal/verifier_internal.hpp"

namespace ptxgate::ir::verifier_detail {
namespace {

/// The call form of an intrinsic, for messages; each family names its own.
std::string_view signature(Intrinsic fn) {
  if (is_warp_operation(fn)) return warp_signature(fn);
  if (is_tensor_core(fn)) return tensor_core_signature(fn);
  switch (fn) {
    case Intrinsic::pow: return "pow(x, y)";
    case Intrinsic::fma: return "fma(a, b, c)";
    case Intrinsic::min: return "min(a, b)";
    case Intrinsic::max: return "max(a, b)";
    case Intrinsic::select: return "select(condition, a, b)";
    case Intrinsic::atomic_cas: return "atomic_cas(buffer, index, expected, value)";
    case Intrinsic::barrier: return "barrier()";
    case Intrinsic::grid_sync: return "grid_sync()";
    case Intrinsic::atan2: return "atan2(y, x)";
    case Intrinsic::fence_block: return "fence_block()";
    case Intrinsic::fence_device: return "fence_device()";
    case Intrinsic::fence_system: return "fence_system()";
    case Intrinsic::assert_: return "assert(condition)";
    default: return is_atomic(fn) ? "atomic_op(buffer, index, value)" : "f(x)";
  }
}

/// The argument count of a math function, select, an atomic, barrier, grid_sync or a fence.
size_t arity(Intrinsic fn) {
  switch (fn) {
    case Intrinsic::pow: case Intrinsic::min: case Intrinsic::max: case Intrinsic::atan2: return 2;
    case Intrinsic::fma: case Intrinsic::select: return 3;
    case Intrinsic::atomic_cas: return 4;
    case Intrinsic::barrier: case Intrinsic::grid_sync: return 0;
    case Intrinsic::fence_block: case Intrinsic::fence_device: case Intrinsic::fence_system: return 0;
    default: return is_atomic(fn) ? 3 : 1;
  }
}

/// What the hardware has: 32- and 64-bit integer atomics, f32/f64 add and exchange, f16 and
/// bf16 add (red/atom.add.noftz.f16 and .bf16). No 8- or 16-bit integer atomics.
bool atomic_supports(Intrinsic fn, Type elem) {
  if (is_integer(elem)) return bit_width(elem) >= 32;
  if (is_half(elem)) return fn == Intrinsic::atomic_add;
  if (is_float(elem)) return fn == Intrinsic::atomic_add || fn == Intrinsic::atomic_exch;
  return false;
}

std::string_view atomic_types(Intrinsic fn) {
  return fn == Intrinsic::atomic_add    ? "i32, u32, i64, u64, f16, bf16, f32 and f64"
         : fn == Intrinsic::atomic_exch ? "i32, u32, i64, u64, f32 and f64"
                                        : "i32, u32, i64 and u64";
}

/// "scale(x: f32, in w: f32[]) -> f32", for messages.
std::string function_signature(const Function& f) {
  std::string text = f.name + "(";
  for (size_t i = 0; i < f.params.size(); ++i) {
    const Param& p = f.params[i];
    if (i) text += ", ";
    text += p.is_buffer ? fmt::format("{} {}: {}[]", access_name(p.access), p.name, type_name(p.type))
                        : fmt::format("{}: {}", p.name, type_name(p.type));
  }
  text += ")";
  if (f.result != Type::void_) text += fmt::format(" -> {}", type_name(f.result));
  return text;
}

}  // namespace

bool KernelChecker::check_arity(Expr& e, std::string_view fn, size_t expected) {
  if (e.operands.size() == expected) return true;
  for (auto& operand : e.operands) {
    if (!operand) continue;
    infer(*operand);
    default_literal_types(*operand);
  }
  reporter_.report(diag::Code::wrong_argument_count, e.range,
                   fmt::format("'{}' takes {} argument{}, {} given", fn, expected, expected == 1 ? "" : "s",
                               e.operands.size()),
                   fmt::format("call it as {}", signature(*e.intrinsic)));
  return false;
}

Type KernelChecker::infer_call(Expr& e) {
  e.function = nullptr;
  if (!e.intrinsic && functions_)
    if (auto found = functions_->find(e.name); found != functions_->end()) return infer_function_call(e, *found->second);
  if (!e.intrinsic) {
    for (auto& operand : e.operands)
      if (operand) concrete(*operand);
    if (reporter_.stopped()) return Type::error;
    std::vector<std::string> known;
    for (size_t i = 0; i < intrinsic_count(); ++i) known.emplace_back(intrinsic_name(static_cast<Intrinsic>(i)));
    if (functions_)
      for (const auto& [name, function] : *functions_) known.push_back(name);
    std::sort(known.begin(), known.end());
    auto hint = closest_name(e.name, known);
    reporter_.report(diag::Code::unknown_function, e.range, fmt::format("unknown function '{}'", e.name),
                     hint ? fmt::format("did you mean '{}'?", *hint)
                          : "the functions are the math functions (sqrt, exp, min, ...), select, the atomics, "
                            "barrier, grid_sync, the fences, assert, the warp operations (shfl_xor, ballot, "
                            "warp_sum, ...), the vector loads and stores (load4, store4, ...) and the module's 'fn' "
                            "declarations");
    return Type::error;
  }
  const Intrinsic fn = *e.intrinsic;
  const std::string_view name = intrinsic_name(fn);
  if (is_atomic(fn)) return infer_atomic(e, fn);
  if (is_warp_operation(fn)) return infer_warp(e, fn);
  if (is_vector_access(fn)) return infer_vector_access(e, fn);
  if (is_hopper_operation(fn)) return infer_hopper(e, fn);
  if (is_tensor_core(fn)) return infer_tensor_core(e, fn);
  switch (fn) {
    case Intrinsic::barrier:
      check_arity(e, name, 0);
      kernel_.uses_barrier = true;
      return Type::void_;
    case Intrinsic::grid_sync:
      check_arity(e, name, 0);
      kernel_.uses_grid_sync = true;
      if (as_kernel_ && !as_kernel_->cooperative)
        reporter_.report(diag::Code::grid_sync_not_cooperative, e.range,
                         fmt::format("grid_sync() in kernel '{}', which is not @cooperative", kernel_.name),
                         fmt::format("mark kernel '{}' @cooperative (and launch it cooperatively), or use barrier() "
                                     "to synchronise one block",
                                     kernel_.name));
      return Type::void_;
    case Intrinsic::fence_block:
    case Intrinsic::fence_device:
    case Intrinsic::fence_system:
      check_arity(e, name, 0);
      return Type::void_;
    case Intrinsic::assert_: {
      kernel_.uses_assert = true;
      if (!check_arity(e, name, 1)) return Type::void_;
      Type cond = value(*e.operands[0]);
      if (cond != Type::error && cond != Type::bool_) {
        reporter_.report(diag::Code::condition_not_bool, e.operands[0]->range,
                         fmt::format("the condition of 'assert' has type {}; it must be bool", describe_type(cond)),
                         "compare to get a bool, e.g. assert(x != 0)");
        default_literal_types(*e.operands[0]);
      }
      return Type::void_;
    }
    case Intrinsic::select: return infer_select(e);
    default: return infer_math(e, fn);
  }
}

Type KernelChecker::infer_function_call(Expr& e, const Function& callee) {
  e.function = &callee;
  if (e.operands.size() != callee.params.size()) {
    for (auto& operand : e.operands) {
      if (!operand) continue;
      const Symbol* named = operand->kind == ExprKind::name ? lookup(operand->name) : nullptr;
      if (named && (named->kind == SymbolKind::buffer_param || named->kind == SymbolKind::shared_array)) continue;
      infer(*operand);
      default_literal_types(*operand);
    }
    reporter_.report(diag::Code::wrong_argument_count, e.range,
                     fmt::format("function '{}' takes {} argument{}, {} given", callee.name, callee.params.size(),
                                 callee.params.size() == 1 ? "" : "s", e.operands.size()),
                     fmt::format("call it as {}", function_signature(callee)));
  } else {
    for (size_t i = 0; i < e.operands.size(); ++i) {
      if (!e.operands[i]) continue;
      const Param& param = callee.params[i];
      if (param.is_buffer) {
        check_buffer_argument(*e.operands[i], param, callee);
        continue;
      }
      expect(*e.operands[i], param.type, [&](Type found) {
        return fmt::format("argument {} of '{}' has type {}, but parameter '{}' has type {}", i + 1, callee.name,
                           describe_type(found), param.name, type_name(param.type));
      });
    }
  }
  // A kernel is checked after every function's transitive uses are known (verify); a
  // function's own uses are completed from its callees' by check_call_graph.
  kernel_.target_requirement.raise(callee.target_requirement);
  if (as_kernel_) {
    if (callee.stack_local_bytes > deepest_call_local_bytes_) {
      deepest_call_local_bytes_ = callee.stack_local_bytes;
      deepest_call_ = &e;
    }
    kernel_.uses_barrier = kernel_.uses_barrier || callee.uses_barrier;
    kernel_.uses_warp_operations = kernel_.uses_warp_operations || callee.uses_warp_operations;
    kernel_.uses_grid_sync = kernel_.uses_grid_sync || callee.uses_grid_sync;
    if (callee.uses_grid_sync && !as_kernel_->cooperative)
      reporter_.report(diag::Code::grid_sync_not_cooperative, e.range,
                       fmt::format("kernel '{}' calls '{}', which uses grid_sync() (itself or through the functions "
                                   "it calls), but the kernel is not @cooperative",
                                   kernel_.name, callee.name),
                       fmt::format("mark kernel '{}' @cooperative (and launch it cooperatively), or synchronise "
                                   "one block with barrier() in '{}'",
                                   kernel_.name, callee.name));
  }
  return callee.result;
}

void KernelChecker::check_buffer_argument(Expr& arg, const Param& param, const Function& callee) {
  const std::string wanted = fmt::format("'{} {}: {}[]'", access_name(param.access), param.name, type_name(param.type));
  if (arg.kind != ExprKind::name) {
    concrete(arg);
    reporter_.report(diag::Code::invalid_buffer_argument, arg.range,
                     fmt::format("parameter '{}' of '{}' is a buffer ({}); its argument must name a buffer", param.name,
                                 callee.name, wanted),
                     fmt::format("pass a buffer parameter of {} by name", owner()));
    arg.type = Type::error;
    return;
  }
  Symbol* symbol = lookup(arg.name);
  if (!symbol) {
    report_undefined(arg);
    arg.type = Type::error;
    return;
  }
  if (symbol->kind != SymbolKind::buffer_param) {
    const bool shared = symbol->kind == SymbolKind::shared_array;
    reporter_.report(
        diag::Code::invalid_buffer_argument, arg.range,
        shared ? fmt::format("shared array '{}' is passed to buffer parameter '{}' of '{}'; functions take global "
                             "buffers, not shared arrays",
                             arg.name, param.name, callee.name)
               : fmt::format("'{}' is a {} of type {}, but parameter '{}' of '{}' is a buffer ({})", arg.name,
                             symbol_kind_words(symbol->kind), describe_type(symbol->type), param.name, callee.name,
                             wanted),
        shared ? "do the shared-memory work in the kernel and pass the function values, or a buffer"
               : fmt::format("pass a buffer parameter of {} by name", owner()));
    arg.type = Type::error;
    return;
  }
  arg.symbol = symbol;
  arg.type = symbol->type;
  if (symbol->type != param.type)
    reporter_.report(diag::Code::type_mismatch, arg.range,
                     fmt::format("buffer '{}' holds {}, but parameter '{}' of '{}' holds {}", arg.name,
                                 type_name(symbol->type), param.name, callee.name, type_name(param.type)),
                     "buffers pass as they are, without conversion: use a buffer of the parameter's element type");
  if (param.access != Access::in && symbol->access == Access::in)
    reporter_.report(diag::Code::write_to_in_buffer, arg.range,
                     fmt::format("'{}', an 'in' buffer of {} (read-only), is passed to parameter {} of '{}', which "
                                 "may write it",
                                 arg.name, owner(), wanted, callee.name),
                     fmt::format("declare '{}' as 'inout' here, or the function's parameter as 'in'", arg.name));
  if (param.access != Access::out && symbol->access == Access::out)
    reporter_.report(diag::Code::read_of_out_buffer, arg.range,
                     fmt::format("'{}', an 'out' buffer of {} (write-only), is passed to parameter {} of '{}', which "
                                 "may read it",
                                 arg.name, owner(), wanted, callee.name),
                     fmt::format("declare '{}' as 'inout' here, or the function's parameter as 'out'", arg.name));
}

Type KernelChecker::infer_math(Expr& e, Intrinsic fn) {
  const std::string_view name = intrinsic_name(fn);
  if (!check_arity(e, name, arity(fn))) return Type::error;
  const bool float_only = fn != Intrinsic::min && fn != Intrinsic::max && fn != Intrinsic::abs;
  bool failed = false;
  Type common = Type::error;
  for (auto& arg : e.operands) {
    Type t = value(*arg);
    if (t == Type::error) failed = true;
    else if (!is_literal(t) && common == Type::error) common = t;
  }
  auto default_literals = [&] {
    for (auto& arg : e.operands)
      default_literal_types(*arg);
  };
  if (failed) {
    default_literals();
    return Type::error;
  }
  if (common == Type::error) {
    bool any_float = false;
    for (auto& arg : e.operands) any_float = any_float || arg->type == Type::float_literal;
    return any_float || float_only ? Type::float_literal : Type::int_literal;
  }
  for (auto& arg : e.operands) {
    if (is_literal(arg->type)) {
      if (!coerce(*arg, common)) failed = true;
    } else if (arg->type != common) {
      reporter_.report(diag::Code::type_mismatch, arg->range,
                       fmt::format("arguments of '{}' have different types: {} and {}", name, type_name(common),
                                   type_name(arg->type)),
                       fmt::format("convert explicitly, e.g. {}(...); ptxgate has no implicit conversions",
                                   type_name(common)));
      failed = true;
    }
  }
  if (failed) return Type::error;
  if (float_only && is_half(common)) {
    reporter_.report(diag::Code::invalid_operand, e.range,
                     fmt::format("'{}' needs f32 or f64 arguments, found {} (math functions are not defined on "
                                 "half types)",
                                 name, type_name(common)),
                     fmt::format("compute in f32 and round once: {}({}(f32(x)))", type_name(common), name));
    return Type::error;
  }
  if (float_only && !is_float(common)) {
    reporter_.report(diag::Code::invalid_operand, e.range,
                     fmt::format("'{}' needs f32 or f64 arguments, found {}", name, type_name(common)),
                     fmt::format("convert the argument explicitly, e.g. {}(f32(x))", name));
    return Type::error;
  }
  if (!float_only && !is_numeric(common)) {
    reporter_.report(diag::Code::invalid_operand, e.range,
                     fmt::format("'{}' needs numeric arguments, found {}", name, type_name(common)),
                     "pass integers or floats");
    return Type::error;
  }
  return common;
}

Type KernelChecker::infer_select(Expr& e) {
  if (!check_arity(e, "select", 3)) return Type::error;
  Type cond = value(*e.operands[0]);
  if (cond != Type::error && cond != Type::bool_) {
    reporter_.report(diag::Code::condition_not_bool, e.operands[0]->range,
                     fmt::format("the condition of 'select' has type {}; it must be bool", describe_type(cond)),
                     "compare to get a bool, e.g. select(x != 0, a, b)");
    default_literal_types(*e.operands[0]);
  }
  Type ta = value(*e.operands[1]), tb = value(*e.operands[2]);
  if (ta == Type::error || tb == Type::error) {
    for (int i : {1, 2})
      default_literal_types(*e.operands[i]);
    return Type::error;
  }
  return unify(*e.operands[1], *e.operands[2], "select", e.range);
}

Type KernelChecker::infer_atomic(Expr& e, Intrinsic fn) {
  const std::string_view name = intrinsic_name(fn);
  if (!check_arity(e, name, arity(fn))) return Type::error;
  Expr& target = *e.operands[0];
  Symbol* symbol = array_argument(target, name, fmt::format("{}(buffer, index, value)", name));
  index_operand(*e.operands[1], target.name);
  auto type_values = [&] {
    for (size_t i = 2; i < e.operands.size(); ++i) concrete(*e.operands[i]);
  };
  if (!symbol) {
    type_values();
    return Type::error;
  }
  const Type elem = symbol->type;
  target.type = elem;
  if (symbol->kind == SymbolKind::buffer_param && symbol->access == Access::in)
    reporter_.report(diag::Code::write_to_in_buffer, target.range,
                     fmt::format("'{}' writes to '{}', an 'in' buffer of {} (read-only)", name, target.name,
                                 owner()),
                     fmt::format("declare the parameter as 'inout {}: {}[]'", target.name, type_name(elem)));
  if (symbol->kind == SymbolKind::buffer_param && symbol->access == Access::out)
    reporter_.report(diag::Code::read_of_out_buffer, target.range,
                     fmt::format("'{}' reads '{}', an 'out' buffer of {} (atomics return the old value)",
                                 name, target.name, owner()),
                     fmt::format("declare the parameter as 'inout {}: {}[]'", target.name, type_name(elem)));
  if (!is_numeric(elem)) {
    type_values();
    return Type::error;
  }
  if (!atomic_supports(fn, elem)) {
    reporter_.report(diag::Code::invalid_atomic_type, e.range,
                     fmt::format("'{}' does not support element type {} (of '{}')", name, type_name(elem),
                                 target.name),
                     fmt::format("'{}' works on {} elements", name, atomic_types(fn)));
    type_values();
    return elem;
  }
  for (size_t i = 2; i < e.operands.size(); ++i)
    expect(*e.operands[i], elem, [&](Type found) {
      return fmt::format("the value passed to '{}' has type {}, but '{}' holds {}", name, describe_type(found),
                         target.name, type_name(elem));
    });
  return elem;
}

}  // namespace ptxgate::ir::verifier_detail
