// Vector loads and stores (f32x4, f16x8) and local arrays on the GPU against host references, and
// the alignment check in front of the real driver.
#include <cstdint>
#include <cstring>

#include "gpu_support.hpp"
#include "ptxgate/runtime/stream_ops.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;
using runtime::LaunchConfig;

namespace {

std::shared_ptr<runtime::Kernel> compile_source(const std::string& text, const std::string& kernel) {
  auto k = gpu_runtime().compile(text, kernel, kernel + ".pg");
  if (!k) FAIL(diag::render_text(k.error()));
  return *k;
}

void device_sync() { PG_REQUIRE_OK(gpu_runtime().synchronize()); }

const char* kScale4 = R"(
@workgroup(256)
kernel scale4(out y: f32[], in x: f32[], a: f32, n4: u32) {
  let i = global_id.x;
  if (i < n4) {
    let v = load4(x, i);
    store4(y, i, v * f32x4(a) + f32x4(0.0, 1.0, 2.0, 3.0));
  }
}
)";

// Each group of 8 halves reversed (bit-exact), and each half doubled (f16 arithmetic).
const char* kHalf8 = R"(
@workgroup(128)
kernel half8(out r: f16[], out d: f16[], in x: f16[], n8: u32) {
  let i = global_id.x;
  if (i < n8) {
    let v = load8(x, i);
    store8(r, i, f16x8(v[7], v[6], v[5], v[4], v[3], v[2], v[1], v[0]));
    store8(d, i, v + v);
  }
}
)";

// A local array indexed by constants after unrolling (registers) and one indexed at run time
// (local memory), with the same sums.
const char* kLocal = R"(
@workgroup(128)
kernel local_sums(out y: f32[], out z: f32[], in x: f32[], shift: u32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    var a: f32[16];
    for k in 0..16 {
      a[k] = x[16 * i + k];
    }
    var s = 0.0;
    for k in 0..16 {
      s = s + a[k] * f32(k + 1);
    }
    y[i] = s;
    var t = 0.0;
    for k in 0..16 {
      t = t + a[(k + shift) % 16];
    }
    z[i] = t;
  }
}
)";

}  // namespace

TEST_CASE("vector: load4/store4 of f32 (ld.global.v4) equal the host reference; a misaligned view is PG3011") {
  auto k = compile_source(kScale4, "scale4");
  const uint32_t n4 = 1u << 16;
  auto x = random_values<float>(4 * n4, -10.0, 10.0, 7);
  std::vector<float> y(4 * n4, 0.0f);
  auto dy = upload(y), dx = upload(x);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(n4 / 256, 256), {dy, dx, 2.5f, n4}));
  device_sync();
  auto got = download<float>(dy);
  std::vector<float> want(4 * n4);
  for (size_t e = 0; e < want.size(); ++e) want[e] = x[e] * 2.5f + static_cast<float>(e % 4);
  CHECK(mismatches(got, want, 1e-5, 1e-6, "scale4") == 0);

  const uint64_t bytes = (4 * n4 - 4) * sizeof(float);
  auto view = runtime::Arg::buffer_range(dx, 4, bytes, ir::Type::f32);
  auto blocked = k->launch(LaunchConfig::linear(1, 256), {dy, view, 2.5f, n4 - 1});
  REQUIRE_FALSE(blocked);
  CHECK(blocked.error().items().front().code == diag::Code::misaligned_buffer);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(1, 256),
                          {dy, runtime::Arg::buffer_range(dx, 16, bytes - 12, ir::Type::f32), 2.5f, n4 - 1}));
  device_sync();
}

TEST_CASE("vector: load8/store8 of f16 move 16 bytes per thread; lanes and f16x8 arithmetic are exact") {
  auto k = compile_source(kHalf8, "half8");
  const uint32_t n8 = 1u << 14;
  std::mt19937 rng(11);
  std::vector<uint16_t> x(8 * n8);
  for (auto& h : x) {
    const uint16_t sign = static_cast<uint16_t>(rng() & 1) << 15;
    const uint16_t exponent = static_cast<uint16_t>(1 + rng() % 20) << 10;  // normal, doubling stays finite
    h = static_cast<uint16_t>(sign | exponent | (rng() & 0x3ff));
  }
  std::vector<uint16_t> zeros(8 * n8, 0);
  auto dr = upload(zeros), dd = upload(zeros), dx = upload(x);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(n8 / 128, 128),
                          {runtime::as_bytes(dr), runtime::as_bytes(dd), runtime::as_bytes(dx), n8}));
  device_sync();
  auto reversed = download<uint16_t>(dr);
  auto doubled = download<uint16_t>(dd);
  size_t bad = 0;
  for (size_t e = 0; e < x.size(); ++e) {
    const size_t group = e / 8 * 8, lane = e % 8;
    if (reversed[e] != x[group + 7 - lane]) ++bad;
    if (doubled[e] != static_cast<uint16_t>(x[e] + 0x0400)) ++bad;  // 2x: the exponent field + 1
  }
  CHECK(bad == 0);
}

TEST_CASE("local arrays: register and local-memory arrays give the host's sums") {
  auto k = compile_source(kLocal, "local_sums");
  const uint32_t n = 4096, shift = 5;
  auto x = random_values<float>(16 * n, -1.0, 1.0, 3);
  std::vector<float> y(n, 0.0f), z(n, 0.0f);
  auto dy = upload(y), dz = upload(z), dx = upload(x);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(n / 128, 128), {dy, dz, dx, shift, n}));
  device_sync();
  auto got_y = download<float>(dy);
  auto got_z = download<float>(dz);
  std::vector<float> want_y(n), want_z(n);
  for (uint32_t i = 0; i < n; ++i) {
    float s = 0.0f, t = 0.0f;
    for (uint32_t k2 = 0; k2 < 16; ++k2) s += x[16 * i + k2] * static_cast<float>(k2 + 1);
    for (uint32_t k2 = 0; k2 < 16; ++k2) t += x[16 * i + (k2 + shift) % 16];
    want_y[i] = s;
    want_z[i] = t;
  }
  CHECK(mismatches(got_y, want_y, 1e-4, 1e-5, "register array") == 0);
  CHECK(mismatches(got_z, want_z, 1e-4, 1e-5, "local-memory array") == 0);
}
