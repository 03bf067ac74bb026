// The collective watchdog: one thread per communicator that watches the collectives issued on
// it and, when one is not complete within the timeout, reports it (PG4214) and aborts the
// communicator, which ends NCCL's kernels so every wait on them returns.
#pragma once

#include <cuda.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <expected>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ptxgate/runtime/internal/collective_match.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {
class Communicator;
class Stream;
}  // namespace ptxgate::runtime

namespace ptxgate::runtime::internal {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;
  /// Starts the thread for `comm` (which outlives it: the communicator joins it first).
  Watchdog(Communicator& comm, std::chrono::milliseconds timeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Watches call `call` (its fingerprint: its number and what it does) just issued on `stream`:
  /// records an event after it there. The call is described in words only if it is reported.
  [[nodiscard]] std::expected<void, diag::Diagnostics> watch(const Stream& stream, Fingerprint call);
  /// Collectives issued and not yet seen complete (for tests).
  size_t pending() const;

 private:
  struct Entry {
    Fingerprint call;
    CUevent event;
    Clock::time_point deadline;
  };
  void run();
  /// Returns complete entries' events to the free list; true when the oldest left is overdue.
  bool retire(std::unique_lock<std::mutex>& lock);
  void fire(const Entry& overdue);

  Communicator& comm_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Entry> pending_;
  std::vector<CUevent> free_events_;
  bool stop_ = false;
  bool fired_ = false;
  std::thread thread_;
};

}  // namespace ptxgate::runtime::internal
