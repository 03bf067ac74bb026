// NCCL communicators (all local GPUs in one process, or one rank per process with a shared unique
// id) and collectives over typed device spans, validated before NCCL sees them and ordered against
// other streams by the contexts' dependency tracking.
#pragma once

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/runtime/device_buffer.hpp"
#include "ptxgate/runtime/stream.hpp"
#include "ptxgate/runtime/nccl_api.hpp"
#include "ptxgate/runtime/stream_ops.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

/// The element types both NCCL and the IR have (i8 u8 i32 u32 i64 u64 f16 bf16 f32 f64; a type
/// without a C++ counterpart here, f16 and bf16, is reached through CollectiveEnd's `type`).
template <class T>
struct NcclType;
template <> struct NcclType<int8_t> { static constexpr ncclDataType_t value = ncclInt8; };
template <> struct NcclType<uint8_t> { static constexpr ncclDataType_t value = ncclUint8; };
template <> struct NcclType<int32_t> { static constexpr ncclDataType_t value = ncclInt32; };
template <> struct NcclType<uint32_t> { static constexpr ncclDataType_t value = ncclUint32; };
template <> struct NcclType<int64_t> { static constexpr ncclDataType_t value = ncclInt64; };
template <> struct NcclType<uint64_t> { static constexpr ncclDataType_t value = ncclUint64; };
template <> struct NcclType<float> { static constexpr ncclDataType_t value = ncclFloat32; };
template <> struct NcclType<double> { static constexpr ncclDataType_t value = ncclFloat64; };

/// "f32", "i64", ... for messages ("?" for a type outside the table).
std::string_view nccl_type_name(ncclDataType_t type);
/// Bytes per element of the ten types (0 for others).
constexpr size_t nccl_type_size(ncclDataType_t type) {
  switch (type) {
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    default: return 0;
  }
}

/// NCCL's built-in reductions (values as ncclRedOp_t).
enum class ReduceOp : int { sum = ncclSum, prod = ncclProd, max = ncclMax, min = ncclMin, avg = ncclAvg };

/// The 128-byte id every rank of one communicator starts from: made by one process
/// (create), passed to the others as 256 hex digits in a file or an environment variable.
struct UniqueId {
  ncclUniqueId id{};
  /// ncclGetUniqueId through `api` (the process-wide NCCL when null).
  [[nodiscard]] static std::expected<UniqueId, diag::Diagnostics> create(const NcclApi* api = nullptr);
  std::string to_hex() const;
  /// PG4205 unless `text` is exactly 256 hex digits (surrounding white space ignored).
  [[nodiscard]] static std::expected<UniqueId, diag::Diagnostics> from_hex(std::string_view text);
  /// Writes the hex text to `path` (a new file, renamed into place so readers never see half of it).
  [[nodiscard]] std::expected<void, diag::Diagnostics> write_file(const std::filesystem::path& path) const;
  [[nodiscard]] static std::expected<UniqueId, diag::Diagnostics> read_file(const std::filesystem::path& path);
  /// From environment variable `name` (default PTXGATE_NCCL_ID).
  [[nodiscard]] static std::expected<UniqueId, diag::Diagnostics> from_env(const char* name = "PTXGATE_NCCL_ID");
};

/// How a communicator matches its collectives across ranks and watches them (docs/nccl.md,
/// "Matched collectives and the watchdog").
struct CommunicatorOptions {
  /// Checked mode: before every collective (or group) the ranks exchange a fingerprint of their
  /// call — its number, operation, element type, count, reduction, root or peers — on a second
  /// communicator split from this one, and a call that differs across ranks is PG4213 on every
  /// rank before NCCL sees it (nothing hangs, no data changes). Off by default, in debug builds
  /// too: an exchange costs tens of microseconds per call (docs/nccl.md has the measurements).
  /// $PTXGATE_NCCL_CHECKED=1|0 overrides it at run time, so a program can be checked unchanged.
  bool checked = false;
  /// The watchdog: a collective, or a fingerprint exchange, not complete after this long is PG4214
  /// naming it, its number and (checked mode) the ranks that did not arrive, and the communicator
  /// is aborted (ncclCommAbort) so the process can go on or exit. Zero: no watchdog.
  /// $PTXGATE_NCCL_TIMEOUT_MS overrides.
  std::chrono::milliseconds timeout{0};
  /// Receives the watchdog's report (on its thread) and the report of a finalize the destructor
  /// ran; standard error when empty.
  std::function<void(const diag::Diagnostics&)> on_failure;
};

namespace internal {
struct CheckedComm;
class Watchdog;
struct CommunicatorAccess;
}  // namespace internal

/// One rank of an NCCL communicator, bound to one context (device). RAII: destroyed with
/// ncclCommDestroy, or ncclCommAbort once it failed. Health is checked at every collective and
/// at synchronize(): an asynchronous NCCL error aborts the communicator (no hang on a failed
/// peer) and every later call on it is PG4204 naming the error and the collective that saw it.
class alignas(64) Communicator {
 public:
  /// One communicator per context, all in this process (ncclCommInitAll); rank i is contexts[i].
  [[nodiscard]] static std::expected<std::vector<std::unique_ptr<Communicator>>, diag::Diagnostics> init_all(
      std::span<const std::shared_ptr<Context>> contexts, const CommunicatorOptions& options = {},
      const NcclApi* api = nullptr);
  /// Rank `rank` of `nranks` on `ctx`'s device (ncclCommInitRank; blocks until every rank joined).
  [[nodiscard]] static std::expected<std::unique_ptr<Communicator>, diag::Diagnostics> init_rank(
      std::shared_ptr<Context> ctx, int nranks, int rank, const UniqueId& id, const CommunicatorOptions& options = {},
      const NcclApi* api = nullptr);
  /// Checked mode, one rank per process, a watchdog set and not yet finalized or failed: finalize()
  /// first (its report goes to on_failure). Then ncclCommDestroy, or ncclCommAbort once it failed.
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  int device() const { return device_; }
  Context& context() const { return *ctx_; }
  ncclComm_t handle() const { return comm_; }
  const NcclApi& api() const { return *api_; }

  /// PG4204 when the communicator failed (without calling NCCL), else ncclCommGetAsyncError:
  /// an error aborts the communicator and is PG4204 naming `what` (the collective that saw it).
  [[nodiscard]] std::expected<void, diag::Diagnostics> healthy(std::string_view what);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  /// Waits for `stream`'s work, polling NCCL's asynchronous error meanwhile: a failed peer aborts
  /// the communicator (PG4204) instead of hanging.
  [[nodiscard]] std::expected<void, diag::Diagnostics> synchronize(const Stream& stream);
  /// ncclCommAbort now; later calls are PG4204 with `reason`.
  void abort(std::string reason) noexcept;

  /// Whether checked mode is on (after the environment's override).
  bool checked() const { return options_.checked; }
  /// The watchdog's timeout (zero: none), after the environment's override.
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  /// Calls made so far (collectives and groups): the number the next one's fingerprint carries is this + 1.
  uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }
  /// The end of this rank's use of the communicator. Checked mode: every rank must finalize as its
  /// next call, else PG4213 on every rank (naming the call the others made instead) — a rank that
  /// leaves early is reported, not waited for. Later collectives are PG4204.
  [[nodiscard]] std::expected<void, diag::Diagnostics> finalize();
  /// finalize() for several ranks of this process at once (one exchange, as a group).
  [[nodiscard]] static std::expected<void, diag::Diagnostics> finalize_all(std::span<Communicator* const> comms);

  /// The error boundary for an NCCL result: PG4203 naming the call, the error and NCCL's last
  /// error text; an error that is not a usage error also fails the communicator.
  [[nodiscard]] std::expected<void, diag::Diagnostics> check(ncclResult_t r, std::string_view call, std::string_view what);

 private:
  friend struct internal::CommunicatorAccess;
  Communicator();
  /// Marks the communicator failed with `reason` (later calls: PG4204) and `report` (what the
  /// call that saw it, or synchronize, returns); aborts NCCL's communicators when `abort_nccl`,
  /// else leaves them to be destroyed (a mismatch: every rank stopped before NCCL saw the call).
  void fail(std::string reason, diag::Diagnostics report, bool abort_nccl) noexcept;
  /// healthy() with mutex_ already held (the issue path takes it once per call).
  [[nodiscard]] std::expected<void, diag::Diagnostics> healthy_locked(std::string_view what);
  /// Resolves the options (environment overrides), makes the fingerprint communicators and the
  /// watchdogs of `comms` (one group).
  [[nodiscard]] static std::expected<void, diag::Diagnostics> set_up(std::span<Communicator* const> comms,
                                                                     const CommunicatorOptions& options);
  std::shared_ptr<Context> ctx_;
  const NcclApi* api_ = nullptr;
  ncclComm_t comm_ = nullptr;
  int rank_ = 0, nranks_ = 0, device_ = 0;
  std::atomic<bool> failed_{false};
  bool aborted_ = false;             ///< failed with ncclCommAbort (else stopped: destroyed normally)
  bool one_rank_per_process_ = false; ///< made by init_rank
  bool finalized_ = false;
  std::atomic<uint64_t> calls_{0};
  /// Held around every NCCL call on this communicator and its fingerprint communicator, and while
  /// it fails: the watchdog aborts from its own thread.
  mutable std::recursive_mutex mutex_;
  std::unique_ptr<internal::CheckedComm> checked_;
  std::unique_ptr<internal::Watchdog> watchdog_;
  CommunicatorOptions options_;  // what a collective reads ends here: two cache lines
  std::string failure_;
  diag::Diagnostics failure_report_;
};

/// One buffer argument of a collective, untyped: what the typed overloads reduce to.
struct CollectiveEnd {
  const DeviceBuffer* buffer = nullptr;
  size_t first = 0;   ///< elements from the buffer's start
  size_t count = 0;   ///< elements
  ncclDataType_t type = ncclFloat32;

  template <class T>
  static CollectiveEnd of(DeviceSpan<T> s) {
    return {&s.buffer(), s.first(), s.size(), NcclType<T>::value};
  }
};

/// The collectives, by kind; `validate_collective` checks one before NCCL sees it.
enum class CollectiveKind : uint8_t { all_reduce, broadcast, reduce, all_gather, reduce_scatter, send, recv };
/// "all-reduce", "send", ... for messages.
constexpr std::string_view collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce: return "all-reduce";
    case CollectiveKind::broadcast: return "broadcast";
    case CollectiveKind::reduce: return "reduce";
    case CollectiveKind::all_gather: return "all-gather";
    case CollectiveKind::reduce_scatter: return "reduce-scatter";
    case CollectiveKind::send: return "send";
    case CollectiveKind::recv: return "recv";
  }
  return "?";
}

struct Collective {
  CollectiveKind kind = CollectiveKind::all_reduce;
  CollectiveEnd send;  ///< unused by recv
  CollectiveEnd recv;  ///< unused by send
  int op = ncclSum;    ///< reductions
  int root = 0;        ///< broadcast and reduce: the root rank; send and recv: the peer
};

/// Every rule, all reported at once: element types equal (PG4206), counts fit their buffers and
/// each other, ×ranks for gather and scatter (PG4207), buffers and stream on the communicator's
/// device (PG4208), overlap only as NCCL allows in place (PG4209), the reduction valid (PG4210),
/// root or peer a rank (PG4211). Does not call NCCL.
[[nodiscard]] std::expected<void, diag::Diagnostics> validate_collective(const Communicator& comm, const Stream& stream,
                                                                         const Collective& c);

/// Validates `c`, checks the communicator's health, and issues it on `stream` through the
/// context's dependency tracking (it reads its send range and writes its receive range).
[[nodiscard]] std::expected<void, diag::Diagnostics> run_collective(Communicator& comm, const Stream& stream,
                                                                    const Collective& c);

template <class T>
[[nodiscard]] std::expected<void, diag::Diagnostics> all_reduce(Communicator& comm, const Stream& s, DeviceSpan<T> send,
                                                                DeviceSpan<T> recv, ReduceOp op = ReduceOp::sum) {
  return run_collective(comm, s, {CollectiveKind::all_reduce, CollectiveEnd::of(send), CollectiveEnd::of(recv),
                                  static_cast<int>(op), 0});
}
/// Root's `send` to every rank's `recv` (same count; in place when they are the same range).
template <class T>
[[nodiscard]] std::expected<void, diag::Diagnostics> broadcast(Communicator& comm, const Stream& s, DeviceSpan<T> send,
                                                               DeviceSpan<T> recv, int root) {
  return run_collective(comm, s, {CollectiveKind::broadcast, CollectiveEnd::of(send), CollectiveEnd::of(recv), 0, root});
}
template <class T>
[[nodiscard]] std::expected<void, diag::Diagnostics> reduce(Communicator& comm, const Stream& s, DeviceSpan<T> send,
                                                            DeviceSpan<T> recv, int root, ReduceOp op = ReduceOp::sum) {
  return run_collective(comm, s, {CollectiveKind::reduce, CollectiveEnd::of(send), CollectiveEnd::of(recv),
                                  static_cast<int>(op), root});
}
/// Every rank's `send` (n elements) into `recv` (n × ranks), ordered by rank.
template <class T>
[[nodiscard]] std::expected<void, diag::Diagnostics> all_gather(Communicator& comm, const Stream& s, DeviceSpan<T> send,
                                                                DeviceSpan<T> recv) {
  return run_collective(comm, s, {CollectiveKind::all_gather, CollectiveEnd::of(send), CollectiveEnd::of(recv), 0, 0});
}
/// `send` (n × ranks) reduced across ranks; rank r receives block r (n elements).
template <class T>
[[nodiscard]] std::expected<void, diag::Diagnostics> reduce_scatter(Communicator& comm, const Stream& s,
                                                                    DeviceSpan<T> send, DeviceSpan<T> recv,
                                                                    ReduceOp op = ReduceOp::sum) {
  return run_collective(comm, s, {CollectiveKind::reduce_scatter, CollectiveEnd::of(send), CollectiveEnd::of(recv),
                                  static_cast<int>(op), 0});
}

/// ncclGroupStart/ncclGroupEnd around point-to-point calls (and collectives of several local
/// communicators): each call is validated when added; end() issues them all in one group.
class Group {
 public:
  Group() = default;
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  template <class T>
  [[nodiscard]] std::expected<void, diag::Diagnostics> send(Communicator& comm, const Stream& s, DeviceSpan<T> data,
                                                            int peer) {
    return add(comm, s, {CollectiveKind::send, CollectiveEnd::of(data), {}, 0, peer});
  }
  template <class T>
  [[nodiscard]] std::expected<void, diag::Diagnostics> recv(Communicator& comm, const Stream& s, DeviceSpan<T> data,
                                                            int peer) {
    return add(comm, s, {CollectiveKind::recv, {}, CollectiveEnd::of(data), 0, peer});
  }
  /// Validates `c` and keeps it for end(). PG4212 after end().
  [[nodiscard]] std::expected<void, diag::Diagnostics> add(Communicator& comm, const Stream& s, const Collective& c);
  /// Issues every added call between ncclGroupStart and ncclGroupEnd, taking each
  /// communicator's lock once for its health check and its calls. PG4212 when called twice.
  [[nodiscard]] std::expected<void, diag::Diagnostics> end();
  size_t size() const { return size_; }

 private:
  struct Call {
    Communicator* comm;
    const Stream* stream;
    Collective c;
  };
  /// The first kInline calls live in the group itself (a group over up to 8 ranks allocates
  /// nothing: one process issues its ranks' collectives as a group per call); later ones in `more_`.
  static constexpr size_t kInline = 8;
  union Slot {
    Slot() {}  // left unconstructed: add() constructs the call in place
    Call call;
  };
  const Call& at(size_t i) const { return i < kInline ? inline_[i].call : more_[i - kInline]; }
  Slot inline_[kInline];
  std::vector<Call> more_;
  size_t size_ = 0;
  bool ended_ = false;
};

}  // namespace ptxgate::runtime
