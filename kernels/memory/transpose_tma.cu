/* fp32 transpose, version 6 of the lesson (1-4 in transpose.cu, 5 in transpose_ilp.cu): TMA in, TMA out.
 *
 *  6. tma — persistent blocks of 64 threads. A 32×32 tile (4 KB: 32 rows of one 128-byte line) comes in by one
 *           bulk tensor copy (cp.async.bulk.tensor.2d) into a ring of STAGES buffers, completing on the buffer's
 *           mbarrier; the threads transpose it shared-to-shared (each a 4×4 block: four 16-byte reads, a register
 *           transpose, four 16-byte writes) into one of OUTS output buffers; one bulk tensor store writes it
 *           out. No thread computes a global address or waits for a global load: the TMA unit of each SM keeps
 *           STAGES loads and OUTS stores a block in flight (6 blocks an SM: 96 KB each way), whole lines. Edge
 *           tiles cost nothing extra: TMA fills what lies outside the input with zeros and does not write what
 *           lies outside the output.
 *
 * The COPY instantiation is a control for the lesson: the same pipeline with each tile stored where it came from
 * (no transpose), so that the cost of the pipeline and the cost of the transposition can be told apart.
 *
 * Both tensor maps use the 128-byte swizzle: the 16-byte group g of a tile row r sits at group g ^ (r % 8).
 * Thread t takes the 4×4 block (row group rb, column group cb) with cb = t % 8 and rb = (cb + t / 8) % 8: the 8
 * lanes of each quarter-warp read 8 different 16-byte groups of the input tile and write 8 different groups of the
 * output tile, so neither side has a bank conflict (docs/perf/memory.md works it through).
 *
 * Needs sm_90, rows and cols multiples of 4 (16-byte row pitches, as TMA requires) and 16-byte aligned buffers;
 * pl_transpose_tma_fits says whether a shape does. */
#include <stdint.h>
#include "common/sm90_ptx.cuh"
#include "gemm/tensor_map.h"
#include "memory/transpose_fast.h"

#define TT          32   /* tile side: one 128-byte line of fp32 */
#define TILE_BYTES  4096 /* TT × TT × 4 */
#define TMA_THREADS 64   /* one 4×4 block each */
#define TMA_STAGES  4    /* input buffers a block */
#define TMA_OUTS    4    /* output buffers a block (stores in flight) */

/* dynamic shared memory: STAGES input tiles, OUTS output tiles, STAGES barriers; +1024 to align the tiles (the
 * 128-byte swizzle repeats every 1024 bytes and is computed from the shared address) */
#define TMA_SMEM (1024 + (TMA_STAGES + TMA_OUTS) * TILE_BYTES + 8 * TMA_STAGES)

__device__ __forceinline__ void st_shared_v4(uint32_t addr, float x, float y, float z, float w)
{
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(x), "f"(y), "f"(z), "f"(w) : "memory");
}

/* COPY: the control: the same pipeline with the tile copied instead of transposed (out_map then has in's shape). */
template <int COPY>
__global__ void __launch_bounds__(TMA_THREADS)
    transpose_tma_kernel(const __grid_constant__ CUtensorMap in_map, const __grid_constant__ CUtensorMap out_map,
                         unsigned tiles_x, unsigned total)
{
    extern __shared__ __align__(16) unsigned char tma_smem[];
    const uint32_t raw = smem_u32(tma_smem);
    const uint32_t base = (raw + 1023u) & ~1023u;
    const uint32_t outs = base + TMA_STAGES * TILE_BYTES; /* the output tiles */
    const uint32_t bars = outs + TMA_OUTS * TILE_BYTES;
    const unsigned t = threadIdx.x;

    if (t == 0) {
        tma_prefetch_descriptor(&in_map);
        tma_prefetch_descriptor(&out_map);
        for (int s = 0; s < TMA_STAGES; s++)
            mbar_init(bars + 8u * s, 1);
        mbar_fence_init();
    }
    __syncthreads();
    if (t == 0)
        for (unsigned s = 0; s < TMA_STAGES; s++) {
            const unsigned u = blockIdx.x + s * gridDim.x;
            if (u >= total)
                break;
            mbar_arrive_expect_tx(bars + 8u * s, TILE_BYTES); /* the whole box counts, zero-filled parts too */
            tma_load_2d(base + s * TILE_BYTES, &in_map, bars + 8u * s, (int)(u % tiles_x * TT),
                        (int)(u / tiles_x * TT));
        }

    /* this thread's 4×4 block, and the swizzled byte offsets of its four input rows and four output rows */
    const unsigned cb = t & 7u, rb = (cb + (t >> 3)) & 7u;
    uint32_t in_off[4], out_off[4];
#pragma unroll
    for (unsigned k = 0; k < 4; k++) {
        const unsigned r = 4 * rb + k, c = 4 * cb + k; /* input row r, output row c */
        in_off[k] = r * 128u + ((cb ^ (r & 7u)) << 4);
        out_off[k] = COPY ? in_off[k] : c * 128u + ((rb ^ (c & 7u)) << 4);
    }

    unsigned i = 0;
    for (unsigned u = blockIdx.x; u < total; u += gridDim.x, i++) {
        const unsigned slot = i % TMA_STAGES;
        const uint32_t src = base + slot * TILE_BYTES, dst = outs + (i % TMA_OUTS) * TILE_BYTES;
        if (t == 0)
            bulk_wait_read<TMA_OUTS - 1>(); /* the store of tile i - OUTS has read the buffer this one writes */
        __syncthreads();
        mbar_wait(bars + 8u * slot, (i / TMA_STAGES) & 1u);

        float4 a[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
            asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                         : "=f"(a[k].x), "=f"(a[k].y), "=f"(a[k].z), "=f"(a[k].w)
                         : "r"(src + in_off[k]));
        if (COPY) { /* the tile as it came */
#pragma unroll
            for (int k = 0; k < 4; k++)
                st_shared_v4(dst + out_off[k], a[k].x, a[k].y, a[k].z, a[k].w);
        } else { /* output row 4cb + m is column m of the 4×4 block */
            st_shared_v4(dst + out_off[0], a[0].x, a[1].x, a[2].x, a[3].x);
            st_shared_v4(dst + out_off[1], a[0].y, a[1].y, a[2].y, a[3].y);
            st_shared_v4(dst + out_off[2], a[0].z, a[1].z, a[2].z, a[3].z);
            st_shared_v4(dst + out_off[3], a[0].w, a[1].w, a[2].w, a[3].w);
        }
        fence_proxy_async_shared(); /* these generic-proxy writes, visible to the TMA store */
        __syncthreads();            /* every thread done: the input slot is free, the output tile complete */

        if (t == 0) {
            const unsigned tr = u / tiles_x, tc = u % tiles_x;
            if (COPY)
                tma_store_2d(&out_map, dst, (int)(tc * TT), (int)(tr * TT));
            else
                tma_store_2d(&out_map, dst, (int)(tr * TT), (int)(tc * TT)); /* out[tc·32..][tr·32..] */
            bulk_commit();
            const unsigned next = u + TMA_STAGES * gridDim.x;
            if (next < total) {
                mbar_arrive_expect_tx(bars + 8u * slot, TILE_BYTES);
                tma_load_2d(src, &in_map, bars + 8u * slot, (int)(next % tiles_x * TT), (int)(next / tiles_x * TT));
            }
        }
    }
    if (t == 0)
        bulk_wait<0>(); /* the last stores done before the block's shared memory goes */
}

/* ---- host side ---- */

extern "C" pl_kernel_needs pl_transpose_tma_needs(void)
{
    pl_kernel_needs n = {90, 0, PL_KNEED_TMA};
    return n;
}

extern "C" int pl_transpose_tma_fits(const float *in, const float *out, size_t rows, size_t cols)
{
    return rows > 0 && cols > 0 && rows % 4 == 0 && cols % 4 == 0 && rows < (1ull << 31) && cols < (1ull << 31) &&
           ((uintptr_t)in | (uintptr_t)out) % 16 == 0;
}

/* A rows × cols fp32 row-major matrix in 32×32 boxes with the 128-byte swizzle, described to TMA as a matrix of
 * rows × 4·cols bytes in boxes of 32 rows × 128 bytes (the lab's byte/bf16 encoder, kernels/gemm/tensor_map.c): a
 * tile copy moves bits, and the bytes outside the matrix read as zero, as fp32 zeros would. */
static cudaError_t tile_map(CUtensorMap *map, const float *p, size_t rows, size_t cols)
{
    return pl_tensor_map_2d(map, p, rows, 4 * (uint64_t)cols, 1, TT, 4 * TT);
}

extern "C" cudaError_t pl_transpose_tma_prepare(const float *in, float *out, size_t rows, size_t cols,
                                                pl_transpose_tma_plan *plan)
{
    if (!pl_transpose_tma_fits(in, out, rows, cols) ||
        pl_transpose_tiles(rows, cols, TT, &plan->tiles_x, &plan->tiles_y) != 0)
        return cudaErrorInvalidValue;
    cudaError_t e;
    if ((e = tile_map(&plan->in_map, in, rows, cols)) != cudaSuccess ||
        (e = tile_map(&plan->out_map, out, cols, rows)) != cudaSuccess ||
        (e = tile_map(&plan->copy_map, out, rows, cols)) != cudaSuccess ||
        (e = cudaFuncSetAttribute(transpose_tma_kernel<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, TMA_SMEM)) !=
            cudaSuccess ||
        (e = cudaFuncSetAttribute(transpose_tma_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, TMA_SMEM)) !=
            cudaSuccess)
        return e;
    int per_sm = 0, dev = 0, sms = 0;
    if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, transpose_tma_kernel<0>, TMA_THREADS, TMA_SMEM)) !=
            cudaSuccess ||
        (e = cudaGetDevice(&dev)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess)
        return e;
    if (per_sm < 1)
        return cudaErrorInvalidConfiguration;
    plan->blocks = (unsigned)(per_sm * sms);
    return cudaSuccess;
}

extern "C" cudaError_t pl_transpose_f32_tma(const pl_transpose_tma_plan *plan, int copy, cudaStream_t stream)
{
    const unsigned total = plan->tiles_x * plan->tiles_y;
    if (total == 0)
        return cudaErrorInvalidValue;
    const unsigned grid = plan->blocks < total ? plan->blocks : total;
    if (copy)
        transpose_tma_kernel<1>
            <<<grid, TMA_THREADS, TMA_SMEM, stream>>>(plan->in_map, plan->copy_map, plan->tiles_x, total);
    else
        transpose_tma_kernel<0>
            <<<grid, TMA_THREADS, TMA_SMEM, stream>>>(plan->in_map, plan->out_map, plan->tiles_x, total);
    return cudaGetLastError();
}
