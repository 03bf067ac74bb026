// y = a * x + y, one element per thread: the CUDA C++ twin of examples/saxpy.pg (block 256).
extern "C" __global__ void saxpy(float* y, const float* x, float a, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
