// Programs benchmark (issue 12 item 9): host cost per kernel of a program of 100 small kernels
// launched back to back raw (cuLaunchKernel), through ptxgate (Kernel::launch with tracking),
// replayed as a ptxgate validated graph, and replayed as a raw captured CUDA graph; and the
// copy/compute overlap of an async copy beside a kernel on another stream. Prints one line per
// variant and the ratios the issue sets targets for. Exit 3 without a driver or GPU.
//
// The ratios against the targets are paired by bench/pairing.hpp, as launch_overhead.cpp pairs launches: each
// round times a raw call and a ptxgate call next to each other (a launch and a launch, a replay and
// a replay of the 100-kernel graph), the order alternating from pair to pair and from round to round
// (so that each side is as often the first call after a drained stream), the clock's read cost
// subtracted, and a round's ratio is ptxgate's summed host time over raw's; the lines starting
// "paired:" give the median over rounds, each beside its A/A control: the same method with raw on both
// sides (two identical raw graphs for the replays), which shows what the method alone gives. The
// per-variant batches above them are information (host noise moves a batch's time by 15%, which
// unpaired ratios of separate batches do not cancel).
//
// Usage: ptxgate_programs_bench [BATCHES=200]     (bench/graph_replay_peers.py: CuPy and PyTorch)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "pairing.hpp"
#include "ptxgate/runtime/graph.hpp"
#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/runtime/stream_ops.hpp"

namespace pg = ptxgate;
namespace be = ptxgate::runtime;

namespace {

constexpr int kKernels = 100;
constexpr const char* kSource = R"(
kernel add_one(inout y: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = y[i] + 1.0; }
}
kernel spin(inout y: f32[], n: u32, reps: u32) {
  let i = global_id.x;
  if (i < n) {
    var v = y[i];
    for r in 0..reps { v = v * 0.999 + 0.001; }
    y[i] = v;
  }
}
)";

using Clock = std::chrono::steady_clock;
double since_ns(Clock::time_point t0) { return std::chrono::duration<double, std::nano>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

[[noreturn]] void die(const pg::diag::Diagnostics& d) {
  std::fputs(pg::diag::render_text(d).c_str(), stderr);
  std::exit(1);
}
[[noreturn]] void die(CUresult r, const char* call) {
  std::fprintf(stderr, "%s failed: CUresult %d\n", call, static_cast<int>(r));
  std::exit(1);
}

/// Host ns per kernel of `batch` (which submits kKernels kernels), and end-to-end ns per kernel
/// (submission to the end of a stream synchronisation). The queue is drained untimed between batches.
struct Timing {
  double host_ns = 0, total_ns = 0;
};
Timing measure(int batches, const std::function<void()>& batch, be::Stream& s) {
  std::vector<double> host, total;
  for (int b = -3; b < batches; ++b) {
    const auto t0 = Clock::now();
    batch();
    const double h = since_ns(t0);
    if (auto ok = s.synchronize(); !ok) die(ok.error());
    const double t = since_ns(t0);
    if (b >= 0) {
      host.push_back(h / kKernels);
      total.push_back(t / kKernels);
    }
  }
  return {median(host), median(total)};
}

}  // namespace

int main(int argc, char** argv) {
  const int batches = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  auto rt = be::Runtime::create();
  if (!rt) {
    std::printf("programs bench: SKIPPED: %s", pg::diag::render_text(rt.error(), false).c_str());
    return 3;
  }
  const be::DriverApi& api = (*rt)->context().api();
  auto add_one = (*rt)->compile(kSource, "add_one", "programs_bench.pg");
  auto spin = (*rt)->compile(kSource, "spin", "programs_bench.pg");
  if (!add_one || !spin) die(add_one ? spin.error() : add_one.error());
  auto stream = (*rt)->create_stream();
  if (!stream) die(stream.error());
  be::Stream& s = *stream;
  const uint32_t n = 1024;
  auto y = (*rt)->allocate(n * sizeof(float));
  if (!y) die(y.error());
  const be::LaunchConfig config = be::LaunchConfig::linear(n / 256, 256);
  std::printf("programs bench: %s, %d kernels per program, %d batches (medians)\n", (*rt)->caps().name.c_str(),
              kKernels, batches);

  // Raw: cuLaunchKernel back to back with a prepared argument table.
  CUdeviceptr raw_y = y->pointer();
  uint32_t raw_n = n;
  void* raw_args[] = {&raw_y, &raw_n};
  CUfunction f = (*add_one)->function().handle();
  auto raw_batch = [&] {
    for (int i = 0; i < kKernels; ++i)
      if (CUresult r = api.cuLaunchKernel(f, n / 256, 1, 1, 256, 1, 1, 0, s.handle(), raw_args, nullptr); r != CUDA_SUCCESS)
        die(r, "cuLaunchKernel");
  };
  // ptxgate: Kernel::launch (validated once, then the steady path; tracked).
  auto ptxgate_batch = [&] {
    for (int i = 0; i < kKernels; ++i)
      if (auto ok = (*add_one)->launch(config, {*y, n}, &s); !ok) die(ok.error());
  };
  // ptxgate graph: 100 validated kernel nodes, one tracked replay.
  auto graph = be::Graph::create((*rt)->shared_context());
  if (!graph) die(graph.error());
  for (int i = 0; i < kKernels; ++i)
    if (auto node = graph->launch(**add_one, config, {*y, n}); !node) die(node.error());
  auto exec = graph->instantiate();
  if (!exec) die(exec.error());
  auto graph_batch = [&] {
    if (auto ok = exec->launch(s); !ok) die(ok.error());
  };
  // Raw graphs: the raw batch captured from the stream, twice (the second is the other side of the
  // replays' A/A control).
  struct RawGraph {
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
  };
  auto capture_raw = [&] {
    RawGraph g;
    if (CUresult r = api.cuStreamBeginCapture(s.handle(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); r != CUDA_SUCCESS)
      die(r, "cuStreamBeginCapture");
    raw_batch();
    if (CUresult r = api.cuStreamEndCapture(s.handle(), &g.graph); r != CUDA_SUCCESS) die(r, "cuStreamEndCapture");
    if (CUresult r = api.cuGraphInstantiateWithFlags(&g.exec, g.graph, 0); r != CUDA_SUCCESS)
      die(r, "cuGraphInstantiateWithFlags");
    return g;
  };
  const RawGraph raw_graph = capture_raw(), raw_graph2 = capture_raw();
  auto replay_raw = [&](const RawGraph& g) {
    if (CUresult r = api.cuGraphLaunch(g.exec, s.handle()); r != CUDA_SUCCESS) die(r, "cuGraphLaunch");
  };
  auto raw_graph_batch = [&] { replay_raw(raw_graph); };
  auto raw_graph2_batch = [&] { replay_raw(raw_graph2); };

  const Timing raw = measure(batches, raw_batch, s);
  const Timing launches = measure(batches, ptxgate_batch, s);
  const Timing replay = measure(batches, graph_batch, s);
  const Timing raw_replay = measure(batches, raw_graph_batch, s);
  auto row = [&](const char* name, const Timing& t) {
    std::printf("  %-28s host %8.1f ns/kernel (%.3fx raw launch)   end-to-end %8.1f ns/kernel\n", name, t.host_ns,
                t.host_ns / raw.host_ns, t.total_ns);
  };
  row("raw cuLaunchKernel", raw);
  row("ptxgate Kernel::launch", launches);
  row("ptxgate graph replay", replay);
  row("raw CUDA graph replay", raw_replay);
  std::printf("ratios of separate batches (unpaired, information): ptxgate launch / raw launch = %.3f; ptxgate "
              "graph / raw launch = %.3f (target <= 0.2); ptxgate graph / raw graph = %.3f\n",
              launches.host_ns / raw.host_ns, replay.host_ns / raw.host_ns, replay.host_ns / raw_replay.host_ns);

  // Paired: a launch against a launch (rounds of 100 pairs, as the launch benchmark), a replay of the
  // 100-kernel graph against a raw replay (rounds of 2 pairs: both orders, 400 kernels queued at most).
  const double clock_ns = pg::bench::clock_read_ns();
  auto drain = [&] {
    if (auto ok = s.synchronize(); !ok) die(ok.error());
  };
  auto raw_launch = [&] {
    if (CUresult r = api.cuLaunchKernel(f, n / 256, 1, 1, 256, 1, 1, 0, s.handle(), raw_args, nullptr); r != CUDA_SUCCESS)
      die(r, "cuLaunchKernel");
  };
  auto ptxgate_launch = [&] {
    if (auto ok = (*add_one)->launch(config, {*y, n}, &s); !ok) die(ok.error());
  };
  // The A/B ratios and their A/A controls interleaved, so that drift hits all four alike.
  std::vector<double> launch_ratios, launch_control, graph_ratios, graph_control;
  for (int chunk = 0; chunk < 4; ++chunk) {
    // Every call here dies on failure, so each one succeeds when it returns.
    auto ok = [](auto& call) {
      return [&call](size_t) {
        call();
        return true;
      };
    };
    auto append = [&](std::vector<double>& to, size_t rounds, size_t pairs, auto& raw_side, auto& variant_side) {
      auto more = pg::bench::paired_ratios(rounds, pairs, clock_ns, ok(raw_side), ok(variant_side), [&] {
        drain();
        return true;
      });
      to.insert(to.end(), more.ratios.begin(), more.ratios.end());
    };
    const size_t launch_rounds = static_cast<size_t>(batches / 4 + 1), graph_rounds = static_cast<size_t>(batches / 2 + 1);
    append(launch_ratios, launch_rounds, kKernels, raw_launch, ptxgate_launch);
    append(launch_control, launch_rounds, kKernels, raw_launch, raw_launch);
    append(graph_ratios, graph_rounds, 2, raw_graph_batch, graph_batch);
    append(graph_control, graph_rounds, 2, raw_graph_batch, raw_graph2_batch);
  }
  auto spread = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? std::pair<double, double>{0, 0} : std::pair{v[v.size() / 10], v[v.size() * 9 / 10]};
  };
  auto paired_line = [&](const char* what, const std::vector<double>& ab, const std::vector<double>& aa,
                         const char* target, const char* shape) {
    const auto [p10, p90] = spread(ab);
    const auto [c10, c90] = spread(aa);
    std::printf("paired: %s = %.3f (%s; p10 %.3f, p90 %.3f; %zu rounds of %s); A/A control raw / raw = %.3f (p10 %.3f, "
                "p90 %.3f)\n",
                what, median(ab), target, p10, p90, ab.size(), shape, median(aa), c10, c90);
  };
  char launch_shape[64], graph_shape[64];
  std::snprintf(launch_shape, sizeof launch_shape, "%d pairs, clock %.1f ns subtracted", kKernels, clock_ns);
  std::snprintf(graph_shape, sizeof graph_shape, "2 pairs of %d-kernel replays", kKernels);
  paired_line("ptxgate Kernel::launch (tracked) / raw cuLaunchKernel", launch_ratios, launch_control, "target <= 1.05",
              launch_shape);
  paired_line("ptxgate graph replay / raw CUDA graph replay", graph_ratios, graph_control, "target <= 1.05", graph_shape);
  for (const RawGraph& g : {raw_graph, raw_graph2}) {
    (void)api.cuGraphExecDestroy(g.exec);
    (void)api.cuGraphDestroy(g.graph);
  }

  // Overlap: a 256 MiB pinned upload on one stream beside a long kernel on another.
  const size_t bytes = size_t{256} << 20;
  const uint32_t spin_n = 1 << 20;
  auto host = be::HostBuffer::allocate((*rt)->shared_context(), bytes);
  auto dst = (*rt)->allocate(bytes);
  auto z = (*rt)->allocate(spin_n * sizeof(float));
  auto other = (*rt)->create_stream();
  if (!host || !dst || !z || !other) die(!host ? host.error() : !dst ? dst.error() : !z ? z.error() : other.error());
  auto copy = [&] {
    if (auto ok = be::copy_async(s, be::DeviceSpan<std::byte>(*dst), be::HostSpan<std::byte>(*host)); !ok)
      die(ok.error());
  };
  // The kernel's length is tuned to the copy's, so that ideal overlap halves the serial time.
  uint32_t reps = 1000;
  auto compute = [&] {
    if (auto ok = (*spin)->launch(be::LaunchConfig::linear(spin_n / 256, 256), {*z, spin_n, reps}, &*other); !ok)
      die(ok.error());
  };
  auto timed = [&](const std::function<void()>& work) {
    std::vector<double> t;
    for (int i = 0; i < 6; ++i) {
      const auto t0 = Clock::now();
      work();
      if (auto ok = (*rt)->synchronize(); !ok) die(ok.error());
      if (i > 0) t.push_back(since_ns(t0) / 1e6);
    }
    return median(t);
  };
  const double copy_ms = timed(copy);
  double compute_ms = timed(compute);
  if (compute_ms > 0) reps = static_cast<uint32_t>(std::clamp(reps * copy_ms / compute_ms, 1.0, 1e7));
  compute_ms = timed(compute);
  const double both_ms = timed([&] {
    copy();
    compute();
  });
  const double ideal = std::max(copy_ms, compute_ms);
  std::printf("overlap: copy %.3f ms (%.1f GB/s), compute %.3f ms, both %.3f ms: %.3f of the ideal max(copy, "
              "compute) (target >= 0.9; serial would be %.3f)\n",
              copy_ms, bytes / copy_ms / 1e6, compute_ms, both_ms, ideal / both_ms, ideal / (copy_ms + compute_ms));
  return 0;
}
