/* FP8 (e4m3) split-K with A and B swapped, sm_90a: the decode GEMMs (M = 1-128 tokens) that the persistent 128-row
 * FP8 kernels (fp8_ws_sm90a.cu) leave the GPU idle on. At M = 64 their 128×192 tiles give N/192 CTAs for 132 SMs
 * (QKV 4096→6144: 32; O and down 4096 wide: 22; gate/up 28672: 150), each streaming its B panel alone, and half the
 * tensor-core rows are padding: the layer's FP8 decode step measured slower than the BF16 one (docs/perf/engine.md).
 *
 * The BF16 swapped split-K kernels (wgmma_sk_sm90a.cu) with FP8 operands and the promotion of the FP8 kernels:
 *   - Dᵀ = B·Aᵀ: X = B (the weights, 64 rows of N a CTA, wgmma's M), Y = A (TILE = 16, 32 or 64 tokens, wgmma's
 *     narrow N), so no tensor-core row is padding and N/64 tiles cover the SMs;
 *   - a stage is one k-block of 128 e4m3 (128 bytes a row, the 128-byte swizzle row of the other sm_90a kernels:
 *     the stage layout, descriptors and TMA boxes of the BF16 split-K kernel, a k32 step +32 bytes);
 *   - each k-block's four wgmma m64nTILEk32 e4m3 go into an accumulator of their own (`part`, scale-d 0 on the first)
 *     that is added into fp32 registers when they are done: every 128 K, as pl_gemm_fp8_ws promotes (the tensor
 *     core's reduced-precision sum never spans more than a k-block). Block scaling multiplies it by sa[token][kb] ·
 *     sb[n/128][kb] (a CTA's 64 rows of N lie in one 128-row B block; the tokens' scales differ by column of the
 *     accumulator), tensor scaling adds it and multiplies the finished partial by sa·sb;
 *   - block scales come into each stage beside A and B by bulk copy (the producer issues them, the stage's barrier
 *     counts them): the TILE tokens' A scales of the k-block and 16 bytes of B's around it, read from shared memory;
 *   - K split over a cluster of S CTAs (pl_gemm_sk_split's rule over k-blocks of 128: about two CTAs an SM, each
 *     split at least 4 k-blocks), the fp32 partials added in rank order 0, 1, …, S-1 by the BF16 kernel's fix-up
 *     (sk_reduce, wgmma_sk_fixup.cuh): the same bits every run, no workspace, no atomics, no second kernel.
 * A k-block's promotion waits for its wgmma (wait_group 0) before the stage is released: at decode the kernel is bound
 * by the stream of B, and three CTAs an SM with 4-6 stages each keep 150-190 KB of loads in flight through the drain.
 *
 * Sizes: any M (swapped, TILE tokens a tile: the rows take M <= 4·TILE), any N (TMA zero-fills B's rows past N, the
 * stores are predicated), K % 16 == 0 (TMA rows of e4m3 are 16-byte multiples; zero-filled past K). A tile whose
 * tokens end in its first half issues the half-width wgmma (m64n(TILE/2)k32). Promotion every k-block only (promote 0
 * or 1). Written without a GPU: the GPU tests (tests/gpu/test_fp8_moe.c, fp8_small_m) and gemm:fp8's fp8_picked_*
 * variants verify it. */
#include "gemm/device/sm90_wgmma_fp8_ops.cuh"
#include "gemm/fp8.h"
#include "gemm/host/heuristic.h"
#include "gemm/host/tensor_map.h"
#include "gemm/sm90/wgmma_sk_fixup.cuh"

#define FP8_SK_KB 128 /* e4m3 per k-block: one 128-byte swizzle row, one block of the block scaling */

/* A stage's block scales, after the ring's barriers: the k-block's A scales of the tile's TILE tokens, then 16 bytes of
 * B's (the four k-blocks around this one of the CTA's B block). */
template <int TILE> struct fp8_sk_scales {
    static constexpr int b_off = 4 * TILE;
    static constexpr int stage = 4 * TILE + 16;
};

/* The configuration: the BF16 swapped kernel's (sk_config) with the block scales' copies after its barriers. */
template <int TILE, int SCALE> struct fp8_sk_config {
    typedef sk_config<TILE, 1> sk;
    static constexpr bool block = SCALE == PL_FP8_SCALING_BLOCK;
    static constexpr int stages = sk::stages;
    /* the scale copies start 16 bytes after the fix-up's barrier (the ring's barriers end 16-byte aligned) */
    static constexpr int scale_bytes = block ? 8 + stages * fp8_sk_scales<TILE>::stage : 0;
    static constexpr int smem_bytes = sk::smem_bytes + scale_bytes;
};

/* What a launch passes besides the maps and D: the tokens (wgmma's N), the k-blocks, and the scales (gemm/fp8.h's
 * layouts: tensor one float each, NULL reading as 1; block A at scale_a[kb · lda + row], B at scale_b[nb · ldb +
 * kb]). */
struct fp8_sk_args {
    int tokens, k_blocks;
    const float *scale_a, *scale_b;
    int lda, ldb;
};

__device__ __forceinline__ float2 fp8_sk_lds2(uint32_t addr)
{
    float2 v;
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr));
    return v;
}

__device__ __forceinline__ float fp8_sk_lds(uint32_t addr)
{
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
    return v;
}

/* D[64 × N] (+)= X[64 × 32] · Y[N × 32]ᵀ in e4m3, N the tile's tokens or half of them. */
template <int N> __device__ __forceinline__ void fp8_sk_wgmma(float (&d)[N / 2], uint64_t dx, uint64_t dy, int scale_d)
{
    static_assert(N == 16 || N == 32 || N == 64, "the swapped FP8 tiles' widths and their halves");
    if constexpr (N == 16)
        pl_wgmma_m64n16k32_e4m3(d, dx, dy, scale_d);
    else if constexpr (N == 32)
        pl_wgmma_m64n32k32_e4m3(d, dx, dy, scale_d);
    else
        pl_wgmma_m64n64k32_e4m3(d, dx, dy, scale_d);
}

/* The products sa[token]·sb of k-block kb for this thread's tokens (accumulator register 4j + 2h + e holds token
 * 8j + 2·(lane%4) + e): s[2j + e], from the stage's scale copy at `sc`. */
template <int N, int TILE>
__device__ __forceinline__ void fp8_sk_products(float (&s)[N / 4], uint32_t sc, int kb, int lane)
{
    const float sb = fp8_sk_lds(sc + fp8_sk_scales<TILE>::b_off + 4 * (kb & 3));
#pragma unroll
    for (int j = 0; j < N / 8; j++) {
        const float2 sa = fp8_sk_lds2(sc + 4u * (uint32_t)(8 * j + 2 * (lane & 3)));
        s[2 * j] = sa.x * sb;
        s[2 * j + 1] = sa.y * sb;
    }
}

/* The consumer warpgroup's mainloop over k-blocks kb0 .. kb1 - 1 with wgmma m64nNk32 e4m3, N the tile's width or, on a
 * tile whose tokens end in its first half, half of it (acc is then the first N/2 of the tile's accumulators). Each
 * k-block into `part`, drained and promoted into acc before its stage is released: times its scale products (block),
 * as it is (tensor). */
template <int N, int TILE, int SCALE>
__device__ __forceinline__ void fp8_sk_mainloop(float (&acc)[N / 2], uint32_t base, uint32_t full, uint32_t empty,
                                                uint32_t scales, int kb0, int kb1, int lane)
{
    typedef fp8_sk_config<TILE, SCALE> cfg;
    constexpr int STAGES = cfg::stages;
    float part[N / 2];
    uint32_t kcount = 0;
    for (int kb = kb0; kb < kb1; kb++, kcount++) {
        const int stage = (int)(kcount % STAGES);
        mbar_wait(full + 8 * stage, (kcount / STAGES) & 1);
        const uint32_t st = base + stage * cfg::sk::stage_bytes;
        const uint64_t dx = wgmma_desc_k128(st), dy = wgmma_desc_k128(st + cfg::sk::x_bytes);
        wgmma_fence(); /* part was read (promoted) since its last wgmma */
#pragma unroll
        for (int j = 0; j < FP8_SK_KB / 32; j++)
            fp8_sk_wgmma<N>(part, wgmma_desc_step(dx, j), wgmma_desc_step(dy, j), j > 0);
        wgmma_commit();
        float s[N / 4];
        if constexpr (cfg::block) /* while the wgmma run */
            fp8_sk_products<N, TILE>(s, scales + stage * fp8_sk_scales<TILE>::stage, kb, lane);
        wgmma_wait<0>();
        accumulators_fence(part);
        if constexpr (cfg::block)
            mbar_arrive(empty + 8 * stage); /* every thread: its own reads of the stage's scales come first */
        else
            release_stage<1>(empty, stage, lane);
#pragma unroll
        for (int i = 0; i < N / 2; i++) {
            if constexpr (cfg::block)
                acc[i] = fmaf(part[i], s[2 * (i / 4) + (i & 1)], acc[i]);
            else
                acc[i] += part[i];
        }
    }
}

/* The producer (lane 0 of the producer warp): k-blocks kb0 .. kb1 - 1 of the tile's 64 rows of B (X) and TILE tokens
 * of A (Y) into the ring, with block scaling their scales beside them (bulk copies: the TILE tokens' A scales, fewer
 * where lda ends first, all 16-byte multiples since lda % 4 == 0 and x0, y0 are multiples of 16; and 16 bytes of B's
 * from the 4-aligned k-block at or before kb, within ldb % 4 == 0). */
template <int TILE, int SCALE>
__device__ __forceinline__ void fp8_sk_produce(const CUtensorMap *tma_x, const CUtensorMap *tma_y, const fp8_sk_args &a,
                                               uint32_t base, uint32_t full, uint32_t empty, uint32_t scales, int kb0,
                                               int kb1, int x0, int y0)
{
    typedef fp8_sk_config<TILE, SCALE> cfg;
    tma_prefetch_descriptor(tma_x);
    tma_prefetch_descriptor(tma_y);
    const uint32_t a_sc = 4u * (uint32_t)min(TILE, a.lda - y0);
    const float *sb = cfg::block ? a.scale_b + (size_t)(x0 / PL_FP8_BLOCK) * a.ldb : NULL;
    int stage = 0;
    uint32_t phase = 0;
    for (int kb = kb0; kb < kb1; kb++) {
        mbar_wait(empty + 8 * stage, phase ^ 1);
        const uint32_t st = base + stage * cfg::sk::stage_bytes, bar = full + 8 * stage;
        if constexpr (cfg::block) {
            const uint32_t sc = scales + stage * fp8_sk_scales<TILE>::stage;
            mbar_arrive_expect_tx(bar, cfg::sk::stage_bytes + a_sc + 16);
            bulk_load_1d(sc, a.scale_a + (size_t)kb * a.lda + y0, a_sc, bar);
            bulk_load_1d(sc + fp8_sk_scales<TILE>::b_off, sb + (kb & ~3), 16, bar);
        } else {
            mbar_arrive_expect_tx(bar, cfg::sk::stage_bytes); /* boxes count whole, zero-filled parts too */
        }
        tma_load_2d(st, tma_x, bar, kb * FP8_SK_KB, x0);
        tma_load_2d(st + cfg::sk::x_bytes, tma_y, bar, kb * FP8_SK_KB, y0);
        if (++stage == cfg::stages) {
            stage = 0;
            phase ^= 1;
        }
    }
}

/* grid (S, N tiles of 64, token tiles of TILE), clusters of (S, 1, 1): a cluster is one output tile, its CTA rank
 * blockIdx.x. */
template <int TILE, int SCALE>
__global__ void __maxnreg__(SK_MAX_REGS)
    fp8_sk_kernel(const __grid_constant__ CUtensorMap tma_x, const __grid_constant__ CUtensorMap tma_y, pl_gemm_out o,
                  const fp8_sk_args a)
{
    typedef fp8_sk_config<TILE, SCALE> cfg;
    typedef typename cfg::sk sk;
    constexpr int STAGES = cfg::stages;
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u; /* 128-byte swizzle wants 1024-byte alignment */
    const uint32_t full = base + STAGES * sk::stage_bytes, empty = full + 8 * STAGES, recv = empty + 8 * STAGES;
    const uint32_t scales = recv + 16;
    const int split = (int)gridDim.x, rank = (int)blockIdx.x;
    const int x0 = (int)blockIdx.y * sk::x_rows, y0 = (int)blockIdx.z * TILE;
    const int kb0 = (int)((long long)a.k_blocks * rank / split),
              kb1 = (int)((long long)a.k_blocks * (rank + 1) / split);
    constexpr bool HAS_HALF = TILE >= 32;
    const bool half = HAS_HALF && a.tokens - y0 <= TILE / 2;
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x & 31;

    /* empty: with block scales every consumer thread (each orders its own reads of the stage's scale copies before the
     * producer's next bulk copy), else lane 0 of each consumer warp */
    sk_init_barriers(full, empty, recv, STAGES, cfg::block ? 128 : 4, true);

    float acc[TILE / 2];
#pragma unroll
    for (int i = 0; i < TILE / 2; i++)
        acc[i] = 0.0f;
    if (warp == sk::producer) {
        if (lane == 0)
            fp8_sk_produce<TILE, SCALE>(&tma_x, &tma_y, a, base, full, empty, scales, kb0, kb1, x0, y0);
    } else if (half) {
        if constexpr (HAS_HALF)
            fp8_sk_mainloop<TILE / 2, TILE, SCALE>(*reinterpret_cast<float(*)[TILE / 4]>(&acc[0]), base, full, empty,
                                                   scales, kb0, kb1, lane);
    } else {
        fp8_sk_mainloop<TILE, TILE, SCALE>(acc, base, full, empty, scales, kb0, kb1, lane);
    }
    if (!cfg::block && warp < 4) { /* the one scale multiplies the finished partial */
        const float t = (a.scale_a ? __ldg(a.scale_a) : 1.0f) * (a.scale_b ? __ldg(a.scale_b) : 1.0f);
#pragma unroll
        for (int i = 0; i < TILE / 2; i++)
            acc[i] *= t;
    }
    /* every load has landed (the consumers waited for each) and every wgmma is done: the stages are free */
    __syncthreads();
    sk_reduce<sk, TILE, 1, 1>(acc, o, base, recv, split, rank, x0, y0, warp, lane);
}

template <int TILE, int SCALE>
static cudaError_t launch_fp8_sk_scaled(const pl_gemm_fp8_problem *p, int split, cudaStream_t stream)
{
    typedef fp8_sk_config<TILE, SCALE> cfg;
    typedef typename cfg::sk sk;
    static_assert(sk::stage_bytes % 1024 == 0, "stages must stay 1024-byte aligned");
    static_assert(sk::x_bytes == sk::x_rows * FP8_SK_KB, "a stage row is one k-block of e4m3");
    static_assert(sk::partial_bytes <= sk::stages * sk::stage_bytes, "the partial tile must fit in the stages");
    static_assert(cfg::smem_bytes <= SK_SMEM_LIMIT, "shared memory over the limit");
    static_assert(sk::ctas_per_sm * (cfg::smem_bytes + SK_RESERVED) <= SK_SMEM_PER_SM,
                  "the resident CTAs must fit an SM's shared memory");
    const long long tiles_x = (p->n + sk::x_rows - 1) / sk::x_rows, tiles_y = (p->m + TILE - 1) / TILE;
    const int k_blocks = pl_fp8_kblocks(p->k);
    if (tiles_x > 65535 || tiles_y > 65535 || split < 0 || split > PL_SK_MAX_SPLIT)
        return cudaErrorInvalidValue;
    CUtensorMap tx, ty;
    cudaError_t e = pl_tensor_map_2d(&tx, p->b, (uint64_t)p->n, (uint64_t)p->k, 1, sk::x_rows, FP8_SK_KB);
    if (e == cudaSuccess)
        e = pl_tensor_map_2d(&ty, p->a, (uint64_t)p->m, (uint64_t)p->k, 1, TILE, FP8_SK_KB);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(fp8_sk_kernel<TILE, SCALE>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 cfg::smem_bytes);
    if (e == cudaSuccess) /* all of the SM's 228 KB as shared memory, so that three CTAs fit */
        e = cudaFuncSetAttribute(fp8_sk_kernel<TILE, SCALE>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                 cudaSharedmemCarveoutMaxShared);
    pl_gemm_gpu g;
    if (e == cudaSuccess)
        e = pl_gemm_gpu_query(&g);
    if (e != cudaSuccess)
        return e;
    int s = split > 0 ? split : pl_gemm_sk_split(tiles_x * tiles_y, k_blocks, g.sms);
    if (s > k_blocks)
        s = k_blocks;             /* every CTA of a cluster gets at least one k-block */
    if (s > PL_SK_PORTABLE_SPLIT) /* a cluster of 9-16 CTAs */
        e = cudaFuncSetAttribute(fp8_sk_kernel<TILE, SCALE>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (e != cudaSuccess)
        return e;
    /* the fix-up's S slots of ceil(rows / S) rows fit in the stages (checked, not assumed) */
    if (s > 1 && (long long)s * ((sk::out_rows + s - 1) / s) * sk::pitch * 4 > (long long)sk::stages * sk::stage_bytes)
        return cudaErrorInvalidValue;
    const fp8_sk_args a = {p->m, k_blocks, p->scale_a, p->scale_b, pl_fp8_scale_a_ld(p->m), pl_fp8_scale_b_ld(p->k)};
    const pl_gemm_out o = {p->d, NULL, NULL, p->m, p->n, 0, 0};
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t lc = sk_launch_config(s, tiles_x, tiles_y, sk::threads, cfg::smem_bytes, stream, &attr);
    e = cudaLaunchKernelEx(&lc, fp8_sk_kernel<TILE, SCALE>, tx, ty, o, a);
    return e != cudaSuccess ? e : cudaGetLastError();
}

template <int TILE> static cudaError_t launch_fp8_sk(const pl_gemm_fp8_problem *p, int split, cudaStream_t stream)
{
    char why[160];
    if (!pl_gemm_fp8_supports(p, why, sizeof why) || p->promote > 1 || (uintptr_t)p->d % 8 != 0)
        return cudaErrorInvalidValue; /* promotion every k-block only; D in 8-byte groups of four */
    return p->scaling == PL_FP8_SCALING_BLOCK ? launch_fp8_sk_scaled<TILE, PL_FP8_SCALING_BLOCK>(p, split, stream)
                                              : launch_fp8_sk_scaled<TILE, PL_FP8_SCALING_TENSOR>(p, split, stream);
}

extern "C" cudaError_t pl_gemm_fp8_sk(const pl_gemm_fp8_problem *p, int tile, int split, cudaStream_t stream)
{
    switch (tile) {
    case 16: return launch_fp8_sk<16>(p, split, stream);
    case 32: return launch_fp8_sk<32>(p, split, stream);
    case 64: return launch_fp8_sk<64>(p, split, stream);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t pl_gemm_fp8_sk_swap16(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8_sk<16>(p, 0, stream);
}

extern "C" cudaError_t pl_gemm_fp8_sk_swap32(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8_sk<32>(p, 0, stream);
}

extern "C" cudaError_t pl_gemm_fp8_sk_swap64(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8_sk<64>(p, 0, stream);
}
