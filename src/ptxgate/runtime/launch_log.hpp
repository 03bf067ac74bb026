// Launch sequence numbers and the recent launches of a context, so that an asynchronous kernel
// fault is reported with the launch that caused it (kernel, geometry, stream, sequence number).
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

/// One launch as the log remembers it.
struct LaunchRecord {
  uint64_t sequence = 0;  ///< from 1, per context, in submission order
  std::string kernel;
  std::array<unsigned, 3> grid{0, 0, 0}, block{0, 0, 0};
  unsigned dynamic_shared_bytes = 0;
  bool cooperative = false;
  CUstream stream = nullptr;
  /// "launch #7 of kernel 'saxpy' grid=(4,1,1) block=(256,1,1) shared=0 on stream 0x2010".
  std::string describe() const;
};

/// The last kSlots launches of a context, written by every launch (lock-free: a sequence counter
/// and per-slot sequence locks, so a fault report never reads a torn record). Thread-safe.
class LaunchLog {
 public:
  static constexpr size_t kSlots = 64;

  /// A number for a kernel name (the same number for the same name), for record: a launch
  /// writes the number, not the name. Names are kept for the log's lifetime (one per distinct name).
  uint32_t intern(std::string_view kernel);
  /// Takes the next sequence number and remembers the launch under it (`kernel`: intern's number).
  uint64_t record(uint32_t kernel, const std::array<unsigned, 3>& grid, const std::array<unsigned, 3>& block,
                  unsigned dynamic_shared_bytes, bool cooperative, CUstream stream) noexcept;
  /// The newest sequence number given out (0 before the first launch).
  uint64_t last() const { return next_.load(std::memory_order_acquire); }
  /// Launches up to `sequence` are known complete (a synchronisation of the whole context succeeded).
  void completed_through(uint64_t sequence) noexcept;
  /// Launches on `stream` up to `sequence` are known complete (its synchronisation succeeded).
  void stream_completed_through(CUstream stream, uint64_t sequence) noexcept;
  /// Launches not known complete that the log still holds, oldest first.
  std::vector<LaunchRecord> in_flight() const;
  /// The launch with this sequence number, when the log still holds it.
  std::optional<LaunchRecord> find(uint64_t sequence) const;

 private:
  /// One launch, in one cache line. Its writer holds it (sequence kWriting) while it writes; readers
  /// take a record only when the sequence is the same before and after they read it. The fields are
  /// atomics read and written relaxed (plain loads and stores on the host): a reader may meet a
  /// writer, and two writers of one slot (launches 64 apart, one of them delayed) take it in turn.
  struct alignas(64) Slot {
    static constexpr uint64_t kWriting = ~uint64_t{0};
    std::atomic<uint64_t> sequence{0};  ///< 0: never written; kWriting: being written
    std::atomic<bool> done{false};
    std::atomic<uint32_t> kernel{0};  ///< intern's number
    std::array<std::atomic<unsigned>, 3> grid{}, block{};
    std::atomic<unsigned> dynamic_shared_bytes{0};
    std::atomic<bool> cooperative{false};
    std::atomic<CUstream> stream{nullptr};
  };
  bool read(const Slot& s, LaunchRecord& out) const;
  std::string name_of(uint32_t kernel) const;
  std::atomic<uint64_t> next_{0};
  std::atomic<uint64_t> completed_{0};
  std::array<Slot, kSlots> slots_;
  mutable std::mutex names_mutex_;
  std::deque<std::string> names_;  ///< intern's number n is names_[n - 1]
  std::unordered_map<std::string_view, uint32_t> name_numbers_;  ///< views into names_
};

/// A kernel fault reported by `call` (a sticky error): PG4050 naming the launch that caused it when
/// `culprit` is known (checked launches), else the launches that were in flight (`suspects`, oldest
/// first). `driver_error` is the driver's PG4002 for the call, whose text and notes are kept.
diag::Diagnostics kernel_fault(diag::Diagnostics driver_error, const std::vector<LaunchRecord>& suspects,
                               bool culprit_known, CUresult result = CUDA_ERROR_LAUNCH_FAILED);

}  // namespace ptxgate::runtime
