/* The split-K kernel's fix-up (wgmma_sk_sm90a.cu's top and gemm_sk_kernel say how it works): the partials' loads
 * through DSMEM (pull) or stores with st.async (push), the fragments of a consumer's accumulators with their places,
 * and the owner's sums in rank order with the epilogue. sm_90a only. */
#ifndef PERFLAB_GEMM_SM90_WGMMA_SK_FIXUP_CUH
#define PERFLAB_GEMM_SM90_WGMMA_SK_FIXUP_CUH

#include "gemm/device/epilogue.cuh"
#include "common/sm90_common.cuh"

/* Four fp32 of CTA `rank` of the cluster, at the shared-memory offset `addr` (16-byte aligned) has in this CTA. */
__device__ __forceinline__ float4 dsmem_load_f32x4(uint32_t addr, uint32_t rank)
{
    float4 v;
    asm volatile("{\n"
                 ".reg .b32 remote;\n"
                 "mapa.shared::cluster.u32 remote, %4, %5;\n"
                 "ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [remote];\n"
                 "}\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr), "r"(rank)
                 : "memory");
    return v;
}

__device__ __forceinline__ float4 smem_load_f32x4(uint32_t addr)
{
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}

#define SK_FIXUP_BATCH 4 /* partials loaded before the first of them is added: loads in flight per thread */
/* Which kernels push their partials (st.async) rather than have the owners pull them (DSMEM loads): the
 * one-warpgroup ones. Measured (2026-11-27, the two builds alternated in one process): on the H100 pushing
 * made the deep kernels 3-6% faster on 512×512×3584 and 256×256×7168, 0-4% elsewhere, and the two-warpgroup
 * 128×128 kernel 2-5% slower at its best splits; on the H200 the swapped kernels came out even (0.965-1.05). */
#define SK_PUSH(wg) ((wg) == 1)

/* Four (or one) fp32 into shared memory at `addr` of CTA `rank` of the cluster (this one included), counted as
 * transaction bytes on the barrier at `bar` in that CTA: a store that needs no fence, its arrival known from the
 * barrier. */
__device__ __forceinline__ void st_async_f32x4(uint32_t addr, uint32_t bar, uint32_t rank, float4 v)
{
    asm volatile("{\n"
                 ".reg .b32 ra, rb;\n"
                 "mapa.shared::cluster.u32 ra, %0, %6;\n"
                 "mapa.shared::cluster.u32 rb, %1, %6;\n"
                 "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [ra], {%2, %3, %4, %5}, [rb];\n"
                 "}\n" ::"r"(addr),
                 "r"(bar), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(rank)
                 : "memory");
}

__device__ __forceinline__ void st_async_f32(uint32_t addr, uint32_t bar, uint32_t rank, float v)
{
    asm volatile("{\n"
                 ".reg .b32 ra, rb;\n"
                 "mapa.shared::cluster.u32 ra, %0, %3;\n"
                 "mapa.shared::cluster.u32 rb, %1, %3;\n"
                 "st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [ra], %2, [rb];\n"
                 "}\n" ::"r"(addr),
                 "r"(bar), "f"(v), "r"(rank)
                 : "memory");
}

/* Every pair of a consumer warp's m64nTILE accumulators with its place: f(r, c, v0, v1) for row r of the tile's X
 * rows (16·warp + lane/4, +8) and columns c, c + 1 of its Y columns (the wgmma fragment layout: register 4j + 2h + e
 * is row 16·warp + 8h + lane/4, column 8j + 2·(lane%4) + e). */
template <int TILE, typename F>
__device__ __forceinline__ void sk_fragment_pairs(const float (&acc)[TILE / 2], int warp, int lane, F f)
{
    const int g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int j = 0; j < TILE / 8; j++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            f(16 * warp + 8 * h + g, 8 * j + 2 * q, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
}

/* The push: this CTA's partial straight from registers into the owners' stages (st.async, counted in bytes on the
 * owner's `recv` barrier): slot `rank` of each owner, row by row of the rows it owns. */
template <int TILE, int SWAP, int PITCH>
__device__ __forceinline__ void sk_push_partials(const float (&acc)[TILE / 2], uint32_t base, uint32_t recv, int rank,
                                                 int rows_per, int warp, int lane)
{
    if constexpr (SWAP) { /* X row r is D's column: D rows c and c + 1, one fp32 each */
        sk_fragment_pairs<TILE>(acc, warp, lane, [&](int r, int c, float v0, float v1) {
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int owner = (c + e) / rows_per, lr = c + e - owner * rows_per;
                st_async_f32(base + (uint32_t)(((rank * rows_per + lr) * PITCH + r) * 4), recv, (uint32_t)owner,
                             e ? v1 : v0);
            }
        });
    } else { /* D row r: lanes q and q^1 swap column pairs so that each pushes four adjacent columns
              * (16 bytes), the even lane those of chunk j, the odd one those of chunk j + 1 */
        const int g = lane >> 2, q = lane & 3;
        const bool odd = q & 1;
#pragma unroll
        for (int j = 0; j < TILE / 8; j += 2)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = 16 * warp + 8 * h + g;
                const float a0 = acc[4 * j + 2 * h], a1 = acc[4 * j + 2 * h + 1];
                const float b0 = acc[4 * (j + 1) + 2 * h], b1 = acc[4 * (j + 1) + 2 * h + 1];
                const float p0 = __shfl_xor_sync(0xffffffffu, odd ? a0 : b0, 1);
                const float p1 = __shfl_xor_sync(0xffffffffu, odd ? a1 : b1, 1);
                const float4 v = odd ? make_float4(p0, p1, b0, b1) : make_float4(a0, a1, p0, p1);
                const int c = odd ? 8 * (j + 1) + 2 * (q - 1) : 8 * j + 2 * q;
                const int owner = r / rows_per, lr = r - owner * rows_per;
                st_async_f32x4(base + (uint32_t)(((rank * rows_per + lr) * PITCH + c) * 4), recv, (uint32_t)owner, v);
            }
    }
}

/* The fix-up's sums: this CTA's rows, four columns a thread (16-byte loads), SK_FIXUP_BATCH partials loaded before
 * any is added, in rank order; then the epilogue and the bf16 stores. */
template <int SWAP, int OUT_COLS, int PITCH, int THREADS>
__device__ __forceinline__ void sk_fixup(const pl_gemm_out &o, uint32_t base, bool push, int split, int r_begin,
                                         int rows_per, int own_rows, int x0, int y0)
{
    const int quads_per_row = OUT_COLS / 4;
    const int m0 = SWAP ? y0 : x0, n0 = SWAP ? x0 : y0;
    const int quads = own_rows * quads_per_row;
    const uint32_t slot_bytes = (uint32_t)(rows_per * PITCH * 4);
    for (int i = (int)threadIdx.x; i < quads; i += THREADS) {
        const int lr = i / quads_per_row, col = 4 * (i % quads_per_row);
        /* pushed: slot s of this CTA's stages; else row r_begin + lr of each CTA's own partial (DSMEM) */
        const uint32_t addr = base + (uint32_t)(((push ? 0 : r_begin) + lr) * PITCH + col) * 4u;
        float4 sum = split > 1 && !push ? dsmem_load_f32x4(addr, 0) : smem_load_f32x4(addr);
        for (int s0 = 1; s0 < split; s0 += SK_FIXUP_BATCH) {
            float4 v[SK_FIXUP_BATCH];
#pragma unroll
            for (int u = 0; u < SK_FIXUP_BATCH; u++)
                if (s0 + u < split)
                    v[u] = push ? smem_load_f32x4(addr + (uint32_t)(s0 + u) * slot_bytes)
                                : dsmem_load_f32x4(addr, (uint32_t)(s0 + u));
#pragma unroll
            for (int u = 0; u < SK_FIXUP_BATCH; u++)
                if (s0 + u < split) {
                    sum.x += v[u].x;
                    sum.y += v[u].y;
                    sum.z += v[u].z;
                    sum.w += v[u].w;
                }
        }
        pl_gemm_store4(o, m0 + r_begin + lr, n0 + col, sum);
    }
}

#endif
