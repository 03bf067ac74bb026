// Happens-before over the fake driver's call log, derived the way a GPU orders work: stream order,
// event record -> wait edges, host waits, and the host's program order after synchronous calls.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "runtime_fake_driver.hpp"

namespace ptxgate::runtime::testing {

/// Calls that are submitted to a stream and run there later, in stream order.
inline bool is_stream_call(std::string_view name) {
  return name == "cuLaunchKernel" || name == "cuLaunchCooperativeKernel" || name == "cuEventRecord" ||
         name == "cuStreamWaitEvent" || name == "cuMemcpyHtoDAsync" || name == "cuMemcpyDtoHAsync" ||
         name == "cuMemcpyDtoDAsync" || name == "cuMemcpyPeerAsync" || name == "cuMemsetD8Async" || name == "cuMemsetD16Async" || name == "cuMemsetD32Async" ||
         name == "cuMemAllocAsync" || name == "cuMemAllocFromPoolAsync" || name == "cuMemFreeAsync" ||
         name == "cuGraphLaunch" || name == "ncclAllReduce" || name == "ncclBroadcast" || name == "ncclReduce" ||
         name == "ncclAllGather" || name == "ncclReduceScatter" || name == "ncclSend" || name == "ncclRecv";
}

/// Synchronous copies and memsets: submitted to the legacy default stream (ordered after its
/// earlier work and waits); of these only a copy to the host returns after the work is done.
inline bool is_legacy_stream_call(std::string_view name) {
  return name == "cuMemcpyHtoD" || name == "cuMemcpyDtoH" || name == "cuMemsetD8" || name == "cuMemsetD32";
}

/// The happens-before relation of one call log. A stream call runs after the calls before it on
/// its stream, after the record a wait refers to (the event's latest record before the wait), and
/// after every host call that returned before it was submitted. A host call (everything else)
/// runs at its place in the host's program order, after what it waited for: an event's latest
/// record (cuEventSynchronize, and cuEventQuery that answered success), a stream's calls so far
/// (cuStreamSynchronize), or every stream's (cuCtxSynchronize).
class HappensBefore {
 public:
  explicit HappensBefore(const std::vector<FakeCall>& calls) : calls_(calls), preds_(calls.size()) {
    std::map<CUstream, size_t> last_on_stream;
    std::map<CUevent, size_t> last_record;
    std::optional<size_t> last_host;
    for (size_t i = 0; i < calls.size(); ++i) {
      const FakeCall& c = calls[i];
      if (last_host) preds_[i].push_back(*last_host);
      if (is_stream_call(c.name) || is_legacy_stream_call(c.name)) {
        const CUstream stream = is_legacy_stream_call(c.name) ? nullptr : c.stream;
        if (auto it = last_on_stream.find(stream); it != last_on_stream.end()) preds_[i].push_back(it->second);
        last_on_stream[stream] = i;
        if (c.name == "cuEventRecord") last_record[c.event] = i;
        if (c.name == "cuStreamWaitEvent")
          if (auto it = last_record.find(c.event); it != last_record.end()) preds_[i].push_back(it->second);
        if (c.name == "cuMemcpyDtoH") last_host = i;  // returns once the copy is done
        continue;
      }
      if (c.name == "cuEventSynchronize" || c.name == "cuEventQuery") {
        if (auto it = last_record.find(c.event); it != last_record.end()) preds_[i].push_back(it->second);
      } else if (c.name == "cuStreamSynchronize") {
        if (auto it = last_on_stream.find(c.stream); it != last_on_stream.end()) preds_[i].push_back(it->second);
      } else if (c.name == "cuCtxSynchronize") {
        for (const auto& [stream, last] : last_on_stream) preds_[i].push_back(last);
      }
      last_host = i;
    }
  }

  /// True when call `a` is ordered before call `b` (a < b in the log and a path a -> b exists).
  bool ordered(size_t a, size_t b) const {
    if (a >= b) return false;
    std::vector<bool> seen(calls_.size(), false);
    std::vector<size_t> todo{b};
    while (!todo.empty()) {
      size_t i = todo.back();
      todo.pop_back();
      for (size_t p : preds_[i]) {
        if (p == a) return true;
        if (p > a && !seen[p]) {
          seen[p] = true;
          todo.push_back(p);
        }
      }
    }
    return false;
  }

  /// Index of the `nth` (from 0) call matching `pred`; fails the test when there is none.
  size_t find(const std::function<bool(const FakeCall&)>& pred, size_t nth = 0) const {
    for (size_t i = 0; i < calls_.size(); ++i)
      if (pred(calls_[i]) && nth-- == 0) return i;
    return npos;
  }
  size_t find(std::string_view name, size_t nth = 0) const {
    return find([&](const FakeCall& c) { return c.name == name; }, nth);
  }
  static constexpr size_t npos = static_cast<size_t>(-1);

 private:
  const std::vector<FakeCall>& calls_;
  std::vector<std::vector<size_t>> preds_;
};

}  // namespace ptxgate::runtime::testing
