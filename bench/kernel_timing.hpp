// The kernel benchmarks' shared method: launching (ptxgate's Kernel::launch, nvcc's cubins raw), moving
// data, checking against a CPU reference, and timing variants interleaved with device events.
#pragma once

#include <array>
#include <cmath>
#include <expected>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "ptxgate/runtime/runtime.hpp"

namespace ptxgate::bench {

/// A benchmark step's outcome: ok, or a message.
using Step = std::expected<void, std::string>;

inline Step from_diag(const std::expected<void, diag::Diagnostics>& r) {
  if (r) return {};
  return std::unexpected(one_line(r.error()));
}

/// One-dimensional grid of `blocks`, the block size the kernel's @workgroup gives.
inline runtime::LaunchConfig grid1d(uint64_t blocks, size_t dynamic_shared_bytes = 0) {
  return runtime::LaunchConfig{{blocks, 1, 1}, {0, 0, 0}, dynamic_shared_bytes, false};
}

/// What a kernel benchmark works with: the runtime, its stream, the driver table, the result file.
struct Bench {
  runtime::Runtime& rt;
  runtime::Stream& stream;
  const runtime::DriverApi& api;
  ResultFile& out;
};

/// The runtime and stream a kernel benchmark runs on.
struct Session {
  std::unique_ptr<runtime::Runtime> rt;
  runtime::Stream stream;
  Bench bench(ResultFile& out) { return Bench{*rt, stream, rt->context().api(), out}; }
};

/// Opens the device's runtime and a stream, or gives the part's exit status: kSkipped without a driver
/// or device (`part` names it in the message), 1 on another failure; either is recorded in `out`.
/// `checked`: the runtime compiles in checked mode (RuntimeOptions::checked).
std::expected<Session, int> open_session(ResultFile& out, std::string_view part, bool checked = false);

/// cuLaunchKernel of an nvcc function on the benchmark's stream.
Step raw_launch(Bench& c, CUfunction f, std::array<unsigned, 3> grid, std::array<unsigned, 3> block,
                std::vector<void*> params, unsigned dynamic_shared_bytes = 0);

/// Blocks of `block` threads of `f` that are resident on the whole device at once (the driver's occupancy
/// times the SMs; at least 1): the grid of a grid-stride kernel, one full wave.
unsigned resident_blocks(Bench& c, CUfunction f, unsigned block);

/// A device buffer holding `host`, typed by T (element_type_of; untyped for bytes and halves).
template <class T>
std::expected<runtime::DeviceBuffer, std::string> upload(Bench& c, const std::vector<T>& host) {
  auto b = c.rt.upload(std::span<const T>(host));
  if (!b) return std::unexpected(one_line(b.error()));
  return std::move(*b);
}

/// The buffer's contents as T, after the stream's work.
template <class T = float>
std::expected<std::vector<T>, std::string> download(Bench& c, const runtime::DeviceBuffer& b) {
  if (auto ok = c.stream.synchronize(); !ok) return std::unexpected(one_line(ok.error()));
  auto v = c.rt.download<T>(b);
  if (!v) return std::unexpected(one_line(v.error()));
  return std::move(*v);
}

/// An untyped buffer of `bytes` filled with `value` in every byte (0xFF: f32 NaN, to catch unwritten output).
std::expected<runtime::DeviceBuffer, std::string> filled(Bench& c, size_t bytes, uint8_t value);

/// Relative error ||out - ref|| / ||ref||; infinite when any element is NaN.
double relative_error(const std::vector<float>& out, const std::vector<double>& ref);

/// a * b in double precision, row-major (a m x k, b k x n).
std::vector<double> matmul_reference(const std::vector<float>& a, const std::vector<float>& b, size_t m, size_t n,
                                     size_t k);

/// Records a verification: an error row when the step failed, else the error against the tolerance;
/// returns whether it passed.
bool record_check(ResultFile& out, const std::string& what, const Step& s, double err, double tol);

/// Launches of one variant between the two events of one sample: GPU-bound timing (the launches queue
/// back to back, so the host's dispatch stays out of the window), the same for every side: peers.py
/// times torch/cuBLAS the same way (bench/peers.py --calls).
constexpr size_t kCallsPerSample = 20;

/// One timed variant: a launch (with an untimed `prepare`, e.g. resetting state), and the work one
/// launch does (bytes, flops or edges) for the rate. A variant with `prepare` (the BFS, whose host loop
/// reads a flag back every level) is one launch per sample; the others `calls` launches per sample.
struct Timed {
  std::string name;
  std::string unit;  ///< "GB/s", "GFLOP/s", "GTEPS"
  double work = 0;   ///< bytes (GB/s), floating-point operations (GFLOP/s) or edges (GTEPS) per launch
  std::function<Step()> launch;
  std::function<Step()> prepare;  ///< optional, run before the start event
  size_t calls = kCallsPerSample; ///< launches between the two events (1 with `prepare`)
  std::vector<double> rates;
  std::vector<double> times_us;
  bool failed = false;
};

/// Times the variants interleaved: `warmups` then `repetitions` rounds, the order of the variants reversed
/// every other round; a sample is `calls` launches between two events on the stream, and its time per
/// launch the elapsed time over `calls`; rows `prefix + name` with the rate's median, p10, p90, the times
/// and the calls per sample. False when a variant failed (its error is recorded, the others go on).
bool time_interleaved(Bench& c, std::vector<Timed>& variants, size_t warmups, size_t repetitions,
                      const std::string& prefix);

/// The nvcc twins: cubins loaded raw into the runtime's context (unloaded on destruction).
class NvccModules {
 public:
  explicit NvccModules(Bench& c) : c_(c) {}
  ~NvccModules();
  NvccModules(const NvccModules&) = delete;
  NvccModules& operator=(const NvccModules&) = delete;
  /// `function` of `cubin`, with its registers recorded as info `nvcc_resources.<function>`;
  /// null (and an error row) when missing.
  CUfunction get(const std::filesystem::path& cubin, const std::string& function);

 private:
  Bench& c_;
  std::vector<std::pair<std::string, CUmodule>> modules_;
};

/// Compiles `kernel` of `path` through the runtime, recording its resources as info
/// `ptxgate_resources.<kernel>`; null (and an error row) on failure.
std::shared_ptr<runtime::Kernel> compile_kernel(Bench& c, const std::filesystem::path& path, const std::string& kernel);

}  // namespace ptxgate::bench
