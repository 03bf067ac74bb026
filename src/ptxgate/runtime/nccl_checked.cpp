// Checked mode: the fingerprint communicators, the exchange before every call, and its reports.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "ptxgate/runtime/internal/checked_comm.hpp"

namespace ptxgate::runtime::internal {
namespace {

using Clock = std::chrono::steady_clock;

diag::Diagnostics one(diag::Code code, std::string message, std::string fix = {}) {
  diag::Diagnostics d;
  d.add(code, std::move(message), {}, std::move(fix));
  return d;
}

/// Waiting on the host for a few microseconds to seconds: yields first (an exchange takes tens
/// of microseconds), then sleeps a little longer each time.
class Backoff {
 public:
  void pause() {
    const auto waited = Clock::now() - start_;
    if (waited < std::chrono::microseconds(200)) std::this_thread::yield();
    else if (waited < std::chrono::milliseconds(20)) std::this_thread::sleep_for(std::chrono::microseconds(20));
    else std::this_thread::sleep_for(std::chrono::microseconds(200));
  }

 private:
  Clock::time_point start_ = Clock::now();
};

std::optional<Clock::time_point> deadline_of(std::chrono::milliseconds timeout, Clock::time_point start) {
  if (timeout.count() <= 0) return std::nullopt;
  return start + timeout;
}

/// Locks the communicators of `sides` (each once, in address order: the watchdog takes one at a time).
class LockAll {
 public:
  explicit LockAll(std::vector<Communicator*> comms) {
    std::sort(comms.begin(), comms.end());
    comms.erase(std::unique(comms.begin(), comms.end()), comms.end());
    for (Communicator* c : comms) locks_.emplace_back(CommunicatorAccess::mutex(*c));
  }

 private:
  std::vector<std::unique_lock<std::recursive_mutex>> locks_;
};

/// The receive slots as they are now, read through the probe stream (the exchange's stream may
/// be blocked by a hung receive); null when they cannot be read within a second.
std::optional<std::vector<std::optional<Fingerprint>>> probe_slots(Communicator& c, CheckedComm& s) {
  auto ctx = CommunicatorAccess::context(c);
  const size_t n = static_cast<size_t>(c.size());
  if (!ctx->make_current()) return std::nullopt;
  if (ctx->api().cuMemcpyDtoHAsync(s.probe_host.data(), s.recv.pointer(), n * s.record_bytes, s.probe.handle()) !=
      CUDA_SUCCESS)
    return std::nullopt;
  if (!s.probe_done.record(&s.probe)) return std::nullopt;
  const auto until = Clock::now() + std::chrono::seconds(1);
  Backoff backoff;
  for (;;) {
    const CUresult r = ctx->api().cuEventQuery(s.probe_done.handle());
    if (r == CUDA_SUCCESS) break;
    if (r != CUDA_ERROR_NOT_READY || Clock::now() > until) return std::nullopt;
    backoff.pause();
  }
  std::vector<std::optional<Fingerprint>> slots(n);
  for (size_t q = 0; q < n; ++q) {
    auto f = decode_fingerprint(
        std::span<const std::byte>(s.probe_host.data() + q * s.record_bytes, s.record_bytes), c.size());
    if (f && f->rank == static_cast<int>(q)) slots[q] = std::move(*f);
  }
  return slots;
}

/// PG4214 (or, when NCCL reported an error, PG4204) for a side whose exchange did not complete:
/// which ranks' fingerprints arrived, what they called, and the abort.
diag::Diagnostics not_completed(Communicator& c, const Fingerprint& mine, std::string why, diag::Code code) {
  CheckedComm& s = *CommunicatorAccess::checked(c);
  const auto slots = probe_slots(c, s);
  std::vector<int> missing, arrived;
  std::vector<std::string> notes;
  if (slots) {
    for (int q = 0; q < c.size(); ++q) {
      if (q == c.rank()) continue;
      const auto& f = (*slots)[static_cast<size_t>(q)];
      if (f && f->seq == mine.seq) {
        arrived.push_back(q);
        notes.push_back(fmt::format("rank {} {}", q, what_rank_did(*f)));
      } else {
        missing.push_back(q);
      }
    }
  }
  std::string who;
  if (!slots) who = "which ranks arrived is unknown (the receive slots could not be read)";
  else if (missing.empty()) who = "every rank's fingerprint arrived, but this rank's did not reach them all";
  else
    who = fmt::format("{} did not arrive (no fingerprint came from {}){}", rank_list(missing),
                      missing.size() == 1 ? "it" : "them",
                      arrived.empty() ? std::string() : fmt::format("; {} did", rank_list(arrived)));
  diag::Diagnostics d;
  auto& e = d.add(code,
                  fmt::format("the fingerprint exchange of call #{} ({}) on rank {} of {} {}: {}; the communicator "
                              "was aborted",
                              mine.seq, describe_fingerprint(mine), c.rank(), c.size(), why, who),
                  {},
                  "a rank exited, crashed or is stuck before this call; every NCCL operation of this communicator "
                  "ended here (ncclCommAbort): create a new communicator on the ranks still running");
  e.notes = std::move(notes);
  return d;
}

std::expected<void, diag::Diagnostics> make_buffers(Communicator& c, CheckedComm& s) {
  auto ctx = CommunicatorAccess::context(c);
  s.record_bytes = fingerprint_bytes(c.size());
  const size_t all = s.record_bytes * static_cast<size_t>(c.size());
  auto stream = Stream::create(ctx);
  if (!stream) return std::unexpected(stream.error());
  s.stream = std::move(*stream);
  auto probe = Stream::create(ctx);
  if (!probe) return std::unexpected(probe.error());
  s.probe = std::move(*probe);
  auto send = DeviceBuffer::allocate(ctx, s.record_bytes, "checked-mode fingerprint");
  if (!send) return std::unexpected(send.error());
  s.send = std::move(*send);
  auto recv = DeviceBuffer::allocate(ctx, all, "checked-mode fingerprints");
  if (!recv) return std::unexpected(recv.error());
  s.recv = std::move(*recv);
  if (auto ok = s.recv.fill_bytes(0); !ok) return std::unexpected(ok.error());
  for (auto [host, bytes] : {std::pair{&s.send_host, s.record_bytes}, {&s.recv_host, all}, {&s.probe_host, all}}) {
    auto h = HostBuffer::allocate(ctx, bytes);
    if (!h) return std::unexpected(h.error());
    *host = std::move(*h);
  }
  for (Event* e : {&s.done, &s.probe_done}) {
    auto ev = Event::create(ctx);
    if (!ev) return std::unexpected(ev.error());
    *e = std::move(*ev);
  }
  return {};
}

}  // namespace

std::string rank_list(const std::vector<int>& ranks) {
  if (ranks.empty()) return "no rank";
  if (ranks.size() == 1) return fmt::format("rank {}", ranks.front());
  return fmt::format("ranks {}", fmt::join(ranks, ", "));
}

void deliver_report(const CommunicatorOptions& options, const diag::Diagnostics& report) {
  if (options.on_failure) options.on_failure(report);
  else std::fputs(diag::render_text(report, false).c_str(), stderr);
}

std::expected<void, diag::Diagnostics> enable_checking(std::span<Communicator* const> comms,
                                                       std::chrono::milliseconds timeout) {
  std::vector<Communicator*> multi;
  for (Communicator* c : comms)
    if (c->size() > 1) multi.push_back(c);
  if (multi.empty()) return {};
  const NcclApi& api = multi.front()->api();
  std::vector<std::unique_ptr<CheckedComm>> states(multi.size());
  std::vector<ncclConfig_t> configs(multi.size(), ncclConfig_t NCCL_CONFIG_INITIALIZER);
  {
    LockAll lock(multi);
    ncclResult_t first = api.ncclGroupStart();
    for (size_t i = 0; i < multi.size(); ++i) {
      states[i] = std::make_unique<CheckedComm>();
      // Blocking: a non-blocking communicator's ncclGroupEnd starts a thread for every group (tens
      // of microseconds each exchange). The set-up exchange below connects every pair of ranks while
      // all are there, so no later exchange waits on the host for a peer: it waits on the GPU, where
      // the exchange polls with a deadline and ncclCommAbort ends it.
      configs[i].blocking = 1;
      if (auto ok = CommunicatorAccess::context(*multi[i])->make_current(); !ok) {
        api.ncclGroupEnd();
        return std::unexpected(ok.error());
      }
      const ncclResult_t r = api.ncclCommSplit(CommunicatorAccess::handle(*multi[i]), 0, multi[i]->rank(),
                                               &states[i]->shadow, &configs[i]);
      if (first == ncclSuccess && r != ncclSuccess && r != ncclInProgress) first = r;
    }
    const ncclResult_t end = api.ncclGroupEnd();
    if (first == ncclSuccess && end != ncclSuccess && end != ncclInProgress) first = end;
    if (first != ncclSuccess)
      return std::unexpected(one(diag::Code::nccl_call_failed,
                                 fmt::format("ncclCommSplit (checked mode's fingerprint communicator) failed: {} ({})",
                                             api.ncclGetErrorString(first), api.ncclGetLastError(nullptr))));
  }
  // Install each state right away, so a failure below releases what was made.
  for (size_t i = 0; i < multi.size(); ++i) {
    CheckedComm* s = states[i].get();
    CommunicatorAccess::set_checked(*multi[i], std::move(states[i]));
    const auto deadline = deadline_of(timeout, Clock::now());
    Backoff backoff;
    for (;;) {
      ncclResult_t state = ncclInProgress;
      if (s->shadow != nullptr) api.ncclCommGetAsyncError(s->shadow, &state);
      if (state == ncclSuccess) break;
      if (state != ncclInProgress || s->shadow == nullptr)
        return std::unexpected(one(diag::Code::nccl_call_failed,
                                   fmt::format("checked mode's fingerprint communicator on rank {} failed: {}",
                                               multi[i]->rank(), api.ncclGetErrorString(state))));
      if (deadline && Clock::now() > *deadline)
        return std::unexpected(one(diag::Code::collective_timeout,
                                   fmt::format("checked mode's fingerprint communicator on rank {} was not ready "
                                               "within {} ms",
                                               multi[i]->rank(), timeout.count())));
      backoff.pause();
    }
  }
  std::vector<ExchangeSide> sides;
  for (Communicator* c : multi) {
    if (auto ok = CommunicatorAccess::context(*c)->make_current(); !ok) return ok;
    if (auto ok = make_buffers(*c, *CommunicatorAccess::checked(*c)); !ok) return ok;
    sides.push_back({c, Fingerprint::of(FingerprintKind::setup, c->rank(), c->size(), 0)});
  }
  return exchange_and_match(sides);
}

std::expected<void, diag::Diagnostics> exchange_and_match(std::span<ExchangeSide> all_sides) {
  std::vector<ExchangeSide*> sides;
  for (ExchangeSide& s : all_sides)
    if (s.comm->size() > 1 && CommunicatorAccess::checked(*s.comm) != nullptr) sides.push_back(&s);
  if (sides.empty()) return {};
  const auto start = Clock::now();
  const NcclApi& api = sides.front()->comm->api();

  // 1. This rank's record into its send buffer.
  for (ExchangeSide* side : sides) {
    Communicator& c = *side->comm;
    CheckedComm& s = *CommunicatorAccess::checked(c);
    if (c.failed()) return c.healthy("fingerprint exchange");
    encode_fingerprint(side->mine, std::span<std::byte>(s.send_host.data(), s.record_bytes));
    auto ctx = CommunicatorAccess::context(c);
    if (auto ok = ctx->make_current(); !ok) return ok;
    if (auto ok = PTXGATE_CU(*ctx, "checked-mode fingerprint", cuMemcpyHtoDAsync, s.send.pointer(), s.send_host.data(),
                             s.record_bytes, s.stream.handle());
        !ok)
      return ok;
  }
  // 2. One group: a send to and a receive from every other rank, on the fingerprint communicator.
  {
    std::vector<Communicator*> comms;
    for (ExchangeSide* side : sides) comms.push_back(side->comm);
    LockAll lock(comms);
    for (ExchangeSide* side : sides)
      if (side->comm->failed()) return side->comm->healthy("fingerprint exchange");
    ncclResult_t first = api.ncclGroupStart();
    for (ExchangeSide* side : sides) {
      Communicator& c = *side->comm;
      CheckedComm& s = *CommunicatorAccess::checked(c);
      for (int p = 0; p < c.size(); ++p) {
        if (p == c.rank()) continue;
        const auto slot = s.recv.pointer() + static_cast<CUdeviceptr>(p) * s.record_bytes;
        ncclResult_t r = api.ncclSend(reinterpret_cast<const void*>(s.send.pointer()), s.record_bytes, ncclUint8, p,
                                      s.shadow, s.stream.handle());
        if (r == ncclSuccess || r == ncclInProgress)
          r = api.ncclRecv(reinterpret_cast<void*>(slot), s.record_bytes, ncclUint8, p, s.shadow, s.stream.handle());
        if (first == ncclSuccess && r != ncclSuccess && r != ncclInProgress) first = r;
      }
    }
    const ncclResult_t end = api.ncclGroupEnd();
    if (first == ncclSuccess && end != ncclSuccess && end != ncclInProgress) first = end;
    if (first != ncclSuccess) {
      diag::Diagnostics d;
      for (ExchangeSide* side : sides) {
        auto e = one(diag::Code::nccl_call_failed,
                     fmt::format("the fingerprint exchange of call #{} on rank {} failed: {} ({}); the communicator was "
                                 "aborted",
                                 side->mine.seq, side->comm->rank(), api.ncclGetErrorString(first),
                                 api.ncclGetLastError(nullptr)));
        CommunicatorAccess::fail(*side->comm, e.items().front().message, e, true);
        d.append(e);
      }
      return std::unexpected(std::move(d));
    }
  }
  // 3. Wait until NCCL has enqueued the group, copy the slots back, and wait for the copy —
  //    each side at most its timeout, watching both communicators' health meanwhile.
  enum class Stage { enqueuing, copying, complete };
  std::vector<Stage> stage(sides.size(), Stage::enqueuing);
  Backoff backoff;
  auto last_health = start;
  for (;;) {
    bool all_complete = true;
    const auto now = Clock::now();
    const bool check_health = now - last_health > std::chrono::milliseconds(1);
    if (check_health) last_health = now;
    for (size_t i = 0; i < sides.size(); ++i) {
      if (stage[i] == Stage::complete) continue;
      Communicator& c = *sides[i]->comm;
      CheckedComm& s = *CommunicatorAccess::checked(c);
      if (c.failed()) {  // the watchdog aborted it meanwhile
        auto report = CommunicatorAccess::failure_report(c);
        if (report.empty()) return c.healthy("fingerprint exchange");
        return std::unexpected(std::move(report));
      }
      std::optional<std::string> nccl_error;
      {
        std::lock_guard lock(CommunicatorAccess::mutex(c));
        ncclResult_t st = ncclSuccess;
        if (stage[i] == Stage::enqueuing || check_health) {
          api.ncclCommGetAsyncError(s.shadow, &st);
          if (st != ncclSuccess && st != ncclInProgress) nccl_error = api.ncclGetErrorString(st);
          ncclResult_t main = ncclSuccess;
          if (check_health && !nccl_error && CommunicatorAccess::handle(c) != nullptr) {
            api.ncclCommGetAsyncError(CommunicatorAccess::handle(c), &main);
            if (main != ncclSuccess && main != ncclInProgress) nccl_error = api.ncclGetErrorString(main);
          }
        }
        if (!nccl_error && stage[i] == Stage::enqueuing && st == ncclSuccess) {
          auto ctx = CommunicatorAccess::context(c);
          if (auto ok = ctx->make_current(); !ok) return ok;
          if (auto ok = PTXGATE_CU(*ctx, "checked-mode fingerprints", cuMemcpyDtoHAsync, s.recv_host.data(),
                                   s.recv.pointer(), s.record_bytes * static_cast<size_t>(c.size()), s.stream.handle());
              !ok)
            return ok;
          if (auto ok = s.done.record(&s.stream); !ok) return ok;
          stage[i] = Stage::copying;
        }
      }
      if (nccl_error) {
        auto report = not_completed(c, sides[i]->mine, fmt::format("failed: NCCL reported {}", *nccl_error),
                                    diag::Code::communicator_failed);
        CommunicatorAccess::fail(c, report.items().front().message, report, true);
        return std::unexpected(std::move(report));
      }
      if (stage[i] == Stage::copying) {
        auto ctx = CommunicatorAccess::context(c);
        if (sides.size() > 1)
          if (auto ok = ctx->make_current(); !ok) return ok;
        const CUresult r = ctx->api().cuEventQuery(s.done.handle());
        if (r == CUDA_SUCCESS) {
          stage[i] = Stage::complete;
          continue;
        }
        if (r != CUDA_ERROR_NOT_READY) return ctx->check(r, "cuEventQuery", "fingerprints");
      }
      all_complete = false;
      const auto deadline = deadline_of(c.timeout(), start);
      if (deadline && now > *deadline) {
        diag::Diagnostics d;
        for (size_t j = 0; j < sides.size(); ++j) {
          if (stage[j] == Stage::complete) continue;
          Communicator& late = *sides[j]->comm;
          auto report = not_completed(late, sides[j]->mine,
                                      fmt::format("did not complete within {} ms", late.timeout().count()),
                                      diag::Code::collective_timeout);
          CommunicatorAccess::fail(late, report.items().front().message, report, true);
          d.append(report);
        }
        return std::unexpected(std::move(d));
      }
    }
    if (all_complete) break;
    backoff.pause();
  }
  // 4. Every rank has every record: match them, the same way on every rank.
  diag::Diagnostics mismatches;
  std::vector<diag::Diagnostics> per_side(sides.size());
  for (size_t i = 0; i < sides.size(); ++i) {
    Communicator& c = *sides[i]->comm;
    CheckedComm& s = *CommunicatorAccess::checked(c);
    std::vector<Fingerprint> records(static_cast<size_t>(c.size()));
    std::vector<std::string> unreadable;
    for (int q = 0; q < c.size(); ++q) {
      if (q == c.rank()) {
        records[static_cast<size_t>(q)] = sides[i]->mine;
        continue;
      }
      auto f = decode_fingerprint(
          std::span<const std::byte>(s.recv_host.data() + static_cast<size_t>(q) * s.record_bytes, s.record_bytes),
          c.size());
      if (!f) unreadable.push_back(fmt::format("rank {}: {}", q, f.error()));
      else records[static_cast<size_t>(q)] = std::move(*f);
    }
    if (!unreadable.empty()) {
      auto& e = per_side[i].add(diag::Code::collective_mismatch,
                                fmt::format("the fingerprints of call #{} on rank {} cannot be read: {} (ranks running "
                                            "different ptxgate builds?)",
                                            sides[i]->mine.seq, c.rank(), unreadable.front()),
                                {}, "run the same ptxgate on every rank; the communicator was stopped");
      e.notes.assign(unreadable.begin() + 1, unreadable.end());
    } else {
      per_side[i] = match_fingerprints(records, c.rank());
    }
  }
  for (size_t i = 0; i < sides.size(); ++i) {
    if (per_side[i].empty()) continue;
    mismatches.append(per_side[i]);
  }
  if (mismatches.empty()) return {};
  // The verdict is every rank's: stop every side (nothing reached NCCL; earlier calls still complete).
  for (size_t i = 0; i < sides.size(); ++i) {
    const auto& report = per_side[i].empty() ? mismatches : per_side[i];
    CommunicatorAccess::fail(*sides[i]->comm, report.items().front().message, report, false);
  }
  return std::unexpected(std::move(mismatches));
}

void release_checking(Communicator& c) noexcept {
  CheckedComm* s = CommunicatorAccess::checked(c);
  if (s == nullptr) return;
  {
    std::lock_guard lock(CommunicatorAccess::mutex(c));
    // An exchange that did not complete aborted it already (Communicator::fail); what is left
    // has nothing in flight.
    if (s->shadow != nullptr) c.api().ncclCommDestroy(s->shadow);
    s->shadow = nullptr;
  }
  CommunicatorAccess::set_checked(c, nullptr);
}

}  // namespace ptxgate::runtime::internal
