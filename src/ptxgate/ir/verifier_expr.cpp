// The verifier's expression typing: names, builtins, indexing, operators and casts (literal typing:
// verifier_literals.cpp; calls: verifier_calls.cpp).
#include <algorithm>

#include <fmt/format.h>

#include "ptxgate/ir/internal/verifier_internal.hpp"

namespace ptxgate::ir::verifier_detail {

Type KernelChecker::infer(Expr& e) {
  if (!enter_nesting(e.range)) return e.type = Type::error;
  ++nesting_;
  Type t = Type::error;
  switch (e.kind) {
    case ExprKind::int_literal: t = Type::int_literal; break;
    case ExprKind::float_literal: t = Type::float_literal; break;
    case ExprKind::bool_literal: t = Type::bool_; break;
    case ExprKind::name: t = infer_name(e); break;
    case ExprKind::builtin: t = infer_builtin(e); break;
    case ExprKind::index: t = infer_index(e, false); break;
    case ExprKind::unary: t = infer_unary(e); break;
    case ExprKind::binary: t = infer_binary(e); break;
    case ExprKind::cast: t = infer_cast(e); break;
    case ExprKind::call: t = infer_call(e); break;
  }
  --nesting_;
  e.type = t;
  return t;
}

Type KernelChecker::value(Expr& e) {
  Type t = infer(e);
  if (t != Type::void_) return t;
  if (e.function)
    reporter_.report(diag::Code::not_a_value, e.range,
                     fmt::format("function '{}' has no result and cannot be used in an expression", e.name),
                     fmt::format("call it as a statement, or declare its result: fn {}(...) -> TYPE {{ ... }}", e.name));
  else
    reporter_.report(diag::Code::not_a_value, e.range,
                     fmt::format("'{}()' has no value and cannot be used in an expression", e.name),
                     fmt::format("call it as a statement: {}();", e.name));
  return e.type = Type::error;
}

Type KernelChecker::concrete(Expr& e) {
  Type t = value(e);
  if (t == Type::int_literal) return coerce(e, Type::i32) ? Type::i32 : Type::error;
  if (t == Type::float_literal) return coerce(e, Type::f32) ? Type::f32 : Type::error;
  return t;
}

void KernelChecker::report_undefined(Expr& e) {
  SourceRange range = e.range;
  if (e.kind == ExprKind::index) range.length = static_cast<uint32_t>(e.name.size());
  // Past the diagnostic limit nothing is reported: no hint to compute (it compares every visible name).
  if (reporter_.stopped()) return;
  auto hint = closest_name(e.name, visible_names());
  reporter_.report(diag::Code::undefined_name, range, fmt::format("use of undefined name '{}'", e.name),
                   hint ? fmt::format("did you mean '{}'?", *hint)
                        : "declare it with let or var before this use, or add a kernel parameter");
}

Type KernelChecker::infer_name(Expr& e) {
  Symbol* symbol = lookup(e.name);
  if (!symbol) {
    if (builtin_from_name(e.name))
      reporter_.report(diag::Code::unknown_builtin, e.range,
                       fmt::format("builtin '{}' needs a component", e.name),
                       fmt::format("write {0}.x, {0}.y or {0}.z", e.name));
    else
      report_undefined(e);
    return Type::error;
  }
  e.symbol = symbol;
  if (symbol->kind == SymbolKind::buffer_param || symbol->kind == SymbolKind::shared_array ||
      symbol->kind == SymbolKind::local_array) {
    reporter_.report(diag::Code::buffer_as_value, e.range,
                     fmt::format("{} '{}' is used as a value",
                                 symbol->kind == SymbolKind::buffer_param ? "buffer" : symbol_kind_words(symbol->kind),
                                 e.name),
                     fmt::format("index it to use one element, e.g. {}[i]", e.name));
    return Type::error;
  }
  if (reject_tensor_map_type(symbol->type, e.range, fmt::format("parameter '{}', used as a value,", e.name)))
    return Type::error;
  return symbol->type;
}

Type KernelChecker::infer_builtin(Expr& e) {
  if (e.component <= 2) return Type::u32;
  reporter_.report(diag::Code::unknown_builtin, e.range,
                   fmt::format("builtin '{}' has no component number {}", builtin_name(e.builtin), e.component),
                   fmt::format("use {0}.x, {0}.y or {0}.z", builtin_name(e.builtin)));
  return Type::error;
}

Symbol* KernelChecker::storage(Expr& e, std::string_view use, bool allow_local) {
  Symbol* symbol = lookup(e.name);
  if (!symbol) {
    report_undefined(e);
    return nullptr;
  }
  if (symbol->kind == SymbolKind::local_array && !allow_local) {
    reporter_.report(diag::Code::not_indexable, e.range,
                     fmt::format("'{}' is a local array (one per thread, in registers or local memory); it cannot be {}",
                                 e.name, use),
                     fmt::format("read and write its elements directly, {}[i]; atomics and vector accesses need a "
                                 "buffer or a shared array",
                                 e.name));
    return nullptr;
  }
  if (symbol->kind != SymbolKind::buffer_param && symbol->kind != SymbolKind::shared_array &&
      symbol->kind != SymbolKind::local_array) {
    SourceRange range = e.range;
    if (e.kind == ExprKind::index) range.length = static_cast<uint32_t>(e.name.size());
    reporter_.report(diag::Code::not_indexable, range,
                     fmt::format("'{}' is a {} of type {}, not a buffer or shared array; it cannot be {}", e.name,
                                 symbol_kind_words(symbol->kind), describe_type(symbol->type), use),
                     "use a buffer parameter or a shared array here");
    return nullptr;
  }
  e.symbol = symbol;
  return symbol;
}

Symbol* KernelChecker::array_argument(Expr& target, std::string_view name, std::string_view call_form) {
  if (target.kind == ExprKind::name) return storage(target, fmt::format("used by {}", name));
  concrete(target);
  reporter_.report(diag::Code::not_indexable, target.range,
                   fmt::format("the first argument of '{}' must name a buffer or shared array", name),
                   fmt::format("call it as {}", call_form));
  return nullptr;
}

Type KernelChecker::index_operand(Expr& index, const std::string& target) {
  Type t = value(index);
  if (t == Type::error) return t;
  if (t == Type::int_literal) return coerce(index, Type::u32) ? Type::u32 : Type::error;
  if (is_integer(t)) return t;
  if (t == Type::float_literal) assign_literal_types(index, Type::f32);
  reporter_.report(diag::Code::non_integer_index, index.range,
                   fmt::format("index into '{}' has type {}; indices must be integers", target, describe_type(t)),
                   is_float(t) || t == Type::float_literal ? "convert it explicitly: u32(x)"
                                                           : "use an integer index such as u32(x)");
  return Type::error;
}

Type KernelChecker::infer_index(Expr& e, bool is_write) {
  if (Symbol* vector = lookup(e.name); vector && is_vector(vector->type) &&
                                       (vector->kind == SymbolKind::let || vector->kind == SymbolKind::var))
    return infer_lane(e, *vector);
  Symbol* symbol = storage(e, "indexed", /*allow_local=*/true);
  if (!e.operands.empty() && e.operands[0]) index_operand(*e.operands[0], e.name);
  if (!symbol) return Type::error;
  if (symbol->kind == SymbolKind::buffer_param) {
    if (is_write && symbol->access == Access::in)
      reporter_.report(diag::Code::write_to_in_buffer, e.range,
                       fmt::format("write to '{}', an 'in' buffer of {} (read-only)", e.name, owner()),
                       fmt::format("declare the parameter as 'inout {}: {}[]' to write to it", e.name,
                                   type_name(symbol->type)));
    if (!is_write && symbol->access == Access::out)
      reporter_.report(diag::Code::read_of_out_buffer, e.range,
                       fmt::format("read of '{}', an 'out' buffer of {} (write-only)", e.name, owner()),
                       fmt::format("declare the parameter as 'inout {}: {}[]' to read it", e.name,
                                   type_name(symbol->type)));
  }
  return symbol->type;
}

Type KernelChecker::infer_assign_target(Expr& target) {
  if (target.kind == ExprKind::index) {
    if (!enter_nesting(target.range)) return Type::error;
    Type t = infer_index(target, true);
    if (t != Type::error && target.symbol && target.symbol->kind == SymbolKind::let) {
      reporter_.report(diag::Code::assign_to_immutable, target.range,
                       fmt::format("cannot assign to a lane of '{}': it is declared with let", target.name),
                       fmt::format("declare it with 'var {}' to make it mutable", target.name));
      return target.type = Type::error;
    }
    return target.type = t;
  }
  if (target.kind != ExprKind::name) {
    infer(target);
    reporter_.report(diag::Code::not_a_value, target.range,
                     "the left side of '=' is not a variable or a buffer element",
                     "assign to a var or to an element such as y[i]");
    return Type::error;
  }
  Symbol* symbol = lookup(target.name);
  if (!symbol) {
    report_undefined(target);
    return target.type = Type::error;
  }
  target.symbol = symbol;
  target.type = symbol->type;
  std::string message, fix;
  switch (symbol->kind) {
    case SymbolKind::var: return symbol->type;
    case SymbolKind::constant:
      message = fmt::format("cannot assign to '{}': it is a module constant", target.name);
      fix = fmt::format("copy it into a variable first: var k = {};", target.name);
      break;
    case SymbolKind::let:
      message = fmt::format("cannot assign to '{}': it is declared with let", target.name);
      fix = fmt::format("declare it with 'var {}' to make it mutable", target.name);
      break;
    case SymbolKind::loop_var:
      message = fmt::format("cannot assign to loop variable '{}'", target.name);
      fix = fmt::format("copy it into a variable first: var k = {};", target.name);
      break;
    case SymbolKind::scalar_param:
      message = fmt::format("cannot assign to parameter '{}' of {}", target.name, owner());
      fix = fmt::format("copy it into a variable first: var k = {};", target.name);
      break;
    case SymbolKind::buffer_param:
    case SymbolKind::shared_array:
    case SymbolKind::local_array:
      reporter_.report(diag::Code::buffer_as_value, target.range,
                       fmt::format("cannot assign to '{}' as a whole", target.name),
                       fmt::format("assign one element: {}[i] = ...;", target.name));
      return Type::error;
  }
  reporter_.report(diag::Code::assign_to_immutable, target.range, std::move(message), std::move(fix));
  return Type::error;
}

Type KernelChecker::infer_unary(Expr& e) {
  if (e.operands.empty() || !e.operands[0]) return Type::error;
  Expr& operand = *e.operands[0];
  Type t = value(operand);
  if (t == Type::error) return t;
  const std::string_view op = op_spelling(e.unary_op);
  auto invalid = [&](std::string fix) {
    reporter_.report(diag::Code::invalid_operand, e.range,
                     fmt::format("operator '{}' is not defined for {}", op, describe_type(t)), std::move(fix));
    default_literal_types(operand);
    return Type::error;
  };
  if (is_vector(t))
    return invalid(fmt::format("vectors have + - * lane by lane; apply '{}' to the lanes v[0] .. v[{}]", op,
                               vector_lanes(t) - 1));
  switch (e.unary_op) {
    case UnaryOp::neg:
      if (is_literal(t) || is_signed(t) || is_float(t)) return t;
      if (t == Type::bool_) return invalid("use '!' to negate a bool");
      return invalid(fmt::format("negate a signed value instead, e.g. -i32(x), or subtract: (0 - x) wraps around"));
    case UnaryOp::bit_not:
      if (t == Type::int_literal || is_integer(t)) return t;
      return invalid("'~' needs an integer operand; use '!' for bool");
    case UnaryOp::logical_not:
      if (t == Type::bool_) return t;
      return invalid("'!' needs a bool operand; compare instead: (x == 0)");
  }
  return Type::error;
}

Type KernelChecker::infer_binary(Expr& e) {
  if (e.operands.size() != 2 || !e.operands[0] || !e.operands[1]) return Type::error;
  Expr& a = *e.operands[0];
  Expr& b = *e.operands[1];
  Type ta = value(a), tb = value(b);
  const BinaryOp op = e.binary_op;
  const std::string_view spelling = op_spelling(op);
  auto default_literals = [&] {
    for (Expr* side : {&a, &b})
      default_literal_types(*side);
  };

  if (op == BinaryOp::logical_and || op == BinaryOp::logical_or) {
    for (Expr* side : {&a, &b})
      if (side->type != Type::error && side->type != Type::bool_)
        reporter_.report(diag::Code::invalid_operand, side->range,
                         fmt::format("operand of '{}' has type {}; it must be bool", spelling,
                                     describe_type(side->type)),
                         "compare to get a bool, e.g. (x != 0)");
    default_literals();
    return Type::bool_;
  }
  const bool comparison = is_comparison(op);
  if (is_vector(ta) || is_vector(tb)) return infer_vector_binary(e, ta, tb);
  if (ta == Type::error || tb == Type::error) {
    default_literals();
    return comparison ? Type::bool_ : Type::error;
  }
  Type common = unify(a, b, spelling, e.range);
  if (common == Type::error) {
    default_literals();
    return comparison ? Type::bool_ : Type::error;
  }
  auto invalid = [&](std::string fix) {
    reporter_.report(diag::Code::invalid_operand, e.range,
                     fmt::format("operator '{}' is not defined for {}", spelling, describe_type(common)),
                     std::move(fix));
    default_literals();
    return comparison ? Type::bool_ : Type::error;
  };
  if (comparison) {
    if (is_literal(common)) {
      Type fallback = common == Type::float_literal ? Type::f32 : Type::i32;
      if (!coerce(a, fallback) || !coerce(b, fallback)) return Type::bool_;
      common = fallback;
    }
    if (common == Type::bool_ && op != BinaryOp::eq && op != BinaryOp::ne)
      return invalid("bool values can only be compared with == and !=");
    return Type::bool_;
  }
  if (is_bitwise(op)) {
    if (common == Type::int_literal || is_integer(common)) return common;
    const bool is_shift = op == BinaryOp::shl || op == BinaryOp::shr;
    if (common == Type::bool_ && !is_shift) return common;  // & | ^ on bool: both sides evaluated
    return invalid(common == Type::bool_ ? "shifts need integer operands; convert explicitly with u32(b)"
                                         : "bitwise and shift operators need integer operands");
  }
  if (common == Type::bool_) return invalid("arithmetic needs numbers; convert explicitly with u32(b)");
  return common;
}

Type KernelChecker::infer_cast(Expr& e) {
  const Type target = e.cast_type;
  if (is_vector(target)) return infer_vector_build(e);
  if (e.operands.empty() || !e.operands[0]) return Type::error;
  Expr& operand = *e.operands[0];
  Type t = value(operand);
  if (!is_value_type(target)) {
    reporter_.report(diag::Code::invalid_cast, e.range, fmt::format("cannot cast to {}", describe_type(target)),
                     "cast to one of bool, i8, u8, i16, u16, i32, u32, i64, u64, f16, bf16, f32, f64");
    return Type::error;
  }
  if (t == Type::error) return target;
  if ((t == Type::int_literal && is_numeric(target)) || (t == Type::float_literal && is_float(target))) {
    coerce(operand, target);
    return target;
  }
  if (is_literal(t)) {
    Type fallback = t == Type::float_literal ? Type::f32 : Type::i32;
    if (!coerce(operand, fallback)) return target;
    t = fallback;
  }
  bool allowed = t == target || (is_numeric(t) && is_numeric(target)) || (t == Type::bool_ && is_integer(target));
  if (!allowed) {
    std::string fix = target == Type::bool_ ? "compare instead: (x != 0)"
                      : is_vector(t)        ? conversion_fix(t, target)
                                            : fmt::format("convert through an integer: {}(u32(b))", type_name(target));
    reporter_.report(diag::Code::invalid_cast, e.range,
                     fmt::format("cannot cast {} to {}", type_name(t), type_name(target)), std::move(fix));
  }
  return target;
}

}  // namespace ptxgate::ir::verifier_detail
