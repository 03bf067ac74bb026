// y = a * x + y, four elements per thread: the CUDA C++ twin of bench/kernels/saxpy4.pg (block 256).
extern "C" __global__ void saxpy4(float* y, const float* x, float a, unsigned n) {
  unsigned i = blockIdx.x * 1024 + threadIdx.x;
  if (i + 768 < n) {
    float x0 = x[i], x1 = x[i + 256], x2 = x[i + 512], x3 = x[i + 768];
    float y0 = y[i], y1 = y[i + 256], y2 = y[i + 512], y3 = y[i + 768];
    y[i] = a * x0 + y0;
    y[i + 256] = a * x1 + y1;
    y[i + 512] = a * x2 + y2;
    y[i + 768] = a * x3 + y3;
  } else {
    for (unsigned k = 0; k < 4; ++k) {
      unsigned j = i + k * 256;
      if (j < n) y[j] = a * x[j] + y[j];
    }
  }
}
