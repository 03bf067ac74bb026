// c = a * b^T in bf16 with f32 accumulation on Hopper (sm_90a): a is m x k row-major, b is n x k row-major
// (both K-major, the layout wgmma reads from shared memory without a transpose), c is m x n row-major bf16.
// The CUDA C++ algorithm that ptxgate's IR version (bench/kernels/gemm_bf16_wgmma.pg) follows.
//
// Block tile 128 x 256, k in steps of 64, 384 threads in three warpgroups:
//  - warpgroup 0 produces: one thread issues the TMA loads (cp.async.bulk.tensor.2d) of each stage's A tile
//    (64 x 128, box of tensor map `ta`) and B tile (64 x 256, box of `tb`) into a 4-stage ring of
//    128B-swizzled shared tiles; the stage's `full` mbarrier counts the bytes (expect_tx / complete_tx);
//  - warpgroups 1 and 2 consume: each waits on `full`, runs four wgmma.mma_async m64n256k16 (one per 16 of
//    k) on its 64 rows of A against all of B, keeps one group in flight (commit_group, wait_group 1) and
//    then releases the previous stage on its `empty` mbarrier (one arrival per consumer warp);
//  - setmaxnreg moves registers from the producer (24) to the consumers (240): 128 f32 accumulators each.
// Tensor maps (encoded by the host, validation/tensor_map rules): bf16, dims {k, rows}, stride k * 2 bytes,
// box {64, 128} for a and {64, 256} for b, swizzle 128B. TMA fills out-of-range elements with zeros, so m,
// n and k need not be multiples of the tile; k % 8 == 0 (16-byte strides) and n % 2 == 0 (bf16 pairs).
// k >= 1. Launch: grid (ceil(n / 256), ceil(m / 128)), block 384, dynamic shared memory 4 * 48 KiB + 1 KiB
// (the stage ring, aligned to 1024 bytes inside the allocation) = 197632 bytes.
// nvcc-arch: sm_90a
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__  // NVRTC opens neither cuda.h nor the C headers: what this file uses of them
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
struct alignas(64) CUtensorMap {  // cuda.h's CUtensorMap: 128 opaque bytes
  unsigned long long opaque[16];
};
#else
#include <cuda.h>
#include <stdint.h>
#endif

namespace {

constexpr unsigned kBlockM = 128, kBlockN = 256, kBlockK = 64, kStages = 4;
constexpr unsigned kTileA = kBlockM * kBlockK * 2, kTileB = kBlockN * kBlockK * 2;  // bytes per stage
constexpr unsigned kConsumerWarps = 8;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
/// Spins until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{ .reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// ---- TMA: a 2-d box of `map` at coordinates (c0 innermost, c1) into shared memory, counted on `bar`
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// ---- wgmma
/// Matrix descriptor of a K-major tile with 128-byte swizzle: start address >> 4 (bits 0-13), leading
/// byte offset 16 >> 4 (bits 16-29, unused by this layout), stride byte offset 1024 >> 4 between groups of
/// eight 128-byte rows (bits 32-45), base offset 0 (tiles are 1024-byte aligned), swizzle mode 1 = 128B
/// (bits 62-63). Moving 16 elements along k adds 32 bytes to the start address.
__device__ __forceinline__ uint64_t matrix_descriptor(uint32_t addr) {
  return (uint64_t((addr & 0x3FFFF) >> 4)) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

/// d (64 x 256 f32, 128 per thread) = A (64 x 16 at desc_a) * B^T (256 x 16 at desc_b) + (accumulate ? d : 0).
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b, uint32_t accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred accumulate;\n"
      "setp.ne.u32 accumulate, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, accumulate, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]),
        "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]),
        "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]),
        "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

}  // namespace

extern "C" __global__ void __launch_bounds__(384, 1)
    gemm_bf16_wgmma(__nv_bfloat16* c, const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb,
                    unsigned m, unsigned n, unsigned k) {
  extern __shared__ __align__(1024) unsigned char shared_raw[];
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  const uint32_t base = (smem_addr(shared_raw) + 1023u) & ~1023u;
  const uint32_t tiles_a = base, tiles_b = base + kStages * kTileA;
  const unsigned warpgroup = threadIdx.x / 128, t = threadIdx.x % 128;
  const unsigned m0 = blockIdx.y * kBlockM, n0 = blockIdx.x * kBlockN;
  const unsigned k_tiles = (k + kBlockK - 1) / kBlockK;

  if (threadIdx.x == 0) {
    for (unsigned s = 0; s < kStages; ++s) {
      mbar_init(smem_addr(&full[s]), 1);
      mbar_init(smem_addr(&empty[s]), kConsumerWarps);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the inits, visible to the TMA unit
  }
  __syncthreads();

  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
    if (t == 0) {
      for (unsigned i = 0; i < k_tiles; ++i) {
        const unsigned s = i % kStages, round = i / kStages;
        mbar_wait(smem_addr(&empty[s]), (round & 1) ^ 1);  // the first round passes: a fresh barrier
        const uint32_t bar = smem_addr(&full[s]);
        mbar_arrive_expect_tx(bar, kTileA + kTileB);
        tma_load_2d(tiles_a + s * kTileA, &ta, int(i * kBlockK), int(m0), bar);
        tma_load_2d(tiles_b + s * kTileB, &tb, int(i * kBlockK), int(n0), bar);
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
  const unsigned consumer = warpgroup - 1;
  // No zeroing: the first wgmma ignores d (scale-d false). Writing the accumulators with other instructions
  // would make ptxas serialise the wgmmas (C7515). k >= 1, so at least one wgmma runs.
  float d[128];

  for (unsigned i = 0; i < k_tiles; ++i) {
    const unsigned s = i % kStages;
    mbar_wait(smem_addr(&full[s]), (i / kStages) & 1);
    const uint32_t a = tiles_a + s * kTileA + consumer * 64 * 128, b = tiles_b + s * kTileB;
    wgmma_fence();
#pragma unroll
    for (unsigned kk = 0; kk < kBlockK / 16; ++kk)
      wgmma_m64n256k16(d, matrix_descriptor(a + kk * 32), matrix_descriptor(b + kk * 32), i > 0 || kk > 0);
    wgmma_commit();
    wgmma_wait<1>();  // the previous tile's group is done: its stage goes back to the producer
    if (i > 0 && t % 32 == 0) mbar_arrive(smem_addr(&empty[(i - 1) % kStages]));
  }
  wgmma_wait<0>();

  // Accumulator fragment of m64nNk16: d[i] is row warp*16 + lane/4 + 8*((i/2)%2), column 8*(i/4) +
  // 2*(lane%4) + i%2 of this warpgroup's 64 x 256 tile.
  const unsigned warp = t / 32, lane = t % 32;
  const unsigned row = m0 + consumer * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    const unsigned col = n0 + 8 * j + 2 * (lane % 4);
    if (col >= n) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const unsigned r = row + 8 * h;
      if (r >= m) continue;
      __nv_bfloat16* out = c + size_t{r} * n + col;
      if (col + 1 < n)
        *reinterpret_cast<__nv_bfloat162*>(out) = __floats2bfloat162_rn(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
      else
        *out = __float2bfloat16_rn(d[4 * j + 2 * h]);
    }
  }
}
