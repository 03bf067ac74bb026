// Compile latency: text -> PTX, text -> cubin, in-process cache hits and disk hits in fresh processes.
#include "bench_parts.hpp"
#include "nvrtc.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/module_cache/module_cache.hpp"
#include "ptxgate/toolchain/build.hpp"

namespace ptxgate::bench {
namespace {

double ms_between(Clock::time_point a, Clock::time_point b) { return ns_between(a, b) * 1e-6; }

module_cache::CompileRequest cubin_request() {
  module_cache::CompileRequest req;
  req.codegen.target = ir::Target(90);
  req.produce_cubin = true;
  return req;
}

/// Parse + verify + key + ModuleCache lookup (compiling on a miss); the outcome says which tier answered.
std::expected<module_cache::CacheOutcome, std::string> cached_compile(module_cache::ModuleCache& cache,
                                                                      const std::string& path,
                                                                      const std::string& text) {
  auto loaded = ir::load_module(diag::SourceFile(path, text));
  if (!loaded) return std::unexpected(one_line(loaded.error()));
  auto got = cache.compile(loaded->module, cubin_request());
  if (!got) return std::unexpected(one_line(got.error()));
  return got->outcome;
}

Summary single(double v) { return summarize({v}); }

std::unique_ptr<runtime::Runtime> fresh_runtime(bool prefer_cubin) {
  runtime::RuntimeOptions ro;
  ro.cache.use_disk = false;
  ro.prefer_cubin = prefer_cubin;
  auto r = runtime::Runtime::create(ro);
  return r ? std::move(*r) : nullptr;
}

void cold_path(const CompileOptions& o, const KernelSource& ks, const std::string& path, const std::string& text,
               ResultFile& out, int& status) {
  const nlohmann::json tag{{"kernel", ks.name}};
  const std::string& kernel = ks.kernel.empty() ? ks.name : ks.kernel;
  for (const bool cubin : {true, false}) {
    const std::string row = cubin ? "compile.cold_cubin_load." + ks.name : "compile.cold_jit_load." + ks.name;
    std::vector<double> ms;
    for (size_t i = 0; i < o.cold_repetitions; ++i) {
      auto rt = fresh_runtime(cubin);
      if (!rt) break;
      auto t0 = Clock::now();
      auto k = rt->compile(text, kernel, path);
      double took = ms_between(t0, Clock::now());
      if (!k) {
        out.error(row, one_line(k.error()));
        status = 1;
        break;
      }
      ms.push_back(took);
    }
    if (!ms.empty()) out.add(row, "ms", summarize(ms), tag);
  }
  const std::filesystem::path twin = o.twins_dir / (ks.name + ".cu");
  auto nvrtc = Nvrtc::get();
  auto twin_text = read_text(twin);
  if (!nvrtc || !twin_text) {
    out.error("compile.nvrtc_cubin_load." + ks.name, !nvrtc ? nvrtc.error() : twin_text.error());
    return;
  }
  const std::string arch = "sm_" + twin_arch(*twin_text);
  (void)(*nvrtc)->compile(*twin_text, twin.filename().string(), arch, true);  // NVRTC's first-use costs
  std::vector<double> ms;
  for (size_t i = 0; i < o.cold_repetitions; ++i) {
    auto rt = fresh_runtime(true);
    if (!rt) break;
    const std::string source = uncached_source(*twin_text, fmt::format("cold_{}", i));
    auto t0 = Clock::now();
    auto cubin = (*nvrtc)->compile(source, twin.filename().string(), arch, true);
    if (!cubin) {
      out.error("compile.nvrtc_cubin_load." + ks.name, cubin.error());
      status = 1;
      return;
    }
    auto k = rt->load_foreign(*cubin, kernel, twin.filename().string(), "");
    double took = ms_between(t0, Clock::now());
    if (!k) {
      out.error("compile.nvrtc_cubin_load." + ks.name, one_line(k.error()));
      status = 1;
      return;
    }
    ms.push_back(took);
  }
  if (!ms.empty()) out.add("compile.nvrtc_cubin_load." + ks.name, "ms", summarize(ms), tag);
}

}  // namespace

std::vector<KernelSource> quality_kernels(const std::filesystem::path& examples_dir,
                                          const std::filesystem::path& kernels_dir) {
  return {{"saxpy", examples_dir / "saxpy.pg"},
          {"copy", kernels_dir / "copy.pg"},
          {"block_sum", examples_dir / "block_sum.pg"},
          {"matmul", examples_dir / "matmul.pg"}};
}

std::vector<KernelSource> bandwidth_kernels(const std::filesystem::path& kernels_dir) {
  return {{"copy4", kernels_dir / "copy4.pg"}, {"saxpy4", kernels_dir / "saxpy4.pg"}};
}

std::vector<KernelSource> workload_modules(const std::filesystem::path& kernels_dir) {
  std::vector<KernelSource> out;
  for (const char* name : {"warp_sum", "softmax", "layer_norm", "axpy_half", "bfs", "sgemm", "gemm_bf16_wgmma", "gemm_bf16_mma"})
    out.push_back({name, kernels_dir / (std::string(name) + ".pg")});
  return out;
}

int run_compile_latency(const CompileOptions& o, ResultFile& out) {
  int status = 0;
  std::error_code ec;
  std::filesystem::remove_all(o.cache_dir, ec);  // every entry is published by this run
  std::filesystem::create_directories(o.cache_dir, ec);
  out.info("llvm_version", codegen::llvm_version());
  out.info("ptxgate_version", module_cache::ptxgate_version());
  const auto toolkit = toolchain::discover();
  out.info("ptxas_version", toolkit.ptxas ? toolchain::ptxas_version(*toolkit.ptxas) : std::string());

  std::unique_ptr<runtime::Runtime> rt;
  if (o.with_gpu) {
    runtime::RuntimeOptions ro;
    ro.cache.directory = o.cache_dir;
    auto r = runtime::Runtime::create(ro);
    if (r) {
      rt = std::move(*r);
    } else {
      out.info("runtime", "no CUDA driver or device: Runtime::compile timings skipped");
      fmt::print("  no CUDA driver or device: Runtime::compile timings skipped\n");
    }
  }
  module_cache::ModuleCacheOptions disk_options;
  disk_options.directory = o.cache_dir;
  module_cache::ModuleCache disk_cache(disk_options);
  module_cache::ModuleCacheOptions memory_options;
  memory_options.use_disk = false;
  module_cache::ModuleCache memory_cache(memory_options);

  if (o.cold_all) {
    // The cold path alone, of every example and benchmark kernel with a CUDA C++ twin (its first kernel).
    if (!rt) {
      fmt::print("SKIPPED: the cold path needs a CUDA driver and device\n");
      return 77;
    }
    for (const auto& dir : {o.examples_dir, o.kernels_dir}) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
        if (entry.path().extension() == ".pg" && std::filesystem::exists(o.twins_dir / (entry.path().stem().string() + ".cu")))
          files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const auto& file : files) {
        auto text = read_text(file);
        if (!text) {
          out.error("compile.cold." + file.stem().string(), text.error());
          status = 1;
          continue;
        }
        auto loaded = ir::load_module(diag::SourceFile(file.filename().string(), *text));
        if (!loaded || loaded->module.kernels.empty()) {
          out.error("compile.cold." + file.stem().string(), loaded ? "no kernel" : one_line(loaded.error()));
          status = 1;
          continue;
        }
        fmt::print("cold path: {}\n", file.stem().string());
        cold_path(o, {file.stem().string(), file, loaded->module.kernels.front().name}, file.filename().string(), *text,
                  out, status);
      }
    }
    return status;
  }

  for (const auto& ks : quality_kernels(o.examples_dir, o.kernels_dir)) {
    if (!o.only.empty() && ks.name != o.only) continue;
    fmt::print("compile latency: {}\n", ks.name);
    auto text = read_text(ks.path);
    if (!text) {
      out.error("compile." + ks.name, text.error());
      status = 1;
      continue;
    }
    const std::string path = ks.path.filename().string();
    auto to_ptx_with = [&](bool llvm_pipeline) -> std::expected<double, std::string> {
      auto t0 = Clock::now();
      auto loaded = ir::load_module(diag::SourceFile(path, *text));
      if (!loaded) return std::unexpected(one_line(loaded.error()));
      codegen::CodegenOptions cg;
      cg.target = ir::Target(90);
      cg.llvm_pipeline = llvm_pipeline;
      auto compiled = toolchain::build(loaded->module, cg, toolkit, /*assemble_cubin=*/false);
      if (!compiled) return std::unexpected(one_line(compiled.error()));
      return ms_between(t0, Clock::now());
    };
    auto to_ptx = [&] { return to_ptx_with(false); };
    auto to_cubin = [&]() -> std::expected<double, std::string> {
      auto t0 = Clock::now();
      auto loaded = ir::load_module(diag::SourceFile(path, *text));
      if (!loaded) return std::unexpected(one_line(loaded.error()));
      auto entry = module_cache::compile_to_entry(loaded->module, cubin_request(), toolkit);
      if (!entry) return std::unexpected(one_line(entry.error()));
      if (entry->cubin.empty()) return std::unexpected(std::string("no cubin produced"));
      return ms_between(t0, Clock::now());
    };
    auto repeat = [&](const std::string& row, size_t reps, auto&& once) {
      std::vector<double> ms;
      for (size_t i = 0; i < reps; ++i) {
        auto t = once();
        if (!t) {
          out.error(row, t.error());
          status = 1;
          return;
        }
        ms.push_back(*t);
      }
      out.add(row, "ms", summarize(ms), {{"kernel", ks.name}});
    };
    if (auto first = to_ptx(); first)
      out.add("compile.ptx_first_in_process." + ks.name, "ms", single(*first), {{"kernel", ks.name}});
    repeat("compile.ptx." + ks.name, o.repetitions, to_ptx);
    // The same with LLVM's standard O3 pipeline instead of ptxgate's kernel pipeline.
    repeat("compile.ptx_llvm_o3." + ks.name, o.repetitions, [&] { return to_ptx_with(true); });
    repeat("compile.cubin." + ks.name, std::max<size_t>(o.repetitions / 2, 3), to_cubin);

    // In-process hit of the module cache (parse, verify, key, lookup; no LLVM).
    if (auto warm = cached_compile(memory_cache, path, *text); !warm) {
      out.error("compile.memory_hit." + ks.name, warm.error());
      status = 1;
    } else {
      repeat("compile.memory_hit." + ks.name, o.repetitions * 20, [&]() -> std::expected<double, std::string> {
        auto t0 = Clock::now();
        auto outcome = cached_compile(memory_cache, path, *text);
        double ms = ms_between(t0, Clock::now());
        if (!outcome) return std::unexpected(outcome.error());
        if (*outcome != module_cache::CacheOutcome::memory_hit)
          return std::unexpected(fmt::format("expected a memory hit, got {}", module_cache::outcome_name(*outcome)));
        return ms;
      });
    }
    // Runtime::compile hit: module cache + loaded-module tier + a new Kernel handle.
    if (rt) {
      if (auto warm = rt->compile(*text, ks.name, path); !warm) {
        out.error("compile.runtime_hit." + ks.name, one_line(warm.error()));
        status = 1;
      } else {
        repeat("compile.runtime_hit." + ks.name, o.repetitions * 20, [&]() -> std::expected<double, std::string> {
          auto t0 = Clock::now();
          auto k = rt->compile(*text, ks.name, path);
          double ms = ms_between(t0, Clock::now());
          if (!k) return std::unexpected(one_line(k.error()));
          return ms;
        });
      }
    }
    // The cold path: text -> a loaded module in a Runtime that has not seen the kernel (memory-only
    // caches), ptxas's cubin + cuModuleLoadData or the PTX through the driver's JIT (its cache is off),
    // against NVRTC -> cubin -> cuModuleLoadData of the CUDA C++ twin; only the compile and load are timed,
    // `rt` keeps the context alive between the fresh Runtimes.
    if (rt) cold_path(o, ks, path, *text, out, status);
    // Disk hit in a fresh process: publish the entry here, then time the child's first lookup.
    if (auto warm = cached_compile(disk_cache, path, *text); !warm) {
      out.error("compile.disk_hit." + ks.name, warm.error());
      status = 1;
      continue;
    }
    std::vector<double> cache_ms, runtime_ms;
    // Each mode in its own fresh process: memoised versions and hashes must not leak between them.
    for (const std::string mode : {"cache", "runtime"}) {
      if (mode == "runtime" && !rt) continue;
      const std::string row = mode == "cache" ? "compile.disk_hit." + ks.name : "compile.disk_hit_runtime." + ks.name;
      for (size_t i = 0; i < o.fresh_processes && !o.self.empty(); ++i) {
        std::string cmd = fmt::format("'{}' disk-hit --mode {} --source '{}' --kernel '{}' --cache-dir '{}'", o.self,
                                      mode, ks.path.string(), ks.name, o.cache_dir.string());
        FILE* pipe = popen(cmd.c_str(), "r");
        if (pipe == nullptr) {
          out.error(row, "popen failed");
          status = 1;
          break;
        }
        std::string child_out;
        char buf[4096];
        while (size_t got = fread(buf, 1, sizeof buf, pipe)) child_out.append(buf, got);
        int rc = pclose(pipe);
        auto j = nlohmann::json::parse(child_out, nullptr, false);
        if (rc != 0 || j.is_discarded() || !j.contains("ms") || j.value("outcome", "") != "disk_hit") {
          out.error(row, fmt::format("child did not report a disk hit (status {}): {}", rc, child_out));
          status = 1;
          break;
        }
        (mode == "cache" ? cache_ms : runtime_ms).push_back(j["ms"].get<double>());
      }
    }
    if (!cache_ms.empty()) out.add("compile.disk_hit." + ks.name, "ms", summarize(cache_ms), {{"kernel", ks.name}});
    if (!runtime_ms.empty())
      out.add("compile.disk_hit_runtime." + ks.name, "ms", summarize(runtime_ms), {{"kernel", ks.name}});
  }
  return status;
}

int run_disk_hit_child(const std::string& mode, const std::filesystem::path& source, const std::string& kernel,
                       const std::filesystem::path& cache_dir) {
  nlohmann::json j;
  j["mode"] = mode;
  auto text = read_text(source);
  if (!text) {
    j["error"] = text.error();
    fmt::print("{}\n", j.dump());
    return 1;
  }
  const std::string path = source.filename().string();
  if (mode == "cache") {
    module_cache::ModuleCacheOptions opts;
    opts.directory = cache_dir;
    auto t0 = Clock::now();
    module_cache::ModuleCache cache(opts);
    auto outcome = cached_compile(cache, path, *text);
    j["ms"] = ms_between(t0, Clock::now());
    if (outcome)
      j["outcome"] = std::string(module_cache::outcome_name(*outcome));
    else
      j["error"] = outcome.error();
  } else {
    runtime::RuntimeOptions ro;
    ro.cache.directory = cache_dir;
    auto rt = runtime::Runtime::create(ro);  // context creation is not part of the compile
    if (rt) {
      auto t0 = Clock::now();
      auto k = (*rt)->compile(*text, kernel, path);
      j["ms"] = ms_between(t0, Clock::now());
      if (k)
        j["outcome"] = std::string(module_cache::outcome_name((*k)->cache_outcome()));
      else
        j["error"] = one_line(k.error());
    } else {
      j["error"] = one_line(rt.error());
    }
  }
  fmt::print("{}\n", j.dump());
  return 0;
}

}  // namespace ptxgate::bench
