// y = a * x + y on f16 and bf16, computed in f32 and rounded once: the CUDA C++ twins of
// bench/kernels/axpy_half.pg (block 256, 16-byte vectors of 8 halves, two per thread, all loads before the
// stores, the n % 8 last elements by the first threads).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ uint4 axpy8_f16(float a, uint4 xv, uint4 yv) {
  const __half* xs = reinterpret_cast<const __half*>(&xv);
  const __half* ys = reinterpret_cast<const __half*>(&yv);
  uint4 out;
  __half* os = reinterpret_cast<__half*>(&out);
#pragma unroll
  for (int k = 0; k < 8; ++k) os[k] = __float2half_rn(a * __half2float(xs[k]) + __half2float(ys[k]));
  return out;
}

__device__ __forceinline__ uint4 axpy8_bf16(float a, uint4 xv, uint4 yv) {
  const __nv_bfloat16* xs = reinterpret_cast<const __nv_bfloat16*>(&xv);
  const __nv_bfloat16* ys = reinterpret_cast<const __nv_bfloat16*>(&yv);
  uint4 out;
  __nv_bfloat16* os = reinterpret_cast<__nv_bfloat16*>(&out);
#pragma unroll
  for (int k = 0; k < 8; ++k) os[k] = __float2bfloat16_rn(a * __bfloat162float(xs[k]) + __bfloat162float(ys[k]));
  return out;
}

extern "C" __global__ void __launch_bounds__(256) axpy_f16(__half* y, const __half* x, float a, unsigned n) {
  const unsigned vectors = n / 8, v = blockIdx.x * 512 + threadIdx.x;
  const uint4* x8 = reinterpret_cast<const uint4*>(x);
  uint4* y8 = reinterpret_cast<uint4*>(y);
  if (v + 256 < vectors) {
    const uint4 x0 = x8[v], x1 = x8[v + 256], y0 = y8[v], y1 = y8[v + 256];
    y8[v] = axpy8_f16(a, x0, y0);
    y8[v + 256] = axpy8_f16(a, x1, y1);
  } else {
    for (unsigned k = 0; k < 2; ++k) {
      const unsigned u = v + k * 256;
      if (u < vectors) y8[u] = axpy8_f16(a, x8[u], y8[u]);
    }
  }
  const unsigned g = blockIdx.x * 256 + threadIdx.x;
  if (g < n % 8) y[vectors * 8 + g] = __float2half_rn(a * __half2float(x[vectors * 8 + g]) + __half2float(y[vectors * 8 + g]));
}

extern "C" __global__ void __launch_bounds__(256) axpy_bf16(__nv_bfloat16* y, const __nv_bfloat16* x, float a, unsigned n) {
  const unsigned vectors = n / 8, v = blockIdx.x * 512 + threadIdx.x;
  const uint4* x8 = reinterpret_cast<const uint4*>(x);
  uint4* y8 = reinterpret_cast<uint4*>(y);
  if (v + 256 < vectors) {
    const uint4 x0 = x8[v], x1 = x8[v + 256], y0 = y8[v], y1 = y8[v + 256];
    y8[v] = axpy8_bf16(a, x0, y0);
    y8[v + 256] = axpy8_bf16(a, x1, y1);
  } else {
    for (unsigned k = 0; k < 2; ++k) {
      const unsigned u = v + k * 256;
      if (u < vectors) y8[u] = axpy8_bf16(a, x8[u], y8[u]);
    }
  }
  const unsigned g = blockIdx.x * 256 + threadIdx.x;
  if (g < n % 8) y[vectors * 8 + g] = __float2bfloat16_rn(a * __bfloat162float(x[vectors * 8 + g]) + __bfloat162float(y[vectors * 8 + g]));
}
