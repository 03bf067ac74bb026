// The parts of the GPU benchmark binary: launch overhead, kernel quality, compile latency, validation cost.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace ptxgate::bench {

/// Exit status of a part that could not run here (no driver or no device): not a failure.
inline constexpr int kSkipped = 3;

struct LaunchOptions {
  std::filesystem::path kernels_dir;  ///< bench/kernels (launch0/4/16.pg)
  size_t batches = 30;                ///< recorded back-to-back batches per variant (after one warm-up batch)
  size_t per_batch = 2000;            ///< launches per back-to-back batch, timed up to the end of a synchronise
  size_t host_batches = 100;          ///< recorded host-time batches per variant
  size_t host_per_batch = 200;        ///< launches per host-time batch: only the launch calls are timed, and
                                      ///< few enough that the launch queue never fills
};
/// Host time per launch: raw cuLaunchKernel, guarded (steady), Kernel::launch, first validated
/// (verdict-cache miss every launch), a freshly resolved function, graph replays.
int run_launch_overhead(const LaunchOptions& o, ResultFile& out);

struct KernelOptions {
  std::filesystem::path examples_dir;  ///< examples/ (saxpy, block_sum, matmul)
  std::filesystem::path kernels_dir;   ///< bench/kernels (copy)
  std::filesystem::path cubin_dir;     ///< nvcc cubins of bench/cuda/*.cu
  size_t elements = size_t{1} << 26;   ///< f32 elements per bandwidth buffer
  size_t matmul_size = 2048;           ///< square matmul size
  size_t repetitions = 30;             ///< timed launches per variant (after 3 warm-up launches)
};
/// GB/s of memcpy, copy, saxpy, block_sum and GFLOP/s of matmul, ptxgate vs nvcc, checked first.
int run_kernel_quality(const KernelOptions& o, ResultFile& out);

struct WorkloadOptions {
  std::filesystem::path kernels_dir;  ///< bench/kernels (warp_sum, softmax, layer_norm, axpy_half, bfs, sgemm, gemm_bf16_mma)
  std::filesystem::path cubin_dir;    ///< nvcc cubins of the bench/cuda twins
  std::vector<std::string> only;      ///< workloads to run (sum softmax layer_norm axpy_f16 axpy_bf16 bfs sgemm gemm_bf16 gemm_bf16_mma); empty: all
  size_t repetitions = 30;            ///< timed rounds (after 3 warm-up rounds), every variant once per round
  size_t sum_elements = size_t{1} << 28;   ///< f32 elements summed (also memcpy's buffer)
  uint32_t softmax_rows = 8192, softmax_cols = 8192;
  uint32_t norm_rows = 16384, norm_cols = 4096;
  size_t half_elements = size_t{1} << 28;  ///< f16 / bf16 elements of x and y
  uint32_t bfs_vertices = uint32_t{1} << 22;
  uint32_t sgemm_size = 4096;
  uint32_t gemm_size = 4096;               ///< square bf16 GEMMs (mma.sync on sm_80+; Hopper: wgmma + TMA)
  bool checked = false;                    ///< ptxgate's kernels in checked mode (RuntimeOptions::checked)
};
/// The workloads: sum, softmax, layer norm, f16/bf16 axpy, BFS, SGEMM, bf16 GEMM, ptxgate vs nvcc vs memcpy,
/// each checked against a CPU reference first (the library peers are bench/peers.py's).
int run_workloads(const WorkloadOptions& o, ResultFile& out);

struct CompileOptions {
  std::filesystem::path examples_dir;
  std::filesystem::path kernels_dir;
  std::filesystem::path cache_dir;     ///< a fresh directory for the disk-tier measurements
  std::string self;                    ///< this executable, for fresh-process disk hits
  size_t repetitions = 15;
  size_t fresh_processes = 6;
  bool with_gpu = true;                ///< also time Runtime::compile (needs a driver)
  std::string only;                    ///< one kernel's name; empty: all of them
  std::filesystem::path twins_dir;     ///< bench/cuda: NVRTC's cold path compiles the twin NAME.cu
  size_t cold_repetitions = 5;         ///< fresh Runtimes per cold-path variant
  bool cold_all = false;               ///< only the cold path, of every example and benchmark kernel with a twin
};
/// text -> PTX, text -> cubin, in-process hits, disk hits in fresh processes; with a GPU, the cold path
/// (text -> loaded module: ptxas's cubin or the driver's JIT) against NVRTC -> cubin -> load.
int run_compile_latency(const CompileOptions& o, ResultFile& out);
/// The child side of a fresh-process disk hit, `mode` "cache" (ModuleCache lookup: parse, verify,
/// key, disk read) or "runtime" (Runtime::compile: the same plus module load); prints one JSON object.
int run_disk_hit_child(const std::string& mode, const std::filesystem::path& source, const std::string& kernel,
                       const std::filesystem::path& cache_dir);

struct ValidationOptions {
  std::filesystem::path examples_dir;
  std::filesystem::path kernels_dir;
  std::string profile = "h100-sxm";    ///< caps when no live device is available
  size_t batches = 25;
};
/// ns per cached-verdict lookup (LaunchShape + the launch cache) and per fresh check_launch.
int run_validation_cost(const ValidationOptions& o, ResultFile& out);

/// Writes PTX, cubin and the ptxas -v log of the benchmark kernels into `dir` (for inspection).
int run_emit(const std::filesystem::path& examples_dir, const std::filesystem::path& kernels_dir,
             const std::filesystem::path& dir);

/// The benchmark kernels as (file, kernel) pairs: saxpy, copy, block_sum, matmul.
struct KernelSource {
  std::string name;
  std::filesystem::path path;
  std::string kernel;  ///< the kernel to load, when it is not `name` (a module's first kernel)
};
std::vector<KernelSource> quality_kernels(const std::filesystem::path& examples_dir,
                                          const std::filesystem::path& kernels_dir);
/// The bandwidth kernels with four elements per thread (bench/kernels): copy4, saxpy4.
std::vector<KernelSource> bandwidth_kernels(const std::filesystem::path& kernels_dir);
/// The modules of the workloads (bench/kernels; one module may hold several kernels, e.g. bfs).
std::vector<KernelSource> workload_modules(const std::filesystem::path& kernels_dir);

}  // namespace ptxgate::bench
