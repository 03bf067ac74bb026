// Automatic dependencies through a fake driver: every ordering rule, checked on the happens-before
// relation of the driver calls (stream order, event record -> wait, host waits), and its cost
// (no events or waits for work on one stream, one wait per point needed).
#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "ptxgate/runtime/stream_ops.hpp"
#include "runtime_programs_fixture.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using testing::FakeCall;
using testing::fake_state;
using testing::HappensBefore;

namespace {

using testing::call_on;

/// The programs fixture with tracking on or off.
struct Programs : testing::ProgramFixture {
  explicit Programs(bool track = true) : ProgramFixture(options(track)) {}
  static RuntimeOptions options(bool track) {
    RuntimeOptions o;
    o.track_dependencies = track;
    return o;
  }
  static size_t launch_writing(const DeviceBuffer& dst, size_t nth = 0) {
    return testing::launch_writing(dst.pointer(), nth);
  }
  static size_t launch_writing(CUdeviceptr dst, size_t nth = 0) { return testing::launch_writing(dst, nth); }
};

bool ordered(size_t a, size_t b) { return testing::happens_before(a, b); }

}  // namespace

TEST_CASE("tracking: work on one stream records no event and waits for nothing") {
  Programs p;
  auto s = p.stream();
  auto a = p.buffer(), b = p.buffer(), c = p.buffer();
  for (int i = 0; i < 5; ++i) {
    p.copy_on(s, b, a);
    p.copy_on(s, c, b);
    p.copy_on(s, a, c);
    p.bump_on(s, a);
  }
  CHECK(fake_state().count("cuEventRecord") == 0);
  CHECK(fake_state().count("cuStreamWaitEvent") == 0);
  CHECK(fake_state().events_created == 0);
  CHECK(p.rt->context().tracker().counters().submissions == 20);
}

TEST_CASE("tracking: a read on another stream waits for the last writer (read after write)") {
  Programs p;
  auto producer = p.stream(), consumer = p.stream();
  auto src = p.buffer(), mid = p.buffer(), out = p.buffer();
  p.copy_on(producer, mid, src);
  p.copy_on(consumer, out, mid);
  CHECK(ordered(Programs::launch_writing(mid), Programs::launch_writing(out)));
  CHECK(fake_state().count("cuEventRecord") == 1);
  CHECK(fake_state().count("cuStreamWaitEvent") == 1);
}

TEST_CASE("tracking: a launch that fails records nothing; what ran before it is still waited for") {
  Programs p;
  auto producer = p.stream(), consumer = p.stream();
  auto src = p.buffer(), mid = p.buffer(), out = p.buffer();
  // Blocked before the driver (2048 threads a block): its write of `mid` is not recorded, so the
  // reader on another stream has nothing to wait for.
  const LaunchConfig too_large = LaunchConfig::linear(1, 2048);
  REQUIRE_FALSE(p.copy->launch(too_large, {mid, src, 16u}, &producer));
  p.copy_on(consumer, out, mid);
  CHECK(fake_state().count("cuStreamWaitEvent") == 0);
  CHECK(p.rt->context().tracker().counters().submissions == 1);
  // A write that ran (after the read: one wait), then a failed one on the same stream: the next
  // reader waits for the one that ran (the second wait).
  p.copy_on(producer, mid, src);
  REQUIRE_FALSE(p.copy->launch(too_large, {mid, src, 16u}, &producer));
  p.copy_on(consumer, out, mid);
  CHECK(fake_state().count("cuStreamWaitEvent") == 2);
  CHECK(ordered(Programs::launch_writing(mid), Programs::launch_writing(out, 1)));
  CHECK(p.rt->context().tracker().counters().submissions == 3);
}

TEST_CASE("tracking: an operation that throws records nothing, on the one-pass path and after a wait") {
  Programs p;
  auto producer = p.stream(), consumer = p.stream(), third = p.stream();
  auto src = p.buffer(), mid = p.buffer(), out = p.buffer();
  Tracker& tracker = p.rt->context().tracker();
  const auto throwing = []() -> std::expected<void, diag::Diagnostics> { throw std::runtime_error("the operation"); };
  const BufferAccess write_mid[] = {{mid.track(), AccessMode::write}};
  // Nothing to wait for: recorded in one pass, then taken back when the operation throws.
  CHECK_THROWS_AS((void)tracker.submit(producer.handle(), write_mid, throwing), std::runtime_error);
  CHECK(tracker.counters().submissions == 0);
  p.copy_on(consumer, out, mid);  // a read of `mid` on another stream: no writer to wait for
  CHECK(fake_state().count("cuStreamWaitEvent") == 0);
  CHECK(tracker.counters().submissions == 1);
  // A write after that read waits first (the other path), then throws: still no writer recorded,
  // so a read on a third stream waits for nothing.
  CHECK_THROWS_AS((void)tracker.submit(producer.handle(), write_mid, throwing), std::runtime_error);
  CHECK(fake_state().count("cuStreamWaitEvent") == 1);
  p.copy_on(third, src, mid);
  CHECK(fake_state().count("cuStreamWaitEvent") == 1);
  CHECK(tracker.counters().submissions == 2);
}

TEST_CASE("tracking: a write on another stream waits for the readers since the last write (write after read)") {
  Programs p;
  auto a = p.stream(), b = p.stream();
  auto x = p.buffer(), y = p.buffer(), z = p.buffer();
  p.copy_on(a, y, x);  // reads x on a
  p.copy_on(b, x, z);  // writes x on b: after the read
  CHECK(ordered(Programs::launch_writing(y), Programs::launch_writing(x)));
}

TEST_CASE("tracking: a write on another stream waits for the last writer (write after write)") {
  Programs p;
  auto a = p.stream(), b = p.stream();
  auto x = p.buffer(), y = p.buffer(), z = p.buffer();
  p.copy_on(a, y, x);
  p.copy_on(b, y, z);
  CHECK(ordered(Programs::launch_writing(y, 0), Programs::launch_writing(y, 1)));
}

TEST_CASE("tracking: reads on two streams run concurrently (read after read)") {
  Programs p;
  auto a = p.stream(), b = p.stream();
  auto x = p.buffer(), y = p.buffer(), z = p.buffer();
  p.copy_on(a, y, x);
  p.copy_on(b, z, x);
  CHECK_FALSE(ordered(Programs::launch_writing(y), Programs::launch_writing(z)));
  CHECK(fake_state().count("cuStreamWaitEvent") == 0);
}

TEST_CASE("tracking: a write waits for every reader on every stream since the last write") {
  Programs p;
  auto w = p.stream(), r1 = p.stream(), r2 = p.stream(), w2 = p.stream();
  auto x = p.buffer(), src = p.buffer(), o1 = p.buffer(), o2 = p.buffer();
  p.copy_on(w, x, src);
  p.copy_on(r1, o1, x);
  p.copy_on(r2, o2, x);
  p.copy_on(w2, x, src);
  const size_t second_write = Programs::launch_writing(x, 1);
  CHECK(ordered(Programs::launch_writing(x, 0), second_write));
  CHECK(ordered(Programs::launch_writing(o1), second_write));
  CHECK(ordered(Programs::launch_writing(o2), second_write));
  // The readers waited for the first write; neither waited for the other.
  CHECK_FALSE(ordered(Programs::launch_writing(o1), Programs::launch_writing(o2)));
}

TEST_CASE("tracking: an inout parameter is a write: a later reader on another stream waits for it") {
  Programs p;
  auto a = p.stream(), b = p.stream();
  auto y = p.buffer(), out = p.buffer();
  p.bump_on(a, y);
  p.copy_on(b, out, y);
  HappensBefore hb(fake_state().calls);
  const size_t bump = hb.find("cuLaunchKernel", 0);
  CHECK(ordered(bump, Programs::launch_writing(out)));
}

TEST_CASE("tracking: one wait per point: a second dependency on the same point costs nothing") {
  Programs p;
  auto a = p.stream(), b = p.stream(), c = p.stream();
  auto src = p.buffer(), x = p.buffer(), y = p.buffer(), o1 = p.buffer(), o2 = p.buffer(), o3 = p.buffer();
  p.copy_on(a, x, src);
  p.copy_on(a, y, src);
  p.copy_on(b, o1, x);  // needs a's point 2 (covers both writes): one record, one wait
  p.copy_on(b, o2, y);  // already waited for
  CHECK(fake_state().count("cuEventRecord") == 1);
  CHECK(fake_state().count("cuStreamWaitEvent") == 1);
  p.copy_on(c, o3, x);  // another stream: the same recorded point, one more wait, no new record
  CHECK(fake_state().count("cuEventRecord") == 1);
  CHECK(fake_state().count("cuStreamWaitEvent") == 2);
  CHECK(ordered(Programs::launch_writing(y), Programs::launch_writing(o3)));
  auto counters = p.rt->context().tracker().counters();
  CHECK(counters.events_recorded == 1);
  CHECK(counters.stream_waits == 2);
}

TEST_CASE("tracking: a later point of the producer is recorded again when a consumer needs it") {
  Programs p;
  auto a = p.stream(), b = p.stream();
  auto src = p.buffer(), x = p.buffer(), o1 = p.buffer(), o2 = p.buffer();
  p.copy_on(a, x, src);
  p.copy_on(b, o1, x);
  p.copy_on(a, x, src);  // waits for b's read of x (write after read)
  p.copy_on(b, o2, x);   // needs a's second write
  CHECK(ordered(Programs::launch_writing(x, 1), Programs::launch_writing(o2)));
  CHECK(ordered(Programs::launch_writing(o1), Programs::launch_writing(x, 1)));
  CHECK(fake_state().events_created == 2);  // one event per stream, re-recorded
}

TEST_CASE("tracking: work on the legacy default stream is tracked like any stream") {
  Programs p;
  auto a = p.stream();
  auto src = p.buffer(), x = p.buffer(), out = p.buffer();
  auto ok = p.copy->launch(p.config, {x, src, 16u});  // null stream
  REQUIRE(ok);
  p.copy_on(a, out, x);
  CHECK(ordered(Programs::launch_writing(x), Programs::launch_writing(out)));
}

TEST_CASE("tracking: the synchronous helpers are ordered with the streams' work") {
  Programs p;
  auto a = p.stream();
  auto src = p.buffer(), x = p.buffer();
  std::vector<float> host(256, 1.0f);
  REQUIRE(x.upload(std::as_bytes(std::span(host))));
  p.copy_on(a, src, x);  // reads the upload
  HappensBefore hb(fake_state().calls);
  CHECK(ordered(hb.find("cuMemcpyHtoD"), Programs::launch_writing(src)));
  p.copy_on(a, x, src);
  REQUIRE(x.download(std::as_writable_bytes(std::span(host))));  // after the write on a
  HappensBefore hb2(fake_state().calls);
  CHECK(ordered(Programs::launch_writing(x), hb2.find("cuMemcpyDtoH")));
  REQUIRE(x.fill_bytes(0));  // a write: after a's read of x? a's last use of x is its write
  HappensBefore hb3(fake_state().calls);
  CHECK(ordered(Programs::launch_writing(x), hb3.find("cuMemsetD8")));
}

TEST_CASE("tracking: async copies read their source and write their destination") {
  Programs p;
  auto up = p.stream(), compute = p.stream(), down = p.stream();
  auto staging = HostBuffer::allocate(p.rt->shared_context(), 1024);
  auto result = HostBuffer::allocate(p.rt->shared_context(), 1024);
  REQUIRE(staging);
  REQUIRE(result);
  auto x = p.buffer(), y = p.buffer();
  REQUIRE(copy_async(up, DeviceSpan<float>(x), HostSpan<float>(*staging)));
  p.copy_on(compute, y, x);
  REQUIRE(copy_async(down, HostSpan<float>(*result), DeviceSpan<float>(y)));
  HappensBefore hb(fake_state().calls);
  const size_t upload = hb.find("cuMemcpyHtoDAsync"), download = hb.find("cuMemcpyDtoHAsync");
  CHECK(ordered(upload, Programs::launch_writing(y)));
  CHECK(ordered(Programs::launch_writing(y), download));
  // The host reading the result waits for the download, and only for it.
  auto view = result->read<float>();
  REQUIRE(view);
  CHECK(view->size() == 256);
  HappensBefore hb2(fake_state().calls);
  CHECK(ordered(download, hb2.find("cuEventSynchronize")));
  CHECK(p.rt->context().tracker().counters().host_waits == 1);
  // Writing the staging buffer again waits for the upload that read it.
  auto writable = staging->write<float>();
  REQUIRE(writable);
  HappensBefore hb3(fake_state().calls);
  CHECK(ordered(upload, hb3.find("cuEventSynchronize", 1)));
}

TEST_CASE("tracking: a buffer freed while a stream still uses it is freed after that work") {
  Programs p;
  auto a = p.stream();
  auto src = p.buffer();
  CUdeviceptr freed = 0;
  {
    auto x = p.buffer();
    freed = x.pointer();
    p.copy_on(a, x, src);
    fake_state().events_pending = true;  // the copy still runs
  }
  auto was_freed = [&] { return call_on("cuMemFree", freed) != HappensBefore::npos; };
  CHECK_FALSE(was_freed());
  CHECK(p.rt->context().tracker().deferred() == 1);
  p.rt->context().tracker().reclaim();
  CHECK_FALSE(was_freed());  // still running
  fake_state().events_pending = false;
  auto other = p.buffer();  // allocation reclaims what completed
  CHECK(was_freed());
  CHECK(p.rt->context().tracker().deferred() == 0);
  CHECK(ordered(Programs::launch_writing(freed), call_on("cuMemFree", freed)));
  CHECK(p.rt->context().tracker().counters().deferred_frees == 1);
}

TEST_CASE("tracking: a buffer whose work is known complete is freed at once") {
  Programs p;
  auto a = p.stream();
  auto src = p.buffer();
  CUdeviceptr freed = 0;
  {
    auto x = p.buffer();
    freed = x.pointer();
    p.copy_on(a, x, src);
    REQUIRE(a.synchronize());
  }
  CHECK(p.rt->context().tracker().deferred() == 0);
  CHECK(fake_state().count("cuEventRecord") == 0);
  CHECK(call_on("cuMemFree", freed) != HappensBefore::npos);
}

TEST_CASE("tracking: stream and context synchronisation make later cross-stream work wait-free") {
  Programs p;
  auto a = p.stream(), b = p.stream();
  auto src = p.buffer(), x = p.buffer(), y = p.buffer(), o = p.buffer();
  p.copy_on(a, x, src);
  REQUIRE(a.synchronize());
  p.copy_on(b, o, x);
  CHECK(fake_state().count("cuStreamWaitEvent") == 0);
  p.copy_on(a, y, src);
  REQUIRE(p.rt->synchronize());
  p.copy_on(b, o, y);
  CHECK(fake_state().count("cuStreamWaitEvent") == 0);
}

TEST_CASE("tracking: a destroyed stream leaves a point of its pending work for later consumers") {
  Programs p;
  auto b = p.stream();
  auto src = p.buffer(), x = p.buffer(), out = p.buffer();
  {
    auto a = p.stream();
    p.copy_on(a, x, src);
  }
  p.copy_on(b, out, x);
  HappensBefore hb(fake_state().calls);
  const size_t record = hb.find("cuEventRecord"), destroy = hb.find("cuStreamDestroy");
  CHECK(record < destroy);
  CHECK(ordered(Programs::launch_writing(x), Programs::launch_writing(out)));
}

TEST_CASE("tracking: pool memory is freed on a stream ordered after every stream that used it") {
  Programs p;
  auto a = p.stream(), b = p.stream();
  auto src = p.buffer(), out = p.buffer();
  CUdeviceptr ptr = 0;
  REQUIRE(p.rt->context().make_current());
  REQUIRE(p.api.cuMemAllocAsync(&ptr, 1024, a.handle()) == CUDA_SUCCESS);
  {
    auto pooled = DeviceBuffer::adopt(p.rt->shared_context(), ptr, 1024, MemoryKind::stream_ordered, a.handle());
    p.copy_on(b, pooled, src);  // after the allocation on a
    p.copy_on(a, out, pooled);  // after b's write
  }
  const size_t free_index = call_on("cuMemFreeAsync", ptr);
  CHECK(ordered(call_on("cuMemAllocAsync", ptr), Programs::launch_writing(ptr)));
  CHECK(ordered(Programs::launch_writing(ptr), free_index));
  CHECK(ordered(Programs::launch_writing(out), free_index));
  CHECK(p.rt->context().tracker().deferred() == 0);
  CHECK(p.rt->context().tracker().counters().ordered_frees == 1);
}

TEST_CASE("tracking: a deferred buffer is freed when the context goes, after its work") {
  CUdeviceptr freed = 0;
  {
    Programs p;
    auto a = p.stream();
    auto src = p.buffer();
    {
      auto x = p.buffer();
      freed = x.pointer();
      p.copy_on(a, x, src);
      fake_state().events_pending = true;
    }
    CHECK(p.rt->context().tracker().deferred() == 1);
  }
  CHECK(ordered(HappensBefore(fake_state().calls).find("cuEventSynchronize"), call_on("cuMemFree", freed)));
}

TEST_CASE("tracking off: no events, no waits, buffers freed at once") {
  Programs p(false);
  auto a = p.stream(), b = p.stream();
  auto src = p.buffer(), x = p.buffer(), out = p.buffer();
  CHECK(x.track() == nullptr);
  p.copy_on(a, x, src);
  p.copy_on(b, out, x);
  CHECK(fake_state().count("cuEventRecord") == 0);
  CHECK(fake_state().count("cuStreamWaitEvent") == 0);
  const CUdeviceptr freed = x.pointer();
  x.reset();
  CHECK(call_on("cuMemFree", freed) != HappensBefore::npos);
}

TEST_CASE("tracking: raw device pointers are not tracked") {
  Programs p;
  auto a = p.stream(), b = p.stream();
  auto src = p.buffer(), x = p.buffer(), out = p.buffer();
  REQUIRE(p.copy->launch(p.config, {Arg::device_pointer(x.pointer(), 1024), src, 16u}, &a));
  p.copy_on(b, out, x);
  CHECK(fake_state().count("cuStreamWaitEvent") == 0);
}
