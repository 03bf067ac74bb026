// The GPU tests' comparison helper (tests/gpu/compare.hpp), tested where no GPU is needed.
#include <doctest/doctest.h>

#include "../gpu/compare.hpp"

using ptxgate::gpu_test::mismatches;

TEST_CASE("mismatches: values within the tolerance pass, others count") {
  CHECK(mismatches(std::vector<float>{1.0f, 2.0f}, std::vector<double>{1.0, 2.0}, 0, 0, "same") == 0);
  CHECK(mismatches(std::vector<float>{1.0f, 2.5f}, std::vector<double>{1.0, 2.0}, 0.1, 0, "one off") == 1);
  CHECK(mismatches(std::vector<float>{1.0f, 2.1f}, std::vector<double>{1.0, 2.0}, 0, 0.1, "relative") == 0);
  CHECK(mismatches(std::vector<float>{NAN}, std::vector<double>{1.0}, 1e9, 1e9, "nan") == 1);
}

TEST_CASE("mismatches: a result of another size never passes") {
  // A longer result would pass an element-wise loop over the reference alone.
  CHECK(mismatches(std::vector<float>{1, 2, 3}, std::vector<float>{1, 2}, 0, 0, "longer") == 1);
  // A shorter one would read past its end.
  CHECK(mismatches(std::vector<float>{1}, std::vector<float>{1, 2, 3}, 0, 0, "shorter") == 2);
  CHECK(mismatches(std::vector<float>{}, std::vector<float>{5}, 0, 0, "empty") == 1);
}
