// TEMPORARY: replaced by the code generator. describe() is real; compile() is not yet.
#include "codegen/codegen.hpp"

namespace ptxgate::codegen {

const std::vector<std::string>& supported_targets() {
  static const std::vector<std::string> targets = {"sm_70", "sm_72", "sm_75", "sm_80", "sm_86",
                                                   "sm_87", "sm_89", "sm_90", "sm_90a"};
  return targets;
}

std::vector<KernelInfo> describe(const ir::Module& m) {
  std::vector<KernelInfo> out;
  for (const auto& k : m.kernels) {
    KernelInfo info;
    info.name = k.name;
    for (uint32_t i = 0; i < k.params.size(); ++i) {
      const auto& p = k.params[i];
      info.params.push_back({p.name, i, p.is_buffer, p.access, p.type, p.is_buffer ? 8u : ir::byte_size(p.type)});
    }
    info.required_block = k.workgroup;
    info.static_shared_bytes = k.static_shared_bytes;
    info.cooperative = k.cooperative;
    info.uses_grid_sync = k.uses_grid_sync;
    info.hidden_grid_barrier_param = k.uses_grid_sync;
    out.push_back(std::move(info));
  }
  return out;
}

static diag::Diagnostics not_yet() {
  diag::Diagnostics d;
  d.add(diag::Code::internal_error, "code generation is not built yet");
  return d;
}

std::expected<std::string, diag::Diagnostics> emit_llvm_ir(const ir::Module&, const CodegenOptions&) {
  return std::unexpected(not_yet());
}

std::expected<CompiledModule, diag::Diagnostics> compile(const ir::Module&, const CodegenOptions&) {
  return std::unexpected(not_yet());
}

}  // namespace ptxgate::codegen
