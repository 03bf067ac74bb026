// Loads libnccl at run time and resolves its entry points with dlsym.
#include "ptxgate/runtime/nccl_api.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>

#include <fmt/format.h>

namespace ptxgate::runtime {
namespace {

std::atomic<const NcclApi*> g_fake{nullptr};

constexpr const char* kNcclHint =
    "set PTXGATE_NCCL_LIBRARY to the path of libnccl.so.2 (PyTorch ships it in "
    "site-packages/nvidia/nccl/lib) or put it on the library path; everything but collectives works without it";

diag::Diagnostics unavailable(std::string reason) {
  diag::Diagnostics d;
  d.add(diag::Code::nccl_unavailable, fmt::format("NCCL is not available: {}", reason), {}, kNcclHint);
  return d;
}

}  // namespace

std::string nccl_version_text(int code) {
  if (code >= 20900) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

std::expected<NcclApi, diag::Diagnostics> load_nccl(const char* library) {
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return std::unexpected(unavailable(fmt::format("cannot load {} ({})", library, why ? why : "?")));
  }
  NcclApi api;
  api.library = library;
  std::string missing;
#define PTXGATE_NCCL_RESOLVE(name)                                                  \
  if (void* fn = dlsym(handle, #name); fn != nullptr)                               \
    api.name = reinterpret_cast<decltype(api.name)>(fn);                            \
  else                                                                              \
    missing += missing.empty() ? #name : ", " #name;
  PTXGATE_NCCL_ENTRY_POINTS(PTXGATE_NCCL_RESOLVE)
#undef PTXGATE_NCCL_RESOLVE
  if (!missing.empty()) {
    // The handle stays open: unloading a library that may have started threads is not safe.
    return std::unexpected(unavailable(fmt::format("{} lacks entry points of NCCL {}.{}: {}", library, NCCL_MAJOR,
                                                   NCCL_MINOR, missing)));
  }
  if (api.ncclGetVersion(&api.version) != ncclSuccess)
    return std::unexpected(unavailable(fmt::format("ncclGetVersion of {} failed", library)));
  const int major = api.version >= 20900 ? api.version / 10000 : api.version / 1000;
  if (major != NCCL_MAJOR) {
    diag::Diagnostics d;
    d.add(diag::Code::nccl_version_mismatch,
          fmt::format("{} is NCCL {} (major {}), but ptxgate was built against nccl.h {}.{} (major {})", library,
                      nccl_version_text(api.version), major, NCCL_MAJOR, NCCL_MINOR, NCCL_MAJOR),
          {}, "point PTXGATE_NCCL_LIBRARY at an NCCL 2.x libnccl.so.2");
    return std::unexpected(std::move(d));
  }
  return api;
}

std::expected<const NcclApi*, diag::Diagnostics> nccl() {
  if (const NcclApi* fake = g_fake.load(std::memory_order_acquire)) return fake;
  static const std::expected<NcclApi, diag::Diagnostics> loaded = [] {
    const char* library = std::getenv("PTXGATE_NCCL_LIBRARY");
    return load_nccl(library != nullptr && *library != '\0' ? library : kDefaultNcclLibrary);
  }();
  if (!loaded) return std::unexpected(loaded.error());
  return &*loaded;
}

void install_nccl_for_testing(const NcclApi* fake) { g_fake.store(fake, std::memory_order_release); }

}  // namespace ptxgate::runtime
