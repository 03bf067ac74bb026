// Hopper (sm_90a) on the GPU: a TMA copy of a tile at the tensor-map limits checked element by element
// (boxes starting on 16-byte boundaries of the rows, inside and partly outside the tensor),
// mbarrier phases, one warpgroup MMA (TMA + 128B swizzle + descriptors + wgmma) against a CPU reference,
// and the bf16 GEMM of bench/kernels/gemm_bf16_wgmma.pg against an f32 reference. Other devices: each case
// says why it does not run.
#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "ptxgate/runtime/tensor_map.hpp"
#include "ptxgate/validation/tensor_map.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;
using runtime::LaunchConfig;
using validation::TensorMapDesc;

namespace {

/// True on an sm_90 device (H100, H200); otherwise the case is skipped with the reason.
bool hopper_device() {
  const auto& caps = gpu_runtime().context().caps();
  if (caps.cc_major == 9 && caps.cc_minor == 0) return true;
  skip_case("device is sm_" + std::to_string(caps.cc_major) + std::to_string(caps.cc_minor) +
            ": mbarrier, TMA and wgmma need sm_90a");
  return false;
}

std::shared_ptr<runtime::Kernel> compile_hopper(const std::string& text, const std::string& kernel) {
  auto k = gpu_runtime().compile(text, kernel, kernel + ".pg");
  if (!k) FAIL(diag::render_text(k.error()));
  return *k;
}

runtime::TensorMap encode(const runtime::DeviceBuffer& buffer, TensorMapDesc d) {
  auto map = runtime::encode_tensor_map(buffer, 0, std::move(d));
  if (!map) FAIL(diag::render_text(map.error()));
  return *map;
}

uint16_t bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
float bf16_value(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

std::vector<uint16_t> random_bf16(size_t n, uint64_t seed) {
  auto f = random_values<float>(n, -1.0, 1.0, seed);
  std::vector<uint16_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = bf16_bits(f[i]);
  return out;
}

/// A K-major bf16 operand of `rows` rows of `k` elements, boxes of 64 x `box_rows`, 128B swizzle.
TensorMapDesc bf16_operand(uint32_t rows, uint32_t k, uint32_t box_rows) {
  TensorMapDesc d;
  d.type = validation::TmaType::bf16;
  d.dims = {k, rows};
  d.strides = {uint64_t{k} * 2};
  d.box = {64, box_rows};
  d.swizzle = validation::TmaSwizzle::b128;
  return d;
}

// A box at the validation limits: 256 rows (the largest box dimension) of 4 f32 (16 bytes, the smallest
// inner box), no swizzle; the destination aligned to 128 bytes at run time. The innermost start coordinate
// x0 must be a multiple of 16 bytes (4 f32): on an H100 x0 = 1, 2, 38 or -2 raises an illegal instruction
// (CUDA C++ compiled by nvcc too), 0, 4, 36 and -4 work (docs/ir.md "TMA copies"; PG1360 for constants).
const char* kTmaTile = R"(
@workgroup(256)
kernel tma_tile(out y: f32[], m: tensor_map, x0: i32, y0: i32) {
  shared bars: u64[1];
  shared tile: f32[1056];
  let pad = ((128 - shared_address(tile, 0) % 128) % 128) / 4;
  if (thread_id.x == 0) {
    mbarrier_init(bars, 0, 1);
    fence_proxy_async();
  }
  barrier();
  if (thread_id.x == 0) {
    mbarrier_arrive_expect_tx(bars, 0, 4096);
    tma_load(tile, pad, m, bars, 0, x0, y0);
  }
  mbarrier_wait(bars, 0, 0);
  for e in 0..4 {
    y[thread_id.x * 4 + e] = tile[pad + thread_id.x * 4 + e];
  }
}
)";

// Every thread arrives, waits for phase 0, then tests both parities: 0 has completed, 1 (the current
// phase) has not. (A try_wait before the thread's own arrival is not tested: on an H100 it returns true
// there, for nvcc's PTX as well as ptxgate's, while test_wait returns false.)
const char* kMbarrier = R"(
@workgroup(128)
kernel phases(out y: u32[]) {
  shared bars: u64[1];
  if (thread_id.x == 0) {
    mbarrier_init(bars, 0, 128);
    fence_proxy_async();
  }
  barrier();
  mbarrier_arrive(bars, 0);
  mbarrier_wait(bars, 0, 0);
  let done = mbarrier_try_wait(bars, 0, 0);
  let next = mbarrier_try_wait(bars, 0, 1);
  var bits: u32 = 0;
  if (done) { bits = bits + 2; }
  if (next) { bits = bits + 1; }
  y[thread_id.x] = bits;
  barrier();
  if (thread_id.x == 0) {
    mbarrier_inval(bars, 0);
  }
}
)";

// d (64 x 256 f32) = a (64 x 64) * b^T (b: 256 x 64), both loaded by TMA with the 128B swizzle, four
// m64n256k16 MMAs along k; every accumulator written to its row and column.
const char* kOneWgmma = R"(
@workgroup(128)
kernel one_wgmma(out d: f32[], a: tensor_map, b: tensor_map) {
  shared bars: u64[1];
  shared tiles: bf16[];
  let base = ((1024 - shared_address(tiles, 0) % 1024) % 1024) / 2;
  if (thread_id.x == 0) {
    mbarrier_init(bars, 0, 1);
    fence_proxy_async();
  }
  barrier();
  if (thread_id.x == 0) {
    mbarrier_arrive_expect_tx(bars, 0, 40960);
    tma_load(tiles, base, a, bars, 0, 0, 0);
    tma_load(tiles, base + 4096, b, bars, 0, 0, 0);
  }
  mbarrier_wait(bars, 0, 0);
  var acc: f32[128];
  wgmma_fence();
  wgmma_bf16(acc, wgmma_desc(tiles, base), wgmma_desc(tiles, base + 4096), false);
  for kk in 1..4 {
    wgmma_bf16(acc, wgmma_desc(tiles, base + kk * 16), wgmma_desc(tiles, base + 4096 + kk * 16), true);
  }
  wgmma_commit();
  wgmma_wait(0);
  let row = warp_id * 16 + lane_id / 4;
  for i in 0..128 {
    let r = row + 8 * ((i / 2) % 2);
    let c = 8 * (i / 4) + 2 * (lane_id % 4) + i % 2;
    d[r * 256 + c] = acc[i];
  }
}
)";

std::filesystem::path bench_kernel(const std::string& name) {
  if (const char* dir = std::getenv("PTXGATE_BENCH_KERNELS_DIR")) return std::filesystem::path(dir) / name;
  if (std::filesystem::exists("bench/kernels/" + name)) return std::filesystem::path("bench/kernels") / name;
  return std::filesystem::path(PTXGATE_SOURCE_DIR) / "bench/kernels" / name;
}

}  // namespace

TEST_CASE("hopper: a TMA load of a 4 x 256 f32 box (the limits) lands element by element, zeros outside") {
  // Boxes inside, partly below and above the tensor, wholly left and right of it; x0 always 16-byte aligned.
  // The same kernel also as foreign PTX (its map parameter `.param .align 64 .b8 [128]`, as NVRTC declares one).
  if (!hopper_device()) return;
  auto compiled = compile_hopper(kTmaTile, "tma_tile");
  // ptxgate's PTX adds offsets to the loaded pointer without cvta.to.global, which the PTX reader does not
  // follow: the signature says that the first parameter is a buffer (and the map, whose 128 bytes it checks).
  auto foreign = gpu_runtime().load_foreign(compiled->entry().ptx, "tma_tile", "tma_tile.ptx", "f32[], tensor_map, i32, i32");
  if (!foreign) FAIL(diag::render_text(foreign.error()));
  const uint32_t width = 40, height = 300;  // 160-byte rows: a multiple of 16
  auto x = random_values<float>(size_t{width} * height, -1.0, 1.0, 11);
  auto dx = upload(x);
  const runtime::TensorMap map = f32_tile_map(dx, width, height, {4, 256});
  for (const auto& k : {compiled, *foreign})
  for (auto [x0, y0] : {std::pair{0, 0}, std::pair{36, 100}, std::pair{4, -100}, std::pair{-4, 8}, std::pair{40, 44}}) {
    auto dy = upload(std::vector<float>(1024, -7.0f));  // fresh per launch: no result is left from the one before
    PG_REQUIRE_OK(k->launch(LaunchConfig::linear(1, 256), {dy, map, int32_t(x0), int32_t(y0)}));
    PG_REQUIRE_OK(gpu_runtime().synchronize());
    auto got = download<float>(dy);
    std::vector<float> want(1024);
    for (int r = 0; r < 256; ++r)
      for (int c = 0; c < 4; ++c) {
        const int gx = x0 + c, gy = y0 + r;
        const bool inside = gx >= 0 && gy >= 0 && gx < int(width) && gy < int(height);
        want[r * 4 + c] = inside ? x[size_t(gy) * width + gx] : 0.0f;
      }
    CHECK_MESSAGE(mismatches(got, want, 0.0, 0.0, "tma tile") == 0,
                  (k == compiled ? "compiled" : "foreign PTX") << ", box at (" << x0 << ", " << y0 << ")");
  }
}

TEST_CASE("hopper: an mbarrier phase completes with its last arrival; try_wait tells the parities apart") {
  if (!hopper_device()) return;
  auto k = compile_hopper(kMbarrier, "phases");
  auto dy = upload(std::vector<uint32_t>(128, 99));
  PG_REQUIRE_OK(k->launch(LaunchConfig{}, {dy}));
  PG_REQUIRE_OK(gpu_runtime().synchronize());
  auto got = download<uint32_t>(dy);
  CHECK(mismatches(got, std::vector<uint32_t>(128, 2), 0.0, 0.0, "phase bits (2 done, 1 next)") == 0);
}

TEST_CASE("hopper: one warpgroup MMA (TMA, 128B swizzle, descriptors, wgmma m64n256k16) equals the CPU") {
  if (!hopper_device()) return;
  auto k = compile_hopper(kOneWgmma, "one_wgmma");
  auto a = random_bf16(64 * 64, 21), b = random_bf16(256 * 64, 22);
  auto da = upload(a), db = upload(b);
  auto ta = encode(da, bf16_operand(64, 64, 64)), tb = encode(db, bf16_operand(256, 64, 256));
  auto dd = upload(std::vector<float>(64 * 256, NAN));
  LaunchConfig config;
  config.dynamic_shared_bytes = (64 + 256) * 64 * 2 + 1024;
  PG_REQUIRE_OK(k->launch(config, {dd, ta, tb}));
  PG_REQUIRE_OK(gpu_runtime().synchronize());
  auto got = download<float>(dd);
  std::vector<double> want(64 * 256, 0.0);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 256; ++c)
      for (int kk = 0; kk < 64; ++kk)
        want[r * 256 + c] += double(bf16_value(a[r * 64 + kk])) * bf16_value(b[c * 64 + kk]);
  CHECK(mismatches(got, want, 1e-4, 1e-4, "wgmma d") == 0);
}

TEST_CASE("hopper: the bf16 GEMM of bench/kernels (wgmma + TMA, warp-specialised) equals an f32 reference") {
  if (!hopper_device()) return;
  const auto path = bench_kernel("gemm_bf16_wgmma.pg");
  const std::string text = read_text(path);
  if (text.empty()) FAIL("cannot read " << path.string() << " (set PTXGATE_BENCH_KERNELS_DIR)");
  auto k = compile_hopper(text, "gemm_bf16_wgmma");
  for (auto [m, n, kk] : {std::tuple{257u, 264u, 136u}, std::tuple{512u, 512u, 1024u}}) {
    auto a = random_bf16(size_t{m} * kk, 31), b = random_bf16(size_t{n} * kk, 32);
    auto da = upload(a), db = upload(b);
    auto ta = encode(da, bf16_operand(m, kk, 128)), tb = encode(db, bf16_operand(n, kk, 256));
    auto dc = upload(std::vector<uint16_t>(size_t{m} * n, 0xFFFF));  // bf16 NaN: a missed element shows
    LaunchConfig config;
    config.grid = {(n + 255) / 256, (m + 127) / 128, 1};
    config.dynamic_shared_bytes = 4 * (128 + 256) * 64 * 2 + 1024;
    PG_REQUIRE_OK(k->launch(config, {runtime::Arg::buffer_range(dc, 0, dc.size_bytes(), ir::Type::bf16), ta, tb, m, n, kk}));
    PG_REQUIRE_OK(gpu_runtime().synchronize());
    auto bits = download<uint16_t>(dc);
    std::vector<float> got(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) got[i] = bf16_value(bits[i]);
    std::vector<double> want(size_t{m} * n, 0.0);
    for (size_t r = 0; r < m; ++r)
      for (size_t c = 0; c < n; ++c) {
        double s = 0;
        for (size_t x = 0; x < kk; ++x) s += double(bf16_value(a[r * kk + x])) * bf16_value(b[c * kk + x]);
        want[r * n + c] = s;
      }
    // bf16 output: at most half an ulp (2^-9 relative) from the exact product sum, plus f32 accumulation.
    CHECK_MESSAGE(mismatches(got, want, 1e-3, 1e-2, "gemm c") == 0, m << "x" << n << "x" << kk);
  }
}
