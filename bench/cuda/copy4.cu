// dst = src, four elements per thread: the CUDA C++ twin of bench/kernels/copy4.pg (block 256).
extern "C" __global__ void copy4(float* dst, const float* src, unsigned n) {
  unsigned i = blockIdx.x * 1024 + threadIdx.x;
  if (i + 768 < n) {
    float v0 = src[i], v1 = src[i + 256], v2 = src[i + 512], v3 = src[i + 768];
    dst[i] = v0;
    dst[i + 256] = v1;
    dst[i + 512] = v2;
    dst[i + 768] = v3;
  } else {
    for (unsigned k = 0; k < 4; ++k) {
      unsigned j = i + k * 256;
      if (j < n) dst[j] = src[j];
    }
  }
}
