/* The split-K kernels' rows of the BF16 table (wgmma_sk_sm90a.cu: K split over a cluster, a fixed-order fix-up
 * through DSMEM, validated on an H200; their order in host/kernel_table.c; the split from gemm/host/splitk.h).
 *
 * What the pick's model knows of them, predicted: those with one consumer warpgroup (wgmma m64nW) as PL_SK_EFF says
 * (gemm/host/splitk.h: fed by shared memory); those with two consumers as the cooperative tiles of the same width
 * (wgmma_ws_rows.c). */
#include <stdint.h>
#include <stdio.h>

#include "gemm/host/kernel_row.h"
#include "gemm/host/splitk.h"

/* The TMA conditions of B's layout (kn: the _kn rows, B K×N), and D 4-byte aligned (bf16 pairs leave in one store).
 * The swapped ones are small-M kernels: beyond 4 tiles of M the plain tiles fit better (and the search would only
 * spend time losing). */
static int supports_sk(const pl_gemm_problem *p, int tile_m, int swap, int kn, char *why, size_t whylen)
{
    if (!(kn ? pl_gemm_supports_tma_kn(p, why, whylen) : pl_gemm_supports_tma(p, why, whylen)))
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
    return supports_sk(p, 16, 1, 0, why, whylen);
}

static int supports_sk_swap32(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, 32, 1, 0, why, whylen);
}

static int supports_sk_swap64(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, 64, 1, 0, why, whylen);
}

static int supports_sk_swap128(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, 128, 1, 0, why, whylen);
}

/* 200 tokens a tile, one tile of them: up to M = 128 the swapped 128-token tile pads less, and past 200 a second
 * tile row doubles the CTAs of a launch that is not persistent (measured on an H100, 2026-11: M = 256 and 384 ran at
 * 0.37 and 0.73 of the best kernel) */
static int supports_sk_swap200(const pl_gemm_problem *p, char *why, size_t whylen)
{
    if (!supports_sk(p, 200, 1, 0, why, whylen))
        return 0;
    if (p->m <= 128 || p->m > 200) {
        snprintf(why, whylen, "a tile fitted to M of about 200: takes 128 < M <= 200 (one tile of 200); M = %d", p->m);
        return 0;
    }
    return 1;
}

static int supports_sk_plain(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, PL_SK_ROWS, 0, 0, why, whylen);
}

/* ---- B K×N ---- */

static int supports_sk_kn_swap16(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, 16, 1, 1, why, whylen);
}

static int supports_sk_kn_swap32(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, 32, 1, 1, why, whylen);
}

static int supports_sk_kn_swap64(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, 64, 1, 1, why, whylen);
}

static int supports_sk_kn_swap128(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, 128, 1, 1, why, whylen);
}

static int supports_sk_kn_plain(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_sk(p, PL_SK_ROWS, 0, 1, why, whylen);
}

#define SK_EFF(w)     PL_SK_EFF(w)
#define SK_FLAGS      PL_GEMM_KERNEL_SPLIT_K
#define SK_SWAP_FLAGS (SK_FLAGS | PL_GEMM_KERNEL_SWAP_AB)
#define SK_KN         PL_GEMM_KERNEL_B_KN
/* the split-K kernels' CTA shape: cluster_m 0 (the split is chosen at launch), one consumer warpgroup */
#define SK_TILE(tm, tn, st) .tile_m = (tm), .tile_n = (tn), .tile_k = 64, .stages = (st), .threads = PL_SK_THREADS
/* the split-K kernels with two consumer warpgroups, one CTA an SM, the split chosen by waves */
#define SK2_TILE(tm, tn, st) .tile_m = (tm), .tile_n = (tn), .tile_k = 64, .stages = (st), .threads = 288
/* A configuration's tile, stages, threads, needs and model: what its row and its B K×N twin's share */
#define CFG_SK_64x64                                                                                                   \
    SK_TILE(64, 64, PL_SK_STAGES(64)), .needs = PL_GEMM_NEEDS_CLUSTER,                                                 \
                                       .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(64), PL_SK_CTAS_PER_SM)
#define CFG_SK_64x128                                                                                                  \
    SK_TILE(64, 128, PL_SK_STAGES(128)), .needs = PL_GEMM_NEEDS_CLUSTER,                                               \
                                         .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(128), PL_SK_CTAS_PER_SM)
#define CFG_SK_SWAP16                                                                                                  \
    SK_TILE(16, 64, PL_SK_STAGES(16)), .needs = PL_GEMM_NEEDS_CLUSTER,                                                 \
                                       .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(16), PL_SK_CTAS_PER_SM)
#define CFG_SK_SWAP32                                                                                                  \
    SK_TILE(32, 64, PL_SK_STAGES(32)), .needs = PL_GEMM_NEEDS_CLUSTER,                                                 \
                                       .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(32), PL_SK_CTAS_PER_SM)
#define CFG_SK_SWAP64                                                                                                  \
    SK_TILE(64, 64, PL_SK_STAGES(64)), .needs = PL_GEMM_NEEDS_CLUSTER,                                                 \
                                       .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(64), PL_SK_CTAS_PER_SM)
#define CFG_SK_SWAP128                                                                                                 \
    SK_TILE(128, 64, PL_SK_STAGES(128)), .needs = PL_GEMM_NEEDS_CLUSTER,                                               \
                                         .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(128), PL_SK_CTAS_PER_SM)
#define CFG_SK_64x64_DEEP                                                                                              \
    SK_TILE(64, 64, PL_SK_RING_STAGES(PL_SK_ROWS, 64)), .needs = PL_GEMM_NEEDS_CLUSTER,                                \
                                                        .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(64), 1)
#define CFG_SK_64x128_DEEP                                                                                             \
    SK_TILE(64, 128, PL_SK_RING_STAGES(PL_SK_ROWS, 128)), .needs = PL_GEMM_NEEDS_CLUSTER,                              \
                                                          .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(128), 1)
#define CFG_SK_SWAP16_DEEP                                                                                             \
    SK_TILE(16, 64, PL_SK_RING_STAGES(PL_SK_ROWS, 16)), .needs = PL_GEMM_NEEDS_CLUSTER,                                \
                                                        .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(16), 1)
#define CFG_SK_SWAP32_DEEP                                                                                             \
    SK_TILE(32, 64, PL_SK_RING_STAGES(PL_SK_ROWS, 32)), .needs = PL_GEMM_NEEDS_CLUSTER,                                \
                                                        .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(32), 1)
#define CFG_SK_128x128                                                                                                 \
    SK2_TILE(128, 128, PL_SK_RING_STAGES(2 * PL_SK_ROWS, 128)), .needs = PL_GEMM_NEEDS_CLUSTER,                        \
                                                                .model = PL_GEMM_MODEL_RESIDENT(0.77, 1)

const pl_gemm_kernel pl_gemm_row_wgmma_sk_64x64x64 = {
    .name = "wgmma_sk_64x64x64",
    .rung = "wgmma_splitk",
    .technique = "narrow N: 64×64 tiles, K split over a cluster when the tiles do not fill the GPU, fixed-order "
                 "fix-up",
    CFG_SK_64x64,
    .flags = SK_FLAGS,
    .supports = supports_sk_plain,
    .launch = pl_gemm_wgmma_sk_64x64,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_64x128x64 = {
    .name = "wgmma_sk_64x128x64",
    .rung = "wgmma_splitk",
    .technique = "64×128 tiles, 3 CTAs per SM, K split over a cluster when the tiles do not fill the GPU; an edge tile "
                 "runs the half-width wgmma",
    CFG_SK_64x128,
    .flags = SK_FLAGS,
    .supports = supports_sk_plain,
    .launch = pl_gemm_wgmma_sk_64x128,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_16x64x64 = {
    .name = "wgmma_sk_swap_16x64x64",
    .rung = "wgmma_splitk",
    .technique = "small M, A/B swapped (Dᵀ = B·Aᵀ: N fills wgmma's 64 rows, M ≤ 16 its N), K split over a cluster, "
                 "fixed-order fix-up through DSMEM",
    CFG_SK_SWAP16,
    .flags = SK_SWAP_FLAGS,
    .supports = supports_sk_swap16,
    .launch = pl_gemm_wgmma_sk_swap16,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_32x64x64 = {
    .name = "wgmma_sk_swap_32x64x64",
    .rung = "wgmma_splitk",
    .technique = "the swapped split-K kernel for M ≤ 32 (wgmma m64n32)",
    CFG_SK_SWAP32,
    .flags = SK_SWAP_FLAGS,
    .supports = supports_sk_swap32,
    .launch = pl_gemm_wgmma_sk_swap32,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_64x64x64 = {
    .name = "wgmma_sk_swap_64x64x64",
    .rung = "wgmma_splitk",
    .technique = "the swapped split-K kernel for M ≤ 64 (wgmma m64n64)",
    CFG_SK_SWAP64,
    .flags = SK_SWAP_FLAGS,
    .supports = supports_sk_swap64,
    .launch = pl_gemm_wgmma_sk_swap64,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_128x64x64 = {
    .name = "wgmma_sk_swap_128x64x64",
    .rung = "wgmma_splitk",
    .technique = "the swapped split-K kernel for M ≤ 128 (wgmma m64n128)",
    CFG_SK_SWAP128,
    .flags = SK_SWAP_FLAGS,
    .supports = supports_sk_swap128,
    .launch = pl_gemm_wgmma_sk_swap128,
};

/* ---- the split sized for one CTA per SM (up to 16: non-portable clusters) ---- */

const pl_gemm_kernel pl_gemm_row_wgmma_sk_64x64x64_w1 = {
    .name = "wgmma_sk_64x64x64_w1",
    .rung = "wgmma_splitk",
    .technique = "the 64×64 split-K kernel, its split sized for one CTA per SM (up to 16)",
    SK_TILE(64, 64, PL_SK_STAGES(64)),
    .needs = PL_GEMM_NEEDS_CLUSTER,
    .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_W1,
    .supports = supports_sk_plain,
    .launch = pl_gemm_wgmma_sk_64x64_w1,
    .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(64), PL_SK_CTAS_PER_SM),
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_64x128x64_w1 = {
    .name = "wgmma_sk_64x128x64_w1",
    .rung = "wgmma_splitk",
    .technique = "the 64×128 split-K kernel, its split sized for one CTA per SM",
    SK_TILE(64, 128, PL_SK_STAGES(128)),
    .needs = PL_GEMM_NEEDS_CLUSTER,
    .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_W1,
    .supports = supports_sk_plain,
    .launch = pl_gemm_wgmma_sk_64x128_w1,
    .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(128), PL_SK_CTAS_PER_SM),
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_32x64x64_w1 = {
    .name = "wgmma_sk_swap_32x64x64_w1",
    .rung = "wgmma_splitk",
    .technique = "the swapped split-K kernel for M ≤ 32, its split sized for one CTA per SM",
    SK_TILE(32, 64, PL_SK_STAGES(32)),
    .needs = PL_GEMM_NEEDS_CLUSTER,
    .flags = SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_W1,
    .supports = supports_sk_swap32,
    .launch = pl_gemm_wgmma_sk_swap32_w1,
    .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(32), PL_SK_CTAS_PER_SM),
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_64x64x64_w1 = {
    .name = "wgmma_sk_swap_64x64x64_w1",
    .rung = "wgmma_splitk",
    .technique = "the swapped split-K kernel for M ≤ 64, its split sized for one CTA per SM",
    SK_TILE(64, 64, PL_SK_STAGES(64)),
    .needs = PL_GEMM_NEEDS_CLUSTER,
    .flags = SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_W1,
    .supports = supports_sk_swap64,
    .launch = pl_gemm_wgmma_sk_swap64_w1,
    .model = PL_GEMM_MODEL_RESIDENT(SK_EFF(64), PL_SK_CTAS_PER_SM),
};

/* ---- one CTA per SM with every byte of shared memory a stage (9 to 16 stages), split for one wave of clusters ---- */

const pl_gemm_kernel pl_gemm_row_wgmma_sk_64x64x64_deep = {
    .name = "wgmma_sk_64x64x64_deep",
    .rung = "wgmma_splitk",
    .technique = "the 64×64 split-K kernel with one CTA per SM and a 14-stage ring, split for one wave of whole "
                 "clusters",
    CFG_SK_64x64_DEEP,
    .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP,
    .supports = supports_sk_plain,
    .launch = pl_gemm_wgmma_sk_64x64_deep,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_64x128x64_deep = {
    .name = "wgmma_sk_64x128x64_deep",
    .rung = "wgmma_splitk",
    .technique = "the 64×128 split-K kernel with one CTA per SM and a 9-stage ring, split for one wave of whole "
                 "clusters",
    CFG_SK_64x128_DEEP,
    .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP,
    .supports = supports_sk_plain,
    .launch = pl_gemm_wgmma_sk_64x128_deep,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_16x64x64_deep = {
    .name = "wgmma_sk_swap_16x64x64_deep",
    .rung = "wgmma_splitk",
    .technique = "the swapped split-K kernel for M ≤ 16 with one CTA per SM and a 16-stage ring, split for one wave "
                 "of whole clusters (unsplit when N/64 tiles fill the SMs)",
    CFG_SK_SWAP16_DEEP,
    .flags = SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP,
    .supports = supports_sk_swap16,
    .launch = pl_gemm_wgmma_sk_swap16_deep,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_32x64x64_deep = {
    .name = "wgmma_sk_swap_32x64x64_deep",
    .rung = "wgmma_splitk",
    .technique = "the swapped split-K kernel for M ≤ 32 with one CTA per SM and a 16-stage ring, split for one wave "
                 "of whole clusters",
    CFG_SK_SWAP32_DEEP,
    .flags = SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP,
    .supports = supports_sk_swap32,
    .launch = pl_gemm_wgmma_sk_swap32_deep,
};

/* ---- the cooperative kernels' 128-row tiles (two consumer warpgroups, one CTA an SM, every byte of shared memory
 * a stage), the split chosen by waves: few tiles over a long K, last waves ---- */

const pl_gemm_kernel pl_gemm_row_wgmma_sk_128x128x64 = {
    .name = "wgmma_sk_128x128x64",
    .rung = "wgmma_splitk",
    .technique = "128×128 tiles, two consumer warpgroups, one CTA per SM with 7 stages, K split over a cluster (up to "
                 "8) to fill the waves, fixed-order fix-up through DSMEM",
    CFG_SK_128x128,
    .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_WAVES,
    .supports = supports_sk_plain,
    .launch = pl_gemm_wgmma_sk_128x128,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_128x256x64 = {
    .name = "wgmma_sk_128x256x64",
    .rung = "wgmma_splitk",
    .technique = "128×256 tiles (wgmma m64n256), two consumer warpgroups, one CTA per SM with 4 stages, K split by "
                 "waves",
    SK2_TILE(128, 256, PL_SK_RING_STAGES(2 * PL_SK_ROWS, 256)),
    .needs = PL_GEMM_NEEDS_CLUSTER,
    .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_WAVES,
    .supports = supports_sk_plain,
    .launch = pl_gemm_wgmma_sk_128x256,
    .model = PL_GEMM_MODEL_RESIDENT(0.83, 1),
};

/* ---- swapped with two consumers, 200 tokens: a tile fitted as cuBLAS fits it on the H200's two lowest shapes ---- */

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_200x128x64 = {
    .name = "wgmma_sk_swap_200x128x64",
    .rung = "wgmma_splitk",
    .technique = "swapped (Dᵀ = B·Aᵀ) with two consumer warpgroups: 128 rows of N × 200 tokens (wgmma m64n200, no "
                 "padded row at M = 200), 5 stages, one CTA per SM, K split by waves",
    SK2_TILE(200, 128, PL_SK_RING_STAGES(2 * PL_SK_ROWS, 200)),
    .needs = PL_GEMM_NEEDS_CLUSTER,
    .flags = SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_WAVES,
    .supports = supports_sk_swap200,
    .launch = pl_gemm_wgmma_sk_swap200,
    .model = PL_GEMM_MODEL_RESIDENT(0.81, 1),
};

/* ---- B K×N: twins of the rows above that read B N-major (wgmma_sk_sm90a.cu's _kn launchers: the same stages,
 * splits and fix-up, B in 64-column or 64-row TMA boxes). The model gives them their N×K twins' figures: predicted,
 * not yet run on a GPU. ---- */

const pl_gemm_kernel pl_gemm_row_wgmma_sk_64x64x64_kn = {
    .name = "wgmma_sk_64x64x64_kn",
    .rung = "wgmma_splitk",
    .technique =
        "the 64×64 split-K kernel reading B K×N (one 64-column box a stage; an edge tile runs the whole width)",
    CFG_SK_64x64,
    .flags = SK_FLAGS | SK_KN,
    .supports = supports_sk_kn_plain,
    .launch = pl_gemm_wgmma_sk_64x64_kn,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_64x128x64_kn = {
    .name = "wgmma_sk_64x128x64_kn",
    .rung = "wgmma_splitk",
    .technique = "the 64×128 split-K kernel reading B K×N (two 64-column boxes a stage, wgmma imm-trans-b 1)",
    CFG_SK_64x128,
    .flags = SK_FLAGS | SK_KN,
    .supports = supports_sk_kn_plain,
    .launch = pl_gemm_wgmma_sk_64x128_kn,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_16x64x64_kn = {
    .name = "wgmma_sk_swap_16x64x64_kn",
    .rung = "wgmma_splitk",
    .technique =
        "the swapped split-K kernel for M ≤ 16 reading B K×N: B, wgmma's A, in 64-row boxes with imm-trans-a 1",
    CFG_SK_SWAP16,
    .flags = SK_SWAP_FLAGS | SK_KN,
    .supports = supports_sk_kn_swap16,
    .launch = pl_gemm_wgmma_sk_swap16_kn,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_32x64x64_kn = {
    .name = "wgmma_sk_swap_32x64x64_kn",
    .rung = "wgmma_splitk",
    .technique = "the swapped split-K kernel for M ≤ 32 reading B K×N",
    CFG_SK_SWAP32,
    .flags = SK_SWAP_FLAGS | SK_KN,
    .supports = supports_sk_kn_swap32,
    .launch = pl_gemm_wgmma_sk_swap32_kn,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_64x64x64_kn = {
    .name = "wgmma_sk_swap_64x64x64_kn",
    .rung = "wgmma_splitk",
    .technique = "the swapped split-K kernel for M ≤ 64 reading B K×N",
    CFG_SK_SWAP64,
    .flags = SK_SWAP_FLAGS | SK_KN,
    .supports = supports_sk_kn_swap64,
    .launch = pl_gemm_wgmma_sk_swap64_kn,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_128x64x64_kn = {
    .name = "wgmma_sk_swap_128x64x64_kn",
    .rung = "wgmma_splitk",
    .technique = "the swapped split-K kernel for M ≤ 128 reading B K×N",
    CFG_SK_SWAP128,
    .flags = SK_SWAP_FLAGS | SK_KN,
    .supports = supports_sk_kn_swap128,
    .launch = pl_gemm_wgmma_sk_swap128_kn,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_64x64x64_deep_kn = {
    .name = "wgmma_sk_64x64x64_deep_kn",
    .rung = "wgmma_splitk",
    .technique = "the deep-ring 64×64 split-K kernel (one CTA per SM, 14 stages) reading B K×N",
    CFG_SK_64x64_DEEP,
    .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP | SK_KN,
    .supports = supports_sk_kn_plain,
    .launch = pl_gemm_wgmma_sk_64x64_deep_kn,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_64x128x64_deep_kn = {
    .name = "wgmma_sk_64x128x64_deep_kn",
    .rung = "wgmma_splitk",
    .technique = "the deep-ring 64×128 split-K kernel (one CTA per SM, 9 stages) reading B K×N",
    CFG_SK_64x128_DEEP,
    .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP | SK_KN,
    .supports = supports_sk_kn_plain,
    .launch = pl_gemm_wgmma_sk_64x128_deep_kn,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_16x64x64_deep_kn = {
    .name = "wgmma_sk_swap_16x64x64_deep_kn",
    .rung = "wgmma_splitk",
    .technique = "the deep-ring swapped split-K kernel for M ≤ 16 (16 stages) reading B K×N",
    CFG_SK_SWAP16_DEEP,
    .flags = SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP | SK_KN,
    .supports = supports_sk_kn_swap16,
    .launch = pl_gemm_wgmma_sk_swap16_deep_kn,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_swap_32x64x64_deep_kn = {
    .name = "wgmma_sk_swap_32x64x64_deep_kn",
    .rung = "wgmma_splitk",
    .technique = "the deep-ring swapped split-K kernel for M ≤ 32 (16 stages) reading B K×N",
    CFG_SK_SWAP32_DEEP,
    .flags = SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP | SK_KN,
    .supports = supports_sk_kn_swap32,
    .launch = pl_gemm_wgmma_sk_swap32_deep_kn,
};

const pl_gemm_kernel pl_gemm_row_wgmma_sk_128x128x64_kn = {
    .name = "wgmma_sk_128x128x64_kn",
    .rung = "wgmma_splitk",
    .technique = "the two-warpgroup 128×128 split-K kernel (one CTA per SM, split by waves) reading B K×N",
    CFG_SK_128x128,
    .flags = SK_FLAGS | PL_GEMM_KERNEL_SPLIT_WAVES | SK_KN,
    .supports = supports_sk_kn_plain,
    .launch = pl_gemm_wgmma_sk_128x128_kn,
};
