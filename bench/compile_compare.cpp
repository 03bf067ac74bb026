// Compile speed against NVRTC, per phase, on every example and benchmark kernel; generated kernels for the
// size curve; ptxas's registers and code size checked against a recorded baseline (no quality traded).
#include "compile_compare.hpp"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "nvrtc.hpp"
#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/support/temp_dir.hpp"
#include "ptxgate/toolchain/build.hpp"
#include "ptxgate/toolchain/internal/process.hpp"

namespace ptxgate::bench {
namespace {

namespace fs = std::filesystem;

/// User + system CPU time of `who` (RUSAGE_SELF: every thread of this process, NVRTC's own included;
/// RUSAGE_CHILDREN: the waited-for children, each ptxas run), ms.
double cpu_ms(int who) {
  auto ms = [](const timeval& t) { return double(t.tv_sec) * 1e3 + double(t.tv_usec) * 1e-3; };
  rusage u{};
  getrusage(who, &u);
  return ms(u.ru_utime) + ms(u.ru_stime);
}

/// CPU time of this process and of its waited-for children, ms.
double process_cpu_ms() { return cpu_ms(RUSAGE_SELF) + cpu_ms(RUSAGE_CHILDREN); }

double ms_between(Clock::time_point a, Clock::time_point b) { return ns_between(a, b) * 1e-6; }

/// Peak resident memory of this process so far, MiB.
double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

/// A wall-clock and a CPU sample of one call (process_cpu_ms: the child ptxas counts, and on a shared
/// machine CPU time is steadier than wall time).
struct Timed {
  double wall_ms = 0, cpu_ms = 0;
};

template <class F>
auto timed(Timed& t, F&& f) {
  auto w0 = Clock::now();
  double c0 = process_cpu_ms();
  auto result = f();
  t.cpu_ms = process_cpu_ms() - c0;
  t.wall_ms = ms_between(w0, Clock::now());
  return result;
}

struct Series {
  std::vector<double> wall, cpu;
  void add(const Timed& t) {
    wall.push_back(t.wall_ms);
    cpu.push_back(t.cpu_ms);
  }
  double median() const { return summarize(wall).median; }
  double cpu_median() const { return summarize(cpu).median; }
};

struct Kernel {
  std::string name;
  fs::path source;
  fs::path twin;  ///< the CUDA C++ twin, when there is one
};

std::vector<Kernel> kernels_of(const CompareOptions& o) {
  std::vector<Kernel> out;
  for (const fs::path& dir : {o.examples_dir, o.kernels_dir}) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".pg") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      Kernel k{f.stem().string(), f, {}};
      if (!o.only.empty() && k.name != o.only) continue;
      if (fs::path twin = o.twins_dir / (k.name + ".cu"); !o.twins_dir.empty() && fs::exists(twin)) k.twin = twin;
      if (o.twins_only && k.twin.empty()) continue;
      out.push_back(std::move(k));
    }
  }
  return out;
}

/// One measured compile: what it produced or why it failed.
struct Product {
  std::string error;
  toolchain::Build build;
};

Product ptxgate_compile(const std::string& path, const std::string& text, const toolchain::Toolkit& toolkit,
                        bool cubin, uint64_t budget = codegen::kDefaultInstructionBudget) {
  Product p;
  auto loaded = ir::load_module(diag::SourceFile(path, text));
  if (!loaded) {
    p.error = one_line(loaded.error());
    return p;
  }
  codegen::CodegenOptions cg;
  cg.target = ir::target_for_module(loaded->module, ir::Target(90));  // sm_90a for Hopper's operations
  cg.instruction_budget = budget;
  auto built = toolchain::build(loaded->module, cg, toolkit, cubin);
  if (!built)
    p.error = one_line(built.error());
  else
    p.build = std::move(*built);
  return p;
}

/// The phases of one compile, each timed on its own: parse + verify; lowering, libdevice and the
/// optimisation pipeline (codegen::emit_llvm_ir, which also prints the IR); the whole text -> PTX;
/// ptxas on that PTX (a child process).
struct Phases {
  Series frontend, to_llvm, to_ptx, ptxas;
};

std::string measure_phases(const std::string& path, const std::string& text, const toolchain::Toolkit& toolkit,
                           Phases& ph) {
  Timed t;
  auto loaded = timed(t, [&] { return ir::load_module(diag::SourceFile(path, text)); });
  if (!loaded) return one_line(loaded.error());
  ph.frontend.add(t);
  codegen::CodegenOptions cg = toolchain::with_toolkit({}, toolkit);
  cg.target = ir::target_for_module(loaded->module, ir::Target(90));
  auto ir_text = timed(t, [&] { return codegen::emit_llvm_ir(loaded->module, cg); });
  if (!ir_text) return one_line(ir_text.error());
  ph.to_llvm.add(t);
  auto ptx = timed(t, [&] { return codegen::compile(loaded->module, cg); });
  if (!ptx) return one_line(ptx.error());
  ph.to_ptx.add(t);
  if (toolkit.ptxas) {
    auto cubin = timed(t, [&] { return toolchain::assemble(ptx->ptx, cg.target.name(), toolkit); });
    if (!cubin) return one_line(cubin.error());
    ph.ptxas.add(t);
  }
  return {};
}

/// nvcc's PTX of a twin: `nvcc -ptx -arch=sm_ARCH -O3`, the options its cubin is built with for the kernel
/// benchmarks (scripts/bench_gpu.sh), with the nvcc beside `ptxas`. NVRTC's PTX of the same source differs
/// (other registers and instructions for sgemm, unused `.global` constants for the GEMMs).
std::expected<std::string, std::string> nvcc_ptx(const fs::path& twin, const std::string& arch, const std::string& ptxas) {
  const fs::path nvcc = fs::path(ptxas).parent_path() / "nvcc";
  if (!fs::exists(nvcc)) return std::unexpected(fmt::format("no nvcc beside {}", ptxas));
  auto dir = support::TempDir::create_in_tmp("ptxgate-nvcc-");
  if (!dir) return std::unexpected(dir.error());
  const fs::path out = dir->path() / "twin.ptx";
  auto run = toolchain::run_process({nvcc.string(), "-ptx", "-arch=sm_" + arch, "-O3", "-o", out.string(), twin.string()});
  if (!run) return std::unexpected(run.error());
  if (run->exit_status != 0 || run->timed_out)
    return std::unexpected(fmt::format("nvcc -ptx {} exited with status {}: {}", twin.filename().string(), run->exit_status,
                                       toolchain::first_lines(run->stderr_text, 5)));
  return read_text(out);
}

/// Issue 29's target 5: the same ptxas (toolchain::assemble: `ptxas -v -arch=ARCH`, its default -O3) on
/// ptxgate's PTX and on nvcc's PTX of the twin, and on nvcc's again as an A/A control; child CPU time
/// (getrusage of the waited-for ptxas), one sample of each per round.
struct PtxasPair {
  std::string pg_ptx, twin_ptx, arch;
  std::vector<double> pg, twin, twin_again;
};

/// One round of the pair, in an order that rotates from round to round (a slow moment hits each side alike).
std::string measure_ptxas_pair(PtxasPair& pair, size_t round, const toolchain::Toolkit& toolkit) {
  struct Side {
    const std::string* ptx;
    std::vector<double>* samples;
  };
  std::array<Side, 3> sides{Side{&pair.pg_ptx, &pair.pg}, Side{&pair.twin_ptx, &pair.twin},
                            Side{&pair.twin_ptx, &pair.twin_again}};
  std::rotate(sides.begin(), sides.begin() + long(round % sides.size()), sides.end());
  for (const Side& side : sides) {
    const double c0 = cpu_ms(RUSAGE_CHILDREN);
    auto cubin = toolchain::assemble(*side.ptx, pair.arch, toolkit);
    const double cpu = cpu_ms(RUSAGE_CHILDREN) - c0;
    if (!cubin) return (side.ptx == &pair.pg_ptx ? "ptxgate's PTX: " : "the twin's PTX: ") + one_line(cubin.error());
    side.samples->push_back(cpu);
  }
  return {};
}

/// Lines of PTX that are instructions or declarations (not blank, not a comment): the size ptxas reads.
size_t ptx_lines(const std::string& ptx) {
  size_t n = 0;
  size_t at = 0;
  while (at < ptx.size()) {
    size_t end = ptx.find('\n', at);
    if (end == std::string::npos) end = ptx.size();
    size_t first = ptx.find_first_not_of(" \t", at);
    if (first < end && ptx.compare(first, 2, "//") != 0) ++n;
    at = end + 1;
  }
  return n;
}

/// A kernel of `statements` statements, each a libdevice math call on the previous values (the size
/// curve of issue 17): every call is inlined, so the LLVM module grows linearly with the count.
std::string generated_kernel(unsigned statements) {
  static const char* const functions[] = {"sin", "exp", "sqrt", "tanh", "log", "cos"};
  std::string text = "@workgroup(128)\nkernel gen(out r: f32[], in a: f32[], n: u32) {\n  let i = global_id.x;\n"
                     "  if (i < n) {\n    let v0 = a[i];\n    let v1 = v0 * 0.5 + 1.0;\n";
  for (unsigned s = 2; s < statements; ++s)
    text += fmt::format("    let v{} = {}(abs(v{})) * 0.75 + v{};\n", s, functions[s % 6], s - 1, s - 2);
  text += fmt::format("    r[i] = v{};\n  }}\n}}\n", std::max(statements, 2u) - 1);
  return text;
}

nlohmann::json resources_json(const toolchain::Build& b) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [entry, r] : b.resources)
    j[entry] = {{"registers", r.registers_per_thread}, {"local_bytes", r.local_bytes},
                {"static_shared_bytes", r.static_shared_bytes}, {"spill_store_bytes", r.spill_store_bytes},
                {"barriers", r.barriers}};
  j["cubin_bytes"] = b.cubin.size();
  return j;
}

/// One text -> PTX compile in a function of its own, so that callgrind counts only it
/// (bench/compile_callgrind.sh: --toggle-collect='*measured_compile*').
[[gnu::noinline]] Product measured_compile(const std::string& path, const std::string& text,
                                           const toolchain::Toolkit& toolkit) {
  return ptxgate_compile(path, text, toolkit, false, /*budget=*/0);
}

}  // namespace

int run_compile_callgrind(const CompareOptions& o) {
  std::string text;
  if (unsigned n = 0; o.only.starts_with("generated_") && (n = unsigned(std::stoul(o.only.substr(10)))) > 0) {
    text = generated_kernel(n);
  } else {
    for (const Kernel& k : kernels_of(o)) {
      auto t = read_text(k.source);
      if (t) text = *t;
    }
  }
  if (text.empty()) {
    fmt::print(stderr, "compile-callgrind: no kernel '{}'\n", o.only);
    return 1;
  }
  const auto toolkit = toolchain::discover();
  const std::string path = o.only + ".pg";
  Product warm = ptxgate_compile(path, text, toolkit, false, 0);  // first-use costs stay out of the count
  Product measured = measured_compile(path, text, toolkit);
  if (!warm.error.empty() || !measured.error.empty()) {
    fmt::print(stderr, "compile-callgrind: {}\n", warm.error.empty() ? measured.error : warm.error);
    return 1;
  }
  fmt::print("{}: {} bytes of PTX\n", o.only, measured.build.ptx.size());
  return 0;
}

int run_compile_compare(const CompareOptions& o, ResultFile& out) {
  int status = 0;
  const auto toolkit = toolchain::discover();
  const std::string ptxas_version = toolkit.ptxas ? toolchain::ptxas_version(*toolkit.ptxas) : std::string();
  out.info("llvm_version", codegen::llvm_version());
  out.info("ptxas_version", ptxas_version);
  auto nvrtc = Nvrtc::get();
  if (nvrtc) {
    out.info("nvrtc", (*nvrtc)->version);
  } else {
    out.info("nvrtc", "not available: " + nvrtc.error());
    fmt::print("NVRTC not available ({}): ptxgate's rows only\n", nvrtc.error());
  }
  const size_t reps = o.repetitions;  // 0: the warm-up compile only (the baseline check)
  nlohmann::json quality = nlohmann::json::object();
  quality["ptxas_version"] = ptxas_version;

  struct Line {
    std::string name;
    double ptx = 0, ptx_cpu = 0, nvrtc_ptx = 0, nvrtc_ptx_cpu = 0, cubin = 0, nvrtc_cubin = 0;
    double cubin_cpu = 0, nvrtc_cubin_cpu = 0;
    double frontend = 0, to_llvm = 0, to_ptx = 0, ptxas = 0, ptxas_cpu = 0;
    double ptxas_pg_cpu = 0, ptxas_twin_cpu = 0, ptxas_twin_again_cpu = 0;
    size_t ptx_lines_pg = 0, ptx_lines_twin = 0;
  };
  std::vector<Line> lines;
  for (const Kernel& k : kernels_of(o)) {
    auto text = read_text(k.source);
    if (!text) {
      out.error("compile_cmp." + k.name, text.error());
      status = 1;
      continue;
    }
    std::string twin_text;
    if (!k.twin.empty()) {
      auto t = read_text(k.twin);
      if (t) twin_text = *t;
    }
    const std::string path = k.source.filename().string();
    const nlohmann::json tag{{"kernel", k.name}};
    // Warm-up: first-use costs (target machine, libdevice bytes, NVRTC's own start) stay out.
    Product first = ptxgate_compile(path, *text, toolkit, /*cubin=*/bool(toolkit.ptxas));
    if (!first.error.empty()) {
      out.error("compile_cmp.ptx." + k.name, first.error);
      status = 1;
      continue;
    }
    quality[k.name] = resources_json(first.build);
    const std::string arch = twin_arch(twin_text);
    if (!nvrtc) twin_text.clear();  // NVRTC's rows need it; the ptxas pair below compiles the twin with nvcc
    PtxasPair pair;
    if (!twin_text.empty()) {
      if (auto warm = (*nvrtc)->compile(twin_text, k.twin.filename().string(), "compute_" + arch, false); !warm) {
        out.error("compile_cmp.nvrtc_ptx." + k.name, warm.error());
        twin_text.clear();
      }
    }
    if (!k.twin.empty() && toolkit.ptxas) {
      auto twin_ptx = nvcc_ptx(k.twin, arch, *toolkit.ptxas);
      if (std::string pg_arch = first.build.target.name(); !twin_ptx) {
        out.error("compile_cmp.ptxas_pair." + k.name, twin_ptx.error());
        status = 1;
      } else if (pg_arch != "sm_" + arch) {
        out.error("compile_cmp.ptxas_pair." + k.name,
                  fmt::format("ptxgate compiles for {}, the twin for sm_{}: not the same ptxas options", pg_arch, arch));
        status = 1;
      } else {
        pair = {first.build.ptx, std::move(*twin_ptx), pg_arch, {}, {}, {}};
      }
    }
    if (!pair.arch.empty() && !o.ptx_dir.empty()) {
      std::error_code ec;
      fs::create_directories(o.ptx_dir, ec);
      std::ofstream(o.ptx_dir / (k.name + ".ptxgate.ptx")) << pair.pg_ptx;
      std::ofstream(o.ptx_dir / (k.name + ".twin.ptx")) << pair.twin_ptx;
    }
    Series ptx, nvrtc_ptx, cubin, nvrtc_cubin;
    Phases phases;
    // Interleaved rounds: a slow moment of the machine hits every variant alike.
    for (size_t r = 0; r < reps; ++r) {
      // Every NVRTC compile gets a source (and so PTX) of its own, named by the round and the variant
      // (uncached_source): no cache answers a repeated compile.
      auto unique_twin = [&](const char* variant) {
        return uncached_source(twin_text, fmt::format("{}_{}", r, variant));
      };
      if (!pair.arch.empty()) {
        if (std::string e = measure_ptxas_pair(pair, r, toolkit); !e.empty()) {
          out.error("compile_cmp.ptxas_pair." + k.name, e);
          pair.arch.clear();
          status = 1;
        }
      }
      if (o.ptxas_pair_only) continue;
      Timed t;
      Product p = timed(t, [&] { return ptxgate_compile(path, *text, toolkit, false); });
      if (!p.error.empty()) break;
      ptx.add(t);
      if (!twin_text.empty()) {
        const std::string source = unique_twin("ptx");
        auto n = timed(t, [&] { return (*nvrtc)->compile(source, k.twin.filename().string(), "compute_" + arch, false); });
        if (n) nvrtc_ptx.add(t);
      }
      if (toolkit.ptxas) {
        Product c = timed(t, [&] { return ptxgate_compile(path, *text, toolkit, true); });
        if (c.error.empty()) cubin.add(t);
      }
      if (!twin_text.empty()) {
        const std::string source = unique_twin("cubin");
        auto n = timed(t, [&] { return (*nvrtc)->compile(source, k.twin.filename().string(), "sm_" + arch, true); });
        if (n) nvrtc_cubin.add(t);
      }
      if (std::string e = measure_phases(path, *text, toolkit, phases); !e.empty()) {
        out.error("compile_cmp.phases." + k.name, e);
        status = 1;
        break;
      }
    }
    auto add = [&](const std::string& row, const std::vector<double>& v) {
      if (!v.empty()) out.add("compile_cmp." + row + "." + k.name, "ms", summarize(v), tag);
    };
    add("ptx", ptx.wall);
    add("ptx_cpu", ptx.cpu);
    add("nvrtc_ptx", nvrtc_ptx.wall);
    add("nvrtc_ptx_cpu", nvrtc_ptx.cpu);
    add("cubin", cubin.wall);
    add("cubin_cpu", cubin.cpu);
    add("nvrtc_cubin", nvrtc_cubin.wall);
    add("nvrtc_cubin_cpu", nvrtc_cubin.cpu);
    add("phase_frontend", phases.frontend.wall);
    add("phase_to_llvm", phases.to_llvm.wall);
    add("phase_to_ptx", phases.to_ptx.wall);
    add("phase_ptxas", phases.ptxas.wall);
    add("phase_ptxas_cpu", phases.ptxas.cpu);
    add("ptxas_pg_cpu", pair.pg);
    add("ptxas_twin_cpu", pair.twin);
    add("ptxas_twin_again_cpu", pair.twin_again);
    Line line{k.name};
    line.ptx = ptx.median();
    line.ptx_cpu = ptx.cpu_median();
    line.nvrtc_ptx = nvrtc_ptx.median();
    line.nvrtc_ptx_cpu = nvrtc_ptx.cpu_median();
    line.cubin = cubin.median();
    line.nvrtc_cubin = nvrtc_cubin.median();
    line.cubin_cpu = cubin.cpu_median();
    line.nvrtc_cubin_cpu = nvrtc_cubin.cpu_median();
    line.ptxas_cpu = phases.ptxas.cpu_median();
    line.frontend = phases.frontend.median();
    line.to_llvm = phases.to_llvm.median();
    line.to_ptx = phases.to_ptx.median();
    line.ptxas = phases.ptxas.median();
    if (!pair.pg.empty() && !pair.twin.empty()) {
      line.ptxas_pg_cpu = summarize(pair.pg).median;
      line.ptxas_twin_cpu = summarize(pair.twin).median;
      line.ptxas_twin_again_cpu = summarize(pair.twin_again).median;
      line.ptx_lines_pg = ptx_lines(pair.pg_ptx);
      line.ptx_lines_twin = ptx_lines(pair.twin_ptx);
    }
    lines.push_back(line);
  }

  if (reps == 0) lines.clear();
  auto ratio = [](double peer, double ours) { return ours > 0 && peer > 0 ? fmt::format("{:.2f}", peer / ours) : std::string("-"); };
  if (!lines.empty() && !o.ptxas_pair_only) {
    fmt::print("\ntext -> PTX and -> cubin, ptxgate vs NVRTC on the CUDA C++ twin, median of {} interleaved rounds (ms;\n"
               "wall, and cpu = the process's CPU time with its ptxas child). Ratio = NVRTC / ptxgate. Targets: >= 3 for\n"
               "PTX, >= 1 for cubin.\n\n", reps);
    fmt::print("| {:<12} | {:>8} | {:>8} | {:>6} | {:>8} | {:>8} | {:>6} | {:>8} | {:>8} | {:>6} | {:>8} | {:>8} | {:>6} |\n",
               "kernel", "PTX pg", "NVRTC", "ratio", "cpu pg", "cpu NVRTC", "ratio", "cubin pg", "NVRTC", "ratio",
               "cpu pg", "cpu NVRTC", "ratio");
    fmt::print("|{:-<14}|{:->10}|{:->10}|{:->8}|{:->10}|{:->10}|{:->8}|{:->10}|{:->10}|{:->8}|{:->10}|{:->10}|{:->8}|\n", "",
               "", "", "", "", "", "", "", "", "", "", "", "");
    for (const auto& l : lines)
      fmt::print("| {:<12} | {:>8.2f} | {:>8.2f} | {:>6} | {:>8.2f} | {:>8.2f} | {:>6} | {:>8.2f} | {:>8.2f} | {:>6} | {:>8.2f} | "
                 "{:>8.2f} | {:>6} |\n",
                 l.name, l.ptx, l.nvrtc_ptx, ratio(l.nvrtc_ptx, l.ptx), l.ptx_cpu, l.nvrtc_ptx_cpu,
                 ratio(l.nvrtc_ptx_cpu, l.ptx_cpu), l.cubin, l.nvrtc_cubin, ratio(l.nvrtc_cubin, l.cubin), l.cubin_cpu,
                 l.nvrtc_cubin_cpu, ratio(l.nvrtc_cubin_cpu, l.cubin_cpu));
    fmt::print("\nphases (ms, wall, each timed alone): parse+verify; lower+libdevice+optimise (+ printing the IR);\n"
               "the whole text -> PTX; ptxas (child process) on that PTX, wall and cpu\n\n");
    fmt::print("| {:<12} | {:>12} | {:>14} | {:>12} | {:>9} | {:>9} |\n", "kernel", "parse+verify", "to LLVM IR", "text -> PTX",
               "ptxas", "ptxas cpu");
    fmt::print("|{:-<14}|{:->14}|{:->16}|{:->14}|{:->11}|{:->11}|\n", "", "", "", "", "", "");
    for (const auto& l : lines)
      fmt::print("| {:<12} | {:>12.3f} | {:>14.3f} | {:>12.3f} | {:>9.2f} | {:>9.2f} |\n", l.name, l.frontend, l.to_llvm,
                 l.to_ptx, l.ptxas, l.ptxas_cpu);
  }

  if (std::ranges::any_of(lines, [](const Line& l) { return l.ptxas_twin_cpu > 0; })) {
    fmt::print("\nptxas on ptxgate's PTX and on nvcc's PTX of the twin (nvcc -ptx -O3), the same ptxas and options (-v, -arch\n"
               "of the twin, its default -O3), child CPU ms, median of {} rounds in rotating order; ratio = pg / twin\n"
               "(issue 29's target 5: <= 1); A/A = the twin's PTX again / the twin's. PTX lines: not blank, not comments.\n\n",
               reps);
    fmt::print("| {:<15} | {:>9} | {:>9} | {:>6} | {:>6} | {:>9} | {:>9} |\n", "kernel", "ptxas pg", "ptxas twin", "ratio",
               "A/A", "lines pg", "lines twin");
    fmt::print("|{:-<17}|{:->11}|{:->12}|{:->8}|{:->8}|{:->11}|{:->12}|\n", "", "", "", "", "", "", "");
    for (const auto& l : lines)
      if (l.ptxas_twin_cpu > 0)
        fmt::print("| {:<15} | {:>9.2f} | {:>10.2f} | {:>6.3f} | {:>6.3f} | {:>9} | {:>10} |\n", l.name, l.ptxas_pg_cpu,
                   l.ptxas_twin_cpu, l.ptxas_pg_cpu / l.ptxas_twin_cpu, l.ptxas_twin_again_cpu / l.ptxas_twin_cpu,
                   l.ptx_lines_pg, l.ptx_lines_twin);
  }

  // The size curve: generated kernels, each compiled `reps` times (at least once) in interleaved rounds.
  // The first round goes up in size, so that the process's peak memory after each size is that size's
  // peak; later rounds start one size further on each time, so that a slow moment of the machine lands on
  // every size alike instead of on the size being repeated (the per-doubling ratios compare sizes).
  if (!o.scaling.empty()) {
    fmt::print("\ngenerated kernels (a libdevice math call per statement): text -> PTX, ms (wall, cpu), peak RSS\n\n");
    fmt::print("| {:>10} | {:>10} | {:>10} | {:>14} | {:>13} |\n", "statements", "wall ms", "cpu ms", "cpu ms / stmt", "peak RSS MiB");
    fmt::print("|{:->12}|{:->12}|{:->12}|{:->16}|{:->15}|\n", "", "", "", "", "");
    std::vector<unsigned> sizes = o.scaling;
    std::sort(sizes.begin(), sizes.end());
    const size_t count = sizes.size();
    std::vector<std::string> texts;
    for (unsigned n : sizes) texts.push_back(generated_kernel(n));
    std::vector<Series> series(count);
    std::vector<double> rss(count, 0.0);
    std::vector<bool> failed(count, false);
    for (size_t r = 0; r < std::max<size_t>(1, o.scaling_repetitions); ++r) {
      for (size_t j = 0; j < count; ++j) {
        const size_t i = (j + r) % count;
        if (failed[i]) continue;
        const std::string name = fmt::format("generated_{}", sizes[i]);
        Timed t;
        Product p = timed(t, [&] { return ptxgate_compile(name + ".pg", texts[i], toolkit, false, /*budget=*/0); });
        if (!p.error.empty()) {
          out.error("compile_cmp.ptx." + name, p.error);
          status = 1;
          failed[i] = true;
          continue;
        }
        series[i].add(t);
        if (r == 0) rss[i] = peak_rss_mib();
      }
    }
    for (size_t i = 0; i < count; ++i) {
      const Series& s = series[i];
      if (s.wall.empty()) continue;
      const unsigned n = sizes[i];
      const std::string name = fmt::format("generated_{}", n);
      out.add("compile_cmp.ptx." + name, "ms", summarize(s.wall), {{"statements", n}});
      out.add("compile_cmp.ptx_cpu." + name, "ms", summarize(s.cpu), {{"statements", n}});
      out.add("compile_cmp.peak_rss." + name, "MiB", summarize({rss[i]}), {{"statements", n}});
      fmt::print("| {:>10} | {:>10.1f} | {:>10.1f} | {:>14.3f} | {:>13.0f} |\n", n, s.median(), s.cpu_median(),
                 s.cpu_median() / n, rss[i]);
    }
  }

  // No quality traded for speed: ptxas's registers, local and shared memory, spills and the cubin's size
  // per kernel, against the recorded baseline (written with --write-quality). Without ptxas, or under
  // another ptxas, nothing is compared: the run says SKIPPED with the reason and exits 77 (CTest's skip),
  // never 0 as if the comparison had passed.
  constexpr int kSkipped = 77;
  if (!o.quality_file.empty() && !o.write_quality && !toolkit.ptxas) {
    fmt::print("\nSKIPPED: ptxas baseline not compared: no ptxas ({})\n",
               toolkit.ptxas.error().items().front().message);
    return status == 0 ? kSkipped : status;
  }
  if (!o.quality_file.empty() && toolkit.ptxas) {
    if (o.write_quality) {
      std::ofstream(o.quality_file) << quality.dump(2) << "\n";
      fmt::print("\nwrote the ptxas baseline of {} kernels to {}\n", quality.size() - 1, o.quality_file.string());
    } else {
      auto recorded_text = read_text(o.quality_file);
      auto recorded = recorded_text ? nlohmann::json::parse(*recorded_text, nullptr, false) : nlohmann::json();
      if (!recorded_text || recorded.is_discarded()) {
        out.error("compile_cmp.quality", "cannot read the baseline " + o.quality_file.string());
        status = 1;
      } else if (recorded.value("ptxas_version", "") != ptxas_version) {
        fmt::print("\nSKIPPED: ptxas baseline not compared: recorded with '{}', this is '{}' (compare under the "
                   "ptxas that recorded it, or record this one with --write-quality)\n",
                   recorded.value("ptxas_version", ""), ptxas_version);
        if (status == 0) status = kSkipped;
      } else {
        size_t same = 0;
        for (const auto& [name, now] : quality.items()) {
          if (name == "ptxas_version") continue;
          if (!recorded.contains(name)) {
            fmt::print("quality: {} has no recorded baseline (--write-quality records it)\n", name);
            continue;
          }
          if (recorded[name] != now) {
            out.error("compile_cmp.quality." + name,
                      fmt::format("ptxas output changed: recorded {}, now {}", recorded[name].dump(), now.dump()));
            status = 1;
          } else {
            ++same;
          }
        }
        fmt::print("\nquality: {} kernels with the recorded registers, memory and cubin size\n", same);
      }
    }
  }
  return status;
}

}  // namespace ptxgate::bench
