// Context: a retained primary context of one device, its live caps, health, tracking and launch log.
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

#include "ptxgate/runtime/device.hpp"
#include "ptxgate/runtime/driver_api.hpp"
#include "ptxgate/runtime/driver_error.hpp"
#include "ptxgate/runtime/launch_log.hpp"
#include "ptxgate/runtime/tracking.hpp"
#include "ptxgate/contract/launch_plan.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

struct PoolAccount;
class CheckedRecords;
class MemoryPool;
class Profiler;
class Stream;

/// A retained primary context of one device, its live caps and its health. Shared
/// by every object created in it; released when the last one goes. Thread-safe.
class alignas(64) Context : public std::enable_shared_from_this<Context> {
 public:
  /// Retains device `ordinal`'s primary context through `api` (the process-wide
  /// driver when null).
  [[nodiscard]] static std::expected<std::shared_ptr<Context>, diag::Diagnostics> open(int ordinal = 0,
                                                                         const DriverApi* api = nullptr);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// The driver table calls go through: the driver's, or, once the context is retired by a reset, a table
  /// that refuses every call (CUDA_ERROR_CONTEXT_IS_DESTROYED) so that no handle of it reaches the driver.
  const DriverApi& api() const { return *api_.load(std::memory_order_acquire); }
  CUcontext handle() const { return context_; }
  CUdevice device() const { return device_; }
  const LiveDevice& live() const { return live_; }
  const validation::DeviceCaps& caps() const { return live_.caps; }
  /// The device's ordinal (cuDeviceGet's numbering).
  int ordinal() const { return live_.ordinal; }
  /// Whether launches and copies of this context may use memory of device `ordinal`: its own
  /// device, or a peer whose access this context enabled (DeviceSet, src/ptxgate/runtime/multi_device.hpp).
  bool can_access(int ordinal) const {
    return ordinal == live_.ordinal ||
           (ordinal >= 0 && ordinal < 64 && (peers_.load(std::memory_order_acquire) >> ordinal & 1u) != 0);
  }
  /// Records that peer access to device `ordinal` (below 64) is enabled in this context.
  void record_peer_access(int ordinal) {
    if (ordinal >= 0 && ordinal < 64) peers_.fetch_or(uint64_t{1} << ordinal, std::memory_order_acq_rel);
  }

  /// Makes this context current on the calling thread (a thread-local compare
  /// when it already is).
  [[nodiscard]] std::expected<void, diag::Diagnostics> make_current();
  /// The entry of every operation that calls the driver in this context: PG4003 (naming the
  /// original error) when the context is poisoned, then the context made current. `call` and
  /// `subject` name the operation in the diagnostic.
  [[nodiscard]] std::expected<void, diag::Diagnostics> enter(std::string_view call, std::string_view subject) {
    if (health_.poisoned()) [[unlikely]]
      return health_.healthy(call, subject);
    return make_current();
  }
  /// enter() for the launch path: `subject()` is formatted only for the diagnostic.
  template <class Subject>
  [[nodiscard]] std::expected<void, diag::Diagnostics> enter_with(std::string_view call, Subject&& subject) {
    if (health_.poisoned()) [[unlikely]]
      return health_.healthy(call, subject());
    return make_current();
  }
  /// The entry of a release (a destructor, freeing memory): the context made current, errors
  /// ignored, since a release must neither fail nor throw (the driver call after it fails alike
  /// in a poisoned context, and its answer is ignored too).
  void enter_to_release() noexcept { (void)make_current(); }

  /// The error boundary: success passes, failure becomes PG4002 (poisoning on
  /// sticky errors). Use through PTXGATE_CU.
  [[nodiscard]] std::expected<void, diag::Diagnostics> check(CUresult r, std::string_view call, std::string_view subject) {
    if (r == CUDA_SUCCESS) [[likely]] return {};
    return failed(r, call, subject);
  }
  /// PG4003 when poisoned (fail fast before a call).
  [[nodiscard]] std::expected<void, diag::Diagnostics> healthy(std::string_view call, std::string_view subject) const {
    return health_.healthy(call, subject);
  }
  bool poisoned() const { return health_.poisoned(); }
  /// Replaced by a reset of its device (reopen): every use is PG4010, nothing of it reaches the driver.
  bool retired() const { return health_.retired(); }

  /// A fresh context of this context's device (what Runtime::reset uses after a fault). Unless a reset
  /// already retired this context, it resets the device's primary context (cuDevicePrimaryCtxReset,
  /// which destroys everything made in it, other libraries' allocations too), then retires every context
  /// of the device in this process (the objects made in them report PG4010 when used and are released
  /// without a driver call) and gives back their retains; then retains the primary context anew.
  /// PG4002 when the reset fails (nothing retired), PG4011 when the driver gives the process no new
  /// context (it keeps a sticky fault for the process, as an H100 with driver 580 does). Not to be called
  /// while other threads use objects of the device.
  [[nodiscard]] std::expected<std::shared_ptr<Context>, diag::Diagnostics> reopen();
  const ContextHealth& health() const { return health_; }

  /// cuCtxSynchronize; reports a sticky error left by an earlier kernel.
  [[nodiscard]] std::expected<void, diag::Diagnostics> synchronize(std::string_view subject = {});

  /// Whether work may run on the legacy default (null) stream in this context: launches with no
  /// stream, the synchronous buffer helpers, events recorded on no stream. Set from
  /// RuntimeOptions::stream_policy by the Runtime that owns the context.
  contract::StreamPolicy stream_policy() const {
    return (launch_options() & kRequireExplicitStream) != 0 ? contract::StreamPolicy::require_explicit
                                                            : contract::StreamPolicy::allow_legacy_default;
  }
  void set_stream_policy(contract::StreamPolicy policy) {
    set_launch_option(kRequireExplicitStream, policy == contract::StreamPolicy::require_explicit);
  }
  /// Whether a launch must be proven memory-safe (LaunchPlan::require_memory_proof): accesses not
  /// proven in bounds block it (PG3802), as does a kernel of another compiler. Set from
  /// RuntimeOptions::require_memory_proof by the Runtime that owns the context.
  bool require_memory_proof() const { return (launch_options() & kRequireMemoryProof) != 0; }
  void set_require_memory_proof(bool on) { set_launch_option(kRequireMemoryProof, on); }
  /// The options above as bits, for the launch path, which keys its verdicts by them in one word.
  static constexpr uint32_t kRequireExplicitStream = 1, kRequireMemoryProof = 2;
  uint32_t launch_options() const { return launch_options_.load(std::memory_order_relaxed); }
  /// PG3002 when `operation` would run on the legacy default stream and the policy forbids it.
  [[nodiscard]] std::expected<void, diag::Diagnostics> legacy_stream_allowed(std::string_view operation) const;
  /// The one check of a stream handed to an operation of this context: PG3002 for a stream that
  /// was moved from or reset, PG4008 for a stream of another context, naming both devices.
  /// `anchor` says what ties the operation to this context ("the kernel is loaded in").
  [[nodiscard]] std::expected<void, diag::Diagnostics> owns(const Stream& stream, std::string_view operation,
                                                            std::string_view anchor) const;
  /// PG4008: `object` of `operation` belongs to `owner`, while `anchor` this context; both devices named.
  diag::Diagnostics foreign_object(std::string_view operation, std::string_view object, const Context& owner,
                                   std::string_view anchor) const;

  /// The dependency tracking of this context's buffers and streams (src/ptxgate/runtime/tracking.hpp).
  Tracker& tracker() { return *tracker_; }

  /// Sequence numbers and the recent launches, for reports of asynchronous faults.
  LaunchLog& launch_log() { return launch_log_; }
  /// Checked launches: every launch synchronises its stream and a fault names that launch (PG4050).
  void set_checked_launches(bool on) { checked_launches_.store(on, std::memory_order_relaxed); }
  bool checked_launches() const { return checked_launches_.load(std::memory_order_relaxed); }
  /// Launch profiling (runtime/launch_profile.hpp): null unless enabled, before the first launch.
  Profiler* profiler() const { return profiler_.get(); }
  void enable_profiling();
  /// The checked-launch step after launch `sequence` was submitted to `stream`: synchronises the
  /// stream; a sticky error is PG4050 naming that launch.
  [[nodiscard]] std::expected<void, diag::Diagnostics> complete_checked_launch(uint64_t sequence, CUstream stream);

  /// The zeroed 4-byte grid-barrier word owned by this context for `stream`,
  /// allocated (and memset to 0) on first use; later calls are a lookup.
  [[nodiscard]] std::expected<CUdeviceptr, diag::Diagnostics> grid_barrier_word(CUstream stream);
  /// The one allocator of grid-barrier words: 4 bytes of device memory set to 0 (cuMemAlloc,
  /// cuMemsetD32). grid_barrier_word's words are freed with the context; a caller that keeps a
  /// word of its own (a graph's cooperative nodes) frees it with cuMemFree. `owner` names it in
  /// diagnostics ("grid barrier word", "graph grid barrier word").
  [[nodiscard]] std::expected<CUdeviceptr, diag::Diagnostics> allocate_barrier_word(std::string_view owner);

  /// Checked mode: the records of checked launches (src/ptxgate/runtime/internal/checked_records.hpp), made on
  /// first use; synchronisations read them (PG3804).
  CheckedRecords& checked_records();
  /// The same, or null before the first checked launch.
  CheckedRecords* checked_records_if_made() const { return checked_records_made_.load(std::memory_order_acquire); }

 private:
  Context() = default;
  void set_launch_option(uint32_t option, bool on) {
    if (on)
      launch_options_.fetch_or(option, std::memory_order_relaxed);
    else
      launch_options_.fetch_and(~option, std::memory_order_relaxed);
  }
  /// The cold half of check(): PG4002 (poisoning on sticky errors); a sticky error while launches
  /// are in flight is a kernel fault, PG4050 naming them.
  [[nodiscard]] std::expected<void, diag::Diagnostics> failed(CUresult r, std::string_view call,
                                                              std::string_view subject);
  // What every launch reads comes first: with the object aligned to a cache line, in one line
  // (health_ begins with its poisoned flag).
  std::atomic<const DriverApi*> api_{nullptr};
  CUcontext context_ = nullptr;
  uint64_t id_ = 0;  ///< unique in the process: what make_current compares (a reset context keeps its handle)
  std::unique_ptr<Tracker> tracker_;
  std::unique_ptr<Profiler> profiler_;
  std::atomic<uint32_t> launch_options_{0};  ///< kRequireExplicitStream | kRequireMemoryProof
  std::atomic<bool> checked_launches_{false};
  ContextHealth health_;
  CUdevice device_ = 0;
  LiveDevice live_;
  std::atomic<uint64_t> peers_{0};  ///< bit d: peer access to device d enabled
  LaunchLog launch_log_;
  std::mutex barrier_mutex_;
  std::map<CUstream, CUdeviceptr> barrier_words_;
  std::unique_ptr<CheckedRecords> checked_records_;
  std::atomic<CheckedRecords*> checked_records_made_{nullptr};
  const DriverApi* driver_ = nullptr;          ///< the driver's table (api_ until retired)
  std::unique_ptr<DriverApi> refusing_;        ///< the table api_ points to once retired
  /// Swaps in the refusing table and marks the health retired (no driver call).
  void retire();
};

/// Calls `ctx.api().FN(args...)` and passes the result through the error boundary
/// with the call's base name: `PTXGATE_CU(ctx, "saxpy", cuMemAlloc, &p, n)`.
#define PTXGATE_CU(ctx, subject, fn, ...) (ctx).check((ctx).api().fn(__VA_ARGS__), #fn, (subject))

/// PG3002: `operation` was given a stream that was moved from or reset (it has no context).
diag::Diagnostics moved_from_stream(std::string_view operation);

}  // namespace ptxgate::runtime
