// `--arg NAME=SPEC` for `ptxgate run`: buffer data (random/fill/iota/file) and scalar literals.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include "ptxgate/backend/arg.hpp"
#include "ptxgate/backend/npy.hpp"
#include "ptxgate/diagnostics/diagnostic.hpp"
#include "ptxgate/ir/ast.hpp"

namespace ptxgate::backend {

/// "NAME=SPEC" split at the first '='; PG5002 when there is none or NAME is empty.
[[nodiscard]] std::expected<std::pair<std::string, std::string>, diag::Diagnostics> split_assignment(std::string_view text,
                                                                                        std::string_view option);

/// Host data for a buffer parameter of element type `type` from SPEC:
///   random:COUNT[:SEED]  uniform in [-1, 1) for floats, [-1000, 1000] for signed and
///                        [0, 1000] for unsigned integers (seed 1 by default)
///   fill:COUNT:VALUE     COUNT copies of VALUE (parsed as `type`)
///   iota:COUNT           0, 1, 2, ...
///   PATH.npy             a .npy file whose dtype must equal `type`
///   PATH                 raw little-endian elements (size a multiple of the element size)
/// PG5002 with the offending spec and what was expected; PG5001 for an unreadable file.
[[nodiscard]] std::expected<HostArray, diag::Diagnostics> make_buffer_data(std::string_view spec, ir::Type type,
                                                             std::string_view param);

/// A scalar literal parsed as `type` (decimal or 0x hex integers, floats with an
/// optional f suffix, true/false for bool). PG5002 when it does not parse or fit.
[[nodiscard]] std::expected<Arg, diag::Diagnostics> parse_scalar(std::string_view spec, ir::Type type, std::string_view param);

}  // namespace ptxgate::backend
