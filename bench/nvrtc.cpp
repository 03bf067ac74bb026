// Nvrtc: dlopen of the toolkit's libnvrtc and one compile, as CuPy's RawKernel or a JIT framework calls it.
#include "nvrtc.hpp"

#include <dlfcn.h>
#include <unistd.h>
#include <nvrtc.h>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <random>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ptxgate/toolchain/toolkit_library.hpp"

namespace ptxgate::bench {

struct Nvrtc::Api {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) ptx = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
};

namespace {

template <class F>
bool resolve(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

std::expected<Nvrtc, std::string> open_nvrtc(Nvrtc::Api* api) {
  auto path = toolchain::find_toolkit_library("nvrtc");
  if (!path) return std::unexpected(path.error());
  void* lib = dlopen(path->c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return std::unexpected(fmt::format("dlopen('{}'): {}", *path, dlerror()));
  bool ok = resolve(lib, "nvrtcVersion", api->version) && resolve(lib, "nvrtcCreateProgram", api->create) &&
            resolve(lib, "nvrtcCompileProgram", api->compile) && resolve(lib, "nvrtcDestroyProgram", api->destroy) &&
            resolve(lib, "nvrtcGetProgramLogSize", api->log_size) && resolve(lib, "nvrtcGetProgramLog", api->log) &&
            resolve(lib, "nvrtcGetPTXSize", api->ptx_size) && resolve(lib, "nvrtcGetPTX", api->ptx) &&
            resolve(lib, "nvrtcGetCUBINSize", api->cubin_size) && resolve(lib, "nvrtcGetCUBIN", api->cubin);
  if (!ok) return std::unexpected(fmt::format("'{}' lacks an NVRTC entry point", *path));
  Nvrtc out;
  int major = 0, minor = 0;
  api->version(&major, &minor);
  out.version = fmt::format("{}.{}", major, minor);
  // <root>/lib64/libnvrtc.so -> <root>/include
  out.include_dir = (std::filesystem::path(*path).parent_path().parent_path() / "include").string();
  return out;
}

}  // namespace

std::expected<const Nvrtc*, std::string> Nvrtc::get() {
  static Api api;
  static std::expected<Nvrtc, std::string> opened = [] {
    auto n = open_nvrtc(&api);
    if (n) n->api_ = &api;
    return n;
  }();
  if (!opened) return std::unexpected(opened.error());
  return &*opened;
}

std::expected<std::string, std::string> Nvrtc::compile(const std::string& source, const std::string& name,
                                                       const std::string& arch, bool cubin) const {
  nvrtcProgram program = nullptr;
  if (api_->create(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return std::unexpected(std::string("nvrtcCreateProgram failed"));
  const std::string arch_option = fmt::format("-arch={}", arch);
  const std::string include_option = "-I" + include_dir;
  const char* options[] = {arch_option.c_str(), include_option.c_str()};
  std::expected<std::string, std::string> out;
  if (api_->compile(program, 2, options) != NVRTC_SUCCESS) {
    size_t size = 0;
    api_->log_size(program, &size);
    std::string log(size, '\0');
    api_->log(program, log.data());
    out = std::unexpected(fmt::format("NVRTC failed on {}: {}", name, log));
  } else {
    size_t size = 0;
    (cubin ? api_->cubin_size : api_->ptx_size)(program, &size);
    std::string product(size, '\0');
    (cubin ? api_->cubin : api_->ptx)(program, product.data());
    if (!cubin && !product.empty() && product.back() == '\0') product.pop_back();  // the size counts the PTX's NUL
    out = std::move(product);
  }
  api_->destroy(&program);
  return out;
}

std::string uncached_source(const std::string& source, std::string_view tag) {
  static const uint64_t process = [] {
    std::random_device device;
    return (uint64_t{device()} << 32) ^ device() ^ static_cast<uint64_t>(::getpid());
  }();
  return source + fmt::format("\nextern \"C\" __global__ void ptxgate_uncached_{:016x}_{}() {{}}\n", process, tag);
}

std::string twin_arch(const std::string& source) {
  static constexpr std::string_view kLine = "// nvcc-arch: sm_";
  const size_t at = source.find(kLine);
  if (at == std::string::npos || (at != 0 && source[at - 1] != '\n')) return "90";
  const size_t begin = at + kLine.size();
  size_t end = begin;
  while (end < source.size() && std::isalnum(static_cast<unsigned char>(source[end]))) ++end;
  return end > begin ? source.substr(begin, end - begin) : "90";
}

}  // namespace ptxgate::bench
