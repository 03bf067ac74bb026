// Asynchronous kernel faults at their cause, through a fake driver: launch sequence numbers,
// checked launches naming the faulting launch, and later reports naming the launches in flight.
#include <doctest/doctest.h>

#include "runtime_programs_fixture.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using namespace ptxgate::runtime::testing;

namespace {

RuntimeOptions checked() {
  RuntimeOptions o;
  o.checked_launches = true;
  return o;
}

}  // namespace

TEST_CASE("faults: every launch takes the next sequence number and the log keeps its kernel and geometry") {
  ProgramFixture f;
  auto s = f.stream();
  auto a = f.buffer(), b = f.buffer();
  f.copy_on(s, a, b);
  REQUIRE(f.bump->launch(LaunchConfig::linear(5, 32), {a, 16u}, &s));
  LaunchLog& log = f.rt->context().launch_log();
  CHECK(log.last() == 2);
  auto second = log.find(2);
  REQUIRE(second);
  CHECK(second->kernel == "bump");
  CHECK(second->grid == std::array<unsigned, 3>{5, 1, 1});
  CHECK(second->block == std::array<unsigned, 3>{32, 1, 1});
  CHECK(second->stream == s.handle());
  CHECK(second->describe().starts_with("launch #2 of kernel 'bump' grid=(5,1,1) block=(32,1,1) shared=0 on stream"));
  CHECK(log.in_flight().size() == 2);
}

TEST_CASE("faults: checked launches synchronise after each launch and name the faulting one (PG4050)") {
  ProgramFixture f(checked());
  auto s = f.stream();
  auto a = f.buffer(), b = f.buffer();
  f.copy_on(s, a, b);
  CHECK(fake_state().count("cuStreamSynchronize") == 1);
  fake_state().fail["cuStreamSynchronize"] = CUDA_ERROR_ILLEGAL_ADDRESS;
  auto r = f.bump->launch(LaunchConfig::linear(3, 64), {a, 16u}, &s);
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::kernel_fault);
  const std::string text = diag::render_text(r.error());
  CHECK(text.find("launch #2 of kernel 'bump' grid=(3,1,1) block=(64,1,1)") != std::string::npos);
  CHECK(text.find("faulted") != std::string::npos);
  CHECK(text.find("CUDA_ERROR_ILLEGAL_ADDRESS") != std::string::npos);
  CHECK(text.find("'copy'") == std::string::npos);  // the earlier launch completed: not a suspect
  CHECK(f.rt->context().poisoned());
  auto after = f.copy->launch(f.config, {a, b, 16u}, &s);
  REQUIRE_FALSE(after);
  CHECK(first_code(after.error()) == diag::Code::context_poisoned);
}

TEST_CASE("faults: unchecked, a later synchronisation names the launches in flight (PG4050)") {
  ProgramFixture f;
  auto s = f.stream(), t = f.stream();
  auto a = f.buffer(), b = f.buffer();
  f.copy_on(s, a, b);
  f.bump_on(t, b);
  fake_state().fail["cuCtxSynchronize"] = CUDA_ERROR_ILLEGAL_ADDRESS;
  auto r = f.rt->synchronize();
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::kernel_fault);
  const std::string text = diag::render_text(r.error());
  CHECK(text.find("a kernel faulted while 2 launches were in flight, the last launch #2 of kernel 'bump'") !=
        std::string::npos);
  CHECK(text.find("in flight: launch #1 of kernel 'copy'") != std::string::npos);
  CHECK(text.find("checked_launches") != std::string::npos);
}

TEST_CASE("faults: launches known complete by a synchronisation are no longer suspects") {
  ProgramFixture f;
  auto s = f.stream(), t = f.stream();
  auto a = f.buffer(), b = f.buffer(), c = f.buffer();
  f.copy_on(s, a, b);
  REQUIRE(f.rt->synchronize());   // launch #1 complete
  f.bump_on(t, c);                // #2
  f.bump_on(s, a);                // #3
  REQUIRE(s.synchronize());       // #3 complete (stream s)
  CHECK(f.rt->context().launch_log().in_flight().size() == 1);
  fake_state().fail["cuCtxSynchronize"] = CUDA_ERROR_ILLEGAL_ADDRESS;
  auto r = f.rt->synchronize();
  REQUIRE_FALSE(r);
  const std::string text = diag::render_text(r.error());
  CHECK(text.find("launch #2 of kernel 'bump'") != std::string::npos);
  CHECK(text.find("faulted") != std::string::npos);
  CHECK(text.find("#1") == std::string::npos);
  CHECK(text.find("#3") == std::string::npos);
}

TEST_CASE("faults: a sticky error with no launch in flight stays a driver error (PG4002); others are not faults") {
  ProgramFixture f;
  fake_state().fail["cuCtxSynchronize"] = CUDA_ERROR_INVALID_VALUE;
  auto r = f.rt->synchronize();
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::driver_call_failed);
  fake_state().fail["cuCtxSynchronize"] = CUDA_ERROR_ILLEGAL_ADDRESS;
  auto sticky = f.rt->synchronize();
  REQUIRE_FALSE(sticky);
  CHECK(first_code(sticky.error()) == diag::Code::driver_call_failed);
}

TEST_CASE("faults: a launch refused with an earlier kernel's sticky error names that kernel, not a missing check") {
  ProgramFixture f;
  auto s = f.stream();
  auto a = f.buffer(), b = f.buffer();
  f.copy_on(s, a, b);
  fake_state().fail["cuLaunchKernel"] = CUDA_ERROR_ILLEGAL_ADDRESS;
  auto r = f.bump->launch(f.config, {a, 16u}, &s);
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::kernel_fault);
  const std::string text = diag::render_text(r.error());
  CHECK(text.find("launch #1 of kernel 'copy'") != std::string::npos);
  CHECK(text.find("a check is missing") == std::string::npos);
}

TEST_CASE("faults: a failed device assert() is reported as the launch's assert (PG4050)") {
  ProgramFixture f(checked());
  auto s = f.stream();
  auto a = f.buffer();
  fake_state().fail["cuStreamSynchronize"] = CUDA_ERROR_ASSERT;
  auto r = f.bump->launch(LaunchConfig::linear(2, 32), {a, 16u}, &s);
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::kernel_fault);
  const std::string text = diag::render_text(r.error());
  CHECK(text.find("launch #1 of kernel 'bump' grid=(2,1,1) block=(32,1,1)") != std::string::npos);
  CHECK(text.find("failed a device assert()") != std::string::npos);
  CHECK(text.find("standard error") != std::string::npos);
  CHECK(f.rt->context().poisoned());
}
