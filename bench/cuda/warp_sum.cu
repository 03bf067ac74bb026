// total[0] += sum(x): the CUDA C++ twin of bench/kernels/warp_sum.pg (block 256, eight independent
// loads per thread and iteration with 64-bit indices, __shfl_xor_sync warp reductions, one atomic per block).
__device__ __forceinline__ float warp_reduce(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

extern "C" __global__ void __launch_bounds__(256) warp_sum(float* total, const float* x, unsigned n) {
  __shared__ float partial[8];
  const unsigned long long stride = (unsigned long long)gridDim.x * 256, count = n;
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, a4 = 0.0f, a5 = 0.0f, a6 = 0.0f, a7 = 0.0f;
  unsigned long long i = blockIdx.x * 256 + threadIdx.x;
  while (i + 7 * stride < count) {
    float v0 = x[i], v1 = x[i + stride], v2 = x[i + 2 * stride], v3 = x[i + 3 * stride];
    float v4 = x[i + 4 * stride], v5 = x[i + 5 * stride], v6 = x[i + 6 * stride], v7 = x[i + 7 * stride];
    a0 += v0;
    a1 += v1;
    a2 += v2;
    a3 += v3;
    a4 += v4;
    a5 += v5;
    a6 += v6;
    a7 += v7;
    i += 8 * stride;
  }
  while (i < count) {
    a0 += x[i];
    i += stride;
  }
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float warp_total = warp_reduce((a0 + a1) + (a2 + a3) + ((a4 + a5) + (a6 + a7)));
  if (lane == 0) partial[warp] = warp_total;
  __syncthreads();
  if (warp == 0) {
    float v = lane < 8 ? partial[lane] : 0.0f;
    float block_total = warp_reduce(v);
    if (lane == 0) atomicAdd(total, block_total);
  }
}
