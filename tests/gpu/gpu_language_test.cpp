// The language's defined results (docs/ir.md "Results of every operation") and its warp
// operations, run on the GPU with run-time operands (nothing folds) against host references.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include "gpu_support.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;
using runtime::LaunchConfig;

namespace ptxgate::gpu_test {
std::string run_fault_child(const char* mode);  // gpu_programs_test.cpp
}  // namespace ptxgate::gpu_test

namespace {

std::shared_ptr<runtime::Kernel> compile_source(const std::string& text, const std::string& kernel) {
  auto k = gpu_runtime().compile(text, kernel, kernel + ".pg");
  if (!k) FAIL(diag::render_text(k.error()));
  return *k;
}

void device_sync() { PG_REQUIRE_OK(gpu_runtime().synchronize()); }


// Host references of the documented semantics.
int32_t div_i32(int32_t a, int32_t b) {
  if (b == 0) return -1;
  if (a == INT32_MIN && b == -1) return INT32_MIN;
  return a / b;
}
int32_t rem_i32(int32_t a, int32_t b) {
  if (b == 0) return a;
  if (a == INT32_MIN && b == -1) return 0;
  return a % b;
}
uint32_t div_u32(uint32_t a, uint32_t b) { return b == 0 ? UINT32_MAX : a / b; }
uint32_t rem_u32(uint32_t a, uint32_t b) { return b == 0 ? a : a % b; }
int32_t f32_to_i32(float f) {
  if (std::isnan(f)) return 0;
  if (f >= 2147483648.0f) return INT32_MAX;
  if (f <= -2147483648.0f) return INT32_MIN;
  return static_cast<int32_t>(f);
}
uint32_t f32_to_u32(float f) {
  if (std::isnan(f) || f <= 0.0f) return 0;
  if (f >= 4294967296.0f) return UINT32_MAX;
  return static_cast<uint32_t>(f);
}

const char* kArithmetic = R"(
kernel arithmetic(out r: i32[], out q: u32[], in a: i32[], in b: i32[], in f: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) {
    let x = a[i];
    let y = b[i];
    r[8 * i] = x / y;
    r[8 * i + 1] = x % y;
    r[8 * i + 2] = x << y;
    r[8 * i + 3] = x >> y;
    r[8 * i + 4] = i32(f[i]);
    var count: i32 = 0;
    for k in 0..8 step u32(y & 3) { count = count + 1; }
    r[8 * i + 5] = count;
    r[8 * i + 6] = abs(x);
    r[8 * i + 7] = -x;
    let ux = u32(x);
    let uy = u32(y);
    q[4 * i] = ux / uy;
    q[4 * i + 1] = ux % uy;
    q[4 * i + 2] = ux >> uy;
    q[4 * i + 3] = u32(f[i]);
  }
}
)";

}  // namespace

TEST_CASE("language: every integer and conversion edge case has its documented value at run time") {
  auto k = compile_source(kArithmetic, "arithmetic");
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<int32_t> a = {INT32_MIN, INT32_MIN, 7, -7, 7, 0, INT32_MAX, -1, 12345, INT32_MIN, 5, -9};
  std::vector<int32_t> b = {-1, 0, 0, 2, -1, 0, 1, 33, -40, 31, 32, 64};
  std::vector<float> f = {nan, inf, -inf, 3e9f, -3e9f, -2.75f, 2.75f, 4294967296.0f, -0.5f, 1e-3f, 65536.5f, 0.0f};
  const uint32_t n = static_cast<uint32_t>(a.size());
  std::vector<int32_t> r(8 * n, 0);
  std::vector<uint32_t> q(4 * n, 0);
  auto dr = upload(r), dq = upload(q), da = upload(a), db = upload(b), df = upload(f);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(1, 64), {dr, dq, da, db, df, n}));
  device_sync();
  auto got_r = download<int32_t>(dr);
  auto got_q = download<uint32_t>(dq);
  for (uint32_t i = 0; i < n; ++i) {
    CAPTURE(i);
    const int32_t x = a[i], y = b[i];
    const uint32_t ux = static_cast<uint32_t>(x), uy = static_cast<uint32_t>(y);
    CHECK(got_r[8 * i] == div_i32(x, y));
    CHECK(got_r[8 * i + 1] == rem_i32(x, y));
    CHECK(got_r[8 * i + 2] == static_cast<int32_t>(ux << (uy & 31)));
    CHECK(got_r[8 * i + 3] == (x >> (y & 31)));
    CHECK(got_r[8 * i + 4] == f32_to_i32(f[i]));
    const uint32_t step = static_cast<uint32_t>(y & 3);
    const int32_t count = step == 0 ? 1 : static_cast<int32_t>((8 + step - 1) / step);
    CHECK(got_r[8 * i + 5] == count);
    CHECK(got_r[8 * i + 6] == (x == INT32_MIN ? INT32_MIN : std::abs(x)));
    CHECK(got_r[8 * i + 7] == static_cast<int32_t>(0u - ux));
    CHECK(got_q[4 * i] == div_u32(ux, uy));
    CHECK(got_q[4 * i + 1] == rem_u32(ux, uy));
    CHECK(got_q[4 * i + 2] == (ux >> (uy & 31)));
    CHECK(got_q[4 * i + 3] == f32_to_u32(f[i]));
  }
}

TEST_CASE("language: warp shuffles, votes and reductions equal the host reference") {
  auto k = compile_source(R"(
@workgroup(64)
kernel warps(out o: u32[], out s: f32[], out m: i64[], in x: u32[], in v: f32[], in w: i64[]) {
  let i = global_id.x;
  let xv = x[i];
  o[8 * i] = shfl_xor(xv, 5);
  o[8 * i + 1] = shfl_down(xv, 3);
  o[8 * i + 2] = shfl_up(xv, 35);
  o[8 * i + 3] = shfl_idx(xv, xv);
  o[8 * i + 4] = ballot(xv % 3 == 0);
  o[8 * i + 5] = u32(any(xv == 7)) + 2 * u32(all(xv < 1000000));
  o[8 * i + 6] = warp_max(xv);
  o[8 * i + 7] = lane_id + 100 * warp_id;
  s[i] = warp_sum(v[i]);
  m[2 * i] = warp_min(w[i]);
  m[2 * i + 1] = shfl_idx(w[i], 31);
}
)",
                          "warps");
  const uint32_t n = 128;  // two blocks of two warps
  std::vector<uint32_t> x(n);
  std::vector<float> v(n);
  std::vector<int64_t> w(n);
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = (i * 2654435761u) % 997u;
    v[i] = static_cast<float>(i % 17) * 0.25f - 1.0f;
    w[i] = (static_cast<int64_t>(i) - 60) * 4000000000LL;
  }
  std::vector<uint32_t> o(8 * n, 0);
  std::vector<float> s(n, 0);
  std::vector<int64_t> m(2 * n, 0);
  auto d_o = upload(o), d_s = upload(s), d_m = upload(m), d_x = upload(x), d_v = upload(v), d_w = upload(w);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(2, 64), {d_o, d_s, d_m, d_x, d_v, d_w}));
  device_sync();
  auto go = download<uint32_t>(d_o);
  auto gs = download<float>(d_s);
  auto gm = download<int64_t>(d_m);
  for (uint32_t i = 0; i < n; ++i) {
    CAPTURE(i);
    const uint32_t base = i & ~31u, lane = i & 31u;
    auto at = [&](uint32_t l) { return x[base + l]; };
    CHECK(go[8 * i] == at(lane ^ 5));
    CHECK(go[8 * i + 1] == (lane + 3 <= 31 ? at(lane + 3) : x[i]));
    CHECK(go[8 * i + 2] == (lane >= 3 ? at(lane - 3) : x[i]));  // 35 counts as 3
    CHECK(go[8 * i + 3] == at(x[i] % 32));
    uint32_t ballot = 0, any7 = 0, all_small = 1, max = 0;
    double sum = 0;
    int64_t min = INT64_MAX;
    for (uint32_t l = 0; l < 32; ++l) {
      if (at(l) % 3 == 0) ballot |= 1u << l;
      any7 |= at(l) == 7;
      all_small &= at(l) < 1000000;
      max = std::max(max, at(l));
      sum += v[base + l];
      min = std::min(min, w[base + l]);
    }
    CHECK(go[8 * i + 4] == ballot);
    CHECK(go[8 * i + 5] == any7 + 2 * all_small);
    CHECK(go[8 * i + 6] == max);
    CHECK(go[8 * i + 7] == lane + 100 * ((i % 64) / 32));
    CHECK(gs[i] == doctest::Approx(sum).epsilon(1e-6));
    CHECK(gs[i] == gs[base]);  // every lane gets the same bits
    CHECK(gm[2 * i] == min);
    CHECK(gm[2 * i + 1] == w[base + 31]);
  }
}

TEST_CASE("language: contract, exact and fast floating-point modes, and the added math functions") {
  // a * b + c where the fused and the separately rounded results differ: a = 1 + 2^-12,
  // a * a = 1 + 2^-11 + 2^-24 (the 2^-24 is lost when the product is rounded on its own).
  const char* text = R"(
kernel fp(out r: f32[], in a: f32[], in x: f32[], in d: f64[], out e: f64[], n: u32) {
  let i = global_id.x;
  if (i < n) {
    r[8 * i] = a[i] * a[i] - 1.0;
    r[8 * i + 1] = exp2(x[i]);
    r[8 * i + 2] = log2(x[i] + 5.0);
    r[8 * i + 3] = erf(x[i]);
    r[8 * i + 4] = atan2(x[i], 0.5);
    r[8 * i + 5] = tan(x[i] * 0.25) + asin(x[i] * 0.1) + acos(x[i] * 0.1) + atan(x[i]);
    r[8 * i + 6] = sinh(x[i] * 0.5) + cosh(x[i] * 0.5) + log10(x[i] + 5.0);
    r[8 * i + 7] = x[i] / 3.0;
    e[i] = atan2(d[i], 2.0) + erf(d[i]);
  }
}
)";
  const uint32_t n = 64;
  std::vector<float> a(n, 1.0f + 1.0f / 4096.0f), x(n);
  std::vector<double> d(n);
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = -4.0f + 8.0f * static_cast<float>(i) / n;
    d[i] = -3.0 + 6.0 * i / n;
  }
  for (ir::FpMode mode : {ir::FpMode::contract, ir::FpMode::exact, ir::FpMode::fast}) {
    CAPTURE(ir::fp_mode_name(mode));
    runtime::RuntimeOptions options;
    options.fp_mode = mode;
    auto rt = runtime::Runtime::create(options);
    if (!rt) FAIL(diag::render_text(rt.error()));
    auto k = (*rt)->compile(text, "fp", "fp.pg");
    if (!k) FAIL(diag::render_text(k.error()));
    auto r = (*rt)->upload(std::span<const float>(std::vector<float>(8 * n, 0.0f)));
    auto e = (*rt)->upload(std::span<const double>(std::vector<double>(n, 0.0)));
    auto a2 = (*rt)->upload(std::span<const float>(a));
    auto x2 = (*rt)->upload(std::span<const float>(x));
    auto d2 = (*rt)->upload(std::span<const double>(d));
    REQUIRE((r && e && a2 && x2 && d2));
    PG_REQUIRE_OK((*k)->launch(LaunchConfig::linear(1, 64), {*r, *a2, *x2, *d2, *e, n}));
    PG_REQUIRE_OK((*rt)->synchronize());
    auto got = (*rt)->download<float>(*r);
    auto got_e = (*rt)->download<double>(*e);
    REQUIRE((got && got_e));
    const float fused = std::fmaf(a[0], a[0], -1.0f), separate = a[0] * a[0] - 1.0f;
    REQUIRE(fused != separate);
    const double tolerance = mode == ir::FpMode::fast ? 1e-4 : 2e-6;
    for (uint32_t i = 0; i < n; ++i) {
      CAPTURE(i);
      const float* g = &(*got)[8 * i];
      CHECK(g[0] == (mode == ir::FpMode::exact ? separate : fused));
      const double xi = x[i];
      CHECK(g[1] == doctest::Approx(std::exp2(xi)).epsilon(tolerance));
      CHECK(g[2] == doctest::Approx(std::log2(xi + 5.0)).epsilon(tolerance).scale(1));
      CHECK(g[3] == doctest::Approx(std::erf(xi)).epsilon(tolerance).scale(1));
      CHECK(g[4] == doctest::Approx(std::atan2(xi, 0.5)).epsilon(tolerance).scale(1));
      CHECK(g[5] == doctest::Approx(std::tan(xi * 0.25) + std::asin(xi * 0.1) + std::acos(xi * 0.1) + std::atan(xi))
                         .epsilon(tolerance)
                         .scale(1));
      CHECK(g[6] == doctest::Approx(std::sinh(xi * 0.5) + std::cosh(xi * 0.5) + std::log10(xi + 5.0))
                         .epsilon(tolerance)
                         .scale(1));
      if (mode != ir::FpMode::fast) CHECK(g[7] == x[i] / 3.0f);  // IEEE division: correctly rounded
      CHECK(g[7] == doctest::Approx(xi / 3.0).epsilon(1e-6).scale(1));
      CHECK((*got_e)[i] == doctest::Approx(std::atan2(d[i], 2.0) + std::erf(d[i])).epsilon(1e-12).scale(1));
    }
  }
}

TEST_CASE("language: release/acquire atomics and fences pass data between blocks") {
  // Block 0 writes a payload and publishes a flag with a release; the other blocks spin on the
  // flag with acquire loads and must then see the whole payload. Blocks are co-resident: the grid
  // is small (8 blocks of 64 threads) on any device this runs on.
  auto k = compile_source(R"(
@workgroup(64)
kernel pass(inout payload: u32[], inout flag: u32[], out seen: u32[], inout counter: u32[]) {
  let t = thread_id.x;
  let producer = block_id.x == 0;
  if (producer) {
    payload[t] = t * 7 + 1;
  }
  barrier();
  if (producer && t == 0) {
    fence_device();
    atomic_exch(flag, 0, 1, release, device);
  }
  if (!producer && t == 0) {
    var f: u32 = 0;
    while (f == 0) {
      f = atomic_add(flag, 0, 0, acquire, device);
    }
  }
  barrier();
  fence_device();
  if (!producer) {
    seen[(block_id.x - 1) * 64 + t] = payload[t];
  }
  atomic_add(counter, 0, 1, relaxed, block);
  atomic_add(counter, 1, 1, acq_rel, system);
}
)",
                          "pass");
  const uint32_t blocks = 8;
  auto payload = upload(std::vector<uint32_t>(64, 0)), flag = upload(std::vector<uint32_t>(1, 0));
  auto seen = upload(std::vector<uint32_t>(64 * (blocks - 1), 0)), counter = upload(std::vector<uint32_t>(2, 0));
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(blocks, 64), {payload, flag, seen, counter}));
  device_sync();
  auto got = download<uint32_t>(seen);
  for (uint32_t i = 0; i < got.size(); ++i) CHECK(got[i] == (i % 64) * 7 + 1);
  auto c = download<uint32_t>(counter);
  CHECK(c[0] == 64 * blocks);
  CHECK(c[1] == 64 * blocks);
}

TEST_CASE("language: a failed assert() is reported with its kernel, and the driver prints the condition") {
  const std::string out = run_fault_child("assert");
  INFO(out);
  CHECK(out.find("PG4050") != std::string::npos);
  CHECK(out.find("kernel 'guarded'") != std::string::npos);
  CHECK(out.find("failed a device assert()") != std::string::npos);
  CHECK(out.find("i < n") != std::string::npos);         // the condition as written, printed by the driver
  CHECK(out.find("assert.pg:") != std::string::npos);     // and its file
  CHECK(out.find("child exit 0") != std::string::npos);
}

TEST_CASE("example warp_reduce") {
  auto k = compile_example("warp_reduce");
  for (uint32_t n : {1u, 31u, 33u, 256u, 1000u, 100003u, (1u << 22) + 7}) {
    CAPTURE(n);
    auto x = random_values<float>(n, -1, 1, 11 * n);
    std::vector<float> total{0.0f};
    auto dt = upload(total), dx = upload(x);
    const uint64_t blocks = std::min<uint64_t>((n + 255) / 256, 528);
    PG_REQUIRE_OK(k->launch(LaunchConfig::linear(blocks, 256), {dt, dx, n}));
    device_sync();
    double want = 0, magnitude = 0;
    for (float v : x) want += v, magnitude += std::fabs(v);
    std::vector<double> expected{want};
    CHECK(mismatches(download<float>(dt), expected, 1e-6 * magnitude + 1e-6, 0, "total") == 0);
  }
}
