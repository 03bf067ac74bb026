// Validation cost per launch: a fresh check_launch vs the cached verdict (the plan's LaunchShape in a function's launch cache).
#include "bench_parts.hpp"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "ptxgate/runtime/context.hpp"
#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/runtime/internal/launch_cache.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/validation/launch_shape.hpp"
#include "ptxgate/toolchain/build.hpp"
#include "ptxgate/validation/profiles.hpp"

namespace ptxgate::bench {
namespace {

/// One timed launch: the kernel and the launch Kernel::launch would validate for it, every
/// argument known; the values of the scalars the kernel's memory-safety proof uses are given
/// (as the runtime passes them), buffers hold what the launch touches.
struct CostCase {
  std::string name;
  std::filesystem::path path;
  std::array<uint64_t, 3> grid{1, 1, 1};
  std::array<uint64_t, 3> block{0, 0, 0};
  uint64_t dynamic_shared = 0;
  uint64_t buffer_bytes = 0;
  std::vector<std::pair<std::string, uint64_t>> scalars;  ///< by parameter name; others 0
};

contract::LaunchPlan plan_for(const contract::KernelInfo& info, const CostCase& c) {
  contract::LaunchPlan plan;
  plan.grid = c.grid;
  plan.block = c.block;
  plan.block_given = c.block[0] != 0;
  plan.dynamic_shared_bytes = c.dynamic_shared;
  plan.arguments_known = true;
  for (const auto& p : info.params) {
    contract::ArgumentDesc d;
    d.kind = p.is_buffer ? contract::ArgumentDesc::Kind::buffer : contract::ArgumentDesc::Kind::scalar;
    d.size_bytes = p.size_bytes;
    if (p.is_buffer) {
      d.buffer_bytes = c.buffer_bytes;
    } else {
      d.scalar_type = p.type;
      if (p.value_in_access_proof) {
        d.scalar_bits = 0;
        for (const auto& [name, bits] : c.scalars)
          if (name == p.name) d.scalar_bits = bits;
      }
    }
    plan.arguments.push_back(d);
  }
  return plan;
}

volatile uint64_t g_sink = 0;  // keeps the timed work observable

}  // namespace

int run_validation_cost(const ValidationOptions& o, ResultFile& out) {
  int status = 0;
  validation::DeviceCaps caps;
  bool live = false;
  if (auto ctx = runtime::Context::open(0); ctx) {
    caps = (*ctx)->caps();
    live = true;
  } else {
    auto profile = validation::load_profile(o.profile);
    if (!profile) {
      out.error("validation.caps", one_line(profile.error()));
      return 1;
    }
    caps = *profile;
  }
  out.info("validation_caps", live ? "live device" : "profile " + o.profile);
  out.info("validation_device", caps.name);

  // Probes of 4 and 16 arguments, saxpy over 4 MiB, a 1024-square matmul, and a softmax of 1024
  // rows of 4096 floats: each at a launch whose accesses are all in bounds.
  const uint64_t mib4 = uint64_t{4} << 20;
  const std::vector<CostCase> kernels = {
      {"launch4", o.kernels_dir / "launch4.pg", {1, 1, 1}, {32, 1, 1}, 0, 4, {{"flag", 0}}},
      {"launch16", o.kernels_dir / "launch16.pg", {1, 1, 1}, {32, 1, 1}, 0, 4, {{"flag", 0}}},
      {"saxpy", o.examples_dir / "saxpy.pg", {4096, 1, 1}, {256, 1, 1}, 0, mib4, {{"n", uint64_t{1} << 20}}},
      {"matmul", o.examples_dir / "matmul.pg", {64, 64, 1}, {16, 16, 1}, 0, mib4,
       {{"m", 1024}, {"n", 1024}, {"k", 1024}}},
      {"softmax", o.kernels_dir / "softmax.pg", {1024, 1, 1}, {256, 1, 1}, 16384, uint64_t{16} << 20,
       {{"cols", 4096}}}};
  const auto toolkit = toolchain::discover();
  for (const auto& ks : kernels) {
    fmt::print("validation cost: {}\n", ks.name);
    auto text = read_text(ks.path);
    if (!text) {
      out.error("validation." + ks.name, text.error());
      status = 1;
      continue;
    }
    auto loaded = ir::load_module(diag::SourceFile(ks.path.filename().string(), *text));
    if (!loaded) {
      out.error("validation." + ks.name, one_line(loaded.error()));
      status = 1;
      continue;
    }
    codegen::CodegenOptions cg;
    cg.target = ir::target_for_module(loaded->module, caps.target());
    auto compiled = toolchain::build(loaded->module, cg, toolkit, /*assemble_cubin=*/true);
    if (!compiled || compiled->kernels.empty()) {
      out.error("validation." + ks.name, compiled ? "no kernel" : one_line(compiled.error()));
      status = 1;
      continue;
    }
    const contract::KernelInfo& info = compiled->kernels.front();
    contract::KernelResources res;
    if (auto it = compiled->resources.find(info.name); it != compiled->resources.end()) {
      res = it->second;
    } else {
      out.error("validation.resources." + ks.name, "kernel missing from ptxas report");
      res.registers_per_thread = 32;  // go on with a plausible value: the check's cost hardly depends on it
    }
    auto plan = plan_for(info, ks);
    auto verdict = validation::check_launch(info, res, plan, caps);
    if (!verdict.launchable) {
      out.error("validation." + ks.name, "plan unexpectedly blocked: " + one_line(verdict.diagnostics));
      status = 1;
      continue;
    }
    const uint32_t sites = verdict.memory ? verdict.memory->sites : 0;
    const uint32_t proven = verdict.memory ? verdict.memory->proven + verdict.memory->unreachable : 0;
    // Fresh validation: every check, occupancy included (offline, via cuda_occupancy.h), with the
    // memory-safety evaluation of the kernel's access facts, and the same without it (no facts:
    // the check of another compiler's kernel), alternating batch by batch.
    contract::KernelInfo without_facts = info;
    without_facts.access = nullptr;
    std::vector<double> fresh, fresh_without;
    // Each side's batch holds about 10 ms of checks (3 to 2000): an evaluation that takes
    // milliseconds is measured in seconds, not minutes.
    const auto iterations_for = [&](const contract::KernelInfo& k) {
      auto t0 = Clock::now();
      g_sink = g_sink + validation::check_launch(k, res, plan, caps).launchable;
      const double one = std::max(ns_between(t0, Clock::now()), 1.0);
      return std::clamp<size_t>(static_cast<size_t>(1e7 / one), 3, 2000);
    };
    const size_t iterations[2] = {iterations_for(info), iterations_for(without_facts)};
    for (size_t b = 0; b < o.batches; ++b) {
      for (int side = 0; side < 2; ++side) {
        const bool with = (side == 0) == (b % 2 == 0);
        const contract::KernelInfo& k = with ? info : without_facts;
        const size_t n = iterations[with ? 0 : 1];
        auto t0 = Clock::now();
        for (size_t i = 0; i < n; ++i) {
          auto v = validation::check_launch(k, res, plan, caps);
          g_sink = g_sink + v.launchable;
        }
        (with ? fresh : fresh_without).push_back(ns_between(t0, Clock::now()) / n);
      }
    }
    std::vector<double> memory_cost;
    for (size_t b = 0; b < fresh.size(); ++b) memory_cost.push_back(fresh[b] - fresh_without[b]);
    const nlohmann::json extra{{"kernel", ks.name}, {"sites", sites}, {"proven", proven}};
    out.add("validation.check_launch." + ks.name, "ns", summarize(fresh), extra);
    out.add("validation.check_launch_without_memory." + ks.name, "ns", summarize(fresh_without), extra);
    out.add("validation.memory_check." + ks.name, "ns", summarize(memory_cost), extra);
    // Cached verdict as the backend's launch path does it: the plan's LaunchShape, looked up in
    // a function's launch cache holding 16 shapes (the plan's among them), and the two halves apart.
    runtime::LaunchCache cache(plan.arguments.size());
    for (uint64_t g = 2; g <= runtime::LaunchCache::kEntries; ++g) {
      auto other = plan;
      other.grid[0] = g;
      cache.insert(validation::LaunchShape::of(other), {256, 1, 1});
    }
    cache.insert(validation::LaunchShape::of(plan), {256, 1, 1});
    std::vector<double> cached, shape_ns, lookup_ns;
    const size_t cached_iters = 100000;
    const validation::LaunchShape ready = validation::LaunchShape::of(plan);
    for (size_t b = 0; b < o.batches; ++b) {
      auto t0 = Clock::now();
      for (size_t i = 0; i < cached_iters; ++i) {
        plan.grid[1] = 1 + (g_sink & 0);  // the compiler cannot hoist the shape out of the loop
        g_sink = g_sink + (cache.find(validation::LaunchShape::of(plan)) ? 1 : 0);
      }
      auto t1 = Clock::now();
      for (size_t i = 0; i < cached_iters; ++i) {
        plan.grid[1] = 1 + (g_sink & 0);
        g_sink = g_sink + validation::LaunchShape::of(plan).size();
      }
      auto t2 = Clock::now();
      for (size_t i = 0; i < cached_iters; ++i) g_sink = g_sink + (cache.find(ready) ? 1 : 0);
      auto t3 = Clock::now();
      cached.push_back(ns_between(t0, t1) / cached_iters);
      shape_ns.push_back(ns_between(t1, t2) / cached_iters);
      lookup_ns.push_back(ns_between(t2, t3) / cached_iters);
    }
    out.add("validation.cached_verdict." + ks.name, "ns", summarize(cached), {{"kernel", ks.name}});
    out.add("validation.launch_shape." + ks.name, "ns", summarize(shape_ns), {{"kernel", ks.name}});
    out.add("validation.launch_cache_lookup." + ks.name, "ns", summarize(lookup_ns), {{"kernel", ks.name}});
  }
  return status;
}

int run_emit(const std::filesystem::path& examples_dir, const std::filesystem::path& kernels_dir,
             const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  int status = 0;
  auto sources = quality_kernels(examples_dir, kernels_dir);
  for (auto& extra : bandwidth_kernels(kernels_dir)) sources.push_back(extra);
  for (auto& extra : workload_modules(kernels_dir)) sources.push_back(extra);
  for (const std::string probe : {"launch0", "launch4", "launch16"}) sources.push_back({probe, kernels_dir / (probe + ".pg")});
  for (const auto& ks : sources) {
    auto text = read_text(ks.path);
    auto loaded = text ? ir::load_module(diag::SourceFile(ks.path.filename().string(), *text))
                       : std::expected<ir::LoadedModule, diag::Diagnostics>(std::unexpected(diag::Diagnostics{}));
    if (!loaded) {
      fmt::print(stderr, "emit {}: {}\n", ks.name, text ? one_line(loaded.error()) : text.error());
      status = 1;
      continue;
    }
    module_cache::CompileRequest req;
    req.codegen.target = ir::target_for_module(loaded->module, ir::Target(90));  // sm_90a for wgmma + TMA
    auto entry = module_cache::compile_to_entry(loaded->module, req, req.toolkit());
    if (!entry) {
      fmt::print(stderr, "emit {}: {}\n", ks.name, one_line(entry.error()));
      status = 1;
      continue;
    }
    std::ofstream(dir / (ks.name + ".ptx")) << entry->ptx;
    std::ofstream(dir / (ks.name + ".cubin"), std::ios::binary) << entry->cubin;
    std::string log = entry->resources.is_object() && entry->resources.contains("ptxas_log") &&
                              entry->resources["ptxas_log"].is_string()
                          ? entry->resources["ptxas_log"].get<std::string>()
                          : entry->resources.dump(2);
    std::ofstream(dir / (ks.name + ".ptxas.txt")) << log;
    fmt::print("emit {}: {} bytes PTX, {} bytes cubin\n", ks.name, entry->ptx.size(), entry->cubin.size());
  }
  return status;
}

}  // namespace ptxgate::bench
