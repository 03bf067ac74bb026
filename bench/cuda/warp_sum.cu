// total[0] += sum(x): the CUDA C++ twin of bench/kernels/warp_sum.pg (block 256, four independent
// loads per thread and iteration, __shfl_xor_sync warp reductions, one atomic per block).
__device__ __forceinline__ float warp_reduce(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

extern "C" __global__ void __launch_bounds__(256) warp_sum(float* total, const float* x, unsigned n) {
  __shared__ float partial[8];
  const unsigned stride = gridDim.x * 256;
  float a = 0.0f, b = 0.0f, c = 0.0f, d = 0.0f;
  unsigned i = blockIdx.x * 256 + threadIdx.x;
  while (i + 3 * stride < n) {
    a += x[i];
    b += x[i + stride];
    c += x[i + 2 * stride];
    d += x[i + 3 * stride];
    i += 4 * stride;
  }
  while (i < n) {
    a += x[i];
    i += stride;
  }
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float warp_total = warp_reduce(a + b + (c + d));
  if (lane == 0) partial[warp] = warp_total;
  __syncthreads();
  if (warp == 0) {
    float v = lane < 8 ? partial[lane] : 0.0f;
    float block_total = warp_reduce(v);
    if (lane == 0) atomicAdd(total, block_total);
  }
}
