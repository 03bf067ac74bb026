// Tensor cores on the GPU (sm_80+): mma.sync with fragments built by the documented layout (docs/ir.md
// "Tensor cores"), checked element by element against the host; ldmatrix with and without .trans from
// arbitrary row addresses; cp.async with commit/wait groups and zero fill; tf32 rounding; and the bf16
// GEMM of bench/kernels/gemm_bf16_mma.pg against an f32 reference on sizes that are not multiples of its tile.
#include <bit>
#include <cstdint>
#include <cstring>

#include "gpu_support.hpp"
#include "ptxgate/runtime/stream_ops.hpp"

using namespace ptxgate;
using namespace ptxgate::gpu_test;
using runtime::LaunchConfig;

namespace {

/// True (the case skipped with the reason) when the device has no tensor-core operations of sm_80.
bool before_sm80() {
  const auto& caps = gpu_runtime().caps();
  if (caps.cc_major >= 8) return false;
  skip_case("device " + caps.name + " is sm_" + std::to_string(caps.cc_major) + std::to_string(caps.cc_minor) +
            ": mma.sync, ldmatrix and cp.async need sm_80");
  return true;
}

std::shared_ptr<runtime::Kernel> compile_source(const std::string& text, const std::string& kernel) {
  auto k = gpu_runtime().compile(text, kernel, kernel + ".pg");
  if (!k) FAIL(diag::render_text(k.error()));
  return *k;
}

void device_sync() { PG_REQUIRE_OK(gpu_runtime().synchronize()); }

/// bf16 / f16 bits of a float that either type holds exactly (the small integers of these tests).
uint16_t bf16_bits(float f) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16); }
uint16_t f16_bits(float f) {
  if (f == 0.0f) return 0;
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u, exponent = ((x >> 23) & 0xFFu) - 127 + 15, mantissa = (x >> 13) & 0x3FFu;
  return static_cast<uint16_t>(sign | (exponent << 10) | mantissa);
}

/// Small integers (exact in every input type, and their products and sums exact in f32).
std::vector<float> small_integers(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(static_cast<int>(rng() % 9) - 4);
  return v;
}

// Each lane builds its A, B and C fragments from row-major matrices exactly as docs/ir.md's table
// says (g = lane_id / 4, t = lane_id % 4) and writes D back by the same table: D equals A * B + C
// only if the table is the hardware's.
const char* kMmaK16 = R"(
@workgroup(32)
kernel mma_k16(out d: f32[], in a: ELEM[], in b: ELEM[], in c: f32[]) {
  let g = lane_id / 4;
  let t = lane_id % 4;
  let fa = ELEMx8(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1], a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1],
                  a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9], a[(g + 8) * 16 + 2 * t + 8],
                  a[(g + 8) * 16 + 2 * t + 9]);
  let fb = ELEMx4(b[2 * t * 8 + g], b[(2 * t + 1) * 8 + g], b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g]);
  let fc = f32x4(c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]);
  let r = mma_m16n8k16(fa, fb, fc);
  d[g * 8 + 2 * t] = r[0];
  d[g * 8 + 2 * t + 1] = r[1];
  d[(g + 8) * 8 + 2 * t] = r[2];
  d[(g + 8) * 8 + 2 * t + 1] = r[3];
}
)";

const char* kMmaK8 = R"(
@workgroup(32)
kernel mma_k8(out d: f32[], in a: f32[], in b: f32[], in c: f32[]) {
  let g = lane_id / 4;
  let t = lane_id % 4;
  let fa = f32x4(a[g * 8 + t], a[(g + 8) * 8 + t], a[g * 8 + t + 4], a[(g + 8) * 8 + t + 4]);
  let fb = f32x2(b[t * 8 + g], b[(t + 4) * 8 + g]);
  let fc = f32x4(c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]);
  let r = mma_m16n8k8(fa, fb, fc);
  d[g * 8 + 2 * t] = r[0];
  d[g * 8 + 2 * t + 1] = r[1];
  d[(g + 8) * 8 + 2 * t] = r[2];
  d[(g + 8) * 8 + 2 * t + 1] = r[3];
}

@workgroup(256)
kernel round_tf32(out y: f32[], in x: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) {
    y[i] = tf32(x[i]);
  }
}
)";

/// D = A * B + C on the host: A m x k, B k x n (row-major), C and D m x n.
std::vector<float> reference(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& c,
                             size_t m, size_t n, size_t k) {
  std::vector<float> d(c);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j)
      for (size_t p = 0; p < k; ++p) d[i * n + j] += a[i * k + p] * b[p * n + j];
  return d;
}

void check_mma_k16(bool bf16) {
  std::string text = kMmaK16;
  const std::string elem = bf16 ? "bf16" : "f16";
  for (size_t at; (at = text.find("ELEM")) != std::string::npos;) text.replace(at, 4, elem);
  auto k = compile_source(text, "mma_k16");
  auto a = small_integers(16 * 16, 1), b = small_integers(16 * 8, 2), c = small_integers(16 * 8, 3);
  std::vector<uint16_t> ha(a.size()), hb(b.size());
  for (size_t i = 0; i < a.size(); ++i) ha[i] = bf16 ? bf16_bits(a[i]) : f16_bits(a[i]);
  for (size_t i = 0; i < b.size(); ++i) hb[i] = bf16 ? bf16_bits(b[i]) : f16_bits(b[i]);
  auto dd = upload(std::vector<float>(16 * 8, -1.0f)), da = upload(ha), db = upload(hb), dc = upload(c);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(1, 32), {dd, runtime::as_bytes(da), runtime::as_bytes(db), dc}));
  device_sync();
  auto got = download<float>(dd);
  CHECK(mismatches(got, reference(a, b, c, 16, 8, 16), 0.0, 0.0, "mma_m16n8k16." + elem) == 0);
}

/// Bits of tf32(x) as cvt.rna.tf32.f32 gives them: nearest, ties away from zero, low 13 bits zero
/// (finite x whose rounding stays finite).
float tf32_reference(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  bits = (bits + 0x1000u) & ~0x1FFFu;
  return std::bit_cast<float>(bits);
}

// ldmatrix: lane L passes chunk (L * 7 + 3) % 32 of a 32-row tile of u16 (a permutation, so rows come
// from anywhere); the tile holds its own element indices, so every result lane names the element it
// read. Each lane writes its 2N result lanes to out[L * 8 ...].
const char* kLdmatrix = R"(
@workgroup(32)
kernel ldm(out y: u16[], in x: u16[]) {
  shared tile: u16[256];
  for i in 0..8 {
    tile[lane_id * 8 + i] = x[lane_id * 8 + i];
  }
  barrier();
  let chunk = (lane_id * 7 + 3) % 32;
  let v = LOAD(tile, chunk);
  for i in 0..LANES {
    y[lane_id * 8 + i] = v[i];
  }
}
)";

void check_ldmatrix(unsigned count, bool trans) {
  const std::string load = "ldmatrix_x" + std::to_string(count) + (trans ? "_trans" : "");
  std::string text = kLdmatrix;
  text.replace(text.find("LOAD"), 4, load);
  text.replace(text.find("LANES"), 5, std::to_string(2 * count));
  auto k = compile_source(text, "ldm");
  std::vector<uint16_t> x(256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint16_t>(i);
  auto dy = upload(std::vector<uint16_t>(256, 0xFFFF)), dx = upload(x);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(1, 32), {runtime::as_bytes(dy), runtime::as_bytes(dx)}));
  device_sync();
  auto got = download<uint16_t>(dy);
  auto chunk = [](unsigned lane) { return (lane * 7 + 3) % 32; };
  size_t bad = 0;
  for (unsigned lane = 0; lane < 32; ++lane) {
    const unsigned g = lane / 4, t = lane % 4;
    for (unsigned j = 0; j < count; ++j)
      for (unsigned e = 0; e < 2; ++e) {
        // Matrix j's row r is the 16-byte chunk passed by lane 8j + r.
        const unsigned want = trans ? chunk(8 * j + 2 * t + e) * 8 + g : chunk(8 * j + g) * 8 + 2 * t + e;
        const unsigned have = got[lane * 8 + 2 * j + e];
        if (have != want && bad++ < 5) MESSAGE(load << " lane " << lane << " element " << 2 * j + e << ": got " << have << ", want " << want);
      }
  }
  CHECK_MESSAGE(bad == 0, load);
}

// cp.async: group 1 copies elements 0..447 with 16-, 8- and 4-byte copies; group 2 copies elements
// 448..703 with 16-byte copies reading only `src_bytes` of each (the rest zero-filled) over a shared
// array first filled with -1. After cp_async_wait(1) group 1 has landed; after cp_async_wait(0) both.
const char* kCopy = R"(
@workgroup(64)
kernel copy_async(out first: f32[], out second: f32[], in x: f32[], src_bytes: u32) {
  shared s: f32[704];
  let t = thread_id.x;
  for i in 0..11 {
    s[t + 64 * i] = -1.0;
  }
  barrier();
  cp_async16(s, t, x, t);
  cp_async8(s, 128 + t, x, 128 + t);
  cp_async4(s, 384 + t, x, 384 + t);
  cp_async_commit();
  cp_async16(s, 112 + t, x, 112 + t, src_bytes);
  cp_async_commit();
  cp_async_wait(1);
  barrier();
  for i in 0..7 {
    first[t + 64 * i] = s[t + 64 * i];
  }
  cp_async_wait(0);
  barrier();
  for i in 0..4 {
    second[t + 64 * i] = s[448 + t + 64 * i];
  }
}
)";

/// bench/kernels/NAME.pg: $PTXGATE_BENCH_KERNELS_DIR (the GPU bundle's copy), else the source tree's.
std::filesystem::path bench_kernel_path(const std::string& name) {
  const char* dir = std::getenv("PTXGATE_BENCH_KERNELS_DIR");
  std::filesystem::path base = dir ? dir : PTXGATE_SOURCE_DIR "/bench/kernels";
  return base / (name + ".pg");
}

}  // namespace

TEST_CASE("tensor cores: mma_m16n8k16 with bf16 and f16 fragments in the documented layout equals A * B + C") {
  if (before_sm80()) return;
  check_mma_k16(true);
  check_mma_k16(false);
}

TEST_CASE("tensor cores: mma_m16n8k8 (tf32) in the documented layout equals A * B + C; tf32() rounds like cvt.rna") {
  if (before_sm80()) return;
  auto k = compile_source(kMmaK8, "mma_k8");
  auto a = small_integers(16 * 8, 4), b = small_integers(8 * 8, 5), c = small_integers(16 * 8, 6);
  auto dd = upload(std::vector<float>(16 * 8, -1.0f)), da = upload(a), db = upload(b), dc = upload(c);
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(1, 32), {dd, da, db, dc}));
  device_sync();
  CHECK(mismatches(download<float>(dd), reference(a, b, c, 16, 8, 8), 0.0, 0.0, "mma_m16n8k8") == 0);

  auto round = compile_source(kMmaK8, "round_tf32");
  const uint32_t n = 1 << 16;
  auto x = random_values<float>(n, -1000.0, 1000.0, 9);
  x[0] = 1.0f + 0x1p-11f;          // exactly half way between two tf32 values: away from zero
  x[1] = -(1.0f + 0x1p-11f);
  x[2] = 1.0f + 0x1p-11f - 0x1p-23f;  // just below half way: down
  auto dy = upload(std::vector<float>(n, 0.0f)), dx = upload(x);
  PG_REQUIRE_OK(round->launch(LaunchConfig::linear(n / 256, 256), {dy, dx, n}));
  device_sync();
  auto got = download<float>(dy);
  size_t bad = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(tf32_reference(x[i])) && bad++ < 5)
      MESSAGE("tf32(" << x[i] << "): got " << got[i] << ", want " << tf32_reference(x[i]));
  CHECK(bad == 0);
  CHECK(got[0] == 1.0f + 0x1p-10f);
  CHECK(got[2] == 1.0f);
}

TEST_CASE("tensor cores: ldmatrix x1/x2/x4, with and without .trans, gives each lane the documented elements") {
  if (before_sm80()) return;
  for (unsigned count : {1u, 2u, 4u})
    for (bool trans : {false, true}) check_ldmatrix(count, trans);
}

TEST_CASE("tensor cores: cp.async copies land by group after cp_async_wait, and zero-fill past src_bytes") {
  if (before_sm80()) return;
  auto k = compile_source(kCopy, "copy_async");
  auto x = random_values<float>(704, -10.0, 10.0, 12);
  auto df = upload(std::vector<float>(448, 0.0f)), ds = upload(std::vector<float>(256, 0.0f)), dx = upload(x);
  const uint32_t src_bytes = 8;  // 2 of each 4 elements read, 2 zero-filled
  PG_REQUIRE_OK(k->launch(LaunchConfig::linear(1, 64), {df, ds, dx, src_bytes}));
  device_sync();
  auto first = download<float>(df);
  auto second = download<float>(ds);
  CHECK(mismatches(first, std::vector<float>(x.begin(), x.begin() + 448), 0.0, 0.0, "cp_async group 1") == 0);
  std::vector<float> want(256);
  for (size_t i = 0; i < want.size(); ++i) want[i] = i % 4 < 2 ? x[448 + i] : 0.0f;
  CHECK(mismatches(second, want, 0.0, 0.0, "cp_async zero fill") == 0);
}

TEST_CASE("tensor cores: the bf16 GEMM (mma.sync + ldmatrix + cp.async pipeline) equals an f32 reference") {
  if (before_sm80()) return;
  const auto path = bench_kernel_path("gemm_bf16_mma");
  auto k = gpu_runtime().compile(read_text(path), "gemm_bf16_mma", path.string());
  if (!k) FAIL(diag::render_text(k.error()));
  struct Size {
    uint32_t m, n, k;
  };
  for (Size s : {Size{257, 136, 200}, Size{128, 128, 32}, Size{300, 264, 72}, Size{1, 8, 8}}) {
    INFO(s.m << "x" << s.n << "x" << s.k);
    auto a = random_values<float>(size_t{s.m} * s.k, -1.0, 1.0, 20 + s.m);
    auto b = random_values<float>(size_t{s.k} * s.n, -1.0, 1.0, 30 + s.n);
    std::vector<uint16_t> ha(a.size()), hb(b.size());
    // Inputs rounded to bf16 (truncated: exact either way, the reference uses the same values).
    for (size_t i = 0; i < a.size(); ++i) a[i] = std::bit_cast<float>(uint32_t(ha[i] = bf16_bits(a[i])) << 16);
    for (size_t i = 0; i < b.size(); ++i) b[i] = std::bit_cast<float>(uint32_t(hb[i] = bf16_bits(b[i])) << 16);
    auto dc = upload(std::vector<float>(size_t{s.m} * s.n, -7.0f)), da = upload(ha), db = upload(hb);
    LaunchConfig config{{(s.n + 127) / 128, (s.m + 127) / 128, 1}, {256, 1, 1}, 0, false};
    PG_REQUIRE_OK((*k)->launch(config, {dc, runtime::as_bytes(da), runtime::as_bytes(db), s.m, s.n, s.k}));
    device_sync();
    auto want = reference(a, b, std::vector<float>(size_t{s.m} * s.n, 0.0f), s.m, s.n, s.k);
    // Exact products, f32 sums in another order: a few ulps of the magnitude of a sum of k terms.
    CHECK(mismatches(download<float>(dc), want, 1e-5 * s.k, 1e-5, "gemm_bf16_mma") == 0);
  }
}
