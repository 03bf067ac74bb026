// Lowering of a verified ptxgate module to LLVM IR for the NVPTX target.
#pragma once

#include <expected>
#include <memory>

#include <llvm/IR/DataLayout.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"

namespace ptxgate::codegen {

/// Builds one LLVM module with a PTX kernel (CallingConv::PTX_Kernel, `kernel` and
/// `reqntid` nvvm.annotations) per ir::Kernel. `verified` must have passed ir::verify:
/// types concrete, symbols resolved. A broken invariant gives PG9000, never a crash.
///
/// Semantics the lowering fixes (docs/ir.md repeats them):
/// - parameters by value: buffers as `ptr addrspace(1)` (readonly/writeonly as the
///   kernel's own accesses allow, never noalias: buffers may alias), scalars by value,
///   bool scalars as i32 (0 = false); bool elements in memory take one byte;
/// - every operation has a defined result for every operand (docs/ir.md, "Results of every
///   operation"); nothing reaches LLVM poison or undefined behaviour: integer + - * wrap;
///   x / 0 is all ones and x % 0 is x; MIN / -1 is MIN and MIN % -1 is 0; shift amounts are
///   taken modulo the bit width; float arithmetic is IEEE with round to nearest even; in the
///   `contract` mode (the default) an f32/f64 multiply feeding an add or subtract may become one
///   fma (nvcc's default), `exact` never contracts, `fast` also approximates division, square
///   root and transcendentals and flushes f32 denormals (ir::FpMode; a kernel's @fp wins);
/// - float -> integer casts saturate (NaN -> 0);
/// - sqrt, floor, ceil, fma, abs, min, max lower to LLVM intrinsics (sqrt is correctly
///   rounded); rsqrt, exp, log, sin, cos, tanh, pow call libdevice (__nv_*f for f32);
/// - `for v in lo..hi step s`: lo, hi and s are evaluated once; s is treated as
///   unsigned; a step of 0 at run time ends the loop after one iteration; the loop never
///   wraps past hi;
/// - atomics are relaxed at device scope (monotonic) unless an order or scope is written, and
///   return the old value; fences are membar.cta/.gl/.sys; assert calls __assertfail and traps;
/// - `checked` (checked mode, docs/ir.md "Memory safety"): every access not proven in bounds for
///   every launch is guarded: outside its array a load gives 0, a store or atomic is skipped (an
///   atomic gives 0), and the launch's record (contract::CheckedRecord) counts it; kernels and
///   device functions take a hidden length per buffer parameter and the record's address;
/// - `unroll_register_tiles` (the optimising levels): a register-tile loop, a `for` of a few
///   constant iterations whose body indexes a local array with its variable, is lowered unrolled
///   (KernelLowering::register_tile_trips), so the array's indices are constants from the start.
[[nodiscard]] std::expected<std::unique_ptr<llvm::Module>, diag::Diagnostics> lower_module(const ir::Module& verified,
                                                                            llvm::LLVMContext& context,
                                                                            const llvm::DataLayout& layout,
                                                                            ir::FpMode fp_mode = ir::FpMode::contract,
                                                                            bool checked = false,
                                                                            bool unroll_register_tiles = false);

}  // namespace ptxgate::codegen
