// The CUDA driver entry points, loaded at run time (dlopen + cuGetProcAddress); nothing links libcuda.
#pragma once

#include <cuda.h>

#include <expected>
#include <string>
#include <string_view>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::runtime {

/// Every driver entry point the backend uses, by its base name. `X(name)` is
/// expanded once per entry; the member type is the header's prototype for the
/// version this table is resolved against (CUDA_VERSION), so `cuMemAlloc` is the
/// `_v2` entry the header maps it to.
#define PTXGATE_DRIVER_ENTRY_POINTS(X)                                                       \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)      \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)                    \
  X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxReset) X(cuCtxSetCurrent)               \
  X(cuCtxGetCurrent) X(cuCtxSynchronize)                                                     \
  X(cuModuleLoadData) X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction)         \
  X(cuModuleGetGlobal) X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel)         \
  X(cuLaunchCooperativeKernel) X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags) X(cuMemAlloc) X(cuMemFree)         \
  X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync)    \
  X(cuMemcpyDtoHAsync) X(cuMemsetD32Async) X(cuMemsetD32) X(cuMemsetD8) X(cuStreamCreate)    \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventRecord)                \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy) X(cuGetErrorName)            \
  X(cuGetErrorString) X(cuMemcpyDtoDAsync) X(cuMemsetD8Async) X(cuMemsetD16Async)            \
  X(cuStreamWaitEvent) X(cuStreamQuery) X(cuEventQuery) X(cuMemAllocAsync) X(cuMemFreeAsync) \
  X(cuMemAllocFromPoolAsync) X(cuDeviceGetDefaultMemPool) X(cuMemPoolCreate)                 \
  X(cuMemPoolDestroy) X(cuMemPoolGetAttribute) X(cuMemPoolSetAttribute) X(cuMemPoolTrimTo)   \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphCreate) X(cuGraphDestroy)           \
  X(cuGraphAddKernelNode) X(cuGraphKernelNodeSetAttribute) X(cuGraphAddMemcpyNode)           \
  X(cuGraphAddMemsetNode) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)                    \
  X(cuGraphExecDestroy) X(cuGraphExecKernelNodeSetParams)      \
  X(cuTensorMapEncodeTiled) X(cuTensorMapEncodeIm2col) X(cuDeviceCanAccessPeer)                \
  X(cuCtxEnablePeerAccess) X(cuMemcpyPeerAsync)

/// One table of driver function pointers. Filled from libcuda by load_driver(),
/// or by hand in tests (a fake driver); a null entry means "not available".
struct DriverApi {
#define PTXGATE_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  PTXGATE_DRIVER_ENTRY_POINTS(PTXGATE_DRIVER_MEMBER)
#undef PTXGATE_DRIVER_MEMBER
  std::string library;  ///< where the table came from ("libcuda.so.1", "fake")
};

/// The CUDA version whose variant of entry point `name` matches the prototype that
/// cuda.h declares for the base name (what the table's pointer types are).
int entry_point_version(std::string_view name);

/// Loads `library` (default libcuda.so.1) and resolves every entry point by base
/// name through cuGetProcAddress_v2, at entry_point_version(name). PG4001 when the
/// library or any entry point is missing. Does not call cuInit.
[[nodiscard]] std::expected<DriverApi, diag::Diagnostics> load_driver(const char* library = "libcuda.so.1");

/// The process-wide driver table, loaded and cuInit-ed once (thread-safe). PG4001
/// when there is no driver; PG4002/PG4004 when cuInit fails (e.g. no device).
/// A table installed by install_driver_for_testing() takes precedence.
[[nodiscard]] std::expected<const DriverApi*, diag::Diagnostics> driver();

/// Replaces the process-wide table (tests only: a fake driver). Pass nullptr to
/// go back to the real one. Not thread-safe against concurrent driver() calls.
void install_driver_for_testing(const DriverApi* fake);

/// The diagnostic for "no usable driver", PG4001, naming `what` needed it.
diag::Diagnostics driver_unavailable(std::string_view what, std::string_view reason);

}  // namespace ptxgate::runtime
