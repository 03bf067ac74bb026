// The one number grammar of every count and geometry flag: plain decimal, no sign, no base prefix
// (signed integers add a leading '-'), and comma-separated lists of them.
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace ptxgate::support {

/// A count: one or more ASCII decimal digits, no sign, no '0x', no spaces, value <= `max`.
/// The error says what was wrong ("'-1' is not a decimal count", "'18446744073709551616'
/// exceeds the largest allowed value 18446744073709551615").
[[nodiscard]] std::expected<uint64_t, std::string> parse_count(std::string_view text, uint64_t max = UINT64_MAX);

/// "X[,Y[,Z]]": one to three counts separated by commas; missing axes are 1.
[[nodiscard]] std::expected<std::array<uint64_t, 3>, std::string> parse_dims(std::string_view text);

/// "A[,B...]": one to `max_items` counts separated by commas, each <= `max`.
[[nodiscard]] std::expected<std::vector<uint64_t>, std::string> parse_count_list(std::string_view text, size_t max_items,
                                                                                 uint64_t max = UINT64_MAX);

/// A signed integer: an optional '-' then decimal digits (no '+', no base prefix), within [min, max].
[[nodiscard]] std::expected<int64_t, std::string> parse_integer(std::string_view text, int64_t min, int64_t max);

/// "A[,B...]": one to `max_items` signed integers separated by commas, each within [min, max].
[[nodiscard]] std::expected<std::vector<int64_t>, std::string> parse_integer_list(std::string_view text,
                                                                                  size_t max_items, int64_t min,
                                                                                  int64_t max);

}  // namespace ptxgate::support
