// Row softmax: the CUDA C++ twin of bench/kernels/softmax.pg (one 256-thread block per row, the row in
// dynamic shared memory as float4 with four loads in flight per thread, warp-shuffle max and sum, expf;
// cols a multiple of 4).
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
__device__ __forceinline__ float warp_add(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }

extern "C" __global__ void __launch_bounds__(256) softmax(float* y, const float* x, unsigned cols) {
  extern __shared__ float4 row[];
  __shared__ float partial[8];
  const unsigned B = 256, vectors = cols / 4;
  const unsigned long long base = (unsigned long long)blockIdx.x * vectors;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  const unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
  float m = -3.4028234663852886e38f;
  unsigned j = t;
  for (; j + 3 * B < vectors; j += 4 * B) {
    const float4 v0 = x4[base + j], v1 = x4[base + j + B], v2 = x4[base + j + 2 * B], v3 = x4[base + j + 3 * B];
    row[j] = v0;
    row[j + B] = v1;
    row[j + 2 * B] = v2;
    row[j + 3 * B] = v3;
    m = fmaxf(m, fmaxf(fmaxf(max4(v0), max4(v1)), fmaxf(max4(v2), max4(v3))));
  }
  for (; j < vectors; j += B) {
    const float4 v = x4[base + j];
    row[j] = v;
    m = fmaxf(m, max4(v));
  }
  float wm = warp_max(m);
  if (lane == 0) partial[warp] = wm;
  __syncthreads();
  const float row_max = warp_max(lane < 8 ? partial[lane] : -3.4028234663852886e38f);
  __syncthreads();
  float s = 0.0f;
  for (unsigned k = t; k < vectors; k += B) {
    const float4 v = row[k];
    const float4 e = make_float4(expf(v.x - row_max), expf(v.y - row_max), expf(v.z - row_max), expf(v.w - row_max));
    row[k] = e;
    s += (e.x + e.y) + (e.z + e.w);
  }
  float ws = warp_add(s);
  if (lane == 0) partial[warp] = ws;
  __syncthreads();
  const float inv = 1.0f / warp_add(lane < 8 ? partial[lane] : 0.0f);
  for (unsigned w = t; w < vectors; w += B) {
    const float4 v = row[w];
    y4[base + w] = make_float4(v.x * inv, v.y * inv, v.z * inv, v.w * inv);
  }
}
