// A program, not a launch: Laplace's equation solved by Jacobi sweeps on the GPU. The grid is
// uploaded asynchronously from pinned memory, thousands of sweeps are replayed as one validated
// CUDA graph on a compute stream, and snapshots are downloaded on a second stream while the
// sweeps go on, with no synchronisation in this code: the runtime orders each download after the
// replay that wrote the grid and the next replay after the download that reads it. Every
// snapshot is checked against a CPU reference. Exits 0 when all match, 1 on a mismatch or error,
// 3 (with the reason) when there is no driver or GPU.
//
// Usage: ptxgate_jacobi [N [REPLAYS [SWEEPS_PER_GRAPH [SNAPSHOT_EVERY]]]]   (default 256 40 100 10)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ptxgate/runtime/graph.hpp"
#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/runtime/stream_ops.hpp"

namespace pg = ptxgate;
namespace be = ptxgate::runtime;

namespace {

/// examples/jacobi.pg: $PTXGATE_EXAMPLES_DIR/jacobi.pg, else the source tree's.
std::string kernel_path() {
  const char* dir = std::getenv("PTXGATE_EXAMPLES_DIR");
  return std::string(dir != nullptr ? dir : PTXGATE_SOURCE_DIR "/examples") + "/jacobi.pg";
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The same sweep on the CPU, in the same order of operations.
void sweep(std::vector<float>& dst, const std::vector<float>& src, uint32_t n) {
  for (uint32_t y = 0; y < n; ++y)
    for (uint32_t x = 0; x < n; ++x) {
      const size_t c = size_t{y} * n + x;
      if (x == 0 || y == 0 || x == n - 1 || y == n - 1)
        dst[c] = src[c];
      else
        dst[c] = 0.25f * (((src[c - 1] + src[c + 1]) + src[c - n]) + src[c + n]);
    }
}

int fail(const pg::diag::Diagnostics& d) {
  std::fputs(pg::diag::render_text(d).c_str(), stderr);
  return 1;
}

uint32_t arg(int argc, char** argv, int i, uint32_t fallback) {
  return argc > i ? static_cast<uint32_t>(std::strtoul(argv[i], nullptr, 10)) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t n = std::max<uint32_t>(arg(argc, argv, 1, 256), 3);
  const uint32_t replays = arg(argc, argv, 2, 40);
  const uint32_t sweeps = std::max<uint32_t>(arg(argc, argv, 3, 100) / 2 * 2, 2);  // even: ends in `a`
  const uint32_t every = std::max<uint32_t>(arg(argc, argv, 4, 10), 1);
  const size_t cells = size_t{n} * n;

  auto rt = be::Runtime::create();
  if (!rt) {
    std::printf("jacobi: SKIPPED: no GPU: %s", pg::diag::render_text(rt.error(), false).c_str());
    return 3;
  }
  const std::string path = kernel_path();
  auto source = read_text(path);
  if (!source) {
    std::fprintf(stderr, "jacobi: cannot read %s\n", path.c_str());
    return 1;
  }
  auto kernel = (*rt)->compile(*source, "jacobi", path);
  if (!kernel) return fail(kernel.error());
  auto compute = (*rt)->create_stream();
  auto download = (*rt)->create_stream();
  auto a = (*rt)->allocate(cells * sizeof(float));
  auto b = (*rt)->allocate(cells * sizeof(float));
  auto staging = be::HostBuffer::allocate((*rt)->shared_context(), cells * sizeof(float));
  if (!compute || !download || !a || !b || !staging) return 1;

  // The initial grid: 1 on the top edge, 0 elsewhere; uploaded asynchronously into both buffers.
  std::vector<float> initial(cells, 0.0f);
  std::fill(initial.begin(), initial.begin() + n, 1.0f);
  {
    auto host = staging->write<float>();
    if (!host) return fail(host.error());
    std::copy(initial.begin(), initial.end(), host->begin());
  }
  if (auto ok = be::copy_async(*compute, be::DeviceSpan<float>(*a), be::HostSpan<float>(*staging)); !ok)
    return fail(ok.error());
  if (auto ok = be::copy_async(*compute, be::DeviceSpan<float>(*b), be::HostSpan<float>(*staging)); !ok)
    return fail(ok.error());

  // The graph: `sweeps` launches alternating a -> b and b -> a, each validated as a direct launch.
  auto graph = be::Graph::create((*rt)->shared_context());
  if (!graph) return fail(graph.error());
  const be::LaunchConfig config{{(n + 15) / 16, (n + 15) / 16, 1}, {16, 16, 1}, 0, false, true};
  for (uint32_t s = 0; s < sweeps; ++s) {
    const be::DeviceBuffer& src = s % 2 == 0 ? *a : *b;
    const be::DeviceBuffer& dst = s % 2 == 0 ? *b : *a;
    if (auto node = graph->launch(**kernel, config, {dst, src, n, n}); !node) return fail(node.error());
  }
  auto exec = graph->instantiate();
  if (!exec) return fail(exec.error());

  // Replays on `compute`, snapshots on `download`: no synchronisation between them here.
  std::vector<uint32_t> snapshot_steps;
  for (uint32_t r = 1; r <= replays; ++r)
    if (r % every == 0 || r == replays) snapshot_steps.push_back(r * sweeps);
  std::vector<be::HostBuffer> snapshots;
  for (size_t i = 0; i < snapshot_steps.size(); ++i) {
    auto snap = be::HostBuffer::allocate((*rt)->shared_context(), cells * sizeof(float));
    if (!snap) return fail(snap.error());
    snapshots.push_back(std::move(*snap));
  }
  for (uint32_t r = 1, taken = 0; r <= replays; ++r) {
    if (auto ok = exec->launch(*compute); !ok) return fail(ok.error());
    if (taken < snapshot_steps.size() && snapshot_steps[taken] == r * sweeps) {
      if (auto ok = be::copy_async(*download, be::HostSpan<float>(snapshots[taken]), be::DeviceSpan<float>(*a)); !ok)
        return fail(ok.error());
      ++taken;
    }
  }

  // The CPU reference, compared with each snapshot (reading a snapshot waits for its download).
  std::vector<float> u = initial, v = initial;
  uint32_t done = 0;
  double worst = 0;
  for (size_t i = 0; i < snapshots.size(); ++i) {
    for (; done < snapshot_steps[i]; done += 2) {
      sweep(v, u, n);
      sweep(u, v, n);
    }
    auto got = snapshots[i].read<float>();
    if (!got) return fail(got.error());
    double diff = 0;
    for (size_t c = 0; c < cells; ++c) diff = std::max(diff, std::fabs(double{(*got)[c]} - double{u[c]}));
    std::printf("jacobi: snapshot after %u sweeps: max |gpu - cpu| = %.3g, centre %.6f\n", snapshot_steps[i], diff,
                static_cast<double>((*got)[cells / 2 + n / 2]));
    worst = std::max(worst, diff);
  }
  const bool ok = worst <= 1e-5;
  std::printf("jacobi: %ux%u grid, %u sweeps as %u replays of a %u-launch graph, %zu snapshots on a second stream: %s "
              "(max |gpu - cpu| = %.3g, limit 1e-5)\n",
              n, n, replays * sweeps, replays, sweeps, snapshots.size(), ok ? "OK" : "MISMATCH", worst);
  return ok ? 0 : 1;
}
