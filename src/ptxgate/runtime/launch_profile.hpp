// Profiling of launches: a pair of timing events around each launch when asked for
// (RuntimeOptions::profile_launches), per-launch device times, a per-kernel summary, and NVTX
// ranges (header-only nvtx3: nothing is loaded unless a profiler such as Nsight Systems injects it).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <expected>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

class Context;

/// One profiled launch.
struct LaunchTiming {
  uint64_t sequence = 0;  ///< the launch's sequence number (LaunchLog)
  std::string kernel;
  double device_ms = 0;   ///< between the events recorded before and after it on its stream
};

/// Every profiled launch of one kernel.
struct KernelProfile {
  std::string kernel;
  uint64_t count = 0;
  double total_ms = 0;
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
};

/// A host-side NVTX range (nvtxRangePushA / nvtxRangePop) for the scope of the object: shows up
/// in Nsight Systems around the launches and copies it contains. Free when no tool is attached.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

/// The launch profiler of one context. Each launch records a timing event before and after it on
/// its stream and runs inside an NVTX range named after the kernel; times are read when asked
/// for (waiting for the launches' end events). Thread-safe.
class Profiler {
 public:
  explicit Profiler(Context& ctx) : ctx_(ctx) {}
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  /// Before a launch on `stream`: its start event and the NVTX range. Null when an event could
  /// not be made or recorded (the launch then goes unprofiled).
  CUevent begin(std::string_view kernel, CUstream stream) noexcept;
  /// After the launch was submitted as `sequence`: its end event.
  void end(CUevent start, uint64_t sequence, std::string_view kernel, CUstream stream) noexcept;
  /// The launch was refused by the driver: drops its start event.
  void cancel(CUevent start) noexcept;

  /// Device times of every profiled launch so far, in launch order (waits for their end events).
  [[nodiscard]] std::expected<std::vector<LaunchTiming>, diag::Diagnostics> launches();
  /// Per kernel, in order of first launch: count, total, median, min and max device time.
  [[nodiscard]] std::expected<std::vector<KernelProfile>, diag::Diagnostics> summary();
  /// Forgets the launches measured so far.
  void clear();

 private:
  struct Pending {
    uint64_t sequence;
    std::string kernel;
    CUevent start, end;
  };
  CUevent take_event() noexcept;
  [[nodiscard]] std::expected<void, diag::Diagnostics> resolve_locked();
  Context& ctx_;
  std::mutex mutex_;
  std::vector<CUevent> free_;
  std::vector<Pending> pending_;
  std::vector<LaunchTiming> done_;
};

}  // namespace ptxgate::runtime
