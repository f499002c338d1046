/* The FP8 kernels' rows of the FP8 table (fp8_ws_sm90a.cu; their order in host/kernel_table.c): e4m3 A and B in the
 * pl_gemm_problem's pointers, unit scales, B N×K, D bf16, the rows `perflab gemm --dtype fp8` and gemm:fp8 enumerate.
 * gemm/fp8.h has the whole interface (tensor and block scales). */
#include <stdio.h>
#include <string.h>

#include "gemm/fp8.h"
#include "gemm/host/kernel_row.h"

pl_gemm_fp8_problem pl_gemm_fp8_problem_of(const pl_gemm_problem *p)
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

int pl_gemm_fp8_row_supports(const pl_gemm_problem *p, char *why, size_t whylen)
{
    if (!pl_gemm_problem_valid(p, why, whylen))
        return 0;
    if (p->b_layout != PL_GEMM_B_NK || p->epi.bias || p->epi.residual || p->epi.gelu) {
        snprintf(why, whylen, "takes B N×K (K-major: e4m3 wgmma has no transposed form) and no epilogue");
        return 0;
    }
    const pl_gemm_fp8_problem q = pl_gemm_fp8_problem_of(p);
    return pl_gemm_fp8_supports(&q, why, whylen);
}

PL_GEMM_FP8_ROW_LAUNCHER(launch_fp8, pl_gemm_fp8_ws)
PL_GEMM_FP8_ROW_LAUNCHER(launch_fp8_c2, pl_gemm_fp8_ws_c2)
PL_GEMM_FP8_ROW_LAUNCHER(launch_fp8_n128, pl_gemm_fp8_ws_n128)
PL_GEMM_FP8_ROW_LAUNCHER(launch_fp8_n128_c2, pl_gemm_fp8_ws_n128_c2)
PL_GEMM_FP8_ROW_LAUNCHER(launch_fp8_n176, pl_gemm_fp8_ws_n176)
PL_GEMM_FP8_ROW_LAUNCHER(launch_fp8_two_parts, pl_gemm_fp8_ws_two_parts)
PL_GEMM_FP8_ROW_LAUNCHER(launch_fp8_two_parts_c2, pl_gemm_fp8_ws_two_parts_c2)

static cudaError_t launch_fp8_p4(const pl_gemm_problem *p, cudaStream_t stream)
{
    pl_gemm_fp8_problem q = pl_gemm_fp8_problem_of(p);
    q.promote = 4;
    return pl_gemm_fp8_ws(&q, stream);
}

/* The persistent FP8 kernels' shape: 128-row tiles, 128-deep k-blocks, a producer and two consumer warpgroups, and
 * what the FP8 pick's model knows of them (pl_gemm_fp8_pick): the mainloop's efficiency against the FP8 tensor rate
 * (twice the BF16 one: 132 · 8192 FLOP/clk · 1.5 GHz = 1622 TFLOP/s), each measured at 8192³ with tensor scaling in
 * one run of interleaved rounds (H100 SXM, 2026-11-27, df4439a; docs/perf/gemm.md, "Other tile widths"). */
#define FP8_TILE(tn, st, cluster, e)                                                                                   \
    .tile_m = 128, .tile_n = (tn), .tile_k = 128, .stages = (st), .cluster_m = (cluster), .threads = 384,              \
    .supports = pl_gemm_fp8_row_supports, .model = PL_GEMM_MODEL_PERSISTENT((e), 1.0)

const pl_gemm_kernel pl_gemm_row_fp8_ws_128x192x128_s4 = {
    .name = "fp8_ws_128x192x128_s4",
    .rung = "fp8_ws",
    .technique = "persistent warp-specialized FP8: a TMA producer warpgroup, 2 consumers (setmaxnreg 232) issuing "
                 "wgmma m64n192k32 e4m3 into an accumulator promoted to fp32 every 128 K, 4 stages, TMA-store "
                 "epilogue",
    FP8_TILE(192, 4, 1, 0.752),
    .needs = PL_GEMM_FP8_NEEDS,
    .launch = launch_fp8,
};

const pl_gemm_kernel pl_gemm_row_fp8_ws_128x192x128_s4_p4 = {
    .name = "fp8_ws_128x192x128_s4_p4",
    .rung = "fp8_ws",
    .technique = "the FP8 kernel promoting to fp32 every 512 K (4 k-blocks, one wgmma group kept in flight inside) "
                 "instead of 128 K",
    FP8_TILE(192, 4, 1, 0.752), /* as every-128-K promotion: the pick leaves it out (less accurate) */
    .needs = PL_GEMM_FP8_NEEDS,
    .flags = PL_GEMM_KERNEL_LESS_ACCURATE,
    .launch = launch_fp8_p4,
};

const pl_gemm_kernel pl_gemm_row_fp8_ws_128x192x128_s4_c2 = {
    .name = "fp8_ws_128x192x128_s4_c2",
    .rung = "fp8_ws_cluster",
    .technique = "the FP8 kernel in 2-CTA clusters: the shared B panel TMA-multicast to both CTAs, stages released "
                 "through DSMEM",
    FP8_TILE(192, 4, 2, 0.718),
    .needs = PL_GEMM_FP8_CLUSTER_NEEDS,
    .launch = launch_fp8_c2,
};

const pl_gemm_kernel pl_gemm_row_fp8_ws_128x128x128_s6 = {
    .name = "fp8_ws_128x128x128_s6",
    .rung = "fp8_ws",
    .technique = "the FP8 kernel with 128×128 tiles (wgmma m64n128k32, 6 stages): 1.5× the tiles, a fuller last wave "
                 "where 128×192 leaves one short (4096³)",
    FP8_TILE(128, 6, 1, 0.622),
    .needs = PL_GEMM_FP8_NEEDS,
    .launch = launch_fp8_n128,
};

const pl_gemm_kernel pl_gemm_row_fp8_ws_128x176x128_s5 = {
    .name = "fp8_ws_128x176x128_s5",
    .rung = "fp8_ws",
    .technique = "the FP8 kernel with 128×176 tiles (wgmma m64n176k32, 5 stages, a 48-column last subtile stored "
                 "through its own TMA map): fewer rounds where 192-wide tile columns leave a short last wave (4096³)",
    FP8_TILE(176, 5, 1, 0.715),
    .needs = PL_GEMM_FP8_NEEDS,
    .launch = launch_fp8_n176,
};

const pl_gemm_kernel pl_gemm_row_fp8_ws_128x128x128_s6_c2 = {
    .name = "fp8_ws_128x128x128_s6_c2",
    .rung = "fp8_ws_cluster",
    .technique = "the 128×128 FP8 kernel in 2-CTA clusters (B panel multicast)",
    FP8_TILE(128, 6, 2, 0.624),
    .needs = PL_GEMM_FP8_CLUSTER_NEEDS,
    .launch = launch_fp8_n128_c2,
};

const pl_gemm_kernel pl_gemm_row_fp8_ws_128x128x128_s6_2p = {
    .name = "fp8_ws_128x128x128_s6_2p",
    .rung = "fp8_ws",
    .technique = "the 128×128 FP8 kernel with two promotion accumulators alternating by k-block: one k-block on the "
                 "tensor cores while the previous one is promoted, no drain inside a tile (every 128 K)",
    FP8_TILE(128, 6, 1, 0.655),
    .needs = PL_GEMM_FP8_NEEDS,
    .launch = launch_fp8_two_parts,
};

const pl_gemm_kernel pl_gemm_row_fp8_ws_128x128x128_s6_2p_c2 = {
    .name = "fp8_ws_128x128x128_s6_2p_c2",
    .rung = "fp8_ws_cluster",
    .technique = "the two-accumulator 128×128 FP8 kernel in 2-CTA clusters",
    FP8_TILE(128, 6, 2, 0.652),
    .needs = PL_GEMM_FP8_CLUSTER_NEEDS,
    .launch = launch_fp8_two_parts_c2,
};

/* ---- the rows as the one call runs them (pl_gemm_fp8: the problem's own scales and promotion) ---- */

/* the decode rows (fp8_sk_rows.c) */
extern const pl_gemm_kernel pl_gemm_row_fp8_sk_swap_16x64x128, pl_gemm_row_fp8_sk_swap_32x64x128,
    pl_gemm_row_fp8_sk_swap_64x64x128;

static const struct {
    const pl_gemm_kernel *row;
    cudaError_t (*run)(const pl_gemm_fp8_problem *, cudaStream_t);
    int tensor_only; /* takes tensor scaling only */
    int promote_any; /* takes promotion every 4 k-blocks as well as every one */
} fp8_launchers[] = {
    {&pl_gemm_row_fp8_ws_128x192x128_s4, pl_gemm_fp8_ws, 0, 1},
    {&pl_gemm_row_fp8_ws_128x192x128_s4_p4, pl_gemm_fp8_ws, 0, 1},
    {&pl_gemm_row_fp8_ws_128x192x128_s4_c2, pl_gemm_fp8_ws_c2, 0, 1},
    {&pl_gemm_row_fp8_ws_128x128x128_s6, pl_gemm_fp8_ws_n128, 0, 0},
    {&pl_gemm_row_fp8_ws_128x176x128_s5, pl_gemm_fp8_ws_n176, 1, 0},
    {&pl_gemm_row_fp8_ws_128x128x128_s6_c2, pl_gemm_fp8_ws_n128_c2, 0, 0},
    {&pl_gemm_row_fp8_ws_128x128x128_s6_2p, pl_gemm_fp8_ws_two_parts, 0, 0},
    {&pl_gemm_row_fp8_ws_128x128x128_s6_2p_c2, pl_gemm_fp8_ws_two_parts_c2, 0, 0},
    {&pl_gemm_row_fp8_sk_swap_16x64x128, pl_gemm_fp8_sk_swap16, 0, 0},
    {&pl_gemm_row_fp8_sk_swap_32x64x128, pl_gemm_fp8_sk_swap32, 0, 0},
    {&pl_gemm_row_fp8_sk_swap_64x64x128, pl_gemm_fp8_sk_swap64, 0, 0},
};

static int launcher_of(const pl_gemm_kernel *row)
{
    for (int i = 0; i < (int)(sizeof fp8_launchers / sizeof fp8_launchers[0]); i++)
        if (fp8_launchers[i].row == row)
            return i;
    return -1;
}

int pl_gemm_fp8_row_takes(const pl_gemm_kernel *row, const pl_gemm_fp8_problem *p)
{
    const int i = launcher_of(row);
    return i >= 0 && (!fp8_launchers[i].tensor_only || p->scaling == PL_FP8_SCALING_TENSOR) &&
           (fp8_launchers[i].promote_any || p->promote <= 1);
}

cudaError_t pl_gemm_fp8_row_launch(const pl_gemm_kernel *row, const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    const int i = launcher_of(row);
    return i >= 0 && pl_gemm_fp8_row_takes(row, p) ? fp8_launchers[i].run(p, stream) : cudaErrorInvalidValue;
}
