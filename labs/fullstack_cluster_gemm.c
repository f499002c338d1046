/* fullstack:cluster_gemm — the best non-cluster GEMM (persistent warp-specialized WGMMA+TMA, 128×256 tiles)
 * against the same kernel run in 2-CTA thread-block clusters: the two CTAs of a cluster compute vertically
 * adjacent tiles that share their B panel, each loads half of it and TMA-multicasts it into both CTAs' shared
 * memory, and consumers release each stage on both CTAs' barriers through distributed shared memory. The B
 * panel's L2-to-SM traffic halves (A+B per CTA and k-step: 48 KB -> 32 KB). */
#include <stdio.h>

#include "common/gemm_lab.h"
#include "labs.h"

static const pl_param_def cluster_params[] = {
    PL_INT_PARAM("m", "8192", 1, 1 << 20, "rows of A and D", .small_value = "300"),
    PL_INT_PARAM("n", "8192", 1, 1 << 20, "columns of D", .small_value = "392"),
    PL_INT_PARAM("k", "8192", 8, 1 << 20, "the reduction (a multiple of 8)", .small_value = "136"),
    /* the best non-cluster kernel by default (docs/perf/gemm.md); the others show how tile shape and schedule
     * change what multicast saves */
    PL_CHOICE_PARAM("kernel", "wgmma_ws_128x256x64_s4",
                    "wgmma_ws_128x256x64_s4|wgmma_ws_128x128x64_s6|wgmma_pp_128x128x64_s5",
                    "the non-cluster kernel (registry name); the cluster variant runs its _c2 twin"),
    PL_PARAMS_END,
};

static void cluster_counters(const pl_params *p, pl_counters *c)
{
    gemm_lab_counters(p, 0, c);
}

/* Before any work (in the parent, and again by the setup). */
static int cluster_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    (void)gpu;
    if (pl_param_int(p, "k") % 8 != 0)
        return pl_params_refuse(err, errlen,
                                "--k %lld: the TMA kernels compared here need K %% 8 == 0; pick a multiple of 8",
                                pl_param_int(p, "k"));
    return 0;
}

static int cluster_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    char refused[256];
    if (cluster_check_params(p, NULL, refused, sizeof refused) != 0)
        return pl_fail(ctx, "%s", refused);
    return gemm_lab_setup(ctx, p, 0, state);
}

static int run_no_cluster(pl_ctx *ctx, void *state)
{
    gemm_lab *lab = state;
    return gemm_lab_native(ctx, lab, lab->kernel, 1);
}

static int run_cluster2(pl_ctx *ctx, void *state)
{
    gemm_lab *lab = state;
    char twin[sizeof lab->kernel + 4];
    snprintf(twin, sizeof twin, "%s_c2", lab->kernel);
    return gemm_lab_native(ctx, lab, twin, 1);
}

static int run_cublas(pl_ctx *ctx, void *state)
{
    gemm_lab *lab = state;
    return gemm_lab_cublas(ctx, lab, lab->p.d);
}

static const pl_variant cluster_variants[] = {
    PL_VARIANT("baseline", run_no_cluster,
               "persistent warp-specialized WGMMA+TMA (--kernel; 128×256 tiles by default), no cluster: each "
               "CTA loads its own B panel"),
    PL_VARIANT("cluster2", run_cluster2,
               "2-CTA clusters: B panel halves TMA-multicast into both CTAs, stages released on both CTAs' "
               "mbarriers through DSMEM"),
    PL_VARIANT("cublas", run_cublas, "cublasGemmEx, default algorithm: the library a user would call instead",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_fullstack_cluster_gemm = {
    .group = "fullstack",
    .name = "cluster_gemm",
    .summary = "persistent WGMMA+TMA GEMM without and with 2-CTA clusters (TMA multicast of B, DSMEM barriers)",
    .flags = PL_TARGET_POWER_BOUND, /* sustained tensor-core work runs at the power limit */
    .req = PL_GEMM_REQ_CLUSTER,
    .params = cluster_params,
    .variants = cluster_variants,
    .counters = cluster_counters,
    .setup = cluster_setup,
    .poison = gemm_lab_poison,
    .check = gemm_lab_check,
    .teardown = gemm_lab_teardown,
    .check_params = cluster_check_params,
};
