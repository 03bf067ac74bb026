// parse_count / parse_dims: the number grammar shared by the CLI, the library and the argument specs.
#include "ptxgate/support/numbers.hpp"

#include <fmt/format.h>

namespace ptxgate::support {

std::expected<uint64_t, std::string> parse_count(std::string_view text, uint64_t max) {
  if (text.empty()) return std::unexpected(std::string("an empty value is not a decimal count"));
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::unexpected(fmt::format("'{}' is not a decimal count (digits 0-9 only)", text));
    if (__builtin_mul_overflow(value, uint64_t{10}, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(c - '0'), &value))
      return std::unexpected(fmt::format("'{}' exceeds the largest allowed value {}", text, max));
  }
  if (value > max) return std::unexpected(fmt::format("'{}' exceeds the largest allowed value {}", text, max));
  return value;
}

std::expected<std::array<uint64_t, 3>, std::string> parse_dims(std::string_view text) {
  std::array<uint64_t, 3> out{1, 1, 1};
  size_t axis = 0;
  std::string_view rest = text;
  while (true) {
    if (axis == 3) return std::unexpected(fmt::format("'{}' has more than three dimensions", text));
    auto comma = rest.find(',');
    auto value = parse_count(rest.substr(0, comma));
    if (!value) return std::unexpected(fmt::format("in '{}': {}", text, value.error()));
    out[axis++] = *value;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace ptxgate::support
