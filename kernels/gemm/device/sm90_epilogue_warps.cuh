/* The fused epilogue off the tensor cores' critical path (cooperative sm_90a kernels). In the cooperative
 * schedule both consumer warpgroups finish a tile together, so whatever they do after the mainloop (bias, GELU,
 * residual: ~15 instructions and a load per element) leaves the tensor cores idle. Here the consumers only hand
 * the product over, as bf16 subtiles written to shared memory with stmatrix (as the plain epilogue does), and go
 * on with the next tile. Warps 1-3 of the producer warpgroup, idle until now (one thread of warp 0 issues every
 * TMA load), are the epilogue warps: for each subtile they read the product, add the bias (bulk-copied into
 * shared memory once per tile) and apply GELU, add the residual (TMA-prefetched into L2 at the tile's start, read
 * with 16-byte loads), write the result in place and store it with TMA. Per buffer, a "full" mbarrier (the 128
 * consumer threads arrive) and a "free" one (the store has read it) pass the subtiles back and forth.
 *
 * The product is rounded to bf16 before the epilogue, as it is when cuBLAS writes it for a separate kernel.
 * Include only from sm_90a code. */
#ifndef PERFLAB_GEMM_SM90_EPILOGUE_WARPS_CUH
#define PERFLAB_GEMM_SM90_EPILOGUE_WARPS_CUH

#include "gemm/device/epilogue.cuh"
#include "common/sm90_common.cuh"
#include "gemm/device/sm90_epilogue.cuh"

#define EW_FIRST_THREAD 32 /* warps 1-3 of warpgroup 0 */
#define EW_THREADS      96
#define EW_BARRIER      3 /* named barrier id: 1 and 2 are the consumers' */

/* Shared memory of the hand-over: consumer c's buffer b is subtile buffer c·NB + b, with barriers full[c·NB + b]
 * and free[c·NB + b]; bias holds two tiles' bias columns (tile parity), each counted on its own barrier. */
struct ew_smem {
    uint32_t bufs, full, free, bias, bias_bars;
};

__device__ __forceinline__ void st_shared_v4(uint32_t addr, uint4 v)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

/* Consumer side: the warpgroup's N/64 subtiles of the m64nN accumulator into its NB buffers, each once the
 * epilogue warps have stored what it held before. `handed` counts this consumer's subtiles over the kernel. */
template <int N, int NB>
__device__ __forceinline__ void ew_hand_over(const float (&acc)[N / 2], const ew_smem &s, int consumer,
                                             uint32_t &handed)
{
    const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
    const int srow = subtile_srow(warp, lane);
#pragma unroll
    for (int sub = 0; sub < N / EPI_SUB; sub++, handed++) {
        const int slot = consumer * NB + (int)(handed % NB);
        mbar_wait(s.free + 8 * slot, ((handed / NB) & 1) ^ 1); /* a fresh buffer passes at once */
        float v[32];
        subtile_values<N>(acc, sub, v);
        plain_subtile_to_smem(v, s.bufs + slot * EPI_SUB_BYTES, srow);
        mbar_arrive(s.full + 8 * slot);
    }
}

/* Bias, GELU and residual over 8 neighbouring bf16 products (16 bytes). */
__device__ __forceinline__ uint4 ew_chunk(const pl_gemm_out &o, uint4 p, uint4 bias, uint4 res)
{
    const uint32_t pi[4] = {p.x, p.y, p.z, p.w}, bi[4] = {bias.x, bias.y, bias.z, bias.w},
                   ri[4] = {res.x, res.y, res.z, res.w};
    uint32_t out[4];
#pragma unroll
    for (int j = 0; j < 4; j++)
        out[j] = pl_gemm_epilogue_pair(__uint_as_float(pi[j] << 16), __uint_as_float(pi[j] & 0xFFFF0000u), bi[j], ri[j],
                                       o.bias != nullptr, o.gelu, o.residual != nullptr);
    return make_uint4(out[0], out[1], out[2], out[3]);
}

/* One 64×64 subtile in place: 512 chunks of 16 bytes over the 96 threads, two at a time so that two residual
 * loads are in flight at once (registers are few in this warpgroup). */
__device__ __forceinline__ void ew_subtile(const pl_gemm_out &o, uint32_t buf, uint32_t bias, int row0, int col0)
{
    const int tid = (int)threadIdx.x - EW_FIRST_THREAD;
#pragma unroll 1
    for (int i = tid; i < 512; i += 2 * EW_THREADS) {
        uint4 res[2], p[2], b[2];
        uint32_t addr[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int c = i + h * EW_THREADS, r = c >> 3, ch = c & 7;
            const int row = row0 + r, col = col0 + ch * 8;
            addr[h] = swizzle128(buf, r, ch);
            res[h] = make_uint4(0u, 0u, 0u, 0u);
            if (o.residual && c < 512 && row < o.m && col < o.n) /* n % 8 == 0: a chunk is all in or all out */
                res[h] = __ldg(reinterpret_cast<const uint4 *>(o.residual + (size_t)row * o.n + col));
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int c = i + h * EW_THREADS;
            if (c >= 512)
                break;
            p[h] = ld_shared_v4(addr[h]);
            b[h] = o.bias ? ld_shared_v4(bias + (c & 7) * 16) : make_uint4(0u, 0u, 0u, 0u);
            st_shared_v4(addr[h], ew_chunk(o, p[h], b[h], res[h]));
        }
    }
}

/* Epilogue warps: the CTA's tiles in the consumers' order (tile(t) gives the first row and column of the t-th;
 * `tiles` of them), each consumer's rows row0 + 64·c, N columns from n0. */
template <int N, int NB, typename TileFn>
__device__ __forceinline__ void ew_run(const pl_gemm_out &o, const CUtensorMap *tma_d, const CUtensorMap *tma_r,
                                       const ew_smem &s, int tiles, TileFn tile)
{
    const bool leader = threadIdx.x == EW_FIRST_THREAD;
    uint32_t taken = 0; /* subtiles of each consumer taken so far (the two go in step) */
    for (int local = 0; local < tiles; local++) {
        int m0, n0;
        tile(local, m0, n0);
        const int par = local & 1;
        const uint32_t bias = s.bias + par * N * 2, bias_bar = s.bias_bars + 8 * par;
        if (leader) {
            if (o.bias) {
                const uint32_t bytes = 2u * (uint32_t)min(N, o.n - n0); /* n % 8 == 0: a multiple of 16 */
                mbar_arrive_expect_tx(bias_bar, bytes);
                bulk_load_1d(bias, o.bias + n0, bytes, bias_bar);
            }
            if (o.residual) /* into L2 now: read when the product is ready, a mainloop later */
                for (int c = 0; c < 2; c++)
                    for (int sub = 0; sub < N / EPI_SUB; sub++)
                        tma_prefetch_l2_2d(tma_r, n0 + sub * EPI_SUB, m0 + c * 64);
        }
        if (o.bias)
            mbar_wait(bias_bar, (local >> 1) & 1);
#pragma unroll 1
        for (int sub = 0; sub < N / EPI_SUB; sub++, taken++)
#pragma unroll 1
            for (int c = 0; c < 2; c++) { /* both consumers finish together: alternate between them */
                const int slot = c * NB + (int)(taken % NB);
                const uint32_t buf = s.bufs + slot * EPI_SUB_BYTES;
                mbar_wait(s.full + 8 * slot, (taken / NB) & 1);
                ew_subtile(o, buf, bias + sub * EPI_SUB * 2, m0 + c * 64, n0 + sub * EPI_SUB);
                fence_proxy_async_shared();
                named_barrier_sync(EW_BARRIER, EW_THREADS);
                if (leader) {
                    tma_store_2d(tma_d, buf, n0 + sub * EPI_SUB, m0 + c * 64);
                    bulk_commit();
                    bulk_wait_read<0>(); /* the buffer is free once the store has read it */
                    mbar_arrive(s.free + 8 * slot);
                }
            }
    }
    if (leader)
        bulk_wait<0>(); /* the last stores are done before the shared memory they read goes away */
}

#endif
