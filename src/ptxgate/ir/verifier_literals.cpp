// The verifier's literal typing: module constants, literals taking their context's
// type with range checks, and the common type of two operands.
#include <cfloat>
#include <cmath>

#include <fmt/format.h>

#include "ptxgate/ir/internal/verifier_internal.hpp"

namespace ptxgate::ir::verifier_detail {
namespace {

std::string range_text(Type t) { return fmt::format("{}..{}", int128_text(min_value(t)), max_value(t)); }

/// Literal spelling for messages: as written when the parser kept it, else the value.
std::string literal_text(const Expr& e) {
  if (!e.text.empty()) return e.text;
  if (e.kind == ExprKind::int_literal) return std::to_string(e.int_value);
  return fmt::format("{}", e.float_value);
}

/// The largest finite value of a float type.
double float_max(Type t) {
  switch (t) {
    case Type::f16: return 65504.0;
    case Type::bf16: return 3.3895313892515355e38;
    case Type::f32: return FLT_MAX;
    default: return DBL_MAX;
  }
}

}  // namespace

std::string conversion_fix(Type from, Type to) {
  if (to == Type::bool_) return "compare to get a bool, e.g. (x != 0)";
  if (is_vector(to))
    return fmt::format("build a vector from its lanes, {}(a, b, ...), or load one with load{}(array, i)",
                       type_name(to), vector_lanes(to));
  if (is_vector(from)) return fmt::format("read one lane of the vector, v[0] .. v[{}]", vector_lanes(from) - 1);
  if (is_numeric(to) && (is_numeric(from) || (from == Type::bool_ && is_integer(to))))
    return fmt::format("convert explicitly with {}(...); ptxgate has no implicit conversions", type_name(to));
  return fmt::format("use a value of type {}", type_name(to));
}

std::string int128_text(__int128 v) {
  if (v == 0) return "0";
  bool negative = v < 0;
  unsigned __int128 magnitude = negative ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string digits;
  while (magnitude > 0) {
    digits.push_back(static_cast<char>('0' + static_cast<int>(magnitude % 10)));
    magnitude /= 10;
  }
  if (negative) digits.push_back('-');
  return {digits.rbegin(), digits.rend()};
}

bool KernelChecker::is_constant_expression(const Expr& e, std::string& what) const {
  switch (e.kind) {
    case ExprKind::int_literal:
    case ExprKind::float_literal:
    case ExprKind::bool_literal: return true;
    case ExprKind::name: {
      const Symbol* symbol = lookup(e.name);
      if (symbol && symbol->kind == SymbolKind::constant) return true;
      what = symbol ? fmt::format("'{}', a {}", e.name, symbol_kind_words(symbol->kind))
                    : fmt::format("'{}', which is not a constant declared before it", e.name);
      return false;
    }
    case ExprKind::builtin:
      what = fmt::format("the builtin {}.{}", builtin_name(e.builtin), "xyz"[e.component % 3]);
      return false;
    case ExprKind::index:
      what = fmt::format("an element of '{}'", e.name);
      return false;
    case ExprKind::call:
      what = fmt::format("a call of '{}'", e.name.empty() && e.intrinsic ? intrinsic_name(*e.intrinsic) : e.name);
      return false;
    case ExprKind::unary:
    case ExprKind::binary:
    case ExprKind::cast:
      for (const auto& operand : e.operands)
        if (operand && !is_constant_expression(*operand, what)) return false;
      return true;
  }
  return false;
}

Symbol* KernelChecker::check_constant(Stmt& s, std::vector<std::unique_ptr<Symbol>>& owner) {
  const Type declared = s.declared_type.value_or(Type::error);
  Type type = declared;
  uint64_t bits = 0;
  std::string what;
  if (is_vector(declared)) {
    reporter_.report(diag::Code::invalid_vector_type, s.range,
                     fmt::format("constant '{}' has vector type {}; module constants are scalars", s.name,
                                 type_name(declared)),
                     fmt::format("declare a constant per lane, or build the vector inside the kernel: let {} = "
                                 "{}(...);",
                                 s.name, type_name(declared)));
    if (s.value) concrete(*s.value);
    type = Type::error;
  } else if (!s.value || !is_value_type(declared)) {
    type = Type::error;
  } else if (!is_constant_expression(*s.value, what)) {
    reporter_.report(diag::Code::invalid_constant, s.value->range,
                     fmt::format("the value of constant '{}' is not a constant expression: it uses {}", s.name, what),
                     "a constant's value may use literals, constants declared before it, operators and casts; "
                     "compute run-time values with 'let' inside a kernel");
    type = Type::error;
  } else if (expect(*s.value, declared, [&](Type found) {
               return fmt::format("cannot initialise constant '{}' of type {} with a value of type {}", s.name,
                                  type_name(declared), describe_type(found));
             }) == Type::error) {
    type = Type::error;
  } else if (is_integer(declared)) {
    std::string why;
    std::optional<__int128> v = eval_int_constant(*s.value, &why);
    if (!v) {
      reporter_.report(diag::Code::invalid_constant, s.value->range,
                       fmt::format("the value of constant '{}' cannot be computed exactly: {}", s.name, why),
                       "change the expression so that every step is defined (docs/ir.md, Module constants)");
      type = Type::error;
    } else if (*v < min_value(declared) || *v > static_cast<__int128>(max_value(declared))) {
      reporter_.report(diag::Code::invalid_constant, s.value->range,
                       fmt::format("constant '{}' is {}, which does not fit {} (range {})", s.name, int128_text(*v),
                                   type_name(declared), range_text(declared)),
                       "use a wider type such as i64 or u64, or change the value");
      type = Type::error;
    } else {
      const unsigned width = bit_width(declared);
      const uint64_t mask = width == 64 ? UINT64_MAX : (uint64_t{1} << width) - 1;
      bits = static_cast<uint64_t>(*v) & mask;
    }
  }
  // A float constant's value, for the casts of later constants (`i32(F)`); one that cannot be
  // computed (an integer division by zero inside) has none and is lowered from its expression.
  std::optional<double> float_value;
  if (type != Type::error && is_float(declared)) float_value = eval_float_constant(*s.value);
  auto symbol = std::make_unique<Symbol>();
  symbol->kind = SymbolKind::constant;
  symbol->name = s.name;
  symbol->type = type;  // error for an invalid constant: its uses stay silent
  symbol->constant_bits = bits;
  symbol->float_value = float_value;
  symbol->range = s.name_range;
  symbol->decl = &s;
  s.symbol = symbol.get();
  owner.push_back(std::move(symbol));
  return owner.back().get();
}

Type KernelChecker::expect(Expr& e, Type target, const std::function<std::string(Type found)>& mismatch) {
  Type t = value(e);
  if (t == Type::error || target == Type::error || (!is_value_type(target) && !is_vector(target))) {
    default_literal_types(e);
    return Type::error;
  }
  if (is_literal(t) && is_vector(target)) {
    default_literal_types(e);
    reporter_.report(diag::Code::type_mismatch, e.range, mismatch(t), conversion_fix(t, target));
    return Type::error;
  }
  if (is_literal(t)) return coerce(e, target) ? target : Type::error;
  if (t == target) return t;
  reporter_.report(diag::Code::type_mismatch, e.range, mismatch(t), conversion_fix(t, target));
  return Type::error;
}

void KernelChecker::assign_literal_types(Expr& e, Type target) {
  if (!is_literal(e.type)) return;
  e.type = target;
  for (auto& operand : e.operands)
    if (operand) assign_literal_types(*operand, target);
}

void KernelChecker::default_literal_types(Expr& e) {
  if (is_literal(e.type)) assign_literal_types(e, e.type == Type::float_literal ? Type::f32 : Type::i32);
}

bool KernelChecker::coerce(Expr& e, Type target) {
  if (!is_value_type(target)) return false;
  if (!coerce_tree(e, target, false)) {
    assign_literal_types(e, target);
    return false;
  }
  if (is_integer(target)) {
    std::optional<__int128> v = eval_int_constant(e);
    if (v && (*v < min_value(target) || *v > static_cast<__int128>(max_value(target)))) {
      reporter_.report(diag::Code::literal_out_of_range, e.range,
                       fmt::format("constant value {} does not fit {} (range {})", int128_text(*v),
                                   type_name(target), range_text(target)),
                       "use a wider type such as i64 or u64, or change the value");
      return false;
    }
  }
  return true;
}

bool KernelChecker::coerce_tree(Expr& e, Type target, bool under_negation) {
  if (!is_literal(e.type)) return true;
  const bool leaf = e.kind == ExprKind::int_literal || e.kind == ExprKind::float_literal;
  if (e.type == Type::float_literal && !is_float(target)) {
    std::string what = leaf ? fmt::format("float literal {}", literal_text(e)) : "a float-valued expression";
    reporter_.report(diag::Code::type_mismatch, e.range,
                     fmt::format("{} used where {} is expected", what, type_name(target)),
                     target == Type::bool_ ? "use true or false"
                                           : fmt::format("write an integer, or convert explicitly: {}(...)",
                                                         type_name(target)));
    return false;
  }
  if (target == Type::bool_) {
    std::string what = leaf ? fmt::format("integer literal {}", literal_text(e)) : "an integer expression";
    reporter_.report(diag::Code::type_mismatch, e.range, fmt::format("{} used where bool is expected", what),
                     "use true or false, or compare: (x != 0)");
    return false;
  }
  switch (e.kind) {
    case ExprKind::int_literal: {
      if (is_half(target) && static_cast<double>(e.int_value) > float_max(target)) {
        reporter_.report(diag::Code::literal_out_of_range, e.range,
                         fmt::format("integer literal {} does not fit {} (largest {:g})", literal_text(e),
                                     type_name(target), float_max(target)),
                         "use f32 for values this large");
        return false;
      }
      if (is_integer(target)) {
        uint64_t limit = max_value(target);
        bool fits = e.int_value <= limit || (under_negation && is_signed(target) && e.int_value == limit + 1);
        if (!fits) {
          reporter_.report(diag::Code::literal_out_of_range, e.range,
                           fmt::format("integer literal {} does not fit {} (range {})", literal_text(e),
                                       type_name(target), range_text(target)),
                           "use a wider type such as i64 or u64, or a smaller value");
          return false;
        }
      }
      break;
    }
    case ExprKind::float_literal:
      if (target != Type::f64 && std::isfinite(e.float_value) && std::fabs(e.float_value) > float_max(target)) {
        reporter_.report(diag::Code::literal_out_of_range, e.range,
                         fmt::format("float literal {} does not fit {} (largest {:g})", literal_text(e),
                                     type_name(target), float_max(target)),
                         target == Type::f32 ? "use f64 for values this large" : "use f32 for values this large");
        return false;
      }
      break;
    case ExprKind::unary: {
      Expr& operand = *e.operands[0];
      if (e.unary_op == UnaryOp::neg && is_integer(target) && !is_signed(target)) {
        std::optional<__int128> v = eval_int_constant(operand);
        if (!v || *v != 0) {
          reporter_.report(diag::Code::literal_out_of_range, e.range,
                           fmt::format("negative value {} does not fit unsigned type {}",
                                       v ? int128_text(-*v) : "'-...'", type_name(target)),
                           fmt::format("use a signed type such as i32, or a non-negative {} value", type_name(target)));
          return false;
        }
      }
      if (e.unary_op == UnaryOp::bit_not && is_float(target)) {
        reporter_.report(diag::Code::invalid_operand, e.range,
                         fmt::format("operator '~' is not defined for {}", type_name(target)),
                         "bitwise operators need integer operands");
        return false;
      }
      if (!coerce_tree(operand, target, e.unary_op == UnaryOp::neg)) return false;
      break;
    }
    case ExprKind::binary:
      if ((is_bitwise(e.binary_op)) && is_float(target)) {
        reporter_.report(diag::Code::invalid_operand, e.range,
                         fmt::format("operator '{}' is not defined for {}", op_spelling(e.binary_op),
                                     type_name(target)),
                         "bitwise and shift operators need integer operands");
        return false;
      }
      if (!coerce_tree(*e.operands[0], target, false) || !coerce_tree(*e.operands[1], target, false)) return false;
      break;
    case ExprKind::call:
      for (auto& operand : e.operands)
        if (operand && !coerce_tree(*operand, target, false)) return false;
      break;
    default: break;
  }
  e.type = target;
  return true;
}

Type KernelChecker::unify(Expr& a, Expr& b, std::string_view what, SourceRange where) {
  Type ta = a.type, tb = b.type;
  if (ta == Type::error || tb == Type::error) return Type::error;
  if (is_literal(ta) && is_literal(tb))
    return ta == Type::float_literal || tb == Type::float_literal ? Type::float_literal : Type::int_literal;
  if ((is_literal(ta) && is_vector(tb)) || (is_vector(ta) && is_literal(tb))) {
    Expr& literal = is_literal(ta) ? a : b;
    const Type vector = is_vector(ta) ? ta : tb;
    default_literal_types(literal);
    reporter_.report(diag::Code::type_mismatch, where,
                     fmt::format("operands of '{}' have different types: {} and a literal", what, type_name(vector)),
                     conversion_fix(Type::f32, vector));
    return Type::error;
  }
  if (is_literal(ta)) return coerce(a, tb) ? tb : Type::error;
  if (is_literal(tb)) return coerce(b, ta) ? ta : Type::error;
  if (ta == tb) return ta;
  reporter_.report(diag::Code::type_mismatch, where,
                   fmt::format("operands of '{}' have different types: {} and {}", what, type_name(ta),
                               type_name(tb)),
                   fmt::format("convert one side explicitly, e.g. {}(...); ptxgate has no implicit conversions",
                               type_name(ta)));
  return Type::error;
}

}  // namespace ptxgate::ir::verifier_detail
