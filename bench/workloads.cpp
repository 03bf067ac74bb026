// Workloads (issues 13 and 16): the kernels users reach for a library for — a sum reduction, row softmax, layer
// norm, half-precision axpy, BFS over byte flags, SGEMM, a bf16 GEMM on the tensor cores with mma.sync
// (gemm_bf16_mma) and one on Hopper's (wgmma + TMA) — as ptxgate kernels next to their nvcc twins and
// device-to-device memcpy, each checked against a CPU reference (at small sizes and at the timed size: the
// 4096³ GEMMs on sampled rows and columns), then timed interleaved with events, 20 launches per sample.
// The libraries' numbers (torch.sum, torch.softmax, F.layer_norm, torch on f16/bf16, cuBLAS through
// torch.matmul) come from bench/peers.py in the same run; bench/report.py puts them side by side.
#include "bench_parts.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "kernel_timing.hpp"
#include "ptxgate/runtime/tensor_map.hpp"

namespace ptxgate::bench {
namespace {

using runtime::DeviceBuffer;

/// A ptxgate kernel and its nvcc twin (either may be missing: its rows are then absent).
struct Twin {
  std::shared_ptr<runtime::Kernel> pg;
  CUfunction nv = nullptr;
};

// ---------------------------------------------------------------- half precision on the host

/// binary16 bits of `f`, rounded to nearest even (values from 65520 up become infinity).
uint16_t f16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u, abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (abs < 0x38800000u)  // below 2^-14: a subnormal half, in units of 2^-24 (exact scaling, rounding to even)
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(std::bit_cast<float>(abs) * 16777216.0f)));
  uint32_t r = abs - 0x38000000u;  // exponent rebiased from 127 to 15
  r += 0xFFFu + ((r >> 13) & 1u);
  return static_cast<uint16_t>(sign | (r >> 13));
}

float f16_value(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0) return std::bit_cast<float>(sign) + (sign ? -1.0f : 1.0f) * float(m) * (1.0f / 16777216.0f);
  if (e == 31) return std::bit_cast<float>(sign | 0x7F800000u | (m << 13));
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

/// bfloat16 bits of a finite `f`, rounded to nearest even.
uint16_t bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bf16_value(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

/// An untyped device buffer holding `host`'s bytes (binds to any element type: f16[], bf16[], u8[]).
template <class T>
std::expected<DeviceBuffer, std::string> upload_bytes(Bench& c, const std::vector<T>& host) {
  auto b = c.rt.allocate(std::max<size_t>(host.size() * sizeof(T), 1));
  if (!b) return std::unexpected(one_line(b.error()));
  if (auto ok = b->upload(std::as_bytes(std::span<const T>(host))); !ok) return std::unexpected(one_line(ok.error()));
  return std::move(*b);
}

template <class T>
std::expected<std::vector<T>, std::string> download_bytes(Bench& c, const DeviceBuffer& b) {
  if (auto ok = c.stream.synchronize(); !ok) return std::unexpected(one_line(ok.error()));
  std::vector<T> host(b.size_bytes() / sizeof(T));
  if (auto ok = b.download(std::as_writable_bytes(std::span<T>(host))); !ok) return std::unexpected(one_line(ok.error()));
  return host;
}

Step driver(CUresult r, std::string_view call) {
  if (r != CUDA_SUCCESS) return std::unexpected(cu_error(r, call));
  return {};
}

/// Propagates the first failed expected of a list as a Step.
template <class... E>
Step all_ok(const E&... e) {
  std::string message;
  ((message.empty() && !e ? (void)(message = e.error()) : (void)0), ...);
  if (!message.empty()) return std::unexpected(message);
  return {};
}

// ---------------------------------------------------------------- sum

constexpr unsigned kBlock = 256;

/// One full wave of resident blocks (grid-stride), fewer for a small n.
unsigned sum_grid(Bench& c, const Twin& t, bool pg, size_t n) {
  const unsigned wave = resident_blocks(c, pg ? t.pg->function().handle() : t.nv, kBlock);
  return static_cast<unsigned>(std::min<size_t>((n + kBlock - 1) / kBlock, wave));
}

Step launch_sum(Bench& c, const Twin& t, bool pg, DeviceBuffer& total, DeviceBuffer& x, uint32_t n) {
  const unsigned grid = sum_grid(c, t, pg, n);
  if (pg) return from_diag(t.pg->launch(grid1d(grid), {total, x, n}, &c.stream));
  CUdeviceptr pt = total.pointer(), px = x.pointer();
  return raw_launch(c, t.nv, {grid, 1, 1}, {kBlock, 1, 1}, {&pt, &px, &n});
}

/// Sums `host` on the device (total zeroed first) and compares with the double-precision sum.
bool check_sum(Bench& c, const Twin& t, bool pg, DeviceBuffer& x, const std::vector<float>& host, const std::string& what) {
  double err = INFINITY;
  Step s = [&]() -> Step {
    auto total = upload(c, std::vector<float>{0.0f});
    if (!total) return std::unexpected(total.error());
    if (auto l = launch_sum(c, t, pg, *total, x, static_cast<uint32_t>(host.size())); !l) return l;
    auto got = download(c, *total);
    if (!got) return std::unexpected(got.error());
    double ref = 0;
    for (float v : host) ref += v;
    err = relative_error(*got, {ref});
    return {};
  }();
  return record_check(c.out, what, s, err, 1e-5);
}

// ---------------------------------------------------------------- softmax and layer norm (a block per row)

Step launch_softmax(Bench& c, const Twin& t, bool pg, DeviceBuffer& y, DeviceBuffer& x, uint32_t rows, uint32_t cols) {
  const unsigned shared = cols * 4;
  if (pg) return from_diag(t.pg->launch(grid1d(rows, shared), {y, x, cols}, &c.stream));
  CUdeviceptr py = y.pointer(), px = x.pointer();
  return raw_launch(c, t.nv, {rows, 1, 1}, {kBlock, 1, 1}, {&py, &px, &cols}, shared);
}

Step launch_layer_norm(Bench& c, const Twin& t, bool pg, DeviceBuffer& y, DeviceBuffer& x, DeviceBuffer& w,
                       DeviceBuffer& b, uint32_t rows, uint32_t cols, float eps) {
  const unsigned shared = cols * 4;
  if (pg) return from_diag(t.pg->launch(grid1d(rows, shared), {y, x, w, b, cols, eps}, &c.stream));
  CUdeviceptr py = y.pointer(), px = x.pointer(), pw = w.pointer(), pb = b.pointer();
  return raw_launch(c, t.nv, {rows, 1, 1}, {kBlock, 1, 1}, {&py, &px, &pw, &pb, &cols, &eps}, shared);
}

constexpr float kEps = 1e-5f;

bool check_rows(Bench& c, const Twin& t, bool pg, bool norm, uint32_t rows, uint32_t cols, const std::string& what) {
  double err = INFINITY;
  Step s = [&]() -> Step {
    const size_t n = size_t{rows} * cols;
    auto xh = random_floats(n, 31 + cols, -4.0f, 4.0f);
    auto wh = random_floats(cols, 32), bh = random_floats(cols, 33);
    auto x = upload(c, xh);
    auto w = upload(c, wh);
    auto b = upload(c, bh);
    auto y = filled(c, n * 4, 0xFF);
    if (auto ok = all_ok(x, w, b, y); !ok) return ok;
    Step l = norm ? launch_layer_norm(c, t, pg, *y, *x, *w, *b, rows, cols, kEps)
                  : launch_softmax(c, t, pg, *y, *x, rows, cols);
    if (!l) return l;
    auto got = download(c, *y);
    if (!got) return std::unexpected(got.error());
    std::vector<double> ref(n);
    for (size_t r = 0; r < rows; ++r) {
      const float* row = xh.data() + r * cols;
      double* out = ref.data() + r * cols;
      if (norm) {
        double mean = 0, var = 0;
        for (size_t j = 0; j < cols; ++j) mean += row[j];
        mean /= cols;
        for (size_t j = 0; j < cols; ++j) var += (row[j] - mean) * (row[j] - mean);
        const double rstd = 1.0 / std::sqrt(var / cols + kEps);
        for (size_t j = 0; j < cols; ++j) out[j] = (row[j] - mean) * rstd * wh[j] + bh[j];
      } else {
        double m = row[0], sum = 0;
        for (size_t j = 0; j < cols; ++j) m = std::max(m, double(row[j]));
        for (size_t j = 0; j < cols; ++j) sum += out[j] = std::exp(row[j] - m);
        for (size_t j = 0; j < cols; ++j) out[j] /= sum;
      }
    }
    err = relative_error(*got, ref);
    return {};
  }();
  return record_check(c.out, what, s, err, 1e-5);
}

// ---------------------------------------------------------------- f16 / bf16 axpy

Step launch_axpy(Bench& c, const Twin& t, bool pg, DeviceBuffer& y, DeviceBuffer& x, float a, uint32_t n) {
  const unsigned grid = static_cast<unsigned>((size_t{n} + 4095) / 4096);
  if (pg) return from_diag(t.pg->launch(grid1d(grid), {y, x, a, n}, &c.stream));
  CUdeviceptr py = y.pointer(), px = x.pointer();
  return raw_launch(c, t.nv, {grid, 1, 1}, {kBlock, 1, 1}, {&py, &px, &a, &n});
}

bool check_axpy(Bench& c, const Twin& t, bool pg, bool bf16, const std::string& what) {
  const uint32_t n = 1'000'003;  // not a multiple of the 4096 elements of a block, nor of a vector's 8
  const float a = 1.75f;
  auto to_bits = bf16 ? bf16_bits : f16_bits;
  auto value = bf16 ? bf16_value : f16_value;
  size_t wrong = n;
  Step s = [&]() -> Step {
    auto xf = random_floats(n, 41), yf = random_floats(n, 42);
    std::vector<uint16_t> xh(n), yh(n);
    for (size_t i = 0; i < n; ++i) xh[i] = to_bits(xf[i]), yh[i] = to_bits(yf[i]);
    auto x = upload_bytes(c, xh);
    auto y = upload_bytes(c, yh);
    if (auto ok = all_ok(x, y); !ok) return ok;
    if (auto l = launch_axpy(c, t, pg, *y, *x, a, n); !l) return l;
    auto got = download_bytes<uint16_t>(c, *y);
    if (!got) return std::unexpected(got.error());
    // Exact: a * x + y in f32 (contracted to one fma or not: both are f32 arithmetic), rounded once to
    // nearest even; any other bits (a wrong rounding, a missed element) count as wrong.
    wrong = 0;
    for (size_t i = 0; i < n; ++i) {
      const float xv = value(xh[i]), yv = value(yh[i]);
      volatile float product = a * xv;  // volatile: the host compiler may not contract this one
      const float fused = std::fma(a, xv, yv), separate = product + yv;
      wrong += (*got)[i] != to_bits(fused) && (*got)[i] != to_bits(separate);
    }
    return {};
  }();
  return record_check(c.out, what, s, double(wrong) / n, 0.0);
}

/// At the timed size, on the timed buffers: x and y hold 0x3C in every byte (1.06 in f16, 0.0115 in bf16);
/// after one launch with a = 1e-3 every element of y must be a x + y rounded once (fused or not).
bool check_axpy_timed(Bench& c, const Twin& t, bool pg, bool bf16, DeviceBuffer& y, DeviceBuffer& x, uint32_t n,
                      const std::string& what) {
  size_t wrong = n;
  Step s = [&]() -> Step {
    if (auto f = y.fill_bytes(0x3C); !f) return std::unexpected(one_line(f.error()));
    const float a = 1e-3f;
    if (auto l = launch_axpy(c, t, pg, y, x, a, n); !l) return l;
    auto got = download_bytes<uint16_t>(c, y);
    if (!got) return std::unexpected(got.error());
    auto to_bits = bf16 ? bf16_bits : f16_bits;
    const float v = (bf16 ? bf16_value : f16_value)(0x3C3C);
    volatile float product = a * v;
    const uint16_t fused = to_bits(std::fma(a, v, v)), separate = to_bits(product + v);
    wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += (*got)[i] != fused && (*got)[i] != separate;
    return {};
  }();
  return record_check(c.out, what, s, double(wrong) / n, 0.0);
}

// ---------------------------------------------------------------- BFS

/// A random directed graph in CSR form: vertex v has 1..15 neighbours chosen uniformly.
struct Graph {
  uint32_t n = 0;
  std::vector<uint32_t> row_start, adj;
};

Graph random_graph(uint32_t n, uint64_t seed) {
  Graph g;
  g.n = n;
  g.row_start.resize(size_t{n} + 1);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 7;
  auto next = [&] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (uint32_t v = 0; v < n; ++v) {
    g.row_start[v] = static_cast<uint32_t>(g.adj.size());
    const uint64_t degree = 1 + next() % 15;
    for (uint64_t k = 0; k < degree; ++k) g.adj.push_back(static_cast<uint32_t>(next() % n));
  }
  g.row_start[n] = static_cast<uint32_t>(g.adj.size());
  return g;
}

/// Levels from vertex 0 (-1: unreached), and the edges leaving reached vertices (the work of one BFS).
std::pair<std::vector<int32_t>, double> cpu_bfs(const Graph& g) {
  std::vector<int32_t> level(g.n, -1);
  std::deque<uint32_t> queue{0};
  level[0] = 0;
  double edges = 0;
  while (!queue.empty()) {
    uint32_t v = queue.front();
    queue.pop_front();
    edges += g.row_start[v + 1] - g.row_start[v];
    for (uint32_t e = g.row_start[v]; e < g.row_start[v + 1]; ++e)
      if (level[g.adj[e]] < 0) {
        level[g.adj[e]] = level[v] + 1;
        queue.push_back(g.adj[e]);
      }
  }
  return {std::move(level), edges};
}

/// The graph and the BFS state on the device.
struct BfsState {
  uint32_t n = 0;
  DeviceBuffer row_start, adj, frontier, updating, visited, cost, more;
};

std::expected<BfsState, std::string> bfs_state(Bench& c, const Graph& g) {
  BfsState s;
  s.n = g.n;
  auto rs = upload(c, g.row_start);
  auto adj = upload(c, g.adj);
  auto f = filled(c, g.n, 0), u = filled(c, g.n, 0), v = filled(c, g.n, 0), more = filled(c, 4, 0);
  auto cost = c.rt.allocate_array<int32_t>(g.n);
  if (auto ok = all_ok(rs, adj, f, u, v, more); !ok) return std::unexpected(ok.error());
  if (!cost) return std::unexpected(one_line(cost.error()));
  s.row_start = std::move(*rs), s.adj = std::move(*adj), s.frontier = std::move(*f), s.updating = std::move(*u);
  s.visited = std::move(*v), s.more = std::move(*more), s.cost = std::move(*cost);
  return s;
}

/// Source 0 in the frontier and visited at level 0, everything else unvisited (-1); on the stream.
Step bfs_reset(Bench& c, BfsState& s) {
  CUstream st = c.stream.handle();
  const auto& api = c.api;
  for (DeviceBuffer* b : {&s.frontier, &s.updating, &s.visited})
    if (auto r = driver(api.cuMemsetD8Async(b->pointer(), 0, s.n, st), "cuMemsetD8Async"); !r) return r;
  if (auto r = driver(api.cuMemsetD32Async(s.cost.pointer(), 0xFFFFFFFFu, s.n, st), "cuMemsetD32Async"); !r) return r;
  if (auto r = driver(api.cuMemsetD8Async(s.frontier.pointer(), 1, 1, st), "cuMemsetD8Async"); !r) return r;
  if (auto r = driver(api.cuMemsetD8Async(s.visited.pointer(), 1, 1, st), "cuMemsetD8Async"); !r) return r;
  return driver(api.cuMemsetD32Async(s.cost.pointer(), 0, 1, st), "cuMemsetD32Async");
}

/// One whole BFS: per level, more = 0, expand, mark, read more back; the same host loop for both twins.
Step bfs_run(Bench& c, const Twin& expand, const Twin& mark, bool pg, BfsState& s) {
  const unsigned grid = (s.n + kBlock - 1) / kBlock;
  CUdeviceptr prs = s.row_start.pointer(), padj = s.adj.pointer(), pf = s.frontier.pointer(),
              pu = s.updating.pointer(), pv = s.visited.pointer(), pc = s.cost.pointer(), pm = s.more.pointer();
  uint32_t n = s.n;
  for (uint32_t level = 0; level <= s.n; ++level) {
    if (auto r = driver(c.api.cuMemsetD32Async(pm, 0, 1, c.stream.handle()), "cuMemsetD32Async"); !r) return r;
    Step e = pg ? from_diag(expand.pg->launch(grid1d(grid), {s.row_start, s.adj, s.frontier, s.updating, s.visited,
                                                            s.cost, n}, &c.stream))
                : raw_launch(c, expand.nv, {grid, 1, 1}, {kBlock, 1, 1}, {&prs, &padj, &pf, &pu, &pv, &pc, &n});
    if (!e) return e;
    Step m = pg ? from_diag(mark.pg->launch(grid1d(grid), {s.frontier, s.updating, s.visited, s.more, n}, &c.stream))
                : raw_launch(c, mark.nv, {grid, 1, 1}, {kBlock, 1, 1}, {&pf, &pu, &pv, &pm, &n});
    if (!m) return m;
    uint32_t more = 0;
    if (auto r = driver(c.api.cuMemcpyDtoHAsync(&more, pm, 4, c.stream.handle()), "cuMemcpyDtoHAsync"); !r) return r;
    if (auto ok = c.stream.synchronize(); !ok) return std::unexpected(one_line(ok.error()));
    if (more == 0) return {};
  }
  return std::unexpected("BFS did not finish within n levels");
}

bool check_bfs(Bench& c, const Twin& expand, const Twin& mark, bool pg, BfsState& s, const std::vector<int32_t>& ref,
               const std::string& what) {
  size_t wrong = ref.size();
  Step st = [&]() -> Step {
    if (auto r = bfs_reset(c, s); !r) return r;
    if (auto r = bfs_run(c, expand, mark, pg, s); !r) return r;
    auto got = download<int32_t>(c, s.cost);
    if (!got) return std::unexpected(got.error());
    wrong = 0;
    for (size_t v = 0; v < ref.size(); ++v) wrong += (*got)[v] != ref[v];
    return {};
  }();
  // Levels are exact: the error is the fraction of vertices whose level differs from the CPU's.
  return record_check(c.out, what, st, double(wrong) / double(ref.size()), 0.0);
}

// ---------------------------------------------------------------- SGEMM and the bf16 GEMM

/// c = a * b, row-major, m x k times k x n; 128 x 128 tiles of 256 threads: bench/kernels/sgemm.pg (f32; the
/// 16-byte vector accesses need n % 4 == 0 and k % 4 == 0) and bench/kernels/gemm_bf16_mma.pg (bf16 in, f32 out, on
/// the tensor cores; its 16-byte copies need n % 8 == 0 and k % 8 == 0).
constexpr unsigned kTile = 128;

Step launch_tiled_gemm(Bench& c, const Twin& t, bool pg, DeviceBuffer& cm, DeviceBuffer& a, DeviceBuffer& b, uint32_t m,
                 uint32_t n, uint32_t k) {
  const unsigned gx = (n + kTile - 1) / kTile, gy = (m + kTile - 1) / kTile;
  if (pg)
    return from_diag(t.pg->launch(runtime::LaunchConfig{{gx, gy, 1}, {0, 0, 0}, 0, false}, {cm, a, b, m, n, k}, &c.stream));
  CUdeviceptr pc = cm.pointer(), pa = a.pointer(), pb = b.pointer();
  return raw_launch(c, t.nv, {gx, gy, 1}, {kBlock, 1, 1}, {&pc, &pa, &pb, &m, &n, &k});
}

/// Rounds `values` to bf16 in place and returns their bits.
std::vector<uint16_t> round_to_bf16(std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    bits[i] = bf16_bits(values[i]);
    values[i] = bf16_value(bits[i]);
  }
  return bits;
}

/// Against the double-precision product of the same inputs: f32 (sgemm) or bf16 (gemm_bf16_mma, whose products
/// are exact, so what is left is f32 accumulation, far inside bf16's own 2^-8).
bool check_tiled_gemm(Bench& c, const Twin& t, bool pg, bool bf16, uint32_t m, uint32_t n, uint32_t k,
                const std::string& what) {
  double err = INFINITY;
  Step s = [&]() -> Step {
    auto ah = random_floats(size_t{m} * k, bf16 ? 53 : 51), bh = random_floats(size_t{k} * n, bf16 ? 54 : 52);
    auto a = bf16 ? upload_bytes(c, round_to_bf16(ah)) : upload(c, ah);
    auto b = bf16 ? upload_bytes(c, round_to_bf16(bh)) : upload(c, bh);
    auto cm = filled(c, size_t{m} * n * 4, 0xFF);
    if (auto ok = all_ok(a, b, cm); !ok) return ok;
    if (auto l = launch_tiled_gemm(c, t, pg, *cm, *a, *b, m, n, k); !l) return l;
    auto got = download(c, *cm);
    if (!got) return std::unexpected(got.error());
    err = relative_error(*got, matmul_reference(ah, bh, m, n, k));
    return {};
  }();
  return record_check(c.out, what, s, err, 1e-5);
}

/// The elements of a GEMM result checked at a timed size: every column of 8 rows and every row of 8 columns,
/// spread over the matrix (both ends included); the double-precision reference of 4096³ in full would take
/// the CPU minutes, these take a second.
std::vector<std::pair<uint32_t, uint32_t>> sampled_elements(uint32_t m, uint32_t n) {
  std::vector<std::pair<uint32_t, uint32_t>> at;
  for (uint32_t i = 0; i < 8; ++i) {
    const uint32_t r = static_cast<uint32_t>(uint64_t{m - 1} * i / 7), col = static_cast<uint32_t>(uint64_t{n - 1} * i / 7);
    for (uint32_t j = 0; j < n; ++j) at.emplace_back(r, j);
    for (uint32_t q = 0; q < m; ++q) at.emplace_back(q, col);
  }
  return at;
}

/// At the timed size, on the timed buffers: c = a b (a m x k, b k x n, row-major) once, the sampled elements
/// against the double-precision product of the same inputs (`ah`, `bh`: f32 values, bf16-rounded for the
/// tensor-core GEMM), the relative error over them at the small sizes' tolerance.
bool check_tiled_gemm_timed(Bench& c, const Twin& t, bool pg, DeviceBuffer& cm, DeviceBuffer& a, DeviceBuffer& b,
                            const std::vector<float>& ah, const std::vector<float>& bh, uint32_t s,
                            const std::string& what) {
  double err = INFINITY;
  Step st = [&]() -> Step {
    if (auto f = cm.fill_bytes(0xFF); !f) return std::unexpected(one_line(f.error()));
    if (auto l = launch_tiled_gemm(c, t, pg, cm, a, b, s, s, s); !l) return l;
    auto got = download(c, cm);
    if (!got) return std::unexpected(got.error());
    std::vector<float> picked;
    std::vector<double> ref;
    for (auto [r, j] : sampled_elements(s, s)) {
      double sum = 0;
      for (size_t q = 0; q < s; ++q) sum += double(ah[size_t{r} * s + q]) * bh[q * s + j];
      ref.push_back(sum);
      picked.push_back((*got)[size_t{r} * s + j]);
    }
    err = relative_error(picked, ref);
    return {};
  }();
  return record_check(c.out, what, st, err, 1e-5);
}


// ---------------------------------------------------------------- bf16 GEMM on Hopper (wgmma + TMA)

/// c = a * b^T: a m x k, b n x k (both K-major, as wgmma reads them), c m x n, row-major; bf16 in and out,
/// f32 accumulation. 128 x 256 block tiles of 384 threads (a producer and two consumer warpgroups), a 4-stage
/// ring of 48 KiB (bench/cuda/gemm_bf16_wgmma.cu). Needs k % 8 == 0 and n % 2 == 0; sm_90a only.
constexpr unsigned kGemmBlockM = 128, kGemmBlockN = 256, kGemmThreads = 384;
constexpr unsigned kGemmShared = 4 * (kGemmBlockM + kGemmBlockN) * 64 * 2 + 1024;

/// A GEMM's buffers and the tensor maps of its operands (the maps point into a and b).
struct GemmOperands {
  DeviceBuffer a, b, c;
  runtime::TensorMap ta, tb;
  uint32_t m = 0, n = 0, k = 0;
};

/// The tensor map of a K-major bf16 operand of `rows` rows: boxes of 64 (k) x `box_rows`, 128-byte swizzle
/// (64 bf16 are one 128-byte row: the swizzle span wgmma's descriptors name).
std::expected<runtime::TensorMap, std::string> gemm_operand_map(const DeviceBuffer& b, uint32_t rows, uint32_t k,
                                                                uint32_t box_rows) {
  validation::TensorMapDesc d;
  d.type = validation::TmaType::bf16;
  d.dims = {k, rows};
  d.strides = {uint64_t{k} * 2};
  d.box = {64, box_rows};
  d.swizzle = validation::TmaSwizzle::b128;
  d.l2_promotion = validation::TmaL2Promotion::b256;
  auto map = runtime::encode_tensor_map(b, 0, std::move(d));
  if (!map) return std::unexpected(one_line(map.error()));
  return *map;
}

/// Uploads a (m x k) and b (n x k) in bf16, c (m x n) filled with 0xFF bytes (bf16 NaN: a missed element
/// shows), and encodes the maps.
std::expected<GemmOperands, std::string> gemm_operands(Bench& c, const std::vector<uint16_t>& a,
                                                       const std::vector<uint16_t>& b, uint32_t m, uint32_t n,
                                                       uint32_t k) {
  auto da = upload_bytes(c, a);
  auto db = upload_bytes(c, b);
  auto dc = filled(c, size_t{m} * n * 2, 0xFF);
  if (auto ok = all_ok(da, db, dc); !ok) return std::unexpected(ok.error());
  auto ta = gemm_operand_map(*da, m, k, kGemmBlockM);
  auto tb = gemm_operand_map(*db, n, k, kGemmBlockN);
  if (auto ok = all_ok(ta, tb); !ok) return std::unexpected(ok.error());
  return GemmOperands{std::move(*da), std::move(*db), std::move(*dc), *ta, *tb, m, n, k};
}

std::vector<uint16_t> random_bf16(size_t count, uint64_t seed) {
  auto f = random_floats(count, seed);
  std::vector<uint16_t> bits(count);
  for (size_t i = 0; i < count; ++i) bits[i] = bf16_bits(f[i]);
  return bits;
}

Step launch_gemm(Bench& c, const Twin& t, bool pg, GemmOperands& g) {
  const unsigned gx = (g.n + kGemmBlockN - 1) / kGemmBlockN, gy = (g.m + kGemmBlockM - 1) / kGemmBlockM;
  if (pg)  // the tensor maps bind to the kernel's tensor_map parameters by value
    return from_diag(t.pg->launch(runtime::LaunchConfig{{gx, gy, 1}, {0, 0, 0}, kGemmShared, false},
                                  {g.c, g.ta, g.tb, g.m, g.n, g.k}, &c.stream));
  CUdeviceptr pc = g.c.pointer();
  return raw_launch(c, t.nv, {gx, gy, 1}, {kGemmThreads, 1, 1},
                    {&pc, g.ta.words.data(), g.tb.words.data(), &g.m, &g.n, &g.k}, kGemmShared);
}

/// Element by element against a double-precision reference of the bf16 inputs: an element is wrong when it
/// differs by more than 1% of the reference plus 1e-3 (bf16 output rounding is at most 0.4%; a wrong tile,
/// swizzle or fragment mapping is off by O(1)). The error is the fraction of wrong elements.
bool check_gemm(Bench& c, const Twin& t, bool pg, uint32_t m, uint32_t n, uint32_t k, const std::string& what) {
  size_t wrong = size_t{m} * n;
  Step s = [&]() -> Step {
    auto ah = random_bf16(size_t{m} * k, 91), bh = random_bf16(size_t{n} * k, 92);
    auto g = gemm_operands(c, ah, bh, m, n, k);
    if (!g) return std::unexpected(g.error());
    if (auto l = launch_gemm(c, t, pg, *g); !l) return l;
    auto got = download_bytes<uint16_t>(c, g->c);
    if (!got) return std::unexpected(got.error());
    std::vector<float> av(ah.size()), bt(bh.size());  // b transposed to k x n for matmul_reference
    for (size_t i = 0; i < ah.size(); ++i) av[i] = bf16_value(ah[i]);
    for (size_t j = 0; j < n; ++j)
      for (size_t kk = 0; kk < k; ++kk) bt[kk * n + j] = bf16_value(bh[j * k + kk]);
    const auto ref = matmul_reference(av, bt, m, n, k);
    wrong = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const double v = bf16_value((*got)[i]);
      wrong += !(std::abs(v - ref[i]) <= 0.01 * std::abs(ref[i]) + 1e-3);  // NaN counts as wrong
    }
    return {};
  }();
  return record_check(c.out, what, s, double(wrong) / (double(m) * n), 0.0);
}

/// At the timed size, on the timed operands (`ah` m x k, `bh` n x k, bf16): the sampled elements of one
/// launch's c against the double-precision reference, element by element as check_gemm does.
bool check_gemm_timed(Bench& c, const Twin& t, bool pg, GemmOperands& g, const std::vector<uint16_t>& ah,
                      const std::vector<uint16_t>& bh, const std::string& what) {
  const auto at = sampled_elements(g.m, g.n);
  size_t wrong = at.size();
  Step s = [&]() -> Step {
    if (auto f = g.c.fill_bytes(0xFF); !f) return std::unexpected(one_line(f.error()));
    if (auto l = launch_gemm(c, t, pg, g); !l) return l;
    auto got = download_bytes<uint16_t>(c, g.c);
    if (!got) return std::unexpected(got.error());
    wrong = 0;
    for (auto [r, j] : at) {
      double ref = 0;
      for (size_t q = 0; q < g.k; ++q) ref += double(bf16_value(ah[size_t{r} * g.k + q])) * bf16_value(bh[size_t{j} * g.k + q]);
      const double v = bf16_value((*got)[size_t{r} * g.n + j]);
      wrong += !(std::abs(v - ref) <= 0.01 * std::abs(ref) + 1e-3);
    }
    return {};
  }();
  return record_check(c.out, what, s, double(wrong) / double(at.size()), 0.0);
}

}  // namespace

int run_workloads(const WorkloadOptions& o, ResultFile& out) {
  auto session = open_session(out, "workloads", o.checked);
  if (!session) return session.error();
  Bench c = session->bench(out);
  auto& rt = c.rt;
  out.info("device", rt.caps().name);
  out.info("checked", o.checked);
  out.info("launches_per_sample", static_cast<uint64_t>(kCallsPerSample));
  const std::set<std::string> only(o.only.begin(), o.only.end());
  auto wanted = [&](const std::string& w) { return only.empty() || only.contains(w); };
  int status = 0;
  auto fail = [&](const std::string& step, const std::string& message) {
    out.error(step, message);
    fmt::print("  {} FAILED: {}\n", step, message);
    status = 1;
  };

  NvccModules nvcc(c);
  auto twin = [&](const std::string& file, const std::string& kernel) {
    Twin t;
    t.pg = compile_kernel(c, o.kernels_dir / (file + ".pg"), kernel);
    t.nv = nvcc.get(o.cubin_dir / (file + ".cubin"), kernel);
    if (!t.pg || !t.nv) status = 1;
    return t;
  };
  const bool both[] = {true, false};
  auto label = [](const std::string& w, bool pg) { return w + (pg ? ".ptxgate" : ".nvcc"); };
  auto present = [](const Twin& t, bool pg) { return pg ? t.pg != nullptr : t.nv != nullptr; };

  std::vector<Timed> timed;
  // Buffers live until the timing is done; deque: stable addresses for the launch lambdas.
  std::deque<DeviceBuffer> keep;
  auto hold = [&](std::expected<DeviceBuffer, std::string> b, const std::string& what) -> DeviceBuffer* {
    if (!b) {
      fail("allocate." + what, b.error());
      return nullptr;
    }
    keep.push_back(std::move(*b));
    return &keep.back();
  };
  fmt::print("workloads: verification, then timing ({} rounds)\n", o.repetitions);

  // Sum of 2^28 f32 (1 GiB) against memcpy of the same buffer (read + write).
  Twin sum;
  if (wanted("sum") || wanted("axpy_f16") || wanted("axpy_bf16")) {
    const size_t n = o.sum_elements;
    auto host = random_floats(n, 61, 0.0f, 1.0f);
    DeviceBuffer* x = hold(upload(c, host), "sum.x");
    DeviceBuffer* dst = hold(filled(c, n * 4, 0), "memcpy.dst");
    if (x && dst) {
      CUdeviceptr px = x->pointer(), pd = dst->pointer();
      timed.push_back({"memcpy_dtod", "GB/s", 8.0 * double(n), [&c, px, pd, n]() -> Step {
                         return driver(c.api.cuMemcpyDtoDAsync(pd, px, n * 4, c.stream.handle()), "cuMemcpyDtoDAsync");
                       }});
    }
    if (wanted("sum")) {
      sum = twin("warp_sum", "warp_sum");
      auto small = random_floats(1'000'003, 62, 0.0f, 1.0f);
      DeviceBuffer* xs = hold(upload(c, small), "sum.small");
      DeviceBuffer* total = hold(upload(c, std::vector<float>{0.0f}), "sum.total");
      for (bool pg : both) {
        if (!present(sum, pg) || !x || !xs || !total) continue;
        bool ok = check_sum(c, sum, pg, *xs, small, label("sum", pg) + ".1000003") &&
                  check_sum(c, sum, pg, *x, host, label("sum", pg) + fmt::format(".{}", n));
        if (!ok) {
          status = 1;
          continue;
        }
        timed.push_back({label("sum", pg), "GB/s", 4.0 * double(n), [&c, &sum, pg, total, x, n]() {
                           return launch_sum(c, sum, pg, *total, *x, static_cast<uint32_t>(n));
                         }});
      }
    }
  }

  // Row softmax and layer norm: x read once, y written once.
  Twin softmax, layer_norm;
  for (bool norm : {false, true}) {
    const std::string w = norm ? "layer_norm" : "softmax";
    if (!wanted(w)) continue;
    Twin& t = norm ? layer_norm : softmax;
    t = twin(w, w);
    const uint32_t rows = norm ? o.norm_rows : o.softmax_rows, cols = norm ? o.norm_cols : o.softmax_cols;
    const size_t n = size_t{rows} * cols;
    DeviceBuffer* x = hold(upload(c, random_floats(n, 63, -4.0f, 4.0f)), w + ".x");
    DeviceBuffer* y = hold(filled(c, n * 4, 0), w + ".y");
    DeviceBuffer* wb = hold(upload(c, random_floats(cols, 64)), w + ".w");
    DeviceBuffer* bb = hold(upload(c, random_floats(cols, 65)), w + ".b");
    for (bool pg : both) {
      if (!present(t, pg) || !x || !y || !wb || !bb) continue;
      bool ok = check_rows(c, t, pg, norm, 33, cols, fmt::format("{}.33x{}", label(w, pg), cols)) &&
                check_rows(c, t, pg, norm, 17, 1000, label(w, pg) + ".17x1000") &&
                check_rows(c, t, pg, norm, rows, cols, fmt::format("{}.{}x{}", label(w, pg), rows, cols));
      if (!ok) {
        status = 1;
        continue;
      }
      timed.push_back({label(w, pg), "GB/s", 8.0 * double(n), [&c, tw = &t, pg, norm, x, y, wb, bb, rows, cols]() {
                         return norm ? launch_layer_norm(c, *tw, pg, *y, *x, *wb, *bb, rows, cols, kEps)
                                     : launch_softmax(c, *tw, pg, *y, *x, rows, cols);
                       }});
    }
  }

  // y = a x + y on f16 and bf16 (read x and y, write y: 6 bytes per element), against memcpy's rate.
  Twin axpy[2];
  for (bool bf16 : {false, true}) {
    const std::string w = bf16 ? "axpy_bf16" : "axpy_f16";
    if (!wanted(w)) continue;
    axpy[bf16] = twin("axpy_half", w);
    const size_t n = o.half_elements;
    // 0x3C3C in every element: 1.06 (f16) or 0.0115 (bf16); with a = 1e-3, y stays finite however often it runs.
    DeviceBuffer* x = hold(filled(c, n * 2, 0x3C), w + ".x");
    DeviceBuffer* y = hold(filled(c, n * 2, 0x3C), w + ".y");
    for (bool pg : both) {
      if (!present(axpy[bf16], pg) || !x || !y) continue;
      if (!check_axpy(c, axpy[bf16], pg, bf16, label(w, pg)) ||
          !check_axpy_timed(c, axpy[bf16], pg, bf16, *y, *x, static_cast<uint32_t>(n), label(w, pg) + fmt::format(".{}", n))) {
        status = 1;
        continue;
      }
      timed.push_back({label(w, pg), "GB/s", 6.0 * double(n), [&c, &axpy, bf16, pg, x, y, n]() {
                         return launch_axpy(c, axpy[bf16], pg, *y, *x, 1e-3f, static_cast<uint32_t>(n));
                       }});
    }
  }

  // BFS over byte flags on a random graph; the rate is edges leaving reached vertices per second.
  Twin expand, mark;
  std::deque<BfsState> graphs;
  if (wanted("bfs")) {
    expand = twin("bfs", "bfs_expand");
    mark = twin("bfs", "bfs_mark");
    const Graph small = random_graph(100'003, 71), large = random_graph(o.bfs_vertices, 72);
    auto [small_ref, small_edges] = cpu_bfs(small);
    auto [large_ref, large_edges] = cpu_bfs(large);
    out.info("bfs", {{"vertices", large.n}, {"edges", large.adj.size()}, {"edges_from_reached", large_edges},
                     {"levels", *std::max_element(large_ref.begin(), large_ref.end()) + 1}});
    auto gs = bfs_state(c, small), gl = bfs_state(c, large);
    if (!gs || !gl) {
      fail("allocate.bfs", !gs ? gs.error() : gl.error());
    } else {
      graphs.push_back(std::move(*gs));
      BfsState& s = graphs.back();
      graphs.push_back(std::move(*gl));
      BfsState& l = graphs.back();
      for (bool pg : both) {
        if (!present(expand, pg) || !present(mark, pg)) continue;
        bool ok = check_bfs(c, expand, mark, pg, s, small_ref, label("bfs", pg) + ".100003") &&
                  check_bfs(c, expand, mark, pg, l, large_ref, label("bfs", pg) + fmt::format(".{}", large.n));
        if (!ok) {
          status = 1;
          continue;
        }
        Timed v{label("bfs", pg), "GTEPS", large_edges, [&c, &expand, &mark, pg, state = &l]() {
                  return bfs_run(c, expand, mark, pg, *state);
                }};
        v.prepare = [&c, state = &l]() { return bfs_reset(c, *state); };
        timed.push_back(std::move(v));
      }
    }
  }

  // SGEMM, square, f32: GFLOP/s = 2 n^3 / time; cuBLAS (TF32 off) through torch.matmul in peers.py.
  Twin sgemm;
  if (wanted("sgemm")) {
    sgemm = twin("sgemm", "sgemm");
    const uint32_t s = o.sgemm_size;
    const auto ah = random_floats(size_t{s} * s, 81), bh = random_floats(size_t{s} * s, 82);
    DeviceBuffer* a = hold(upload(c, ah), "sgemm.a");
    DeviceBuffer* b = hold(upload(c, bh), "sgemm.b");
    DeviceBuffer* cm = hold(filled(c, size_t{s} * s * 4, 0), "sgemm.c");
    for (bool pg : both) {
      if (!present(sgemm, pg) || !a || !b || !cm) continue;
      bool ok = check_tiled_gemm(c, sgemm, pg, false, 257, 132, 132, label("sgemm", pg) + ".257x132x132") &&
                check_tiled_gemm(c, sgemm, pg, false, 512, 256, 384, label("sgemm", pg) + ".512x256x384") &&
                check_tiled_gemm_timed(c, sgemm, pg, *cm, *a, *b, ah, bh, s,
                                       label("sgemm", pg) + fmt::format(".{0}x{0}x{0}.sampled", s));
      if (!ok) {
        status = 1;
        continue;
      }
      timed.push_back({label("sgemm", pg), "GFLOP/s", 2.0 * double(s) * s * s, [&c, &sgemm, pg, a, b, cm, s]() {
                         return launch_tiled_gemm(c, sgemm, pg, *cm, *a, *b, s, s, s);
                       }});
    }
  }

  // bf16 GEMM with f32 accumulation on the tensor cores with mma.sync (sm_80+), c = a b (b k x n), square:
  // GFLOP/s = 2 n^3 / time; cuBLAS bf16 on the same layout through torch.matmul in peers.py.
  Twin gemm_mma;
  if (wanted("gemm_bf16_mma") && rt.caps().cc_major < 8) {
    fmt::print("  gemm_bf16_mma: skipped, sm_{}{} has no mma.sync bf16 (sm_80+)\n", rt.caps().cc_major, rt.caps().cc_minor);
  } else if (wanted("gemm_bf16_mma")) {
    gemm_mma = twin("gemm_bf16_mma", "gemm_bf16_mma");
    const uint32_t s = o.gemm_size;
    auto ah = random_floats(size_t{s} * s, 83), bh = random_floats(size_t{s} * s, 84);
    DeviceBuffer* a = hold(upload_bytes(c, round_to_bf16(ah)), "gemm_bf16_mma.a");
    DeviceBuffer* b = hold(upload_bytes(c, round_to_bf16(bh)), "gemm_bf16_mma.b");
    DeviceBuffer* cm = hold(filled(c, size_t{s} * s * 4, 0), "gemm_bf16_mma.c");
    for (bool pg : both) {
      if (!present(gemm_mma, pg) || !a || !b || !cm) continue;
      bool ok = check_tiled_gemm(c, gemm_mma, pg, true, 257, 136, 200, label("gemm_bf16_mma", pg) + ".257x136x200") &&
                check_tiled_gemm(c, gemm_mma, pg, true, 512, 384, 1032, label("gemm_bf16_mma", pg) + ".512x384x1032") &&
                check_tiled_gemm_timed(c, gemm_mma, pg, *cm, *a, *b, ah, bh, s,
                                       label("gemm_bf16_mma", pg) + fmt::format(".{0}x{0}x{0}.sampled", s));
      if (!ok) {
        status = 1;
        continue;
      }
      timed.push_back({label("gemm_bf16_mma", pg), "GFLOP/s", 2.0 * double(s) * s * s, [&c, &gemm_mma, pg, a, b, cm, s]() {
                         return launch_tiled_gemm(c, gemm_mma, pg, *cm, *a, *b, s, s, s);
                       }});
    }
  }

  // bf16 GEMM on Hopper (wgmma + TMA, sm_90a only): GFLOP/s = 2 n^3 / time; cuBLAS bf16 through torch.matmul
  // in peers.py. bench/kernels/gemm_bf16_wgmma.pg and its nvcc twin run the same algorithm.
  Twin gemm;
  std::deque<GemmOperands> gemms;
  if (wanted("gemm_bf16")) {
    const auto& caps = rt.caps();
    GemmOperands* big = nullptr;
    std::vector<uint16_t> big_a, big_b;
    if (caps.cc_major != 9 || caps.cc_minor != 0) {
      const std::string why = fmt::format("needs sm_90a (wgmma, TMA); the device is {}", caps.arch());
      out.info("gemm_bf16.skipped", why);
      fmt::print("  gemm_bf16 skipped: {}\n", why);
    } else {
      gemm = twin("gemm_bf16_wgmma", "gemm_bf16_wgmma");
      if (gemm.nv)
        if (auto r = driver(c.api.cuFuncSetAttribute(gemm.nv, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                     int(kGemmShared)),
                            "cuFuncSetAttribute");
            !r) {
          fail("gemm_bf16.nvcc", r.error());
          gemm.nv = nullptr;
        }
      const uint32_t s = o.gemm_size;
      big_a = random_bf16(size_t{s} * s, 93);
      big_b = random_bf16(size_t{s} * s, 94);
      auto g = gemm_operands(c, big_a, big_b, s, s, s);
      if (!g) {
        fail("allocate.gemm_bf16", g.error());
      } else {
        gemms.push_back(std::move(*g));
        big = &gemms.back();
      }
    }
    for (bool pg : both) {
      if (!big || !present(gemm, pg)) continue;
      bool ok = check_gemm(c, gemm, pg, 257, 264, 136, label("gemm_bf16", pg) + ".257x264x136") &&
                check_gemm(c, gemm, pg, 512, 512, 1024, label("gemm_bf16", pg) + ".512x512x1024") &&
                check_gemm_timed(c, gemm, pg, *big, big_a, big_b,
                                 label("gemm_bf16", pg) + fmt::format(".{0}x{0}x{0}.sampled", big->n));
      if (!ok) {
        status = 1;
        continue;
      }
      timed.push_back({label("gemm_bf16", pg), "GFLOP/s", 2.0 * double(big->n) * big->n * big->n,
                       [&c, &gemm, pg, big]() { return launch_gemm(c, gemm, pg, *big); }});
    }
  }

  if (!time_interleaved(c, timed, 3, o.repetitions, "workload.")) status = 1;
  for (const auto& v : timed)
    if (!v.rates.empty())
      fmt::print("  {:<24} {:>10.1f} {} (median of {})\n", v.name, summarize(v.rates).median, v.unit, v.rates.size());
  return status;
}

}  // namespace ptxgate::bench
