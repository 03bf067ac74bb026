// Shared pieces of the GPU benchmarks: statistics, the JSON result file, extra driver entry points, file reading.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::bench {

using Clock = std::chrono::steady_clock;

/// Seconds between two steady_clock points, as nanoseconds.
inline double ns_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

/// The distribution of a set of samples (the unit is the caller's).
struct Summary {
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
  size_t samples = 0;
};

/// Median, 10th/90th percentile (nearest rank), min and max of `values`; all 0 when empty.
Summary summarize(std::vector<double> values);

/// The result file of one benchmark process: rows, errors and facts, rewritten to disk
/// after every change so that a crash or a timeout still leaves partial results.
class ResultFile {
 public:
  /// `path` empty: keep in memory only (printed at the end).
  ResultFile(std::filesystem::path path, std::string part);
  /// One measurement: `name` identifies it across runs (e.g. "launch.raw.args4"),
  /// `unit` is what the summary's numbers are in ("ns", "GB/s", "ms", "GFLOP/s").
  void add(const std::string& name, const std::string& unit, const Summary& s, nlohmann::json extra = {});
  /// A step that failed; the other measurements go on.
  void error(const std::string& step, const std::string& message);
  /// A fact about the run (device, versions, sizes).
  void info(const std::string& key, nlohmann::json value);
  const nlohmann::json& json() const { return doc_; }
  void flush() const;

 private:
  std::filesystem::path path_;
  nlohmann::json doc_;
};

/// The text rendering of diagnostics on one line (for error rows and logs).
std::string one_line(const diag::Diagnostics& d);

/// Driver entry points the backend's table does not carry, resolved the same way
/// (dlopen libcuda.so.1 + cuGetProcAddress_v2); benchmark-only: memcpy and graphs.
struct DriverExtras {
  decltype(&::cuMemcpyDtoDAsync) cuMemcpyDtoDAsync = nullptr;
  decltype(&::cuStreamBeginCapture) cuStreamBeginCapture = nullptr;
  decltype(&::cuStreamEndCapture) cuStreamEndCapture = nullptr;
  decltype(&::cuGraphInstantiateWithFlags) cuGraphInstantiateWithFlags = nullptr;
  decltype(&::cuGraphLaunch) cuGraphLaunch = nullptr;
  decltype(&::cuGraphExecDestroy) cuGraphExecDestroy = nullptr;
  decltype(&::cuGraphDestroy) cuGraphDestroy = nullptr;
  decltype(&::cuModuleLoadData) cuModuleLoadData = nullptr;
};

/// Resolves DriverExtras; the error names what is missing. Entries that cannot be
/// resolved stay null (the caller skips what needs them).
[[nodiscard]] std::expected<DriverExtras, std::string> load_driver_extras();

/// "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (1)" using the driver's names.
std::string cu_error(CUresult r, std::string_view call);

/// Whole file as a string; error text when unreadable.
[[nodiscard]] std::expected<std::string, std::string> read_text(const std::filesystem::path& path);

/// Deterministic uniform floats in [lo, hi) (never all zero).
std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

}  // namespace ptxgate::bench
