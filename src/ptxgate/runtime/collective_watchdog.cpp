// The collective watchdog's thread: events after each watched collective, retired as they
// complete; the first one overdue is reported (PG4214) and the communicator aborted.
#include "ptxgate/runtime/internal/collective_watchdog.hpp"

#include <fmt/format.h>

#include "ptxgate/runtime/internal/checked_comm.hpp"
#include "ptxgate/runtime/nccl.hpp"

namespace ptxgate::runtime::internal {

namespace {
/// Entries past which watch() wakes the thread to retire complete ones (bounds the events held).
constexpr size_t kRetireBatch = 256;
}  // namespace

Watchdog::Watchdog(Communicator& comm, std::chrono::milliseconds timeout)
    : comm_(comm), timeout_(timeout), thread_([this] { run(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  Context& ctx = comm_.context();
  if (!ctx.make_current()) return;
  for (const Entry& e : pending_) ctx.api().cuEventDestroy(e.event);
  for (CUevent e : free_events_) ctx.api().cuEventDestroy(e);
}

std::expected<void, diag::Diagnostics> Watchdog::watch(const Stream& stream, Fingerprint call) {
  Context& ctx = comm_.context();
  // A group of several devices' ranks leaves the last one's context current; the event must be
  // made in this communicator's, where its stream is.
  if (auto ok = ctx.make_current(); !ok) return ok;
  CUevent event = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (fired_) return {};
    if (!free_events_.empty()) {
      event = free_events_.back();
      free_events_.pop_back();
    }
  }
  if (event == nullptr)
    if (auto ok = PTXGATE_CU(ctx, "collective watchdog", cuEventCreate, &event, CU_EVENT_DISABLE_TIMING); !ok) return ok;
  if (auto ok = PTXGATE_CU(ctx, "collective watchdog", cuEventRecord, event, stream.handle()); !ok) {
    ctx.api().cuEventDestroy(event);
    return ok;
  }
  bool first = false, batch = false;
  {
    std::lock_guard lock(mutex_);
    first = pending_.empty();
    pending_.push_back({std::move(call), event, Clock::now() + timeout_});
    batch = pending_.size() % kRetireBatch == 0;
  }
  if (first || batch) wake_.notify_one();
  return {};
}

size_t Watchdog::pending() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

bool Watchdog::retire(std::unique_lock<std::mutex>&) {
  const DriverApi& api = comm_.context().api();
  while (!pending_.empty()) {
    const CUresult r = api.cuEventQuery(pending_.front().event);
    if (r == CUDA_ERROR_NOT_READY) break;
    // Complete, or the context failed (its own error boundary reports that): either way not a hang.
    free_events_.push_back(pending_.front().event);
    pending_.pop_front();
  }
  return !pending_.empty() && Clock::now() >= pending_.front().deadline;
}

void Watchdog::run() {
  if (!comm_.context().make_current()) return;
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (pending_.empty()) {
      wake_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      continue;
    }
    if (retire(lock)) {
      const Entry overdue = pending_.front();
      fired_ = true;
      lock.unlock();
      fire(overdue);
      lock.lock();
      break;
    }
    if (pending_.empty()) continue;
    wake_.wait_until(lock, pending_.front().deadline);
  }
}

void Watchdog::fire(const Entry& overdue) {
  const bool checked = comm_.checked() && comm_.size() > 1;
  diag::Diagnostics d;
  d.add(diag::Code::collective_timeout,
        fmt::format("{} (call #{}) on rank {} of {} did not complete within {} ms; {}; the communicator was aborted",
                    describe_fingerprint(overdue.call), overdue.call.seq, comm_.rank(), comm_.size(), timeout_.count(),
                    checked ? "every rank arrived at it (their fingerprints matched before it began), so a rank or "
                              "a link failed while it ran"
                            : "which ranks did not arrive is unknown without checked mode "
                              "(CommunicatorOptions::checked names them)"),
        {},
        "find the rank that failed or stalled; every NCCL operation of this communicator ended here "
        "(ncclCommAbort): create a new communicator on the ranks still running");
  CommunicatorAccess::fail(comm_, d.items().front().message, d, true);
  deliver_report(CommunicatorAccess::options(comm_), d);
}

}  // namespace ptxgate::runtime::internal
