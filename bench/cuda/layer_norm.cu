// Layer norm over the last dimension: the CUDA C++ twin of bench/kernels/layer_norm.pg (one 256-thread
// block per row, the row in dynamic shared memory as float4 with four loads in flight per thread,
// warp-shuffle sums, a second pass over shared memory for the variance, rsqrtf; cols a multiple of 4).
__device__ __forceinline__ float warp_add(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float4 add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
__device__ __forceinline__ float4 norm4(float4 v, float mean, float rstd, float4 w, float4 b) {
  return make_float4((v.x - mean) * rstd * w.x + b.x, (v.y - mean) * rstd * w.y + b.y, (v.z - mean) * rstd * w.z + b.z,
                     (v.w - mean) * rstd * w.w + b.w);
}

extern "C" __global__ void __launch_bounds__(256) layer_norm(float* y, const float* x, const float* w, const float* b,
                                                             unsigned cols, float eps) {
  extern __shared__ float4 row[];
  __shared__ float partial[8];
  const unsigned B = 256, vectors = cols / 4;
  const unsigned long long base = (unsigned long long)blockIdx.x * vectors;
  const float4 *x4 = reinterpret_cast<const float4*>(x), *w4 = reinterpret_cast<const float4*>(w),
               *b4 = reinterpret_cast<const float4*>(b);
  float4* y4 = reinterpret_cast<float4*>(y);
  const unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
  float4 s0 = make_float4(0, 0, 0, 0), s1 = s0;
  unsigned j = t;
  for (; j + 3 * B < vectors; j += 4 * B) {
    const float4 v0 = x4[base + j], v1 = x4[base + j + B], v2 = x4[base + j + 2 * B], v3 = x4[base + j + 3 * B];
    row[j] = v0;
    row[j + B] = v1;
    row[j + 2 * B] = v2;
    row[j + 3 * B] = v3;
    s0 = add4(s0, add4(v0, v1));
    s1 = add4(s1, add4(v2, v3));
  }
  for (; j < vectors; j += B) {
    const float4 v = x4[base + j];
    row[j] = v;
    s0 = add4(s0, v);
  }
  const float4 s = add4(s0, s1);
  float ws = warp_add((s.x + s.y) + (s.z + s.w));
  if (lane == 0) partial[warp] = ws;
  __syncthreads();
  const float mean = warp_add(lane < 8 ? partial[lane] : 0.0f) / (float)cols;
  __syncthreads();
  float4 q = make_float4(0, 0, 0, 0);
  for (unsigned k = t; k < vectors; k += B) {
    const float4 v = row[k];
    const float4 d = make_float4(v.x - mean, v.y - mean, v.z - mean, v.w - mean);
    q = add4(q, make_float4(d.x * d.x, d.y * d.y, d.z * d.z, d.w * d.w));
  }
  float wq = warp_add((q.x + q.y) + (q.z + q.w));
  if (lane == 0) partial[warp] = wq;
  __syncthreads();
  const float rstd = rsqrtf(warp_add(lane < 8 ? partial[lane] : 0.0f) / (float)cols + eps);
  unsigned o = t;
  for (; o + B < vectors; o += 2 * B) {
    const float4 w0 = w4[o], w1 = w4[o + B], b0 = b4[o], b1 = b4[o + B];
    y4[base + o] = norm4(row[o], mean, rstd, w0, b0);
    y4[base + o + B] = norm4(row[o + B], mean, rstd, w1, b1);
  }
  for (; o < vectors; o += B) y4[base + o] = norm4(row[o], mean, rstd, w4[o], b4[o]);
}
