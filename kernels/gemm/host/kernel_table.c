/* The kernel tables' order: one line a row. Each row is written once, beside its kernel's launcher, in its recipe's
 * rows file (`const pl_gemm_kernel pl_gemm_row_<name>`: portable/<recipe>_rows.c, sm90/<recipe>_rows.c, with
 * gemm/host/kernel_row.h); this file only says where it stands. The labs and the selector (perflab gemm) both
 * enumerate the tables, so a kernel listed here is verified and timed by both. */
#include <string.h>

#include "gemm/gemm.h"

/* The BF16 table. Where the pick's model ties, the earlier row wins: the plain split-K tiles come before the swapped
 * ones (their stores run along D's rows). The labs keep one bit per row (gemm_lab.c's fallback notes): 64 rows at
 * most. */
#define BF16_ROWS(ROW)                                                                                                 \
    ROW(naive)                   /* portable/naive_rows.c */                                                           \
    ROW(smem_tiled_64x64x16)     /* portable/smem_tiled_rows.c */                                                      \
    ROW(mma_sync_128x128x32_s4)  /* portable/mma_sync_rows.c: the fallback */                                          \
    ROW(wgmma_tma_128x128x64_s3) /* sm90/wgmma_tma_rows.c */                                                           \
    ROW(wgmma_ws_128x128x64_s6)  /* sm90/wgmma_ws_rows.c */                                                            \
    ROW(wgmma_ws_128x256x64_s4)                                                                                        \
    ROW(wgmma_ws_128x256x64_s3)                                                                                        \
    ROW(wgmma_pp_128x128x64_s5)                                                                                        \
    ROW(wgmma_ws_128x128x64_s6_c2)                                                                                     \
    ROW(wgmma_ws_128x256x64_s4_c2)                                                                                     \
    ROW(wgmma_pp_128x128x64_s5_c2)                                                                                     \
    ROW(wgmma_sk_64x64x64) /* sm90/wgmma_sk_rows.c */                                                                  \
    ROW(wgmma_sk_64x128x64)                                                                                            \
    ROW(wgmma_sk_swap_16x64x64)                                                                                        \
    ROW(wgmma_sk_swap_32x64x64)                                                                                        \
    ROW(wgmma_sk_swap_64x64x64)                                                                                        \
    ROW(wgmma_sk_swap_128x64x64)                                                                                       \
    ROW(wgmma_sk_64x64x64_w1)                                                                                          \
    ROW(wgmma_sk_64x128x64_w1)                                                                                         \
    ROW(wgmma_sk_swap_32x64x64_w1)                                                                                     \
    ROW(wgmma_sk_swap_64x64x64_w1)                                                                                     \
    ROW(wgmma_sk_64x64x64_deep)                                                                                        \
    ROW(wgmma_sk_64x128x64_deep)                                                                                       \
    ROW(wgmma_sk_128x128x64)                                                                                           \
    ROW(wgmma_sk_128x256x64)                                                                                           \
    ROW(wgmma_ws_128x192x64_s4) /* sm90/wgmma_ws_rows.c */                                                             \
    ROW(wgmma_ws_128x192x64_s4_c2)                                                                                     \
    ROW(wgmma_ws_192x176x64_s3_c2)                                                                                     \
    ROW(wgmma_ws_128x176x64_s5)                                                                                        \
    ROW(wgmma_ws_128x224x64_s4_c4)                                                                                     \
    ROW(gemv_mma_t8) /* portable/gemv_mma_rows.c */                                                                    \
    ROW(gemv_mma_t16)                                                                                                  \
    ROW(gemv_mma_t32)                                                                                                  \
    ROW(wgmma_ws_128x224x64_s4) /* sm90/wgmma_ws_rows.c */                                                             \
    ROW(wgmma_ws_128x224x64_s4_c2)                                                                                     \
    ROW(wgmma_sk_swap_200x128x64) /* sm90/wgmma_sk_rows.c */                                                           \
    ROW(wgmma_sk_swap_16x64x64_deep)                                                                                   \
    ROW(wgmma_sk_swap_32x64x64_deep)                                                                                   \
    ROW(wgmma_ws_128x128x64_s6_kn) /* sm90/wgmma_ws_rows.c: B K×N */                                                  \
    ROW(wgmma_ws_128x256x64_s4_kn)                                                                                     \
    ROW(wgmma_ws_128x256x64_s3_kn)                                                                                     \
    ROW(wgmma_pp_128x128x64_s5_kn)                                                                                     \
    ROW(wgmma_ws_128x192x64_s4_kn)                                                                                     \
    ROW(wgmma_ws_128x128x64_s6_c2_kn)                                                                                  \
    ROW(wgmma_ws_128x256x64_s4_c2_kn)                                                                                  \
    ROW(wgmma_pp_128x128x64_s5_c2_kn)                                                                                  \
    ROW(wgmma_ws_128x192x64_s4_c2_kn)                                                                                  \
    ROW(wgmma_sk_64x64x64_kn) /* sm90/wgmma_sk_rows.c: B K×N */                                                       \
    ROW(wgmma_sk_64x128x64_kn)                                                                                         \
    ROW(wgmma_sk_swap_16x64x64_kn)                                                                                     \
    ROW(wgmma_sk_swap_32x64x64_kn)                                                                                     \
    ROW(wgmma_sk_swap_64x64x64_kn)                                                                                     \
    ROW(wgmma_sk_swap_128x64x64_kn)                                                                                    \
    ROW(wgmma_sk_64x64x64_deep_kn)                                                                                     \
    ROW(wgmma_sk_64x128x64_deep_kn)                                                                                    \
    ROW(wgmma_sk_swap_16x64x64_deep_kn)                                                                                \
    ROW(wgmma_sk_swap_32x64x64_deep_kn)                                                                                \
    ROW(wgmma_sk_128x128x64_kn)

/* The FP8 table (sm90/fp8_ws_rows.c, sm90/fp8_sk_rows.c), in the order pl_gemm_fp8_pick breaks its model's ties by. */
#define FP8_ROWS(ROW)                                                                                                  \
    ROW(fp8_ws_128x192x128_s4)                                                                                         \
    ROW(fp8_ws_128x192x128_s4_p4)                                                                                      \
    ROW(fp8_ws_128x192x128_s4_c2)                                                                                      \
    ROW(fp8_ws_128x128x128_s6)                                                                                         \
    ROW(fp8_ws_128x176x128_s5)                                                                                         \
    ROW(fp8_ws_128x128x128_s6_c2)                                                                                      \
    ROW(fp8_ws_128x128x128_s6_2p)                                                                                      \
    ROW(fp8_ws_128x128x128_s6_2p_c2)                                                                                   \
    ROW(fp8_sk_swap_16x64x128) /* sm90/fp8_sk_rows.c: decode */                                                        \
    ROW(fp8_sk_swap_32x64x128)                                                                                         \
    ROW(fp8_sk_swap_64x64x128)

#define DECLARE(name) extern const pl_gemm_kernel pl_gemm_row_##name;
#define ADDRESS(name) &pl_gemm_row_##name,
BF16_ROWS(DECLARE)
FP8_ROWS(DECLARE)
static const pl_gemm_kernel *const bf16_rows[] = {BF16_ROWS(ADDRESS)};
static const pl_gemm_kernel *const fp8_rows[] = {FP8_ROWS(ADDRESS)};
_Static_assert(sizeof bf16_rows / sizeof bf16_rows[0] <= 64, "more than 64 BF16 kernels: widen the per-kernel masks");

size_t pl_gemm_kernel_count(void)
{
    return sizeof bf16_rows / sizeof bf16_rows[0];
}

const pl_gemm_kernel *pl_gemm_kernel_at(size_t i)
{
    return i < pl_gemm_kernel_count() ? bf16_rows[i] : NULL;
}

size_t pl_gemm_kernel_index(const pl_gemm_kernel *k)
{
    size_t i = 0;
    while (i < pl_gemm_kernel_count() && bf16_rows[i] != k)
        i++;
    return i;
}

const pl_gemm_kernel *pl_gemm_kernel_find(const char *name)
{
    for (size_t i = 0; i < pl_gemm_kernel_count(); i++)
        if (strcmp(bf16_rows[i]->name, name) == 0)
            return bf16_rows[i];
    return NULL;
}

const pl_gemm_kernel *pl_gemm_kernel_fallback(void)
{
    return &pl_gemm_row_mma_sync_128x128x32_s4;
}

size_t pl_gemm_fp8_kernel_count(void)
{
    return sizeof fp8_rows / sizeof fp8_rows[0];
}

const pl_gemm_kernel *pl_gemm_fp8_kernel_at(size_t i)
{
    return i < pl_gemm_fp8_kernel_count() ? fp8_rows[i] : NULL;
}
