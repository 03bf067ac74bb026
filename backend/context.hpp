// RAII over the driver: the primary context, non-blocking streams, device and pinned buffers, events.
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <map>

#include "ptxgate/backend/device.hpp"
#include "ptxgate/backend/driver_api.hpp"
#include "ptxgate/backend/driver_error.hpp"
#include "ptxgate/backend/launch_log.hpp"
#include "ptxgate/backend/tracking.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/contract/launch_plan.hpp"

namespace ptxgate::backend {

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
  /// device, or a peer whose access this context enabled (DeviceSet, backend/multi_device.hpp).
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
  contract::StreamPolicy stream_policy() const { return stream_policy_.load(std::memory_order_relaxed); }
  void set_stream_policy(contract::StreamPolicy policy) { stream_policy_.store(policy, std::memory_order_relaxed); }
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

  /// The dependency tracking of this context's buffers and streams (backend/tracking.hpp).
  Tracker& tracker() { return *tracker_; }

  /// Sequence numbers and the recent launches, for reports of asynchronous faults.
  LaunchLog& launch_log() { return launch_log_; }
  /// Checked launches: every launch synchronises its stream and a fault names that launch (PG4050).
  void set_checked_launches(bool on) { checked_launches_.store(on, std::memory_order_relaxed); }
  bool checked_launches() const { return checked_launches_.load(std::memory_order_relaxed); }
  /// Launch profiling (backend/profile.hpp): null unless enabled, before the first launch.
  Profiler* profiler() const { return profiler_.get(); }
  void enable_profiling();
  /// The checked-launch step after launch `sequence` was submitted to `stream`: synchronises the
  /// stream; a sticky error is PG4050 naming that launch.
  [[nodiscard]] std::expected<void, diag::Diagnostics> complete_checked_launch(uint64_t sequence, CUstream stream);

  /// The zeroed 4-byte grid-barrier word owned by this context for `stream`,
  /// allocated (and memset to 0) on first use; later calls are a lookup.
  [[nodiscard]] std::expected<CUdeviceptr, diag::Diagnostics> grid_barrier_word(CUstream stream);

  /// Checked mode: the records of checked launches (backend/internal/checked_records.hpp), made on
  /// first use; synchronisations read them (PG3804).
  CheckedRecords& checked_records();
  /// The same, or null before the first checked launch.
  CheckedRecords* checked_records_if_made() const { return checked_records_made_.load(std::memory_order_acquire); }

 private:
  Context() = default;
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
  std::atomic<contract::StreamPolicy> stream_policy_{contract::StreamPolicy::allow_legacy_default};
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

/// The one ownership of a driver resource made in a context, for the handle types below (stream,
/// device memory, pinned memory, event): move-only, the context kept alive while the resource
/// lives, released exactly once by `Resource::release(Context&)` (which ignores errors, so it is
/// safe in a poisoned context and never throws). `Resource` is a value type whose default value
/// holds nothing (`held()` false); moving from an Owned leaves that value behind.
template <class Resource>
class Owned {
 public:
  Owned() = default;
  Owned(std::shared_ptr<Context> ctx, Resource resource) noexcept
      : ctx_(std::move(ctx)), resource_(std::move(resource)) {}
  Owned(Owned&& o) noexcept : ctx_(std::move(o.ctx_)), resource_(std::exchange(o.resource_, Resource{})) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      ctx_ = std::move(o.ctx_);
      resource_ = std::exchange(o.resource_, Resource{});
    }
    return *this;
  }
  ~Owned() { reset(); }
  /// Releases the resource now.
  void reset() noexcept {
    if (ctx_ && resource_.held()) resource_.release(*ctx_);
    resource_ = Resource{};
    ctx_.reset();
  }
  const Resource& operator*() const { return resource_; }
  /// The resource itself, for its owner to change what it records (never to release it).
  Resource& get() { return resource_; }
  const Resource* operator->() const { return &resource_; }
  Context* context() const { return ctx_.get(); }
  const std::shared_ptr<Context>& shared_context() const { return ctx_; }

 private:
  std::shared_ptr<Context> ctx_;
  Resource resource_{};
};

/// A non-blocking stream (CU_STREAM_NON_BLOCKING). Move-only. Destroying it with work pending is
/// safe: the work completes, and tracked buffers it used keep a point of it to wait for.
class Stream {
 public:
  [[nodiscard]] static std::expected<Stream, diag::Diagnostics> create(std::shared_ptr<Context> ctx);
  /// A stream made elsewhere in `ctx` (PyTorch's, CuPy's), used without owning it: reset() and
  /// the destructor forget it and never destroy it. The caller vouches that it is of `ctx`.
  static Stream borrow(std::shared_ptr<Context> ctx, CUstream handle);
  Stream() = default;
  /// Releases the resource now (errors ignored; safe in a poisoned context).
  void reset() noexcept { owned_.reset(); }
  CUstream handle() const { return owned_->stream; }
  Context* context() const { return owned_.context(); }
  /// False for a borrowed stream.
  bool owned() const { return owned_->owned; }
  [[nodiscard]] std::expected<void, diag::Diagnostics> synchronize();

 private:
  struct Handle {
    CUstream stream = nullptr;
    bool owned = true;  ///< false: borrowed, forgotten on release, never destroyed
    bool held() const { return stream != nullptr; }
    void release(Context& ctx) noexcept;
  };
  Owned<Handle> owned_;
};

/// The element type of a C++ type as a buffer holds it (f32 for float, u64 for uint64_t, ...);
/// void_ for types with no kernel counterpart (std::byte, bytes of a struct): untyped.
template <class T>
constexpr ir::Type element_type_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return ir::Type::f32;
  else if constexpr (std::is_same_v<U, double>) return ir::Type::f64;
  else if constexpr (std::is_same_v<U, int32_t>) return ir::Type::i32;
  else if constexpr (std::is_same_v<U, uint32_t>) return ir::Type::u32;
  else if constexpr (std::is_same_v<U, int64_t> || std::is_same_v<U, long long>) return ir::Type::i64;
  else if constexpr (std::is_same_v<U, uint64_t> || std::is_same_v<U, unsigned long long>) return ir::Type::u64;
  else return ir::Type::void_;
}

/// Device memory of a known size, with its access history when the context tracks dependencies,
/// and an element type: a buffer allocated for floats binds only to `f32[]` parameters (PG3010)
/// and is viewed only as floats (PG4009); an untyped buffer (ir::Type::void_, from raw bytes)
/// binds to any buffer parameter. The explicit escape hatch is a byte view (stream_ops.hpp's
/// `as_bytes`), which is untyped whatever the buffer holds.
/// Move-only. Destroying it while pending work uses it is safe: the memory is freed after that work.
class DeviceBuffer {
 public:
  /// Allocates `bytes` (at least 1) of device memory holding elements of `element` (void_: untyped).
  [[nodiscard]] static std::expected<DeviceBuffer, diag::Diagnostics> allocate(
      std::shared_ptr<Context> ctx, size_t bytes, std::string_view what = "buffer", ir::Type element = ir::Type::void_);
  /// Takes ownership of `pointer` from `kind`'s allocator (stream-ordered memory: made on
  /// `home`, the stream it is freed on when the context does not track dependencies).
  static DeviceBuffer adopt(std::shared_ptr<Context> ctx, CUdeviceptr pointer, size_t bytes, MemoryKind kind,
                            CUstream home = nullptr, ir::Type element = ir::Type::void_);
  DeviceBuffer() = default;
  /// Releases the resource now (errors ignored; safe in a poisoned context).
  void reset() noexcept { owned_.reset(); }
  CUdeviceptr pointer() const { return owned_->pointer; }
  size_t size_bytes() const { return owned_->bytes; }
  Context* context() const { return owned_.context(); }
  MemoryKind kind() const { return owned_->kind; }
  /// What the buffer holds: f32, u64, ..., or void_ for untyped memory.
  ir::Type element_type() const { return owned_->element; }
  /// Declares what the buffer holds (memory allocated untyped, e.g. from a pool): explicit, like
  /// every other way of changing how the memory is typed.
  void retype(ir::Type element) { owned_.get().element = element; }
  /// PG4009 when `operation` reads or writes this buffer through a view of element type `view`
  /// and both are typed but differ; untyped buffers and untyped (byte) views pass.
  [[nodiscard]] std::expected<void, diag::Diagnostics> viewable_as(ir::Type view, std::string_view operation) const;
  /// The access history (null when the context does not track dependencies).
  BufferTrack* track() const { return owned_->track.get(); }
  const std::shared_ptr<BufferTrack>& shared_track() const { return owned_->track; }

  /// Synchronous copies (the whole of `host`, which must fit) and fill, on the legacy default
  /// stream: tracked, so they come after the work of other streams that conflicts with them and
  /// later work on other streams comes after them. PG3002 when the context's stream policy
  /// forbids the legacy default stream (use copy_async / fill_async on a stream then).
  [[nodiscard]] std::expected<void, diag::Diagnostics> upload(std::span<const std::byte> host);
  [[nodiscard]] std::expected<void, diag::Diagnostics> download(std::span<std::byte> host) const;
  [[nodiscard]] std::expected<void, diag::Diagnostics> fill_bytes(uint8_t value);

 private:
  struct Handle {
    CUdeviceptr pointer = 0;
    size_t bytes = 0;
    MemoryKind kind = MemoryKind::device;
    ir::Type element = ir::Type::void_;
    CUstream home = nullptr;  ///< stream-ordered memory: the stream it was made on
    std::shared_ptr<BufferTrack> track;
    std::shared_ptr<PoolAccount> pool_account;  ///< the live-byte count of the pool it came from
    bool held() const { return pointer != 0; }
    void release(Context& ctx) noexcept;
  };
  Owned<Handle> owned_;
  friend class MemoryPool;
};

/// Page-locked host memory (cuMemAllocHost), for asynchronous copies, with its access history when
/// the context tracks dependencies. Move-only; freed after pending copies that use it.
class HostBuffer {
 public:
  [[nodiscard]] static std::expected<HostBuffer, diag::Diagnostics> allocate(std::shared_ptr<Context> ctx, size_t bytes);
  HostBuffer() = default;
  /// Releases the resource now (errors ignored; safe in a poisoned context).
  void reset() noexcept { owned_.reset(); }
  /// The memory as it is, without waiting (for callers that synchronise themselves).
  std::byte* data() const { return owned_->data; }
  size_t size_bytes() const { return owned_->bytes; }
  Context* context() const { return owned_.context(); }
  BufferTrack* track() const { return owned_->track.get(); }

  /// Waits until pending copies that write this buffer are complete, then gives its elements to read.
  template <class T>
  [[nodiscard]] std::expected<std::span<const T>, diag::Diagnostics> read() const {
    if (auto ok = wait_for_device(AccessMode::read); !ok) return std::unexpected(ok.error());
    return std::span<const T>(reinterpret_cast<const T*>(data()), size_bytes() / sizeof(T));
  }
  /// Waits until pending copies that read or write this buffer are complete, then gives its elements to write.
  template <class T>
  [[nodiscard]] std::expected<std::span<T>, diag::Diagnostics> write() {
    if (auto ok = wait_for_device(AccessMode::write); !ok) return std::unexpected(ok.error());
    return std::span<T>(reinterpret_cast<T*>(data()), size_bytes() / sizeof(T));
  }
  /// Blocks until device work that conflicts with the host accessing the memory (`mode`) is complete.
  [[nodiscard]] std::expected<void, diag::Diagnostics> wait_for_device(AccessMode mode) const;

 private:
  struct Handle {
    std::byte* data = nullptr;
    size_t bytes = 0;
    std::shared_ptr<BufferTrack> track;
    bool held() const { return data != nullptr; }
    void release(Context& ctx) noexcept;
  };
  Owned<Handle> owned_;
};

/// A CUDA event with timing enabled. Move-only.
class Event {
 public:
  [[nodiscard]] static std::expected<Event, diag::Diagnostics> create(std::shared_ptr<Context> ctx);
  Event() = default;
  /// Releases the resource now (errors ignored; safe in a poisoned context).
  void reset() noexcept { owned_.reset(); }
  CUevent handle() const { return owned_->event; }
  Context* context() const { return owned_.context(); }
  /// Records the event on `stream`, or on the legacy default stream when null (PG3002 when the
  /// stream policy forbids it); a stream of another context is PG4008.
  [[nodiscard]] std::expected<void, diag::Diagnostics> record(const Stream* stream);
  [[nodiscard]] std::expected<void, diag::Diagnostics> synchronize();
  /// Milliseconds from `start` to this event (both recorded and complete); `start` of another
  /// context is PG4008.
  [[nodiscard]] std::expected<float, diag::Diagnostics> elapsed_ms_since(const Event& start);

 private:
  struct Handle {
    CUevent event = nullptr;
    bool held() const { return event != nullptr; }
    void release(Context& ctx) noexcept;
  };
  Owned<Handle> owned_;
};

}  // namespace ptxgate::backend
