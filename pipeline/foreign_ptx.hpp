// Kernels of PTX from other compilers (nvcc, NVRTC, Triton) for the offline check: the signature
// from the PTX (toolchain/ptx_entries) and ptxas's resources for the profile's architecture.
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "ptxgate/codegen/kernel_info.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/validation/launch_plan.hpp"

namespace ptxgate::pipeline {

/// Whether `check` reads `path` as a foreign module (.ptx; .cubin and .fatbin are refused
/// with PG5001 by the reader) rather than as .pg source.
bool is_foreign_module_path(std::string_view path);

struct ForeignKernel {
  codegen::KernelInfo info;
  validation::KernelResources resources;
  diag::Location location;   ///< the entry's name in the PTX
};

/// Reads the PTX at `path`, finds `kernel` (PG2006), checks that its `.target` runs on `arch`
/// (PG2001) and assembles it with ptxas for `arch` for its resources (PG2004, PG2005).
[[nodiscard]] std::expected<ForeignKernel, diag::Diagnostics> load_foreign_kernel(const std::string& path,
                                                                                  const std::string& kernel,
                                                                                  const std::string& arch);

}  // namespace ptxgate::pipeline
