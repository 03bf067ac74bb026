// check_launch against what a kernel's language features need: a dynamic shared array (PG1319)
// and warp operations (PG1320).
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
  k.uses_warp_operations = true;
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
