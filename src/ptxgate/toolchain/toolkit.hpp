// The CUDA Toolkit as ptxgate uses it: one resolver for ptxas and libdevice, in one fallback order.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::toolchain {

/// Paths a caller pins (a command-line option, a test); empty fields are searched for.
struct ToolkitOverrides {
  std::string ptxas;      ///< a ptxas binary
  std::string libdevice;  ///< a libdevice.10.bc
};

/// A CUDA Toolkit root that is searched, and why ("$CUDA_HOME", "toolkit found at build time").
struct CudaRoot {
  std::string path;
  std::string origin;
};

/// The roots searched, in order: $CUDA_HOME when set, then the toolkit found when ptxgate was built.
std::vector<CudaRoot> cuda_roots();

/// The toolkit files one compile uses, each found once by discover(). A compile links
/// exactly `libdevice` and its cache key hashes exactly that file; ptxas is `ptxas`.
struct Toolkit {
  /// The ptxas binary, or PG2005 naming every path tried.
  std::expected<std::string, diag::Diagnostics> ptxas;
  /// libdevice.10.bc, or PG2002 naming every path tried (reported only by a compile that needs it).
  std::expected<std::string, diag::Diagnostics> libdevice;
};

/// Finds ptxas and libdevice in one fallback order, the same for both:
///   1. the override, when given;
///   2. $PTXGATE_PTXAS / $PTXGATE_LIBDEVICE, when set;
///   3. <root>/bin/ptxas and <root>/nvvm/libdevice/libdevice.10.bc in each of cuda_roots(), the
///      first that exists.
/// 1 and 2 are authoritative: a path given there that does not exist is an error, not a reason
/// to look further. ptxas must be an executable file, libdevice a regular file.
Toolkit discover(const ToolkitOverrides& overrides = {});

/// The toolkit's SASS disassembler, in discover()'s order: $PTXGATE_NVDISASM when set, else
/// <root>/bin/nvdisasm in each of cuda_roots(). PG5005 naming every path tried.
[[nodiscard]] std::expected<std::string, diag::Diagnostics> find_nvdisasm();

}  // namespace ptxgate::toolchain
