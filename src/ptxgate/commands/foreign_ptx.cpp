// load_foreign_kernel: a kernel of foreign PTX or a cubin, described for check_launch.
#include "ptxgate/commands/foreign_ptx.hpp"

#include <fmt/format.h>

#include "ptxgate/ir/frontend.hpp"
#include "ptxgate/toolchain/cubin_entries.hpp"
#include "ptxgate/toolchain/ptxas.hpp"
#include "ptxgate/toolchain/toolkit.hpp"

namespace ptxgate::commands {

bool is_foreign_module_path(std::string_view path) {
  return path.ends_with(".ptx") || path.ends_with(".cubin") || path.ends_with(".fatbin");
}

std::expected<ForeignKernel, diag::Diagnostics> load_foreign_kernel(const std::string& path, const std::string& kernel,
                                                                    const std::string& arch, std::string_view signature) {
  auto source = ir::read_source(path);
  if (!source) return std::unexpected(std::move(source.error()));
  auto chosen = toolchain::select_foreign_entry(*source, kernel, arch, signature);
  if (!chosen) return std::unexpected(std::move(chosen.error()));
  ForeignKernel out;
  out.info = chosen->entry.info;
  out.location = chosen->entry.location;
  if (chosen->cubin) {  // a cubin carries its own resources: no ptxas needed
    out.resources = chosen->entry.resources.value_or(contract::KernelResources{});
    return out;
  }
  // Architecture-specific PTX (sm_90a) assembles only for its own target, which runs on `arch`.
  const auto target = ir::Target::parse(chosen->target);
  const bool specific = target && target->specific();
  // Only the kernel asked for: ptxas takes about quadratic time in a module's kernels.
  auto assembled = toolchain::assemble(source->text(), specific ? chosen->target : arch, toolchain::discover(),
                                       &*source, kernel);
  if (!assembled) return std::unexpected(std::move(assembled.error()));
  auto it = assembled->resources.find(kernel);
  if (it == assembled->resources.end()) {
    diag::Diagnostics d;
    d.add(diag::Code::resource_query_failed, fmt::format("ptxas -arch={} reported no resources for kernel '{}'", arch, kernel),
          out.location, "check that ptxas (CUDA_HOME or PTXGATE_PTXAS) is the CUDA Toolkit's and supports the target");
    return std::unexpected(std::move(d));
  }
  out.resources = it->second;
  out.info.static_shared_bytes = out.resources.static_shared_bytes;  // ptxas counts module-scope arrays too
  return out;
}

}  // namespace ptxgate::commands
