// c = a * b, row-major f32 (a m x k, b k x n, c m x n): the CUDA C++ twin of bench/kernels/sgemm.pg.
// 128 x 128 block tiles, k in steps of 8, 256 threads each computing 8 x 8 outputs (rows ty*4 + i and
// 64 + ty*4 + i, columns tx*4 + j and 64 + tx*4 + j: float4 shared reads without bank conflicts), float4
// global loads, a double-buffered shared tile (the next tile's global loads in flight during the
// current tile's 512 FMAs), A stored transposed. Requires n % 4 == 0 and k % 4 == 0 (float4 alignment);
// m, n, k need not be multiples of the tile. Launch: grid (ceil(n / 128), ceil(m / 128)), block 256.
// The eight k-steps of a tile are unrolled; nvcc's ptxas issues the next tile's global loads before
// them without help (the .pg twin needs fence_block() after its loads for that, see its header).
extern "C" __global__ void __launch_bounds__(256) sgemm(float* c, const float* a, const float* b, unsigned m,
                                                        unsigned n, unsigned k) {
  __shared__ __align__(16) float As[2][8][128];
  __shared__ __align__(16) float Bs[2][8][128];
  const unsigned t = threadIdx.x, tx = t % 16, ty = t / 16;
  const unsigned row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
  const unsigned a_row = t / 2, a_k = (t % 2) * 4;    // A tile 128 x 8: one float4 of a row per thread
  const unsigned b_k = t / 32, b_col = (t % 32) * 4;  // B tile 8 x 128: one float4 of a row per thread
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
  float4 ra, rb;
  auto load = [&](unsigned k0) {
    const unsigned gr = row0 + a_row, gk = k0 + a_k, bk = k0 + b_k, bc = col0 + b_col;
    ra = gr < m && gk < k ? *reinterpret_cast<const float4*>(a + (size_t)gr * k + gk) : zero;
    rb = bk < k && bc < n ? *reinterpret_cast<const float4*>(b + (size_t)bk * n + bc) : zero;
  };
  auto store = [&](int buf) {
    As[buf][a_k][a_row] = ra.x;
    As[buf][a_k + 1][a_row] = ra.y;
    As[buf][a_k + 2][a_row] = ra.z;
    As[buf][a_k + 3][a_row] = ra.w;
    *reinterpret_cast<float4*>(&Bs[buf][b_k][b_col]) = rb;
  };
  const unsigned tiles = (k + 7) / 8;
  load(0);
  store(0);
  __syncthreads();
  for (unsigned tile = 0; tile < tiles; ++tile) {
    const int cur = tile & 1;
    if (tile + 1 < tiles) load((tile + 1) * 8);
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][kk][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][kk][64 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][kk][64 + tx * 4]);
      const float ar[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float br[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
    }
    if (tile + 1 < tiles) store(cur ^ 1);
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const unsigned r = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
    if (r >= m) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const unsigned col = col0 + h * 64 + tx * 4;
      if (col < n)
        *reinterpret_cast<float4*>(c + (size_t)r * n + col) =
            make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
    }
  }
}
