// Compile latency: median of N in-process runs of parse + verify + compile (text -> PTX) per example.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/access_analysis.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/toolchain/build.hpp"

namespace fs = std::filesystem;
using namespace ptxgate;
using Clock = std::chrono::steady_clock;

namespace {

struct Sample {
  std::string name;
  double first_ms = 0;       ///< the first compile of this file in the process
  double median_ms = 0;      ///< parse + verify + compile, wall clock
  double cpu_median_ms = 0;  ///< the same, CPU time of the compiling thread (robust on a busy machine)
  double min_ms = 0;
  double p90_ms = 0;
  double frontend_median_ms = 0;  ///< parse + verify only
  double to_llvm_median_ms = 0;   ///< parse + verify + lower + optimise (no PTX emission)
  double access_median_ms = 0;    ///< the memory-safety access analysis of every kernel (part of verify)
  size_t ptx_bytes = 0;
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t at = static_cast<size_t>(p * double(v.size() - 1) + 0.5);
  return v[std::min(at, v.size() - 1)];
}

/// One full compile from text; returns false (after printing why) on any diagnostic.
bool compile_once(const std::string& name, const std::string& text, const codegen::CodegenOptions& options,
                  size_t* ptx_bytes) {
  auto loaded = ir::load_module(diag::SourceFile(name, text));
  if (!loaded) {
    std::fputs(diag::render_text(loaded.error()).c_str(), stderr);
    return false;
  }
  auto compiled = codegen::compile(loaded->module, options);  // options carry the toolkit's libdevice
  if (!compiled) {
    std::fputs(diag::render_text(compiled.error()).c_str(), stderr);
    return false;
  }
  if (ptx_bytes) *ptx_bytes = compiled->ptx.size();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ptxgate compile-latency benchmark: median of N in-process compiles of each example"};
  unsigned runs = 200;
  std::string target = "sm_90";
  std::string examples_dir = std::string(PTXGATE_SOURCE_DIR) + "/examples";
  bool json = false;
  app.add_option("-n,--runs", runs, "Timed runs per example")->check(CLI::Range(1u, 100000u));
  app.add_option("--target", target, "Target architecture")->check(CLI::IsMember(codegen::supported_targets()));
  app.add_option("--examples", examples_dir, "Directory of .pg files");
  unsigned opt_level = 3;
  app.add_option("-O,--opt-level", opt_level, "Optimisation level (0..3)")->check(CLI::Range(0u, 3u));
  bool llvm_pipeline = false;
  app.add_flag("--llvm-pipeline", llvm_pipeline, "At -O2/-O3, LLVM's standard pipeline instead of ptxgate's");
  app.add_flag("--json", json, "Print JSON instead of a table");
  CLI11_PARSE(app, argc, argv);

  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(examples_dir))
    if (entry.path().extension() == ".pg") files.push_back(entry.path());
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    // saxpy first: it is the headline number.
    bool a_saxpy = a.stem() == "saxpy", b_saxpy = b.stem() == "saxpy";
    return a_saxpy != b_saxpy ? a_saxpy : a < b;
  });
  if (files.empty()) {
    std::fprintf(stderr, "no .pg files in %s\n", examples_dir.c_str());
    return 1;
  }

  codegen::CodegenOptions options = toolchain::with_toolkit({}, toolchain::discover());
  options.target = target;
  options.opt_level = opt_level;
  options.llvm_pipeline = llvm_pipeline;
  std::vector<Sample> samples;
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Sample s;
    s.name = file.stem().string();
    auto start = Clock::now();
    if (!compile_once(s.name, text, options, &s.ptx_bytes)) return 1;
    s.first_ms = ms_since(start);

    std::vector<double> total, cpu, frontend, to_llvm, access;
    for (unsigned i = 0; i < runs; ++i) {
      start = Clock::now();
      double cpu_start = thread_cpu_ms();
      compile_once(s.name, text, options, nullptr);
      cpu.push_back(thread_cpu_ms() - cpu_start);
      total.push_back(ms_since(start));
      start = Clock::now();
      auto loaded = ir::load_module(diag::SourceFile(s.name, text));
      frontend.push_back(ms_since(start));
      if (loaded) {
        start = Clock::now();
        (void)codegen::emit_llvm_ir(loaded->module, options);
        to_llvm.push_back(ms_since(start) + frontend.back());
        const diag::SourceFile source(s.name, text);
        start = Clock::now();
        for (const ir::Kernel& k : loaded->module.kernels) (void)ir::analyze_accesses(k, &source);
        access.push_back(ms_since(start));
      }
    }
    s.to_llvm_median_ms = to_llvm.empty() ? 0 : percentile(to_llvm, 0.5);
    s.access_median_ms = access.empty() ? 0 : percentile(access, 0.5);
    s.median_ms = percentile(total, 0.5);
    s.cpu_median_ms = percentile(cpu, 0.5);
    s.min_ms = percentile(total, 0.0);
    s.p90_ms = percentile(total, 0.9);
    s.frontend_median_ms = percentile(frontend, 0.5);
    samples.push_back(s);
  }

  if (json) {
    nlohmann::json out{{"target", target}, {"runs", runs}, {"llvm", codegen::llvm_version()}, {"examples", nlohmann::json::array()}};
    for (const auto& s : samples)
      out["examples"].push_back({{"name", s.name}, {"first_ms", s.first_ms}, {"median_ms", s.median_ms}, {"cpu_median_ms", s.cpu_median_ms},
                                 {"min_ms", s.min_ms}, {"p90_ms", s.p90_ms},
                                 {"frontend_median_ms", s.frontend_median_ms},
                                 {"to_llvm_median_ms", s.to_llvm_median_ms},
                                 {"access_analysis_median_ms", s.access_median_ms}, {"ptx_bytes", s.ptx_bytes}});
    std::puts(out.dump(2).c_str());
    return 0;
  }
  std::printf("%s", fmt::format("compile latency, text -> PTX in-process, target {}, -O{} ({} pipeline), LLVM {}, {} runs each\n\n",
                                target, opt_level, llvm_pipeline || opt_level < 2 ? "LLVM" : "ptxgate kernel",
                                codegen::llvm_version(), runs)
                        .c_str());
  std::printf("%s", fmt::format("| {:<12} | {:>10} | {:>14} | {:>10} | {:>8} | {:>8} | {:>14} | {:>16} | {:>16} | {:>9} |\n",
                                "example", "median ms", "cpu median ms", "first ms", "min ms", "p90 ms", "front end ms",
                                "to LLVM IR ms", "access analysis", "PTX bytes")
                        .c_str());
  std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(14, '-').c_str(), std::string(12, '-').c_str(),
              std::string(16, '-').c_str(), std::string(12, '-').c_str(), std::string(10, '-').c_str(), std::string(10, '-').c_str(),
              std::string(16, '-').c_str(), std::string(18, '-').c_str(), std::string(18, '-').c_str(), std::string(11, '-').c_str());
  double access_sum = 0, median_sum = 0, worst_share = 0;
  for (const auto& s : samples) {
    const double share = s.median_ms > 0 ? 100.0 * s.access_median_ms / s.median_ms : 0;
    access_sum += s.access_median_ms;
    median_sum += s.median_ms;
    worst_share = std::max(worst_share, share);
    std::printf("%s", fmt::format("| {:<12} | {:>10.3f} | {:>14.3f} | {:>10.3f} | {:>8.3f} | {:>8.3f} | {:>14.3f} | {:>16.3f} | {:>8.3f} ({:>4.1f}%) | {:>9} |\n",
                                  s.name, s.median_ms, s.cpu_median_ms, s.first_ms, s.min_ms, s.p90_ms, s.frontend_median_ms,
                                  s.to_llvm_median_ms, s.access_median_ms, share, s.ptx_bytes)
                          .c_str());
  }
  std::printf("%s", fmt::format("\naccess analysis (memory safety, inside verify): {:.3f} ms of {:.3f} ms over all files "
                                "({:.2f}% of text -> PTX; worst file {:.2f}%)\n",
                                access_sum, median_sum, median_sum > 0 ? 100.0 * access_sum / median_sum : 0, worst_share)
                        .c_str());
  return 0;
}
