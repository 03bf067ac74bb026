// Shared libraries of the CUDA Toolkit (NVRTC, nvJitLink): found in discover()'s roots, opened at run time.
#pragma once

#include <expected>
#include <string>
#include <string_view>

namespace ptxgate::toolchain {

/// The path of the toolkit's shared library `lib<name>.so` (e.g. "nvrtc", "nvJitLink"), for
/// dlopen: `$PTXGATE_LIB<NAME>` (upper case) when set, else `lib64/`, `lib/` and
/// `targets/<arch>-linux/lib/` of each of cuda_roots() in order, the unversioned name first,
/// then the newest `lib<name>.so.<N>`. Nothing links these libraries: a machine without them
/// still builds and compiles. The error names every directory searched.
[[nodiscard]] std::expected<std::string, std::string> find_toolkit_library(std::string_view name);

}  // namespace ptxgate::toolchain
