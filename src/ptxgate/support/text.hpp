// Small text helpers shared by the readers of PTX, ptxas reports, signatures and ids.
#pragma once

#include <string_view>

namespace ptxgate::support {

/// `text` without leading and trailing ASCII whitespace (space, tab, newline, CR, FF, VT).
[[nodiscard]] std::string_view trim(std::string_view text);

}  // namespace ptxgate::support
