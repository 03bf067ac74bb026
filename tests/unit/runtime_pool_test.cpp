// Stream-ordered memory through a fake driver: allocations on streams from the runtime's pool,
// usage and trim, the limit and the options checked before the driver, the allocation mode, and
// frees ordered after the work of every stream that used the buffer.
#include <doctest/doctest.h>

#include "runtime_programs_fixture.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using namespace ptxgate::runtime::testing;

namespace {

RuntimeOptions pooled(uint64_t limit = 0) {
  RuntimeOptions o;
  o.allocation = AllocationMode::stream_ordered;
  o.pool.limit_bytes = limit;
  return o;
}

}  // namespace

TEST_CASE("pool: an allocation on a stream is cuMemAllocFromPoolAsync there, its free cuMemFreeAsync") {
  ProgramFixture f(pooled());
  auto s = f.stream();
  auto b = f.rt->allocate(4096, s);
  REQUIRE(b);
  CHECK(b->kind() == MemoryKind::stream_ordered);
  CHECK(b->size_bytes() == 4096);
  const auto& alloc = fake_state().calls[call_on("cuMemAllocFromPoolAsync", b->pointer())];
  CHECK(alloc.stream == s.handle());
  CHECK(alloc.bytes == 4096);
  CHECK(fake_programs().pools_created == 1);
  // The pool keeps its memory by default (release threshold: everything).
  CHECK(fake_programs().pool_attributes[CU_MEMPOOL_ATTR_RELEASE_THRESHOLD] == UINT64_MAX);
  const CUdeviceptr p = b->pointer();
  b->reset();
  CHECK(call_on("cuMemFreeAsync", p) != HappensBefore::npos);
  CHECK(fake_state().count("cuMemAlloc") == 0);
}

TEST_CASE("pool: the allocation mode picks cuMemAlloc or the pool for Runtime::allocate") {
  SUBCASE("synchronous") {
    ProgramFixture f;
    auto s = f.stream();
    auto a = f.buffer();
    auto b = f.rt->allocate(64, s);
    REQUIRE(b);
    CHECK(a.kind() == MemoryKind::device);
    CHECK(b->kind() == MemoryKind::device);
    CHECK(fake_state().count("cuMemAllocFromPoolAsync") == 0);
    CHECK(fake_programs().pools_created == 0);
  }
  SUBCASE("stream-ordered: without a stream on the legacy default stream, one pool for the runtime") {
    ProgramFixture f(pooled());
    auto a = f.buffer(), b = f.buffer();
    CHECK(a.kind() == MemoryKind::stream_ordered);
    CHECK(fake_state().calls[call_on("cuMemAllocFromPoolAsync", a.pointer())].stream == nullptr);
    CHECK(fake_programs().pools_created == 1);
    CHECK(fake_state().count("cuMemAlloc") == 0);
  }
}

TEST_CASE("pool: usage reports the driver's reserved, used and peak bytes and the live bytes; trim and reset") {
  ProgramFixture f(pooled());
  auto s = f.stream();
  auto pool = f.rt->pool();
  REQUIRE(pool);
  {
    auto a = (*pool)->allocate(1000, &s), b = (*pool)->allocate(3000, &s);
    REQUIRE(a);
    REQUIRE(b);
    auto u = (*pool)->usage();
    REQUIRE(u);
    CHECK(u->used_bytes == 4000);
    CHECK(u->reserved_bytes == 4000);
    CHECK(u->live_bytes == 4000);
    CHECK(u->allocations == 2);
    a->reset();
    u = (*pool)->usage();
    CHECK(u->used_bytes == 3000);
    CHECK(u->used_peak_bytes == 4000);
    CHECK(u->live_bytes == 3000);
    CHECK(u->live_peak_bytes == 4000);
    REQUIRE((*pool)->reset_peaks());
    u = (*pool)->usage();
    CHECK(u->used_peak_bytes == 3000);
    CHECK(u->live_peak_bytes == 3000);
  }
  auto u = (*pool)->usage();
  CHECK(u->live_bytes == 0);
  CHECK(u->reserved_bytes == 4000);  // kept for reuse
  REQUIRE((*pool)->trim(1024));
  CHECK(fake_programs().trims == std::vector<uint64_t>{1024});
  CHECK((*pool)->usage()->reserved_bytes == 1024);
  REQUIRE((*pool)->trim());
  CHECK((*pool)->usage()->reserved_bytes == 0);
}

TEST_CASE("pool: an allocation past the limit is PG4021 with the numbers, before the driver") {
  ProgramFixture f(pooled(4096));
  auto s = f.stream();
  auto first = f.rt->allocate(3000, s);
  REQUIRE(first);
  const size_t calls = fake_state().count("cuMemAllocFromPoolAsync");
  auto second = f.rt->allocate(2000, s);
  REQUIRE_FALSE(second);
  CHECK(first_code(second.error()) == diag::Code::pool_limit_exceeded);
  const std::string text = diag::render_text(second.error());
  CHECK(text.find("allocation of 2000 bytes: 3000 bytes of the pool are live and its limit is 4096 bytes (904 over)") !=
        std::string::npos);
  CHECK(fake_state().count("cuMemAllocFromPoolAsync") == calls);
  // One allocation larger than the limit on its own is refused the same way.
  CHECK(first_code(f.rt->allocate(5000, s).error()) == diag::Code::pool_limit_exceeded);
  first->reset();  // its bytes count again once the buffer is given back
  CHECK(f.rt->allocate(2000, s));
}

TEST_CASE("pool: a failed allocation gives its bytes back to the limit") {
  ProgramFixture f(pooled(4096));
  fake_state().fail["cuMemAllocFromPoolAsync"] = CUDA_ERROR_OUT_OF_MEMORY;
  auto failed = f.rt->allocate(4000);
  REQUIRE_FALSE(failed);
  CHECK(first_code(failed.error()) == diag::Code::driver_call_failed);
  fake_state().fail.clear();
  CHECK(f.rt->allocate(4000));
}

TEST_CASE("pool: a limit above the device's memory is PG4022; a device without pools is PG4020") {
  SUBCASE("limit") {
    ProgramFixture f(pooled((uint64_t{80} << 30) + 1));
    auto pool = f.rt->pool();
    REQUIRE_FALSE(pool);
    CHECK(first_code(pool.error()) == diag::Code::pool_option_invalid);
    CHECK(diag::render_text(pool.error()).find("above the 85899345920 bytes") != std::string::npos);
    CHECK(fake_programs().pools_created == 0);
  }
  SUBCASE("no pools") {
    ProgramFixture f(pooled());
    fake_programs().pools_supported = 0;
    auto b = f.rt->allocate(64);
    REQUIRE_FALSE(b);
    CHECK(first_code(b.error()) == diag::Code::pool_unsupported);
    CHECK(fake_programs().pools_created == 0);
  }
}

TEST_CASE("pool: a stream of another context is PG4008, a moved-from stream PG3002, before the driver") {
  ProgramFixture f(pooled()), other(pooled());
  auto foreign = other.stream();
  auto pool = f.rt->pool();
  REQUIRE(pool);
  auto b = (*pool)->allocate(64, &foreign);
  REQUIRE_FALSE(b);
  CHECK(first_code(b.error()) == diag::Code::foreign_object);
  Stream moved_from = f.stream();
  Stream taker = std::move(moved_from);
  auto c = (*pool)->allocate(64, &moved_from);  // NOLINT(bugprone-use-after-move): the case under test
  REQUIRE_FALSE(c);
  CHECK(first_code(c.error()) == diag::Code::null_stream);
  CHECK(fake_state().count("cuMemAllocFromPoolAsync") == 0);
}

TEST_CASE("pool: other streams wait for the allocation; the free runs after every stream that used the buffer") {
  ProgramFixture f(pooled());
  auto a = f.stream(), b = f.stream();
  auto src = f.buffer(), out = f.buffer();
  CUdeviceptr p = 0;
  {
    auto x = f.rt->allocate(1024, a);
    REQUIRE(x);
    p = x->pointer();
    f.copy_on(b, *x, src);    // writes x on b: after the allocation on a
    f.copy_on(a, out, *x);    // reads x on a: after b's write
    f.bump_on(b, src);        // unrelated work on b afterwards
  }
  CHECK(happens_before(call_on("cuMemAllocFromPoolAsync", p), launch_writing(p)));
  const size_t free_index = call_on("cuMemFreeAsync", p);
  CHECK(happens_before(launch_writing(p), free_index));
  CHECK(happens_before(launch_writing(out.pointer()), free_index));
  CHECK(f.rt->context().tracker().counters().ordered_frees == 1);
  CHECK(f.rt->context().tracker().deferred() == 0);  // stream-ordered: nothing waits on the host
}

TEST_CASE("pool: without tracking, the free is placed on the stream the buffer was allocated on") {
  RuntimeOptions o = pooled();
  o.track_dependencies = false;
  ProgramFixture f(o);
  auto a = f.stream();
  auto x = f.rt->allocate(256, a);
  REQUIRE(x);
  const CUdeviceptr p = x->pointer();
  x->reset();
  CHECK(fake_state().calls[call_on("cuMemFreeAsync", p)].stream == a.handle());
}
