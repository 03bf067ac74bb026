// edit_distance / closest_match: the one "did you mean" of the CLI.
#include "ptxgate/support/suggest.hpp"

#include <algorithm>
#include <vector>

namespace ptxgate::support {

size_t edit_distance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::optional<std::string> closest_match(std::string_view word, std::span<const std::string> candidates) {
  // Names are short; a long word is not a typo of any of them (and would cost n*m).
  if (word.empty() || word.size() > 64) return std::nullopt;
  const size_t limit = std::max<size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  bool tie = false;
  for (const auto& c : candidates) {
    if (c == word) return std::nullopt;
    if (c.size() > 64) continue;
    const size_t dist = edit_distance(word, c);
    if (dist < best_distance) {
      best = c;
      best_distance = dist;
      tie = false;
    } else if (dist == best_distance) {
      tie = true;
    }
  }
  if (!best || tie) return std::nullopt;
  return best;
}

}  // namespace ptxgate::support
