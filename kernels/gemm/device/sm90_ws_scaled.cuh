/* The warp-specialized persistent kernel of the FP8 GEMM and of the grouped (mixture-of-experts) GEMMs, sm_90a.
 * Include only from files compiled for sm_90a.
 *
 * Structure (as wgmma_ws_sm90a.cu, the BF16 kernel it follows): one CTA per SM loops over output tiles. Warpgroups
 * 0 and 1 are the consumers (setmaxnreg.inc to 232 registers), cooperative: each takes 64 rows of every 128×BN
 * tile. Warpgroup 2 is the producer: it gives registers back (setmaxnreg.dec to 40) and one thread issues the TMA
 * loads of A and B into a ring of stages, each counted on its "full" mbarrier, waiting on the stage's "empty"
 * mbarrier before it refills it. ptxas compiles the consumers' code for the 232 registers setmaxnreg gives them
 * (the 128×192 FP8 tile needs ~200: two accumulators of 96), though it reports the launch's 168; a 288-thread
 * layout with a producer warp cannot have more than 168 (an SM sub-partition then holds three of the nine warps).
 * A stage holds one k-block of 128 bytes per row (64 bf16 or 128 e4m3 elements, one 128-byte swizzle row), so the
 * wgmma descriptors are the same for both types: a k-step is +32 bytes (k16 bf16, k32 e4m3). Results leave through
 * shared memory and TMA stores (sm90_epilogue.cuh); where a store must stop at a group's last row, through shared
 * memory and ordinary 16-byte stores; from registers only where N % 8 != 0.
 *
 * FP8 accumulation. Hopper's FP8 wgmma adds its products into the accumulator with a reduced precision (about 14
 * mantissa bits, by DeepSeek-V3's measurements), so a long K loses accuracy. The consumers therefore run each
 * promotion group of PROMOTE k-blocks of 128 (4·PROMOTE wgmma k32) into an accumulator of their own (`part`,
 * scale-d 0 on the group's first) and add it into fp32 registers at the group's end: block scaling promotes every
 * k-block (128 K: its scales change there), times sa[row][kb]·sb[n-block][kb]; tensor scaling every PROMOTE
 * k-blocks, its one scale multiplying the finished accumulator. Inside a group the stages are released one
 * wgmma group behind, as in the BF16 kernel; at a promotion the consumer drains its wgmma (wait_group 0), and the
 * other consumer's wgmma keep the tensor cores busy meanwhile.
 *
 * The tile walk. A plain GEMM walks its tiles in groups of 16 tile rows (CTAs running at once share A and B panels
 * in L2); in 2-CTA clusters the two CTAs take vertically adjacent tiles and multicast their shared B panel. A
 * grouped GEMM (offsets != NULL) walks (group, tile) pairs: group g owns rows offsets[g] .. offsets[g+1] - 1 of A
 * and D and rows g·N .. g·N + N - 1 of B; inside a group its tiles go as a plain GEMM's (bands of 16 tile rows,
 * rows fastest, then columns: a large group's A panel is read from DRAM once per band, not once per wave of
 * columns; ncu at E = 8, N = 14336: 3.3 GB of DRAM reads against 4.2 GB rows first), then the next group; in 2-CTA
 * clusters the pair takes vertically adjacent tiles of one group, and a group's odd last tile row in pairs side by
 * side that multicast their shared A panel instead (no pad tiles past a group's end). Every role walks it from the
 * offsets in device memory with a cursor that only moves forward, so nothing about the group sizes comes back to the
 * host; a group of 0 rows has no tiles. A tile may read rows of the next group (TMA loads whole boxes): those rows are
 * computed and never stored. */
#ifndef PERFLAB_GEMM_SM90_WS_SCALED_CUH
#define PERFLAB_GEMM_SM90_WS_SCALED_CUH

#include "gemm/device/sm90_ws_mainloops.cuh"
#include "gemm/device/sm90_ws_parts.cuh"

/* The consumer warpgroups: every tile's mainloop and its epilogue. FP8 promotes every PROMOTE k-blocks, or with
 * ACCS = SW_HALVES every k-block off the critical path (sw_mainloop_halves). */
template <int BN, int ELEM, int SCALE, int CLUSTER, int PROMOTE, int ACCS, bool GROUPED>
__device__ __forceinline__ void sw_consume(const sw_params &p, const CUtensorMap *tma_d, const CUtensorMap *tma_tail,
                                           uint32_t base, uint32_t epi, uint32_t full, uint32_t empty, uint32_t rank,
                                           int cluster, int clusters)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    constexpr int STAGES = cfg::stages;
    regs_alloc<SW_CONSUMER_REGS>();
    const int consumer = sw_consumer_index();
    const int lane = threadIdx.x & 31;
    const uint32_t bufs = epi + consumer * SW_EPI_BUFFERS * EPI_SUB_BYTES;
    float acc[BN / 2];
    constexpr int PARTS = SCALE == SW_SCALE_NONE || ACCS == SW_HALVES ? 1 : BN / 2,
                  HALF_PARTS = ACCS == SW_HALVES ? BN / 4 : 1;
    constexpr int PARTS2 = ACCS == SW_TWO_PARTS ? BN / 2 : 1;
    float part[PARTS], part2[PARTS2], lo[HALF_PARTS], hi[HALF_PARTS];
#pragma unroll
    for (int i = 0; i < PARTS2; i++)
        part2[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < PARTS; i++)
        part[i] = 0.0f; /* the first wgmma of every k-block overwrites it (scale-d 0) */
#pragma unroll
    for (int i = 0; i < HALF_PARTS; i++)
        lo[i] = hi[i] = 0.0f;
    float tensor_scale = 1.0f;
    if (SCALE == SW_SCALE_TENSOR)
        tensor_scale = (p.scale_a ? __ldg(p.scale_a) : 1.0f) * (p.scale_b ? __ldg(p.scale_b) : 1.0f);
    if constexpr (ELEM == SW_E4M3 && (ACCS == SW_ONE_PART || ACCS == SW_TWO_PARTS)) {
        sw_consume_overlap<BN, SCALE, CLUSTER, PROMOTE, ACCS == SW_TWO_PARTS, GROUPED>(
            p, tma_d, tma_tail, acc, part, part2, tensor_scale, base, bufs, full, empty, rank, cluster, clusters);
    } else {                 /* bf16, or the FP8 halves */
        uint32_t kcount = 0; /* k-blocks consumed: the ring position */
        sw_walk w;
        w.init();
        sw_tile tl;
        for (int t = cluster; w.at<BN, CLUSTER>(p, t, rank, tl); t += clusters) {
            if (sw_idle(p, tl, consumer)) { /* padding: pass the stages on, compute nothing */
                sw_pass_tile<STAGES, SCALE, CLUSTER>(p, full, empty, lane, rank, kcount);
                continue;
            }
#pragma unroll
            for (int i = 0; i < BN / 2; i++)
                acc[i] = 0.0f;
            if constexpr (ACCS == SW_HALVES) {
                const sw_stage_at h = sw_stage_view<BN, SCALE>(p, tl, base, full, empty, consumer, lane, rank);
                sw_mainloop_halves<BN, SCALE, CLUSTER>(p, h, acc, lo, hi, kcount);
            } else {
                int held = -1; /* the stage whose wgmma group may still be reading it */
                for (int kb = 0; kb < p.k_blocks; kb++, kcount++) {
                    const int stage = (int)(kcount % STAGES);
                    const uint32_t st = sw_wait_stage<STAGES>(base, full, kcount, cfg::stage_bytes);
                    const uint64_t da0 = wgmma_desc_k128(st + consumer * 64 * SW_ROW_BYTES),
                                   db0 = wgmma_desc_k128(st + cfg::a_bytes);
                    wgmma_fence();
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        const uint64_t da = wgmma_desc_step(da0, j), db = wgmma_desc_step(db0, j);
                        if constexpr (BN == 256)
                            pl_wgmma_m64n256k16_bf16<0>(acc, da, db, 1);
                        else
                            pl_wgmma_m64n128k16_bf16<0>(acc, da, db, 1);
                    }
                    wgmma_commit();
                    wgmma_wait<1>(); /* the previous k-block's group is done: its stage can be refilled */
                    if (held >= 0)
                        release_stage<CLUSTER>(empty, held, lane);
                    held = stage;
                }
                wgmma_wait<0>();
                if (held >= 0)
                    release_stage<CLUSTER>(empty, held, lane);
                accumulators_fence(acc);
            }
            if constexpr (SCALE == SW_SCALE_TENSOR) {
#pragma unroll
                for (int i = 0; i < BN / 2; i++)
                    acc[i] *= tensor_scale;
            }
            sw_store<BN, GROUPED>(p, tma_d, tma_tail, tl, acc, bufs, consumer);
        }
    }
    if (p.tma_store && (threadIdx.x & 127) == 0)
        bulk_wait<0>(); /* the last stores are done before the shared memory they read goes away */
}

template <int BN, int ELEM, int SCALE, int CLUSTER, int PROMOTE, int ACCS, bool GROUPED>
__global__ void __launch_bounds__(SW_THREADS, 1)
    sw_gemm_kernel(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
                   const __grid_constant__ CUtensorMap tma_d, const __grid_constant__ CUtensorMap tma_a_half,
                   const __grid_constant__ CUtensorMap tma_d_tail, const sw_params p)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    constexpr int STAGES = cfg::stages;
    constexpr int KE = ELEM == SW_E4M3 ? 128 : 64; /* elements of a k-block row */
    static_assert(ELEM == SW_E4M3 || SCALE == SW_SCALE_NONE, "bf16 takes no scales");
    static_assert(ELEM == SW_BF16 || BN == 128 || BN == 176 || BN == 192,
                  "FP8 tiles are 128, 176 or 192 wide (two accumulators)");
    static_assert(SCALE != SW_SCALE_BLOCK || BN % 64 == 0, "block scales: a tile spans at most two B blocks");
    static_assert(SCALE != SW_SCALE_BLOCK || PROMOTE == 1, "block scales change every k-block");
    static_assert(ACCS != SW_HALVES || (ELEM == SW_E4M3 && PROMOTE == 1 && BN == 192), "halves: the 128×192 FP8 tile");
    static_assert(ACCS != SW_TWO_PARTS || (ELEM == SW_E4M3 && PROMOTE == 1 && BN <= 128),
                  "two full-width parts and the total: 128-wide FP8 tiles at most");
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t epi = base + STAGES * cfg::stage_bytes; /* 1024-aligned: the swizzle needs it */
    const uint32_t full = epi + cfg::epi_bytes, empty = full + 8 * STAGES;
    const uint32_t rank = CLUSTER > 1 ? cluster_cta_rank() : 0;
    const int cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    if constexpr (sw_reads_desc_lo0<ELEM, SCALE, ACCS>())
        if (threadIdx.x == 0 && wgmma_desc_k128_lo(base) != p.desc_lo0)
            __trap(); /* the host's idea of where the dynamic shared memory starts is wrong: never compute with it */

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(full + 8 * s, 1); /* the producer's arrive; TMA bytes complete it */
            mbar_init(empty + 8 * s, sw_empty_count<SCALE, CLUSTER>());
        }
        mbar_fence_init();
    }
    if (CLUSTER > 1)
        cluster_sync_relaxed(); /* the peer's barriers exist before anything is multicast into or arrived on here
                                 * (the inits released by fence.mbarrier_init) */
    else
        __syncthreads();

    if (threadIdx.x >= SW_PRODUCER) {
        regs_dealloc<SW_PRODUCER_REGS>();
        if (threadIdx.x == SW_PRODUCER) {
            tma_prefetch_descriptor(&tma_a);
            tma_prefetch_descriptor(&tma_b);
            if (CLUSTER == 2 && p.offsets)
                tma_prefetch_descriptor(&tma_a_half);
            int stage = 0;
            uint32_t phase = 0;
            sw_walk w;
            w.init();
            sw_tile tl;
            for (int t = cluster; w.at<BN, CLUSTER>(p, t, rank, tl); t += clusters)
                for (int kb = 0; kb < p.k_blocks; kb++) {
                    mbar_wait(empty + 8 * stage, phase ^ 1);
                    const uint32_t st = base + stage * cfg::stage_bytes, bar = full + 8 * stage;
                    /* boxes count whole, zero-filled parts too; clustered, half of B comes from the peer */
                    if constexpr (cfg::scale_bytes > 0) { /* the k-block's block scales ride along (bulk copies) */
                        /* a pair's tile past N (a_pair) reads its last B block's scales: in bounds, never used */
                        const int first = sw_scale_first(p, tl), nb = min(tl.n0 / 128, p.nblocks - 1);
                        const uint32_t a_sc = 4u * (uint32_t)min(SW_BM + 4, p.lda - first); /* lda % 4 == 0 */
                        const uint32_t sc = full + cfg::barrier_bytes + stage * SW_SC_STAGE;
                        const float *sb = p.scale_b + ((size_t)tl.group * p.nblocks + nb) * p.ldb + (kb & ~3);
                        mbar_arrive_expect_tx(bar, cfg::stage_bytes + a_sc + 32);
                        bulk_load_1d(sc, p.scale_a + (size_t)kb * p.lda + first, a_sc, bar);
                        bulk_load_1d(sc + SW_SC_B0, sb, 16, bar);
                        bulk_load_1d(sc + SW_SC_B1, nb + 1 < p.nblocks ? sb + p.ldb : sb, 16, bar);
                    } else {
                        mbar_arrive_expect_tx(bar, cfg::stage_bytes);
                    }
                    if (CLUSTER == 1) {
                        tma_load_2d(st, &tma_a, bar, kb * KE, tl.m0);
                        tma_load_2d(st + cfg::a_bytes, &tma_b, bar, kb * KE, tl.b_row);
                    } else if (!tl.a_pair) { /* A whole, half of B from each CTA into both */
                        tma_load_2d(st, &tma_a, bar, kb * KE, tl.m0);
                        tma_load_2d_multicast(st + cfg::a_bytes + rank * (cfg::b_bytes / CLUSTER), &tma_b, bar, kb * KE,
                                              tl.b_row + (int)rank * (BN / CLUSTER), (uint16_t)((1u << CLUSTER) - 1));
                    } else { /* side by side: half of A from each CTA into both, B whole (two half boxes) */
                        tma_load_2d_multicast(st + rank * (cfg::a_bytes / 2), &tma_a_half, bar, kb * KE,
                                              tl.m0 + (int)rank * (SW_BM / 2), (uint16_t)3);
                        tma_load_2d(st + cfg::a_bytes, &tma_b, bar, kb * KE, tl.b_row);
                        tma_load_2d(st + cfg::a_bytes + cfg::b_bytes / 2, &tma_b, bar, kb * KE, tl.b_row + BN / 2);
                    }
                    if (++stage == STAGES) {
                        stage = 0;
                        phase ^= 1;
                    }
                }
        }
    } else {
        sw_consume<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>(p, &tma_d, &tma_d_tail, base, epi, full, empty,
                                                                     rank, cluster, clusters);
    }
    if (CLUSTER > 1)
        cluster_sync(); /* the peer may still arrive on this CTA's barriers: stay until it is done */
}

/* The scale fields of p for A of `rows` rows, N and K (the layouts of gemm/fp8.h), and D's row count and width. */
static inline void sw_set_out_and_scales(sw_params &p, uint16_t *d, int rows, int n, int k, const float *scale_a,
                                         const float *scale_b)
{
    p.o.d = d;
    p.o.m = rows;
    p.o.n = n;
    p.scale_a = scale_a;
    p.scale_b = scale_b;
    p.lda = pl_fp8_scale_a_ld(rows);
    p.ldb = pl_fp8_scale_b_ld(k);
    p.nblocks = pl_fp8_kblocks(n);
}

/* D's tensor map when D can go through TMA (N % 8 == 0, D 16-byte aligned); *tma_store says whether it can. */
static inline void sw_store_map(CUtensorMap *td, uint16_t *d, int rows, int n, int *tma_store)
{
    *tma_store = rows > 0 && n % 8 == 0 && (uintptr_t)d % 16 == 0 &&
                 pl_tensor_map_bf16(td, d, (uint64_t)rows, (uint64_t)n, EPI_SUB, EPI_SUB) == cudaSuccess;
}

/* Clusters of the kernel the GPU holds at once (the GPCs decide, not only the SM count), cached per device. */
template <int BN, int ELEM, int SCALE, int CLUSTER, int PROMOTE, int ACCS, bool GROUPED>
static int sw_max_clusters(int device, int sms)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    static int cached[64];
    if (CLUSTER == 1)
        return sms;
    return max_active_clusters_cached(cached,
                                      (const void *)sw_gemm_kernel<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>,
                                      SW_THREADS, cfg::smem_bytes, CLUSTER, device, sms);
}

/* sw_params.desc_lo0 for the kernel on `device`: its dynamic shared memory starts after the reserved shared memory
 * (cudaDevAttrReservedSharedMemoryPerBlock, 1 KB on sm_90) and its static shared memory, rounded up to 1024 as the
 * kernel rounds it. Cached per device. */
template <int BN, int ELEM, int SCALE, int CLUSTER, int PROMOTE, int ACCS, bool GROUPED>
static cudaError_t sw_desc_lo0(int device, uint32_t *lo0)
{
    static uint32_t cached[64];
    if (device >= 0 && device < 64 && cached[device]) {
        *lo0 = cached[device];
        return cudaSuccess;
    }
    int reserved = 0;
    cudaFuncAttributes fa;
    cudaError_t e = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device);
    if (e == cudaSuccess)
        e = cudaFuncGetAttributes(&fa, sw_gemm_kernel<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>);
    if (e != cudaSuccess)
        return e;
    *lo0 = wgmma_desc_k128_lo(((uint32_t)reserved + (uint32_t)fa.sharedSizeBytes + 1023u) & ~1023u);
    if (device >= 0 && device < 64)
        cached[device] = *lo0;
    return cudaSuccess;
}

/* Launch persistent CTAs of the kernel for (BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS): one per SM (whole clusters),
 * no more than max_tiles work units (tiles, or cluster tiles) ask for. GROUPED: the grouped launches' instantiation,
 * the only one with sw_store's path for a group's crossing rows (in the plain FP8 GEMM's kernels, which never take it,
 * its registers alone made ptxas spill: fp8_tensor 0 -> 16 bytes). */
template <int BN, int ELEM, int SCALE, int CLUSTER, int PROMOTE = 1, int ACCS = SW_ONE_PART, bool GROUPED = false>
static cudaError_t sw_launch(const CUtensorMap &ta, const CUtensorMap &tb, const CUtensorMap &td, const sw_params &p,
                             long long max_tiles, cudaStream_t stream, const CUtensorMap *ta_half = NULL,
                             const CUtensorMap *td_tail = NULL)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    static_assert(cfg::stages >= 3, "too few stages");
    static_assert(cfg::smem_bytes <= SW_SMEM_LIMIT, "shared memory over the limit");
    int device = 0, sms = 0;
    cudaError_t e = kernel_launch_prepare(
        (const void *)sw_gemm_kernel<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>, cfg::smem_bytes, &device, &sms);
    if (e != cudaSuccess)
        return e;
    sw_params q = p;
    if constexpr (sw_reads_desc_lo0<ELEM, SCALE, ACCS>()) {
        e = sw_desc_lo0<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>(device, &q.desc_lo0);
        if (e != cudaSuccess)
            return e;
    }
    long long clusters = sw_max_clusters<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>(device, sms);
    if (clusters > max_tiles)
        clusters = max_tiles < 1 ? 1 : max_tiles;
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t lc =
        cluster_launch_config((unsigned)(clusters * CLUSTER), SW_THREADS, cfg::smem_bytes, CLUSTER, stream, &attr);
    if (CLUSTER == 1)
        lc.numAttrs = 0; /* a plain launch */
    e = cudaLaunchKernelEx(&lc, sw_gemm_kernel<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>, ta, tb, td,
                           ta_half ? *ta_half : ta, td_tail ? *td_tail : td, q);
    return e != cudaSuccess ? e : cudaGetLastError();
}

#endif
