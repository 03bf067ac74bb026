// The verifier's rules for warp operations: votes, shuffles and warp reductions.
#include <fmt/format.h>

#include "ptxgate/ir/internal/verifier_internal.hpp"

namespace ptxgate::ir::verifier_detail {

std::string_view warp_signature(Intrinsic fn) {
  switch (fn) {
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
    default: return "f(x)";
  }
}

Type KernelChecker::infer_warp(Expr& e, Intrinsic fn) {
  const std::string_view name = intrinsic_name(fn);
  kernel_.uses_warp_operations = true;
  const bool shuffle = fn == Intrinsic::shfl_xor || fn == Intrinsic::shfl_down || fn == Intrinsic::shfl_up ||
                       fn == Intrinsic::shfl_idx;
  if (!check_arity(e, name, shuffle ? 2 : 1)) return Type::error;
  if (fn == Intrinsic::ballot || fn == Intrinsic::any || fn == Intrinsic::all) {
    Type cond = value(*e.operands[0]);
    if (cond != Type::error && cond != Type::bool_) {
      reporter_.report(diag::Code::condition_not_bool, e.operands[0]->range,
                       fmt::format("the argument of '{}' has type {}; it must be bool", name, describe_type(cond)),
                       fmt::format("compare to get a bool, e.g. {}(x != 0)", name));
      default_literal_types(*e.operands[0]);
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

}  // namespace ptxgate::ir::verifier_detail
