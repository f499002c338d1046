/* How the sm_90a BF16 GEMM kernels read a wgmma operand from global memory into shared memory and describe it to
 * wgmma: two policies, one per layout of the operand's rows (the M rows of A, the N rows of B) against K.
 *
 *   sm90_k_major:  the operand is stored rows × K, K contiguous (A; B given N×K, a linear layer's weight). TMA loads
 *                  boxes of `rows` rows × 64 K (128-byte rows, 128-byte swizzle); wgmma_desc_k128 describes them, a
 *                  k16 step is +32 B on the address; wgmma reads it untransposed (imm-trans 0).
 *   sm90_mn_major: the operand is stored K × rows, its rows contiguous (B given K×N; A of the swapped kernels, which
 *                  is B). TMA loads boxes of 64 rows (128 B, the swizzle's width) × 64 K, placed one after another
 *                  (8 KB each); wgmma_desc_mn128 describes them (its leading offset steps from box to box along the
 *                  rows, its stride offset from 8 K rows to the next), a k16 step is +2048 B (16 rows of 128 B);
 *                  wgmma reads it transposed (imm-trans 1). The rows a CTA loads come in whole boxes: 64, 128, 192,
 *                  256 (a wgmma width that is no multiple of 64, as 176, would read past a box).
 *
 * Both place a panel of R rows × 64 K in R · 128 bytes, so a stage's layout and size are the same in either. A
 * kernel takes one policy per operand as a template parameter (`trans` is what its wgmma is given); the K-major
 * functions are the code the kernels had before the policies. sm_90a only. */
#ifndef PERFLAB_GEMM_DEVICE_SM90_OPERAND_CUH
#define PERFLAB_GEMM_DEVICE_SM90_OPERAND_CUH

#include "common/sm90_common.cuh"

#define SM90_OPERAND_BK   64                      /* K per stage: one 128-byte swizzle row of bf16 */
#define SM90_MN_BOX_ROWS  64                      /* rows an MN-major box holds: 128 B */
#define SM90_MN_BOX_BYTES (SM90_OPERAND_BK * 128) /* one MN-major box: 64 K rows of 128 B */

struct sm90_k_major {
    static constexpr int trans = 0;

    /* the descriptor of k16 step j of a panel at `panel` */
    static __device__ __forceinline__ uint64_t desc(uint32_t panel, int j)
    {
        return wgmma_desc_k128(panel + j * 32);
    }

    /* The panel of ROWS rows from row r0 at K offset k0 into `panel`, from this CTA alone; the map's box is ROWS
     * rows × 64 K. */
    template <int ROWS>
    static __device__ __forceinline__ void load(uint32_t panel, const CUtensorMap *map, uint32_t bar, int k0, int r0)
    {
        tma_load_2d(panel, map, bar, k0, r0);
    }

    /* This CTA's share (`rank` of CLUSTER, CLUSTER > 1) of a panel of ROWS rows, multicast into every CTA of the
     * cluster: rows rank · ROWS/CLUSTER .. of it (the map's box is ROWS/CLUSTER rows). */
    template <int ROWS, int CLUSTER>
    static __device__ __forceinline__ void load_share(uint32_t panel, const CUtensorMap *map, uint32_t bar, int k0,
                                                      int r0, int rank)
    {
        tma_load_2d_multicast(panel + rank * (ROWS * 128 / CLUSTER), map, bar, k0, r0 + rank * (ROWS / CLUSTER),
                              (uint16_t)((1u << CLUSTER) - 1));
    }
};

struct sm90_mn_major {
    static constexpr int trans = 1;

    static __device__ __forceinline__ uint64_t desc(uint32_t panel, int j)
    {
        return wgmma_desc_mn128(panel + j * 16 * 128, SM90_MN_BOX_BYTES);
    }

    /* The map's box is 64 rows × 64 K (coordinates: the row, then K); the panel is ROWS/64 boxes. */
    template <int ROWS>
    static __device__ __forceinline__ void load(uint32_t panel, const CUtensorMap *map, uint32_t bar, int k0, int r0)
    {
        static_assert(ROWS % SM90_MN_BOX_ROWS == 0, "an MN-major panel is whole boxes of 64 rows");
#pragma unroll
        for (int b = 0; b < ROWS / SM90_MN_BOX_ROWS; b++)
            tma_load_2d(panel + b * SM90_MN_BOX_BYTES, map, bar, r0 + b * SM90_MN_BOX_ROWS, k0);
    }

    /* The boxes b with b % CLUSTER == rank (uneven shares where the boxes do not divide: 192 rows in pairs, two and
     * one), each multicast into every CTA of the cluster. */
    template <int ROWS, int CLUSTER>
    static __device__ __forceinline__ void load_share(uint32_t panel, const CUtensorMap *map, uint32_t bar, int k0,
                                                      int r0, int rank)
    {
        static_assert(ROWS % SM90_MN_BOX_ROWS == 0, "an MN-major panel is whole boxes of 64 rows");
        for (int b = rank; b < ROWS / SM90_MN_BOX_ROWS; b += CLUSTER)
            tma_load_2d_multicast(panel + b * SM90_MN_BOX_BYTES, map, bar, r0 + b * SM90_MN_BOX_ROWS, k0,
                                  (uint16_t)((1u << CLUSTER) - 1));
    }
};

#endif
