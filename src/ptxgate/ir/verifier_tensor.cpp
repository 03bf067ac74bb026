// The verifier's rules for the tensor-core operations (sm_80+): mma.sync fragments, ldmatrix from
// shared memory, cp.async copies with their commit/wait groups, and tf32 rounding.
#include <algorithm>

#include <fmt/format.h>

#include "ptxgate/ir/internal/verifier_internal.hpp"

namespace ptxgate::ir::verifier_detail {
namespace {

bool is_16_bit(Type t) { return t == Type::f16 || t == Type::bf16 || t == Type::i16 || t == Type::u16; }

/// The largest count cp_async_wait accepts (the count is an immediate of PTX cp.async.wait_group).
constexpr __int128 kMaxWaitCount = 0x7fffffff;

}  // namespace

std::string_view tensor_core_signature(Intrinsic fn) {
  switch (fn) {
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
    default: return "f(x)";
  }
}

Type KernelChecker::infer_tensor_core(Expr& e, Intrinsic fn) {
  require_target(fn, e.range);
  if (is_mma(fn)) return infer_mma(e, fn);
  if (is_ldmatrix(fn)) return infer_ldmatrix(e, fn);
  if (is_async_copy(fn)) return infer_async_copy(e, fn);
  const std::string_view name = intrinsic_name(fn);
  switch (fn) {
    case Intrinsic::cp_async_commit: check_arity(e, name, 0); return Type::void_;
    case Intrinsic::cp_async_wait: return infer_async_wait(e);
    case Intrinsic::tf32:
      if (!check_arity(e, name, 1)) return Type::f32;
      expect(*e.operands[0], Type::f32, [&](Type found) {
        return fmt::format("the argument of 'tf32' has type {}; it must be f32", describe_type(found));
      });
      return Type::f32;
    default: break;
  }
  return Type::error;
}

/// mma_m16n8k16: A bf16x8 or f16x8, B the same element x4, C f32x4. mma_m16n8k8 (tf32): A f32x4,
/// B f32x2, C f32x4. The result is D, f32x4.
Type KernelChecker::infer_mma(Expr& e, Intrinsic fn) {
  const std::string_view name = intrinsic_name(fn);
  kernel_.uses_warp_operations = true;
  if (!check_arity(e, name, 3)) return Type::f32x4;
  Type found[3];
  for (size_t i = 0; i < 3; ++i) found[i] = concrete(*e.operands[i]);
  const bool k16 = fn == Intrinsic::mma_m16n8k16;
  // The A fragment fixes the element type (f16 or bf16) of m16n8k16; B must match it.
  const Type a_element = vector_element(found[0]);
  const Type half = k16 && (found[0] == Type::bf16x8 || found[0] == Type::f16x8) ? a_element : Type::bf16;
  const Type wanted[3] = {k16 ? vector_of(half, 8).value() : Type::f32x4,
                          k16 ? vector_of(half, 4).value() : Type::f32x2, Type::f32x4};
  static constexpr std::string_view kRole[3] = {"A", "B", "C"};
  const bool a_known = !k16 || found[0] == Type::bf16x8 || found[0] == Type::f16x8;
  for (size_t i = 0; i < 3; ++i) {
    if (found[i] == Type::error || found[i] == wanted[i]) continue;
    if (i == 1 && !a_known && (found[1] == Type::bf16x4 || found[1] == Type::f16x4)) continue;  // B fits some A
    std::string expected(type_name(wanted[i]));
    if (k16 && i == 0) expected = "bf16x8 or f16x8";
    else if (k16 && i == 1 && !a_known) expected = "bf16x4 or f16x4";
    const char* layout = k16 ? (i == 0 ? "8 elements of the 16x16 A fragment per lane"
                                : i == 1 ? "4 elements of the 16x8 B fragment per lane"
                                         : "4 f32 accumulators of the 16x8 C fragment per lane")
                             : (i == 0 ? "4 tf32 elements of the 16x8 A fragment per lane, in f32 registers"
                                : i == 1 ? "2 tf32 elements of the 8x8 B fragment per lane, in f32 registers"
                                         : "4 f32 accumulators of the 16x8 C fragment per lane");
    std::string fix = i == 2 ? "accumulate in f32x4, e.g. var acc = f32x4(0.0);"
                      : k16 ? (i == 0 ? "load A with ldmatrix_x4 from a bf16 or f16 shared array, or build it: bf16x8(...)"
                                      : fmt::format("load B with ldmatrix_x2 (or ldmatrix_x2_trans) from a {} shared "
                                                    "array: B's elements must be A's type",
                                                    type_name(half)))
                            : "mma_m16n8k8 multiplies tf32 values held in f32 lanes: pass f32x4 (A) and f32x2 (B); "
                              "for f16/bf16 inputs use mma_m16n8k16";
    reporter_.report(diag::Code::invalid_mma_operand, e.operands[i]->range,
                     fmt::format("operand {} of '{}' has type {}; it must be {} ({})", kRole[i], name,
                                 describe_type(found[i]), expected, layout),
                     std::move(fix));
  }
  return Type::f32x4;
}

/// ldmatrix_xN(shared, chunk): the array is shared and of 16-bit elements; the result holds 2N
/// of them per lane.
Type KernelChecker::infer_ldmatrix(Expr& e, Intrinsic fn) {
  const std::string_view name = intrinsic_name(fn);
  kernel_.uses_warp_operations = true;
  const unsigned count = ldmatrix_count(fn);
  if (!check_arity(e, name, 2)) return Type::error;
  Expr& source = *e.operands[0];
  Symbol* symbol = array_argument(source, name, fmt::format("{}(tile, chunk)", name));
  index_operand(*e.operands[1], source.name);
  if (!symbol) return Type::error;
  source.type = symbol->type;
  if (symbol->kind != SymbolKind::shared_array) {
    reporter_.report(diag::Code::requires_shared_array, source.range,
                     fmt::format("'{}' reads shared memory, but '{}' is a {}", name, source.name,
                                 symbol_kind_words(symbol->kind)),
                     fmt::format("copy the tile into a shared array first (e.g. cp_async16(tile, i, {}, j)), then "
                                 "{}(tile, chunk)",
                                 source.name, name));
    return Type::error;
  }
  if (!is_16_bit(symbol->type)) {
    reporter_.report(diag::Code::invalid_matrix_element, source.range,
                     fmt::format("'{}' loads 8x8 matrices of 16-bit elements, but shared array '{}' holds {}", name,
                                 source.name, type_name(symbol->type)),
                     "declare the shared array of f16, bf16, i16 or u16 (tf32 fragments are read with load2/load4 "
                     "or indexing)");
    return Type::error;
  }
  return vector_of(symbol->type, 2 * count).value();
}

/// cp_asyncN(shared, i, buffer, j[, src_bytes]): N bytes from buffer element N/size*j to shared
/// element N/size*i; both arrays of one element type, of which N bytes are a whole number.
Type KernelChecker::infer_async_copy(Expr& e, Intrinsic fn) {
  const std::string_view name = intrinsic_name(fn);
  const unsigned bytes = async_copy_bytes(fn);
  if (e.operands.size() != 4 && e.operands.size() != 5) {
    for (size_t i = 0; i < e.operands.size(); ++i)
      if (e.operands[i] && !((i == 0 || i == 2) && e.operands[i]->kind == ExprKind::name)) concrete(*e.operands[i]);
    reporter_.report(diag::Code::wrong_argument_count, e.range,
                     fmt::format("'{}' takes 4 or 5 arguments, {} given", name, e.operands.size()),
                     fmt::format("call it as {}(shared_array, i, buffer, j) or with the bytes to read from the "
                                 "buffer last (the rest is zero-filled)",
                                 name));
    return Type::void_;
  }
  Expr& destination = *e.operands[0];
  Expr& source = *e.operands[2];
  const std::string form = fmt::format("{}(shared_array, i, buffer, j)", name);
  Symbol* to = array_argument(destination, name, form);
  index_operand(*e.operands[1], destination.name);
  Symbol* from = source.kind == ExprKind::name ? storage(source, fmt::format("used by {}", name)) : nullptr;
  if (source.kind != ExprKind::name) {
    concrete(source);
    reporter_.report(diag::Code::invalid_async_copy_source, source.range,
                     fmt::format("the third argument of '{}' must name a buffer parameter", name),
                     fmt::format("call it as {}", form));
  }
  index_operand(*e.operands[3], source.name);
  if (e.operands.size() == 5) {
    Expr& count = *e.operands[4];
    if (expect(count, Type::u32, [&](Type found) {
          return fmt::format("the source byte count of '{}' has type {}; it must be u32", name, describe_type(found));
        }) == Type::u32) {
      std::optional<__int128> constant = eval_int_constant(count);
      if (constant && *constant > bytes)
        reporter_.report(diag::Code::invalid_async_copy_bytes, count.range,
                         fmt::format("'{}' reads {} bytes from the buffer, more than the {} it copies", name,
                                     int128_text(*constant), bytes),
                         fmt::format("read 0 to {} bytes (the rest of the {} is zero-filled)", bytes, bytes));
    }
  }
  if (to) {
    destination.type = to->type;
    if (to->kind != SymbolKind::shared_array) {
      reporter_.report(diag::Code::requires_shared_array, destination.range,
                       fmt::format("'{}' copies into shared memory, but '{}' is a {}", name, destination.name,
                                   symbol_kind_words(to->kind)),
                       fmt::format("copy into a shared array: {}", form));
      to = nullptr;
    }
  }
  if (from) {
    source.type = from->type;
    if (from->kind != SymbolKind::buffer_param) {
      reporter_.report(diag::Code::invalid_async_copy_source, source.range,
                       fmt::format("'{}' copies from global memory, but '{}' is a {}", name, source.name,
                                   symbol_kind_words(from->kind)),
                       "copy from a buffer parameter; move data between shared arrays with loads and stores");
      from = nullptr;
    } else if (from->access == Access::out) {
      reporter_.report(diag::Code::read_of_out_buffer, source.range,
                       fmt::format("'{}' reads '{}', an 'out' buffer of {} (write-only)", name, source.name, owner()),
                       fmt::format("declare the parameter as 'in {}: {}[]' or 'inout'", source.name,
                                   type_name(from->type)));
    }
  }
  if (!to || !from) return Type::void_;
  if (to->type != from->type) {
    reporter_.report(diag::Code::invalid_matrix_element, e.range,
                     fmt::format("'{}' copies bytes without conversion, but shared array '{}' holds {} and buffer '{}' "
                                 "holds {}",
                                 name, destination.name, type_name(to->type), source.name, type_name(from->type)),
                     "copy between arrays of one element type");
    return Type::void_;
  }
  const unsigned size = byte_size(to->type);
  if (!is_numeric(to->type) || bytes % size != 0) {
    reporter_.report(diag::Code::invalid_matrix_element, e.range,
                     fmt::format("'{}' copies {} bytes, which is not a whole number of {} elements ({} bytes each)",
                                 name, bytes, type_name(to->type), size),
                     fmt::format("copy {} elements with cp_async{}", type_name(to->type), std::max(size, 16u)));
    return Type::void_;
  }
  // The buffer's base must be aligned to the copy (checked at launch, as for vector loads).
  if (from->param_index < kernel_.vector_alignment.size()) {
    uint32_t& alignment = kernel_.vector_alignment[from->param_index];
    alignment = std::max(alignment, bytes);
  }
  return Type::void_;
}

Type KernelChecker::infer_async_wait(Expr& e) {
  if (!check_arity(e, "cp_async_wait", 1)) return Type::void_;
  Expr& count = *e.operands[0];
  Type t = value(count);
  if (t == Type::int_literal) {  // wide enough for every count and its mistakes (-1, 2^32 - 1)
    assign_literal_types(count, Type::i64);
    t = Type::i64;
  } else if (t == Type::float_literal) {
    assign_literal_types(count, Type::f32);
    t = Type::f32;
  }
  if (t == Type::error) return Type::void_;
  std::string what;
  const bool constant = is_integer(t) && is_constant_expression(count, what);
  const std::optional<__int128> value = constant ? eval_int_constant(count) : std::nullopt;
  if (!value || *value < 0 || *value > kMaxWaitCount) {
    reporter_.report(diag::Code::invalid_wait_count, count.range,
                     !is_integer(t) ? fmt::format("the group count of 'cp_async_wait' has type {}; it must be a "
                                                  "constant integer",
                                                  describe_type(t))
                     : value        ? fmt::format("the group count of 'cp_async_wait' is {}; it must be 0 to {}",
                                                  int128_text(*value), int128_text(kMaxWaitCount))
                                    : fmt::format("the group count of 'cp_async_wait' must be a constant (PTX "
                                                  "cp.async.wait_group takes an immediate), but it uses {}",
                                                  what.empty() ? std::string("a value computed at run time") : what),
                     "write a literal or a module constant, e.g. cp_async_wait(STAGES - 2) with const STAGES: u32 = 3;");
  }
  return Type::void_;
}

}  // namespace ptxgate::ir::verifier_detail
