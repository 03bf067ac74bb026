// The guard on a real device: the stream policy (require_explicit blocks the legacy default stream
// everywhere), typed buffers (an f64 buffer never binds to an f32[] parameter) and objects of
// another context, each blocked before the driver while the explicit forms still compute.
#include <algorithm>

#include "gpu_support.hpp"

#include "ptxgate/runtime/stream_ops.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;
using runtime::Arg;
using runtime::LaunchConfig;

namespace {

diag::Code first_code(const diag::Diagnostics& d) { return d.items().front().code; }

std::unique_ptr<runtime::Runtime> second_runtime(contract::StreamPolicy policy) {
  runtime::RuntimeOptions options;
  options.stream_policy = policy;
  options.cache.use_disk = false;
  auto rt = runtime::Runtime::create(options);
  if (!rt) FAIL(diag::render_text(rt.error()));
  return std::move(*rt);
}

}  // namespace

TEST_CASE("guard: require_explicit blocks every use of the legacy default stream; explicit streams compute") {
  auto rt = second_runtime(contract::StreamPolicy::require_explicit);
  auto k = rt->compile(read_text(example_path("saxpy")), "saxpy", "saxpy.pg");
  if (!k) FAIL(diag::render_text(k.error()));
  const uint32_t n = 1000;
  std::vector<float> x(n), y(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i), y[i] = 1.0f;

  // The synchronous helpers run on the legacy default stream: refused.
  auto implicit = rt->upload(std::span<const float>(x));
  REQUIRE_FALSE(implicit);
  CHECK(first_code(implicit.error()) == diag::Code::null_stream);

  auto stream = rt->create_stream();
  if (!stream) FAIL(diag::render_text(stream.error()));
  auto dx = rt->allocate_array<float>(n), dy = rt->allocate_array<float>(n);
  if (!dx || !dy) FAIL("allocation failed");
  PG_REQUIRE_OK(runtime::copy_async(*stream, runtime::DeviceSpan<float>(*dx), std::span<const float>(x)));
  PG_REQUIRE_OK(runtime::copy_async(*stream, runtime::DeviceSpan<float>(*dy), std::span<const float>(y)));

  // A launch with no stream is blocked (check says so too); y stays as it was.
  const auto config = LaunchConfig::linear((n + 255) / 256, 256);
  auto blocked = (*k)->launch(config, {*dy, *dx, 2.0f, n});
  REQUIRE_FALSE(blocked);
  CHECK(first_code(blocked.error()) == diag::Code::null_stream);
  CHECK_FALSE((*k)->check(config, std::vector<Arg>{*dy, *dx, 2.0f, n}).launchable);
  CHECK((*k)->counters().driver_calls == 0);

  // Events: not on the legacy default stream, but on the explicit one.
  auto start = runtime::Event::create(rt->shared_context());
  if (!start) FAIL(diag::render_text(start.error()));
  auto on_null = start->record(nullptr);
  REQUIRE_FALSE(on_null);
  CHECK(first_code(on_null.error()) == diag::Code::null_stream);
  PG_REQUIRE_OK(start->record(&*stream));

  PG_REQUIRE_OK((*k)->launch(config, {*dy, *dx, 2.0f, n}, &*stream));
  std::vector<float> got(n, -1.0f);
  PG_REQUIRE_OK(runtime::copy_async(*stream, std::span<float>(got), runtime::DeviceSpan<float>(*dy)));
  PG_REQUIRE_OK(stream->synchronize());
  size_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) wrong += got[i] != 2.0f * float(i) + 1.0f;
  CHECK(wrong == 0);
  CHECK((*k)->counters().driver_calls == 1);
}

TEST_CASE("guard: a typed buffer binds only to its element type; the byte view is the explicit escape") {
  auto k = compile_example("saxpy");
  const uint32_t n = 256;
  std::vector<double> wide(n, 1.0);
  std::vector<float> x(n, 1.0f), y(n, 0.0f);
  auto d64 = upload(wide);
  auto dx = upload(x), dy = upload(y);
  CHECK(d64.element_type() == ir::Type::f64);
  const auto before = k->counters().driver_calls;
  auto blocked = k->launch(LaunchConfig::linear(1, 256), {dy, d64, 1.0f, n});
  REQUIRE_FALSE(blocked);
  CHECK(first_code(blocked.error()) == diag::Code::buffer_element_type_mismatch);
  CHECK(k->counters().driver_calls == before);
  // Untyped memory of the right contents binds: the launch computes y = 3 * x + y.
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(1, 256), {dy, runtime::as_bytes(dx), 3.0f, n}));
  PG_REQUIRE_OK(gpu_runtime().synchronize());
  auto wrong_view = gpu_runtime().download<double>(dy);
  REQUIRE_FALSE(wrong_view);
  CHECK(first_code(wrong_view.error()) == diag::Code::view_type_mismatch);
  auto got = download<float>(dy);
  CHECK(std::count(got.begin(), got.end(), 3.0f) == n);
}

TEST_CASE("guard: a buffer and a stream of another context are blocked before the driver") {
  auto other = second_runtime(contract::StreamPolicy::allow_legacy_default);
  auto k = compile_example("saxpy");
  const uint32_t n = 256;
  std::vector<float> x(n, 1.0f);
  auto mine = upload(x);
  auto theirs = other->upload(std::span<const float>(x));
  if (!theirs) FAIL(diag::render_text(theirs.error()));
  const auto before = k->counters().driver_calls;
  auto blocked = k->launch(LaunchConfig::linear(1, 256), {mine, *theirs, 1.0f, n});
  REQUIRE_FALSE(blocked);
  CHECK(first_code(blocked.error()) == diag::Code::foreign_object);
  auto stream = other->create_stream();
  if (!stream) FAIL(diag::render_text(stream.error()));
  auto on_foreign = k->launch(LaunchConfig::linear(1, 256), {mine, mine, 1.0f, n}, &*stream);
  REQUIRE_FALSE(on_foreign);
  CHECK(first_code(on_foreign.error()) == diag::Code::foreign_object);
  auto copy = runtime::copy_async(*stream, runtime::DeviceSpan<float>(mine), std::span<const float>(x));
  REQUIRE_FALSE(copy);
  CHECK(first_code(copy.error()) == diag::Code::foreign_object);
  CHECK(k->counters().driver_calls == before);
}
