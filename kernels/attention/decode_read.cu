/* Read-only references of the paged decode (not attention): every 32-bit word of the K and V caches XORed into
 * one word, with nothing written but that word — the bandwidth a pure read of the same bytes reaches, which the
 * decode kernels (reading K and V once, writing almost nothing) can approach and a device-to-device copy (a read
 * and a write of every byte) cannot show.
 *
 *   stream:    the two caches as two flat arrays (or MLA's one latent cache: pl_mla_read), 16-byte loads, a
 *              grid-stride loop with eight loads a thread in flight: the pool read front to back, the best case of
 *              the DRAM.
 *   head rows: the access pattern of the per-head decode kernels (split_kv_mma, balanced_mma): the CTAs of kv
 *              head h read only h's 256-byte rows (head_dim 128) out of each token's rows of all the kv heads,
 *              K and V of the same tokens together; the CTAs of the kv heads of one block of tokens side by side
 *              in the grid, as the balanced kernels place them; with blocks of hb kv heads, rows_deep's pattern
 *              (hb · 256 contiguous bytes of each token). The difference between a pattern and the stream is what
 *              it costs the DRAM, whatever the arithmetic. */
#include "attention/attention.h"
#include "attention/mla.h"
#include "common/ld_global.cuh"

#define DR_READ_THREADS 256
#define DR_READ_UNROLL  4

__device__ __forceinline__ uint32_t dr_xor4(uint4 v)
{
    return v.x ^ v.y ^ v.z ^ v.w;
}

__device__ __forceinline__ void dr_flush(uint32_t acc, uint32_t *out)
{
    acc = __reduce_xor_sync(0xffffffffu, acc);
    if ((threadIdx.x & 31) == 0)
        atomicXor(out, acc);
}

/* nk, nv: 16-byte words of each array (nv 0: k alone). */
__global__ void __launch_bounds__(DR_READ_THREADS)
    decode_read_stream_kernel(const uint4 *k, long long nk, const uint4 *v, long long nv, uint32_t *out)
{
    const long long stride = (long long)gridDim.x * DR_READ_THREADS;
    uint32_t acc = 0;
    for (int which = 0; which < 2; which++) {
        const uint4 *a = which ? v : k;
        const long long n16 = which ? nv : nk;
        long long i = (long long)blockIdx.x * DR_READ_THREADS + threadIdx.x;
        for (; i + (2 * DR_READ_UNROLL - 1) * stride < n16; i += 2 * DR_READ_UNROLL * stride) {
            uint4 r[2 * DR_READ_UNROLL];
#pragma unroll
            for (int u = 0; u < 2 * DR_READ_UNROLL; u++)
                r[u] = ld_stream16(a + i + u * stride);
#pragma unroll
            for (int u = 0; u < 2 * DR_READ_UNROLL; u++)
                acc ^= dr_xor4(r[u]);
        }
        for (; i < n16; i += stride)
            acc ^= dr_xor4(ld_stream16(a + i));
    }
    dr_flush(acc, out);
}

/* rows: tokens in the pool; each token's row holds `blocks` pieces of rw 16-byte words (a block of kv heads each,
 * rw = heads a block · head_dim / 8). CTA c: block h = c % blocks, tokens [blk·rows/nblk, (blk+1)·rows/nblk) with
 * blk = c / blocks, nblk = gridDim.x / blocks. */
__global__ void __launch_bounds__(DR_READ_THREADS)
    decode_read_rows_kernel(const uint4 *k, const uint4 *v, long long rows, int blocks, int rw, uint32_t *out)
{
    const int h = blockIdx.x % blocks, blk = blockIdx.x / blocks, nblk = gridDim.x / blocks;
    const long long r0 = blk * rows / nblk, r1 = (blk + 1) * rows / nblk;
    const int per_pass = DR_READ_THREADS / rw, ch = threadIdx.x % rw;
    long long r = r0 + threadIdx.x / rw;
    uint32_t acc = 0;
    if (threadIdx.x >= per_pass * rw) /* rw not dividing the CTA: the spare threads read nothing */
        r = r1;
    for (; r + (DR_READ_UNROLL - 1) * per_pass < r1; r += DR_READ_UNROLL * per_pass) {
        uint4 a[DR_READ_UNROLL], b[DR_READ_UNROLL];
#pragma unroll
        for (int u = 0; u < DR_READ_UNROLL; u++) {
            const long long w = ((r + u * per_pass) * blocks + h) * rw + ch;
            a[u] = ld_stream16(k + w);
            b[u] = ld_stream16(v + w);
        }
#pragma unroll
        for (int u = 0; u < DR_READ_UNROLL; u++)
            acc ^= dr_xor4(a[u]) ^ dr_xor4(b[u]);
    }
    for (; r < r1; r += per_pass) {
        const long long w = (r * blocks + h) * rw + ch;
        acc ^= dr_xor4(ld_stream16(k + w)) ^ dr_xor4(ld_stream16(v + w));
    }
    dr_flush(acc, out);
}

extern "C" cudaError_t pl_decode_read(const pl_decode_problem *p, int pages, int hb, int ctas, uint32_t *out,
                                      cudaStream_t stream)
{
    if (!p || pages < 1 || ctas < 1 || !out || (p->head_dim != 64 && p->head_dim != 128) || hb < 0 ||
        (hb > 0 && (p->kv_heads % hb != 0 || ctas < p->kv_heads / hb || hb * p->head_dim / 8 > DR_READ_THREADS)))
        return cudaErrorInvalidValue;
    cudaError_t e = cudaMemsetAsync(out, 0, sizeof *out, stream);
    if (e != cudaSuccess)
        return e;
    const long long rows = (long long)pages * p->page_size;
    const uint4 *k = reinterpret_cast<const uint4 *>(p->k_cache), *v = reinterpret_cast<const uint4 *>(p->v_cache);
    if (hb > 0) {
        const int blocks = p->kv_heads / hb;
        decode_read_rows_kernel<<<(unsigned)(ctas / blocks * blocks), DR_READ_THREADS, 0, stream>>>(
            k, v, rows, blocks, hb * p->head_dim / 8, out);
    } else {
        const long long n16 = rows * p->kv_heads * p->head_dim / 8;
        decode_read_stream_kernel<<<(unsigned)ctas, DR_READ_THREADS, 0, stream>>>(k, n16, v, n16, out);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t pl_mla_read(const pl_mla_problem *p, long long rows, int ctas, uint32_t *out,
                                   cudaStream_t stream)
{
    if (!p || !p->kv_cache || rows < 1 || ctas < 1 || !out)
        return cudaErrorInvalidValue;
    cudaError_t e = cudaMemsetAsync(out, 0, sizeof *out, stream);
    if (e != cudaSuccess)
        return e;
    const long long n16 = rows * PL_MLA_D_QK / 8; /* a row is 72 16-byte words */
    decode_read_stream_kernel<<<(unsigned)ctas, DR_READ_THREADS, 0, stream>>>(
        reinterpret_cast<const uint4 *>(p->kv_cache), n16, NULL, 0, out);
    return cudaGetLastError();
}
