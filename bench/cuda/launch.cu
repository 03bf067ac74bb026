// Launch-overhead probes with 0, 4 and 16 parameters: the CUDA C++ twins of bench/kernels/launch*.pg.
extern "C" __global__ void launch0() {}

extern "C" __global__ void launch4(float* y, float a, unsigned flag, int c) {
  if (flag == 0xFFFFFFFFu && blockIdx.x * blockDim.x + threadIdx.x == 0) y[0] = a + float(c);
}

extern "C" __global__ void launch16(float* y0, float* y1, const float* x0, const float* x1, float a, float b,
                                    double c, double d, int e, int f, unsigned g, unsigned h, long long p,
                                    unsigned long long q, unsigned long long r, unsigned flag) {
  if (flag == 0xFFFFFFFFu && blockIdx.x * blockDim.x + threadIdx.x == 0) {
    y0[0] = x0[0] * a + b + float(c + d) + float(e + f) + float(g + h) + float(p) + float(q + r);
    y1[0] = x1[0];
  }
}
