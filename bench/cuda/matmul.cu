// c = a * b (row-major f32; a m x k, b k x n) with 16x16 shared tiles: the CUDA C++ twin of examples/matmul.pg.
extern "C" __global__ void matmul(float* c, const float* a, const float* b, unsigned m, unsigned n, unsigned k) {
  __shared__ float tile_a[256];
  __shared__ float tile_b[256];
  unsigned tx = threadIdx.x, ty = threadIdx.y;
  unsigned row = blockIdx.y * 16 + ty;
  unsigned col = blockIdx.x * 16 + tx;
  float acc = 0.0f;
  unsigned tiles = (k + 15) / 16;
  for (unsigned t = 0; t < tiles; ++t) {
    unsigned ka = t * 16 + tx, kb = t * 16 + ty;
    float va = 0.0f, vb = 0.0f;
    if (row < m && ka < k) va = a[row * k + ka];
    if (kb < k && col < n) vb = b[kb * n + col];
    tile_a[ty * 16 + tx] = va;
    tile_b[ty * 16 + tx] = vb;
    __syncthreads();
    for (unsigned j = 0; j < 16; ++j) acc = fmaf(tile_a[ty * 16 + j], tile_b[j * 16 + tx], acc);
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}
