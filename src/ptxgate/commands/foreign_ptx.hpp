// Kernels of PTX or cubins from other compilers (nvcc, NVRTC, Triton) for the offline check: the
// signature from the PTX (toolchain/ptx_entries) or the cubin (toolchain/cubin_entries), and the
// resources from ptxas for the profile's architecture or from the cubin itself.
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "ptxgate/contract/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/contract/launch_plan.hpp"

namespace ptxgate::commands {

/// Whether `check` reads `path` as a foreign module (.ptx, .cubin; a .fatbin is refused with
/// PG5001 by the reader) rather than as .pg source.
bool is_foreign_module_path(std::string_view path);

struct ForeignKernel {
  contract::KernelInfo info;
  contract::KernelResources resources;
  diag::Location location;   ///< the entry's name in the PTX
};

/// Reads the PTX or cubin at `path`, finds `kernel` (PG2006), restates its parameter types
/// with `signature` when one is given (toolchain::apply_signature), and checks that it runs on
/// `arch` (PG2001). PTX is assembled with ptxas for `arch` for its resources (PG2004, PG2005);
/// a cubin's resources are its own records.
[[nodiscard]] std::expected<ForeignKernel, diag::Diagnostics> load_foreign_kernel(const std::string& path,
                                                                                  const std::string& kernel,
                                                                                  const std::string& arch,
                                                                                  std::string_view signature = {});

}  // namespace ptxgate::commands
