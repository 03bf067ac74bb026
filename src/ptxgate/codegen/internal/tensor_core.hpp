// Tensor cores (sm_80+): LLVM IR for mma.sync, ldmatrix, cp.async and tf32 rounding through the
// NVPTX intrinsics of LLVM 19 (llvm.nvvm.mma.*, llvm.nvvm.ldmatrix.*, llvm.nvvm.cp.async.*).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include "ptxgate/ir/ast.hpp"

namespace ptxgate::codegen {

/// D = A * B + C of one warp: mma.sync.aligned.m16n8k16.row.col.f32.{bf16|f16}.{bf16|f16}.f32 when
/// `shape` is mma_m16n8k16 (the element type of `a_type` picks bf16 or f16), or
/// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 for mma_m16n8k8. `a`, `b`, `c` are the
/// fragment vectors (docs/ir.md "Tensor cores"); the result is the <4 x float> D fragment.
llvm::Value* emit_mma(llvm::IRBuilder<>& builder, ir::Intrinsic shape, ir::Type a_type, llvm::Value* a,
                      llvm::Value* b, llvm::Value* c);

/// ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 with this lane's 16-byte row at `row`
/// (a shared-memory pointer); the result is bit-cast to `result_type` (2 x count 16-bit lanes).
llvm::Value* emit_ldmatrix(llvm::IRBuilder<>& builder, unsigned count, bool trans, llvm::Value* row,
                           llvm::Type* result_type);

/// cp.async.{ca|cg}.shared.global of `bytes` (4, 8: .ca; 16: .cg) from `source` (global) to
/// `destination` (shared). With `source_bytes` (an i32, clamped to `bytes`), only that many are
/// read and the rest of the destination is zero-filled.
void emit_cp_async(llvm::IRBuilder<>& builder, unsigned bytes, llvm::Value* destination, llvm::Value* source,
                   llvm::Value* source_bytes);
/// cp.async.commit_group.
void emit_cp_async_commit(llvm::IRBuilder<>& builder);
/// cp.async.wait_group N.
void emit_cp_async_wait(llvm::IRBuilder<>& builder, uint32_t groups);
/// cvt.rna.tf32.f32 of an f32, returned as the f32 with those bits (low 13 mantissa bits zero).
llvm::Value* emit_tf32(llvm::IRBuilder<>& builder, llvm::Value* x);

}  // namespace ptxgate::codegen
