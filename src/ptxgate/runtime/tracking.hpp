// Automatic dependencies between streams: every buffer remembers its last writer and its readers
// since; work on one stream waits for conflicting work on another (cuStreamWaitEvent), events are
// recorded only when another stream or the host needs them, and a buffer freed while work still
// uses it is freed after that work.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"

namespace ptxgate::runtime {

class Context;

/// How an operation uses a buffer. Kernel parameters: `in` reads, `out` and `inout` write
/// (atomics need `inout`); copies read their source and write their destination.
enum class AccessMode : uint8_t { read, write };

/// What a kernel does to a buffer parameter declared `access`: `in` reads; `out` and `inout`
/// write (a write is ordered after earlier reads and writes, so it covers reading too).
constexpr AccessMode access_mode(ir::Access access) {
  return access == ir::Access::in ? AccessMode::read : AccessMode::write;
}

/// Where a tracked buffer's memory came from, which says how it goes back.
enum class MemoryKind : uint8_t {
  device,          ///< cuMemAlloc: freed with cuMemFree once no pending work uses it
  stream_ordered,  ///< a memory pool: freed with cuMemFreeAsync, ordered after the work that uses it
  pinned_host,     ///< cuMemAllocHost: freed with cuMemFreeHost once no pending work uses it
};

/// One buffer's access history and memory (defined in tracking.cpp). Shared by the buffer and by
/// the graphs that use it; `alive` says whether the buffer still exists.
struct BufferTrack;

/// Whether `track` belongs to a buffer that still exists (graphs check before a replay).
bool track_alive(const BufferTrack& track);
/// Shared ownership of a buffer's history from the pointer an Arg or CopyEnd carries (graphs keep
/// the histories of the buffers their nodes use, to check them before each replay).
std::shared_ptr<BufferTrack> share_track(BufferTrack& track);

/// One buffer an operation uses, and how.
struct BufferAccess {
  BufferTrack* track = nullptr;  ///< null: not tracked (ignored)
  AccessMode mode = AccessMode::read;
};

/// What the tracker did (tests and benchmarks).
struct TrackerCounters {
  uint64_t submissions = 0;      ///< tracked operations submitted
  uint64_t events_recorded = 0;  ///< cuEventRecord calls (only where another stream or the host needed one)
  uint64_t stream_waits = 0;     ///< cuStreamWaitEvent calls
  uint64_t host_waits = 0;       ///< cuEventSynchronize calls for host access
  uint64_t deferred_frees = 0;   ///< frees postponed because pending work used the buffer
  uint64_t ordered_frees = 0;    ///< stream-ordered frees placed after the work using the buffer
};

/// Per-context dependency tracking. Thread-safe: one lock, taken only by operations that touch
/// tracked buffers. Work on one stream never records an event or waits; an event is recorded on
/// a stream only when another stream (or the host, or a deferred free) needs a point of it, and a
/// stream waits on another at most once per point it needs.
class alignas(64) Tracker {
 public:
  explicit Tracker(Context& ctx);
  ~Tracker();
  Tracker(const Tracker&) = delete;
  Tracker& operator=(const Tracker&) = delete;

  /// Off: new buffers get no history, launches and copies add no waits, and buffers are freed at
  /// once (users who order their streams themselves). Set before buffers are created.
  void set_enabled(bool enabled) { enabled_.store(enabled, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  /// A history for a new buffer of `kind` at `address` (a device pointer, or a host address for
  /// pinned memory). Null when tracking is off. A stream-ordered allocation is then recorded as a
  /// write on its stream (submit with no driver call), so other streams wait for it.
  std::shared_ptr<BufferTrack> track(MemoryKind kind, uint64_t address);

  /// Submits one operation on `stream` that uses `accesses`: makes the stream wait for the
  /// conflicting work of other streams, calls `op` (the driver call, returning
  /// std::expected<void, diag::Diagnostics>), and when it succeeds records the accesses. An `op`
  /// that fails or throws leaves no record.
  template <class Op>
  [[nodiscard, gnu::always_inline]] std::expected<void, diag::Diagnostics> submit(
      CUstream stream, std::span<const BufferAccess> accesses, Op&& op) {
    std::lock_guard lock(mutex_);
    const uint32_t id = stream == last_stream_ ? last_id_ : stream_locked(stream);
    // The common case is one pass: every earlier use is on this stream, complete or already waited
    // for, and the submission is recorded at once, then taken back if `op` fails or throws (under
    // the lock, no other thread sees it in between). Otherwise the stream waits first, and `op`'s
    // success is recorded after it.
    const bool ordered = accesses.size() <= kUndoCapacity && order_and_record_locked(id, accesses);
    if (!ordered) [[unlikely]]
      if (auto ok = wait_locked(id, accesses); !ok) return ok;
    UndoOnThrow undo_on_throw{*this, id, accesses, ordered};
    auto done = op();
    undo_on_throw.armed = false;
    if (ordered) [[likely]] {
      if (!done) [[unlikely]]
        undo_locked(id, accesses);
      else if (!deferred_.empty()) [[unlikely]]
        count_for_reclaim_locked();
    } else if (done) {
      record_locked(id, accesses);
    }
    return done;
  }

  /// The host is about to read (or write) `track`'s memory: blocks until the conflicting device
  /// work is complete (its last writer; for a write also its readers).
  [[nodiscard]] std::expected<void, diag::Diagnostics> host_access(BufferTrack& track, AccessMode mode,
                                                                   std::string_view what);

  /// The buffer is gone: its memory is freed now when no pending work uses it, with cuMemFreeAsync
  /// on a stream that waits for that work (stream-ordered memory), or once that work is complete
  /// (reclaimed by later tracker calls, at the latest when the context goes). Never fails.
  void release(std::shared_ptr<BufferTrack> track) noexcept;

  /// Stream and context synchronisation tell the tracker what is known complete:
  /// `mark = before_sync(stream)`, the driver's synchronise, then `after_sync(stream, mark)`.
  uint64_t before_sync(CUstream stream);
  void after_sync(CUstream stream, uint64_t mark);
  /// The same for cuCtxSynchronize (every stream).
  std::vector<uint64_t> before_context_sync();
  void after_context_sync(const std::vector<uint64_t>& marks);
  /// `stream` is about to be destroyed: a point of its pending work is kept for later waits.
  void stream_destroyed(CUstream stream) noexcept;

  /// Frees deferred buffers whose work is complete (cuEventQuery, no waiting).
  void reclaim();
  /// Buffers waiting for their work before their memory is freed.
  size_t deferred() const;
  TrackerCounters counters() const;

 private:
  struct Slot;
  struct Deferred;
  /// The tracker's lock: one word, taken and released inline (a compare-exchange, an exchange); a
  /// thread that finds it held sleeps on the word (std::atomic::wait) until the holder lets go.
  class Lock {
   public:
    void lock() {
      uint32_t free = 0;
      if (!state_.compare_exchange_strong(free, 1, std::memory_order_acquire, std::memory_order_relaxed)) [[unlikely]]
        lock_contended();
    }
    void unlock() {
      if (state_.exchange(0, std::memory_order_release) != 1) [[unlikely]]
        state_.notify_one();
    }

   private:
    void lock_contended();
    std::atomic<uint32_t> state_{0};  ///< 0 free, 1 held, 2 held with sleepers
  };
  /// Accesses a submission records in one pass at most (order_and_record_locked), what each
  /// replaced kept in `undo_` so that a failed operation leaves none of it.
  static constexpr size_t kUndoCapacity = 32;
  /// undo_: one AccessHistory::Undo per access of the submission under the lock (tracking.cpp).
  struct UndoLog;
  /// Takes back the one pass of a submission whose operation throws (submit).
  struct UndoOnThrow {
    Tracker& tracker;
    uint32_t id;
    std::span<const BufferAccess> accesses;
    bool armed;
    ~UndoOnThrow() {
      if (armed) [[unlikely]]
        tracker.undo_locked(id, accesses);
    }
  };
  uint32_t stream_locked(CUstream stream);
  /// Whether stream `self` is already ordered after point `seq` of stream `stream`: the same
  /// stream, a point known complete, or one `self` already waits for (wait_locked and
  /// order_and_record_locked ask the same).
  [[nodiscard]] bool ordered_locked(const Slot& self, uint32_t stream, uint64_t seq) const;
  /// The fast path: true when every access's earlier uses are ordered_locked for stream `id`; the
  /// submission is then recorded in each history (and counted), what it replaced in `undo_`.
  /// False with nothing changed otherwise. At most kUndoCapacity accesses.
  [[nodiscard]] bool order_and_record_locked(uint32_t id, std::span<const BufferAccess> accesses);
  /// Takes back what order_and_record_locked recorded in the histories of `accesses`, and with
  /// `counted` the submission it counted (the operation failed or threw).
  void undo_locked(uint32_t id, std::span<const BufferAccess> accesses, bool counted = true) noexcept;
  /// A submission while buffers wait to be freed: every 64 of them reclaim what is complete.
  void count_for_reclaim_locked();
  [[nodiscard]] std::expected<void, diag::Diagnostics> wait_locked(uint32_t id, std::span<const BufferAccess> accesses);
  void record_locked(uint32_t id, std::span<const BufferAccess> accesses);
  [[nodiscard]] std::expected<void, diag::Diagnostics> depend_locked(uint32_t id, uint32_t on, uint64_t seq);
  [[nodiscard]] std::expected<void, diag::Diagnostics> point_locked(uint32_t id, uint64_t seq);
  void reclaim_locked();
  void free_now(const BufferTrack& track, CUstream stream) noexcept;

  // What a submission reads comes first (the lock, the last stream, the slots, the deferred
  // frees, the counters): two cache lines.
  mutable Lock mutex_;
  CUstream last_stream_ = nullptr;
  uint32_t last_id_ = 0;
  std::atomic<bool> enabled_{true};
  std::vector<std::unique_ptr<Slot>> slots_;  ///< by id; id 0 is the legacy default stream; never reused
  std::vector<std::unique_ptr<Deferred>> deferred_;
  TrackerCounters counters_;
  uint64_t since_reclaim_ = 0;
  std::vector<std::pair<CUstream, uint32_t>> live_;  ///< streams not yet destroyed -> slot id
  std::unique_ptr<UndoLog> undo_;  ///< guarded by the lock, as the histories
  Context& ctx_;
};

}  // namespace ptxgate::runtime
