// libdevice search path, the in-process cache of its bytes, lazy linking and internalisation.
#include "ptxgate/codegen/internal/libdevice.hpp"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/CallingConv.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include "ptxgate/codegen/codegen.hpp"

#ifndef PTXGATE_DEFAULT_CUDA_ROOT
#define PTXGATE_DEFAULT_CUDA_ROOT "/usr/local/cuda"
#endif

namespace ptxgate::codegen {
namespace {

constexpr std::string_view kLibdeviceInCudaRoot = "nvvm/libdevice/libdevice.10.bc";

diag::Diagnostics libdevice_error(std::string message) {
  diag::Diagnostics d;
  d.add(diag::Code::libdevice_missing, std::move(message), {},
        "install the CUDA Toolkit, or point PTXGATE_LIBDEVICE at libdevice.10.bc (or CUDA_HOME at the toolkit)");
  return d;
}

/// File bytes by path, read once; never freed (lazily linked modules keep pointing into them).
struct LibdeviceCache {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<llvm::MemoryBuffer>> by_path;
};

LibdeviceCache& cache() {
  static LibdeviceCache* instance = new LibdeviceCache;
  return *instance;
}

std::expected<std::shared_ptr<llvm::MemoryBuffer>, diag::Diagnostics> libdevice_bytes(const std::string& path) {
  auto& c = cache();
  std::lock_guard lock(c.mutex);
  if (auto it = c.by_path.find(path); it != c.by_path.end()) return it->second;
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!file)
    return std::unexpected(libdevice_error(fmt::format("cannot read libdevice '{}': {}", path, file.getError().message())));
  std::shared_ptr<llvm::MemoryBuffer> bytes(std::move(*file));
  c.by_path.emplace(path, bytes);
  return bytes;
}

}  // namespace

std::expected<std::string, diag::Diagnostics> resolve_libdevice_path(const CodegenOptions& options) {
  if (!options.libdevice_path.empty()) {
    if (std::filesystem::is_regular_file(options.libdevice_path)) return options.libdevice_path;
    return std::unexpected(libdevice_error(
        fmt::format("libdevice not found at '{}' (the libdevice path requested)", options.libdevice_path)));
  }
  if (const char* explicit_path = std::getenv("PTXGATE_LIBDEVICE"); explicit_path && *explicit_path) {
    if (std::filesystem::is_regular_file(explicit_path)) return std::string(explicit_path);
    return std::unexpected(libdevice_error(fmt::format("libdevice not found at '{}' ($PTXGATE_LIBDEVICE)", explicit_path)));
  }
  std::vector<std::string> searched;
  if (const char* cuda_home = std::getenv("CUDA_HOME"); cuda_home && *cuda_home) {
    std::string candidate = (std::filesystem::path(cuda_home) / kLibdeviceInCudaRoot).string();
    if (std::filesystem::is_regular_file(candidate)) return candidate;
    searched.push_back(fmt::format("{} ($CUDA_HOME)", candidate));
  }
  std::string fallback = (std::filesystem::path(PTXGATE_DEFAULT_CUDA_ROOT) / kLibdeviceInCudaRoot).string();
  if (std::filesystem::is_regular_file(fallback)) return fallback;
  searched.push_back(fmt::format("{} (toolkit found at build time)", fallback));
  return std::unexpected(libdevice_error(fmt::format(
      "the module calls math functions from libdevice, but libdevice.10.bc was not found; searched: {}",
      fmt::join(searched, ", "))));
}

bool calls_libdevice(const llvm::Module& module) {
  for (const llvm::Function& f : module)
    if (f.isDeclaration() && f.getName().starts_with("__nv_") && !f.use_empty()) return true;
  return false;
}

std::expected<void, diag::Diagnostics> link_libdevice(llvm::Module& module, const std::string& path) {
  auto bytes = libdevice_bytes(path);
  if (!bytes) return std::unexpected(std::move(bytes.error()));
  auto library = llvm::getOwningLazyBitcodeModule(
      llvm::MemoryBuffer::getMemBuffer((*bytes)->getMemBufferRef(), /*RequiresNullTerminator=*/false),
      module.getContext());
  if (!library) {
    std::string reason = llvm::toString(library.takeError());
    return std::unexpected(libdevice_error(fmt::format("'{}' is not valid libdevice bitcode: {}", path, reason)));
  }
  (*library)->setTargetTriple(module.getTargetTriple());
  (*library)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*library), llvm::Linker::LinkOnlyNeeded))
    return std::unexpected(libdevice_error(fmt::format("linking libdevice from '{}' failed", path)));
  return {};
}

void internalize_non_kernels(llvm::Module& module) {
  for (llvm::Function& f : module)
    if (!f.isDeclaration() && f.getCallingConv() != llvm::CallingConv::PTX_Kernel)
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable& g : module.globals())
    if (!g.isDeclaration()) g.setLinkage(llvm::GlobalValue::InternalLinkage);
}

}  // namespace ptxgate::codegen
