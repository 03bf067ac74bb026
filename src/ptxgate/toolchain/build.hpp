// One compile of a verified module with the toolkit: {PTX, cubin, KernelInfo, KernelResources}.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/toolchain/ptxas.hpp"
#include "ptxgate/toolchain/toolkit.hpp"

namespace ptxgate::toolchain {

/// What build() produced.
struct Build {
  ir::Target target;
  unsigned ptx_isa_version = 0;              ///< the PTX `.version` line (read_ptx_header) as major * 10 + minor
  std::string ptx;
  std::vector<contract::KernelInfo> kernels;  ///< one per kernel, in module order
  std::string libdevice_path;                ///< the libdevice offered to codegen; empty when none was found
  std::string cubin;                         ///< ptxas's output; empty when not assembled
  ResourceMap resources;                     ///< ptxas's report per kernel, launch bounds merged
  std::string ptxas_log;                     ///< ptxas's raw `-v` report
};

/// `options` with the toolkit's libdevice in place of options.libdevice_path: the toolkit,
/// discovered with that path as its override, is the one authority on which file is linked.
codegen::CodegenOptions with_toolkit(codegen::CodegenOptions options, const Toolkit& toolkit);

/// codegen::compile with the toolkit's libdevice, then, when `assemble_cubin`, ptxas for a
/// cubin and each kernel's resources. Errors: codegen's, PG2002 naming every path searched
/// when the module calls libdevice and the toolkit has none, and assemble()'s (PG2004, PG2005).
[[nodiscard]] std::expected<Build, diag::Diagnostics> build(const ir::Module& verified,
                                                            const codegen::CodegenOptions& options,
                                                            const Toolkit& toolkit, bool assemble_cubin);

/// codegen::emit_llvm_ir with the toolkit's libdevice (same errors as build's compile step).
[[nodiscard]] std::expected<std::string, diag::Diagnostics> emit_llvm_ir(const ir::Module& verified,
                                                                         const codegen::CodegenOptions& options,
                                                                         const Toolkit& toolkit);

}  // namespace ptxgate::toolchain
