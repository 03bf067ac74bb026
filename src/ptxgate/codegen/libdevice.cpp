// libdevice: the in-process cache of its bytes, lazy linking and internalisation (src/ptxgate/toolchain/ finds the file).
#include "ptxgate/codegen/internal/libdevice.hpp"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/CallingConv.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include "ptxgate/codegen/codegen.hpp"

namespace ptxgate::codegen {
namespace {

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

bool is_libdevice_function(const llvm::Function& function) {
  return function.getName().starts_with("__nv_") || function.getName().starts_with("__internal_");
}

bool calls_libdevice(const llvm::Module& module) {
  for (const llvm::Function& f : module)
    if (f.isDeclaration() && f.getName().starts_with("__nv_") && !f.use_empty()) return true;
  return false;
}

std::expected<void, diag::Diagnostics> link_libdevice(llvm::Module& module, const std::string& path) {
  if (path.empty())
    return std::unexpected(libdevice_error(
        "the module calls math functions from libdevice, but no libdevice file was given "
        "(CodegenOptions::libdevice_path; toolchain::discover finds the toolkit's)"));
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
