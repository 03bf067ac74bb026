// total[0] += sum(x): the CUDA C++ twin of bench/kernels/warp_sum.pg (block 256, float4 loads with four in
// flight per thread and 64-bit indices, the n % 4 last elements by the first threads, __shfl_xor_sync warp
// reductions, one atomic per block).
__device__ __forceinline__ float warp_reduce(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float4 add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

extern "C" __global__ void __launch_bounds__(256) warp_sum(float* total, const float* x, unsigned n) {
  __shared__ float partial[8];
  const unsigned long long stride = (unsigned long long)gridDim.x * 256, vectors = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4 s0 = make_float4(0, 0, 0, 0), s1 = s0, s2 = s0, s3 = s0;
  unsigned long long i = blockIdx.x * 256 + threadIdx.x;
  while (i + 3 * stride < vectors) {
    const float4 v0 = x4[i], v1 = x4[i + stride], v2 = x4[i + 2 * stride], v3 = x4[i + 3 * stride];
    s0 = add4(s0, v0);
    s1 = add4(s1, v1);
    s2 = add4(s2, v2);
    s3 = add4(s3, v3);
    i += 4 * stride;
  }
  while (i < vectors) {
    s0 = add4(s0, x4[i]);
    i += stride;
  }
  const float4 s = add4(add4(s0, s1), add4(s2, s3));
  float mine = (s.x + s.y) + (s.z + s.w);
  const unsigned g = blockIdx.x * 256 + threadIdx.x;
  if (g < n % 4) mine += x[vectors * 4 + g];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float warp_total = warp_reduce(mine);
  if (lane == 0) partial[warp] = warp_total;
  __syncthreads();
  if (warp == 0) {
    float v = lane < 8 ? partial[lane] : 0.0f;
    float block_total = warp_reduce(v);
    if (lane == 0) atomicAdd(total, block_total);
  }
}
