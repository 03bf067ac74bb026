// Bounds on untrusted input: every one has its own diagnostic code when exceeded.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ptxgate::ir {

struct Limits {
  size_t max_file_bytes = 16u << 20;       ///< PG1902
  uint32_t max_nesting_depth = 200;        ///< PG1901 (expressions and statements together)
  uint32_t max_kernels = 10000;            ///< PG1903
  uint32_t max_identifier_length = 256;    ///< PG1904
  uint32_t max_diagnostics = 100;          ///< PG1905: then stop
  uint32_t max_parameters = 256;           ///< PG1906
  uint32_t max_statements_per_kernel = 100000;  ///< PG1907
  uint32_t max_constants = 10000;          ///< PG1908 (parsing stops)
  uint32_t max_functions = 10000;          ///< PG1909 (parsing stops); max_parameters each (PG1910)
  uint64_t max_local_array_bytes = 512u << 10;  ///< PG1911: local arrays per kernel and thread (CUDA's 512 KiB)
};

/// Facts of every CUDA device ptxgate compiles for and checks (sm_75 and newer): what a kernel
/// may use, whoever compiled it. The verifier holds ptxgate's kernels to them; the cubin reader
/// refuses a cubin whose records exceed them (it was not written by ptxas).
namespace device {
inline constexpr uint32_t kWarpSize = 32;
inline constexpr uint32_t kWarpgroupSize = 128;                 ///< four warps: wgmma, setmaxnreg
inline constexpr uint64_t kMaxStaticSharedBytes = 48u << 10;    ///< static shared memory per block
inline constexpr uint64_t kMaxLocalBytesPerThread = 512u << 10; ///< local memory (stack frame) per thread
inline constexpr uint32_t kMaxNamedBarriers = 16;               ///< bar.sync 0..15 per block
inline constexpr uint32_t kMaxThreadsPerBlock = 1024;
}  // namespace device

}  // namespace ptxgate::ir
