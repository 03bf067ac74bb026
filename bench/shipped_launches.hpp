// The shipped example and benchmark kernels at their documented launches: the memory-safety tests
// check each one's verdict and validate_bench times validating each as a new launch shape.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ptxgate::shipped {

inline uint64_t f32(float v) { return std::bit_cast<uint32_t>(v); }
inline uint64_t f64(double v) { return std::bit_cast<uint64_t>(v); }
inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/// A kernel of a shipped file at one documented launch.
struct Launch {
  const char* file;    ///< relative to the source tree
  const char* kernel;
  std::array<uint64_t, 3> grid, block;
  uint64_t dynamic_shared;
  std::vector<std::pair<std::string, uint64_t>> arguments;  ///< buffers: bytes; scalars: bits
  bool all_proven;     ///< every access proven (guarded kernels); else: none out of bounds
};

inline std::vector<Launch> shipped_launches() {
  const uint64_t n = 1000003, w = 1000, h = 700, rows = 10000, features = 16;
  const uint64_t m = 300, nn = 200, kk = 160;
  const uint64_t srows = 512, scols = 4096;
  const uint64_t g = 1024;
  return {
      {"examples/saxpy.pg", "saxpy", {ceil_div(n, 256), 1, 1}, {256, 1, 1}, 0,
       {{"y", 4 * n}, {"x", 4 * n}, {"a", f32(2.5f)}, {"n", n}}, true},
      {"examples/block_sum.pg", "block_sum", {ceil_div(n, 256), 1, 1}, {256, 1, 1}, 0,
       {{"total", 4}, {"x", 4 * n}, {"n", n}}, true},
      {"examples/grid_stride.pg", "grid_stride", {132, 1, 1}, {256, 1, 1}, 0,
       {{"hashed", 8 * n}, {"steps", 8 * n}, {"keys", 8 * n}, {"n", n}}, true},
      {"examples/histogram.pg", "histogram", {ceil_div(n, 256), 1, 1}, {256, 1, 1}, 0,
       {{"bins", 4 * 200}, {"values", 4 * n}, {"n", n}, {"nbins", 200}}, true},
      {"examples/jacobi.pg", "jacobi", {ceil_div(w, 16), ceil_div(h, 16), 1}, {16, 16, 1}, 0,
       {{"dst", 4 * w * h}, {"src", 4 * w * h}, {"width", w}, {"height", h}}, true},
      {"examples/linreg.pg", "linreg_data", {ceil_div(rows, 256), 1, 1}, {256, 1, 1}, 0,
       {{"x", 4 * rows * features}, {"y", 4 * rows}, {"first", 0}, {"rows", rows}, {"features", features}}, true},
      {"examples/linreg.pg", "linreg_grad", {ceil_div(rows, 256), 1, 1}, {256, 1, 1}, 0,
       {{"grad", 8 * (features + 1)}, {"x", 4 * rows * features}, {"y", 4 * rows}, {"w", 8 * features},
        {"rows", rows}, {"features", features}}, true},
      {"examples/linreg.pg", "linreg_update", {1, 1, 1}, {256, 1, 1}, 0,
       {{"w", 8 * features}, {"grad", 8 * (features + 1)}, {"rate", f64(0.1)}, {"total_rows", rows}, {"features", features}},
       true},
      {"examples/math.pg", "math", {ceil_div(n, 128), 1, 1}, {128, 1, 1}, 0,
       {{"r32", 4 * n}, {"r64", 8 * n}, {"ri", 4 * n}, {"a", 4 * n}, {"b", 4 * n}, {"n", n}}, true},
      {"examples/matmul.pg", "matmul", {ceil_div(nn, 16), ceil_div(m, 16), 1}, {16, 16, 1}, 0,
       {{"c", 4 * m * nn}, {"a", 4 * m * kk}, {"b", 4 * kk * nn}, {"m", m}, {"n", nn}, {"k", kk}}, true},
      {"examples/normalize.pg", "normalize", {132, 1, 1}, {256, 1, 1}, 0, {{"x", 4 * n}, {"acc", 4}, {"n", n}}, true},
      {"examples/smooth.pg", "smooth", {ceil_div(n, 256), 1, 1}, {256, 1, 1}, 0, {{"y", 4 * n}, {"x", 4 * n}, {"n", n}}, true},
      {"examples/stencil.pg", "stencil", {ceil_div(w, 16), ceil_div(h, 16), 1}, {16, 16, 1}, 0,
       {{"dst", 8 * w * h}, {"src", 8 * w * h}, {"alpha", f64(0.2)}, {"width", w}, {"height", h}}, true},
      {"examples/transpose.pg", "transpose", {ceil_div(w, 32), ceil_div(h, 32), 1}, {32, 8, 1}, 0,
       {{"dst", 4 * w * h}, {"src", 4 * w * h}, {"rows", h}, {"cols", w}}, true},
      {"examples/warp_reduce.pg", "warp_reduce", {528, 1, 1}, {256, 1, 1}, 0, {{"total", 4}, {"x", 4 * n}, {"n", n}}, true},
      {"bench/kernels/copy.pg", "copy", {ceil_div(n, 256), 1, 1}, {256, 1, 1}, 0, {{"dst", 4 * n}, {"src", 4 * n}, {"n", n}}, true},
      {"bench/kernels/copy4.pg", "copy4", {ceil_div(n, 1024), 1, 1}, {256, 1, 1}, 0,
       {{"dst", 4 * n}, {"src", 4 * n}, {"n", n}}, true},
      {"bench/kernels/saxpy4.pg", "saxpy4", {ceil_div(n, 1024), 1, 1}, {256, 1, 1}, 0,
       {{"y", 4 * n}, {"x", 4 * n}, {"a", f32(2.0f)}, {"n", n}}, true},
      {"bench/kernels/axpy_half.pg", "axpy_f16", {ceil_div(n, 4096), 1, 1}, {256, 1, 1}, 0,
       {{"y", 2 * n}, {"x", 2 * n}, {"a", f32(0.5f)}, {"n", n}}, true},
      {"bench/kernels/axpy_half.pg", "axpy_bf16", {ceil_div(n, 4096), 1, 1}, {256, 1, 1}, 0,
       {{"y", 2 * n}, {"x", 2 * n}, {"a", f32(0.5f)}, {"n", n}}, true},
      {"bench/kernels/softmax.pg", "softmax", {srows, 1, 1}, {256, 1, 1}, 4 * scols,
       {{"y", 4 * srows * scols}, {"x", 4 * srows * scols}, {"cols", scols}}, true},
      {"bench/kernels/layer_norm.pg", "layer_norm", {srows, 1, 1}, {256, 1, 1}, 4 * scols,
       {{"y", 4 * srows * scols}, {"x", 4 * srows * scols}, {"w", 4 * scols}, {"b", 4 * scols}, {"cols", scols},
        {"eps", f32(1e-5f)}}, true},
      {"bench/kernels/warp_sum.pg", "warp_sum", {528, 1, 1}, {256, 1, 1}, 0, {{"total", 4}, {"x", 4 * n}, {"n", n}}, true},
      {"bench/kernels/sgemm.pg", "sgemm", {g / 128, g / 128, 1}, {256, 1, 1}, 0,
       {{"c", 4 * g * g}, {"a", 4 * g * g}, {"b", 4 * g * g}, {"m", g}, {"n", g}, {"k", g}}, true},
      {"bench/kernels/gemm_bf16_mma.pg", "gemm_bf16_mma", {g / 128, g / 128, 1}, {256, 1, 1}, 0,
       {{"c", 4 * g * g}, {"a", 2 * g * g}, {"b", 2 * g * g}, {"m", g}, {"n", g}, {"k", g}}, true},
      {"bench/kernels/bfs.pg", "bfs_expand", {ceil_div(n, 256), 1, 1}, {256, 1, 1}, 0,
       {{"row_start", 4 * (n + 1)}, {"adj", 4 * 8 * n}, {"frontier", n}, {"updating", n}, {"visited", n},
        {"cost", 4 * n}, {"n", n}}, false},
      {"bench/kernels/bfs.pg", "bfs_mark", {ceil_div(n, 256), 1, 1}, {256, 1, 1}, 0,
       {{"frontier", n}, {"updating", n}, {"visited", n}, {"more", 4}, {"n", n}}, true},
  };
}


}  // namespace ptxgate::shipped
