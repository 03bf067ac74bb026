// y = a * x + y on f16 and bf16, computed in f32 and rounded once: the CUDA C++ twins of
// bench/kernels/axpy_half.pg (block 256, eight elements per thread, all loads before the stores).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void __launch_bounds__(256) axpy_f16(__half* y, const __half* x, float a, unsigned n) {
  const unsigned i = blockIdx.x * 2048 + threadIdx.x;
  if (i + 1792 < n) {
    __half xv[8], yv[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) xv[k] = x[i + 256 * k];
#pragma unroll
    for (int k = 0; k < 8; ++k) yv[k] = y[i + 256 * k];
#pragma unroll
    for (int k = 0; k < 8; ++k) y[i + 256 * k] = __float2half_rn(a * __half2float(xv[k]) + __half2float(yv[k]));
  } else {
    for (unsigned k = 0; k < 8; ++k) {
      unsigned j = i + k * 256;
      if (j < n) y[j] = __float2half_rn(a * __half2float(x[j]) + __half2float(y[j]));
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) axpy_bf16(__nv_bfloat16* y, const __nv_bfloat16* x, float a, unsigned n) {
  const unsigned i = blockIdx.x * 2048 + threadIdx.x;
  if (i + 1792 < n) {
    __nv_bfloat16 xv[8], yv[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) xv[k] = x[i + 256 * k];
#pragma unroll
    for (int k = 0; k < 8; ++k) yv[k] = y[i + 256 * k];
#pragma unroll
    for (int k = 0; k < 8; ++k) y[i + 256 * k] = __float2bfloat16_rn(a * __bfloat162float(xv[k]) + __bfloat162float(yv[k]));
  } else {
    for (unsigned k = 0; k < 8; ++k) {
      unsigned j = i + k * 256;
      if (j < n) y[j] = __float2bfloat16_rn(a * __bfloat162float(x[j]) + __bfloat162float(y[j]));
    }
  }
}
