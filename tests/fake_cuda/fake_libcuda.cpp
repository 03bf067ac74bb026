// A stand-in libcuda.so.1 for tests outside the unit binary (the Python package's): the unit
// tests' fake driver table behind cuGetProcAddress_v2, with host-backed device memory (copies,
// asynchronous ones too, really copy; fills really fill; pool allocations are host memory), the
// fake graphs and pools, $PTXGATE_FAKE_DEVICES devices (default 2) with peer access, and a few
// exported queries of what it recorded. Loaded through $PTXGATE_CUDA_DRIVER; kernels do not run.
//
// $PTXGATE_FAKE_LAUNCH_TOUCH_BYTES=N makes every kernel launch and graph replay first touch N bytes
// of memory of its own, as the real driver's few microseconds of work do: the caller's data is then
// evicted from the L1 cache between launches, so a cache simulator (bench/launch_callgrind.sh
// cache) counts the cache lines a launch path touches.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../unit/runtime_fake_driver.hpp"
#include "../unit/runtime_fake_programs.hpp"

namespace {

using ptxgate::runtime::DriverApi;
using ptxgate::runtime::testing::fake_state;

/// Touches $PTXGATE_FAKE_LAUNCH_TOUCH_BYTES bytes, one write per 64-byte line (nothing when unset).
void touch_driver_memory() {
  static std::vector<unsigned char> memory = [] {
    const char* bytes = std::getenv("PTXGATE_FAKE_LAUNCH_TOUCH_BYTES");
    return std::vector<unsigned char>(bytes != nullptr ? std::strtoull(bytes, nullptr, 10) : 0);
  }();
  for (size_t i = 0; i < memory.size(); i += 64) memory[i] = static_cast<unsigned char>(memory[i] + 1);
}

decltype(DriverApi::cuLaunchKernel) base_launch = nullptr;
decltype(DriverApi::cuGraphLaunch) base_graph_launch = nullptr;

const DriverApi& table() {
  static const DriverApi api = [] {
    DriverApi a = ptxgate::runtime::testing::make_fake_driver();
    a.cuDeviceGetCount = [](int* count) {  // one fake H100 (the GPU tests' supervisor lists the devices)
      *count = 1;
      return CUDA_SUCCESS;
    };
    a.cuMemAlloc = [](CUdeviceptr* p, size_t bytes) {
      void* m = std::calloc(bytes == 0 ? 1 : bytes, 1);
      if (m == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
      *p = reinterpret_cast<CUdeviceptr>(m);
      ++fake_state().allocations;
      return CUDA_SUCCESS;
    };
    a.cuMemFree = [](CUdeviceptr p) {
      std::free(reinterpret_cast<void*>(p));
      ++fake_state().frees;
      return CUDA_SUCCESS;
    };
    a.cuMemcpyHtoD = [](CUdeviceptr dst, const void* src, size_t n) {
      std::memcpy(reinterpret_cast<void*>(dst), src, n);
      return fake_state().log({"cuMemcpyHtoD", nullptr, nullptr, dst, reinterpret_cast<uint64_t>(src), n, {}});
    };
    a.cuMemcpyDtoH = [](void* dst, CUdeviceptr src, size_t n) {
      std::memcpy(dst, reinterpret_cast<const void*>(src), n);
      return fake_state().log({"cuMemcpyDtoH", nullptr, nullptr, reinterpret_cast<uint64_t>(dst), src, n, {}});
    };
    a.cuMemcpyHtoDAsync = [](CUdeviceptr dst, const void* src, size_t n, CUstream s) {
      std::memcpy(reinterpret_cast<void*>(dst), src, n);
      return fake_state().log({"cuMemcpyHtoDAsync", s, nullptr, dst, reinterpret_cast<uint64_t>(src), n, {}});
    };
    a.cuMemcpyDtoHAsync = [](void* dst, CUdeviceptr src, size_t n, CUstream s) {
      std::memcpy(dst, reinterpret_cast<const void*>(src), n);
      return fake_state().log({"cuMemcpyDtoHAsync", s, nullptr, reinterpret_cast<uint64_t>(dst), src, n, {}});
    };
    a.cuMemcpyDtoDAsync = [](CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
      std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
      return fake_state().log({"cuMemcpyDtoDAsync", s, nullptr, dst, src, n, {}});
    };
    a.cuMemcpyPeerAsync = [](CUdeviceptr dst, CUcontext, CUdeviceptr src, CUcontext, size_t n, CUstream s) {
      std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
      return fake_state().log({"cuMemcpyPeerAsync", s, nullptr, dst, src, n, {}});
    };
    a.cuMemsetD8 = [](CUdeviceptr p, unsigned char v, size_t n) {
      std::memset(reinterpret_cast<void*>(p), v, n);
      return fake_state().log({"cuMemsetD8", nullptr, nullptr, p, v, n, {}});
    };
    a.cuMemsetD8Async = [](CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
      std::memset(reinterpret_cast<void*>(p), v, n);
      return fake_state().log({"cuMemsetD8Async", s, nullptr, p, v, n, {}});
    };
    a.cuMemsetD16Async = [](CUdeviceptr p, unsigned short v, size_t n, CUstream s) {
      for (size_t i = 0; i < n; ++i) std::memcpy(reinterpret_cast<unsigned char*>(p) + 2 * i, &v, 2);
      return fake_state().log({"cuMemsetD16Async", s, nullptr, p, v, n * 2, {}});
    };
    a.cuMemsetD32Async = [](CUdeviceptr p, unsigned v, size_t n, CUstream s) {
      for (size_t i = 0; i < n; ++i) std::memcpy(reinterpret_cast<unsigned char*>(p) + 4 * i, &v, 4);
      return fake_state().log({"cuMemsetD32Async", s, nullptr, p, v, n * 4, {}});
    };
    a.cuMemsetD32 = [](CUdeviceptr p, unsigned v, size_t n) {
      for (size_t i = 0; i < n; ++i) std::memcpy(reinterpret_cast<unsigned char*>(p) + 4 * i, &v, 4);
      ++fake_state().memsets;
      return fake_state().log({"cuMemsetD32", nullptr, nullptr, p, v, n * 4, {}});
    };
    // Several devices: one context each, every pair may access the other's memory.
    a.cuDeviceGetCount = [](int* count) {
      const char* n = std::getenv("PTXGATE_FAKE_DEVICES");
      *count = n != nullptr ? std::atoi(n) : 2;
      return CUDA_SUCCESS;
    };
    a.cuDevicePrimaryCtxRetain = [](CUcontext* c, CUdevice d) {
      *c = reinterpret_cast<CUcontext>(0x1000 + 0x100 * static_cast<uintptr_t>(d));
      return fake_state().result_of("cuDevicePrimaryCtxRetain");
    };
    a.cuDeviceCanAccessPeer = [](int* can, CUdevice, CUdevice) {
      *can = 1;
      return CUDA_SUCCESS;
    };
    a.cuEventElapsedTime = [](float* ms, CUevent, CUevent) {
      *ms = 0.5f;
      return fake_state().result_of("cuEventElapsedTime");
    };
    // The fake graphs and pools (pool allocations made of host memory below).
    DriverApi programs = a;
    ptxgate::runtime::testing::add_fake_programs(programs);
#define PTXGATE_FAKE_GRAPH_ENTRY(name) a.name = programs.name;
    PTXGATE_FAKE_GRAPH_ENTRY(cuStreamBeginCapture)
    PTXGATE_FAKE_GRAPH_ENTRY(cuStreamEndCapture)
    PTXGATE_FAKE_GRAPH_ENTRY(cuGraphCreate)
    PTXGATE_FAKE_GRAPH_ENTRY(cuGraphDestroy)
    PTXGATE_FAKE_GRAPH_ENTRY(cuGraphAddKernelNode)
    PTXGATE_FAKE_GRAPH_ENTRY(cuGraphKernelNodeSetAttribute)
    PTXGATE_FAKE_GRAPH_ENTRY(cuGraphAddMemcpyNode)
    PTXGATE_FAKE_GRAPH_ENTRY(cuGraphAddMemsetNode)
    PTXGATE_FAKE_GRAPH_ENTRY(cuGraphInstantiateWithFlags)
    PTXGATE_FAKE_GRAPH_ENTRY(cuGraphLaunch)
    PTXGATE_FAKE_GRAPH_ENTRY(cuGraphExecDestroy)
    PTXGATE_FAKE_GRAPH_ENTRY(cuGraphExecKernelNodeSetParams)
    PTXGATE_FAKE_GRAPH_ENTRY(cuDeviceGetAttribute)
    PTXGATE_FAKE_GRAPH_ENTRY(cuMemPoolCreate)
    PTXGATE_FAKE_GRAPH_ENTRY(cuMemPoolDestroy)
    PTXGATE_FAKE_GRAPH_ENTRY(cuMemPoolSetAttribute)
    PTXGATE_FAKE_GRAPH_ENTRY(cuMemPoolGetAttribute)
    PTXGATE_FAKE_GRAPH_ENTRY(cuMemPoolTrimTo)
#undef PTXGATE_FAKE_GRAPH_ENTRY
    a.cuMemAllocFromPoolAsync = [](CUdeviceptr* ptr, size_t bytes, CUmemoryPool, CUstream s) {
      void* m = std::calloc(bytes == 0 ? 1 : bytes, 1);
      if (m == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
      *ptr = reinterpret_cast<CUdeviceptr>(m);
      ++fake_state().allocations;
      auto& p = ptxgate::runtime::testing::fake_programs();
      p.pool_live[*ptr] = bytes;
      p.used += bytes;
      p.used_high = std::max(p.used_high, p.used);
      p.reserved = std::max(p.reserved, p.used);
      p.reserved_high = std::max(p.reserved_high, p.reserved);
      return fake_state().log({"cuMemAllocFromPoolAsync", s, nullptr, *ptr, 0, bytes, {}});
    };
    a.cuMemFreeAsync = [](CUdeviceptr ptr, CUstream s) {
      auto& p = ptxgate::runtime::testing::fake_programs();
      if (auto it = p.pool_live.find(ptr); it != p.pool_live.end()) {
        p.used -= it->second;
        p.pool_live.erase(it);
      }
      std::free(reinterpret_cast<void*>(ptr));
      ++fake_state().frees;
      return fake_state().log({"cuMemFreeAsync", s, nullptr, ptr, 0, 0, {}});
    };
    base_launch = a.cuLaunchKernel;
    a.cuLaunchKernel = [](CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, CUstream stream, void** params, void** extra) {
      touch_driver_memory();
      return base_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
    };
    base_graph_launch = a.cuGraphLaunch;
    a.cuGraphLaunch = [](CUgraphExec e, CUstream s) {
      touch_driver_memory();
      return base_graph_launch(e, s);
    };
    return a;
  }();
  return api;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t,
                                                                    CUdriverProcAddressQueryResult* status) {
  const DriverApi& api = table();
  *pfn = nullptr;
#define PTXGATE_FAKE_LOOKUP(name) \
  if (std::strcmp(symbol, #name) == 0) *pfn = reinterpret_cast<void*>(api.name);
  PTXGATE_DRIVER_ENTRY_POINTS(PTXGATE_FAKE_LOOKUP)
#undef PTXGATE_FAKE_LOOKUP
  if (status != nullptr) *status = *pfn != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/// Byte widths of the argument slots the next launches record.
__attribute__((visibility("default"))) void ptxgate_fake_set_param_sizes(const unsigned* sizes, int count) {
  fake_state().param_sizes.assign(sizes, sizes + count);
}
__attribute__((visibility("default"))) int ptxgate_fake_launches(void) { return fake_state().launches; }
__attribute__((visibility("default"))) uint64_t ptxgate_fake_last_param(int index) {
  const auto& p = fake_state().last_params;
  return index >= 0 && static_cast<size_t>(index) < p.size() ? p[static_cast<size_t>(index)] : 0;
}
__attribute__((visibility("default"))) uintptr_t ptxgate_fake_last_stream(void) {
  return reinterpret_cast<uintptr_t>(fake_state().last_stream);
}
__attribute__((visibility("default"))) unsigned ptxgate_fake_last_block(int axis) {
  return axis >= 0 && axis < 3 ? fake_state().last_block[axis] : 0;
}
/// Makes entry point `name` answer `result` from now on (a sticky fault: CUDA_ERROR_ILLEGAL_ADDRESS from
/// the synchronisations and copies), until cuDevicePrimaryCtxReset clears every such answer.
__attribute__((visibility("default"))) void ptxgate_fake_fail(const char* name, int result) {
  fake_state().fail[name] = static_cast<CUresult>(result);
}
/// How many times the primary context was reset.
__attribute__((visibility("default"))) int ptxgate_fake_primary_resets(void) { return fake_state().primary_resets; }
/// How many recorded calls of entry point `name` (copies, stream destruction, ...).
__attribute__((visibility("default"))) int ptxgate_fake_count(const char* name) {
  return static_cast<int>(fake_state().count(name));
}

/// How many kernel-node updates of executable graphs the fake saw.
__attribute__((visibility("default"))) int ptxgate_fake_graph_updates(void) {
  return static_cast<int>(ptxgate::runtime::testing::fake_programs().updates.size());
}

}  // extern "C"
