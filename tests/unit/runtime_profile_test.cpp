// Launch profiling through a fake driver: timing events around each launch on its stream, device
// times per launch, the per-kernel summary (count, total, median), event reuse, and nothing when off.
#include <doctest/doctest.h>

#include <deque>

#include "runtime_programs_fixture.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using namespace ptxgate::runtime::testing;

namespace {

/// The device times the fake cuEventElapsedTime answers, in order.
std::deque<float>& elapsed_answers() {
  static std::deque<float> answers;
  return answers;
}

struct ProfiledFixture : ProgramFixture {
  static RuntimeOptions profiled() {
    RuntimeOptions o;
    o.profile_launches = true;
    return o;
  }
  ProfiledFixture() : ProgramFixture(profiled()) {
    elapsed_answers().clear();
    api.cuEventElapsedTime = [](float* ms, CUevent, CUevent) {
      if (elapsed_answers().empty()) return CUDA_ERROR_NOT_READY;
      *ms = elapsed_answers().front();
      elapsed_answers().pop_front();
      return CUDA_SUCCESS;
    };
  }
};

}  // namespace

TEST_CASE("profile: each launch is between two events recorded on its stream") {
  ProfiledFixture f;
  auto s = f.stream();
  auto a = f.buffer(), b = f.buffer();
  f.copy_on(s, a, b);
  HappensBefore hb(fake_state().calls);
  const size_t before = hb.find("cuEventRecord"), launch = hb.find("cuLaunchKernel"), after = hb.find("cuEventRecord", 1);
  REQUIRE(after != HappensBefore::npos);
  CHECK(fake_state().calls[before].stream == s.handle());
  CHECK(fake_state().calls[after].stream == s.handle());
  CHECK(hb.ordered(before, launch));
  CHECK(hb.ordered(launch, after));
}

TEST_CASE("profile: device times per launch and a per-kernel summary with count, total and median") {
  ProfiledFixture f;
  auto s = f.stream();
  auto a = f.buffer(), b = f.buffer();
  f.copy_on(s, a, b);
  f.bump_on(s, a);
  f.copy_on(s, b, a);
  f.bump_on(s, a);
  f.copy_on(s, a, b);
  elapsed_answers() = {1.0f, 4.0f, 3.0f, 6.0f, 2.0f};
  auto launches = f.rt->profiler()->launches();
  REQUIRE(launches);
  REQUIRE(launches->size() == 5);
  CHECK((*launches)[1].kernel == "bump");
  CHECK((*launches)[1].sequence == 2);
  CHECK((*launches)[1].device_ms == 4.0);
  auto summary = f.rt->profiler()->summary();
  REQUIRE(summary);
  REQUIRE(summary->size() == 2);
  const KernelProfile& copy = (*summary)[0];
  CHECK(copy.kernel == "copy");
  CHECK(copy.count == 3);
  CHECK(copy.total_ms == 6.0);
  CHECK(copy.median_ms == 2.0);
  CHECK(copy.min_ms == 1.0);
  CHECK(copy.max_ms == 3.0);
  const KernelProfile& bump = (*summary)[1];
  CHECK(bump.count == 2);
  CHECK(bump.median_ms == 5.0);
  // Each end event was waited for before its time was read.
  CHECK(fake_state().count("cuEventSynchronize") == 5);
}

TEST_CASE("profile: events are reused once their launches were measured; clear forgets the times") {
  ProfiledFixture f;
  auto s = f.stream();
  auto a = f.buffer(), b = f.buffer();
  f.copy_on(s, a, b);
  f.copy_on(s, b, a);
  elapsed_answers() = {1.0f, 1.0f};
  REQUIRE(f.rt->profiler()->launches());
  const int created = fake_state().events_created;
  CHECK(created == 4);
  f.copy_on(s, a, b);
  f.copy_on(s, b, a);
  CHECK(fake_state().events_created == created);
  elapsed_answers() = {1.0f, 1.0f};
  f.rt->profiler()->clear();
  CHECK(f.rt->profiler()->launches()->empty());
}

TEST_CASE("profile: a time the driver cannot give is a diagnostic naming the launch") {
  ProfiledFixture f;
  auto s = f.stream();
  auto a = f.buffer(), b = f.buffer();
  f.copy_on(s, a, b);
  auto r = f.rt->profiler()->launches();  // no answer queued: the fake says NOT_READY
  REQUIRE_FALSE(r);
  CHECK(diag::render_text(r.error()).find("launch #1 of kernel 'copy'") != std::string::npos);
}

TEST_CASE("profile: off by default: no profiler, no events around launches") {
  ProgramFixture f;
  auto s = f.stream();
  auto a = f.buffer(), b = f.buffer();
  f.copy_on(s, a, b);
  CHECK(f.rt->profiler() == nullptr);
  CHECK(fake_state().count("cuEventRecord") == 0);
}
