// SASS of a cubin through the toolkit's nvdisasm, run by the one process runner.
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::toolchain {

/// The SASS listing of `cubin` (`nvdisasm -c` on a private temporary copy). nvdisasm is found as
/// ptxas is (toolchain::find_nvdisasm). PG5005 when it is missing, cannot be started or fails
/// (with the start of its output); `arch` names the cubin's target in messages.
[[nodiscard]] std::expected<std::string, diag::Diagnostics> disassemble(std::string_view cubin, std::string_view arch);

}  // namespace ptxgate::toolchain
