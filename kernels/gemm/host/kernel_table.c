/* The table of native BF16 GEMM kernels: what each is, what it needs, which problems it takes, and what the pick's
 * model knows of it. The labs and the selector (perflab gemm) both enumerate this table, so a kernel added here is
 * verified and timed by both; the FP8 kernels have their own table (fp8_kernel_table.c). */
#include <stdio.h>
#include <string.h>

#include "gemm/gemm.h"
#include "gemm/host/splitk.h"

static int supports_any(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return pl_gemm_problem_valid(p, why, whylen);
}

/* The naive kernel's grid has one block row per 16 rows of D: gridDim.y caps M. */
static int supports_naive(const pl_gemm_problem *p, char *why, size_t whylen)
{
    if (!pl_gemm_problem_valid(p, why, whylen))
        return 0;
    if (p->m > 65535 * 16) {
        snprintf(why, whylen, "M = %d exceeds the naive kernel's grid (65535·16 rows)", p->m);
        return 0;
    }
    return 1;
}

/* The sm_90a kernels read B N×K (K-major for both operands, as wgmma takes them without transposition) through TMA,
 * which reads rows whose pitch is a multiple of 16 bytes from 16-byte aligned bases. */
static int supports_tma(const pl_gemm_problem *p, char *why, size_t whylen)
{
    if (!pl_gemm_problem_valid(p, why, whylen))
        return 0;
    if (p->b_layout != PL_GEMM_B_NK) {
        snprintf(why, whylen, "takes B N×K (K-major) only; B K×N goes to mma_sync");
        return 0;
    }
    if (p->k % 8 != 0) {
        snprintf(why, whylen, "needs K %% 8 == 0 (TMA rows are 16-byte multiples); K = %d falls back to mma_sync",
                 p->k);
        return 0;
    }
    if ((uintptr_t)p->a % 16 != 0 || (uintptr_t)p->b % 16 != 0) {
        snprintf(why, whylen, "needs 16-byte aligned A and B (TMA)");
        return 0;
    }
    return 1;
}

/* The split-K kernels (gemm/host/splitk.h): the TMA conditions, and D 4-byte aligned (bf16 pairs leave in one store).
 * The swapped ones are small-M kernels: beyond 4 tiles of M the plain tiles fit better (and the search would only
 * spend time losing). */
static int supports_sk(const pl_gemm_problem *p, int tile_m, int swap, char *why, size_t whylen)
{
    if (!supports_tma(p, why, whylen))
        return 0;
    if ((uintptr_t)p->d % 4 != 0) {
        snprintf(why, whylen, "needs D 4-byte aligned (bf16 pairs)");
        return 0;
    }
    if (swap && p->m > 4 * tile_m) {
        snprintf(why, whylen, "a small-M kernel: takes M <= %d (4 tiles of %d); M = %d", 4 * tile_m, tile_m, p->m);
        return 0;
    }
    return 1;
}

static int supports_sk_swap16(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, 16, 1, why, whylen);
}

static int supports_sk_swap32(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, 32, 1, why, whylen);
}

static int supports_sk_swap64(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, 64, 1, why, whylen);
}

static int supports_sk_swap128(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, 128, 1, why, whylen);
}

/* 200 tokens a tile, one tile of them: up to M = 128 the swapped 128-token tile pads less, and past 200 a second
 * tile row doubles the CTAs of a launch that is not persistent (measured on an H100, 2026-11: M = 256 and 384 ran at
 * 0.37 and 0.73 of the best kernel) */
static int supports_sk_swap200(const pl_gemm_problem *p, char *why, size_t whylen)
{
    if (!supports_sk(p, 200, 1, why, whylen))
        return 0;
    if (p->m <= 128 || p->m > 200) {
        snprintf(why, whylen, "a tile fitted to M of about 200: takes 128 < M <= 200 (one tile of 200); M = %d", p->m);
        return 0;
    }
    return 1;
}

static int supports_sk_plain(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, PL_SK_ROWS, 0, why, whylen);
}

/* The decode GEMVs (portable/gemv_mma.cu): the TMA kernels' conditions on the operands (16-byte loads of B's rows
 * and of A's) and at most `tokens` tokens. */
static int supports_gemv(const pl_gemm_problem *p, int tokens, char *why, size_t whylen)
{
    if (!supports_tma(p, why, whylen))
        return 0;
    if (p->m > tokens) {
        snprintf(why, whylen, "a decode kernel: takes M <= %d; M = %d", tokens, p->m);
        return 0;
    }
    return 1;
}

static int supports_gemv8(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_gemv(p, 8, why, whylen);
}

static int supports_gemv16(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_gemv(p, 16, why, whylen);
}

static int supports_gemv32(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_gemv(p, 32, why, whylen);
}

/* ---- what the pick's model knows of each kernel (pl_gemm_model) ----
 * Mainloop efficiencies measured on an H200 (docs/perf/gemm.md) against 132 · 4096 FLOP/clk · 1.5 GHz = 811 TFLOP/s:
 * cooperative 128×256 0.83, 128×128 0.77, ping-pong 0.75, wgmma_tma 0.65, mma_sync 0.39; 2-CTA clusters within 1%
 * (0.99×). Predicted: 128×192 0.80 (between 128×128 and 128×256), 192×176 as 128×192, 128×176 0.78, 128×224 0.81.
 * A fused epilogue costs the cooperative kernels that store D through TMA about 10% (0.95-0.99× with a separate
 * pass); the 176- and 224-wide tiles and the three-consumer tile store a fused D from registers, measured 0.79× at
 * K ≈ 1024 (H200, 2026-11-26): 0.75; the ping-pong kernel and the one whose epilogue warps take the product over
 * lose nothing.
 * Predicted for the split-K kernels with one consumer warpgroup (wgmma m64nW): shared memory feeds 2 KB of X and
 * W·32 B of Y per k16 step at 128 B/clk against W/2 clocks of tensor work, so eff ≈ min(0.75, (W/2) / (16 + W/4))
 * · 0.95; those with two consumers as the cooperative tiles of the same width. The teaching rungs and the FP8 kernels
 * carry the model's floor (0.05): the pick never chooses them. */
#define FUSED_TMA_STORE 0.90
#define FUSED_REGISTERS 0.75
#define FUSED_FREE      1.0
#define IN_PAIRS(eff)   ((eff)*0.99) /* a 2- or 4-CTA cluster */
#define SK_FEED(w)      (((w) / 2.0) / (16 + (w) / 4.0))
#define SK_EFF(w)       ((SK_FEED(w) < 0.75 ? SK_FEED(w) : 0.75) * 0.95)
#define MODEL_FLOOR                                                                                                    \
    {                                                                                                                  \
        .eff = 0.05, .fused_eff = 0.05, .mem_eff = 1.0, .resident = 1                                                  \
    }
#define MODEL_RESIDENT(e, r)                                                                                           \
    {                                                                                                                  \
        .eff = (e), .fused_eff = (e), .mem_eff = 1.0, .resident = (r)                                                  \
    }
#define MODEL_PERSISTENT(e, fused)                                                                                     \
    {                                                                                                                  \
        .eff = (e), .fused_eff = (e) * (fused), .mem_eff = 1.0, .resident = 1, .persistent = 1                         \
    }

#define SK_FLAGS      PL_GEMM_KERNEL_SPLIT_K
#define SK_SWAP_FLAGS (SK_FLAGS | PL_GEMM_KERNEL_SWAP_AB)
/* the split-K kernels' CTA shape: cluster_m 0 (the split is chosen at launch), one consumer warpgroup */
#define SK_TILE(tm, tn, st) .tile_m = (tm), .tile_n = (tn), .tile_k = 64, .stages = (st), .threads = PL_SK_THREADS
/* the split-K kernels with two consumer warpgroups, one CTA an SM, the split chosen by waves */
#define SK2_TILE(tm, tn, st) .tile_m = (tm), .tile_n = (tn), .tile_k = 64, .stages = (st), .threads = 288

/* The fallback every shape can take (any M, N, K, both layouts): pl_gemm_kernel_fallback. */
#define FALLBACK 2

/* Where the heuristic's model ties, the earlier entry wins: the plain split-K tiles come before the swapped ones
 * (their stores run along D's rows). */
static const pl_gemm_kernel kernels[] = {
    {.name = "naive",
     .rung = "naive",
     .technique = "one thread per output, K fp32 FMAs from global memory",
     .tile_m = 16,
     .tile_n = 16,
     .tile_k = 1,
     .stages = 1,
     .cluster_m = 1,
     .threads = 256,
     .needs = PL_GEMM_NEEDS_ANY,
     .flags = PL_GEMM_KERNEL_TEACHING,
     .supports = supports_naive,
     .launch = pl_gemm_naive,
     .model = MODEL_FLOOR},
    {.name = "smem_tiled_64x64x16",
     .rung = "smem_tiled",
     .technique = "64×64 tiles staged in shared memory, 4×4 outputs per thread in registers",
     .tile_m = 64,
     .tile_n = 64,
     .tile_k = 16,
     .stages = 1,
     .cluster_m = 1,
     .threads = 256,
     .needs = PL_GEMM_NEEDS_ANY,
     .flags = PL_GEMM_KERNEL_TEACHING,
     .supports = supports_any,
     .launch = pl_gemm_smem_tiled,
     .model = MODEL_FLOOR},
    [FALLBACK] = {.name = "mma_sync_128x128x32_s4",
                  .rung = "mma_sync",
                  .technique = "mma.sync m16n8k16 tensor cores, ldmatrix from swizzled shared memory, 4-stage "
                               "cp.async pipeline",
                  .tile_m = 128,
                  .tile_n = 128,
                  .tile_k = 32,
                  .stages = 4,
                  .cluster_m = 1,
                  .threads = 256,
                  .needs = PL_GEMM_NEEDS_MMA,
                  .supports = supports_any,
                  .launch = pl_gemm_mma_sync,
                  .model = MODEL_RESIDENT(0.39, 2)},
    {.name = "wgmma_tma_128x128x64_s3",
     .rung = "wgmma_tma",
     .technique = "wgmma m64n128k16 from 128B-swizzled shared memory filled by TMA on mbarriers, 3 stages, 2 CTAs/SM",
     .tile_m = 128,
     .tile_n = 128,
     .tile_k = 64,
     .stages = 3,
     .cluster_m = 1,
     .threads = 256,
     .needs = PL_GEMM_NEEDS_WGMMA,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_tma_128x128,
     .model = MODEL_RESIDENT(0.65, 2)},
    {.name = "wgmma_ws_128x128x64_s6",
     .rung = "wgmma_ws",
     .technique = "persistent warp-specialized, cooperative: TMA producer warpgroup (setmaxnreg 56), 2 wgmma consumers "
                  "(224) sharing each tile, 6-stage mbarrier ring, TMA-store epilogue",
     .tile_m = 128,
     .tile_n = 128,
     .tile_k = 64,
     .stages = 6,
     .cluster_m = 1,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_WGMMA,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_ws_128x128,
     .model = MODEL_PERSISTENT(0.77, FUSED_TMA_STORE)},
    {.name = "wgmma_ws_128x256x64_s4",
     .rung = "wgmma_ws",
     .technique = "persistent warp-specialized, cooperative: 2 wgmma m64n256 consumers sharing each 128×256 tile, 4 "
                  "stages",
     .tile_m = 128,
     .tile_n = 256,
     .tile_k = 64,
     .stages = 4,
     .cluster_m = 1,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_WGMMA,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_ws_128x256,
     .model = MODEL_PERSISTENT(0.83, FUSED_TMA_STORE)},
    {.name = "wgmma_ws_128x256x64_s3",
     .rung = "wgmma_ws",
     .technique = "cooperative 128×256 with a whole tile of epilogue buffers (3 stages): fused, the consumers hand the "
                  "product to the epilogue warps and never wait for them",
     .tile_m = 128,
     .tile_n = 256,
     .tile_k = 64,
     .stages = 3,
     .cluster_m = 1,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_WGMMA,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_ws_128x256_s3,
     .model = MODEL_PERSISTENT(0.82, FUSED_FREE)},
    {.name = "wgmma_pp_128x128x64_s5",
     .rung = "wgmma_ws",
     .technique = "persistent warp-specialized, ping-pong: each consumer owns whole 128×128 tiles and stores one while "
                  "the other multiplies, 5 stages",
     .tile_m = 128,
     .tile_n = 128,
     .tile_k = 64,
     .stages = 5,
     .cluster_m = 1,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_WGMMA,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_pp_128x128,
     .model = MODEL_PERSISTENT(0.75, FUSED_FREE)},
    {.name = "wgmma_ws_128x128x64_s6_c2",
     .rung = "wgmma_ws_cluster",
     .technique = "cooperative wgmma_ws in 2-CTA clusters: B panel TMA-multicast to both CTAs, stages released through "
                  "DSMEM",
     .tile_m = 128,
     .tile_n = 128,
     .tile_k = 64,
     .stages = 6,
     .cluster_m = 2,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_ws_128x128_c2,
     .model = MODEL_PERSISTENT(IN_PAIRS(0.77), FUSED_TMA_STORE)},
    {.name = "wgmma_ws_128x256x64_s4_c2",
     .rung = "wgmma_ws_cluster",
     .technique = "cooperative 128×256 wgmma_ws in 2-CTA clusters: B panel TMA-multicast, stages released through "
                  "DSMEM; a last round at most half full cut into 128×128 halves, one tile a cluster",
     .tile_m = 128,
     .tile_n = 256,
     .tile_k = 64,
     .stages = 4,
     .cluster_m = 2,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_ws_128x256_c2,
     .model = MODEL_PERSISTENT(IN_PAIRS(0.83), FUSED_TMA_STORE)},
    {.name = "wgmma_pp_128x128x64_s5_c2",
     .rung = "wgmma_ws_cluster",
     .technique = "ping-pong wgmma_ws in 2-CTA clusters: B panel TMA-multicast to both CTAs, stages released through "
                  "DSMEM",
     .tile_m = 128,
     .tile_n = 128,
     .tile_k = 64,
     .stages = 5,
     .cluster_m = 2,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_pp_128x128_c2,
     .model = MODEL_PERSISTENT(IN_PAIRS(0.75), FUSED_FREE)},
    /* ---- split-K over a cluster, fixed-order fix-up through DSMEM (validated on an H200) ---- */
    {.name = "wgmma_sk_64x64x64",
     .rung = "wgmma_splitk",
     .technique = "narrow N: 64×64 tiles, K split over a cluster when the tiles do not fill the GPU, fixed-order "
                  "fix-up",
     SK_TILE(64, 64, PL_SK_STAGES(64)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_FLAGS,
     .supports = supports_sk_plain,
     .launch = pl_gemm_wgmma_sk_64x64,
     .model = MODEL_RESIDENT(SK_EFF(64), PL_SK_CTAS_PER_SM)},
    {.name = "wgmma_sk_64x128x64",
     .rung = "wgmma_splitk",
     .technique =
         "64×128 tiles, 3 CTAs per SM, K split over a cluster when the tiles do not fill the GPU; an edge tile "
         "runs the half-width wgmma",
     SK_TILE(64, 128, PL_SK_STAGES(128)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_FLAGS,
     .supports = supports_sk_plain,
     .launch = pl_gemm_wgmma_sk_64x128,
     .model = MODEL_RESIDENT(SK_EFF(128), PL_SK_CTAS_PER_SM)},
    {.name = "wgmma_sk_swap_16x64x64",
     .rung = "wgmma_splitk",
     .technique = "small M, A/B swapped (Dᵀ = B·Aᵀ: N fills wgmma's 64 rows, M ≤ 16 its N), K split over a cluster, "
                  "fixed-order fix-up through DSMEM",
     SK_TILE(16, 64, PL_SK_STAGES(16)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_SWAP_FLAGS,
     .supports = supports_sk_swap16,
     .launch = pl_gemm_wgmma_sk_swap16,
     .model = MODEL_RESIDENT(SK_EFF(16), PL_SK_CTAS_PER_SM)},
    {.name = "wgmma_sk_swap_32x64x64",
     .rung = "wgmma_splitk",
     .technique = "the swapped split-K kernel for M ≤ 32 (wgmma m64n32)",
     SK_TILE(32, 64, PL_SK_STAGES(32)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_SWAP_FLAGS,
     .supports = supports_sk_swap32,
     .launch = pl_gemm_wgmma_sk_swap32,
     .model = MODEL_RESIDENT(SK_EFF(32), PL_SK_CTAS_PER_SM)},
    {.name = "wgmma_sk_swap_64x64x64",
     .rung = "wgmma_splitk",
     .technique = "the swapped split-K kernel for M ≤ 64 (wgmma m64n64)",
     SK_TILE(64, 64, PL_SK_STAGES(64)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_SWAP_FLAGS,
     .supports = supports_sk_swap64,
     .launch = pl_gemm_wgmma_sk_swap64,
     .model = MODEL_RESIDENT(SK_EFF(64), PL_SK_CTAS_PER_SM)},
    {.name = "wgmma_sk_swap_128x64x64",
     .rung = "wgmma_splitk",
     .technique = "the swapped split-K kernel for M ≤ 128 (wgmma m64n128)",
     SK_TILE(128, 64, PL_SK_STAGES(128)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_SWAP_FLAGS,
     .supports = supports_sk_swap128,
     .launch = pl_gemm_wgmma_sk_swap128,
     .model = MODEL_RESIDENT(SK_EFF(128), PL_SK_CTAS_PER_SM)},
    /* the split sized for one CTA per SM (up to 16: non-portable clusters) */
    {.name = "wgmma_sk_64x64x64_w1",
     .rung = "wgmma_splitk",
     .technique = "the 64×64 split-K kernel, its split sized for one CTA per SM (up to 16)",
     SK_TILE(64, 64, PL_SK_STAGES(64)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_W1,
     .supports = supports_sk_plain,
     .launch = pl_gemm_wgmma_sk_64x64_w1,
     .model = MODEL_RESIDENT(SK_EFF(64), PL_SK_CTAS_PER_SM)},
    {.name = "wgmma_sk_64x128x64_w1",
     .rung = "wgmma_splitk",
     .technique = "the 64×128 split-K kernel, its split sized for one CTA per SM",
     SK_TILE(64, 128, PL_SK_STAGES(128)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_W1,
     .supports = supports_sk_plain,
     .launch = pl_gemm_wgmma_sk_64x128_w1,
     .model = MODEL_RESIDENT(SK_EFF(128), PL_SK_CTAS_PER_SM)},
    {.name = "wgmma_sk_swap_32x64x64_w1",
     .rung = "wgmma_splitk",
     .technique = "the swapped split-K kernel for M ≤ 32, its split sized for one CTA per SM",
     SK_TILE(32, 64, PL_SK_STAGES(32)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_W1,
     .supports = supports_sk_swap32,
     .launch = pl_gemm_wgmma_sk_swap32_w1,
     .model = MODEL_RESIDENT(SK_EFF(32), PL_SK_CTAS_PER_SM)},
    {.name = "wgmma_sk_swap_64x64x64_w1",
     .rung = "wgmma_splitk",
     .technique = "the swapped split-K kernel for M ≤ 64, its split sized for one CTA per SM",
     SK_TILE(64, 64, PL_SK_STAGES(64)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_W1,
     .supports = supports_sk_swap64,
     .launch = pl_gemm_wgmma_sk_swap64_w1,
     .model = MODEL_RESIDENT(SK_EFF(64), PL_SK_CTAS_PER_SM)},
    /* one CTA per SM with every byte of shared memory a stage (14 and 9 stages), split for one wave of clusters */
    {.name = "wgmma_sk_64x64x64_deep",
     .rung = "wgmma_splitk",
     .technique = "the 64×64 split-K kernel with one CTA per SM and a 14-stage ring, split for one wave of whole "
                  "clusters",
     SK_TILE(64, 64, PL_SK_RING_STAGES(PL_SK_ROWS, 64)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP,
     .supports = supports_sk_plain,
     .launch = pl_gemm_wgmma_sk_64x64_deep,
     .model = MODEL_RESIDENT(SK_EFF(64), 1)},
    {.name = "wgmma_sk_64x128x64_deep",
     .rung = "wgmma_splitk",
     .technique = "the 64×128 split-K kernel with one CTA per SM and a 9-stage ring, split for one wave of whole "
                  "clusters",
     SK_TILE(64, 128, PL_SK_RING_STAGES(PL_SK_ROWS, 128)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP,
     .supports = supports_sk_plain,
     .launch = pl_gemm_wgmma_sk_64x128_deep,
     .model = MODEL_RESIDENT(SK_EFF(128), 1)},
    /* ---- split-K with the cooperative kernels' 128-row tiles (two consumer warpgroups, one CTA an SM, every byte of
     * shared memory a stage), the split chosen by waves: few tiles over a long K, last waves ---- */
    {.name = "wgmma_sk_128x128x64",
     .rung = "wgmma_splitk",
     .technique = "128×128 tiles, two consumer warpgroups, one CTA per SM with 7 stages, K split over a cluster (up to "
                  "8) to fill the waves, fixed-order fix-up through DSMEM",
     SK2_TILE(128, 128, PL_SK_RING_STAGES(2 * PL_SK_ROWS, 128)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_WAVES,
     .supports = supports_sk_plain,
     .launch = pl_gemm_wgmma_sk_128x128,
     .model = MODEL_RESIDENT(0.77, 1)},
    {.name = "wgmma_sk_128x256x64",
     .rung = "wgmma_splitk",
     .technique = "128×256 tiles (wgmma m64n256), two consumer warpgroups, one CTA per SM with 4 stages, K split by "
                  "waves",
     SK2_TILE(128, 256, PL_SK_RING_STAGES(2 * PL_SK_ROWS, 256)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_WAVES,
     .supports = supports_sk_plain,
     .launch = pl_gemm_wgmma_sk_128x256,
     .model = MODEL_RESIDENT(0.83, 1)},
    /* ---- 128×192 tiles for tile counts that 128×256 quantizes badly ---- */
    {.name = "wgmma_ws_128x192x64_s4",
     .rung = "wgmma_ws",
     .technique = "the cooperative persistent kernel with 128×192 tiles (wgmma m64n192): 3/4 of the 128×256 tile's "
                  "work, for tile counts the wider tile leaves a wave a quarter full",
     .tile_m = 128,
     .tile_n = 192,
     .tile_k = 64,
     .stages = 4,
     .cluster_m = 1,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_WGMMA,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_ws_128x192,
     .model = MODEL_PERSISTENT(0.80, FUSED_TMA_STORE)},
    {.name = "wgmma_ws_128x192x64_s4_c2",
     .rung = "wgmma_ws_cluster",
     .technique = "cooperative 128×192 in 2-CTA clusters: B panel TMA-multicast to both CTAs, stages released through "
                  "DSMEM",
     .tile_m = 128,
     .tile_n = 192,
     .tile_k = 64,
     .stages = 4,
     .cluster_m = 2,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_ws_128x192_c2,
     .model = MODEL_PERSISTENT(IN_PAIRS(0.80), FUSED_TMA_STORE)},
    /* ---- tiles fitted to the shape, as cuBLAS fits them ---- */
    {.name = "wgmma_ws_192x176x64_s3_c2",
     .rung = "wgmma_ws_cluster",
     .technique = "three consumer warpgroups on 192×176 tiles (wgmma m64n176, the last 48 columns stored through a "
                  "dense TMA map) in 2-CTA clusters sharing B, 3 stages and a whole tile of epilogue buffers: 4104² in "
                  "four whole rounds",
     .tile_m = 192,
     .tile_n = 176,
     .tile_k = 64,
     .stages = 3,
     .cluster_m = 2,
     .threads = 512,
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_ws_192x176_c2,
     .model = MODEL_PERSISTENT(IN_PAIRS(0.80), FUSED_REGISTERS)},
    {.name = "wgmma_ws_128x176x64_s5",
     .rung = "wgmma_ws",
     .technique = "the cooperative kernel with 128×176 tiles (wgmma m64n176, 5 stages): tile counts between 128×128 "
                  "and 128×192",
     .tile_m = 128,
     .tile_n = 176,
     .tile_k = 64,
     .stages = 5,
     .cluster_m = 1,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_WGMMA,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_ws_128x176,
     .model = MODEL_PERSISTENT(0.78, FUSED_REGISTERS)},
    {.name = "wgmma_ws_128x224x64_s4_c4",
     .rung = "wgmma_ws_cluster",
     .technique = "128×224 tiles in 4-CTA clusters: four tile rows share each B panel, a quarter loaded and multicast "
                  "by each CTA",
     .tile_m = 128,
     .tile_n = 224,
     .tile_k = 64,
     .stages = 4,
     .cluster_m = 4,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_ws_128x224_c4,
     .model = MODEL_PERSISTENT(IN_PAIRS(0.81), FUSED_REGISTERS)},
    /* ---- decode as a streaming GEMV on mma.sync ---- */
    {.name = "gemv_mma_t8",
     .rung = "gemv_mma",
     .technique = "decode M <= 8: mma.sync fed from 16-byte global loads of B (no shared-memory stages), 16 rows of N "
                  "per CTA, K over 8 warps added in warp order",
     .tile_m = 8,
     .tile_n = 16,
     .tile_k = 64,
     .stages = 1,
     .cluster_m = 1,
     .threads = 256,
     .needs = PL_GEMM_NEEDS_MMA,
     .flags = PL_GEMM_KERNEL_SMALL_M,
     .supports = supports_gemv8,
     .launch = pl_gemm_gemv_mma_t8,
     .model = MODEL_RESIDENT(0.39, 8)}, /* mma.sync's measured fraction; the padded tokens count as work */
    {.name = "gemv_mma_t16",
     .rung = "gemv_mma",
     .technique = "the streaming GEMV for M <= 16 (two n8 token tiles share each B fragment)",
     .tile_m = 16,
     .tile_n = 16,
     .tile_k = 64,
     .stages = 1,
     .cluster_m = 1,
     .threads = 256,
     .needs = PL_GEMM_NEEDS_MMA,
     .flags = PL_GEMM_KERNEL_SMALL_M,
     .supports = supports_gemv16,
     .launch = pl_gemm_gemv_mma_t16,
     .model = MODEL_RESIDENT(0.39, 8)},
    {.name = "gemv_mma_t32",
     .rung = "gemv_mma",
     .technique = "the streaming GEMV for M <= 32 (four n8 token tiles)",
     .tile_m = 32,
     .tile_n = 16,
     .tile_k = 64,
     .stages = 1,
     .cluster_m = 1,
     .threads = 256,
     .needs = PL_GEMM_NEEDS_MMA,
     .flags = PL_GEMM_KERNEL_SMALL_M,
     .supports = supports_gemv32,
     .launch = pl_gemm_gemv_mma_t32,
     .model = MODEL_RESIDENT(0.39, 8)},
    /* ---- 128×224 tiles without clusters of four: at M ≈ 200 two tile rows over N = 224·k fill 128 SMs in one
     * wave ---- */
    {.name = "wgmma_ws_128x224x64_s4",
     .rung = "wgmma_ws",
     .technique = "the cooperative kernel with 128×224 tiles (wgmma m64n224, the last 32 columns through a dense TMA "
                  "map), 4 stages",
     .tile_m = 128,
     .tile_n = 224,
     .tile_k = 64,
     .stages = 4,
     .cluster_m = 1,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_WGMMA,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_ws_128x224,
     .model = MODEL_PERSISTENT(0.81, FUSED_REGISTERS)},
    {.name = "wgmma_ws_128x224x64_s4_c2",
     .rung = "wgmma_ws_cluster",
     .technique = "128×224 tiles in 2-CTA clusters: two tile rows share each B panel, half loaded and multicast by "
                  "each CTA",
     .tile_m = 128,
     .tile_n = 224,
     .tile_k = 64,
     .stages = 4,
     .cluster_m = 2,
     .threads = 384,
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .supports = supports_tma,
     .launch = pl_gemm_wgmma_ws_128x224_c2,
     .model = MODEL_PERSISTENT(IN_PAIRS(0.81), FUSED_REGISTERS)},
    /* ---- tiles fitted as cuBLAS fits them on the H200's two lowest shapes ---- */
    {.name = "wgmma_sk_swap_200x128x64",
     .rung = "wgmma_splitk",
     .technique = "swapped (Dᵀ = B·Aᵀ) with two consumer warpgroups: 128 rows of N × 200 tokens (wgmma m64n200, no "
                  "padded row at M = 200), 5 stages, one CTA per SM, K split by waves",
     SK2_TILE(200, 128, PL_SK_RING_STAGES(2 * PL_SK_ROWS, 200)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_WAVES,
     .supports = supports_sk_swap200,
     .launch = pl_gemm_wgmma_sk_swap200,
     .model = MODEL_RESIDENT(0.81, 1)},
    {.name = "wgmma_sk_swap_16x64x64_deep",
     .rung = "wgmma_splitk",
     .technique = "the swapped split-K kernel for M ≤ 16 with one CTA per SM and a 16-stage ring, split for one wave "
                  "of whole clusters (unsplit when N/64 tiles fill the SMs)",
     SK_TILE(16, 64, PL_SK_RING_STAGES(PL_SK_ROWS, 16)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP,
     .supports = supports_sk_swap16,
     .launch = pl_gemm_wgmma_sk_swap16_deep,
     .model = MODEL_RESIDENT(SK_EFF(16), 1)},
    {.name = "wgmma_sk_swap_32x64x64_deep",
     .rung = "wgmma_splitk",
     .technique = "the swapped split-K kernel for M ≤ 32 with one CTA per SM and a 16-stage ring, split for one wave "
                  "of whole clusters",
     SK_TILE(32, 64, PL_SK_RING_STAGES(PL_SK_ROWS, 32)),
     .needs = PL_GEMM_NEEDS_CLUSTER,
     .flags = SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP,
     .supports = supports_sk_swap32,
     .launch = pl_gemm_wgmma_sk_swap32_deep,
     .model = MODEL_RESIDENT(SK_EFF(32), 1)},
};
/* users keep one bit per kernel of this table (labs/gemm_lab.c: one fallback note each) */
_Static_assert(sizeof kernels / sizeof kernels[0] <= 64, "more than 64 BF16 kernels: widen the per-kernel masks");

size_t pl_gemm_kernel_count(void)
{
    return sizeof kernels / sizeof kernels[0];
}

const pl_gemm_kernel *pl_gemm_kernel_at(size_t i)
{
    return i < pl_gemm_kernel_count() ? &kernels[i] : NULL;
}

const pl_gemm_kernel *pl_gemm_kernel_find(const char *name)
{
    for (size_t i = 0; i < pl_gemm_kernel_count(); i++)
        if (strcmp(kernels[i].name, name) == 0)
            return &kernels[i];
    return NULL;
}

const pl_gemm_kernel *pl_gemm_kernel_fallback(void)
{
    return &kernels[FALLBACK];
}
