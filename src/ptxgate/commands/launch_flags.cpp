// parse_launch_flags: --grid, --block and --shared-bytes of run, check and occupancy.
#include "ptxgate/commands/launch_flags.hpp"

#include <fmt/format.h>

#include "ptxgate/support/numbers.hpp"

namespace ptxgate::commands {

std::expected<LaunchGeometry, diag::Diagnostics> parse_launch_flags(std::string_view grid, std::string_view block,
                                                                    std::string_view shared_bytes) {
  diag::Diagnostics errors;
  auto bad = [&](std::string message, const char* fix) {
    errors.add(diag::Code::invalid_launch_option, std::move(message), {}, fix);
  };
  LaunchGeometry out;
  if (auto shared = support::parse_count(shared_bytes)) out.shared_bytes = *shared;
  else
    bad(fmt::format("invalid --shared-bytes '{}': {}", shared_bytes, shared.error()),
        "write --shared-bytes N (a decimal byte count)");
  if (!block.empty()) {
    if (auto b = support::parse_dims(block)) out.block = *b;
    else bad(fmt::format("invalid --block: {}", b.error()), "write --block X[,Y[,Z]] (decimal counts)");
  }
  if (grid == "max") {
    out.grid_max = true;
  } else if (!grid.empty()) {
    if (auto g = support::parse_dims(grid)) out.grid = *g;
    else bad(fmt::format("invalid --grid: {}", g.error()), "write --grid X[,Y[,Z]] (decimal counts) or --grid max");
  }
  if (errors.has_errors()) return std::unexpected(std::move(errors));
  return out;
}

}  // namespace ptxgate::commands
