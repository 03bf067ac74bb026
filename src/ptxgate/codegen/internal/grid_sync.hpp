// The grid-wide barrier that grid_sync() lowers to, for cooperative launches.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace ptxgate::codegen {

/// Emits a grid-wide barrier at the builder's insertion point (which ends up in a new
/// block). `barrier_word` is the kernel's hidden trailing parameter: a `ptr addrspace(1)`
/// to a u32 owned by the backend, zeroed once at allocation.
///
/// The barrier is the self-resetting scheme of cooperative groups: after a block-wide
/// barrier, thread (0,0,0) of every block adds 1 to the word, except block (0,0,0), which
/// adds 0x80000000 - (blocks - 1); the total added is 0x80000000, so the top bit flips
/// once every block has arrived, and the low 31 bits are back where they started. Each
/// arriving thread spins (volatile loads) until the top bit differs from the value it
/// saw, with membar.gl before the add and after the wait, then a block-wide barrier
/// releases the rest of the block. The word never needs a reset between launches.
void emit_grid_barrier(llvm::IRBuilder<>& builder, llvm::Value* barrier_word);

}  // namespace ptxgate::codegen
