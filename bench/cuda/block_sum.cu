// total[0] += sum(x): shared-memory tree reduction of 256 elements per block, one atomic per block.
// The CUDA C++ twin of examples/block_sum.pg (block 256).
extern "C" __global__ void block_sum(float* total, const float* x, unsigned n) {
  __shared__ float partial[256];
  unsigned t = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = 0.0f;
  if (i < n) v = x[i];
  partial[t] = v;
  __syncthreads();
  for (unsigned stride = 128; stride > 0; stride /= 2) {
    if (t < stride) partial[t] = partial[t] + partial[t + stride];
    __syncthreads();
  }
  if (t == 0) atomicAdd(total, partial[0]);
}
