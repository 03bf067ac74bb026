// "Did you mean": the closest of a set of names to a misspelt one.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ptxgate::support {

/// Optimal-string-alignment distance (insertions, deletions, substitutions, adjacent swaps).
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate nearest to `word` when it is close enough to be a likely typo: distance at most
/// max(1, word length / 3), and unique at that distance (ties give nothing). Exact matches give nothing.
std::optional<std::string> closest_match(std::string_view word, std::span<const std::string> candidates);

}  // namespace ptxgate::support
