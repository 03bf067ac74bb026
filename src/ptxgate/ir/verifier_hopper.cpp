// The verifier's rules for Hopper (sm_90a) operations: mbarriers on shared u64 arrays, TMA copies with
// tensor_map parameters, warpgroup MMA (wgmma) on local f32 accumulator arrays and matrix descriptors.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "ptxgate/ir/internal/verifier_internal.hpp"

namespace ptxgate::ir::verifier_detail {
namespace {

/// The call forms, for messages.
std::string_view hopper_signature(Intrinsic fn) {
  switch (fn) {
    case Intrinsic::mbarrier_init: return "mbarrier_init(bars, index, count)";
    case Intrinsic::mbarrier_arrive: return "mbarrier_arrive(bars, index)";
    case Intrinsic::mbarrier_arrive_expect_tx: return "mbarrier_arrive_expect_tx(bars, index, bytes)";
    case Intrinsic::mbarrier_try_wait: return "mbarrier_try_wait(bars, index, parity)";
    case Intrinsic::mbarrier_wait: return "mbarrier_wait(bars, index, parity)";
    case Intrinsic::mbarrier_inval: return "mbarrier_inval(bars, index)";
    case Intrinsic::fence_proxy_async: return "fence_proxy_async()";
    case Intrinsic::tma_load: return "tma_load(dst, dst_index, map, bars, bar_index, c0 [, c1 .. c4])";
    case Intrinsic::tma_store: return "tma_store(map, src, src_index, c0 [, c1 .. c4])";
    case Intrinsic::tma_store_commit: return "tma_store_commit()";
    case Intrinsic::tma_store_wait: return "tma_store_wait(N)";
    case Intrinsic::wgmma_desc: return "wgmma_desc(tile, index)";
    case Intrinsic::wgmma_fence: return "wgmma_fence()";
    case Intrinsic::wgmma_commit: return "wgmma_commit()";
    case Intrinsic::wgmma_wait: return "wgmma_wait(N)";
    case Intrinsic::wgmma_bf16: return "wgmma_bf16(acc, desc_a, desc_b, accumulate)";
    case Intrinsic::wgmma_f16: return "wgmma_f16(acc, desc_a, desc_b, accumulate)";
    case Intrinsic::setmaxnreg_inc: return "setmaxnreg_inc(N)";
    case Intrinsic::setmaxnreg_dec: return "setmaxnreg_dec(N)";
    case Intrinsic::shared_address: return "shared_address(array, index)";
    default: return "";
  }
}

}  // namespace

bool KernelChecker::reject_tensor_map_type(Type t, SourceRange range, std::string_view what) {
  if (t != Type::tensor_map) return false;
  reporter_.report(diag::Code::invalid_tensor_map_use, range,
                   fmt::format("{} has type tensor_map; a tensor map is only a kernel parameter (passed by value "
                               "as a __grid_constant__ descriptor)",
                               what),
                   "declare it as a kernel parameter, `map: tensor_map`, and name it in tma_load / tma_store");
  return true;
}

Symbol* KernelChecker::mbarrier_operand(Expr& bars, Expr& index, std::string_view fn) {
  index_operand(index, bars.name);
  Symbol* symbol = bars.kind == ExprKind::name ? lookup(bars.name) : nullptr;
  if (bars.kind == ExprKind::name && !symbol) {
    report_undefined(bars);
    return nullptr;
  }
  if (!symbol || symbol->kind != SymbolKind::shared_array || symbol->type != Type::u64) {
    if (bars.kind != ExprKind::name) concrete(bars);
    reporter_.report(diag::Code::invalid_mbarrier, bars.range,
                     symbol ? fmt::format("'{}' of '{}' must name a shared u64 array (an mbarrier is 8 bytes of shared "
                                          "memory), but '{}' is a {} of {}",
                                          bars.name, fn, bars.name, symbol_kind_words(symbol->kind),
                                          describe_type(symbol->type))
                            : fmt::format("the mbarrier argument of '{}' must name a shared u64 array", fn),
                     "declare the barriers as `shared bars: u64[N];` and pass the array and an index");
    return nullptr;
  }
  bars.symbol = symbol;
  bars.type = symbol->type;
  return symbol;
}

Symbol* KernelChecker::shared_tile_operand(Expr& array, Expr& index, std::string_view fn, diag::Code code) {
  index_operand(index, array.name);
  Symbol* symbol = array.kind == ExprKind::name ? lookup(array.name) : nullptr;
  if (array.kind == ExprKind::name && !symbol) {
    report_undefined(array);
    return nullptr;
  }
  if (!symbol || symbol->kind != SymbolKind::shared_array || !is_numeric(symbol->type)) {
    if (array.kind != ExprKind::name) concrete(array);
    reporter_.report(code, array.range,
                     symbol ? fmt::format("'{}' needs a shared array, but '{}' is a {} of {}", fn, array.name,
                                          symbol_kind_words(symbol->kind), describe_type(symbol->type))
                            : fmt::format("'{}' needs a shared array, named, as this argument", fn),
                     fmt::format("call it as {}, naming a `shared` array", hopper_signature(*intrinsic_from_name(fn))));
    return nullptr;
  }
  array.symbol = symbol;
  array.type = symbol->type;
  return symbol;
}

bool KernelChecker::tensor_map_operand(Expr& map, std::string_view fn) {
  Symbol* symbol = map.kind == ExprKind::name ? lookup(map.name) : nullptr;
  if (map.kind == ExprKind::name && !symbol) {
    report_undefined(map);
    return false;
  }
  if (!symbol || symbol->kind != SymbolKind::scalar_param || symbol->type != Type::tensor_map) {
    if (map.kind != ExprKind::name) concrete(map);
    reporter_.report(diag::Code::invalid_tma_operand, map.range,
                     symbol ? fmt::format("the map of '{}' must name a tensor_map parameter, but '{}' is a {} of {}", fn,
                                          map.name, symbol_kind_words(symbol->kind), describe_type(symbol->type))
                            : fmt::format("the map of '{}' must name a tensor_map parameter", fn),
                     "add a kernel parameter `map: tensor_map` and pass the name");
    return false;
  }
  map.symbol = symbol;
  map.type = Type::tensor_map;
  return true;
}

void KernelChecker::tma_innermost_coordinate(Expr& c0, const Symbol& tile, std::string_view fn) {
  std::string not_constant;
  if (c0.type != Type::i32 || !is_constant_expression(c0, not_constant)) return;  // checked at run time, if at all
  const std::optional<__int128> v = eval_int_constant(c0);
  const unsigned element = byte_size(tile.type);
  if (!v || element == 0 || (*v * element) % 16 == 0) return;
  const unsigned step = 16 / std::gcd(16u, element);
  reporter_.report(diag::Code::tma_coordinate_misaligned, c0.range,
                   fmt::format("the innermost coordinate of '{}' is {}: {} elements of {} ('{}') are {} bytes, not a "
                               "multiple of 16; a TMA box must start on a 16-byte boundary of the tensor's rows (an "
                               "H100 raises CUDA_ERROR_ILLEGAL_INSTRUCTION, a sticky fault)",
                               fn, int128_text(*v), int128_text(*v), describe_type(tile.type), tile.name,
                               int128_text(*v * element)),
                   fmt::format("start the box at a multiple of {} elements ({} bytes of {}); a box partly outside "
                               "the tensor is fine (zero-filled)",
                               step, step * element, describe_type(tile.type)));
}

std::optional<uint64_t> KernelChecker::constant_operand(Expr& e, uint64_t lo, uint64_t hi, uint64_t multiple,
                                                        std::string_view fn, std::string_view what) {
  expect(e, Type::u32, [&](Type found) {
    return fmt::format("the {} of '{}' has type {}; it must be a u32 constant", what, fn, describe_type(found));
  });
  std::string not_constant;
  const bool constant = is_constant_expression(e, not_constant);
  const std::optional<__int128> v = constant ? eval_int_constant(e) : std::nullopt;
  if (!v || *v < static_cast<__int128>(lo) || *v > static_cast<__int128>(hi) || *v % multiple != 0) {
    reporter_.report(diag::Code::constant_operand_out_of_range, e.range,
                     v ? fmt::format("the {} of '{}' is {}; it must be a constant from {} to {}{}", what, fn,
                                     int128_text(*v), lo, hi,
                                     multiple > 1 ? fmt::format(", a multiple of {}", multiple) : std::string())
                       : fmt::format("the {} of '{}' is not a constant; the instruction encodes it", what, fn),
                     fmt::format("write a constant from {} to {}{} (a literal or a module constant)", lo, hi,
                                 multiple > 1 ? fmt::format(" in steps of {}", multiple) : std::string()));
    return std::nullopt;
  }
  return static_cast<uint64_t>(*v);
}

Type KernelChecker::infer_hopper(Expr& e, Intrinsic fn) {
  const std::string_view name = intrinsic_name(fn);
  require_target(fn, e.range);
  if (is_warpgroup_operation(fn)) {
    kernel_.uses_warpgroup_operations = true;
    if (as_function_)
      reporter_.report(diag::Code::warpgroup_operation_in_function, e.range,
                       fmt::format("{}() in function '{}': warpgroup operations (wgmma, setmaxnreg) are checked for "
                                   "convergence only in kernels",
                                   name, kernel_.name),
                       "call it in the kernel (a device function may compute the descriptors and values)");
  }
  const size_t n = e.operands.size();
  const bool is_tma_load = fn == Intrinsic::tma_load, is_tma_store = fn == Intrinsic::tma_store;
  if (is_tma_load || is_tma_store) {
    const size_t fixed = is_tma_load ? 5 : 3;
    if (n < fixed + 1 || n > fixed + 5) {
      for (size_t i = 0; i < n; ++i)
        if (e.operands[i] && e.operands[i]->kind != ExprKind::name) concrete(*e.operands[i]);
      reporter_.report(diag::Code::wrong_argument_count, e.range,
                       fmt::format("'{}' takes {} to {} arguments (1 to 5 coordinates), {} given", name, fixed + 1,
                                   fixed + 5, n),
                       fmt::format("call it as {}", hopper_signature(fn)));
      return Type::void_;
    }
    Symbol* tile = nullptr;
    if (is_tma_load) {
      tile = shared_tile_operand(*e.operands[0], *e.operands[1], name, diag::Code::invalid_tma_operand);
      tensor_map_operand(*e.operands[2], name);
      mbarrier_operand(*e.operands[3], *e.operands[4], name);
    } else {
      tensor_map_operand(*e.operands[0], name);
      tile = shared_tile_operand(*e.operands[1], *e.operands[2], name, diag::Code::invalid_tma_operand);
    }
    for (size_t i = fixed; i < n; ++i)
      expect(*e.operands[i], Type::i32, [&](Type found) {
        return fmt::format("coordinate {} of '{}' has type {}; coordinates are i32 (elements, innermost first)",
                           i - fixed, name, describe_type(found));
      });
    if (tile != nullptr) tma_innermost_coordinate(*e.operands[fixed], *tile, name);
    return Type::void_;
  }
  size_t arity = 0;
  switch (fn) {
    case Intrinsic::mbarrier_init: case Intrinsic::mbarrier_arrive_expect_tx: case Intrinsic::mbarrier_try_wait:
    case Intrinsic::mbarrier_wait: arity = 3; break;
    case Intrinsic::mbarrier_arrive: case Intrinsic::mbarrier_inval: case Intrinsic::wgmma_desc:
    case Intrinsic::shared_address: arity = 2; break;
    case Intrinsic::tma_store_wait: case Intrinsic::wgmma_wait: case Intrinsic::setmaxnreg_inc:
    case Intrinsic::setmaxnreg_dec: arity = 1; break;
    case Intrinsic::wgmma_bf16: case Intrinsic::wgmma_f16: arity = 4; break;
    default: arity = 0; break;
  }
  if (n != arity) {
    for (size_t i = 0; i < n; ++i)
      if (e.operands[i] && e.operands[i]->kind != ExprKind::name) concrete(*e.operands[i]);
    reporter_.report(diag::Code::wrong_argument_count, e.range,
                     fmt::format("'{}' takes {} argument{}, {} given", name, arity, arity == 1 ? "" : "s", n),
                     fmt::format("call it as {}", hopper_signature(fn)));
    return fn == Intrinsic::mbarrier_try_wait ? Type::bool_ : fn == Intrinsic::wgmma_desc ? Type::u64
           : fn == Intrinsic::shared_address ? Type::u32 : Type::void_;
  }
  auto u32_operand = [&](Expr& operand, std::string_view what) {
    expect(operand, Type::u32, [&](Type found) {
      return fmt::format("the {} of '{}' has type {}; it must be u32", what, name, describe_type(found));
    });
  };
  switch (fn) {
    case Intrinsic::mbarrier_init:
      mbarrier_operand(*e.operands[0], *e.operands[1], name);
      u32_operand(*e.operands[2], "arrival count");
      return Type::void_;
    case Intrinsic::mbarrier_arrive_expect_tx:
      mbarrier_operand(*e.operands[0], *e.operands[1], name);
      u32_operand(*e.operands[2], "byte count");
      return Type::void_;
    case Intrinsic::mbarrier_try_wait:
    case Intrinsic::mbarrier_wait:
      mbarrier_operand(*e.operands[0], *e.operands[1], name);
      u32_operand(*e.operands[2], "phase parity");
      return fn == Intrinsic::mbarrier_try_wait ? Type::bool_ : Type::void_;
    case Intrinsic::mbarrier_arrive:
    case Intrinsic::mbarrier_inval:
      mbarrier_operand(*e.operands[0], *e.operands[1], name);
      return Type::void_;
    case Intrinsic::shared_address:
      shared_tile_operand(*e.operands[0], *e.operands[1], name, diag::Code::invalid_matrix_descriptor);
      return Type::u32;
    case Intrinsic::wgmma_desc: {
      Symbol* tile = shared_tile_operand(*e.operands[0], *e.operands[1], name, diag::Code::invalid_matrix_descriptor);
      if (tile && tile->type != Type::bf16 && tile->type != Type::f16)
        reporter_.report(diag::Code::invalid_matrix_descriptor, e.operands[0]->range,
                         fmt::format("'{}' describes a tile of f16 or bf16 elements, but '{}' holds {}", name,
                                     e.operands[0]->name, type_name(tile->type)),
                         "declare the tile as a shared bf16 or f16 array");
      return Type::u64;
    }
    case Intrinsic::tma_store_wait:
    case Intrinsic::wgmma_wait:
      constant_operand(*e.operands[0], 0, 7, 1, name, "group count");
      return Type::void_;
    case Intrinsic::setmaxnreg_inc:
    case Intrinsic::setmaxnreg_dec:
      constant_operand(*e.operands[0], 24, 256, 8, name, "register count");
      return Type::void_;
    case Intrinsic::wgmma_bf16:
    case Intrinsic::wgmma_f16: {
      Expr& acc = *e.operands[0];
      Symbol* symbol = acc.kind == ExprKind::name ? lookup(acc.name) : nullptr;
      if (acc.kind == ExprKind::name && !symbol) {
        report_undefined(acc);
      } else if (!symbol || symbol->kind != SymbolKind::local_array || symbol->type != Type::f32 ||
                 symbol->array_size < 4 || symbol->array_size > 128 || symbol->array_size % 4 != 0) {
        if (acc.kind != ExprKind::name) concrete(acc);
        reporter_.report(diag::Code::invalid_wgmma_accumulator, acc.range,
                         symbol ? fmt::format("the accumulator of '{}' must be a local f32 array of N / 2 elements for "
                                              "a shape m64nNk16 (N = 8 .. 256 in steps of 8: 4 .. 128 elements, a "
                                              "multiple of 4), but '{}' is a {} of {}{}",
                                              name, acc.name, symbol_kind_words(symbol->kind),
                                              describe_type(symbol->type),
                                              symbol->kind == SymbolKind::local_array
                                                  ? fmt::format(" with {} elements", symbol->array_size)
                                                  : std::string())
                                : fmt::format("the accumulator of '{}' must name a local f32 array", name),
                         "declare it as `var acc: f32[128];` (m64n256k16) and index it only with constants after "
                         "unrolling, so that it stays in registers");
      } else {
        acc.symbol = symbol;
        acc.type = symbol->type;
      }
      for (size_t i : {1u, 2u})
        expect(*e.operands[i], Type::u64, [&](Type found) {
          return fmt::format("the {} descriptor of '{}' has type {}; it must be a u64 from wgmma_desc", i == 1 ? "A" : "B",
                             name, describe_type(found));
        });
      expect(*e.operands[3], Type::bool_, [&](Type found) {
        return fmt::format("the accumulate flag of '{}' has type {}; it must be bool (false: acc = A * B)", name,
                           describe_type(found));
      });
      return Type::void_;
    }
    default: return Type::void_;  // fence_proxy_async, tma_store_commit, wgmma_fence, wgmma_commit
  }
}

}  // namespace ptxgate::ir::verifier_detail
