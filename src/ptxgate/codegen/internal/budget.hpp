// The compile budget (PG2010): a module's instruction count, and its size after inlining and unrolling, estimated before either runs.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include <llvm/IR/Module.h>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::codegen {

/// The loop property the lowering adds to a loop it marks for unrolling when its trip count is
/// a constant: `!{!"ptxgate.trip_count", i64 N}` in the loop's `llvm.loop` metadata.
inline constexpr std::string_view kTripCountProperty = "ptxgate.trip_count";

/// PG2010 when `module` has more LLVM instructions than `budget` (0: no limit) at `stage`
/// ("after inlining", "after optimisation"); the message names the largest function.
[[nodiscard]] std::expected<void, diag::Diagnostics> check_instruction_budget(const llvm::Module& module,
                                                                            uint64_t budget, std::string_view stage);

/// What compiling a module will build, estimated before the optimiser runs.
struct SizeEstimate {
  /// The instructions the kernels will have once every call of a defined function is inlined
  /// and every loop marked for unrolling is unrolled: each instruction counts once per copy, that
  /// is the product of the unroll factors of the loops around it (a complete unroll: its trip
  /// count; `unroll(N)`: N), and a call counts the estimate of its callee.
  uint64_t kernels = 0;
  std::string largest_kernel;   ///< the kernel with the largest estimate
  uint64_t largest = 0;         ///< its estimate
  /// The instructions the bottom-up inliner copies: every function reachable from a kernel is
  /// built with its callees inlined, so a chain of n calls costs about n^2 / 2 bodies.
  uint64_t inlining_work = 0;
};

/// The estimate of `module`, saturating at UINT64_MAX. Linear in the module's size; iterative,
/// so a chain of 10000 calls is no deeper on the stack than one.
[[nodiscard]] SizeEstimate estimate_sizes(const llvm::Module& module);

/// How many times the budget the inliner may copy: copying an instruction costs a few hundred
/// times less than compiling one (a chain of 3000 calls, about 20 million copies, took 8.6 s).
inline constexpr uint64_t kInliningWorkPerBudget = 16;

/// PG2010 when the estimated kernels exceed `budget` (0: no limit), or the inlining work
/// kInliningWorkPerBudget times it: checked before the optimiser runs, so that a nest of complete
/// unrolls (1024 x 1024 x 1024 copies) or a chain of 10000 calls is refused in milliseconds
/// instead of after minutes and gigabytes.
[[nodiscard]] std::expected<void, diag::Diagnostics> check_estimated_budget(const llvm::Module& module, uint64_t budget);

}  // namespace ptxgate::codegen
