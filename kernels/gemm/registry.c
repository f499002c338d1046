/* The registry of native GEMM kernels: what each is, what it needs, which problems it takes. The labs and the
 * selector (perflab gemm) both enumerate this table, so a kernel added here is verified and timed by both. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/fp8.h"
#include "gemm/gemm.h"
#include "gemm/splitk.h"

static const char *const layout_names[] = {"nk", "kn"};

const char *pl_gemm_layout_name(pl_gemm_b_layout l)
{
    return (unsigned)l < 2 ? layout_names[l] : "unknown";
}

int pl_gemm_layout_from_name(const char *name)
{
    for (int i = 0; i < 2; i++)
        if (strcmp(name, layout_names[i]) == 0)
            return i;
    return -1;
}

int pl_gemm_problem_valid(const pl_gemm_problem *p, char *why, size_t whylen)
{
    if (p->m < 1 || p->n < 1 || p->k < 1) {
        snprintf(why, whylen, "M, N and K must be at least 1 (got %d×%d×%d)", p->m, p->n, p->k);
        return 0;
    }
    if (!p->a || !p->b || !p->d) {
        snprintf(why, whylen, "A, B and D must be device pointers");
        return 0;
    }
    if ((size_t)p->m * (size_t)p->n > (size_t)UINT_MAX) {
        snprintf(why, whylen, "M·N = %zu exceeds 2^32 elements", (size_t)p->m * (size_t)p->n);
        return 0;
    }
    return 1;
}

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

/* TMA reads rows whose pitch is a multiple of 16 bytes from 16-byte aligned bases: A's rows (K) for every TMA
 * kernel; `layout` is the one B layout the kernel reads. */
static int supports_tma_layout(const pl_gemm_problem *p, pl_gemm_b_layout layout, char *why, size_t whylen)
{
    if (!pl_gemm_problem_valid(p, why, whylen))
        return 0;
    if (p->b_layout != layout) {
        snprintf(why, whylen,
                 layout == PL_GEMM_B_NK
                     ? "takes B N×K (K-major) only; B K×N goes to mma_sync (opted in: the *_kn kernels)"
                     : "takes B K×N (N-major) only; B N×K goes to its N×K twin");
        return 0;
    }
    if (layout == PL_GEMM_B_KN && p->n % 8 != 0) {
        snprintf(why, whylen,
                 "needs N %% 8 == 0 (TMA rows of B K×N are 16-byte multiples); N = %d falls back to mma_sync", p->n);
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

/* The sm_90a kernels that read B N×K (K-major for both operands, as wgmma takes them without transposition). */
static int supports_tma(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_tma_layout(p, PL_GEMM_B_NK, why, whylen);
}

/* The warp-specialized kernels' B K×N variants (N-major B: wgmma TRANS_B = 1): K % 8 and N % 8 == 0. */
static int supports_tma_kn(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_tma_layout(p, PL_GEMM_B_KN, why, whylen);
}

/* The split-K kernels (gemm/splitk.h): the TMA conditions, and D 4-byte aligned (bf16 pairs leave in one store).
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
 * tile row doubles the CTAs of a launch that is not persistent (H100, session 14: M = 256 and 384 ran at 0.37 and
 * 0.73 of the best kernel) */
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

/* The decode GEMVs (gemv_mma.cu for B N×K, gemv_kn_sm90a.cu for B K×N): the TMA kernels' conditions on the
 * operands (16-byte loads of B's rows and of A's) and at most `tokens` tokens. */
static int supports_gemv_layout(const pl_gemm_problem *p, int tokens, pl_gemm_b_layout layout, char *why,
                                size_t whylen)
{
    if (!supports_tma_layout(p, layout, why, whylen))
        return 0;
    if (p->m > tokens) {
        snprintf(why, whylen, "a decode kernel: takes M <= %d; M = %d", tokens, p->m);
        return 0;
    }
    return 1;
}

static int supports_gemv8(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_gemv_layout(p, 8, PL_GEMM_B_NK, why, whylen);
}

static int supports_gemv16(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_gemv_layout(p, 16, PL_GEMM_B_NK, why, whylen);
}

static int supports_gemv32(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_gemv_layout(p, 32, PL_GEMM_B_NK, why, whylen);
}

static int supports_gemv_kn16(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_gemv_layout(p, 16, PL_GEMM_B_KN, why, whylen);
}

static int supports_gemv_kn32(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_gemv_layout(p, 32, PL_GEMM_B_KN, why, whylen);
}

#define SK_FLAGS      PL_GEMM_KERNEL_SPLIT_K
#define SK_SWAP_FLAGS (SK_FLAGS | PL_GEMM_KERNEL_SWAP_AB)
#define KN_FLAGS      (PL_GEMM_KERNEL_UNVALIDATED | PL_GEMM_KERNEL_B_KN)

/* Every validated kernel first, then the unvalidated ones (PL_GEMM_KERNEL_UNVALIDATED: the B K×N kernels), which the
 * enumeration reaches only under PERFLAB_GEMM_UNVALIDATED=1. Where the heuristic's model ties, the earlier entry
 * wins: the plain split-K tiles come before the swapped ones (their stores run along D's rows). */
static const pl_gemm_kernel kernels[] = {
    {"naive", "naive", "one thread per output, K fp32 FMAs from global memory", 16, 16, 1, 1, 1, 256, PL_GEMM_NEEDS_ANY,
     PL_GEMM_KERNEL_TEACHING, supports_naive, pl_gemm_naive},
    {"smem_tiled_64x64x16", "smem_tiled", "64×64 tiles staged in shared memory, 4×4 outputs per thread in registers",
     64, 64, 16, 1, 1, 256, PL_GEMM_NEEDS_ANY, PL_GEMM_KERNEL_TEACHING, supports_any, pl_gemm_smem_tiled},
    {"mma_sync_128x128x32_s4", "mma_sync",
     "mma.sync m16n8k16 tensor cores, ldmatrix from swizzled shared memory, 4-stage cp.async pipeline", 128, 128, 32, 4,
     1, 256, PL_GEMM_NEEDS_MMA, 0, supports_any, pl_gemm_mma_sync},
    {"wgmma_tma_128x128x64_s3", "wgmma_tma",
     "wgmma m64n128k16 from 128B-swizzled shared memory filled by TMA on mbarriers, 3 stages, 2 CTAs/SM", 128, 128, 64,
     3, 1, 256, PL_GEMM_NEEDS_WGMMA, 0, supports_tma, pl_gemm_wgmma_tma_128x128},
    {"wgmma_ws_128x128x64_s6", "wgmma_ws",
     "persistent warp-specialized, cooperative: TMA producer warpgroup (setmaxnreg 56), 2 wgmma consumers (224) "
     "sharing each tile, 6-stage mbarrier ring, TMA-store epilogue",
     128, 128, 64, 6, 1, 384, PL_GEMM_NEEDS_WGMMA, 0, supports_tma, pl_gemm_wgmma_ws_128x128},
    {"wgmma_ws_128x256x64_s4", "wgmma_ws",
     "persistent warp-specialized, cooperative: 2 wgmma m64n256 consumers sharing each 128×256 tile, 4 stages", 128,
     256, 64, 4, 1, 384, PL_GEMM_NEEDS_WGMMA, 0, supports_tma, pl_gemm_wgmma_ws_128x256},
    {"wgmma_ws_128x256x64_s3", "wgmma_ws",
     "cooperative 128×256 with a whole tile of epilogue buffers (3 stages): fused, the consumers hand the product to "
     "the epilogue warps and never wait for them",
     128, 256, 64, 3, 1, 384, PL_GEMM_NEEDS_WGMMA, 0, supports_tma, pl_gemm_wgmma_ws_128x256_s3},
    {"wgmma_pp_128x128x64_s5", "wgmma_ws",
     "persistent warp-specialized, ping-pong: each consumer owns whole 128×128 tiles and stores one while the other "
     "multiplies, 5 stages",
     128, 128, 64, 5, 1, 384, PL_GEMM_NEEDS_WGMMA, 0, supports_tma, pl_gemm_wgmma_pp_128x128},
    {"wgmma_ws_128x128x64_s6_c2", "wgmma_ws_cluster",
     "cooperative wgmma_ws in 2-CTA clusters: B panel TMA-multicast to both CTAs, stages released through DSMEM", 128,
     128, 64, 6, 2, 384, PL_GEMM_NEEDS_CLUSTER, 0, supports_tma, pl_gemm_wgmma_ws_128x128_c2},
    {"wgmma_ws_128x256x64_s4_c2", "wgmma_ws_cluster",
     "cooperative 128×256 wgmma_ws in 2-CTA clusters: B panel TMA-multicast, stages released through DSMEM; a last "
     "round at most half full cut into 128×128 halves, one tile a cluster",
     128, 256, 64, 4, 2, 384, PL_GEMM_NEEDS_CLUSTER, 0, supports_tma, pl_gemm_wgmma_ws_128x256_c2},
    {"wgmma_pp_128x128x64_s5_c2", "wgmma_ws_cluster",
     "ping-pong wgmma_ws in 2-CTA clusters: B panel TMA-multicast to both CTAs, stages released through DSMEM", 128,
     128, 64, 5, 2, 384, PL_GEMM_NEEDS_CLUSTER, 0, supports_tma, pl_gemm_wgmma_pp_128x128_c2},
    /* ---- issue 15 (validated on an H200): split-K over a cluster, fixed-order fix-up through DSMEM ---- */
    {"wgmma_sk_64x64x64", "wgmma_splitk",
     "narrow N: 64×64 tiles, K split over a cluster when the tiles do not fill the GPU, fixed-order fix-up", 64, 64, 64,
     PL_SK_STAGES(64), 0, PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER, SK_FLAGS, supports_sk_plain, pl_gemm_wgmma_sk_64x64},
    {"wgmma_sk_64x128x64", "wgmma_splitk",
     "64×128 tiles, 3 CTAs per SM, K split over a cluster when the tiles do not fill the GPU; an edge tile runs the "
     "half-width wgmma",
     64, 128, 64, PL_SK_STAGES(128), 0, PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER, SK_FLAGS, supports_sk_plain,
     pl_gemm_wgmma_sk_64x128},
    {"wgmma_sk_swap_16x64x64", "wgmma_splitk",
     "small M, A/B swapped (Dᵀ = B·Aᵀ: N fills wgmma's 64 rows, M ≤ 16 its N), K split over a cluster, fixed-order "
     "fix-up through DSMEM",
     16, 64, 64, PL_SK_STAGES(16), 0, PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER, SK_SWAP_FLAGS, supports_sk_swap16,
     pl_gemm_wgmma_sk_swap16},
    {"wgmma_sk_swap_32x64x64", "wgmma_splitk", "the swapped split-K kernel for M ≤ 32 (wgmma m64n32)", 32, 64, 64,
     PL_SK_STAGES(32), 0, PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER, SK_SWAP_FLAGS, supports_sk_swap32,
     pl_gemm_wgmma_sk_swap32},
    {"wgmma_sk_swap_64x64x64", "wgmma_splitk", "the swapped split-K kernel for M ≤ 64 (wgmma m64n64)", 64, 64, 64,
     PL_SK_STAGES(64), 0, PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER, SK_SWAP_FLAGS, supports_sk_swap64,
     pl_gemm_wgmma_sk_swap64},
    {"wgmma_sk_swap_128x64x64", "wgmma_splitk", "the swapped split-K kernel for M ≤ 128 (wgmma m64n128)", 128, 64, 64,
     PL_SK_STAGES(128), 0, PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER, SK_SWAP_FLAGS, supports_sk_swap128,
     pl_gemm_wgmma_sk_swap128},
    /* the split sized for one CTA per SM (up to 16: non-portable clusters) */
    {"wgmma_sk_64x64x64_w1", "wgmma_splitk", "the 64×64 split-K kernel, its split sized for one CTA per SM (up to 16)",
     64, 64, 64, PL_SK_STAGES(64), 0, PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER, SK_FLAGS | PL_GEMM_KERNEL_SPLIT_W1,
     supports_sk_plain, pl_gemm_wgmma_sk_64x64_w1},
    {"wgmma_sk_64x128x64_w1", "wgmma_splitk", "the 64×128 split-K kernel, its split sized for one CTA per SM", 64, 128,
     64, PL_SK_STAGES(128), 0, PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER, SK_FLAGS | PL_GEMM_KERNEL_SPLIT_W1,
     supports_sk_plain, pl_gemm_wgmma_sk_64x128_w1},
    {"wgmma_sk_swap_32x64x64_w1", "wgmma_splitk",
     "the swapped split-K kernel for M ≤ 32, its split sized for one CTA per SM", 32, 64, 64, PL_SK_STAGES(32), 0,
     PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER, SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_W1, supports_sk_swap32,
     pl_gemm_wgmma_sk_swap32_w1},
    {"wgmma_sk_swap_64x64x64_w1", "wgmma_splitk",
     "the swapped split-K kernel for M ≤ 64, its split sized for one CTA per SM", 64, 64, 64, PL_SK_STAGES(64), 0,
     PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER, SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_W1, supports_sk_swap64,
     pl_gemm_wgmma_sk_swap64_w1},
    /* one CTA per SM with every byte of shared memory a stage (14 and 9 stages), split for one wave of clusters */
    {"wgmma_sk_64x64x64_deep", "wgmma_splitk",
     "the 64×64 split-K kernel with one CTA per SM and a 14-stage ring, split for one wave of whole clusters", 64, 64,
     64, PL_SK_RING_STAGES(PL_SK_ROWS, 64), 0, PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER,
     SK_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP, supports_sk_plain, pl_gemm_wgmma_sk_64x64_deep},
    {"wgmma_sk_64x128x64_deep", "wgmma_splitk",
     "the 64×128 split-K kernel with one CTA per SM and a 9-stage ring, split for one wave of whole clusters", 64, 128,
     64, PL_SK_RING_STAGES(PL_SK_ROWS, 128), 0, PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER,
     SK_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP, supports_sk_plain, pl_gemm_wgmma_sk_64x128_deep},
    /* ---- issue 15: split-K with the cooperative kernels' 128-row tiles (two consumer warpgroups, one CTA an SM,
     * every byte of shared memory a stage), the split chosen by waves: few tiles over a long K, last waves ---- */
    {"wgmma_sk_128x128x64", "wgmma_splitk",
     "128×128 tiles, two consumer warpgroups, one CTA per SM with 7 stages, K split over a cluster (up to 8) to "
     "fill the waves, fixed-order fix-up through DSMEM",
     128, 128, 64, PL_SK_RING_STAGES(2 * PL_SK_ROWS, 128), 0, 288, PL_GEMM_NEEDS_CLUSTER,
     SK_FLAGS | PL_GEMM_KERNEL_SPLIT_WAVES, supports_sk_plain, pl_gemm_wgmma_sk_128x128},
    {"wgmma_sk_128x256x64", "wgmma_splitk",
     "128×256 tiles (wgmma m64n256), two consumer warpgroups, one CTA per SM with 4 stages, K split by waves", 128, 256,
     64, PL_SK_RING_STAGES(2 * PL_SK_ROWS, 256), 0, 288, PL_GEMM_NEEDS_CLUSTER, SK_FLAGS | PL_GEMM_KERNEL_SPLIT_WAVES,
     supports_sk_plain, pl_gemm_wgmma_sk_128x256},
    /* ---- issue 15: 128×192 tiles for tile counts that 128×256 quantizes badly ---- */
    {"wgmma_ws_128x192x64_s4", "wgmma_ws",
     "the cooperative persistent kernel with 128×192 tiles (wgmma m64n192): 3/4 of the 128×256 tile's work, for tile "
     "counts the wider tile leaves a wave a quarter full",
     128, 192, 64, 4, 1, 384, PL_GEMM_NEEDS_WGMMA, 0, supports_tma, pl_gemm_wgmma_ws_128x192},
    {"wgmma_ws_128x192x64_s4_c2", "wgmma_ws_cluster",
     "cooperative 128×192 in 2-CTA clusters: B panel TMA-multicast to both CTAs, stages released through DSMEM", 128,
     192, 64, 4, 2, 384, PL_GEMM_NEEDS_CLUSTER, 0, supports_tma, pl_gemm_wgmma_ws_128x192_c2},
    /* ---- issue 15: tiles fitted to the shape, as cuBLAS fits them ---- */
    {"wgmma_ws_192x176x64_s3_c2", "wgmma_ws_cluster",
     "three consumer warpgroups on 192×176 tiles (wgmma m64n176, the last 48 columns stored through a dense TMA map) "
     "in 2-CTA clusters sharing B, 3 stages and a whole tile of epilogue buffers: 4104² in four whole rounds",
     192, 176, 64, 3, 2, 512, PL_GEMM_NEEDS_CLUSTER, 0, supports_tma, pl_gemm_wgmma_ws_192x176_c2},
    {"wgmma_ws_128x176x64_s5", "wgmma_ws",
     "the cooperative kernel with 128×176 tiles (wgmma m64n176, 5 stages): tile counts between 128×128 and 128×192",
     128, 176, 64, 5, 1, 384, PL_GEMM_NEEDS_WGMMA, 0, supports_tma, pl_gemm_wgmma_ws_128x176},
    {"wgmma_ws_128x224x64_s4_c4", "wgmma_ws_cluster",
     "128×224 tiles in 4-CTA clusters: four tile rows share each B panel, a quarter loaded and multicast by each CTA",
     128, 224, 64, 4, 4, 384, PL_GEMM_NEEDS_CLUSTER, 0, supports_tma, pl_gemm_wgmma_ws_128x224_c4},
    /* ---- issue 15: decode as a streaming GEMV on mma.sync ---- */
    {"gemv_mma_t8", "gemv_mma",
     "decode M <= 8: mma.sync fed from 16-byte global loads of B (no shared-memory stages), 16 rows of N per CTA, "
     "K over 8 warps added in warp order",
     8, 16, 64, 1, 1, 256, PL_GEMM_NEEDS_MMA, PL_GEMM_KERNEL_SMALL_M, supports_gemv8, pl_gemm_gemv_mma_t8},
    {"gemv_mma_t16", "gemv_mma", "the streaming GEMV for M <= 16 (two n8 token tiles share each B fragment)", 16, 16,
     64, 1, 1, 256, PL_GEMM_NEEDS_MMA, PL_GEMM_KERNEL_SMALL_M, supports_gemv16, pl_gemm_gemv_mma_t16},
    {"gemv_mma_t32", "gemv_mma", "the streaming GEMV for M <= 32 (four n8 token tiles)", 32, 16, 64, 1, 1, 256,
     PL_GEMM_NEEDS_MMA, PL_GEMM_KERNEL_SMALL_M, supports_gemv32, pl_gemm_gemv_mma_t32},
    /* ---- issue 15: 128×224 tiles without clusters of four (M ≈ 200: two tile rows over N = 224·k fill 128 SMs in
     * one wave; written in session 13, verified in session 14) ---- */
    {"wgmma_ws_128x224x64_s4", "wgmma_ws",
     "the cooperative kernel with 128×224 tiles (wgmma m64n224, the last 32 columns through a dense TMA map), 4 stages",
     128, 224, 64, 4, 1, 384, PL_GEMM_NEEDS_WGMMA, 0, supports_tma, pl_gemm_wgmma_ws_128x224},
    {"wgmma_ws_128x224x64_s4_c2", "wgmma_ws_cluster",
     "128×224 tiles in 2-CTA clusters: two tile rows share each B panel, half loaded and multicast by each CTA", 128,
     224, 64, 4, 2, 384, PL_GEMM_NEEDS_CLUSTER, 0, supports_tma, pl_gemm_wgmma_ws_128x224_c2},
    /* ---- issue 15: tiles fitted as cuBLAS fits them on the H200's two lowest shapes (session 14) ---- */
    {"wgmma_sk_swap_200x128x64", "wgmma_splitk",
     "swapped (Dᵀ = B·Aᵀ) with two consumer warpgroups: 128 rows of N × 200 tokens (wgmma m64n200, no padded "
     "row at M = 200), 5 stages, one CTA per SM, K split by waves",
     200, 128, 64, PL_SK_RING_STAGES(2 * PL_SK_ROWS, 200), 0, 288, PL_GEMM_NEEDS_CLUSTER,
     SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_WAVES, supports_sk_swap200, pl_gemm_wgmma_sk_swap200},
    {"wgmma_sk_swap_16x64x64_deep", "wgmma_splitk",
     "the swapped split-K kernel for M ≤ 16 with one CTA per SM and a 16-stage ring, split for one wave of whole "
     "clusters (unsplit when N/64 tiles fill the SMs)",
     16, 64, 64, PL_SK_RING_STAGES(PL_SK_ROWS, 16), 0, PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER,
     SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP, supports_sk_swap16, pl_gemm_wgmma_sk_swap16_deep},
    {"wgmma_sk_swap_32x64x64_deep", "wgmma_splitk",
     "the swapped split-K kernel for M ≤ 32 with one CTA per SM and a 16-stage ring, split for one wave of whole "
     "clusters",
     32, 64, 64, PL_SK_RING_STAGES(PL_SK_ROWS, 32), 0, PL_SK_THREADS, PL_GEMM_NEEDS_CLUSTER,
     SK_SWAP_FLAGS | PL_GEMM_KERNEL_SPLIT_DEEP, supports_sk_swap32, pl_gemm_wgmma_sk_swap32_deep},
    /* ---- unvalidated (PERFLAB_GEMM_UNVALIDATED=1 until a GPU run verifies them): B K×N on wgmma, the
     * warp-specialized kernels above reading B N-major (TRANS_B = 1) in 64-column TMA boxes ---- */
    {"wgmma_ws_128x128x64_s6_kn", "wgmma_ws",
     "wgmma_ws_128x128x64_s6 with B K×N: N-major B (wgmma TRANS_B = 1) from 64-column × 64-K TMA boxes, "
     "128B-swizzled",
     128, 128, 64, 6, 1, 384, PL_GEMM_NEEDS_WGMMA, KN_FLAGS, supports_tma_kn, pl_gemm_wgmma_ws_128x128_kn},
    {"wgmma_ws_128x256x64_s4_kn", "wgmma_ws", "wgmma_ws_128x256x64_s4 with B K×N (N-major B, TRANS_B = 1)", 128, 256,
     64, 4, 1, 384, PL_GEMM_NEEDS_WGMMA, KN_FLAGS, supports_tma_kn, pl_gemm_wgmma_ws_128x256_kn},
    {"wgmma_ws_128x256x64_s3_kn", "wgmma_ws",
     "wgmma_ws_128x256x64_s3 (epilogue warps take the product over) with B K×N (N-major B, TRANS_B = 1)", 128, 256, 64,
     3, 1, 384, PL_GEMM_NEEDS_WGMMA, KN_FLAGS, supports_tma_kn, pl_gemm_wgmma_ws_128x256_s3_kn},
    {"wgmma_pp_128x128x64_s5_kn", "wgmma_ws",
     "the ping-pong wgmma_pp_128x128x64_s5 with B K×N (N-major B, TRANS_B = 1)", 128, 128, 64, 5, 1, 384,
     PL_GEMM_NEEDS_WGMMA, KN_FLAGS, supports_tma_kn, pl_gemm_wgmma_pp_128x128_kn},
    {"wgmma_ws_128x192x64_s4_kn", "wgmma_ws", "wgmma_ws_128x192x64_s4 with B K×N (N-major B, three 64-column boxes)",
     128, 192, 64, 4, 1, 384, PL_GEMM_NEEDS_WGMMA, KN_FLAGS, supports_tma_kn, pl_gemm_wgmma_ws_128x192_kn},
    {"wgmma_ws_128x128x64_s6_c2_kn", "wgmma_ws_cluster",
     "wgmma_ws_128x128x64_s6_c2 with B K×N: each CTA multicasts one 64-column box of the shared B panel", 128, 128, 64,
     6, 2, 384, PL_GEMM_NEEDS_CLUSTER, KN_FLAGS, supports_tma_kn, pl_gemm_wgmma_ws_128x128_c2_kn},
    {"wgmma_ws_128x256x64_s4_c2_kn", "wgmma_ws_cluster",
     "wgmma_ws_128x256x64_s4_c2 with B K×N: each CTA multicasts two 64-column boxes of the shared B panel", 128, 256,
     64, 4, 2, 384, PL_GEMM_NEEDS_CLUSTER, KN_FLAGS, supports_tma_kn, pl_gemm_wgmma_ws_128x256_c2_kn},
    {"wgmma_pp_128x128x64_s5_c2_kn", "wgmma_ws_cluster",
     "the ping-pong kernel in 2-CTA clusters with B K×N: each CTA multicasts one 64-column box", 128, 128, 64, 5, 2,
     384, PL_GEMM_NEEDS_CLUSTER, KN_FLAGS, supports_tma_kn, pl_gemm_wgmma_pp_128x128_c2_kn},
    {"gemv_kn_t16", "gemv_mma",
     "the streaming GEMV for B K×N and M <= 16: mma.sync fed from global memory, a byte permute pairing two rows' "
     "columns into each B fragment, K split over a cluster of 1-8 CTAs added in rank order through DSMEM",
     16, 64, 32, 1, 0, 256, PL_GEMM_NEEDS_CLUSTER, KN_FLAGS | PL_GEMM_KERNEL_SMALL_M, supports_gemv_kn16,
     pl_gemm_gemv_kn_t16},
    {"gemv_kn_t32", "gemv_mma", "the B K×N streaming GEMV for M <= 32 (two m16 token tiles share each B fragment)", 32,
     64, 32, 1, 0, 256, PL_GEMM_NEEDS_CLUSTER, KN_FLAGS | PL_GEMM_KERNEL_SMALL_M, supports_gemv_kn32,
     pl_gemm_gemv_kn_t32},
    {"gemv_kn_t16_p4", "gemv_mma",
     "gemv_kn_t16 with 256 columns a CTA, four warps side by side reading 512 contiguous bytes of each row (written "
     "after session 17's measurement of gemv_kn_t16, whose 128-byte row pieces are the suspect; not yet timed)",
     16, 256, 32, 1, 0, 256, PL_GEMM_NEEDS_CLUSTER, KN_FLAGS | PL_GEMM_KERNEL_SMALL_M, supports_gemv_kn16,
     pl_gemm_gemv_kn_t16_p4},
};
/* users keep one bit per kernel of this table (labs/gemm_lab.c: one fallback note each) */
_Static_assert(sizeof kernels / sizeof kernels[0] <= 64, "more than 64 BF16 kernels: widen the per-kernel masks");

int pl_gemm_unvalidated_enabled(void)
{
    const char *v = getenv(PL_GEMM_UNVALIDATED_ENV);
    return v && strcmp(v, "1") == 0;
}

/* The validated kernels: the table up to its first unvalidated entry. */
static size_t validated_count(void)
{
    size_t n = 0;
    while (n < sizeof kernels / sizeof kernels[0] && !(kernels[n].flags & PL_GEMM_KERNEL_UNVALIDATED))
        n++;
    return n;
}

size_t pl_gemm_kernel_count(void)
{
    return pl_gemm_unvalidated_enabled() ? sizeof kernels / sizeof kernels[0] : validated_count();
}

const pl_gemm_kernel *pl_gemm_kernel_at(size_t i)
{
    return i < pl_gemm_kernel_count() ? &kernels[i] : NULL;
}

const pl_gemm_kernel *pl_gemm_kernel_find(const char *name)
{
    const size_t n = pl_gemm_kernel_count();
    for (size_t i = 0; i < n; i++)
        if (strcmp(kernels[i].name, name) == 0)
            return &kernels[i];
    return NULL;
}

const pl_gemm_kernel *pl_gemm_kernel_fallback(void)
{
    return pl_gemm_kernel_find("mma_sync_128x128x32_s4");
}

/* ---- FP8: e4m3 A and B in the pl_gemm_problem's pointers, unit scales ---- */

static pl_gemm_fp8_problem fp8_problem_of(const pl_gemm_problem *p)
{
    pl_gemm_fp8_problem q;
    memset(&q, 0, sizeof q);
    q.m = p->m;
    q.n = p->n;
    q.k = p->k;
    q.a = (const uint8_t *)p->a;
    q.b = (const uint8_t *)p->b;
    q.d = p->d;
    q.scaling = PL_FP8_SCALING_TENSOR; /* scale pointers NULL: 1 */
    return q;
}

static int supports_fp8(const pl_gemm_problem *p, char *why, size_t whylen)
{
    if (!pl_gemm_problem_valid(p, why, whylen))
        return 0;
    if (p->b_layout != PL_GEMM_B_NK || p->epi.bias || p->epi.residual || p->epi.gelu) {
        snprintf(why, whylen, "takes B N×K (K-major: e4m3 wgmma has no transposed form) and no epilogue");
        return 0;
    }
    const pl_gemm_fp8_problem q = fp8_problem_of(p);
    return pl_gemm_fp8_supports(&q, why, whylen);
}

/* The registry's launcher of FP8 kernel `fn` (unit scales, promotion every 128 K). */
#define FP8_LAUNCHER(name, fn)                                                                                         \
    static cudaError_t name(const pl_gemm_problem *p, cudaStream_t stream)                                             \
    {                                                                                                                  \
        const pl_gemm_fp8_problem q = fp8_problem_of(p);                                                               \
        return fn(&q, stream);                                                                                         \
    }
FP8_LAUNCHER(launch_fp8, pl_gemm_fp8_ws)
FP8_LAUNCHER(launch_fp8_c2, pl_gemm_fp8_ws_c2)
FP8_LAUNCHER(launch_fp8_n128, pl_gemm_fp8_ws_n128)
FP8_LAUNCHER(launch_fp8_n128_c2, pl_gemm_fp8_ws_n128_c2)
FP8_LAUNCHER(launch_fp8_n176, pl_gemm_fp8_ws_n176)
FP8_LAUNCHER(launch_fp8_two_parts, pl_gemm_fp8_ws_two_parts)
FP8_LAUNCHER(launch_fp8_two_parts_c2, pl_gemm_fp8_ws_two_parts_c2)

static cudaError_t launch_fp8_p4(const pl_gemm_problem *p, cudaStream_t stream)
{
    pl_gemm_fp8_problem q = fp8_problem_of(p);
    q.promote = 4;
    return pl_gemm_fp8_ws(&q, stream);
}

static const pl_gemm_kernel fp8_kernels[] = {
    {"fp8_ws_128x192x128_s4", "fp8_ws",
     "persistent warp-specialized FP8: a TMA producer warpgroup, 2 consumers (setmaxnreg 232) issuing wgmma m64n192k32 "
     "e4m3 into "
     "an accumulator promoted to fp32 every 128 K, 4 stages, TMA-store epilogue",
     128, 192, 128, 4, 1, 384, PL_GEMM_FP8_NEEDS, 0, supports_fp8, launch_fp8},
    {"fp8_ws_128x192x128_s4_p4", "fp8_ws",
     "the FP8 kernel promoting to fp32 every 512 K (4 k-blocks, one wgmma group kept in flight inside) instead of 128 "
     "K",
     128, 192, 128, 4, 1, 384, PL_GEMM_FP8_NEEDS, PL_GEMM_KERNEL_LESS_ACCURATE, supports_fp8, launch_fp8_p4},
    {"fp8_ws_128x192x128_s4_c2", "fp8_ws_cluster",
     "the FP8 kernel in 2-CTA clusters: the shared B panel TMA-multicast to both CTAs, stages released through DSMEM",
     128, 192, 128, 4, 2, 384, PL_GEMM_FP8_CLUSTER_NEEDS, 0, supports_fp8, launch_fp8_c2},
    {"fp8_ws_128x128x128_s6", "fp8_ws",
     "the FP8 kernel with 128×128 tiles (wgmma m64n128k32, 6 stages): 1.5× the tiles, a fuller last wave where "
     "128×192 leaves one short (4096³)",
     128, 128, 128, 6, 1, 384, PL_GEMM_FP8_NEEDS, 0, supports_fp8, launch_fp8_n128},
    {"fp8_ws_128x176x128_s5", "fp8_ws",
     "the FP8 kernel with 128×176 tiles (wgmma m64n176k32, 5 stages, a 48-column last subtile stored through its own "
     "TMA map): fewer rounds where 192-wide tile columns leave a short last wave (4096³)",
     128, 176, 128, 5, 1, 384, PL_GEMM_FP8_NEEDS, 0, supports_fp8, launch_fp8_n176},
    {"fp8_ws_128x128x128_s6_c2", "fp8_ws_cluster", "the 128×128 FP8 kernel in 2-CTA clusters (B panel multicast)", 128,
     128, 128, 6, 2, 384, PL_GEMM_FP8_CLUSTER_NEEDS, 0, supports_fp8, launch_fp8_n128_c2},
    {"fp8_ws_128x128x128_s6_2p", "fp8_ws",
     "the 128×128 FP8 kernel with two promotion accumulators alternating by k-block: one k-block on the tensor cores "
     "while the previous one is promoted, no drain inside a tile (every 128 K)",
     128, 128, 128, 6, 1, 384, PL_GEMM_FP8_NEEDS, 0, supports_fp8, launch_fp8_two_parts},
    {"fp8_ws_128x128x128_s6_2p_c2", "fp8_ws_cluster", "the two-accumulator 128×128 FP8 kernel in 2-CTA clusters", 128,
     128, 128, 6, 2, 384, PL_GEMM_FP8_CLUSTER_NEEDS, 0, supports_fp8, launch_fp8_two_parts_c2},
};

size_t pl_gemm_fp8_kernel_count(void)
{
    return sizeof fp8_kernels / sizeof fp8_kernels[0];
}

const pl_gemm_kernel *pl_gemm_fp8_kernel_at(size_t i)
{
    return i < pl_gemm_fp8_kernel_count() ? &fp8_kernels[i] : NULL;
}
