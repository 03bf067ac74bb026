// The guard's holes through a fake driver: the stream policy honoured by every operation that takes
// a stream or runs on the legacy default one, objects of another context (device) blocked before
// the driver naming both devices, typed buffers checked against the parameters they bind to.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "ptxgate/runtime/runtime.hpp"
#include "ptxgate/runtime/stream_ops.hpp"
#include "runtime_fake_driver.hpp"

using namespace ptxgate;
using namespace ptxgate::runtime;
using testing::fake_state;

namespace {

std::string saxpy_text() {
  std::ifstream in(std::string(PTXGATE_SOURCE_DIR) + "/examples/saxpy.pg");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<Runtime> fake_runtime(const DriverApi& api, int device = 0,
                                      contract::StreamPolicy policy = contract::StreamPolicy::allow_legacy_default) {
  auto ctx = Context::open(device, &api);
  REQUIRE(ctx);
  RuntimeOptions options;
  options.cache.use_disk = false;
  options.stream_policy = policy;
  return std::make_unique<Runtime>(*ctx, options);
}

diag::Code first_code(const diag::Diagnostics& d) {
  REQUIRE_FALSE(d.items().empty());
  return d.items().front().code;
}

const std::string& first_message(const diag::Diagnostics& d) {
  REQUIRE_FALSE(d.items().empty());
  return d.items().front().message;
}

struct Saxpy {
  std::unique_ptr<Runtime> rt;
  std::shared_ptr<Kernel> kernel;
  DeviceBuffer y, x;
  explicit Saxpy(const DriverApi& api, int device = 0,
                 contract::StreamPolicy policy = contract::StreamPolicy::allow_legacy_default)
      : rt(fake_runtime(api, device, policy)) {
    auto k = rt->compile(saxpy_text(), "saxpy", "saxpy.pg");
    if (!k) FAIL(diag::render_text(k.error()));
    kernel = *k;
    y = *rt->allocate_array<float>(1000);
    x = *rt->allocate_array<float>(1000);
    fake_state().param_sizes = {8, 8, 4, 4};
  }
};

const LaunchConfig kConfig = LaunchConfig::linear(4, 256);

}  // namespace

TEST_CASE("guard: the default policy launches on the legacy default stream; require_explicit blocks it (PG3002)") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  Saxpy allowed(api);
  REQUIRE(allowed.kernel->launch(kConfig, {allowed.y, allowed.x, 2.0f, 1000u}));
  CHECK(fake_state().last_stream == nullptr);
  CHECK(fake_state().launches == 1);

  Saxpy strict(api, 0, contract::StreamPolicy::require_explicit);
  auto blocked = strict.kernel->launch(kConfig, {strict.y, strict.x, 2.0f, 1000u});
  REQUIRE_FALSE(blocked);
  CHECK(first_code(blocked.error()) == diag::Code::null_stream);
  auto verdict = strict.kernel->check(kConfig, std::vector<Arg>{strict.y, strict.x, 2.0f, 1000u});
  CHECK_FALSE(verdict.launchable);
  CHECK(first_code(verdict.diagnostics) == diag::Code::null_stream);
  CHECK(fake_state().launches == 1);
  CHECK(strict.kernel->counters().blocked == 1);

  auto stream = strict.rt->create_stream();
  REQUIRE(stream);
  REQUIRE(strict.kernel->launch(kConfig, {strict.y, strict.x, 2.0f, 1000u}, &*stream));
  CHECK(fake_state().launches == 2);
  CHECK(fake_state().last_stream == stream->handle());
  // A moved-from stream is refused in every policy, never taken for the legacy default stream.
  Stream gone = std::move(*stream);
  auto moved = allowed.kernel->launch(kConfig, {allowed.y, allowed.x, 2.0f, 1000u}, &*stream);
  REQUIRE_FALSE(moved);
  CHECK(first_code(moved.error()) == diag::Code::null_stream);
  CHECK(fake_state().launches == 2);
}

TEST_CASE("guard: a policy changed to require_explicit stops the steady relaunch on the null stream too") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  Saxpy s(api);
  REQUIRE(s.kernel->launch(kConfig, {s.y, s.x, 2.0f, 1000u}));
  REQUIRE(s.kernel->launch(kConfig, {s.y, s.x, 3.0f, 1000u}));
  CHECK(fake_state().launches == 2);
  s.rt->context().set_stream_policy(contract::StreamPolicy::require_explicit);
  auto blocked = s.kernel->launch(kConfig, {s.y, s.x, 4.0f, 1000u});
  REQUIRE_FALSE(blocked);
  CHECK(first_code(blocked.error()) == diag::Code::null_stream);
  CHECK(fake_state().launches == 2);
}

TEST_CASE("guard: under require_explicit the synchronous helpers and events on no stream are PG3002; streams work") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt = fake_runtime(api, 0, contract::StreamPolicy::require_explicit);
  std::vector<float> host(16, 1.0f);
  auto up = rt->upload(std::span<const float>(host));
  REQUIRE_FALSE(up);
  CHECK(first_code(up.error()) == diag::Code::null_stream);
  CHECK(first_message(up.error()).find("buffer upload runs on the null (legacy default) stream") != std::string::npos);
  auto buffer = rt->allocate_array<float>(16);
  REQUIRE(buffer);
  CHECK(first_code(buffer->download(std::as_writable_bytes(std::span(host))).error()) == diag::Code::null_stream);
  CHECK(first_code(buffer->fill_bytes(0).error()) == diag::Code::null_stream);
  auto event = Event::create(rt->shared_context());
  REQUIRE(event);
  CHECK(first_code(event->record(nullptr).error()) == diag::Code::null_stream);
  CHECK(fake_state().count("cuMemcpyHtoD") + fake_state().count("cuMemcpyDtoH") + fake_state().count("cuMemsetD8") +
            fake_state().count("cuEventRecord") ==
        0);

  auto stream = rt->create_stream();
  REQUIRE(stream);
  REQUIRE(copy_async(*stream, DeviceSpan<float>(*buffer), std::span<const float>(host)));
  REQUIRE(event->record(&*stream));
  CHECK(fake_state().count("cuMemcpyHtoDAsync") == 1);
  CHECK(fake_state().count("cuEventRecord") == 1);
}

TEST_CASE("guard: a buffer or span of another device, not peer-accessible, is PG4070 naming both devices, before the driver") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  Saxpy s(api, 0);
  auto other = fake_runtime(api, 1);
  auto foreign = other->allocate_array<float>(1000);
  REQUIRE(foreign);
  auto blocked = s.kernel->launch(kConfig, {s.y, *foreign, 2.0f, 1000u});
  REQUIRE_FALSE(blocked);
  // Another device's buffer is legal with peer access (runtime/multi_device); without it, PG4070.
  CHECK(first_code(blocked.error()) == diag::Code::peer_not_accessible);
  const std::string& m = first_message(blocked.error());
  CHECK(m.find("'x'") != std::string::npos);
  CHECK(m.find("device 1") != std::string::npos);
  CHECK(m.find("device 0") != std::string::npos);
  auto span = s.kernel->launch(kConfig, {DeviceSpan<float>(*foreign, 0, 1000), s.x, 2.0f, 1000u});
  REQUIRE_FALSE(span);
  CHECK(first_message(span.error()).find("'y'") != std::string::npos);
  CHECK(first_message(span.error()).find("device 1") != std::string::npos);
  CHECK_FALSE(s.kernel->check(kConfig, std::vector<Arg>{s.y, *foreign, 2.0f, 1000u}).launchable);
  CHECK(fake_state().launches == 0);
  CHECK(fake_state().occupancy_calls == 0);

  // A stream of device 1 names both devices as well.
  auto stream = other->create_stream();
  REQUIRE(stream);
  auto on_stream = s.kernel->launch(kConfig, {s.y, s.x, 2.0f, 1000u}, &*stream);
  REQUIRE_FALSE(on_stream);
  CHECK(first_message(on_stream.error()).find("the stream belongs to the context of device 1") != std::string::npos);
  CHECK(fake_state().launches == 0);
  REQUIRE(s.kernel->launch(kConfig, {s.y, s.x, 2.0f, 1000u}));
  CHECK(fake_state().launches == 1);
}

TEST_CASE("guard: copies across two devices without peer access (PG4070) and events of another context (PG4008), naming both, before the driver") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt0 = fake_runtime(api, 0), rt1 = fake_runtime(api, 1);
  auto mine = rt0->allocate_array<float>(100);
  auto theirs = rt1->allocate_array<float>(100);
  auto stream = rt0->create_stream();
  REQUIRE((mine && theirs && stream));
  auto copy = copy_async(*stream, DeviceSpan<float>(*mine), DeviceSpan<float>(*theirs));
  REQUIRE_FALSE(copy);
  CHECK(first_code(copy.error()) == diag::Code::peer_not_accessible);
  CHECK(first_message(copy.error()).find("device 1") != std::string::npos);
  CHECK(first_message(copy.error()).find("device 0") != std::string::npos);
  auto fill = fill_async(*stream, DeviceSpan<float>(*theirs), 1.0f);
  REQUIRE_FALSE(fill);
  CHECK(first_code(fill.error()) == diag::Code::foreign_object);

  auto event0 = Event::create(rt0->shared_context()), event1 = Event::create(rt1->shared_context());
  REQUIRE((event0 && event1));
  auto record = event1->record(&*stream);
  REQUIRE_FALSE(record);
  CHECK(first_code(record.error()) == diag::Code::foreign_object);
  CHECK(first_message(record.error()).find("the stream belongs to the context of device 0") != std::string::npos);
  CHECK(first_message(record.error()).find("the event was created in the context of device 1") != std::string::npos);
  auto timing = event1->elapsed_ms_since(*event0);
  REQUIRE_FALSE(timing);
  CHECK(first_code(timing.error()) == diag::Code::foreign_object);
  CHECK(fake_state().count("cuMemcpyDtoDAsync") + fake_state().count("cuMemsetD32Async") +
            fake_state().count("cuEventRecord") ==
        0);
}

TEST_CASE("guard: a typed buffer of another element type than the parameter is PG3010 before the driver") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  Saxpy s(api);
  std::vector<double> wide(1000, 1.0);
  auto d64 = s.rt->upload(std::span<const double>(wide));
  REQUIRE(d64);
  CHECK(d64->element_type() == ir::Type::f64);
  CHECK(s.x.element_type() == ir::Type::f32);
  auto blocked = s.kernel->launch(kConfig, {s.y, *d64, 2.0f, 1000u});
  REQUIRE_FALSE(blocked);
  CHECK(first_code(blocked.error()) == diag::Code::buffer_element_type_mismatch);
  CHECK(first_message(blocked.error()) ==
        "argument 1 ('x') of kernel 'saxpy' is a buffer of f64 (8000 bytes), but the parameter is a buffer of f32");
  CHECK_FALSE(s.kernel->check(kConfig, std::vector<Arg>{s.y, *d64, 2.0f, 1000u}).launchable);
  // A float view of the f64 buffer still carries the memory's type; so does a span of it.
  auto view = s.kernel->launch(kConfig, {s.y, DeviceSpan<float>(*d64, 0, 1000), 2.0f, 1000u});
  REQUIRE_FALSE(view);
  CHECK(first_code(view.error()) == diag::Code::buffer_element_type_mismatch);
  CHECK(fake_state().launches == 0);

  // After a validated launch of the right types, the steady path must not take the f64 buffer either.
  REQUIRE(s.kernel->launch(kConfig, {s.y, s.x, 2.0f, 1000u}));
  auto steady = s.kernel->launch(kConfig, {s.y, *d64, 2.0f, 1000u});
  REQUIRE_FALSE(steady);
  CHECK(first_code(steady.error()) == diag::Code::buffer_element_type_mismatch);
  CHECK(fake_state().launches == 1);

  // The explicit escape hatches bind: a byte view of the buffer, untyped memory, a raw pointer.
  REQUIRE(s.kernel->launch(kConfig, {s.y, as_bytes(*d64).subspan(0, 4000), 2.0f, 1000u}));
  auto untyped = s.rt->allocate(4000);
  REQUIRE(untyped);
  CHECK(untyped->element_type() == ir::Type::void_);
  REQUIRE(s.kernel->launch(kConfig, {s.y, *untyped, 2.0f, 1000u}));
  REQUIRE(s.kernel->launch(kConfig, {s.y, Arg::device_pointer(d64->pointer(), 4000), 2.0f, 1000u}));
  CHECK(fake_state().launches == 4);
}

TEST_CASE("guard: typed views of a buffer of another element type are PG4009 in copies and downloads") {
  testing::reset_fake_state();
  static DriverApi api = testing::make_fake_driver();
  auto rt = fake_runtime(api);
  auto stream = rt->create_stream();
  auto d64 = rt->allocate_array<double>(100);
  auto f32 = rt->allocate_array<float>(200);
  REQUIRE((stream && d64 && f32));
  std::vector<float> host(200);
  auto copy = copy_async(*stream, DeviceSpan<float>(*d64), std::span<const float>(host));
  REQUIRE_FALSE(copy);
  CHECK(first_code(copy.error()) == diag::Code::view_type_mismatch);
  CHECK(first_message(copy.error()).find("a view as f32 of a device buffer of f64 elements (800 bytes)") !=
        std::string::npos);
  auto d2d = copy_async(*stream, DeviceSpan<float>(*f32), DeviceSpan<float>(*d64));
  REQUIRE_FALSE(d2d);
  CHECK(first_code(d2d.error()) == diag::Code::view_type_mismatch);
  auto down = rt->download<float>(*d64);
  REQUIRE_FALSE(down);
  CHECK(first_code(down.error()) == diag::Code::view_type_mismatch);
  CHECK(fake_state().count("cuMemcpyHtoDAsync") + fake_state().count("cuMemcpyDtoDAsync") +
            fake_state().count("cuMemcpyDtoH") ==
        0);
  // Byte views copy any buffer; views of the buffer's own type copy as before.
  REQUIRE(copy_async(*stream, as_bytes(*f32), as_bytes(*d64)));
  REQUIRE(copy_async(*stream, DeviceSpan<double>(*d64, 0, 10), DeviceSpan<double>(*d64, 50, 10)));
  REQUIRE(rt->download<std::byte>(*d64));
  CHECK(fake_state().count("cuMemcpyDtoDAsync") == 2);
}
