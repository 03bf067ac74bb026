// Checked mode's machinery: the fingerprint communicator split from each communicator, the
// exchange of one fixed-size record between every pair of ranks before each call, and the
// report when the exchange does not complete (which ranks did not arrive).
#pragma once

#include <chrono>
#include <expected>
#include <span>
#include <string>
#include <vector>

#include "ptxgate/runtime/device_buffer.hpp"
#include "ptxgate/runtime/event.hpp"
#include "ptxgate/runtime/host_buffer.hpp"
#include "ptxgate/runtime/internal/collective_match.hpp"
#include "ptxgate/runtime/nccl.hpp"
#include "ptxgate/runtime/stream.hpp"

namespace ptxgate::runtime::internal {

/// The checked-mode half of one rank: a communicator split from the rank's own (connected to
/// every peer by the set-up exchange, so no later call waits on the host for one), its streams,
/// and the record buffers. Fingerprints
/// travel on this communicator, never on the user's: an exchange waits for no collective, and a
/// collective never waits for an exchange.
struct CheckedComm {
  ncclComm_t shadow = nullptr;
  size_t record_bytes = 0;
  Stream stream;  ///< the exchange's sends, receives and copies
  Stream probe;   ///< reads the receive slots while an exchange hangs
  DeviceBuffer send, recv;                      ///< one record; one slot per rank
  HostBuffer send_host, recv_host, probe_host;  ///< pinned copies of the same
  Event done, probe_done;
};

/// The private parts of Communicator the checked-mode and watchdog units use.
struct CommunicatorAccess {
  static std::recursive_mutex& mutex(Communicator& c) { return c.mutex_; }
  static ncclComm_t handle(Communicator& c) { return c.comm_; }
  static CheckedComm* checked(Communicator& c) { return c.checked_.get(); }
  static void set_checked(Communicator& c, std::unique_ptr<CheckedComm> state) { c.checked_ = std::move(state); }
  static std::shared_ptr<Context> context(Communicator& c) { return c.ctx_; }
  static const CommunicatorOptions& options(Communicator& c) { return c.options_; }
  static uint64_t next_call(Communicator& c) { return c.calls_.fetch_add(1, std::memory_order_relaxed) + 1; }
  static void fail(Communicator& c, std::string reason, diag::Diagnostics report, bool abort_nccl) {
    c.fail(std::move(reason), std::move(report), abort_nccl);
  }
  static const diag::Diagnostics& failure_report(Communicator& c) { return c.failure_report_; }
  static void set_finalized(Communicator& c) { c.finalized_ = true; }
  static Watchdog* watchdog(Communicator& c) { return c.watchdog_.get(); }
  /// Communicator::healthy with the communicator's mutex held by the caller.
  static std::expected<void, diag::Diagnostics> healthy_locked(Communicator& c, std::string_view what) {
    return c.healthy_locked(what);
  }
};

/// Makes the fingerprint communicators of `comms` (ranks of one communicator in this process:
/// one ncclCommSplit each, in one group), their buffers, and runs the set-up exchange, which also
/// connects every pair of ranks. Communicators of one rank need none.
[[nodiscard]] std::expected<void, diag::Diagnostics> enable_checking(std::span<Communicator* const> comms,
                                                                     std::chrono::milliseconds timeout);

/// One rank's part of an exchange.
struct ExchangeSide {
  Communicator* comm = nullptr;
  Fingerprint mine;
};

/// Sends every side's record to every other rank and receives theirs (one NCCL group on the
/// fingerprint communicators), waits — at most the watchdog's timeout — and matches them. A
/// mismatch is PG4213 on every rank and stops the communicator (nothing reached NCCL); an
/// exchange that does not complete is PG4214 naming the ranks whose record never came, and
/// aborts the communicator. Sides of one-rank communicators, or without checked mode, are skipped.
[[nodiscard]] std::expected<void, diag::Diagnostics> exchange_and_match(std::span<ExchangeSide> sides);

/// Destroys (or, once the communicator failed, aborts) the fingerprint communicator of `c`.
void release_checking(Communicator& c) noexcept;

/// "rank 1" / "ranks 1, 3" / "no rank".
std::string rank_list(const std::vector<int>& ranks);

/// Prints `report` to standard error, or hands it to the options' on_failure.
void deliver_report(const CommunicatorOptions& options, const diag::Diagnostics& report);

}  // namespace ptxgate::runtime::internal
