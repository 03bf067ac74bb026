// Validation cost per launch: a fresh check_launch vs the cached verdict (exact same_shape comparison), and the hashed VerdictCache.
#include "bench_parts.hpp"

#include <fstream>

#include <fmt/format.h>

#include "ptxgate/backend/context.hpp"
#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/validation/check.hpp"
#include "ptxgate/toolchain/build.hpp"
#include "ptxgate/validation/profiles.hpp"

namespace ptxgate::bench {
namespace {

/// A plan like Kernel::launch builds: every argument known, buffers of 4 MiB, a 4096-block grid.
validation::LaunchPlan plan_for(const codegen::KernelInfo& info) {
  validation::LaunchPlan plan;
  plan.grid = {4096, 1, 1};
  plan.arguments_known = true;
  for (const auto& p : info.params) {
    validation::ArgumentDesc d;
    d.kind = p.is_buffer ? validation::ArgumentDesc::Kind::buffer : validation::ArgumentDesc::Kind::scalar;
    d.size_bytes = p.size_bytes;
    if (p.is_buffer)
      d.buffer_bytes = uint64_t{4} << 20;
    else
      d.scalar_type = p.type;
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
  if (auto ctx = backend::Context::open(0); ctx) {
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

  const std::vector<KernelSource> kernels = {{"launch4", o.kernels_dir / "launch4.pg"},
                                             {"launch16", o.kernels_dir / "launch16.pg"},
                                             {"saxpy", o.examples_dir / "saxpy.pg"},
                                             {"matmul", o.examples_dir / "matmul.pg"}};
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
    cg.target = caps.arch();
    auto compiled = toolchain::build(loaded->module, cg, toolkit, /*assemble_cubin=*/true);
    if (!compiled || compiled->kernels.empty()) {
      out.error("validation." + ks.name, compiled ? "no kernel" : one_line(compiled.error()));
      status = 1;
      continue;
    }
    const codegen::KernelInfo& info = compiled->kernels.front();
    validation::KernelResources res;
    if (auto it = compiled->resources.find(info.name); it != compiled->resources.end()) {
      res = it->second;
    } else {
      out.error("validation.resources." + ks.name, "kernel missing from ptxas report");
      res.registers_per_thread = 32;  // go on with a plausible value: the check's cost hardly depends on it
    }
    auto plan = plan_for(info);
    auto verdict = validation::check_launch(info, res, plan, caps);
    if (!verdict.launchable) {
      out.error("validation." + ks.name, "plan unexpectedly blocked: " + one_line(verdict.diagnostics));
      status = 1;
      continue;
    }
    // Fresh validation: every check, occupancy included (offline, via cuda_occupancy.h).
    std::vector<double> fresh;
    const size_t fresh_iters = 2000;
    for (size_t b = 0; b < o.batches; ++b) {
      auto t0 = Clock::now();
      for (size_t i = 0; i < fresh_iters; ++i) {
        auto v = validation::check_launch(info, res, plan, caps);
        g_sink = g_sink + v.launchable;
      }
      fresh.push_back(ns_between(t0, Clock::now()) / fresh_iters);
    }
    out.add("validation.check_launch." + ks.name, "ns", summarize(fresh), {{"kernel", ks.name}});
    // Cached verdict as the backend's steady launch path does it: an exact comparison of the
    // plan with the last validated plan of this function (validation::same_shape).
    {
      const validation::LaunchPlan remembered = plan;
      std::vector<double> memo;
      const size_t memo_iters = 100000;
      for (size_t b = 0; b < o.batches; ++b) {
        auto t0 = Clock::now();
        for (size_t i = 0; i < memo_iters; ++i) {
          plan.grid[1] = 1 + (g_sink & 0);  // the compiler cannot hoist the comparison
          g_sink = g_sink + (validation::same_shape(remembered, plan) ? 1 : 0);
        }
        memo.push_back(ns_between(t0, Clock::now()) / memo_iters);
      }
      out.add("validation.cached_verdict." + ks.name, "ns", summarize(memo), {{"kernel", ks.name}});
    }
    // The hashed VerdictCache (shape_of + lookup among 16 entries), for library users.
    validation::VerdictCache cache;
    for (uint64_t g = 1; g < validation::VerdictCache::kCapacity; ++g) {
      auto other = plan;
      other.grid[0] = g;
      cache.store(validation::shape_of(other), true);
    }
    cache.store(validation::shape_of(plan), true);
    std::vector<double> cached;
    const size_t cached_iters = 100000;
    for (size_t b = 0; b < o.batches; ++b) {
      auto t0 = Clock::now();
      for (size_t i = 0; i < cached_iters; ++i) {
        plan.grid[1] = 1 + (g_sink & 0);  // the compiler cannot hoist shape_of out of the loop
        auto hit = cache.lookup(validation::shape_of(plan));
        g_sink = g_sink + (hit.value_or(false) ? 1 : 0);
      }
      cached.push_back(ns_between(t0, Clock::now()) / cached_iters);
    }
    out.add("validation.hashed_verdict_cache." + ks.name, "ns", summarize(cached), {{"kernel", ks.name}});
    // The two halves of the cached path, apart: hashing the plan, and the lookup of a ready shape.
    std::vector<double> shape_ns, lookup_ns;
    const validation::PlanShape ready = validation::shape_of(plan);
    for (size_t b = 0; b < o.batches; ++b) {
      auto t0 = Clock::now();
      for (size_t i = 0; i < cached_iters; ++i) {
        plan.grid[1] = 1 + (g_sink & 0);
        g_sink = g_sink + validation::shape_of(plan).arguments_hash;
      }
      auto t1 = Clock::now();
      for (size_t i = 0; i < cached_iters; ++i) {
        validation::PlanShape probe = ready;
        probe.grid[1] = 1 + (g_sink & 0);
        g_sink = g_sink + (cache.lookup(probe).value_or(false) ? 1 : 0);
      }
      auto t2 = Clock::now();
      shape_ns.push_back(ns_between(t0, t1) / cached_iters);
      lookup_ns.push_back(ns_between(t1, t2) / cached_iters);
    }
    out.add("validation.shape_of." + ks.name, "ns", summarize(shape_ns), {{"kernel", ks.name}});
    out.add("validation.verdict_lookup." + ks.name, "ns", summarize(lookup_ns), {{"kernel", ks.name}});
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
    req.codegen.target = "sm_90";
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
