// The compile-compare part of ptxgate_gpu_bench: ptxgate vs NVRTC, phases, the size curve, the ptxas baseline.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace ptxgate::bench {

struct CompareOptions {
  std::filesystem::path examples_dir;
  std::filesystem::path kernels_dir;
  std::filesystem::path twins_dir;      ///< bench/cuda: the CUDA C++ twin NAME.cu of NAME.pg, where there is one
  size_t repetitions = 10;              ///< interleaved rounds per kernel, after one warm-up compile
  std::vector<unsigned> scaling;        ///< statement counts of generated kernels (the size curve)
  size_t scaling_repetitions = 1;
  std::filesystem::path quality_file;   ///< the recorded ptxas baseline (bench/compile_quality.json)
  bool write_quality = false;           ///< record it instead of comparing
  std::string only;                     ///< one kernel; empty: every example and benchmark kernel
  bool twins_only = false;              ///< only the kernels with a CUDA C++ twin
  bool ptxas_pair_only = false;         ///< in the rounds, only ptxas on ptxgate's and on the twin's PTX (target 5)
  std::filesystem::path ptx_dir;        ///< where to write both PTX texts of each kernel with a twin; empty: nowhere
};

/// Runs on a CPU (NVRTC needs no GPU). Rows compile_cmp.{ptx,nvrtc_ptx,cubin,nvrtc_cubin,phase_*}.<kernel>, and
/// for a kernel with a twin compile_cmp.{ptxas_pg_cpu,ptxas_twin_cpu,ptxas_twin_again_cpu}.<kernel>;
/// status 1 when a compile fails or ptxas's output differs from the baseline.
int run_compile_compare(const CompareOptions& o, ResultFile& out);

/// One counted text -> PTX compile of `o.only` (an example or benchmark kernel, or `generated_N`) after
/// a warm-up, for bench/compile_callgrind.sh.
int run_compile_callgrind(const CompareOptions& o);

}  // namespace ptxgate::bench
