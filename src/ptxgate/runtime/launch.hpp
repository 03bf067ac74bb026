// The single guarded launch: validate against live caps (cached verdicts), opt in, call the driver.
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <vector>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/contract/launch_plan.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/validation/check.hpp"

namespace ptxgate::runtime {

namespace internal {
class LaunchPath;
struct FunctionState;
}  // namespace internal

/// Counters of one function's launches (for tests and benchmarks).
struct LaunchCounters {
  uint64_t validated = 0;     ///< launches that ran check_launch (launch cache miss)
  uint64_t cached = 0;        ///< launches whose shape the function's launch cache knew
  uint64_t driver_calls = 0;  ///< cuLaunchKernel / cuLaunchCooperativeKernel calls made
  uint64_t blocked = 0;       ///< launches rejected before the driver
};

/// Proof that launch_cuda_function validated one launch of one function and found it launchable:
/// the function, the geometry (block resolved from @workgroup), shared memory, cooperative mode,
/// stream kind, argument count, and the values of the scalars the kernel's memory-safety proof
/// uses. Only launch_cuda_function makes one; the ticket overload relaunches that launch with new
/// argument values.
class LaunchTicket {
 public:
  LaunchTicket() = default;
  bool valid() const { return function_id_ != 0; }

 private:
  friend class internal::LaunchPath;
  static constexpr size_t kProofValues = 8;
  uint64_t function_id_ = 0;
  std::array<unsigned, 3> grid_{0, 0, 0};
  std::array<unsigned, 3> block_{0, 0, 0};
  unsigned dynamic_shared_bytes_ = 0;
  bool cooperative_ = false;
  bool stream_is_null_ = false;
  uint32_t argument_count_ = 0;
  uint32_t proof_value_count_ = 0;  ///< the kernel's proof scalars (values kept: at most kProofValues)
  std::array<uint64_t, kProofValues> proof_values_{};
  /// Kernels compiled in checked mode: the buffers' lengths the launch was validated with, which
  /// the ticket's launches pass to the kernel (src/ptxgate/contract/checked.hpp); `checked_buffers_` are set.
  uint32_t checked_buffers_ = 0;
  std::shared_ptr<const std::vector<uint64_t>> checked_lengths_;
};

/// A resolved CUfunction with what a launch needs: its KernelInfo, its resources from
/// cuFuncGetAttribute, its argument binder and its launch cache (the launchable shapes
/// launch_cuda_function validated, and the driver's occupancy answers). Owned by the loaded
/// module; safe to launch from many threads.
class LoadedFunction {
 public:
  /// Resolves `info.name` in `module` and reads its attributes (NUM_REGS,
  /// SHARED_SIZE_BYTES, LOCAL_SIZE_BYTES, MAX_THREADS_PER_BLOCK).
  [[nodiscard]] static std::expected<std::unique_ptr<LoadedFunction>, diag::Diagnostics> resolve(
      Context& ctx, CUmodule module, const contract::KernelInfo& info, diag::Location location = {});
  /// A function whose attributes are given (tests with a fake driver).
  LoadedFunction(CUfunction handle, contract::KernelInfo info, contract::KernelResources resources,
                 diag::Location location = {});
  ~LoadedFunction();
  LoadedFunction(const LoadedFunction&) = delete;
  LoadedFunction& operator=(const LoadedFunction&) = delete;

  CUfunction handle() const;
  const contract::KernelInfo& info() const;
  const contract::KernelResources& resources() const;
  const diag::Location& location() const;
  LaunchCounters counters() const;
  /// Unique for the process lifetime: tickets name the function they were issued for.
  uint64_t id() const;

 private:
  friend class internal::LaunchPath;
  std::unique_ptr<internal::FunctionState> state_;  ///< src/ptxgate/runtime/internal/launch_path.hpp
};

/// Validates `plan` for `fn` on `ctx`'s device with the live caps, the function's attributes and
/// the driver's occupancy answer, without launching. Sets the dynamic shared-memory opt-in on the
/// function first when the plan needs it.
validation::Verdict validate_launch(Context& ctx, LoadedFunction& fn, const contract::LaunchPlan& plan,
                                    CUstream stream, bool report_warnings = true);

/// THE launch: the only code that calls cuLaunchKernel / cuLaunchCooperativeKernel. `args` holds
/// one pointer per user parameter (to the value: a CUdeviceptr for a buffer, the scalar
/// otherwise); the backend appends the hidden arguments (the grid-barrier word) of kernels that
/// need them. The values of the scalars the kernel's memory-safety proof uses are read from their
/// slots. A plan whose shape (validation::LaunchShape, those values included) the function's launch
/// cache knows skips validation (null checks plus the driver call, no allocation); a launchable
/// verdict puts its shape there. Blocked launches return every diagnostic; warnings of a launched
/// plan go to `warnings` when given. Driver failures are PG4002/PG4005, a poisoned context PG4003.
/// When `ticket` is given, a launch that passed validation leaves its ticket there.
[[nodiscard]] std::expected<void, diag::Diagnostics> launch_cuda_function(Context& ctx, LoadedFunction& fn,
                                                                          const contract::LaunchPlan& plan,
                                                                          std::span<void* const> args, CUstream stream,
                                                                          diag::Diagnostics* warnings = nullptr,
                                                                          LaunchTicket* ticket = nullptr);

/// Relaunches the launch a ticket proves launchable for `fn`, with new argument values: `args`
/// must describe arguments of the same kinds, types, null-ness and buffer sizes as the validated
/// plan, and the same values of the scalars the kernel's memory-safety proof uses (another value
/// was never validated: launch through a plan). A null slot in `args` is PG3004, as on the
/// validating path. A ticket of another function, stream kind or argument count, a default
/// (never issued) ticket, or other proof values, is an internal error (PG9000) and reaches no
/// driver; a poisoned context is PG4003, driver failures PG4002/PG4005.
[[nodiscard]] std::expected<void, diag::Diagnostics> launch_cuda_function(Context& ctx, LoadedFunction& fn,
                                                                          const LaunchTicket& ticket,
                                                                          std::span<void* const> args, CUstream stream);

}  // namespace ptxgate::runtime
