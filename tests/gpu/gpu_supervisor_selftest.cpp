// Cases that exercise the supervisor itself (gpu_supervisor.cpp): one passes, one does not apply, one kills
// its own process, one runs after it. Skipped by default (doctest::skip); tests/gpu/supervisor_selftest.sh
// runs them with --no-skip over the stand-in driver and checks each result and the exit status.
#include <cstdlib>

#include "gpu_support.hpp"

namespace ptxgate::gpu_test {

TEST_CASE("supervisor self-test: a case that passes" * doctest::skip()) { CHECK(gpu_runtime().caps().sm_count > 0); }

TEST_CASE("supervisor self-test: a case that does not apply" * doctest::skip()) {
  skip_case("this machine lacks what the case needs (on purpose)");
}

TEST_CASE("supervisor self-test: a case that kills its process, as a fault would" * doctest::skip()) { std::abort(); }

TEST_CASE("supervisor self-test: a case after that one, with its own result" * doctest::skip()) {
  CHECK(gpu_runtime().caps().sm_count > 0);
}

}  // namespace ptxgate::gpu_test
