// c = a * b, bf16 inputs, f32 accumulation, row-major (a m x k, b k x n, c m x n f32): the CUDA C++ twin of
// bench/kernels/gemm_bf16_mma.pg, the same algorithm in the same PTX instructions (inline mma.sync m16n8k16,
// ldmatrix.x4 / .x4.trans, cp.async.cg with zero fill, commit/wait groups). Block tile 128 x 128 x 32,
// 256 threads = 8 warps as 2 x 4, each warp 64 x 32 (4 x 4 mma tiles); three stages of 16 KiB in shared
// memory, rows XOR-swizzled in 16-byte chunks (A: c ^ ((r / 2) % 4), B: c ^ (r % 8)). Requires n % 8 == 0
// and k % 8 == 0; m is free. Launch: grid (ceil(n / 128), ceil(m / 128)), block 256.
#ifdef __CUDACC_RTC__  // NVRTC opens no C++ standard headers: the fixed-width types this file uses
typedef unsigned short uint16_t;
typedef unsigned long long uint64_t;
#else
#include <cstdint>
#endif

namespace {

constexpr unsigned kTile = 128, kStages = 3, kChunks = kTile * 32 / 8;

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, unsigned src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned addr, unsigned (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned addr, unsigned (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace

extern "C" __global__ void __launch_bounds__(256) gemm_bf16_mma(float* c, const uint16_t* a, const uint16_t* b,
                                                            unsigned m, unsigned n, unsigned k) {
  __shared__ __align__(16) uint16_t As[kStages * kTile * 32];
  __shared__ __align__(16) uint16_t Bs[kStages * kTile * 32];
  const unsigned t = threadIdx.x, lane = t % 32, warp = t / 32, g = lane / 4, tq = lane % 4;
  const unsigned wm = (warp / 4) * 64, wn = (warp % 4) * 32;
  const unsigned row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  const unsigned tiles = (k + 31) / 32;
  const unsigned as = shared_address(As), bs = shared_address(Bs);
  float acc[16][4] = {};

  auto load = [&](unsigned tile, unsigned stage) {
    const unsigned k0 = tile * 32, base = stage * kChunks;
#pragma unroll
    for (unsigned i = 0; i < 2; ++i) {
      const unsigned q = t + 256 * i;
      const unsigned ar = q / 4, ac = q % 4;
      const bool av = row0 + ar < m && k0 + ac * 8 < k;
      const uint16_t* asrc = a + (av ? (uint64_t(row0 + ar) * k + k0 + ac * 8) : 0);
      cp_async16(as + 16 * (base + ar * 4 + (ac ^ ((ar / 2) % 4))), asrc, av ? 16 : 0);
      const unsigned br = q / 16, bc = q % 16;
      const bool bv = k0 + br < k && col0 + bc * 8 < n;
      const uint16_t* bsrc = b + (bv ? (uint64_t(k0 + br) * n + col0 + bc * 8) : 0);
      cp_async16(bs + 16 * (base + br * 16 + (bc ^ (br % 8))), bsrc, bv ? 16 : 0);
    }
  };

#pragma unroll
  for (unsigned s = 0; s < kStages - 1; ++s) {
    if (s < tiles) load(s, s);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  for (unsigned tile = 0; tile < tiles; ++tile) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 2) : "memory");
    __syncthreads();
    const unsigned next = tile + kStages - 1;
    if (next < tiles) load(next, next % kStages);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    const unsigned sb = (tile % kStages) * kChunks;
#pragma unroll
    for (unsigned kk = 0; kk < 2; ++kk) {
      const unsigned br = kk * 16 + lane % 8 + ((lane / 8) % 2) * 8, bq = wn / 8 + lane / 16;
      unsigned fb0[4], fb1[4];
      ldmatrix_x4_trans(bs + 16 * (sb + br * 16 + (bq ^ (br % 8))), fb0);
      ldmatrix_x4_trans(bs + 16 * (sb + br * 16 + ((bq + 2) ^ (br % 8))), fb1);
      const unsigned aq = kk * 2 + lane / 16;
#pragma unroll
      for (unsigned mi = 0; mi < 4; ++mi) {
        const unsigned ar = wm + mi * 16 + lane % 16;
        unsigned fa[4];
        ldmatrix_x4(as + 16 * (sb + ar * 4 + (aq ^ ((ar / 2) % 4))), fa);
        mma_bf16(acc[mi * 4 + 0], fa, fb0[0], fb0[1]);
        mma_bf16(acc[mi * 4 + 1], fa, fb0[2], fb0[3]);
        mma_bf16(acc[mi * 4 + 2], fa, fb1[0], fb1[1]);
        mma_bf16(acc[mi * 4 + 3], fa, fb1[2], fb1[3]);
      }
    }
  }
#pragma unroll
  for (unsigned mi = 0; mi < 4; ++mi) {
#pragma unroll
    for (unsigned half = 0; half < 2; ++half) {
      const unsigned r = row0 + wm + mi * 16 + g + half * 8;
      if (r >= m) continue;
#pragma unroll
      for (unsigned ni = 0; ni < 4; ++ni) {
        const unsigned col = col0 + wn + ni * 8 + tq * 2;
        if (col < n)
          *reinterpret_cast<float2*>(c + uint64_t(r) * n + col) =
              make_float2(acc[mi * 4 + ni][half * 2], acc[mi * 4 + ni][half * 2 + 1]);
      }
    }
  }
}
