// Host data and scalar values for `--arg NAME=SPEC` (`ptxgate run`). The grammar itself is
// commands/arg_spec (shared with offline `check`); this file materialises a parsed spec.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include "ptxgate/runtime/arg.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"
#include "ptxgate/commands/arg_spec.hpp"
#include "ptxgate/commands/npy.hpp"

namespace ptxgate::commands {

/// Largest .npy or raw argument file read (bytes); larger files are refused before reading.
inline constexpr uint64_t kMaxArgumentFileBytes = uint64_t{1} << 32;

/// Host data for a parsed buffer spec (random, fill, iota, buffer:BYTES as zeros, a .npy or raw
/// file read through support's bounded, type-checked reads). PG5002 for a spec that is not
/// buffer data (null, a scalar), a .npy of another dtype or a raw file of a wrong size; PG5001
/// for a file that cannot be read (missing, a directory, a device, too large); PG5002 when the
/// host memory cannot be allocated.
[[nodiscard]] std::expected<HostArray, diag::Diagnostics> make_host_data(const ArgSpec& spec,
                                                                         std::string_view text, std::string_view param);

/// parse_arg_spec for a buffer parameter of element type `type`, then make_host_data.
[[nodiscard]] std::expected<HostArray, diag::Diagnostics> make_buffer_data(std::string_view spec, ir::Type type,
                                                                           std::string_view param);

/// The Arg of a parsed scalar spec.
[[nodiscard]] runtime::Arg scalar_arg(const ArgSpec& spec);

/// parse_arg_spec for a scalar parameter of `type`, then scalar_arg. PG5002 when it does not
/// parse or fit.
[[nodiscard]] std::expected<runtime::Arg, diag::Diagnostics> parse_scalar(std::string_view spec, ir::Type type,
                                                                 std::string_view param);

}  // namespace ptxgate::commands
