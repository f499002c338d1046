/* The MoE layer's routing, grouping, gather and combine kernels (moe_ops.h). */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <limits.h>
#include <math.h>

#include "engine/moe_ops.h"

/* the fused router: a CTA a token, its experts shared by 16 warps (Qwen3's 128: 8 a warp), so the router's rows
 * stream from L2 in parallel rather than 32 one after another per warp */
#define ROUTER_WARPS 16

__device__ static float bf16_f(uint16_t b)
{
    return __uint_as_float((uint32_t)b << 16);
}

__device__ static uint16_t f_bf16(float f)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

/* One warp: the top_k of the `experts` logits in l (shared memory, consumed: the chosen ones become -inf), into ids
 * and weights (softmax over the chosen logits). A tie goes to the lower id; NaN logits are never chosen. */
__device__ static void warp_topk(float *l, int experts, int top_k, float *top, int *ids, float *weights)
{
    const int lane = threadIdx.x & 31;
    for (int i = 0; i < top_k; i++) {
        float best = -INFINITY;
        int bi = INT_MAX;
        for (int e = lane; e < experts; e += 32) {
            const float v = l[e];
            if (v > best || (v == best && e < bi))
                best = v, bi = e;
        }
        for (int o = 16; o > 0; o >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, best, o);
            const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (ov > best || (ov == best && oi < bi))
                best = ov, bi = oi;
        }
        __syncwarp(); /* every lane's reads of l before lane 0 writes the chosen one's -inf */
        if (lane == 0) {
            const int id = bi < experts ? bi : 0;
            top[i] = bi < experts ? best : NAN;
            ids[i] = id;
            l[id] = -INFINITY;
        }
        __syncwarp();
    }
    if (lane == 0) {
        float sum = 0.0f;
        for (int i = 0; i < top_k; i++)
            sum += expf(top[i] - top[0]);
        for (int i = 0; i < top_k; i++)
            weights[i] = expf(top[i] - top[0]) / sum;
    }
}

/* grid rows, one warp: a token's fp32 logits copied to shared memory, then its top-k. */
__global__ void topk_kernel(const float *logits, int experts, int top_k, int *ids, float *weights)
{
    extern __shared__ float sh[];
    float *l = sh, *top = sh + experts;
    const int t = blockIdx.x;
    for (int e = threadIdx.x; e < experts; e += 32)
        l[e] = logits[(size_t)t * experts + e];
    __syncwarp();
    warp_topk(l, experts, top_k, top, ids + (size_t)t * top_k, weights + (size_t)t * top_k);
}

/* grid rows, ROUTER_WARPS warps: warp w computes the logits of experts w, w + ROUTER_WARPS, ... (16-byte loads when
 * hidden % 8 == 0), then warp 0 takes the top-k. */
__global__ void router_topk_kernel(const uint16_t *xn, const uint16_t *router, int hidden, int experts, int top_k,
                                   int *ids, float *weights)
{
    extern __shared__ float sh[];
    float *l = sh, *top = sh + experts;
    const int t = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    const uint16_t *x = xn + (size_t)t * hidden;
    for (int e = warp; e < experts; e += ROUTER_WARPS) {
        const uint16_t *w = router + (size_t)e * hidden;
        float s = 0.0f;
        if (hidden % 8 == 0) {
            for (int c = lane * 8; c < hidden; c += 32 * 8) {
                const uint4 xv = *(const uint4 *)(x + c), wv = *(const uint4 *)(w + c);
                const uint16_t *xe = (const uint16_t *)&xv, *we = (const uint16_t *)&wv;
                for (int j = 0; j < 8; j++)
                    s += bf16_f(xe[j]) * bf16_f(we[j]);
            }
        } else {
            for (int c = lane; c < hidden; c += 32)
                s += bf16_f(x[c]) * bf16_f(w[c]);
        }
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0)
            l[e] = s;
    }
    __syncthreads();
    if (warp == 0)
        warp_topk(l, experts, top_k, top, ids + (size_t)t * top_k, weights + (size_t)t * top_k);
}

/* One CTA: the counts (shared atomics; their order does not matter), the offsets (a serial scan), then warp 0 walks
 * the slots 32 at a time in order, each lane's rank among the earlier lanes of the same expert placing its slot, so
 * the rows of an expert follow the slot order whatever the timing. */
__global__ void group_kernel(const int *ids, int slots, int top_k, int experts, int *counts, int *offsets,
                             int *row_of_slot, int *token_of_row)
{
    extern __shared__ int cursor[];
    for (int e = threadIdx.x; e < experts; e += blockDim.x)
        cursor[e] = 0;
    __syncthreads();
    for (int j = threadIdx.x; j < slots; j += blockDim.x)
        atomicAdd(&cursor[ids[j]], 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        int at = 0;
        for (int e = 0; e < experts; e++) {
            const int c = cursor[e];
            counts[e] = c;
            offsets[e] = at;
            cursor[e] = at;
            at += c;
        }
        offsets[experts] = at;
    }
    __syncthreads();
    if (threadIdx.x >= 32)
        return;
    const int lane = threadIdx.x;
    for (int base = 0; base < slots; base += 32) {
        const int j = base + lane, e = j < slots ? ids[j] : -1;
        int rank = 0, same = 0;
        for (int l = 0; l < 32; l++) {
            const int el = __shfl_sync(0xffffffffu, e, l);
            rank += el == e && l < lane;
            same += el == e;
        }
        int row = 0;
        if (e >= 0) {
            row = cursor[e] + rank;
            row_of_slot[j] = row;
            token_of_row[row] = j / top_k;
        }
        __syncwarp();
        if (e >= 0 && rank == 0)
            cursor[e] += same;
        __syncwarp();
    }
}

/* 8 elements a thread (16 bytes) when hidden % 8 == 0, else one. */
__global__ void gather_kernel(const uint16_t *x, const int *token_of_row, int grouped_rows, int hidden, uint16_t *xg)
{
    const int vec = hidden % 8 == 0 ? 8 : 1;
    const size_t per_row = (size_t)hidden / vec, n = (size_t)grouped_rows * per_row;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / per_row, c = (i % per_row) * vec;
        const uint16_t *src = x + (size_t)token_of_row[r] * hidden + c;
        uint16_t *dst = xg + r * hidden + c;
        if (vec == 8)
            *(uint4 *)dst = *(const uint4 *)src;
        else
            dst[0] = src[0];
    }
}

__global__ void combine_kernel(const uint16_t *y, const int *row_of_slot, const float *weights, int rows, int top_k,
                               int hidden, const uint16_t *residual, uint16_t *out)
{
    const size_t n = (size_t)rows * hidden;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t t = i / hidden, c = i % hidden;
        float acc = 0.0f;
        for (int k = 0; k < top_k; k++) {
            const size_t slot = t * top_k + k;
            acc += weights[slot] * bf16_f(y[(size_t)row_of_slot[slot] * hidden + c]);
        }
        if (residual)
            acc += bf16_f(residual[i]);
        out[i] = f_bf16(acc);
    }
}

static unsigned grid_for(size_t n)
{
    const size_t blocks = (n + 255) / 256;
    return (unsigned)(blocks < 4096 ? (blocks ? blocks : 1) : 4096);
}

static int routing_ok(int rows, int experts, int top_k)
{
    return rows >= 1 && rows <= (1 << 24) && experts >= 1 && experts <= PL_MOE_MAX_EXPERTS && top_k >= 1 &&
           top_k <= PL_MOE_MAX_TOP_K && top_k <= experts && (long long)rows * top_k <= 0x7fffffffLL;
}

static size_t topk_smem(int experts, int top_k)
{
    return ((size_t)experts + (size_t)top_k) * sizeof(float);
}

extern "C" cudaError_t pl_moe_topk(const float *logits, int rows, int experts, int top_k, int *ids, float *weights,
                                   cudaStream_t stream)
{
    if (!routing_ok(rows, experts, top_k) || !logits || !ids || !weights)
        return cudaErrorInvalidValue;
    topk_kernel<<<rows, 32, topk_smem(experts, top_k), stream>>>(logits, experts, top_k, ids, weights);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_moe_router_topk(const uint16_t *xn, const uint16_t *router, int rows, int hidden, int experts,
                                          int top_k, int *ids, float *weights, cudaStream_t stream)
{
    if (!routing_ok(rows, experts, top_k) || hidden < 1 || !xn || !router || !ids || !weights)
        return cudaErrorInvalidValue;
    router_topk_kernel<<<rows, ROUTER_WARPS * 32, topk_smem(experts, top_k), stream>>>(xn, router, hidden, experts,
                                                                                       top_k, ids, weights);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_moe_group(const int *ids, int rows, int top_k, int experts, int *counts, int *offsets,
                                    int *row_of_slot, int *token_of_row, cudaStream_t stream)
{
    if (!routing_ok(rows, experts, top_k) || !ids || !counts || !offsets || !row_of_slot || !token_of_row)
        return cudaErrorInvalidValue;
    group_kernel<<<1, 256, (size_t)experts * sizeof(int), stream>>>(ids, rows * top_k, top_k, experts, counts, offsets,
                                                                    row_of_slot, token_of_row);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_moe_gather(const uint16_t *x, const int *token_of_row, int grouped_rows, int hidden,
                                     uint16_t *xg, cudaStream_t stream)
{
    if (grouped_rows < 1 || hidden < 1 || !x || !token_of_row || !xg)
        return cudaErrorInvalidValue;
    const size_t work = (size_t)grouped_rows * (hidden % 8 == 0 ? hidden / 8 : hidden);
    gather_kernel<<<grid_for(work), 256, 0, stream>>>(x, token_of_row, grouped_rows, hidden, xg);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_moe_combine(const uint16_t *y, const int *row_of_slot, const float *weights, int rows,
                                      int top_k, int hidden, const uint16_t *residual, uint16_t *out,
                                      cudaStream_t stream)
{
    if (rows < 1 || top_k < 1 || hidden < 1 || !y || !row_of_slot || !weights || !out)
        return cudaErrorInvalidValue;
    combine_kernel<<<grid_for((size_t)rows * hidden), 256, 0, stream>>>(y, row_of_slot, weights, rows, top_k, hidden,
                                                                        residual, out);
    return cudaGetLastError();
}
