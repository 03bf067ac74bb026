// Launch overhead: raw cuLaunchKernel vs ptxgate's guarded launch (steady, first validated, fresh function) vs graphs.
// PTXGATE_LAUNCH_CALIBRATE=1 adds calibration rows (launch.calib_*_over_raw): the raw launch plus one
// thing a launch path does besides its instructions (locked read-modify-writes, cache lines read, a
// try-lock held across the driver call, a table that is not null), to price each on the host.
#include "bench_parts.hpp"
#include "pairing.hpp"
#include "probe_args.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string_view>

#include <fmt/format.h>

#include "ptxgate/runtime/launch.hpp"
#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/module_cache/module_cache.hpp"

namespace ptxgate::bench {
namespace {

using runtime::Arg;

/// One probe kernel with its arguments bound exactly as the backend binds them.
struct Probe {
  std::string name;
  std::shared_ptr<runtime::Kernel> kernel;
  std::vector<runtime::DeviceBuffer> buffers;
  std::vector<Arg> args;
  std::vector<runtime::BoundSlot> bound;
  std::vector<void*> slots;
  contract::LaunchPlan plan;  ///< steady plan: grid 1, the kernel's @workgroup, on the bench stream
};

std::expected<Probe, std::string> make_probe(runtime::Runtime& rt, const std::filesystem::path& dir,
                                             const std::string& name) {
  auto text = read_text(dir / (name + ".pg"));
  if (!text) return std::unexpected(text.error());
  auto kernel = rt.compile(*text, name, name + ".pg");
  if (!kernel) return std::unexpected(fmt::format("compile {}: {}", name, one_line(kernel.error())));
  Probe p;
  p.name = name;
  p.kernel = *kernel;
  for (int i = 0; i < 4; ++i) {
    auto b = rt.allocate(64);
    if (!b) return std::unexpected(fmt::format("allocate: {}", one_line(b.error())));
    p.buffers.push_back(std::move(*b));
  }
  p.args = probe_args(name, p.buffers);
  const auto& params = p.kernel->info().params;
  if (params.size() != p.args.size())
    return std::unexpected(fmt::format("{} has {} parameters, the benchmark passes {}", name, params.size(),
                                       p.args.size()));
  for (size_t i = 0; i < p.args.size(); ++i) {
    auto slot = runtime::bind_argument(p.args[i], params[i], name);
    if (!slot) return std::unexpected(fmt::format("bind {}: {}", name, one_line(slot.error())));
    p.bound.push_back(*slot);
  }
  for (auto& b : p.bound) p.slots.push_back(b.bytes);
  p.plan = probe_plan(p.args, p.bound, params);
  return p;
}

/// A variant launches once per call (iteration index given) and says whether it worked.
struct Variant {
  std::string name;
  size_t per_batch;
  std::function<std::expected<void, std::string>(size_t)> launch;
  std::vector<double> per_launch_ns;  ///< back-to-back: batch time up to the end of a synchronise
  std::vector<double> host_ns;        ///< host time of the launch calls alone, short batches
  bool failed = false;
  nlohmann::json extra = nlohmann::json::object();
};

}  // namespace

int run_launch_overhead(const LaunchOptions& o, ResultFile& out) {
  auto rt_or = runtime::Runtime::create();
  if (!rt_or) {
    out.error("runtime", one_line(rt_or.error()));
    fmt::print("no CUDA driver or device: launch overhead skipped\n");
    return kSkipped;
  }
  auto& rt = **rt_or;
  auto& ctx = rt.context();
  const auto& api = ctx.api();
  out.info("device", rt.caps().name);
  out.info("batches", o.batches);
  out.info("launches_per_batch", o.per_batch);
  out.info("host_batches", o.host_batches);
  out.info("host_launches_per_batch", o.host_per_batch);
  auto stream_or = rt.create_stream();
  if (!stream_or) {
    out.error("stream", one_line(stream_or.error()));
    return 1;
  }
  runtime::Stream& stream = *stream_or;
  CUstream s = stream.handle();
  // One CPU for the whole part: no migrations between the launches that are compared.
  if (int cpu = sched_getcpu(); cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) == 0) out.info("pinned_cpu", cpu);
  }
  // The cost of reading the clock, subtracted from each timed launch of the paired measurement.
  const double clock_ns = clock_read_ns();
  out.info("clock_read_ns", clock_ns);
  auto extras = load_driver_extras();
  int status = 0;
  const char* calibrate_env = std::getenv("PTXGATE_LAUNCH_CALIBRATE");
  const bool calibrate = calibrate_env != nullptr && std::string_view(calibrate_env) == "1";
  // The calibration's atomics (one per cache line) and the lines it reads (one word per line).
  std::vector<std::atomic<uint64_t>> calib_counters(3 * 8);
  std::vector<uint64_t> calib_lines(64 * 8, 1);
  volatile uint64_t calib_sink = 0;
  std::atomic<bool> calib_busy{false};

  for (const std::string name : {"launch0", "launch4", "launch16"}) {
    fmt::print("launch overhead: {}\n", name);
    auto probe_or = make_probe(rt, o.kernels_dir, name);
    if (!probe_or) {
      out.error("launch." + name, probe_or.error());
      status = 1;
      continue;
    }
    Probe& p = *probe_or;
    CUfunction fn = p.kernel->function().handle();
    const auto block = p.kernel->info().required_block;
    const std::string args_tag = fmt::format("args{}", p.args.size());
    void** slots = p.slots.data();
    std::span<void* const> slot_span(p.slots.data(), p.slots.size());
    runtime::LaunchConfig steady_config = runtime::LaunchConfig{{1, 1, 1}, {0, 0, 0}, 0, false};
    std::span<const Arg> arg_span(p.args.data(), p.args.size());
    // The slots in an array that is never null (at 0 arguments, one unused entry).
    std::vector<void*> table_storage(p.slots.begin(), p.slots.end());
    table_storage.push_back(nullptr);
    void** table = table_storage.data();

    auto cu = [](CUresult r, const char* call) -> std::expected<void, std::string> {
      if (r == CUDA_SUCCESS) return {};
      return std::unexpected(cu_error(r, call));
    };
    auto diag = [](const std::expected<void, diag::Diagnostics>& r) -> std::expected<void, std::string> {
      if (r) return {};
      return std::unexpected(one_line(r.error()));
    };

    // The module loaded a second time, by the benchmark, to resolve fresh LoadedFunctions from.
    CUmodule own_module = nullptr;
    {
      auto text = read_text(o.kernels_dir / (name + ".pg"));
      auto loaded = text ? ir::load_module(diag::SourceFile(name + ".pg", *text))
                         : std::expected<ir::LoadedModule, diag::Diagnostics>(std::unexpected(diag::Diagnostics{}));
      module_cache::CompileRequest req;
      req.codegen.target = rt.target();
      if (loaded) {
        auto entry = module_cache::compile_to_entry(loaded->module, req, req.toolkit());
        if (entry && !entry->cubin.empty()) {
          if (auto r = api.cuModuleLoadData(&own_module, entry->cubin.data()); r != CUDA_SUCCESS) {
            out.error("launch.fresh_function." + args_tag, cu_error(r, "cuModuleLoadData"));
            own_module = nullptr;
          }
        } else {
          out.error("launch.fresh_function." + args_tag,
                    entry ? "no cubin produced" : one_line(entry.error()));
        }
      }
    }

    // The raw launch (grid x, argument table) and the guarded one (argument table) every variant
    // below that makes one calls.
    auto raw_launch = [&](unsigned grid, void** table) {
      return cu(api.cuLaunchKernel(fn, grid, 1, 1, block[0], block[1], block[2], 0, s, table, nullptr),
                "cuLaunchKernel");
    };
    auto guarded_launch = [&](void** table) {
      return diag(runtime::launch_cuda_function(ctx, p.kernel->function(), p.plan,
                                                std::span<void* const>(table, p.slots.size()), s));
    };
    std::vector<Variant> variants;
    variants.push_back({"raw", o.per_batch, [&](size_t) { return raw_launch(1, slots); }});
    variants.push_back({"guarded", o.per_batch, [&](size_t) { return guarded_launch(slots); }});
    variants.push_back({"kernel_api", o.per_batch, [&](size_t) {
                          return diag(p.kernel->launch(steady_config, arg_span, &stream));
                        }});
    // Calibration (PTXGATE_LAUNCH_CALIBRATE=1): the raw launch plus what a launch path adds besides its
    // instructions: atomic read-modify-writes (locked instructions) after the driver call, and reads
    // of the same cache lines every launch (as a path's own structures), to price each on this host.
    if (calibrate) {
      for (int rmws : {1, 3})
        variants.push_back({fmt::format("calib_rmw{}", rmws), o.per_batch, [&, rmws](size_t) {
                              auto r = raw_launch(1, slots);
                              for (int k = 0; k < rmws; ++k)
                                calib_counters[k * 8].fetch_add(1, std::memory_order_relaxed);
                              return r;
                            }});
      // The guarded launch again, measured after the others: whether its place in the run matters.
      variants.push_back({"calib_guarded_again", o.per_batch, [&](size_t) { return guarded_launch(slots); }});
      // The guarded launch and the raw one with a table that is not null at 0 arguments too, and the
      // raw launch inside a try-lock (an exchange before it, a release store after) as the guarded
      // path holds its function's remembered plan.
      variants.push_back({"calib_guarded_table", o.per_batch, [&](size_t) { return guarded_launch(table); }});
      variants.push_back({"calib_raw_table", o.per_batch, [&](size_t) { return raw_launch(1, table); }});
      variants.push_back(
          {"calib_raw_locked", o.per_batch, [&](size_t) {
             if (calib_busy.load(std::memory_order_relaxed) || calib_busy.exchange(true, std::memory_order_acquire))
               return std::expected<void, std::string>(std::unexpected(std::string("lock taken")));
             auto r = raw_launch(1, slots);
             calib_busy.store(false, std::memory_order_release);
             return r;
           }});
      for (int lines : {16, 64})
        variants.push_back({fmt::format("calib_lines{}", lines), o.per_batch, [&, lines](size_t) {
                              uint64_t sum = 0;
                              for (int k = 0; k < lines; ++k) sum += calib_lines[k * 8];
                              calib_sink = sum;
                              return raw_launch(1, slots);
                            }});
    }
    // Grids 1..64 in turn: 64 shapes against a 16-entry verdict cache, so every launch validates afresh.
    variants.push_back({"raw_grid_cycle", o.per_batch,
                        [&](size_t i) { return raw_launch(1 + static_cast<unsigned>(i % 64), slots); }});
    variants.push_back({"first_validated", o.per_batch, [&](size_t i) {
                          runtime::LaunchConfig c = steady_config;
                          c.grid[0] = 1 + i % 64;
                          return diag(p.kernel->launch(c, arg_span, &stream));
                        }});
    if (own_module != nullptr) {
      variants.push_back({"fresh_function", std::max<size_t>(o.per_batch / 4, 1), [&](size_t) {
                            auto f = runtime::LoadedFunction::resolve(ctx, own_module, p.kernel->info());
                            if (!f) return std::expected<void, std::string>(std::unexpected(one_line(f.error())));
                            return diag(runtime::launch_cuda_function(ctx, **f, p.plan, slot_span, s));
                          }});
    }
    // Graphs: one node replayed per cuGraphLaunch, and one graph of per_batch nodes per batch.
    CUgraphExec one_node = nullptr, many_nodes = nullptr;
    if (extras && extras->cuStreamBeginCapture && extras->cuGraphInstantiateWithFlags && extras->cuGraphLaunch) {
      auto capture = [&](size_t launches, CUgraphExec& exec) -> std::expected<void, std::string> {
        CUgraph graph = nullptr;
        if (auto r = extras->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); r != CUDA_SUCCESS)
          return std::unexpected(cu_error(r, "cuStreamBeginCapture"));
        CUresult launch_result = CUDA_SUCCESS;
        for (size_t i = 0; i < launches && launch_result == CUDA_SUCCESS; ++i)
          launch_result = api.cuLaunchKernel(fn, 1, 1, 1, block[0], block[1], block[2], 0, s, slots, nullptr);
        CUresult end = extras->cuStreamEndCapture(s, &graph);
        if (launch_result != CUDA_SUCCESS) return std::unexpected(cu_error(launch_result, "cuLaunchKernel (capture)"));
        if (end != CUDA_SUCCESS) return std::unexpected(cu_error(end, "cuStreamEndCapture"));
        CUresult inst = extras->cuGraphInstantiateWithFlags(&exec, graph, 0);
        if (extras->cuGraphDestroy) extras->cuGraphDestroy(graph);
        if (inst != CUDA_SUCCESS) return std::unexpected(cu_error(inst, "cuGraphInstantiateWithFlags"));
        return {};
      };
      if (auto ok = capture(1, one_node); !ok) {
        out.error("launch.graph_1node." + args_tag, ok.error());
        one_node = nullptr;
      }
      if (auto ok = capture(o.per_batch, many_nodes); !ok) {
        out.error("launch.graph_nodes." + args_tag, ok.error());
        many_nodes = nullptr;
      }
    } else {
      out.error("launch.graph." + args_tag, extras ? "graph entry points missing" : extras.error());
    }
    if (one_node != nullptr)
      variants.push_back({"graph_1node_replay", o.per_batch, [&](size_t) {
                            return cu(extras->cuGraphLaunch(one_node, s), "cuGraphLaunch");
                          }});
    if (many_nodes != nullptr)
      variants.push_back({"graph_nodes_amortised", 1, [&](size_t) {
                            return cu(extras->cuGraphLaunch(many_nodes, s), "cuGraphLaunch");
                          }});

    auto run_batch = [&](Variant& v, bool record) {
      if (v.failed) return;
      auto t0 = Clock::now();
      for (size_t i = 0; i < v.per_batch; ++i) {
        if (auto ok = v.launch(i); !ok) {
          out.error(fmt::format("launch.{}.{}", v.name, args_tag), ok.error());
          v.failed = true;
          status = 1;
          break;
        }
      }
      if (auto ok = stream.synchronize(); !ok) {
        out.error(fmt::format("launch.{}.{} (synchronize)", v.name, args_tag), one_line(ok.error()));
        v.failed = true;
        status = 1;
        return;
      }
      auto t1 = Clock::now();
      size_t launches = v.name == "graph_nodes_amortised" ? o.per_batch : v.per_batch;
      if (record && !v.failed) v.per_launch_ns.push_back(ns_between(t0, t1) / static_cast<double>(launches));
    };
    // Host time: only the launch calls of a short batch are timed (the queue never fills, so the
    // GPU's pace does not enter), then the stream is drained untimed. Graph variants are left out:
    // their host cost is one cuGraphLaunch per graph, reported back to back below.
    auto host_batch = [&](Variant& v, bool record) {
      if (v.failed || v.name.rfind("graph_", 0) == 0) return;
      const size_t n = std::max<size_t>(1, std::min(o.host_per_batch, v.per_batch));
      auto t0 = Clock::now();
      for (size_t i = 0; i < n; ++i) {
        if (auto ok = v.launch(i); !ok) {
          out.error(fmt::format("launch_host.{}.{}", v.name, args_tag), ok.error());
          v.failed = true;
          status = 1;
          return;
        }
      }
      auto t1 = Clock::now();
      if (auto ok = stream.synchronize(); !ok) {
        v.failed = true;
        status = 1;
        return;
      }
      if (record) v.host_ns.push_back(ns_between(t0, t1) / static_cast<double>(n));
    };
    for (auto& v : variants) run_batch(v, false);  // warm-up: first validation, lazy loading, caches
    for (auto& v : variants) host_batch(v, false);
    auto before = p.kernel->counters();
    for (size_t b = 0; b < o.batches; ++b)
      for (auto& v : variants) run_batch(v, true);
    for (size_t b = 0; b < o.host_batches; ++b)
      for (auto& v : variants) host_batch(v, true);
    auto after = p.kernel->counters();
    // Paired ratios of host time, launch by launch: each iteration times one raw launch and one
    // launch of the variant next to each other (the order alternating), so that bursts of noise
    // and drift on the host hit both; a batch's ratio is the variant's summed time over raw's, and
    // the target uses the median over batches. The clock's own cost is subtracted from every interval.
    // The order also flips from batch to batch; raw against raw is the A/A control of the method
    // (launch.raw_over_raw: what the pairing alone gives, printed beside the A/B ratios).
    Variant* raw = nullptr;
    for (auto& v : variants)
      if (v.name == "raw" && !v.failed) raw = &v;
    for (auto& v : variants) {
      if (raw == nullptr || v.failed) continue;
      if (&v != raw && v.name != "guarded" && v.name != "kernel_api" && v.name != "first_validated" &&
          !v.name.starts_with("calib_"))
        continue;
      std::string failure;
      auto launch = [&failure](Variant& side) {
        return [&failure, &side](size_t i) {
          auto ok = side.launch(i);
          if (!ok) failure = ok.error();
          return ok.has_value();
        };
      };
      auto paired = paired_ratios(o.host_batches, o.host_per_batch, clock_ns, launch(*raw), launch(v), [&] {
        auto ok = stream.synchronize();
        if (!ok) failure = one_line(ok.error());
        return ok.has_value();
      });
      if (paired.failed) {
        out.error(fmt::format("launch.{}_over_raw.{}", v.name, args_tag), failure);
        v.failed = true;
        status = 1;
        continue;
      }
      const std::vector<double>& ratios = paired.ratios;
      if (ratios.empty()) continue;
      out.add(fmt::format("launch.{}_over_raw.{}", v.name, args_tag), "ratio", summarize(ratios),
              {{"kernel", name}, {"args", p.args.size()}, {"variant", v.name}, {"paired_with", "raw"},
               {"of", "host time, launch by launch"}, {"pairs_per_batch", o.host_per_batch},
               {"clock_ns_subtracted", clock_ns}});
    }
    for (auto& v : variants) {
      if (v.host_ns.empty()) continue;
      out.add(fmt::format("launch_host.{}.{}", v.name, args_tag), "ns", summarize(v.host_ns),
              {{"kernel", name}, {"args", p.args.size()}, {"variant", v.name},
               {"launches_per_batch", std::min(o.host_per_batch, v.per_batch)}});
    }
    for (auto& v : variants) {
      if (v.per_launch_ns.empty()) continue;
      nlohmann::json extra = {{"kernel", name}, {"args", p.args.size()}, {"variant", v.name},
                              {"launches_per_batch", v.name == "graph_nodes_amortised" ? o.per_batch : v.per_batch}};
      out.add(fmt::format("launch.{}.{}", v.name, args_tag), "ns", summarize(v.per_launch_ns), extra);
    }
    out.info("verdict_counters." + args_tag,
             {{"validated", after.validated - before.validated}, {"cached", after.cached - before.cached},
              {"driver_calls", after.driver_calls - before.driver_calls}});
    if (one_node && extras->cuGraphExecDestroy) extras->cuGraphExecDestroy(one_node);
    if (many_nodes && extras->cuGraphExecDestroy) extras->cuGraphExecDestroy(many_nodes);
    if (own_module != nullptr) (void)api.cuModuleUnload(own_module);
  }
  return status;
}

}  // namespace ptxgate::bench
