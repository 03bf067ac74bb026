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

namespace {

/// Splits "a,b,c" and parses each item with `item`; at most `max_items` items.
template <class T, class F>
std::expected<std::vector<T>, std::string> parse_list(std::string_view text, size_t max_items, std::string_view what,
                                                      F item) {
  std::vector<T> out;
  std::string_view rest = text;
  while (true) {
    if (out.size() == max_items) return std::unexpected(fmt::format("'{}' has more than {} {}", text, max_items, what));
    auto comma = rest.find(',');
    auto value = item(rest.substr(0, comma));
    if (!value) return std::unexpected(fmt::format("in '{}': {}", text, value.error()));
    out.push_back(*value);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

std::expected<std::array<uint64_t, 3>, std::string> parse_dims(std::string_view text) {
  auto list = parse_list<uint64_t>(text, 3, "dimensions", [](std::string_view t) { return parse_count(t); });
  if (!list) return std::unexpected(list.error());
  std::array<uint64_t, 3> out{1, 1, 1};
  for (size_t i = 0; i < list->size(); ++i) out[i] = (*list)[i];
  return out;
}

std::expected<std::vector<uint64_t>, std::string> parse_count_list(std::string_view text, size_t max_items,
                                                                   uint64_t max) {
  return parse_list<uint64_t>(text, max_items, "values", [max](std::string_view t) { return parse_count(t, max); });
}

std::expected<int64_t, std::string> parse_integer(std::string_view text, int64_t min, int64_t max) {
  const bool negative = !text.empty() && text.front() == '-';
  std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty() || digits.front() < '0' || digits.front() > '9')
    return std::unexpected(fmt::format("'{}' is not a decimal integer", text));
  auto magnitude = parse_count(digits);
  const auto out_of_range = [&] {
    return std::unexpected(fmt::format("'{}' is outside the allowed range {}..{}", text, min, max));
  };
  if (!magnitude) {
    if (magnitude.error().find("exceeds") != std::string::npos) return out_of_range();
    return std::unexpected(fmt::format("'{}' is not a decimal integer", text));
  }
  // |INT64_MIN| = INT64_MAX + 1.
  if (*magnitude > static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0)) return out_of_range();
  const int64_t value = negative ? static_cast<int64_t>(0 - *magnitude) : static_cast<int64_t>(*magnitude);
  if (value < min || value > max) return out_of_range();
  return value;
}

std::expected<std::vector<int64_t>, std::string> parse_integer_list(std::string_view text, size_t max_items,
                                                                    int64_t min, int64_t max) {
  return parse_list<int64_t>(text, max_items, "values",
                             [min, max](std::string_view t) { return parse_integer(t, min, max); });
}

}  // namespace ptxgate::support
