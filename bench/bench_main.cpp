// ptxgate_gpu_bench: launch overhead, kernel quality, compile latency and validation cost, as JSON result files.
#include <cstdlib>
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench_parts.hpp"
#include "compile_compare.hpp"

using namespace ptxgate::bench;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  CLI::App app{"ptxgate GPU benchmarks; each part writes one JSON result file (partial results on failure)"};
  app.require_subcommand(1);
  std::string out_path, examples = PTXGATE_SOURCE_DIR "/examples", kernels = PTXGATE_SOURCE_DIR "/bench/kernels";
  auto add_common = [&](CLI::App* cmd) {
    cmd->add_option("--out", out_path, "JSON result file (default: none, print only)");
    cmd->add_option("--examples", examples, "examples/ directory")->capture_default_str();
    cmd->add_option("--kernels", kernels, "bench/kernels directory")->capture_default_str();
  };
  LaunchOptions lo;
  auto* launch = app.add_subcommand("launch", "host time per launch: raw, guarded, first validated, graphs");
  add_common(launch);
  launch->add_option("--batches", lo.batches)->capture_default_str();
  launch->add_option("--per-batch", lo.per_batch)->capture_default_str();
  launch->add_option("--host-batches", lo.host_batches)->capture_default_str();
  launch->add_option("--host-per-batch", lo.host_per_batch)->capture_default_str();

  KernelOptions ko;
  std::string cubins;
  auto* kernels_cmd = app.add_subcommand("kernels", "GB/s and GFLOP/s: ptxgate vs nvcc vs memcpy");
  add_common(kernels_cmd);
  kernels_cmd->add_option("--cubins", cubins, "directory of nvcc cubins (saxpy, copy, block_sum, matmul)")->required();
  kernels_cmd->add_option("--elements", ko.elements)->capture_default_str();
  kernels_cmd->add_option("--matmul-size", ko.matmul_size)->capture_default_str();
  kernels_cmd->add_option("--repetitions", ko.repetitions)->capture_default_str();

  WorkloadOptions wo;
  std::string workload_cubins;
  auto* workloads = app.add_subcommand("workloads", "sum, softmax, layer norm, f16/bf16 axpy, BFS, SGEMM, bf16 GEMM: ptxgate vs nvcc vs memcpy");
  add_common(workloads);
  workloads->add_option("--cubins", workload_cubins, "directory of nvcc cubins of bench/cuda")->required();
  workloads->add_option("--repetitions", wo.repetitions)->capture_default_str();
  workloads->add_option("--only", wo.only, "workloads to run: sum softmax layer_norm axpy_f16 axpy_bf16 bfs sgemm gemm_bf16 gemm_bf16_mma");
  workloads->add_option("--sum-elements", wo.sum_elements)->capture_default_str();
  workloads->add_option("--half-elements", wo.half_elements)->capture_default_str();
  workloads->add_option("--bfs-vertices", wo.bfs_vertices)->capture_default_str();
  workloads->add_option("--sgemm-size", wo.sgemm_size)->capture_default_str();
  workloads->add_option("--gemm-size", wo.gemm_size, "square bf16 GEMMs (mma.sync on sm_80+, wgmma on sm_90a)")->capture_default_str();
  workloads->add_flag("--checked", wo.checked, "compile ptxgate's kernels in checked mode (the nvcc twins are unchanged)");

  CompileOptions co;
  std::string cache_dir = (fs::temp_directory_path() / "ptxgate-bench-cache").string();
  bool no_gpu = false;
  auto* compile = app.add_subcommand("compile", "compile latency: text->PTX, text->cubin, cache hits");
  add_common(compile);
  compile->add_option("--cache-dir", cache_dir, "emptied first")->capture_default_str();
  compile->add_option("--repetitions", co.repetitions)->capture_default_str();
  compile->add_option("--fresh-processes", co.fresh_processes)->capture_default_str();
  compile->add_flag("--no-gpu", no_gpu, "skip Runtime::compile timings");
  compile->add_option("--only", co.only, "one kernel (saxpy, copy, block_sum, matmul)");
  std::string compile_twins = PTXGATE_SOURCE_DIR "/bench/cuda";
  compile->add_option("--twins", compile_twins, "directory of the CUDA C++ twins (NVRTC's cold path)")->capture_default_str();
  compile->add_option("--cold-repetitions", co.cold_repetitions)->capture_default_str();
  compile->add_flag("--cold-all", co.cold_all,
                    "only the cold path (text -> loaded module vs NVRTC -> cubin -> load), of every kernel with a twin");

  CompareOptions cmp;
  std::string twins = PTXGATE_SOURCE_DIR "/bench/cuda";
  auto* compare = app.add_subcommand("compile-compare",
                                     "text->PTX and ->cubin vs NVRTC on every example and benchmark kernel, per phase; "
                                     "generated kernels for the size curve; ptxas output vs a recorded baseline (no GPU needed)");
  add_common(compare);
  compare->add_option("--twins", twins, "directory of the CUDA C++ twins NAME.cu")->capture_default_str();
  compare->add_option("--repetitions", cmp.repetitions)->capture_default_str();
  compare->add_option("--scaling", cmp.scaling, "statement counts of generated kernels, e.g. 250 500 1000 2000");
  compare->add_option("--scaling-repetitions", cmp.scaling_repetitions)->capture_default_str();
  compare->add_option("--quality", cmp.quality_file, "ptxas baseline to compare with (bench/compile_quality.json)");
  compare->add_flag("--write-quality", cmp.write_quality, "record the baseline instead of comparing");
  compare->add_option("--only", cmp.only, "one kernel");
  compare->add_flag("--twins-only", cmp.twins_only, "only the kernels with a CUDA C++ twin");
  compare->add_flag("--ptxas-only", cmp.ptxas_pair_only,
                    "time only ptxas on ptxgate's PTX against the twin's (issue 29's target 5) in the rounds");
  compare->add_option("--ptx-dir", cmp.ptx_dir, "write NAME.ptxgate.ptx and NAME.twin.ptx (the PTX ptxas is timed on) here");

  auto* counted = app.add_subcommand("compile-callgrind", "internal: one counted text->PTX compile (bench/compile_callgrind.sh)");
  add_common(counted);
  counted->add_option("--only", cmp.only, "an example or benchmark kernel, or generated_N")->required();

  std::string mode = "cache", source, kernel;
  auto* child = app.add_subcommand("disk-hit", "internal: one disk-cache hit in this fresh process");
  child->add_option("--mode", mode)->check(CLI::IsMember({"cache", "runtime"}));
  child->add_option("--source", source)->required();
  child->add_option("--kernel", kernel)->required();
  child->add_option("--cache-dir", cache_dir)->required();

  ValidationOptions vo;
  auto* validate = app.add_subcommand("validation", "ns per cached verdict and per fresh check_launch");
  add_common(validate);
  validate->add_option("--profile", vo.profile, "device profile when no device is present")->capture_default_str();
  validate->add_option("--batches", vo.batches)->capture_default_str();

  std::string emit_dir;
  auto* emit = app.add_subcommand("emit", "write PTX, cubin and ptxas -v logs of the benchmark kernels");
  add_common(emit);
  emit->add_option("dir", emit_dir)->required();

  CLI11_PARSE(app, argc, argv);

  if (*child) return run_disk_hit_child(mode, source, kernel, cache_dir);
  if (*emit) return run_emit(examples, kernels, emit_dir);
  if (*launch) {
    ResultFile out(out_path, "launch");
    lo.kernels_dir = kernels;
    return run_launch_overhead(lo, out);
  }
  if (*kernels_cmd) {
    ResultFile out(out_path, "kernels");
    ko.examples_dir = examples;
    ko.kernels_dir = kernels;
    ko.cubin_dir = cubins;
    return run_kernel_quality(ko, out);
  }
  if (*workloads) {
    ResultFile out(out_path, "workloads");
    wo.kernels_dir = kernels;
    wo.cubin_dir = workload_cubins;
    return run_workloads(wo, out);
  }
  if (*counted) {
    cmp.examples_dir = examples;
    cmp.kernels_dir = kernels;
    return run_compile_callgrind(cmp);
  }
  // The compile benchmarks time compiles: neither the driver's JIT nor NVRTC may answer from the CUDA
  // compute cache on disk (~/.nv/ComputeCache, read at cuInit and by NVRTC 13), which an earlier run
  // with the same sources filled (every twin's NVRTC -> cubin then took 16-48 ms on the H200).
  auto no_compute_cache = [] { setenv("CUDA_CACHE_DISABLE", "1", 1); };
  if (*compare) {
    no_compute_cache();
    ResultFile out(out_path, "compile_compare");
    cmp.examples_dir = examples;
    cmp.kernels_dir = kernels;
    cmp.twins_dir = twins;
    return run_compile_compare(cmp, out);
  }
  if (*compile) {
    ResultFile out(out_path, "compile");
    co.examples_dir = examples;
    co.kernels_dir = kernels;
    co.cache_dir = cache_dir;
    co.with_gpu = !no_gpu;
    co.twins_dir = compile_twins;
    no_compute_cache();  // the cold path's JIT variant must compile too
    std::error_code ec;
    co.self = fs::read_symlink("/proc/self/exe", ec).string();
    return run_compile_latency(co, out);
  }
  ResultFile out(out_path, "validation");
  vo.examples_dir = examples;
  vo.kernels_dir = kernels;
  return run_validation_cost(vo, out);
}
