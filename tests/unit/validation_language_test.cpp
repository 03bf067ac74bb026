// check_launch against what a kernel's language features need: a dynamic shared array (PG1319),
// its block granule (whole warps PG1320, whole warpgroups PG1358) and a cluster shape (PG3107).
#include "validation_test_support.hpp"

using namespace validation_test;
using diag::Code;

TEST_CASE("launch: a kernel with a dynamic shared array needs dynamic shared bytes, whole elements") {
  auto caps = caps_of("h100-sxm");
  auto k = kernel();
  k.dynamic_shared_element_bytes = 8;
  auto r = resources(16);
  auto none = check_launch(k, r, plan({10, 1, 1}, {128, 1, 1}, 0), caps);
  CHECK_FALSE(none.launchable);
  CHECK(count(none, Code::invalid_dynamic_shared) == 1);
  CHECK(none.diagnostics.items()[0].message.find("0 bytes") != std::string::npos);
  auto partial = check_launch(k, r, plan({10, 1, 1}, {128, 1, 1}, 1001), caps);
  CHECK_FALSE(partial.launchable);
  CHECK(count(partial, Code::invalid_dynamic_shared) == 1);
  CHECK(partial.diagnostics.items()[0].fix.find("1008") != std::string::npos);
  CHECK(only_warnings(check_launch(k, r, plan({10, 1, 1}, {128, 1, 1}, 1024), caps)));
  // Too much is still the shared-memory limit's business.
  auto over = check_launch(k, r, plan({10, 1, 1}, {128, 1, 1}, 8 * caps.shared_per_block_optin), caps);
  CHECK(count(over, Code::shared_memory_exceeded) == 1);
  CHECK(count(over, Code::invalid_dynamic_shared) == 0);
  // A kernel without one may still be given dynamic shared memory.
  CHECK(only_warnings(check_launch(kernel(), r, plan({10, 1, 1}, {128, 1, 1}, 1001), caps)));
}

TEST_CASE("launch: warp operations need a block of whole warps") {
  auto caps = caps_of("h100-sxm");
  auto k = kernel();
  k.block_granule = 32;
  auto r = resources(16);
  CHECK(only_warnings(check_launch(k, r, plan({10, 1, 1}, {128, 1, 1}), caps)));
  CHECK(only_warnings(check_launch(k, r, plan({10, 1, 1}, {16, 2, 1}), caps)));
  auto odd = check_launch(k, r, plan({10, 1, 1}, {100, 1, 1}), caps);
  CHECK_FALSE(odd.launchable);
  CHECK(count(odd, Code::partial_warp_block) == 1);
  auto odd_2d = check_launch(k, r, plan({10, 1, 1}, {10, 3, 1}), caps);
  CHECK(count(odd_2d, Code::partial_warp_block) == 1);
  // Without warp operations the same block is only the usual warning.
  auto plain = check_launch(kernel(), r, plan({10, 1, 1}, {100, 1, 1}), caps);
  CHECK(plain.launchable);
  CHECK(count(plain, Code::partial_warp_block) == 0);
}

TEST_CASE("launch: warpgroup operations need a block of whole warpgroups, with or without @workgroup") {
  auto caps = caps_of("h100-sxm");
  auto k = kernel();
  k.block_granule = 128;
  auto r = resources(16);
  CHECK(only_warnings(check_launch(k, r, plan({132, 1, 1}, {256, 1, 1}, 50000), caps)));
  CHECK(only_warnings(check_launch(k, r, plan({132, 1, 1}, {32, 4, 1}, 50000), caps)));
  // Issue 25: the one_wgmma kernel with --block 96 was launchable.
  auto three_warps = check_launch(k, r, plan({132, 1, 1}, {96, 1, 1}, 50000), caps);
  CHECK_FALSE(three_warps.launchable);
  REQUIRE(count(three_warps, Code::partial_warpgroup_block) == 1);
  const auto& d = *std::find_if(three_warps.diagnostics.begin(), three_warps.diagnostics.end(),
                                [](const auto& x) { return x.code == Code::partial_warpgroup_block; });
  // The message names the block size, the granule and why; the fix a block that keeps it.
  CHECK(d.message.find("96 threads") != std::string::npos);
  CHECK(d.message.find("128") != std::string::npos);
  CHECK(d.message.find("wgmma") != std::string::npos);
  CHECK(d.fix.find("--block 128") != std::string::npos);
  // A whole number of warps that is not whole warpgroups (and the default block of 256 passes).
  CHECK(count(check_launch(k, r, plan({132, 1, 1}, {64, 3, 1}, 50000), caps), Code::partial_warpgroup_block) == 1);
  CHECK(only_warnings(check_launch(k, r, plan({132, 1, 1}, {0, 0, 0}, 50000), caps)));
  // A @workgroup of whole warpgroups (the verifier's rule) is launched at that size.
  k.required_block = {128, 1, 1};
  CHECK(only_warnings(check_launch(k, r, plan({132, 1, 1}, {0, 0, 0}, 50000), caps)));
}

TEST_CASE("launch: a kernel with a cluster shape runs a grid of whole clusters") {
  auto caps = caps_of("h100-sxm");
  auto k = kernel();
  k.cluster_dims = {4, 2, 1};
  auto r = resources(16);
  CHECK(only_warnings(check_launch(k, r, plan({132, 2, 1}, {128, 1, 1}), caps)));
  auto odd = check_launch(k, r, plan({131, 3, 1}, {128, 1, 1}), caps);
  CHECK_FALSE(odd.launchable);
  REQUIRE(count(odd, Code::cluster_shape_mismatch) == 1);
  const auto& d = odd.diagnostics.items().front();
  CHECK(d.message.find("grid.x = 131 is not a multiple of 4, grid.y = 3 is not a multiple of 2") != std::string::npos);
  CHECK(d.fix.find("--grid 132,4,1") != std::string::npos);
  // A cluster chosen at launch: ptxgate's launches give none, so none is accepted.
  auto chosen = kernel();
  chosen.explicit_cluster = true;
  CHECK(count(check_launch(chosen, r, plan({132, 1, 1}, {128, 1, 1}), caps), Code::cluster_shape_mismatch) == 1);
}
