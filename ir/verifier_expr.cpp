// The verifier's expression typing: names, literals and their context types, operators, casts and calls.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include <fmt/format.h>

#include "ptxgate/ir/internal/verifier_internal.hpp"

namespace ptxgate::ir::verifier_detail {
namespace {

bool is_literal(Type t) { return t == Type::int_literal || t == Type::float_literal; }

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::eq || op == BinaryOp::ne || op == BinaryOp::lt || op == BinaryOp::le ||
         op == BinaryOp::gt || op == BinaryOp::ge;
}

bool is_bitwise(BinaryOp op) {
  return op == BinaryOp::bit_and || op == BinaryOp::bit_or || op == BinaryOp::bit_xor || op == BinaryOp::shl ||
         op == BinaryOp::shr;
}

bool is_value_type(Type t) { return t == Type::bool_ || is_numeric(t); }

std::string range_text(Type t) { return fmt::format("{}..{}", int128_text(min_value(t)), max_value(t)); }

/// Literal spelling for messages: as written when the parser kept it, else the value.
std::string literal_text(const Expr& e) {
  if (!e.text.empty()) return e.text;
  if (e.kind == ExprKind::int_literal) return std::to_string(e.int_value);
  return fmt::format("{}", e.float_value);
}

std::string_view signature(Intrinsic fn) {
  switch (fn) {
    case Intrinsic::pow: return "pow(x, y)";
    case Intrinsic::fma: return "fma(a, b, c)";
    case Intrinsic::min: return "min(a, b)";
    case Intrinsic::max: return "max(a, b)";
    case Intrinsic::select: return "select(condition, a, b)";
    case Intrinsic::atomic_cas: return "atomic_cas(buffer, index, expected, value)";
    case Intrinsic::barrier: return "barrier()";
    case Intrinsic::grid_sync: return "grid_sync()";
    case Intrinsic::shfl_xor: return "shfl_xor(value, lane_mask)";
    case Intrinsic::shfl_down: return "shfl_down(value, delta)";
    case Intrinsic::shfl_up: return "shfl_up(value, delta)";
    case Intrinsic::shfl_idx: return "shfl_idx(value, lane)";
    case Intrinsic::ballot: return "ballot(condition)";
    case Intrinsic::any: return "any(condition)";
    case Intrinsic::all: return "all(condition)";
    case Intrinsic::warp_sum: return "warp_sum(value)";
    case Intrinsic::warp_min: return "warp_min(value)";
    case Intrinsic::warp_max: return "warp_max(value)";
    case Intrinsic::load2: return "load2(array, index)";
    case Intrinsic::load4: return "load4(array, index)";
    case Intrinsic::load8: return "load8(array, index)";
    case Intrinsic::store2: return "store2(array, index, vector)";
    case Intrinsic::store4: return "store4(array, index, vector)";
    case Intrinsic::store8: return "store8(array, index, vector)";
    case Intrinsic::atan2: return "atan2(y, x)";
    case Intrinsic::fence_block: return "fence_block()";
    case Intrinsic::fence_device: return "fence_device()";
    case Intrinsic::fence_system: return "fence_system()";
    case Intrinsic::assert_: return "assert(condition)";
    // tensor cores: mma.sync, ldmatrix, cp.async
    case Intrinsic::mma_m16n8k16: return "mma_m16n8k16(a: bf16x8|f16x8, b: bf16x4|f16x4, c: f32x4)";
    case Intrinsic::mma_m16n8k8: return "mma_m16n8k8(a: f32x4, b: f32x2, c: f32x4)";
    case Intrinsic::ldmatrix_x1: return "ldmatrix_x1(shared_array, chunk)";
    case Intrinsic::ldmatrix_x2: return "ldmatrix_x2(shared_array, chunk)";
    case Intrinsic::ldmatrix_x4: return "ldmatrix_x4(shared_array, chunk)";
    case Intrinsic::ldmatrix_x1_trans: return "ldmatrix_x1_trans(shared_array, chunk)";
    case Intrinsic::ldmatrix_x2_trans: return "ldmatrix_x2_trans(shared_array, chunk)";
    case Intrinsic::ldmatrix_x4_trans: return "ldmatrix_x4_trans(shared_array, chunk)";
    case Intrinsic::cp_async4: return "cp_async4(shared_array, i, buffer, j[, src_bytes])";
    case Intrinsic::cp_async8: return "cp_async8(shared_array, i, buffer, j[, src_bytes])";
    case Intrinsic::cp_async16: return "cp_async16(shared_array, i, buffer, j[, src_bytes])";
    case Intrinsic::cp_async_commit: return "cp_async_commit()";
    case Intrinsic::cp_async_wait: return "cp_async_wait(N)";
    case Intrinsic::tf32: return "tf32(x)";
    default: return is_atomic(fn) ? "atomic_op(buffer, index, value)" : "f(x)";
  }
}

size_t arity(Intrinsic fn) {
  switch (fn) {
    case Intrinsic::pow: case Intrinsic::min: case Intrinsic::max: case Intrinsic::atan2: return 2;
    case Intrinsic::shfl_xor: case Intrinsic::shfl_down: case Intrinsic::shfl_up: case Intrinsic::shfl_idx: return 2;
    case Intrinsic::fma: case Intrinsic::select: return 3;
    case Intrinsic::atomic_cas: return 4;
    case Intrinsic::barrier: case Intrinsic::grid_sync: return 0;
    case Intrinsic::load2: case Intrinsic::load4: case Intrinsic::load8: return 2;
    case Intrinsic::store2: case Intrinsic::store4: case Intrinsic::store8: return 3;
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

/// The largest finite value of a float type.
double float_max(Type t) {
  switch (t) {
    case Type::f16: return 65504.0;
    case Type::bf16: return 3.3895313892515355e38;
    case Type::f32: return FLT_MAX;
    default: return DBL_MAX;
  }
}

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

}  // namespace

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

Type KernelChecker::expect(Expr& e, Type target, const std::function<std::string(Type found)>& mismatch) {
  Type t = value(e);
  if (t == Type::error || target == Type::error || (!is_value_type(target) && !is_vector(target))) {
    if (is_literal(t)) assign_literal_types(e, t == Type::float_literal ? Type::f32 : Type::i32);
    return Type::error;
  }
  if (is_literal(t) && is_vector(target)) {
    assign_literal_types(e, t == Type::float_literal ? Type::f32 : Type::i32);
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
    assign_literal_types(literal, literal.type == Type::float_literal ? Type::f32 : Type::i32);
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
    if (is_literal(t)) assign_literal_types(operand, t == Type::float_literal ? Type::f32 : Type::i32);
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
      if (is_literal(side->type)) assign_literal_types(*side, side->type == Type::float_literal ? Type::f32 : Type::i32);
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

bool KernelChecker::check_arity(Expr& e, std::string_view fn, size_t expected) {
  if (e.operands.size() == expected) return true;
  for (auto& operand : e.operands) {
    if (!operand) continue;
    Type t = infer(*operand);
    if (is_literal(t)) assign_literal_types(*operand, t == Type::float_literal ? Type::f32 : Type::i32);
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
  if (intrinsic_min_sm(fn) >= 80) return infer_tensor_core(e, fn);  // tensor cores: mma.sync, ldmatrix, cp.async
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
        if (is_literal(cond)) assign_literal_types(*e.operands[0], cond == Type::float_literal ? Type::f32 : Type::i32);
      }
      return Type::void_;
    }
    case Intrinsic::select: return infer_select(e);
    default: return infer_math(e, fn);
  }
}

namespace {

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

Type KernelChecker::infer_function_call(Expr& e, const Function& callee) {
  e.function = &callee;
  if (e.operands.size() != callee.params.size()) {
    for (auto& operand : e.operands) {
      if (!operand) continue;
      const Symbol* named = operand->kind == ExprKind::name ? lookup(operand->name) : nullptr;
      if (named && (named->kind == SymbolKind::buffer_param || named->kind == SymbolKind::shared_array)) continue;
      Type t = infer(*operand);
      if (is_literal(t)) assign_literal_types(*operand, t == Type::float_literal ? Type::f32 : Type::i32);
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
  if (!kernel_.hopper_operation) kernel_.hopper_operation = callee.hopper_operation;
  if (as_kernel_) {
    if (callee.stack_local_bytes > deepest_call_local_bytes_) {
      deepest_call_local_bytes_ = callee.stack_local_bytes;
      deepest_call_ = &e;
    }
    kernel_.uses_barrier = kernel_.uses_barrier || callee.uses_barrier;
    kernel_.uses_warp_operations = kernel_.uses_warp_operations || callee.uses_warp_operations;
    kernel_.uses_grid_sync = kernel_.uses_grid_sync || callee.uses_grid_sync;
    inherit_min_sm(kernel_, callee);
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

Type KernelChecker::infer_warp(Expr& e, Intrinsic fn) {
  const std::string_view name = intrinsic_name(fn);
  kernel_.uses_warp_operations = true;
  if (!check_arity(e, name, arity(fn))) return Type::error;
  if (fn == Intrinsic::ballot || fn == Intrinsic::any || fn == Intrinsic::all) {
    Type cond = value(*e.operands[0]);
    if (cond != Type::error && cond != Type::bool_) {
      reporter_.report(diag::Code::condition_not_bool, e.operands[0]->range,
                       fmt::format("the argument of '{}' has type {}; it must be bool", name, describe_type(cond)),
                       fmt::format("compare to get a bool, e.g. {}(x != 0)", name));
      if (is_literal(cond)) assign_literal_types(*e.operands[0], cond == Type::float_literal ? Type::f32 : Type::i32);
    }
    return fn == Intrinsic::ballot ? Type::u32 : Type::bool_;
  }
  // shuffles and reductions: the value is a number of 32 or 64 bits
  Type t = concrete(*e.operands[0]);
  if (e.operands.size() == 2) {
    std::string_view what = fn == Intrinsic::shfl_xor ? "lane mask" : fn == Intrinsic::shfl_idx ? "lane" : "delta";
    expect(*e.operands[1], Type::u32, [&](Type found) {
      return fmt::format("the {} of '{}' has type {}; it must be u32", what, name, describe_type(found));
    });
  }
  if (t == Type::error) return t;
  if (!is_numeric(t) || bit_width(t) < 32) {
    reporter_.report(diag::Code::invalid_warp_operand, e.operands[0]->range,
                     fmt::format("'{}' needs a value of type i32, u32, i64, u64, f32 or f64, found {}", name,
                                 describe_type(t)),
                     t == Type::bool_ ? fmt::format("vote on bools with ballot/any/all, or convert: {}(u32(b), ...)",
                                                    name)
                                      : fmt::format("convert the value explicitly, e.g. {}({}(x), ...)", name,
                                                    is_float(t) ? "f32" : is_signed(t) ? "i32" : "u32"));
    return Type::error;
  }
  return t;
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
      if (is_literal(arg->type)) assign_literal_types(*arg, arg->type == Type::float_literal ? Type::f32 : Type::i32);
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
    if (is_literal(cond)) assign_literal_types(*e.operands[0], cond == Type::float_literal ? Type::f32 : Type::i32);
  }
  Type ta = value(*e.operands[1]), tb = value(*e.operands[2]);
  if (ta == Type::error || tb == Type::error) {
    for (int i : {1, 2})
      if (is_literal(e.operands[i]->type))
        assign_literal_types(*e.operands[i], e.operands[i]->type == Type::float_literal ? Type::f32 : Type::i32);
    return Type::error;
  }
  return unify(*e.operands[1], *e.operands[2], "select", e.range);
}

Symbol* KernelChecker::array_argument(Expr& target, std::string_view name, std::string_view call_form) {
  if (target.kind == ExprKind::name) return storage(target, fmt::format("used by {}", name));
  concrete(target);
  reporter_.report(diag::Code::not_indexable, target.range,
                   fmt::format("the first argument of '{}' must name a buffer or shared array", name),
                   fmt::format("call it as {}", call_form));
  return nullptr;
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
