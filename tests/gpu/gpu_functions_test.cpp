// Device functions on the GPU: a kernel calling a small function (inlined), a void function with
// a buffer parameter, a large function called twice (kept as a PTX .func) and a function with a
// warp reduction, compared with a host reference.
#include <algorithm>
#include <string>

#include "gpu_support.hpp"
#include "ptxgate/codegen/codegen.hpp"
#include "ptxgate/ir/frontend.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;
using runtime::LaunchConfig;

namespace {

constexpr int kMixRounds = 150;

/// The text of `heavy`: kMixRounds rounds of multiply, add and xor-shift over x, far above
/// LLVM's inlining threshold for NVPTX, so the two calls share one .func.
std::string heavy_function() {
  std::string text = "fn heavy(in x: u32[], n: u32, i: u32) -> u32 {\n  var h: u32 = i;\n";
  for (int r = 0; r < kMixRounds; ++r)
    text += "  h = (h * 2654435761 + x[(i + " + std::to_string(r) + ") % n]) ^ (h >> " +
            std::to_string(r % 13 + 3) + ");\n";
  return text + "  return h;\n}\n";
}

uint32_t heavy_reference(const std::vector<uint32_t>& x, uint32_t n, uint32_t i) {
  uint32_t h = i;
  for (int r = 0; r < kMixRounds; ++r)
    h = (h * 2654435761u + x[(i + static_cast<uint32_t>(r)) % n]) ^ (h >> (r % 13 + 3));
  return h;
}

std::string module_text() {
  return heavy_function() + R"(
fn square(v: f32) -> f32 {
  return v * v;
}

fn add_into(inout acc: f32[], i: u32, v: f32) {
  acc[i] = acc[i] + v;
}

fn warp_total(v: f32) -> f32 {
  return warp_sum(v);
}

@workgroup(64)
kernel functions(in x: f32[], inout y: f32[], in u: u32[], out z: u32[], out w: f32[], n: u32) {
  let i = global_id.x;
  var v = 0.0;
  if (i < n) {
    v = x[i];
  }
  let total = warp_total(v);
  if (i < n) {
    add_into(y, i, square(x[i]));
    z[i] = heavy(u, n, i) + heavy(u, n, i + 1);
    w[i] = total;
  }
}
)";
}

}  // namespace

TEST_CASE("functions: inlined, buffer-passing, void, non-inlined and warp functions equal the host reference") {
  const std::string text = module_text();
  auto loaded = ir::load_module(diag::SourceFile("functions.pg", text));
  if (!loaded) FAIL(diag::render_text(loaded.error()));
  auto compiled = codegen::compile(loaded->module, {});
  if (!compiled) FAIL(diag::render_text(compiled.error()));
  CHECK(compiled->ptx.find(".func") != std::string::npos);  // heavy stays a function, called twice
  auto k = gpu_runtime().compile(text, "functions", "functions.pg");
  if (!k) FAIL(diag::render_text(k.error()));

  const uint32_t n = 200;  // not a multiple of the block: the last block has idle threads
  std::vector<float> x(n), y(n);
  std::vector<uint32_t> u(n);
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 17) - 8.0f;  // small integers: every sum and product is exact
    y[i] = static_cast<float>(i % 5);
    u[i] = i * 7919u + 13u;
  }
  std::vector<uint32_t> z(n, 0);
  std::vector<float> w(n, 0.0f);
  auto dx = upload(x), dy = upload(y), du = upload(u), dz = upload(z), dw = upload(w);
  PG_REQUIRE_OK((*k)->launch(LaunchConfig::linear((n + 63) / 64, 64), {dx, dy, du, dz, dw, n}));
  PG_REQUIRE_OK(gpu_runtime().synchronize());
  auto got_y = download<float>(dy);
  auto got_z = download<uint32_t>(dz);
  auto got_w = download<float>(dw);
  for (uint32_t i = 0; i < n; ++i) {
    CAPTURE(i);
    CHECK(got_y[i] == y[i] + x[i] * x[i]);
    CHECK(got_z[i] == heavy_reference(u, n, i) + heavy_reference(u, n, i + 1));
    float warp = 0.0f;
    for (uint32_t j = i / 32 * 32; j < i / 32 * 32 + 32; ++j) warp += j < n ? x[j] : 0.0f;
    CHECK(got_w[i] == warp);
  }
}

TEST_CASE("example smooth: a kernel written with device functions equals the host reference") {
  auto k = compile_example("smooth");
  const uint32_t n = 1000;
  std::vector<float> x(n), y(n, -1.0f);
  for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 37) % 101) * 0.25f;
  auto dy = upload(y), dx = upload(x);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear((n + 255) / 256, 256), {dy, dx, n}));
  PG_REQUIRE_OK(gpu_runtime().synchronize());
  auto got = download<float>(dy);
  for (uint32_t i = 0; i < n; ++i) {
    CAPTURE(i);
    double sum = 0.0, total = 0.0;
    for (int offset = -2; offset <= 2; ++offset) {
      const int64_t j = std::clamp<int64_t>(static_cast<int64_t>(i) + offset, 0, n - 1);
      const double w = 1.0 / (1.0 + offset * offset);
      sum += w * x[static_cast<size_t>(j)];
      total += w;
    }
    CHECK(got[i] == doctest::Approx(sum / total).epsilon(1e-5));
  }
}
