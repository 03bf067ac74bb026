// The launch geometry flags of `run`, `check` and `occupancy` (--grid, --block, --shared-bytes):
// one parser, with support's number grammar and one message per bad flag.
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <optional>
#include <string_view>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace ptxgate::commands {

/// The geometry the flags give.
struct LaunchGeometry {
  std::optional<std::array<uint64_t, 3>> grid;   ///< --grid X[,Y[,Z]]; missing axes are 1
  bool grid_max = false;                         ///< --grid max: the largest cooperative grid
  std::optional<std::array<uint64_t, 3>> block;  ///< --block X[,Y[,Z]]
  uint64_t shared_bytes = 0;                     ///< --shared-bytes N: dynamic shared memory per block
};

/// Parses the flags as written (an empty grid or block: not given; shared_bytes must be given).
/// Each bad flag is PG5004 (invalid_launch_option) naming the flag, its value and the form to
/// write, in the order --shared-bytes, --block, --grid.
[[nodiscard]] std::expected<LaunchGeometry, diag::Diagnostics> parse_launch_flags(std::string_view grid,
                                                                                  std::string_view block,
                                                                                  std::string_view shared_bytes);

}  // namespace ptxgate::commands
