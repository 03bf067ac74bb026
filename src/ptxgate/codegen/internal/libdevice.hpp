// libdevice: reading libdevice.10.bc once per process, linking only what a module calls.
#pragma once

#include <expected>
#include <string>

#include <llvm/IR/Module.h>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::codegen {

/// True for a function that came from libdevice (`__nv_*`, and its `__internal_*` helpers).
bool is_libdevice_function(const llvm::Function& function);

/// True when the module declares a libdevice function (`__nv_*`) it calls.
bool calls_libdevice(const llvm::Module& module);

/// Links the libdevice functions `module` needs (Linker::LinkOnlyNeeded) from the file
/// `path`, whose bytes are read once per process and shared by every compile.
/// PG2002 when `path` is empty, the file cannot be read or is not libdevice bitcode.
[[nodiscard]] std::expected<void, diag::Diagnostics> link_libdevice(llvm::Module& module, const std::string& path);

/// Gives every definition except the PTX kernels internal linkage, so that O3 inlines
/// and drops the linked libdevice bodies.
void internalize_non_kernels(llvm::Module& module);

}  // namespace ptxgate::codegen
