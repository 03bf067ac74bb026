// Copies and fills on a stream through a fake driver: ranges, sizes and contexts checked before the
// driver, the right entry point for each direction and element width, typed spans as kernel arguments.
#include <doctest/doctest.h>

#include <vector>

#include "ptxgate/runtime/stream_ops.hpp"
#include "runtime_fake_order.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using testing::fake_state;

namespace {

struct Fixture {
  DriverApi api = testing::make_fake_driver();
  std::shared_ptr<Context> ctx;
  Stream stream;
  Fixture() {
    testing::reset_fake_state();
    ctx = *Context::open(0, &api);
    stream = *Stream::create(ctx);
  }
  DeviceBuffer device(size_t bytes) { return *DeviceBuffer::allocate(ctx, bytes); }
  HostBuffer pinned(size_t bytes) { return *HostBuffer::allocate(ctx, bytes); }
};

diag::Code first_code(const std::expected<void, diag::Diagnostics>& r) {
  REQUIRE_FALSE(r);
  return r.error().items().front().code;
}

}  // namespace

TEST_CASE("stream ops: each direction calls its async copy with the span's offsets") {
  Fixture f;
  auto d = f.device(4096), e = f.device(4096);
  auto h = f.pinned(4096);
  REQUIRE(copy_async(f.stream, DeviceSpan<float>(d, 10, 100), HostSpan<float>(h, 20, 100)));
  REQUIRE(copy_async(f.stream, HostSpan<float>(h), DeviceSpan<float>(d)));
  REQUIRE(copy_async(f.stream, DeviceSpan<float>(e, 1, 5), DeviceSpan<float>(d, 2, 5)));
  std::vector<float> pageable(8, 3.0f);
  REQUIRE(copy_async(f.stream, DeviceSpan<float>(d, 0, 8), pageable));
  REQUIRE(copy_async(f.stream, pageable, DeviceSpan<float>(d, 8, 8)));
  const auto& calls = fake_state().calls;
  testing::HappensBefore hb(calls);
  const auto& up = calls[hb.find("cuMemcpyHtoDAsync")];
  CHECK(up.dst == d.pointer() + 40);
  CHECK(up.src == reinterpret_cast<uint64_t>(h.data()) + 80);
  CHECK(up.bytes == 400);
  CHECK(up.stream == f.stream.handle());
  const auto& down = calls[hb.find("cuMemcpyDtoHAsync")];
  CHECK(down.dst == reinterpret_cast<uint64_t>(h.data()));
  CHECK(down.bytes == 4096);
  const auto& d2d = calls[hb.find("cuMemcpyDtoDAsync")];
  CHECK(d2d.dst == e.pointer() + 4);
  CHECK(d2d.src == d.pointer() + 8);
  CHECK(d2d.bytes == 20);
  CHECK(calls[hb.find("cuMemcpyHtoDAsync", 1)].src == reinterpret_cast<uint64_t>(pageable.data()));
  CHECK(calls[hb.find("cuMemcpyDtoHAsync", 1)].src == d.pointer() + 32);
}

TEST_CASE("stream ops: a range past its buffer is PG4006 with the numbers, before the driver") {
  Fixture f;
  auto d = f.device(400);
  auto h = f.pinned(4000);
  auto r = copy_async(f.stream, DeviceSpan<float>(d, 90, 20), HostSpan<float>(h, 0, 20));
  CHECK(first_code(r) == diag::Code::copy_out_of_range);
  const std::string text = diag::render_text(r.error());
  CHECK(text.find("elements [90, 110)") != std::string::npos);
  CHECK(text.find("past its 400 bytes") != std::string::npos);
  CHECK(fake_state().count("cuMemcpyHtoDAsync") == 0);
  // An offset beyond the end, and a count that would overflow, are caught the same way.
  CHECK(first_code(copy_async(f.stream, DeviceSpan<float>(d, 101, 0), HostSpan<float>(h, 0, 0))) ==
        diag::Code::copy_out_of_range);
  CHECK(first_code(copy_async(f.stream, DeviceSpan<float>(d, 1, SIZE_MAX / 4), HostSpan<float>(h))) ==
        diag::Code::copy_out_of_range);
}

TEST_CASE("stream ops: different sizes are PG4007; host to host is refused") {
  Fixture f;
  auto d = f.device(400);
  auto h = f.pinned(400);
  CHECK(first_code(copy_async(f.stream, DeviceSpan<float>(d, 0, 10), HostSpan<float>(h, 0, 11))) ==
        diag::Code::copy_size_mismatch);
  std::vector<float> pageable(100);
  CHECK(first_code(copy_async(f.stream, CopyEnd::of(HostSpan<float>(h)), CopyEnd::of(std::span(pageable)))) ==
        diag::Code::copy_size_mismatch);
  CHECK(fake_state().count("cuMemcpyHtoDAsync") + fake_state().count("cuMemcpyDtoHAsync") == 0);
}

TEST_CASE("stream ops: a buffer of another context is PG4008") {
  Fixture f;
  DriverApi api2 = testing::make_fake_driver();
  auto other = *Context::open(0, &api2);
  auto foreign = *DeviceBuffer::allocate(other, 400);
  auto h = f.pinned(400);
  CHECK(first_code(copy_async(f.stream, DeviceSpan<float>(foreign), HostSpan<float>(h))) ==
        diag::Code::foreign_object);
}

TEST_CASE("stream ops: fills pick the driver's element width; partial elements are refused") {
  Fixture f;
  auto d = f.device(64);
  REQUIRE(fill_async(f.stream, DeviceSpan<float>(d, 2, 4), 1.0f));
  REQUIRE(fill_async(f.stream, DeviceSpan<uint16_t>(d), uint16_t{7}));
  REQUIRE(fill_async(f.stream, DeviceSpan<uint8_t>(d, 3, 5), uint8_t{9}));
  const auto& calls = fake_state().calls;
  testing::HappensBefore hb(calls);
  const auto& d32 = calls[hb.find("cuMemsetD32Async")];
  CHECK(d32.dst == d.pointer() + 8);
  CHECK(d32.src == 0x3f800000u);
  CHECK(d32.bytes == 16);
  CHECK(calls[hb.find("cuMemsetD16Async")].bytes == 64);
  CHECK(calls[hb.find("cuMemsetD8Async")].dst == d.pointer() + 3);
  CHECK(first_code(fill_async(f.stream, CopyEnd{CopyEnd::Where::device, &d, nullptr, nullptr, 2, 8, 1}, 0, 4)) ==
        diag::Code::copy_size_mismatch);
  CHECK(first_code(fill_async(f.stream, DeviceSpan<float>(d, 10, 8), 0.0f)) == diag::Code::copy_out_of_range);
}

TEST_CASE("stream ops: empty copies and fills call nothing; a reset stream is refused") {
  Fixture f;
  auto d = f.device(64);
  auto h = f.pinned(64);
  REQUIRE(copy_async(f.stream, DeviceSpan<float>(d, 0, 0), HostSpan<float>(h, 0, 0)));
  REQUIRE(fill_async(f.stream, DeviceSpan<float>(d, 16, 0), 0.0f));
  CHECK(fake_state().count("cuMemcpyHtoDAsync") + fake_state().count("cuMemsetD32Async") == 0);
  Stream gone;
  CHECK(first_code(copy_async(gone, DeviceSpan<float>(d), HostSpan<float>(h))) == diag::Code::null_stream);
}

TEST_CASE("stream ops: a device span is a kernel argument of its range, tracked with its buffer") {
  Fixture f;
  auto d = f.device(4096);
  Arg a = DeviceSpan<float>(d, 16, 32);
  CHECK(a.kind() == Arg::Kind::buffer);
  CHECK(a.bits() == d.pointer() + 64);
  CHECK(a.buffer_bytes() == 128);
  CHECK(a.track() == d.track());
  CHECK(a.track() != nullptr);
}
