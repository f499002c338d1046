/* fullstack:cluster_gemm — the best non-cluster GEMM (persistent warp-specialized WGMMA+TMA, 128×256 tiles)
 * against the same kernel run in 2-CTA thread-block clusters: the two CTAs of a cluster compute vertically
 * adjacent tiles that share their B panel, each loads half of it and TMA-multicasts it into both CTAs' shared
 * memory, and consumers release each stage on both CTAs' barriers through distributed shared memory. The B
 * panel's L2-to-SM traffic halves (A+B per CTA and k-step: 48 KB -> 32 KB). */
#include <stdio.h>

#include "gemm_lab.h"
#include "labs.h"

static const pl_param_def cluster_params[] = {
    {.name = "m", .type = PL_PARAM_INT, .default_value = "8192", .help = "rows of A and D", .min = 1, .max = 1 << 20,
     .small_value = "300"},
    {.name = "n", .type = PL_PARAM_INT, .default_value = "8192", .help = "columns of D", .min = 1, .max = 1 << 20,
     .small_value = "392"},
    {.name = "k",
     .type = PL_PARAM_INT,
     .default_value = "8192",
     .help = "the reduction (a multiple of 8)",
     .min = 8,
     .max = 1 << 20,
     .small_value = "136"},
    /* the best non-cluster kernel by default (docs/perf/gemm.md); the others show how tile shape and schedule
     * change what multicast saves */
    {.name = "kernel",
     .type = PL_PARAM_STRING,
     .default_value = "wgmma_ws_128x256x64_s4",
     .help = "the non-cluster kernel (registry name); the cluster variant runs its _c2 twin",
     .choices = "wgmma_ws_128x256x64_s4|wgmma_ws_128x128x64_s6|wgmma_pp_128x128x64_s5"},
    {.name = NULL},
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
    {.name = "baseline",
     .technique = "persistent warp-specialized WGMMA+TMA (--kernel; 128×256 tiles by default), no cluster: each "
                  "CTA loads its own B panel",
     .run = run_no_cluster},
    {.name = "cluster2",
     .technique = "2-CTA clusters: B panel halves TMA-multicast into both CTAs, stages released on both CTAs' "
                  "mbarriers through DSMEM",
     .run = run_cluster2},
    {.name = "cublas",
     .technique = "cublasGemmEx, default algorithm: the library a user would call instead",
     .run = run_cublas,
     .flags = PL_VARIANT_REFERENCE},
    {.name = NULL},
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
