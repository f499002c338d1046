/* The native GEMM kernels as data (kernel_list.h). */
#include "selector/kernel_list.h"

#include "gemm/gemm.h"

static json_t *flag_names(unsigned flags)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {
        {PL_GEMM_KERNEL_TEACHING, "teaching"},
        {PL_GEMM_KERNEL_SPLIT_K, "split_k"},
        {PL_GEMM_KERNEL_SWAP_AB, "swap_ab"},
        {PL_GEMM_KERNEL_SMALL_M, "small_m"},
        {PL_GEMM_KERNEL_SPLIT_W1, "split_one_cta_per_sm"},
        {PL_GEMM_KERNEL_SPLIT_WAVES, "split_waves"},
        {PL_GEMM_KERNEL_SPLIT_DEEP, "split_deep"},
        {PL_GEMM_KERNEL_LESS_ACCURATE, "less_accurate"},
        {PL_GEMM_KERNEL_B_KN, "b_kn"},
    };
    json_t *a = json_array();
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (flags & names[i].bit)
            json_array_append_new(a, json_string(names[i].name));
    return a;
}

json_t *pl_gemm_kernel_list(int fp8)
{
    json_t *list = json_array();
    const size_t n = fp8 ? pl_gemm_fp8_kernel_count() : pl_gemm_kernel_count();
    for (size_t i = 0; i < n; i++) {
        const pl_gemm_kernel *k = fp8 ? pl_gemm_fp8_kernel_at(i) : pl_gemm_kernel_at(i);
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:s, s:[i,i,i], s:i, s:i, s:i, s:i, s:i, s:o, s:b}", "name", k->name, "rung",
                            k->rung ? k->rung : "", "technique", k->technique ? k->technique : "", "tile", k->tile_m,
                            k->tile_n, k->tile_k, "stages", k->stages, "cluster", k->cluster_m, "threads", k->threads,
                            "min_cc", k->needs.min_cc, "max_cc", k->needs.max_cc, "flags", flag_names(k->flags),
                            "searched", !(k->flags & PL_GEMM_KERNEL_UNSEARCHED)));
    }
    return list;
}
