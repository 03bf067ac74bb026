// The verifier's rules for vector values: vector loads and stores, building vectors, lanes, lane-wise operators.
#include <algorithm>

#include <fmt/format.h>

#include "ptxgate/ir/internal/verifier_internal.hpp"

namespace ptxgate::ir::verifier_detail {
namespace {

/// "load4 or load8" for an element type: the vector accesses that exist for it.
std::string accesses_for(Type element, bool store) {
  std::vector<std::string> names;
  for (unsigned lanes : {2u, 4u, 8u})
    if (vector_of(element, lanes)) names.push_back(fmt::format("{}{}", store ? "store" : "load", lanes));
  if (names.empty()) return {};
  std::string text = names[0];
  for (size_t i = 1; i < names.size(); ++i) text += (i + 1 == names.size() ? " or " : ", ") + names[i];
  return text;
}

}  // namespace

bool KernelChecker::reject_vector_type(Type t, SourceRange range, std::string_view what) {
  if (!is_vector(t)) return false;
  const Type element = vector_element(t);
  reporter_.report(diag::Code::invalid_vector_type, range,
                   fmt::format("{} has vector type {}; vectors are values of lets and vars only", what, type_name(t)),
                   fmt::format("use the element type {} here and move {} elements at a time with load{}/store{}",
                               type_name(element), vector_lanes(t), vector_lanes(t), vector_lanes(t)));
  return true;
}

Type KernelChecker::infer_vector_access(Expr& e, Intrinsic fn) {
  const std::string_view name = intrinsic_name(fn);
  const bool store = is_vector_store(fn);
  const size_t arity = store ? 3 : 2;
  if (e.operands.size() != arity) {  // the array argument is a name, not a value: left untyped
    for (size_t i = 0; i < e.operands.size(); ++i)
      if (e.operands[i] && (i > 0 || e.operands[i]->kind != ExprKind::name)) concrete(*e.operands[i]);
    reporter_.report(diag::Code::wrong_argument_count, e.range,
                     fmt::format("'{}' takes {} arguments, {} given", name, arity, e.operands.size()),
                     fmt::format("call it as {}({})", name, store ? "array, index, vector" : "array, index"));
    return Type::error;
  }
  const Type failed = store ? Type::void_ : Type::error;
  Expr& target = *e.operands[0];
  Symbol* symbol = array_argument(target, name, fmt::format("{}({}, ...)", name, store ? "y" : "x"));
  index_operand(*e.operands[1], target.name);
  auto type_value = [&] {
    if (store) concrete(*e.operands[2]);
  };
  if (!symbol) {
    type_value();
    return failed;
  }
  const Type element = symbol->type;
  target.type = element;
  if (symbol->kind == SymbolKind::buffer_param && store && symbol->access == Access::in)
    reporter_.report(diag::Code::write_to_in_buffer, target.range,
                     fmt::format("'{}' writes to '{}', an 'in' buffer of {} (read-only)", name, target.name,
                                 owner()),
                     fmt::format("declare the parameter as 'inout {}: {}[]' or 'out {}: {}[]'", target.name,
                                 type_name(element), target.name, type_name(element)));
  if (symbol->kind == SymbolKind::buffer_param && !store && symbol->access == Access::out)
    reporter_.report(diag::Code::read_of_out_buffer, target.range,
                     fmt::format("'{}' reads '{}', an 'out' buffer of {} (write-only)", name, target.name,
                                 owner()),
                     fmt::format("declare the parameter as 'inout {}: {}[]' to read it", target.name,
                                 type_name(element)));
  const unsigned lanes = vector_access_lanes(fn);
  const std::optional<Type> vector = is_numeric(element) ? vector_of(element, lanes) : std::nullopt;
  if (!vector) {
    if (is_numeric(element)) {
      const std::string other = accesses_for(element, store);
      reporter_.report(diag::Code::invalid_vector_access, e.range,
                       fmt::format("'{}' of '{}' would move {} {} elements, {} bytes; a vector access moves 4, 8 "
                                   "or 16 bytes",
                                   name, target.name, lanes, type_name(element), lanes * byte_size(element)),
                       other.empty() ? "use scalar accesses for this element type"
                                     : fmt::format("on {} elements use {}", type_name(element), other));
    }
    type_value();
    return failed;
  }
  if (symbol->kind == SymbolKind::buffer_param && symbol->param_index < kernel_.vector_alignment.size()) {
    uint32_t& alignment = kernel_.vector_alignment[symbol->param_index];
    alignment = std::max(alignment, byte_size(*vector));
  }
  if (!store) return *vector;
  expect(*e.operands[2], *vector, [&](Type found) {
    return fmt::format("the value stored by '{}' into '{}' has type {}, but {} {} elements are a {}", name,
                       target.name, describe_type(found), lanes, type_name(element), type_name(*vector));
  });
  return Type::void_;
}

Type KernelChecker::infer_vector_build(Expr& e) {
  const Type vector = e.cast_type;
  const Type element = vector_element(vector);
  const unsigned lanes = vector_lanes(vector);
  if (e.operands.size() != 1 && e.operands.size() != lanes) {
    for (auto& operand : e.operands)
      if (operand) concrete(*operand);
    reporter_.report(diag::Code::wrong_argument_count, e.range,
                     fmt::format("'{}(...)' takes {} lane values, or one value for every lane; {} given",
                                 type_name(vector), lanes, e.operands.size()),
                     fmt::format("write {}(a, b, ...) with {} values, or {}(x)", type_name(vector), lanes,
                                 type_name(vector)));
    return vector;
  }
  for (size_t i = 0; i < e.operands.size(); ++i) {
    if (!e.operands[i]) continue;
    expect(*e.operands[i], element, [&](Type found) {
      return fmt::format("lane {} of {}(...) has type {}, but its lanes are {}", i, type_name(vector),
                         describe_type(found), type_name(element));
    });
  }
  return vector;
}

Type KernelChecker::infer_vector_binary(Expr& e, Type ta, Type tb) {
  Expr& a = *e.operands[0];
  Expr& b = *e.operands[1];
  const BinaryOp op = e.binary_op;
  const Type result_if_wrong = is_comparison(op) ? Type::bool_ : Type::error;
  for (Expr* side : {&a, &b})
    default_literal_types(*side);
  if (ta == Type::error || tb == Type::error) return result_if_wrong;
  const Type vector = is_vector(ta) ? ta : tb;
  const unsigned lanes = vector_lanes(vector);
  if (ta != tb) {
    reporter_.report(diag::Code::type_mismatch, e.range,
                     fmt::format("operands of '{}' have different types: {} and {}", op_spelling(op),
                                 describe_type(ta), describe_type(tb)),
                     is_vector(ta) && is_vector(tb)
                         ? std::string("vectors combine lane by lane with vectors of the same type")
                         : fmt::format("make the scalar a vector with every lane the same: {}(x)", type_name(vector)));
    return result_if_wrong;
  }
  const bool lane_wise = op == BinaryOp::add || op == BinaryOp::sub || op == BinaryOp::mul ||
                         (op == BinaryOp::div && is_float(vector_element(vector)));
  if (!lane_wise) {
    reporter_.report(diag::Code::invalid_operand, e.range,
                     fmt::format("operator '{}' is not defined for {}", op_spelling(op), type_name(vector)),
                     fmt::format("vectors have + - * (and / with float lanes) lane by lane; apply '{}' to the "
                                 "lanes v[0] .. v[{}]",
                                 op_spelling(op), lanes - 1));
    return result_if_wrong;
  }
  return vector;
}

Type KernelChecker::infer_lane(Expr& e, Symbol& vector) {
  e.symbol = &vector;
  const Type element = vector_element(vector.type);
  const unsigned lanes = vector_lanes(vector.type);
  if (e.operands.empty() || !e.operands[0]) return Type::error;
  Expr& index = *e.operands[0];
  if (index_operand(index, e.name) == Type::error) return element;
  // A lane computed at run time is taken modulo the lane count (codegen masks it); a constant one
  // out of range is a mistake.
  const std::optional<__int128> lane = eval_int_constant(index);
  if (lane && (*lane < 0 || *lane >= lanes)) {
    reporter_.report(diag::Code::invalid_vector_lane, index.range,
                     fmt::format("lane {} of vector '{}' is out of range: a {} has lanes 0 to {}", int128_text(*lane),
                                 e.name, type_name(vector.type), lanes - 1),
                     fmt::format("use a lane from {}[0] to {}[{}]", e.name, e.name, lanes - 1));
  }
  return element;
}

}  // namespace ptxgate::ir::verifier_detail
