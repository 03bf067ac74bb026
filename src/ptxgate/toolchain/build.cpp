// build(): codegen with the toolkit's libdevice, then ptxas; codegen's "no libdevice" becomes the resolver's reason.
#include "ptxgate/toolchain/build.hpp"

#include <algorithm>

#include "ptxgate/toolchain/ptx_entries.hpp"

namespace ptxgate::toolchain {
namespace {

/// codegen reports PG2002 without knowing where libdevice was looked for; when the toolkit has
/// none, its diagnostic (every path searched) replaces codegen's.
template <class T>
std::expected<T, diag::Diagnostics> explain_missing_libdevice(std::expected<T, diag::Diagnostics> result,
                                                              const Toolkit& toolkit) {
  if (result || toolkit.libdevice) return result;
  bool needs_libdevice = std::any_of(result.error().begin(), result.error().end(), [](const diag::Diagnostic& d) {
    return d.code == diag::Code::libdevice_missing;
  });
  if (needs_libdevice) return std::unexpected(toolkit.libdevice.error());
  return result;
}

}  // namespace

codegen::CodegenOptions with_toolkit(codegen::CodegenOptions options, const Toolkit& toolkit) {
  options.libdevice_path = toolkit.libdevice ? *toolkit.libdevice : std::string();
  return options;
}

std::expected<Build, diag::Diagnostics> build(const ir::Module& verified, const codegen::CodegenOptions& options,
                                              const Toolkit& toolkit, bool assemble_cubin) {
  auto cg = with_toolkit(options, toolkit);
  auto compiled = explain_missing_libdevice(codegen::compile(verified, cg), toolkit);
  if (!compiled) return std::unexpected(std::move(compiled.error()));
  Build out;
  out.target = compiled->target;
  out.ptx = std::move(compiled->ptx);
  auto header = read_ptx_header(diag::SourceFile("module.ptx", out.ptx));
  if (!header) return std::unexpected(std::move(header.error()));
  out.ptx_isa_version = header->isa_major * 10 + header->isa_minor;
  out.kernels = std::move(compiled->kernels);
  out.libdevice_path = cg.libdevice_path;
  if (!assemble_cubin) return out;
  auto assembly = assemble(out.ptx, out.target.name(), toolkit);
  if (!assembly) return std::unexpected(std::move(assembly.error()));
  out.cubin = std::move(assembly->cubin);
  out.resources = std::move(assembly->resources);
  out.ptxas_log = std::move(assembly->log);
  return out;
}

std::expected<std::string, diag::Diagnostics> emit_llvm_ir(const ir::Module& verified,
                                                           const codegen::CodegenOptions& options,
                                                           const Toolkit& toolkit) {
  return explain_missing_libdevice(codegen::emit_llvm_ir(verified, with_toolkit(options, toolkit)), toolkit);
}

}  // namespace ptxgate::toolchain
