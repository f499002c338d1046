/* Rungs 5 and 6 of the GEMM ladder — warp-specialized, persistent WGMMA + TMA (sm_90a), optionally with 2-CTA
 * clusters.
 *
 * Rung 5 (CLUSTER = 1). One CTA per SM loops over output tiles (a tile scheduler walks them in groups of 16
 * tile-rows so that the CTAs running at once share A and B panels in L2). Warpgroup 0 is the producer: it gives
 * registers back (setmaxnreg.dec to 56) and one of its threads only issues TMA loads into a ring of stages,
 * waiting on each stage's "empty" mbarrier; when the epilogue is fused, its three other warps run it
 * (sm90_epilogue_warps.cuh). Warpgroups 1 and 2 are the consumers: they take the registers
 * (setmaxnreg.inc to 224), wait on each stage's "full" mbarrier (TMA completes its transaction bytes there),
 * issue wgmma, keep one wgmma group in flight and release the previous stage as soon as its group is done. The
 * producer runs ahead across tile boundaries. Results leave through shared memory and TMA stores
 * (sm90_epilogue.cuh). Two ways to share the work between the consumers:
 *   cooperative: both work on each 128×BN tile, 64 rows each; the tensor cores idle while they store it (fused:
 *                while they hand the product to the epilogue warps, which needs NB = 4 buffers per consumer
 *                to never wait: one stage fewer).
 *   ping-pong:   each owns whole 128×128 tiles (every other tile of the CTA) and they take turns: one stores its
 *                tile while the other multiplies, so the epilogue leaves the critical path. An ordering barrier
 *                makes a consumer start a tile only after the other has issued all of the previous one (the
 *                stages' parity waits are only unambiguous one phase ahead).
 *
 * Rung 6 (CLUSTER = 2, or 4 for the 128×224 kernel). The CTAs of a cluster work on vertically adjacent tiles that
 * share their B panel: each CTA loads its share of that panel (a half, or a quarter) and multicasts it into every
 * CTA's shared memory (one L2 read feeds two or four SMs), each stage's "full" barrier in every CTA counts all the
 * shares, and a consumer releases a stage on every CTA's "empty" barrier (a remote mbarrier arrive through
 * distributed shared memory), since the peers' producers write into this CTA's stage too.
 *
 * Tiles fitted to the shape (cuBLAS picks its tile per shape, e.g. 192×176 at 4104²): three consumer
 * warpgroups make 192-row tiles (ws_shape: 512 threads, setmaxnreg 40 for the producer and 152 for the consumers);
 * widths that are not multiples of 64 (176, 224) end in a narrower subtile, stored through a dense TMA map of its own
 * (epilogue_tma_m64). Those kernels take a fused epilogue from registers: the epilogue warps' hand-over and the
 * fused TMA path take two consumers and whole 64-column subtiles (ws_config::tma_fused).
 *
 * The split tail (the 2-CTA cooperative 128×256 kernels, plain D; the launcher decides: ws_tail_split). When the
 * last round of the walk is at most half full (4104² in 128×256 pairs: 289 pairs on 66 clusters, the fifth round
 * 25), its pairs are cut into their two 128-row tiles and each tile goes to one cluster, whose CTAs take half of its
 * columns each: 128×128 with all of K, A loaded by both, each its own half of B (no multicast), the stages released
 * on its own barriers only (both arrivals of a warp), nothing exchanged. A half wholly past M is skipped. Measured
 * at 4104²: the last round takes 9.5 µs, its epilogue included, where a whole pair's mainloop took 12 (each CTA
 * still reads 32 KB a k-block, two thirds of what it receives in a pair); the launch 76.4 µs against 80.1. Cutting
 * K instead (each CTA half the k-blocks, the partial tile added through DSMEM) spent ~4 µs on the 128 KB exchange
 * and gained nothing; 128×128 tiles cut to 128×64 lost as often as they won (H100, 2026-11-26; docs/perf/gemm.md).
 *
 * The kernel (wgmma_ws_kernel.cuh) reads as its phases: ws_init_barriers, ws_produce (the producer thread), ew_run
 * (the epilogue warps), ws_consume (each consumer: ws_mainloop then ws_epilogue per tile, or ws_split_item), over the
 * walk of gemm/device/tile_scheduler.cuh (ws_item_of). Its configuration, shared-memory layout and walk are
 * wgmma_ws_config.cuh; this file launches it (launch_ws and a launcher a configuration), and wgmma_ws_rows.c has the
 * configurations' rows of the kernel table.
 *
 * B's layout is a policy of the kernel (gemm/device/sm90_operand.cuh): N×K, K-major (the plain launchers), or K×N,
 * N-major (the _kn launchers: TMA boxes of 64 columns × 64 K, one after another, each CTA of a cluster loading and
 * multicasting whole boxes; the MN-major descriptor; wgmma's imm-trans-b 1). Everything else is the same kernel, so a
 * K×N kernel moves the same bytes and issues the same wgmma as its N×K twin; its tile width is a multiple of 64.
 *
 * Takes B N×K with K % 8 == 0, or B K×N with K % 8 == 0 and N % 8 == 0, and 16-byte aligned A and B (TMA's row pitch
 * rule); others fall back. D goes through TMA when N % 8 == 0 (and D, bias and residual are aligned), else straight
 * from registers. */
#include "gemm/sm90/wgmma_ws_kernel.cuh"
#include "gemm/host/tensor_map.h"

/* The launch of `ctas` persistent CTAs in clusters of `cluster` along x (attr must outlive cfg). */
static void ws_launch_config(cudaLaunchConfig_t *cfg, cudaLaunchAttribute *attr, int ctas, int threads, int cluster,
                             size_t smem, cudaStream_t stream)
{
    *cfg = cudaLaunchConfig_t{};
    cfg->gridDim = dim3(ctas);
    cfg->blockDim = dim3(threads);
    cfg->dynamicSmemBytes = smem;
    cfg->stream = stream;
    if (cluster > 1) {
        attr->id = cudaLaunchAttributeClusterDimension;
        attr->val.clusterDim.x = cluster;
        attr->val.clusterDim.y = 1;
        attr->val.clusterDim.z = 1;
        cfg->attrs = attr;
        cfg->numAttrs = 1;
    }
}

/* Clusters the GPU can hold at once for this kernel (max_active_clusters, sm90_common.cuh); cached per device. */
template <int BN, int CLUSTER, int SCHED, int NB, int CONS, typename BL> static int ws_max_clusters(int device, int sms)
{
    static int cached[64];
    return max_active_clusters_cached(cached, (const void *)gemm_wgmma_ws_kernel<BN, CLUSTER, SCHED, NB, CONS, BL>,
                                      ws_shape<CONS>::threads, ws_config<BN, SCHED, NB, CONS>::smem_bytes, CLUSTER,
                                      device, sms);
}

/* The split tail (see the top), for a kernel that splits (ws_tail): a plain D (the fused epilogue's warps walk whole
 * tiles), at least one whole round, and a last round at most half full. */
static int ws_tail_split(bool splits, int fused, long long tiles, int clusters)
{
    const long long tail = tiles % clusters;
    return splits && !fused && tiles >= clusters && tail > 0 && 2 * tail <= clusters;
}

static bool aligned16(const void *p)
{
    return (uintptr_t)p % 16 == 0;
}

/* CONS: consumer warpgroups, 64 tile rows each (ws_shape); BL: B's layout (sm90_k_major: N×K, sm90_mn_major: K×N). */
template <int BN, int CLUSTER, int SCHED, int NB = 2, int CONS = 2, typename BL = sm90_k_major>
static cudaError_t launch_ws(const pl_gemm_problem *p, cudaStream_t stream)
{
    typedef ws_config<BN, SCHED, NB, CONS> cfg;
    typedef ws_shape<CONS> shape;
    static_assert(cfg::stages >= 3 && cfg::stages <= 16, "stage count out of range");
    static_assert(cfg::smem_bytes <= WS_SMEM_LIMIT, "shared memory over the limit");
    static_assert(BN % 16 == 0 && (BN % (8 * CLUSTER)) == 0, "whole 16-column tail subtiles, whole 8-row B boxes");
    static_assert((cfg::b_bytes / CLUSTER) % 1024 == 0, "each CTA's share of B keeps the 1024-byte swizzle alignment");
    CUtensorMap ta, tb;
    cudaError_t e = pl_tensor_map_bf16(&ta, p->a, (uint64_t)p->m, (uint64_t)p->k, shape::bm, WS_BK);
    if (e == cudaSuccess)
        e = pl_tensor_map_operand_bf16(&tb, p->b, (uint64_t)p->n, (uint64_t)p->k, BN / CLUSTER, BL::trans);
    /* TMA stores D (and loads the residual and bias) when rows are 16-byte multiples and the pointers 16-byte
     * aligned; otherwise the consumers store from registers. A tile width that is not a multiple of 64 ends in a
     * narrower subtile with a dense map of its own (tt); such kernels, and three consumers, store a fused D from
     * registers (ws_config::tma_fused). */
    const pl_gemm_out out = pl_gemm_out_of(p);
    CUtensorMap td = ta, tr = ta, tt = ta;
    const int tma_store =
        p->n % 8 == 0 && aligned16(p->d) && aligned16(p->epi.bias) && aligned16(p->epi.residual) &&
        (cfg::tma_fused || !out.fused) &&
        pl_tensor_map_bf16(&td, p->d, (uint64_t)p->m, (uint64_t)p->n, EPI_SUB, EPI_SUB) == cudaSuccess &&
        (BN % EPI_SUB == 0 ||
         pl_tensor_map_bf16_dense(&tt, p->d, (uint64_t)p->m, (uint64_t)p->n, EPI_SUB, BN % EPI_SUB) == cudaSuccess) &&
        (!p->epi.residual ||
         pl_tensor_map_bf16(&tr, p->epi.residual, (uint64_t)p->m, (uint64_t)p->n, EPI_SUB, EPI_SUB) == cudaSuccess);
    int device = 0, sms = 0;
    if (e == cudaSuccess)
        e = kernel_launch_prepare((const void *)gemm_wgmma_ws_kernel<BN, CLUSTER, SCHED, NB, CONS, BL>, cfg::smem_bytes,
                                  &device, &sms);
    if (e != cudaSuccess)
        return e;

    const int tiles_m = (p->m + shape::bm - 1) / shape::bm, tile_cols = (p->n + BN - 1) / BN;
    const int tile_rows = (tiles_m + CLUSTER - 1) / CLUSTER; /* in cluster units */
    const long long tiles = (long long)tile_rows * tile_cols;
    int clusters = CLUSTER > 1 ? ws_max_clusters<BN, CLUSTER, SCHED, NB, CONS, BL>(device, sms) : sms;
    if (clusters > tiles)
        clusters = (int)tiles;
    const int tail_split = ws_tail_split(ws_tail<BN, CLUSTER, SCHED, CONS>::splits, out.fused, tiles, clusters);

    cudaLaunchConfig_t lc;
    cudaLaunchAttribute attr;
    ws_launch_config(&lc, &attr, clusters * CLUSTER, shape::threads, CLUSTER, cfg::smem_bytes, stream);
    e = cudaLaunchKernelEx(&lc, gemm_wgmma_ws_kernel<BN, CLUSTER, SCHED, NB, CONS, BL>, ta, tb, td, tr, tt, tma_store,
                           out, (p->k + WS_BK - 1) / WS_BK, tile_rows, tile_cols, tail_split);
    return e != cudaSuccess ? e : cudaGetLastError();
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x128(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<128, 1, WS_COOPERATIVE>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x256(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<256, 1, WS_COOPERATIVE>(p, stream);
}

/* 128×192: three quarters of the 128×256 tile, for shapes whose tile count the wider tile quantizes badly (a
 * second wave a quarter full, or one wave with a third of the SMs idle: 1000×3000, 4104×4104). */
extern "C" cudaError_t pl_gemm_wgmma_ws_128x192(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<192, 1, WS_COOPERATIVE>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x192_c2(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<192, 2, WS_COOPERATIVE>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_pp_128x128(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<128, 1, WS_PINGPONG>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x128_c2(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<128, 2, WS_COOPERATIVE>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x256_c2(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<256, 2, WS_COOPERATIVE>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_pp_128x128_c2(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<128, 2, WS_PINGPONG>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x256_s3(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<256, 1, WS_COOPERATIVE, 4>(p, stream);
}

/* ---- tiles fitted to the shape, as cuBLAS fits them ---- */

/* 192×176 (cuBLAS's tile at 4104²: 22 × 24 = 528 tiles, four whole rounds of 132 CTAs where 128-row tiles leave a
 * fifth): three consumer warpgroups of 64 rows (ws_shape<3>), wgmma m64n176k16 (88 accumulators a thread), 176 columns
 * stored as two 64-column subtiles and a 48-column one, in 2-CTA clusters sharing B. Three stages and a whole tile of
 * epilogue buffers (three a consumer): at 4104² 0.4-0.7% over three stages with two buffers, 3% over four with one;
 * the same tile without a cluster 19% under it (H100, 2026-11-27; docs/perf/gemm.md). */
extern "C" cudaError_t pl_gemm_wgmma_ws_192x176_c2(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<176, 2, WS_COOPERATIVE, 3, 3>(p, stream);
}

/* 128×176: two consumers, five stages (where 128×192 has four): mixtral_w1 384×14336×4096 3 × 82 tiles */
extern "C" cudaError_t pl_gemm_wgmma_ws_128x176(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<176, 1, WS_COOPERATIVE, 2, 2>(p, stream);
}

/* 128×224 in 4-CTA clusters (four tile rows share each B panel, a quarter loaded and multicast by each CTA): 1000×3000
 * in 28 clusters, within the 30 of four an H100 holds at once (cuBLAS runs 128×200 tiles in clusters of four there) */
extern "C" cudaError_t pl_gemm_wgmma_ws_128x224_c4(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<224, 4, WS_COOPERATIVE>(p, stream);
}

/* ---- 128×224 without clusters of four ----
 * For M ≈ 200 and N a multiple of 224 (llama3_8b_up 200×14336×4096: 2 × 64 = 128 tiles, one wave on 128 SMs, where
 * 128×256 leaves 112 tiles and 20 SMs idle; 0.80 of cuBLAS on an H200, 2026-11-27). In pairs, the
 * two tile rows of a column share their B panel. On the H100 2-3% over 128×256 there (the weights' stream bounds
 * both; 2026-11-27). */
extern "C" cudaError_t pl_gemm_wgmma_ws_128x224(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<224, 1, WS_COOPERATIVE>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x224_c2(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<224, 2, WS_COOPERATIVE>(p, stream);
}

/* ---- B K×N: the same kernels reading B N-major (sm90_mn_major), tile widths of whole 64-column boxes; in 2-CTA
 * clusters each CTA multicasts whole boxes of the shared B panel (128: one each; 256: two each; 192: two and one) ----
 */
#define WS_KN_LAUNCHER(name, bn, cluster, sched, nb)                                                                   \
    extern "C" cudaError_t name(const pl_gemm_problem *p, cudaStream_t stream)                                         \
    {                                                                                                                  \
        return launch_ws<bn, cluster, sched, nb, 2, sm90_mn_major>(p, stream);                                         \
    }

WS_KN_LAUNCHER(pl_gemm_wgmma_ws_128x128_kn, 128, 1, WS_COOPERATIVE, 2)
WS_KN_LAUNCHER(pl_gemm_wgmma_ws_128x256_kn, 256, 1, WS_COOPERATIVE, 2)
WS_KN_LAUNCHER(pl_gemm_wgmma_ws_128x256_s3_kn, 256, 1, WS_COOPERATIVE, 4)
WS_KN_LAUNCHER(pl_gemm_wgmma_pp_128x128_kn, 128, 1, WS_PINGPONG, 2)
WS_KN_LAUNCHER(pl_gemm_wgmma_ws_128x192_kn, 192, 1, WS_COOPERATIVE, 2)
WS_KN_LAUNCHER(pl_gemm_wgmma_ws_128x128_c2_kn, 128, 2, WS_COOPERATIVE, 2)
WS_KN_LAUNCHER(pl_gemm_wgmma_ws_128x256_c2_kn, 256, 2, WS_COOPERATIVE, 2)
WS_KN_LAUNCHER(pl_gemm_wgmma_pp_128x128_c2_kn, 128, 2, WS_PINGPONG, 2)
WS_KN_LAUNCHER(pl_gemm_wgmma_ws_128x192_c2_kn, 192, 2, WS_COOPERATIVE, 2)
