// Loads libcuda at run time and resolves the entry-point table through cuGetProcAddress_v2.
#include "ptxgate/runtime/driver_api.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include <fmt/format.h>

#include <atomic>
#include <mutex>

namespace ptxgate::runtime {
namespace {

using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

std::atomic<const DriverApi*> g_fake{nullptr};

}  // namespace

diag::Diagnostics driver_unavailable(std::string_view what, std::string_view reason) {
  diag::Diagnostics d;
  d.add(diag::Code::driver_unavailable, fmt::format("{} needs the CUDA driver, which is not available: {}", what, reason),
        {}, "run on a machine with an NVIDIA GPU and driver (libcuda.so.1 on the library path); "
            "offline commands (emit, check --device-profile) work without one");
  return d;
}

int entry_point_version(std::string_view name) {
  // cuGetProcAddress returns the newest variant of a base name for the version asked
  // for. Where CUDA 13 added a variant with a different signature than the prototype
  // cuda.h declares under the base name, ask for the version of that prototype.
  if (name == "cuCtxSynchronize") return 2000;  // cuCtxSynchronize_v2 (13.0) takes a CUcontext
  return CUDA_VERSION;
}

std::expected<DriverApi, diag::Diagnostics> load_driver(const char* library) {
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return std::unexpected(driver_unavailable("this command", fmt::format("cannot load {} ({})", library, why ? why : "?")));
  }
  auto get_proc = reinterpret_cast<GetProcAddressV2>(dlsym(handle, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    dlclose(handle);
    return std::unexpected(driver_unavailable(
        "this command", fmt::format("{} has no cuGetProcAddress_v2; the driver is older than CUDA 12", library)));
  }
  DriverApi api;
  api.library = library;
  std::string missing;
#define PTXGATE_RESOLVE(name)                                                                          \
  {                                                                                                    \
    void* fn = nullptr;                                                                                \
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;                               \
    CUresult r = get_proc(#name, &fn, entry_point_version(#name), CU_GET_PROC_ADDRESS_DEFAULT, &status); \
    if (r == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && fn != nullptr) {                 \
      api.name = reinterpret_cast<decltype(api.name)>(fn);                                             \
    } else {                                                                                           \
      missing += missing.empty() ? #name : ", " #name;                                                 \
    }                                                                                                  \
  }
  PTXGATE_DRIVER_ENTRY_POINTS(PTXGATE_RESOLVE)
#undef PTXGATE_RESOLVE
  if (!missing.empty()) {
    // The handle stays open: a partially resolved library is not used, but unloading
    // a driver library that may have started threads is not safe either.
    return std::unexpected(driver_unavailable(
        "this command", fmt::format("{} lacks entry points for CUDA {}.{}: {}; update the driver", library,
                                    CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10, missing)));
  }
  return api;
}

std::expected<const DriverApi*, diag::Diagnostics> driver() {
  if (const DriverApi* fake = g_fake.load(std::memory_order_acquire)) return fake;
  static const std::expected<DriverApi, diag::Diagnostics> loaded = [] {
    // PTXGATE_CUDA_DRIVER names another driver library (tests use it to simulate none).
    const char* library = std::getenv("PTXGATE_CUDA_DRIVER");
    auto api = load_driver(library != nullptr && *library != '\0' ? library : "libcuda.so.1");
    if (!api) return api;
    CUresult r = api->cuInit(0);
    if (r != CUDA_SUCCESS) {
      const char* name = "?";
      const char* text = "?";
      api->cuGetErrorName(r, &name);
      api->cuGetErrorString(r, &text);
      diag::Diagnostics d;
      auto code = r == CUDA_ERROR_NO_DEVICE ? diag::Code::no_device : diag::Code::driver_call_failed;
      d.add(code, fmt::format("cuInit failed: {} ({}): {}", name, static_cast<int>(r), text), {},
            "check that a GPU is visible (nvidia-smi) and CUDA_VISIBLE_DEVICES is not empty");
      return std::expected<DriverApi, diag::Diagnostics>(std::unexpected(std::move(d)));
    }
    return api;
  }();
  if (!loaded) return std::unexpected(loaded.error());
  return &*loaded;
}

void install_driver_for_testing(const DriverApi* fake) { g_fake.store(fake, std::memory_order_release); }

}  // namespace ptxgate::runtime
