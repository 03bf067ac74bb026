// Row softmax: the CUDA C++ twin of bench/kernels/softmax.pg (one 256-thread block per row, the row
// in dynamic shared memory with eight loads in flight per thread, warp-shuffle max and sum, expf).
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
__device__ __forceinline__ float warp_add(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

extern "C" __global__ void __launch_bounds__(256) softmax(float* y, const float* x, unsigned cols) {
  extern __shared__ float row[];
  __shared__ float partial[8];
  const unsigned B = 256;
  const unsigned long long base = (unsigned long long)blockIdx.x * cols;
  const unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
  float m = -3.4028234663852886e38f;
  unsigned j = t;
  for (; j + 7 * B < cols; j += 8 * B) {
    float v0 = x[base + j], v1 = x[base + j + B], v2 = x[base + j + 2 * B], v3 = x[base + j + 3 * B];
    float v4 = x[base + j + 4 * B], v5 = x[base + j + 5 * B], v6 = x[base + j + 6 * B], v7 = x[base + j + 7 * B];
    row[j] = v0;
    row[j + B] = v1;
    row[j + 2 * B] = v2;
    row[j + 3 * B] = v3;
    row[j + 4 * B] = v4;
    row[j + 5 * B] = v5;
    row[j + 6 * B] = v6;
    row[j + 7 * B] = v7;
    m = fmaxf(m, fmaxf(fmaxf(fmaxf(v0, v1), fmaxf(v2, v3)), fmaxf(fmaxf(v4, v5), fmaxf(v6, v7))));
  }
  for (; j < cols; j += B) {
    float v = x[base + j];
    row[j] = v;
    m = fmaxf(m, v);
  }
  float wm = warp_max(m);
  if (lane == 0) partial[warp] = wm;
  __syncthreads();
  const float row_max = warp_max(lane < 8 ? partial[lane] : -3.4028234663852886e38f);
  __syncthreads();
  float s = 0.0f;
  for (unsigned k = t; k < cols; k += B) {
    float e = expf(row[k] - row_max);
    row[k] = e;
    s += e;
  }
  float ws = warp_add(s);
  if (lane == 0) partial[warp] = ws;
  __syncthreads();
  const float inv = 1.0f / warp_add(lane < 8 ? partial[lane] : 0.0f);
  unsigned w = t;
  for (; w + 3 * B < cols; w += 4 * B) {
    y[base + w] = row[w] * inv;
    y[base + w + B] = row[w + B] * inv;
    y[base + w + 2 * B] = row[w + 2 * B] * inv;
    y[base + w + 3 * B] = row[w + 3 * B] * inv;
  }
  for (; w < cols; w += B) y[base + w] = row[w] * inv;
}
