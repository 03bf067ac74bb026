// The single guarded launch: validate against live caps (cached verdicts), opt in, call the driver.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ptxgate/backend/context.hpp"
#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/contract/launch_plan.hpp"
#include "ptxgate/validation/launch_shape.hpp"

namespace ptxgate::backend {

/// Counters of one function's launches (for tests and benchmarks).
struct LaunchCounters {
  uint64_t validated = 0;     ///< launches that ran check_launch (launch cache miss)
  uint64_t cached = 0;        ///< launches whose shape the function's launch cache knew
  uint64_t driver_calls = 0;  ///< cuLaunchKernel / cuLaunchCooperativeKernel calls made
  uint64_t blocked = 0;       ///< launches rejected before the driver
};

class LoadedFunction;
class LaunchCache;
struct SteadyKey;

/// Proof that `launch_cuda_function` validated a launch shape of one function and
/// found it launchable: the function, the geometry it launched with (block already
/// resolved from @workgroup), the shared memory, cooperative and stream nullness.
/// Only launch_cuda_function makes one (through its `ticket` out-parameter); the
/// ticket overload below relaunches exactly that shape with new argument values.
class LaunchTicket {
 public:
  LaunchTicket() = default;
  bool valid() const { return function_id_ != 0; }

 private:
  // Tickets are made (cached_ticket, launch_with_shape) and used (relaunch) only by LoadedFunction's
  // private members, which the two launch_cuda_function overloads call.
  friend class LoadedFunction;
  /// The ticket of `shape`, validated launchable with `block`.
  static LaunchTicket of(uint64_t function_id, const validation::LaunchShape& shape,
                         const std::array<unsigned, 3>& block, size_t argument_count);
  /// The same for the shape a SteadyKey stands for.
  static LaunchTicket of(uint64_t function_id, const SteadyKey& key, const std::array<unsigned, 3>& block,
                         size_t argument_count);
  /// The driver call (cuLaunchKernel / cuLaunchCooperativeKernel, with the grid-barrier word
  /// when the kernel needs it) of a shape this ticket proves launchable. Private and a member,
  /// so neither a caller nor argument-dependent lookup reaches it: only the bodies of the two
  /// launch_cuda_function overloads (LoadedFunction::launch_with_shape and ::relaunch), after
  /// their checks, call the driver's launch entry points. `cache_hit`: the launch cache knew the
  /// shape (counted as cached when it reaches the driver or is blocked here).
  [[nodiscard]] static std::expected<void, diag::Diagnostics> drive(Context& ctx, LoadedFunction& fn,
                                                                    const LaunchTicket& ticket,
                                                                    std::span<void* const> args, CUstream stream,
                                                                    bool cache_hit);
  /// drive's driver call with the final argument table (the barrier word appended when needed).
  /// `checked_slot`: checked mode's record slot of the launch (backend/internal/checked_records.hpp),
  /// -1 for an unchecked kernel.
  [[nodiscard]] static std::expected<void, diag::Diagnostics> drive_table(Context& ctx, LoadedFunction& fn,
                                                                          const LaunchTicket& ticket, void** table,
                                                                          CUstream stream, bool cache_hit,
                                                                          int64_t checked_slot = -1);
  /// drive's path for a kernel compiled in checked mode: the hidden parameters (the buffers'
  /// lengths from the ticket, the launch's record) appended, the record read back in checked-launch mode.
  [[gnu::noinline]] [[nodiscard]] static std::expected<void, diag::Diagnostics> drive_checked(
      Context& ctx, LoadedFunction& fn, const LaunchTicket& ticket, std::span<void* const> args, CUstream stream,
      bool cache_hit);
  /// Checked kernels: the buffer sizes the ticket's shape holds (a shape, a steady key or a plan).
  void take_buffer_bytes(const validation::LaunchShape& shape);
  void take_buffer_bytes(const SteadyKey& key);
  void take_buffer_bytes(const contract::LaunchPlan& plan);
  /// The launch this ticket stands for, as a plan (geometry, shared bytes, cooperative), for messages.
  contract::LaunchPlan described() const {
    contract::LaunchPlan p;
    p.grid = {grid_[0], grid_[1], grid_[2]};
    p.block = {block_[0], block_[1], block_[2]};
    p.dynamic_shared_bytes = dynamic_shared_bytes_;
    p.cooperative = cooperative_;
    return p;
  }
  uint64_t function_id_ = 0;
  std::array<unsigned, 3> grid_{0, 0, 0};
  std::array<unsigned, 3> block_{0, 0, 0};
  unsigned dynamic_shared_bytes_ = 0;
  bool cooperative_ = false;
  bool stream_is_null_ = false;
  size_t argument_count_ = 0;
  /// Checked kernels only: the launch's buffer sizes in bytes by buffer parameter (UINT64_MAX: not
  /// known), the values of its hidden length parameters; `buffers_` of them are set.
  uint32_t buffers_ = 0;
  std::array<uint64_t, validation::LaunchShape::kMaxArguments> buffer_bytes_{};
};

/// A resolved CUfunction with what a launch needs: its KernelInfo, its resources
/// from cuFuncGetAttribute, and its launch cache (the launchable shapes launch_cuda_function
/// validated, and the driver's occupancy answers; backend/internal/launch_cache.hpp). Owned by
/// the loaded module; safe to launch from many threads.
class alignas(64) LoadedFunction {
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

  CUfunction handle() const { return handle_; }
  const contract::KernelInfo& info() const { return info_; }
  const contract::KernelResources& resources() const { return resources_; }
  const diag::Location& location() const { return location_; }
  LaunchCounters counters() const;
  /// Unique for the process lifetime: tickets name the function they were issued for.
  uint64_t id() const { return id_; }
  /// The ticket of a launch of `argument_count` arguments whose shape launch_cuda_function
  /// validated launchable before (a launch cache hit), else nothing: no lock, no allocation.
  std::optional<LaunchTicket> cached_ticket(const validation::LaunchShape& shape, size_t argument_count) const;

 private:
  friend std::expected<void, diag::Diagnostics> launch_cuda_function(Context&, LoadedFunction&,
                                                                     const contract::LaunchPlan&,
                                                                     std::span<void* const>, CUstream,
                                                                     diag::Diagnostics*, LaunchTicket*);
  friend std::expected<void, diag::Diagnostics> launch_cuda_function(Context&, LoadedFunction&, const LaunchTicket&,
                                                                     std::span<void* const>, CUstream);
  friend class LaunchTicket;  // drive reads the function's handle, name and counters
  friend class Kernel;        // launches with the shape it built (launch_with_shape)
  /// The body of launch_cuda_function(plan), for a caller that already holds the plan's shape:
  /// `shape` must equal validation::LaunchShape::of(plan). Private: only launch_cuda_function
  /// and Kernel::launch (which builds both from one description of its parameters) call it.
  /// `steady`, when given, is the same shape as Kernel::launch's SteadyKey: a launchable verdict
  /// makes it the launch cache's front. `known_miss`: the caller just missed the launch cache
  /// with `shape` (validating without looking again is always correct).
  [[nodiscard]] static std::expected<void, diag::Diagnostics> launch_with_shape(
      Context& ctx, LoadedFunction& fn, const contract::LaunchPlan& plan, const validation::LaunchShape& shape,
      std::span<void* const> args, CUstream stream, diag::Diagnostics* warnings, LaunchTicket* ticket,
      const SteadyKey* steady = nullptr, bool known_miss = false);
  /// Kernel::launch's path for a shape off the front: when the launch cache knows `shape` (built
  /// by the caller for exactly `args`, no slot null), the launch, as launch_cuda_function(ticket)
  /// makes it, and `steady` (when given) becomes the front; nothing on a miss or a poisoned
  /// context (the caller takes the path that reports them).
  [[nodiscard]] static std::optional<std::expected<void, diag::Diagnostics>> launch_cached(
      Context& ctx, LoadedFunction& fn, const validation::LaunchShape& shape, std::span<void* const> args,
      CUstream stream, const SteadyKey* steady = nullptr);
  /// Kernel::launch's steady path: when `key` (built by the caller for exactly `args`, no slot
  /// null) is the launch cache's front, the launch, as launch_cuda_function(ticket) makes it;
  /// nothing otherwise or in a poisoned context.
  [[nodiscard]] static std::optional<std::expected<void, diag::Diagnostics>> launch_steady(
      Context& ctx, LoadedFunction& fn, const SteadyKey& key, std::span<void* const> args, CUstream stream);
  /// The body of launch_cuda_function(ticket).
  [[nodiscard]] static std::expected<void, diag::Diagnostics> relaunch(Context& ctx, LoadedFunction& fn,
                                                                       const LaunchTicket& ticket,
                                                                       std::span<void* const> args, CUstream stream);
  friend validation::Verdict validate_launch(Context&, LoadedFunction&, const contract::LaunchPlan&, CUstream, bool);
  /// PG3011 unless every buffer in aligned_buffers_ starts at a multiple of its alignment: the
  /// launch cache knows shapes, not addresses, so every launch of such a kernel checks its slots.
  [[gnu::noinline]] [[nodiscard]] std::expected<void, diag::Diagnostics> check_buffer_alignment(
      std::span<void* const> args);
  // What every launch reads comes first, in one cache line of its own.
  CUfunction handle_ = nullptr;
  /// Unique for the process lifetime (never reused), so a ticket of a destroyed function is
  /// never taken for one of a new function at the same address.
  const uint64_t id_;
  std::unique_ptr<LaunchCache> cache_;
  /// Launches the launch cache knew that reached the driver: both cached and driver calls (one
  /// counter where a steady launch would otherwise count two).
  std::atomic<uint64_t> cached_driver_calls_{0};
  std::atomic<uint32_t> log_name_{0};  ///< the name's number in its context's LaunchLog (0: not yet)
  bool checks_alignment_ = false;      ///< aligned_buffers_ is not empty
  bool appends_barrier_word_ = false;  ///< info_.hidden_grid_barrier_param
  bool checked_ = false;               ///< info_.checked: hidden lengths and a record (contract/checked.hpp)
  std::atomic<bool> shared_opt_in_done_{false};
  /// Launches that validated, cache hits that did not reach the driver, other driver calls, blocked.
  std::atomic<uint64_t> validated_{0}, cached_{0}, driver_calls_{0}, blocked_{0};
  contract::KernelInfo info_;
  contract::KernelResources resources_;
  diag::Location location_;
  /// (parameter index, alignment - 1) of each buffer the kernel accesses with vector loads or
  /// stores (ParamInfo::alignment); empty for every other kernel, which then pays one test.
  std::vector<std::pair<uint32_t, uint64_t>> aligned_buffers_;
};

/// Validates `plan` for `fn` on `ctx`'s device with the live caps, the function's
/// attributes and the driver's occupancy answer, without launching. Sets the
/// dynamic shared-memory opt-in on the function first when the plan needs it.
validation::Verdict validate_launch(Context& ctx, LoadedFunction& fn, const contract::LaunchPlan& plan,
                                    CUstream stream, bool report_warnings = true);

/// THE launch: the only code that calls cuLaunchKernel / cuLaunchCooperativeKernel.
/// `args` holds one pointer per user parameter (to the value: a CUdeviceptr for a
/// buffer, the scalar otherwise); the grid-barrier word is appended by the backend
/// for kernels that need it. A plan whose shape (validation::LaunchShape) the function's
/// launch cache knows skips validation (null checks plus the driver call, no allocation);
/// a launchable verdict puts its shape there. Blocked
/// launches return every diagnostic; warnings of a launched plan go to `warnings`
/// when given. Driver failures are PG4002/PG4005, a poisoned context PG4003.
/// When `ticket` is given, a launch that passed validation leaves its ticket there.
[[nodiscard]] std::expected<void, diag::Diagnostics> launch_cuda_function(Context& ctx, LoadedFunction& fn,
                                                            const contract::LaunchPlan& plan,
                                                            std::span<void* const> args, CUstream stream,
                                                            diag::Diagnostics* warnings = nullptr,
                                                            LaunchTicket* ticket = nullptr);

/// Relaunches the shape a ticket proves launchable for `fn`, with new argument
/// values: `args` must describe arguments of the same kinds, types, null-ness and
/// buffer sizes as the validated plan (Kernel::launch compares them before it
/// uses a ticket). A null slot in `args` is PG3004, as on the validating path. A ticket of
/// another function, stream kind or argument count, or a default (never issued) ticket, is an
/// internal error (PG9000) and reaches no driver; a poisoned context is PG4003, driver failures
/// PG4002/PG4005.
[[nodiscard]] std::expected<void, diag::Diagnostics> launch_cuda_function(Context& ctx, LoadedFunction& fn,
                                                            const LaunchTicket& ticket, std::span<void* const> args,
                                                            CUstream stream);

}  // namespace ptxgate::backend
