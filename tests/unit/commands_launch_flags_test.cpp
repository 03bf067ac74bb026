// The one parser of --grid, --block and --shared-bytes (commands/launch_flags) that run, check and occupancy share.
#include <doctest/doctest.h>

#include "ptxgate/commands/launch_flags.hpp"

using namespace ptxgate;

TEST_CASE("launch flags: axes default to 1, an empty flag is not given, max is the largest cooperative grid") {
  auto g = commands::parse_launch_flags("2,3", "128", "4096");
  REQUIRE(g);
  CHECK(g->grid == std::array<uint64_t, 3>{2, 3, 1});
  CHECK(g->block == std::array<uint64_t, 3>{128, 1, 1});
  CHECK(g->shared_bytes == 4096);
  CHECK_FALSE(g->grid_max);

  auto none = commands::parse_launch_flags("", "", "0");
  REQUIRE(none);
  CHECK_FALSE(none->grid);
  CHECK_FALSE(none->block);
  CHECK_FALSE(none->grid_max);

  auto max = commands::parse_launch_flags("max", "8,8,4", "0");
  REQUIRE(max);
  CHECK(max->grid_max);
  CHECK_FALSE(max->grid);
  CHECK(max->block == std::array<uint64_t, 3>{8, 8, 4});
}

TEST_CASE("launch flags: every bad flag is one PG5004 naming it, in the order shared bytes, block, grid") {
  auto bad = commands::parse_launch_flags("1,2,3,4", "0x20", "-1");
  REQUIRE_FALSE(bad);
  const auto& items = bad.error().items();
  REQUIRE(items.size() == 3);
  for (const auto& d : items) CHECK(d.code == diag::Code::invalid_launch_option);
  CHECK(items[0].message.starts_with("invalid --shared-bytes '-1'"));
  CHECK(items[0].fix == "write --shared-bytes N (a decimal byte count)");
  CHECK(items[1].message.starts_with("invalid --block"));
  CHECK(items[2].message.starts_with("invalid --grid"));
  CHECK(items[2].fix.find("--grid max") != std::string::npos);

  // The shared-bytes flag must be given (the commands default it to "0"); one bad flag is one error.
  auto empty_shared = commands::parse_launch_flags("1", "", "");
  REQUIRE_FALSE(empty_shared);
  CHECK(empty_shared.error().items().size() == 1);
}
