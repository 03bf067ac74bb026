// discover(): the one place that knows where ptxas and libdevice come from.
#include "ptxgate/toolchain/toolkit.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#ifndef PTXGATE_DEFAULT_CUDA_ROOT
#define PTXGATE_DEFAULT_CUDA_ROOT "/usr/local/cuda"
#endif

namespace ptxgate::toolchain {
namespace {

/// One file the toolkit provides: where it lives in a root, how it is named, what it must be.
struct ToolFile {
  const char* in_root;        ///< "bin/ptxas"
  const char* env;            ///< "PTXGATE_PTXAS"
  const char* what;           ///< "ptxas"
  diag::Code missing;         ///< PG2005 / PG2002
  const char* fix;
  bool executable;
};

constexpr ToolFile kPtxas{"bin/ptxas", "PTXGATE_PTXAS", "ptxas", diag::Code::ptxas_missing,
                          "install the CUDA Toolkit and set CUDA_HOME (or PTXGATE_PTXAS to the ptxas binary)", true};
constexpr ToolFile kLibdevice{"nvvm/libdevice/libdevice.10.bc", "PTXGATE_LIBDEVICE", "libdevice",
                              diag::Code::libdevice_missing,
                              "install the CUDA Toolkit, or point PTXGATE_LIBDEVICE at libdevice.10.bc (or CUDA_HOME at "
                              "the toolkit)",
                              false};

constexpr ToolFile kNvdisasm{"bin/nvdisasm", "PTXGATE_NVDISASM", "nvdisasm", diag::Code::disassembler_unavailable,
                             "install the CUDA Toolkit's nvdisasm (package cuda-nvdisasm) and set CUDA_HOME, or point "
                             "PTXGATE_NVDISASM at it",
                             true};

bool usable(const std::string& path, const ToolFile& file) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  return !file.executable || ::access(path.c_str(), X_OK) == 0;
}

std::expected<std::string, diag::Diagnostics> missing(const ToolFile& file, std::string message) {
  diag::Diagnostics d;
  d.add(file.missing, std::move(message), {}, file.fix);
  return std::unexpected(std::move(d));
}

std::expected<std::string, diag::Diagnostics> find(const ToolFile& file, const std::string& override_path) {
  const char* problem = file.executable ? "not found or not executable" : "not found";
  if (!override_path.empty()) {
    if (usable(override_path, file)) return override_path;
    return missing(file, fmt::format("{} {} at '{}' (the {} path requested)", file.what, problem, override_path,
                                     file.what));
  }
  if (const char* env = std::getenv(file.env); env && *env) {
    if (usable(env, file)) return std::string(env);
    return missing(file, fmt::format("{} {} at '{}' (${})", file.what, problem, env, file.env));
  }
  std::vector<std::string> searched;
  for (const auto& root : cuda_roots()) {
    std::string candidate = (std::filesystem::path(root.path) / file.in_root).string();
    if (usable(candidate, file)) return candidate;
    searched.push_back(fmt::format("{} ({})", candidate, root.origin));
  }
  return missing(file, fmt::format("{} {}; searched: {}", file.what, problem, fmt::join(searched, ", ")));
}

}  // namespace

std::vector<CudaRoot> cuda_roots() {
  std::vector<CudaRoot> roots;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) roots.push_back({home, "$CUDA_HOME"});
  roots.push_back({PTXGATE_DEFAULT_CUDA_ROOT, "toolkit found at build time"});
  return roots;
}

Toolkit discover(const ToolkitOverrides& overrides) {
  return Toolkit{find(kPtxas, overrides.ptxas), find(kLibdevice, overrides.libdevice)};
}

std::expected<std::string, diag::Diagnostics> find_nvdisasm() { return find(kNvdisasm, {}); }

}  // namespace ptxgate::toolchain
