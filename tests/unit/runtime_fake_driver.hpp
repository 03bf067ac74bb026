// A fake CUDA driver table for backend unit tests: chosen CUresults, call counters, H100-like attributes.
#pragma once

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ptxgate/runtime/driver_api.hpp"

namespace ptxgate::runtime::testing {

/// One call of the fake driver that matters for ordering: submissions to a stream (launches,
/// copies, memsets, event records, waits, stream-ordered allocations and frees), host waits
/// (event, stream and context synchronisation) and host-side memory calls. `tests/unit/
/// runtime_fake_order.hpp` derives happens-before from this log the way the hardware would.
struct FakeCall {
  std::string name;          ///< the entry point's base name ("cuLaunchKernel", "cuEventRecord", ...)
  CUstream stream = nullptr; ///< the stream it was submitted to (stream calls)
  CUevent event = nullptr;   ///< the event recorded, waited on or synchronised
  uint64_t dst = 0, src = 0, bytes = 0;  ///< copies and memsets; dst = the pointer of allocs and frees
  std::vector<uint64_t> params;          ///< a launch's argument slots (as many as param_sizes)
};

/// What the fake driver recorded and what it should answer. One global instance:
/// the fake functions are plain function pointers.
struct FakeDriverState {
  std::map<std::string, CUresult> fail;  ///< entry-point base name -> result to return
  int launches = 0, cooperative_launches = 0, set_attribute_calls = 0, occupancy_calls = 0, memsets = 0;
  int allocations = 0, frees = 0, module_unloads = 0, primary_releases = 0, primary_retains = 0, primary_resets = 0;
  int cubin_loads = 0, ptx_loads = 0;  ///< cuModuleLoadData (a cubin), cuModuleLoadDataEx (PTX for the JIT)
  int streams_created = 0, events_created = 0, events_destroyed = 0;
  std::vector<FakeCall> calls;       ///< ordering-relevant calls, in order
  bool events_pending = false;       ///< cuEventQuery answers CUDA_ERROR_NOT_READY (work still running)
  /// The fault outlives a reset of the primary context, as on an H100 with driver 580: after
  /// cuDevicePrimaryCtxReset, cuDevicePrimaryCtxRetain answers CUDA_ERROR_ILLEGAL_ADDRESS.
  bool fault_outlives_reset = false;
  unsigned last_grid[3] = {}, last_block[3] = {};
  unsigned last_shared = 0;
  CUstream last_stream = nullptr;
  /// Byte widths of the kernelParams slots the next launches copy (values, not pointers:
  /// the slots live on the launcher's stack).
  std::vector<unsigned> param_sizes;
  std::vector<uint64_t> last_params;  ///< values of the last launch's slots, zero-extended

  void record(void** params) {
    last_params.clear();
    for (size_t i = 0; i < param_sizes.size(); ++i) {
      uint64_t v = 0;
      std::memcpy(&v, params[i], param_sizes[i]);
      last_params.push_back(v);
    }
  }
  /// Device memory the fake keeps, byte by byte, when `model_memory` is set: cuMemsetD8 writes it,
  /// cuMemcpyDtoH reads the bytes it holds (others are left as they were), a test writes it directly.
  bool model_memory = false;
  std::map<uint64_t, unsigned char> memory;
  void write_memory(uint64_t address, const void* bytes, size_t n) {
    for (size_t i = 0; i < n; ++i) memory[address + i] = static_cast<const unsigned char*>(bytes)[i];
  }
  int occupancy_answer = 8;        ///< cuOccupancyMaxActiveBlocksPerMultiprocessor
  int num_regs = 32, max_threads = 1024, static_shared = 0;
  int last_max_dynamic_shared = -1;

  CUresult result_of(const char* name) const {
    auto it = fail.find(name);
    return it == fail.end() ? CUDA_SUCCESS : it->second;
  }
  /// Appends a call to the log and answers with the result chosen for it.
  CUresult log(FakeCall call) {
    CUresult r = result_of(call.name.c_str());
    if (r == CUDA_SUCCESS) calls.push_back(std::move(call));
    return r;
  }
  /// How many logged calls have this name.
  size_t count(std::string_view name) const {
    size_t n = 0;
    for (const auto& c : calls) n += c.name == name;
    return n;
  }
};

inline FakeDriverState& fake_state() {
  static FakeDriverState state;
  return state;
}

/// Serialises the fake entry points that record state, for tests that launch from many threads.
inline std::mutex& fake_mutex() {
  static std::mutex m;
  return m;
}

namespace detail {
template <class F>
struct Succeed;
template <class... A>
struct Succeed<CUresult (*)(A...)> {
  static CUresult call(A...) { return CUDA_SUCCESS; }
};
}  // namespace detail

/// A complete fake table: every entry succeeds unless fake_state().fail names it.
inline DriverApi make_fake_driver() {
  DriverApi api;
  api.library = "fake";
#define PTXGATE_FAKE_DEFAULT(name) api.name = &detail::Succeed<decltype(api.name)>::call;
  PTXGATE_DRIVER_ENTRY_POINTS(PTXGATE_FAKE_DEFAULT)
#undef PTXGATE_FAKE_DEFAULT
  api.cuGetErrorName = [](CUresult r, const char** s) {
    switch (r) {
      case CUDA_ERROR_ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
      case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
      case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
      case CUDA_ERROR_LAUNCH_FAILED: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  };
  api.cuGetErrorString = [](CUresult r, const char** s) {
    *s = r == CUDA_ERROR_ILLEGAL_ADDRESS ? "an illegal memory access was encountered" : "fake error text";
    return CUDA_SUCCESS;
  };
  api.cuDeviceGetName = [](char* name, int len, CUdevice) {
    std::strncpy(name, "Fake H100", static_cast<size_t>(len));
    return fake_state().result_of("cuDeviceGetName");
  };
  api.cuDeviceTotalMem = [](size_t* bytes, CUdevice) {
    *bytes = size_t{80} << 30;
    return CUDA_SUCCESS;
  };
  api.cuDriverGetVersion = [](int* v) {
    *v = 13000;
    return CUDA_SUCCESS;
  };
  api.cuDeviceGetAttribute = [](int* v, CUdevice_attribute a, CUdevice) {
    static const std::map<CUdevice_attribute, int> h100 = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472},
        {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
        {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
    };
    auto it = h100.find(a);
    *v = it == h100.end() ? 0 : it->second;
    return fake_state().result_of("cuDeviceGetAttribute");
  };
  api.cuDeviceGet = [](CUdevice* d, int ordinal) {
    *d = ordinal;  // device N is ordinal N: contexts of two devices name different devices
    return fake_state().result_of("cuDeviceGet");
  };
  api.cuDevicePrimaryCtxRetain = [](CUcontext* c, CUdevice) {
    *c = reinterpret_cast<CUcontext>(0x1000);
    ++fake_state().primary_retains;
    return fake_state().result_of("cuDevicePrimaryCtxRetain");
  };
  // A sticky fault is simulated by failing entry points (fail); resetting the primary context clears it.
  api.cuDevicePrimaryCtxReset = [](CUdevice) {
    CUresult r = fake_state().result_of("cuDevicePrimaryCtxReset");
    if (r != CUDA_SUCCESS) return r;
    ++fake_state().primary_resets;
    if (fake_state().fault_outlives_reset)
      fake_state().fail["cuDevicePrimaryCtxRetain"] = CUDA_ERROR_ILLEGAL_ADDRESS;
    else
      fake_state().fail.clear();
    return CUDA_SUCCESS;
  };
  api.cuDevicePrimaryCtxRelease = [](CUdevice) {
    ++fake_state().primary_releases;
    return fake_state().result_of("cuDevicePrimaryCtxRelease");
  };
  api.cuMemAlloc = [](CUdeviceptr* p, size_t bytes) {
    CUresult r = fake_state().result_of("cuMemAlloc");
    if (r == CUDA_SUCCESS) *p = 0x10000 + 0x100 * static_cast<CUdeviceptr>(++fake_state().allocations);
    if (r == CUDA_SUCCESS) fake_state().calls.push_back({"cuMemAlloc", nullptr, nullptr, *p, 0, bytes, {}});
    return r;
  };
  api.cuMemFree = [](CUdeviceptr p) {
    ++fake_state().frees;
    return fake_state().log({"cuMemFree", nullptr, nullptr, p, 0, 0, {}});
  };
  api.cuMemAllocHost = [](void** p, size_t bytes) {
    CUresult r = fake_state().result_of("cuMemAllocHost");
    if (r == CUDA_SUCCESS) *p = ::operator new(bytes);
    return r;
  };
  api.cuMemFreeHost = [](void* p) {
    ::operator delete(p);
    return fake_state().log({"cuMemFreeHost", nullptr, nullptr, reinterpret_cast<uint64_t>(p), 0, 0, {}});
  };
  api.cuMemAllocAsync = [](CUdeviceptr* p, size_t bytes, CUstream s) {
    CUresult r = fake_state().result_of("cuMemAllocAsync");
    if (r != CUDA_SUCCESS) return r;
    *p = 0x800000 + 0x100 * static_cast<CUdeviceptr>(++fake_state().allocations);
    return fake_state().log({"cuMemAllocAsync", s, nullptr, *p, 0, bytes, {}});
  };
  api.cuMemAllocFromPoolAsync = [](CUdeviceptr* p, size_t bytes, CUmemoryPool, CUstream s) {
    CUresult r = fake_state().result_of("cuMemAllocFromPoolAsync");
    if (r != CUDA_SUCCESS) return r;
    *p = 0x800000 + 0x100 * static_cast<CUdeviceptr>(++fake_state().allocations);
    return fake_state().log({"cuMemAllocFromPoolAsync", s, nullptr, *p, 0, bytes, {}});
  };
  api.cuMemFreeAsync = [](CUdeviceptr p, CUstream s) {
    ++fake_state().frees;
    return fake_state().log({"cuMemFreeAsync", s, nullptr, p, 0, 0, {}});
  };
  api.cuMemsetD32 = [](CUdeviceptr p, unsigned v, size_t n) {
    ++fake_state().memsets;
    return fake_state().log({"cuMemsetD32", nullptr, nullptr, p, v, n * 4, {}});
  };
  api.cuMemsetD8 = [](CUdeviceptr p, unsigned char v, size_t n) {
    if (fake_state().model_memory)
      for (size_t i = 0; i < n; ++i) fake_state().memory[p + i] = v;
    return fake_state().log({"cuMemsetD8", nullptr, nullptr, p, v, n, {}});
  };
  api.cuMemsetD8Async = [](CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
    return fake_state().log({"cuMemsetD8Async", s, nullptr, p, v, n, {}});
  };
  api.cuMemsetD16Async = [](CUdeviceptr p, unsigned short v, size_t n, CUstream s) {
    return fake_state().log({"cuMemsetD16Async", s, nullptr, p, v, n * 2, {}});
  };
  api.cuMemsetD32Async = [](CUdeviceptr p, unsigned v, size_t n, CUstream s) {
    return fake_state().log({"cuMemsetD32Async", s, nullptr, p, v, n * 4, {}});
  };
  api.cuCtxSynchronize = [] { return fake_state().log({"cuCtxSynchronize", nullptr, nullptr, 0, 0, 0, {}}); };
  api.cuStreamCreate = [](CUstream* s, unsigned) {
    CUresult r = fake_state().result_of("cuStreamCreate");
    if (r == CUDA_SUCCESS) *s = reinterpret_cast<CUstream>(0x2000 + 0x10 * ++fake_state().streams_created);
    return r;
  };
  api.cuStreamDestroy = [](CUstream s) { return fake_state().log({"cuStreamDestroy", s, nullptr, 0, 0, 0, {}}); };
  api.cuStreamSynchronize = [](CUstream s) {
    return fake_state().log({"cuStreamSynchronize", s, nullptr, 0, 0, 0, {}});
  };
  api.cuStreamWaitEvent = [](CUstream s, CUevent e, unsigned) {
    return fake_state().log({"cuStreamWaitEvent", s, e, 0, 0, 0, {}});
  };
  api.cuEventCreate = [](CUevent* e, unsigned) {
    CUresult r = fake_state().result_of("cuEventCreate");
    if (r == CUDA_SUCCESS) *e = reinterpret_cast<CUevent>(0x50000 + 0x10 * ++fake_state().events_created);
    return r;
  };
  api.cuEventDestroy = [](CUevent e) {
    ++fake_state().events_destroyed;
    return fake_state().log({"cuEventDestroy", nullptr, e, 0, 0, 0, {}});
  };
  api.cuEventRecord = [](CUevent e, CUstream s) {
    return fake_state().log({"cuEventRecord", s, e, 0, 0, 0, {}});
  };
  api.cuEventSynchronize = [](CUevent e) {
    return fake_state().log({"cuEventSynchronize", nullptr, e, 0, 0, 0, {}});
  };
  api.cuEventQuery = [](CUevent e) {
    CUresult r = fake_state().result_of("cuEventQuery");
    if (r != CUDA_SUCCESS) return r;
    if (fake_state().events_pending) return CUDA_ERROR_NOT_READY;
    return fake_state().log({"cuEventQuery", nullptr, e, 0, 0, 0, {}});
  };
  api.cuMemcpyHtoD = [](CUdeviceptr dst, const void* src, size_t n) {
    return fake_state().log({"cuMemcpyHtoD", nullptr, nullptr, dst, reinterpret_cast<uint64_t>(src), n, {}});
  };
  api.cuMemcpyDtoH = [](void* dst, CUdeviceptr src, size_t n) {
    auto& s = fake_state();
    if (s.model_memory && s.result_of("cuMemcpyDtoH") == CUDA_SUCCESS)
      for (auto it = s.memory.lower_bound(src); it != s.memory.end() && it->first < src + n; ++it)
        static_cast<unsigned char*>(dst)[it->first - src] = it->second;
    return s.log({"cuMemcpyDtoH", nullptr, nullptr, reinterpret_cast<uint64_t>(dst), src, n, {}});
  };
  api.cuMemcpyHtoDAsync = [](CUdeviceptr dst, const void* src, size_t n, CUstream s) {
    return fake_state().log({"cuMemcpyHtoDAsync", s, nullptr, dst, reinterpret_cast<uint64_t>(src), n, {}});
  };
  api.cuMemcpyDtoHAsync = [](void* dst, CUdeviceptr src, size_t n, CUstream s) {
    return fake_state().log({"cuMemcpyDtoHAsync", s, nullptr, reinterpret_cast<uint64_t>(dst), src, n, {}});
  };
  api.cuMemcpyDtoDAsync = [](CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    return fake_state().log({"cuMemcpyDtoDAsync", s, nullptr, dst, src, n, {}});
  };
  api.cuModuleLoadData = [](CUmodule* m, const void*) {
    ++fake_state().cubin_loads;
    *m = reinterpret_cast<CUmodule>(0x2000);
    return fake_state().result_of("cuModuleLoadData");
  };
  api.cuModuleLoadDataEx = [](CUmodule* m, const void*, unsigned, CUjit_option*, void**) {
    ++fake_state().ptx_loads;
    *m = reinterpret_cast<CUmodule>(0x2000);
    return fake_state().result_of("cuModuleLoadDataEx");
  };
  api.cuModuleGetFunction = [](CUfunction* f, CUmodule, const char*) {
    *f = reinterpret_cast<CUfunction>(0x3000);
    return fake_state().result_of("cuModuleGetFunction");
  };
  api.cuModuleUnload = [](CUmodule) {
    ++fake_state().module_unloads;
    return CUDA_SUCCESS;
  };
  api.cuFuncGetAttribute = [](int* v, CUfunction_attribute a, CUfunction) {
    auto& s = fake_state();
    *v = a == CU_FUNC_ATTRIBUTE_NUM_REGS                ? s.num_regs
         : a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? s.max_threads
         : a == CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES     ? s.static_shared
                                                        : 0;
    return s.result_of("cuFuncGetAttribute");
  };
  api.cuFuncSetAttribute = [](CUfunction, CUfunction_attribute a, int value) {
    auto& s = fake_state();
    ++s.set_attribute_calls;
    if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) s.last_max_dynamic_shared = value;
    return s.result_of("cuFuncSetAttribute");
  };
  api.cuOccupancyMaxActiveBlocksPerMultiprocessor = [](int* n, CUfunction, int, size_t) {
    std::lock_guard lock(fake_mutex());
    ++fake_state().occupancy_calls;
    *n = fake_state().occupancy_answer;
    return fake_state().result_of("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  };
  api.cuLaunchKernel = [](CUfunction, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, CUstream stream, void** params, void**) {
    std::lock_guard lock(fake_mutex());
    auto& s = fake_state();
    ++s.launches;
    s.last_stream = stream;
    s.last_grid[0] = gx, s.last_grid[1] = gy, s.last_grid[2] = gz;
    s.last_block[0] = bx, s.last_block[1] = by, s.last_block[2] = bz;
    s.last_shared = shared;
    s.record(params);
    return s.log({"cuLaunchKernel", stream, nullptr, 0, 0, 0, s.last_params});
  };
  api.cuLaunchCooperativeKernel = [](CUfunction, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                     unsigned bz, unsigned shared, CUstream stream, void** params) {
    std::lock_guard lock(fake_mutex());
    auto& s = fake_state();
    ++s.cooperative_launches;
    s.last_stream = stream;
    s.last_grid[0] = gx, s.last_grid[1] = gy, s.last_grid[2] = gz;
    s.last_block[0] = bx, s.last_block[1] = by, s.last_block[2] = bz;
    s.last_shared = shared;
    s.record(params);
    return s.log({"cuLaunchCooperativeKernel", stream, nullptr, 0, 0, 0, s.last_params});
  };
  return api;
}

/// Resets the recorded state before a test case.
inline void reset_fake_state() { fake_state() = FakeDriverState{}; }

}  // namespace ptxgate::runtime::testing
