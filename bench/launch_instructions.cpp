// Host instructions per launch, for profiling the launch path without a GPU: the probe kernels of
// the launch benchmark (bench/kernels/launch{0,4,16}.pg) launched in loops of N through each
// path, over whatever driver PTXGATE_CUDA_DRIVER names (the test build's stand-in libcuda on a
// CPU machine): Kernel::launch, the guarded launch_cuda_function with a prebuilt plan, a new grid.
// bench/launch_callgrind.sh runs it under callgrind and prints each loop's
// instructions per launch minus the raw cuLaunchKernel loop's: what ptxgate adds to a launch. The
// same for a replay of a validated graph of kGraphNodes launches of the probe against a raw
// cuGraphLaunch. Each loop is its own never-inlined function so callgrind can attribute it.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ptxgate/runtime/graph.hpp"
#include "ptxgate/runtime/launch.hpp"
#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/support/files.hpp"
#include "probe_args.hpp"

using namespace ptxgate;
using runtime::Arg;

namespace {

/// Nodes of the replayed graph (as the programs benchmark's program of 100 small kernels).
constexpr int kGraphNodes = 100;

struct Probe {
  std::shared_ptr<runtime::Kernel> kernel;
  std::vector<runtime::DeviceBuffer> buffers;
  std::vector<Arg> args;
  std::vector<runtime::BoundSlot> bound;
  std::vector<void*> slots;
  contract::LaunchPlan plan;  ///< the guarded path's plan (probe_plan)
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "launch_instructions: %s\n", what.c_str());
  std::exit(1);
}

// The loops callgrind attributes (names matched by bench/launch_callgrind.sh).
extern "C" [[gnu::noinline]] int loop_raw(const runtime::DriverApi* api, CUfunction fn, CUstream s, void** slots,
                                          const unsigned* block, size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; ++i)
    bad += api->cuLaunchKernel(fn, 1, 1, 1, block[0], block[1], block[2], 0, s, slots, nullptr) != CUDA_SUCCESS;
  return bad;
}

extern "C" [[gnu::noinline]] int loop_kernel_launch(runtime::Kernel* k, const runtime::LaunchConfig* c,
                                                    const std::vector<Arg>* args, const runtime::Stream* s,
                                                    size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; ++i) bad += !k->launch(*c, *args, s).has_value();
  return bad;
}

extern "C" [[gnu::noinline]] int loop_guarded(runtime::Context* ctx, runtime::LoadedFunction* fn,
                                              const contract::LaunchPlan* plan, const std::vector<void*>* slots,
                                              CUstream s, size_t n) {
  int bad = 0;
  const std::span<void* const> table(slots->data(), slots->size());
  for (size_t i = 0; i < n; ++i) bad += !runtime::launch_cuda_function(*ctx, *fn, *plan, table, s).has_value();
  return bad;
}

extern "C" [[gnu::noinline]] int loop_new_grid(runtime::Kernel* k, const runtime::LaunchConfig* c,
                                               const std::vector<Arg>* args, const runtime::Stream* s, size_t n) {
  int bad = 0;
  runtime::LaunchConfig config = *c;
  for (size_t i = 0; i < n; ++i) {
    config.grid[0] = 1 + i % 64;  // 64 shapes against a 16-entry launch cache: every launch validates
    bad += !k->launch(config, *args, s).has_value();
  }
  return bad;
}

extern "C" [[gnu::noinline]] int loop_raw_graph(const runtime::DriverApi* api, CUgraphExec exec, CUstream s,
                                                size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; ++i) bad += api->cuGraphLaunch(exec, s) != CUDA_SUCCESS;
  return bad;
}

extern "C" [[gnu::noinline]] int loop_graph_replay(runtime::GraphExec* exec, const runtime::Stream* s, size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; ++i) bad += !exec->launch(*s).has_value();
  return bad;
}

/// Replays of a graph of kGraphNodes launches of the probe, raw and through ptxgate.
int graph_loops(runtime::Runtime& rt, Probe& p, const runtime::LaunchConfig& config, runtime::Stream& stream,
                size_t n) {
  auto graph = runtime::Graph::create(rt.shared_context());
  if (!graph) die(diag::render_text(graph.error()));
  for (int i = 0; i < kGraphNodes; ++i)
    if (auto node = graph->launch(*p.kernel, config, p.args); !node) die(diag::render_text(node.error()));
  auto exec = graph->instantiate();
  if (!exec) die(diag::render_text(exec.error()));
  // The raw side replays an executable graph of the stand-in driver's own (it only logs replays).
  const auto& api = rt.context().api();
  CUgraph raw_graph = nullptr;
  CUgraphExec raw_exec = nullptr;
  if (api.cuGraphCreate(&raw_graph, 0) != CUDA_SUCCESS ||
      api.cuGraphInstantiateWithFlags(&raw_exec, raw_graph, 0) != CUDA_SUCCESS)
    die("the driver's graph entry points failed");
  int bad = loop_raw_graph(&api, raw_exec, stream.handle(), n);
  bad += loop_graph_replay(&*exec, &stream, n);
  (void)api.cuGraphExecDestroy(raw_exec);
  (void)api.cuGraphDestroy(raw_graph);
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1] : "bench/kernels";
  const size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10000;
  const bool tracking = !(argc > 3 && std::string(argv[3]) == "untracked");
  const std::string only = argc > 4 ? argv[4] : "";
  runtime::RuntimeOptions options;
  options.track_dependencies = tracking;
  auto rt_or = runtime::Runtime::create(options);
  if (!rt_or) die(diag::render_text(rt_or.error()));
  auto& rt = **rt_or;
  auto stream_or = rt.create_stream();
  if (!stream_or) die(diag::render_text(stream_or.error()));
  runtime::Stream& stream = *stream_or;
  for (const char* name : {"launch0", "launch4", "launch16"}) {
    if (!only.empty() && only != name) continue;
    auto text = support::read_file_diagnosed((dir / (std::string(name) + ".pg")).string(), "kernel");
    if (!text) die(diag::render_text(text.error()));
    auto kernel = rt.compile(*text, name, std::string(name) + ".pg");
    if (!kernel) die(diag::render_text(kernel.error()));
    Probe p;
    p.kernel = *kernel;
    for (int i = 0; i < 4; ++i) {
      auto b = rt.allocate(64);
      if (!b) die(diag::render_text(b.error()));
      p.buffers.push_back(std::move(*b));
    }
    p.args = bench::probe_args(name, p.buffers);
    const auto& params = p.kernel->info().params;
    for (size_t i = 0; i < p.args.size(); ++i) {
      auto slot = runtime::bind_argument(p.args[i], params[i], name);
      if (!slot) die(diag::render_text(slot.error()));
      p.bound.push_back(*slot);
    }
    for (auto& b : p.bound) p.slots.push_back(b.bytes);
    p.plan = bench::probe_plan(p.args, p.bound, params);
    const auto& wg = p.kernel->info().required_block;
    const unsigned block[3] = {wg[0], wg[1], wg[2]};
    // As the launch benchmark's steady launch: grid 1, the kernel's @workgroup (no block given).
    const runtime::LaunchConfig config = runtime::LaunchConfig{{1, 1, 1}, {0, 0, 0}, 0, false};
    if (auto first = p.kernel->launch(config, p.args, &stream); !first) die(diag::render_text(first.error()));
    int bad = loop_raw(&rt.context().api(), p.kernel->function().handle(), stream.handle(), p.slots.data(), block, n);
    bad += loop_kernel_launch(p.kernel.get(), &config, &p.args, &stream, n);
    bad += loop_guarded(&rt.context(), &p.kernel->function(), &p.plan, &p.slots, stream.handle(), n);
    bad += loop_new_grid(p.kernel.get(), &config, &p.args, &stream, n);
    bad += graph_loops(rt, p, config, stream, n);
    if (bad) die(fmt::format("{}: {} launches failed", name, bad));
    if (!stream.synchronize()) die("synchronize failed");
    std::printf("%s: %zu launches per loop (tracking %s)\n", name, n, tracking ? "on" : "off");
  }
  return 0;
}
