/* Grouped GEMM for a mixture-of-experts layer, sm_90a (gemm/grouped.h): one persistent warp-specialized launch
 * for every expert. The kernel is sm90_ws_scaled.cuh's; its tile scheduler walks (expert, tile) pairs from the row
 * offsets in device memory (each CTA role keeps a cursor that only moves forward), an expert's tiles in bands of 16
 * tile rows, rows fastest, so that the tile rows sharing a B panel run at once. A tile's rows past its expert's end
 * (the next expert's tokens, loaded with the box) are computed and not stored: the consumer whose 64 rows cross the
 * end stores through shared memory and ordinary 16-byte stores that stop there; all other output goes through TMA
 * stores.
 *   bf16: 128×256 tiles, wgmma m64n256k16, k-blocks of 64, 4 stages (the BF16 ladder's best tile).
 *   fp8:  128×192 tiles, wgmma m64n192k32 e4m3, k-blocks of 128 promoted into fp32 with sa[token][kb] ·
 *         sb[expert][n-block][kb] (see fp8_ws_sm90a.cu for the tile), 4 stages. The _halves launcher promotes off
 *         the critical path (two m64n96k32 commit groups per k-block, sw_mainloop_halves in sm90_ws_mainloops.cuh).
 * With 2 CTAs a tile (p->cluster, pl_grouped_gemm_cluster_of) the CTAs run in pairs (2-CTA clusters) on vertically
 * adjacent tiles of one expert, each loading half of their shared B panel and multicasting it: per k-block a CTA
 * receives A + B but reads A + B/2 from L2. An expert with an odd number of tile rows runs its last one in pairs
 * side by side, which share the A panel instead (each reads A/2 + B), rather than pairing its tiles with pads wholly
 * past the expert's end (a whole tile of an SM's time for nothing). */
#include <stdio.h>

#include "gemm/fp8.h"
#include "gemm/grouped.h"
#include "gemm/device/sm90_ws_scaled.cuh"

extern "C" int pl_grouped_gemm_supports(const pl_grouped_gemm_problem *p, int fp8, char *why, size_t whylen)
{
    const int kmul = fp8 ? 16 : 8;
    if (p->groups < 1 || p->n < 1 || p->k < 1 || p->rows < 0) {
        snprintf(why, whylen, "groups, N and K must be at least 1 and rows at least 0 (got %d, %d, %d, %d)", p->groups,
                 p->n, p->k, p->rows);
        return 0;
    }
    if (p->cluster < 0 || p->cluster > 2) {
        snprintf(why, whylen, "cluster must be 0 or 1 (one CTA a tile) or 2 (CTA pairs); got %d", p->cluster);
        return 0;
    }
    if (!p->offsets || !p->a || !p->b || !p->d) {
        snprintf(why, whylen, "offsets, A, B and D must be device pointers");
        return 0;
    }
    if (p->k % kmul != 0) {
        snprintf(why, whylen, "needs K %% %d == 0 (TMA rows are 16-byte multiples); K = %d", kmul, p->k);
        return 0;
    }
    if ((uintptr_t)p->a % 16 != 0 || (uintptr_t)p->b % 16 != 0) {
        snprintf(why, whylen, "needs 16-byte aligned A and B (TMA)");
        return 0;
    }
    if ((long long)p->groups * p->n > 0x7fffffffLL || (size_t)p->rows * (size_t)p->n > 0xffffffffu) {
        snprintf(why, whylen, "G·N must stay under 2^31 and rows·N under 2^32");
        return 0;
    }
    if (fp8 && (!p->scale_a || !p->scale_b)) {
        snprintf(why, whylen, "FP8 needs both block-scale tensors");
        return 0;
    }
    if (fp8 && ((uintptr_t)p->scale_a % 16 != 0 || (uintptr_t)p->scale_b % 16 != 0)) {
        snprintf(why, whylen, "FP8 needs 16-byte aligned block-scale tensors (bulk copies)");
        return 0;
    }
    return 1;
}

template <int BN, int ELEM, int SCALE, int ACCS, int CLUSTER>
static cudaError_t launch_grouped(const pl_grouped_gemm_problem *p, cudaStream_t stream)
{
    char why[160];
    if (!pl_grouped_gemm_supports(p, ELEM == SW_E4M3, why, sizeof why))
        return cudaErrorInvalidValue;
    if (p->rows == 0)
        return cudaSuccess; /* no token was routed: D is empty */
    const uint32_t es = ELEM == SW_E4M3 ? 1 : 2, ke = SW_ROW_BYTES / es;
    CUtensorMap ta, tb, td, ta_half;
    cudaError_t e = pl_tensor_map_2d(&ta, p->a, (uint64_t)p->rows, (uint64_t)p->k, es, SW_BM, ke);
    if (e == cudaSuccess)
        e = pl_tensor_map_2d(&tb, p->b, (uint64_t)p->groups * (uint64_t)p->n, (uint64_t)p->k, es, BN / CLUSTER, ke);
    if (e == cudaSuccess && CLUSTER == 2) /* a pair side by side loads half of A each */
        e = pl_tensor_map_2d(&ta_half, p->a, (uint64_t)p->rows, (uint64_t)p->k, es, SW_BM / 2, ke);
    if (e != cudaSuccess)
        return e;
    sw_params sp = {};
    sw_set_out_and_scales(sp, p->d, p->rows, p->n, p->k, p->scale_a, p->scale_b);
    sp.k_blocks = (p->k + (int)ke - 1) / (int)ke;
    sp.tile_cols = (p->n + BN - 1) / BN;
    sp.offsets = p->offsets;
    sp.groups = p->groups;
    sp.n = p->n;
    sp.skip_idle = p->skip_idle;
    sw_store_map(&td, p->d, p->rows, p->n, &sp.tma_store);
    if (!sp.tma_store)
        td = ta; /* unused */
    /* cluster tiles: at most one partial cluster tile row per group beyond the full ones */
    const long long max_tiles = ((long long)p->rows / (CLUSTER * SW_BM) + p->groups) * sp.tile_cols;
    return sw_launch<BN, ELEM, SCALE, CLUSTER, 1, ACCS, true>(ta, tb, td, sp, max_tiles, stream,
                                                              CLUSTER == 2 ? &ta_half : NULL);
}

extern "C" int pl_grouped_gemm_cluster_of(const pl_grouped_gemm_problem *p, int fp8)
{
    if (p->cluster != 0)
        return p->cluster;
    return !fp8 && p->groups > 0 && (long long)p->rows >= (long long)PL_GROUPED_PAIR_ROWS * p->groups ? 2 : 1;
}

/* The launch of p->cluster's choice (pl_grouped_gemm_cluster_of); launch_grouped rejects values other than 0-2. */
template <int BN, int ELEM, int SCALE, int ACCS = SW_ONE_PART>
static cudaError_t launch_grouped_any(const pl_grouped_gemm_problem *p, cudaStream_t stream)
{
    return pl_grouped_gemm_cluster_of(p, ELEM == SW_E4M3) == 2 ? launch_grouped<BN, ELEM, SCALE, ACCS, 2>(p, stream)
                                                               : launch_grouped<BN, ELEM, SCALE, ACCS, 1>(p, stream);
}

extern "C" cudaError_t pl_grouped_gemm_bf16(const pl_grouped_gemm_problem *p, cudaStream_t stream)
{
    /* the measured choice, where pairs pay: the tokens-as-N kernel when D takes its TMA stores (it hands N % 8 != 0
     * back here with the cluster set, so this never loops) */
    if (p->cluster == 0 && p->n % 8 == 0 && (uintptr_t)p->d % 16 == 0 && pl_grouped_gemm_cluster_of(p, 0) == 2)
        return pl_grouped_gemm_bf16_t(p, stream);
    return launch_grouped_any<256, SW_BF16, SW_SCALE_NONE>(p, stream);
}

extern "C" cudaError_t pl_grouped_gemm_fp8(const pl_grouped_gemm_problem *p, cudaStream_t stream)
{
    return launch_grouped_any<192, SW_E4M3, SW_SCALE_BLOCK>(p, stream);
}

extern "C" cudaError_t pl_grouped_gemm_fp8_halves(const pl_grouped_gemm_problem *p, cudaStream_t stream)
{
    return launch_grouped_any<192, SW_E4M3, SW_SCALE_BLOCK, SW_HALVES>(p, stream);
}
