// Unit tests for the CLI's "did you mean": edit distance and the closest-match rule.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ptxgate/support/suggest.hpp"

using namespace ptxgate::support;

TEST_CASE("edit_distance counts insertions, deletions, substitutions and adjacent swaps") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("check", "check") == 0);
  CHECK(edit_distance("chek", "check") == 1);
  CHECK(edit_distance("chekc", "check") == 1);  // swap
  CHECK(edit_distance("--grd", "--grid") == 1);
  CHECK(edit_distance("emit", "run") == 4);
  CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("closest_match suggests a unique near name, nothing for far, exact or tied words") {
  const std::vector<std::string> commands{"emit", "check", "run", "devices", "cache", "tensormap", "help"};
  CHECK(closest_match("chek", commands) == "check");
  CHECK(closest_match("devies", commands) == "devices");
  CHECK(closest_match("tensormaps", commands) == "tensormap");
  CHECK_FALSE(closest_match("check", commands).has_value());
  CHECK_FALSE(closest_match("compile", commands).has_value());
  CHECK_FALSE(closest_match("", commands).has_value());
  CHECK_FALSE(closest_match(std::string(100, 'x'), commands).has_value());
  const std::vector<std::string> tied{"--grid", "--grit"};
  CHECK_FALSE(closest_match("--gri", tied).has_value());
}
