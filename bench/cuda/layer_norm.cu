// Layer norm over the last dimension: the CUDA C++ twin of bench/kernels/layer_norm.pg (one
// 256-thread block per row, the row in dynamic shared memory with eight loads in flight per thread,
// warp-shuffle sums, a second pass over shared memory for the variance, rsqrtf).
__device__ __forceinline__ float warp_add(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

extern "C" __global__ void __launch_bounds__(256) layer_norm(float* y, const float* x, const float* w, const float* b,
                                                             unsigned cols, float eps) {
  extern __shared__ float row[];
  __shared__ float partial[8];
  const unsigned B = 256;
  const unsigned long long base = (unsigned long long)blockIdx.x * cols;
  const unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
  float s0 = 0.0f, s1 = 0.0f;
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
    s0 += (v0 + v1) + (v2 + v3);
    s1 += (v4 + v5) + (v6 + v7);
  }
  for (; j < cols; j += B) {
    float v = x[base + j];
    row[j] = v;
    s0 += v;
  }
  float ws = warp_add(s0 + s1);
  if (lane == 0) partial[warp] = ws;
  __syncthreads();
  const float mean = warp_add(lane < 8 ? partial[lane] : 0.0f) / (float)cols;
  __syncthreads();
  float q = 0.0f;
  for (unsigned k = t; k < cols; k += B) {
    float d = row[k] - mean;
    q += d * d;
  }
  float wq = warp_add(q);
  if (lane == 0) partial[warp] = wq;
  __syncthreads();
  const float rstd = rsqrtf(warp_add(lane < 8 ? partial[lane] : 0.0f) / (float)cols + eps);
  unsigned o = t;
  for (; o + 3 * B < cols; o += 4 * B) {
    float w0 = w[o], w1 = w[o + B], w2 = w[o + 2 * B], w3 = w[o + 3 * B];
    float b0 = b[o], b1 = b[o + B], b2 = b[o + 2 * B], b3 = b[o + 3 * B];
    y[base + o] = (row[o] - mean) * rstd * w0 + b0;
    y[base + o + B] = (row[o + B] - mean) * rstd * w1 + b1;
    y[base + o + 2 * B] = (row[o + 2 * B] - mean) * rstd * w2 + b2;
    y[base + o + 3 * B] = (row[o + 3 * B] - mean) * rstd * w3 + b3;
  }
  for (; o < cols; o += B) y[base + o] = (row[o] - mean) * rstd * w[o] + b[o];
}
