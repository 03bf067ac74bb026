// The one number grammar of every count and geometry flag: plain decimal, no sign, no base prefix.
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace ptxgate::support {

/// A count: one or more ASCII decimal digits, no sign, no '0x', no spaces, value <= `max`.
/// The error says what was wrong ("'-1' is not a decimal count", "'18446744073709551616'
/// exceeds the largest allowed value 18446744073709551615").
[[nodiscard]] std::expected<uint64_t, std::string> parse_count(std::string_view text, uint64_t max = UINT64_MAX);

/// "X[,Y[,Z]]": one to three counts separated by commas; missing axes are 1.
[[nodiscard]] std::expected<std::array<uint64_t, 3>, std::string> parse_dims(std::string_view text);

}  // namespace ptxgate::support
