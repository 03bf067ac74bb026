// A raw copy of checked mode's fingerprint exchange for ptxgate_nccl_bench: the same NCCL calls,
// copies and host waits without ptxgate, timed alone, after raw all-reduces of two sizes, without its
// copies, on a communicator of its own instead of a split one, and waiting with a back-off, so that
// the bench shows where the exchange's time goes on the machine it runs on.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench_common.hpp"
#include "ptxgate/runtime/multi_device.hpp"
#include "ptxgate/runtime/nccl.hpp"

namespace ptxgate::bench::exchange_probe {

namespace be = ptxgate::runtime;

/// One rank's raw exchange: a communicator, a stream, a record and a slot per rank on the device
/// and in pinned host memory, and the event the host waits for.
struct Side {
  ncclComm_t comm = nullptr;
  be::Stream stream;
  be::DeviceBuffer send, recv;
  be::HostBuffer send_host, recv_host;
  CUevent done = nullptr;
  be::Context* ctx = nullptr;
};

struct Options {
  bool copies = true;   ///< the record up and the slots down, as the product does
  bool backoff = false; ///< the product's waiting: yield for 200 us, then sleep 20 us at a time
  bool foreign = false; ///< query every event with the last side's context current (not its own)
};

class Probe {
 public:
  /// `split`: the communicators split from `parents` (as checked mode makes them); otherwise made
  /// with ncclCommInitAll. Runs one exchange (connecting every pair) before returning.
  Probe(const be::DeviceSet& set, const be::NcclApi& api, std::vector<be::Communicator*> parents, bool split,
        size_t record_bytes)
      : api_(api), bytes_(record_bytes) {
    const size_t n = set.size();
    sides_.resize(n);
    if (split) {
      std::vector<ncclConfig_t> configs(n, ncclConfig_t NCCL_CONFIG_INITIALIZER);
      api.ncclGroupStart();
      for (size_t i = 0; i < n; ++i) {
        configs[i].blocking = 1;
        (void)set.context(i).make_current();
        ok_ = ok_ && api.ncclCommSplit(parents[i]->handle(), 0, static_cast<int>(i), &sides_[i].comm, &configs[i]) ==
                         ncclSuccess;
      }
      ok_ = ok_ && api.ncclGroupEnd() == ncclSuccess;
    } else {
      std::vector<ncclComm_t> comms(n);
      std::vector<int> devices;
      for (size_t i = 0; i < n; ++i) devices.push_back(set.context(i).ordinal());
      ok_ = api.ncclCommInitAll(comms.data(), static_cast<int>(n), devices.data()) == ncclSuccess;
      for (size_t i = 0; i < n; ++i) sides_[i].comm = comms[i];
    }
    const auto contexts = set.contexts();
    for (size_t i = 0; i < n && ok_; ++i) {
      Side& s = sides_[i];
      s.ctx = &set.context(i);
      auto stream = set.runtime(i).create_stream();
      auto send = set.runtime(i).allocate(bytes_);
      auto recv = set.runtime(i).allocate(bytes_ * n);
      auto hs = be::HostBuffer::allocate(contexts[i], bytes_);
      auto hr = be::HostBuffer::allocate(contexts[i], bytes_ * n);
      if (!stream || !send || !recv || !hs || !hr) {
        ok_ = false;
        break;
      }
      s.stream = std::move(*stream), s.send = std::move(*send), s.recv = std::move(*recv);
      s.send_host = std::move(*hs), s.recv_host = std::move(*hr);
      (void)s.ctx->make_current();
      ok_ = s.ctx->api().cuEventCreate(&s.done, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS;
    }
    if (ok_) ok_ = exchange({});
  }
  ~Probe() {
    for (Side& s : sides_) {
      if (s.ctx != nullptr && s.done != nullptr && s.ctx->make_current()) s.ctx->api().cuEventDestroy(s.done);
      if (s.comm != nullptr) api_.ncclCommDestroy(s.comm);
    }
  }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;

  bool ok() const { return ok_; }

  /// One exchange over every side, returning when the host has every slot (or false on an error).
  bool exchange(Options o) {
    const size_t n = sides_.size();
    for (Side& s : sides_) {
      if (!s.ctx->make_current()) return false;
      if (o.copies && s.ctx->api().cuMemcpyHtoDAsync(s.send.pointer(), s.send_host.data(), bytes_, s.stream.handle()) !=
                          CUDA_SUCCESS)
        return false;
    }
    api_.ncclGroupStart();
    for (size_t i = 0; i < n; ++i)
      for (size_t p = 0; p < n; ++p) {
        if (p == i) continue;
        Side& s = sides_[i];
        api_.ncclSend(reinterpret_cast<const void*>(s.send.pointer()), bytes_, ncclUint8, static_cast<int>(p), s.comm,
                      s.stream.handle());
        api_.ncclRecv(reinterpret_cast<void*>(s.recv.pointer() + p * bytes_), bytes_, ncclUint8, static_cast<int>(p),
                      s.comm, s.stream.handle());
      }
    if (api_.ncclGroupEnd() != ncclSuccess) return false;
    for (Side& s : sides_) {
      if (!s.ctx->make_current()) return false;
      if (o.copies && s.ctx->api().cuMemcpyDtoHAsync(s.recv_host.data(), s.recv.pointer(), bytes_ * n,
                                                     s.stream.handle()) != CUDA_SUCCESS)
        return false;
      if (s.ctx->api().cuEventRecord(s.done, s.stream.handle()) != CUDA_SUCCESS) return false;
    }
    const auto start = Clock::now();
    if (o.foreign && !sides_.back().ctx->make_current()) return false;
    for (;;) {
      bool all = true;
      for (Side& s : sides_) {
        if (!o.foreign && !s.ctx->make_current()) return false;
        const CUresult r = s.ctx->api().cuEventQuery(s.done);
        if (r == CUDA_ERROR_NOT_READY) all = false;
        else if (r != CUDA_SUCCESS) return false;
      }
      if (all) return true;
      if (!o.backoff) continue;
      if (Clock::now() - start < std::chrono::microseconds(200)) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

 private:
  const be::NcclApi& api_;
  size_t bytes_;
  std::vector<Side> sides_;
  bool ok_ = true;
};

/// One variant: what one iteration does (false: it failed).
struct Variant {
  std::string name;
  std::function<bool()> iteration;
};

/// Microseconds per iteration of each variant: `iters` back to back, `rounds` rounds, the order
/// of the variants reversed every other round; the median per variant, printed as a table.
inline void run(const std::vector<Variant>& variants, int iters, int rounds, ResultFile& results,
                const std::function<void()>& wait_all) {
  std::vector<std::vector<double>> us(variants.size());
  std::vector<bool> failed(variants.size(), false);
  for (size_t k = 0; k < variants.size(); ++k) {
    failed[k] = !variants[k].iteration();
    wait_all();
  }
  for (int round = 0; round < rounds; ++round)
    for (size_t k = 0; k < variants.size(); ++k) {
      const size_t which = round % 2 == 0 ? k : variants.size() - 1 - k;
      if (failed[which]) continue;
      wait_all();
      const auto start = Clock::now();
      for (int i = 0; i < iters && !failed[which]; ++i) failed[which] = !variants[which].iteration();
      wait_all();
      us[which].push_back(ns_between(start, Clock::now()) / 1000.0 / iters);
    }
  std::printf("\nraw fingerprint exchange (checked mode's NCCL calls without ptxgate), %d back to back, median of %d "
              "alternating rounds:\n| what one iteration does | us per iteration |\n|---|---:|\n",
              iters, rounds);
  for (size_t k = 0; k < variants.size(); ++k) {
    if (failed[k]) {
      std::printf("| %s | failed (a CUDA or NCCL call returned an error) |\n", variants[k].name.c_str());
      continue;
    }
    const auto s = summarize(us[k]);
    results.add(fmt::format("nccl.exchange_probe.{}", k), "us", s, {{"what", variants[k].name}});
    std::printf("| %s | %.2f |\n", variants[k].name.c_str(), s.median);
  }
}

}  // namespace ptxgate::bench::exchange_probe
