// Runtime::reset over the fake driver: after a sticky fault, a fresh context of the device; every object of
// the old context (kernel, buffer, stream, event, graph, pool, and those of another runtime of the device)
// reports PG4010 and reaches the driver neither when used nor when released; new objects work.
#include <doctest/doctest.h>

#include "runtime_programs_fixture.hpp"
#include "ptxgate/runtime/graph.hpp"
#include "ptxgate/runtime/stream_ops.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using namespace ptxgate::runtime::testing;

namespace {

/// Poisons the fake context as a faulting kernel does: every synchronisation answers an illegal address
/// (the fake driver clears that when the primary context is reset).
void sticky_fault() {
  fake_state().fail["cuCtxSynchronize"] = CUDA_ERROR_ILLEGAL_ADDRESS;
  fake_state().fail["cuStreamSynchronize"] = CUDA_ERROR_ILLEGAL_ADDRESS;
}

/// PG4010 naming the reset and what the old context had seen (`after_fault`: the sticky fault).
template <class T>
void check_reset_refusal(const std::expected<T, diag::Diagnostics>& r, std::string_view what, bool after_fault = true) {
  CAPTURE(what);
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::context_reset);
  const std::string text = diag::render_text(r.error(), false);
  CHECK(text.find("Runtime::reset retired") != std::string::npos);
  CHECK(text.find(after_fault ? "poisoned by CUDA_ERROR_ILLEGAL_ADDRESS" : "not poisoned") != std::string::npos);
}

}  // namespace

TEST_CASE("reset: after a fault, old objects report PG4010 without reaching the driver; new ones work") {
  ProgramFixture f;
  int frees = 0, unloads = 0, destroyed = 0;
  size_t stream_destroys = 0;
  {
    auto s = f.stream();
    auto a = f.buffer(), b = f.buffer();
    auto event = Event::create(f.rt->shared_context());
    REQUIRE(event);
    auto graph = Graph::create(f.rt->shared_context());
    REQUIRE(graph);
    REQUIRE(graph->launch(*f.bump, f.config, {a, 16u}));
    auto exec = graph->instantiate();
    REQUIRE(exec);
    f.copy_on(s, a, b);

    sticky_fault();
    auto faulted = f.rt->synchronize();
    REQUIRE_FALSE(faulted);
    CHECK(first_code(faulted.error()) == diag::Code::kernel_fault);
    CHECK(diag::render_text(faulted.error(), false).find("Runtime::reset()") != std::string::npos);
    auto poisoned = f.bump->launch(f.config, {a, 16u}, &s);
    REQUIRE_FALSE(poisoned);
    CHECK(first_code(poisoned.error()) == diag::Code::context_poisoned);

    const int retains = fake_state().primary_retains, releases = fake_state().primary_releases;
    REQUIRE(f.rt->reset());
    CHECK(fake_state().primary_resets == 1);
    // The old context's retain given back; a probe retain (does the driver give a context again?) and the
    // new context's.
    CHECK(fake_state().primary_releases == releases + 2);
    CHECK(fake_state().primary_retains == retains + 2);
    CHECK_FALSE(f.rt->context().poisoned());

    // Every old object is refused before the driver.
    const size_t calls = fake_state().calls.size();
    const int launches = fake_state().launches;
    const std::vector<float> host(4, 1.0f);
    check_reset_refusal(f.bump->launch(f.config, {a, 16u}, &s), "old kernel");
    check_reset_refusal(a.upload(std::as_bytes(std::span(host))), "old buffer upload");
    check_reset_refusal(s.synchronize(), "old stream");
    check_reset_refusal(event->record(&s), "old event");
    check_reset_refusal(exec->launch(s), "old graph");
    CHECK(fake_state().launches == launches);
    CHECK(fake_state().calls.size() == calls);

    // New objects work, and an old object given to one is PG4010, not a foreign-context PG4008.
    auto bump = f.rt->compile(kProgramKernels, "bump", "programs.pg");
    REQUIRE(bump);
    auto fresh_stream = f.rt->create_stream();
    REQUIRE(fresh_stream);
    auto fresh = f.rt->allocate(1024);
    REQUIRE(fresh);
    REQUIRE((*bump)->launch(f.config, {*fresh, 16u}, &*fresh_stream));
    CHECK(fake_state().launches == launches + 1);
    REQUIRE(f.rt->synchronize());
    check_reset_refusal((*bump)->launch(f.config, {a, 16u}, &*fresh_stream), "old buffer, new kernel");
    check_reset_refusal((*bump)->launch(f.config, {*fresh, 16u}, &s), "old stream, new kernel");
    check_reset_refusal(f.bump->launch(f.config, {*fresh, 16u}, &*fresh_stream), "old kernel, new buffer and stream");

    frees = fake_state().frees;
    unloads = fake_state().module_unloads;
    destroyed = fake_state().events_destroyed;
    stream_destroys = fake_state().count("cuStreamDestroy");
    f.copy.reset();
    f.bump.reset();
    // The old stream, buffers, event, graph and its executable go at the end of this scope; the new
    // objects are released after that, through the driver.
    fresh->reset();
    fresh_stream->reset();
    bump->reset();
    frees += 1;           // the new buffer
    stream_destroys += 1;  // the new stream
  }
  // Releasing the old objects freed nothing through the driver: their memory and handles went with the
  // old context, and the new context may hand out the same addresses.
  CHECK(fake_state().frees == frees);
  CHECK(fake_state().events_destroyed == destroyed);
  CHECK(fake_state().count("cuStreamDestroy") == stream_destroys);
  CHECK(fake_state().module_unloads == unloads);  // the new module stays in the runtime's loaded tier
}

TEST_CASE("reset: other runtimes of the device are retired with it and do not reset the device again") {
  ProgramFixture f;
  auto ctx2 = Context::open(0, &f.api);
  REQUIRE(ctx2);
  RuntimeOptions options;
  options.cache.use_disk = false;
  Runtime other(*ctx2, options);
  auto other_buffer = other.allocate(64);
  REQUIRE(other_buffer);
  REQUIRE(f.rt->reset());
  CHECK(fake_state().primary_resets == 1);
  check_reset_refusal(other_buffer->fill_bytes(0), "another runtime's buffer", false);
  // The other runtime's own reset only opens a fresh context: the device was reset already.
  REQUIRE(other.reset());
  CHECK(fake_state().primary_resets == 1);
  auto again = other.allocate(64);
  REQUIRE(again);
  REQUIRE(again->fill_bytes(7));
}

TEST_CASE("reset: a device that cannot be reset is PG4002 saying to start a new process") {
  ProgramFixture f;
  fake_state().fail["cuDevicePrimaryCtxReset"] = CUDA_ERROR_INVALID_VALUE;
  auto r = f.rt->reset();
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::driver_call_failed);
  const std::string text = diag::render_text(r.error(), false);
  CHECK(text.find("cuDevicePrimaryCtxReset") != std::string::npos);
  CHECK(text.find("start a new process") != std::string::npos);
  CHECK_FALSE(f.rt->context().retired());  // nothing was retired: the runtime is as it was
  auto b = f.buffer();
  CHECK(b.fill_bytes(1));
}

TEST_CASE("reset: where the driver keeps the fault for the process, reset is PG4011 and nothing is reused") {
  ProgramFixture f;
  auto a = f.buffer();
  sticky_fault();
  fake_state().fault_outlives_reset = true;  // what an H100 with driver 580 does (docs/runtime.md)
  REQUIRE_FALSE(f.rt->synchronize());
  auto r = f.rt->reset();
  REQUIRE_FALSE(r);
  CHECK(first_code(r.error()) == diag::Code::context_unrecoverable);
  const std::string text = diag::render_text(r.error(), false);
  CHECK(text.find("cuDevicePrimaryCtxRetain failed after cuDevicePrimaryCtxReset with CUDA_ERROR_ILLEGAL_ADDRESS") !=
        std::string::npos);
  CHECK(text.find("start a new process") != std::string::npos);
  CHECK(fake_state().primary_resets == 1);
  // The old objects and the runtime's own context stay retired: refused, never passed to the driver.
  const int launches = fake_state().launches;
  check_reset_refusal(f.bump->launch(f.config, {a, 16u}), "old kernel");
  check_reset_refusal(f.rt->allocate(64), "the runtime after a reset that failed");
  CHECK(fake_state().launches == launches);
  // Asking again gives the same answer (the device is not reset twice).
  auto again = f.rt->reset();
  REQUIRE_FALSE(again);
  CHECK(first_code(again.error()) == diag::Code::context_unrecoverable);
  CHECK(fake_state().primary_resets == 1);
}
