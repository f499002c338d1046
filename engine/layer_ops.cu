/* The engine's element-wise kernels (layer_ops.h). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>

#include "attention/kv_fp8.h"
#include "engine/layer_ops.h"

__device__ static float bf16_f(uint16_t b)
{
    return __uint_as_float((uint32_t)b << 16);
}

__device__ static uint16_t f_bf16(float f)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

/* Pair (i, i + hd/2) of src rotated by the angle of `pos`, rounded to bf16: *lo, *hi. */
__device__ static void rope_pair_bf16(const uint16_t *src, int i, int half, int pos, double log_theta, uint16_t *lo,
                                      uint16_t *hi)
{
    const double inv_freq = exp(-((double)i / half) * log_theta);
    float s, c;
    sincosf((float)((double)pos * inv_freq), &s, &c);
    const float x1 = bf16_f(src[i]), x2 = bf16_f(src[i + half]);
    *lo = f_bf16(x1 * c - x2 * s);
    *hi = f_bf16(x2 * c + x1 * s);
}

/* Pair (i, i + hd/2) of src rotated by the angle of `pos` into dst. */
__device__ static void rope_pair(const uint16_t *src, uint16_t *dst, int i, int half, int pos, double log_theta)
{
    rope_pair_bf16(src, i, half, pos, log_theta, &dst[i], &dst[i + half]);
}

/* ---- the FP8 cache's writes (attention/kv_fp8.h: e4m3 rows, a power-of-two scale per (token, kv head) row) ---- */

/* The largest v (>= 0; NaN counts as 0) over the block's threads, every thread getting it: the bits of non-negative
 * floats order as the floats, so a shared atomicMax on them finds it (any block size). */
__device__ static float block_max(float v)
{
    __shared__ unsigned most;
    if (threadIdx.x == 0)
        most = 0u;
    __syncthreads();
    atomicMax(&most, __float_as_uint(isnan(v) ? 0.0f : v));
    __syncthreads();
    return __uint_as_float(most);
}

/* One cache row of head_dim = 2·half values, thread i holding elements i and i + half (bf16 bits lo, hi), written in
 * e4m3 to row8 with its scale (thread 0) into *scale; out (when not NULL) gets the dequantized row, what the cache
 * now means (a prefill's attention reads it). Every thread of the block calls it (a barrier inside). */
__device__ static void fp8_store_pair(uint16_t lo, uint16_t hi, int i, int half, uint8_t *row8, float *scale,
                                      uint16_t *out)
{
    const float a = bf16_f(lo), b = bf16_f(hi);
    const int e = pl_kv_fp8_scale_exp(block_max(fmaxf(fabsf(a), fabsf(b))));
    const float inv = ldexpf(1.0f, -e), s = ldexpf(1.0f, e);
    const __nv_fp8_storage_t qa = __nv_cvt_float_to_fp8(a * inv, __NV_SATFINITE, __NV_E4M3);
    const __nv_fp8_storage_t qb = __nv_cvt_float_to_fp8(b * inv, __NV_SATFINITE, __NV_E4M3);
    row8[i] = qa;
    row8[i + half] = qb;
    if (threadIdx.x == 0)
        *scale = s;
    if (out) {
        out[i] = f_bf16(__half2float(__half(__nv_cvt_fp8_to_halfraw(qa, __NV_E4M3))) * s);
        out[i + half] = f_bf16(__half2float(__half(__nv_cvt_fp8_to_halfraw(qb, __NV_E4M3))) * s);
    }
}

/* rope_kv_write_kernel's FP8 form: q as there; a key head's RoPE (rounded to bf16, as the bf16 cache stores it) and a
 * value head's row quantized into the e4m3 pools with their scales; k_out and v_out get the dequantized rows. */
__global__ void rope_kv_write_fp8_kernel(const uint16_t *qkv, int heads, int kv_heads, int head_dim, double log_theta,
                                         const int *positions, const int64_t *slots, uint16_t *q, uint8_t *k8,
                                         uint8_t *v8, float *k_scale, float *v_scale, uint16_t *k_out, uint16_t *v_out)
{
    const int r = blockIdx.x, y = blockIdx.y, i = threadIdx.x, half = head_dim / 2;
    const uint16_t *src = qkv + ((size_t)r * (heads + 2 * kv_heads) + y) * head_dim;
    if (y < heads) {
        rope_pair(src, q + ((size_t)r * heads + y) * head_dim, i, half, positions[r], log_theta);
        return;
    }
    const int is_k = y < heads + kv_heads, g = is_k ? y - heads : y - heads - kv_heads;
    const size_t row = (size_t)slots[r] * kv_heads + g;
    uint16_t lo = src[i], hi = src[i + half];
    if (is_k)
        rope_pair_bf16(src, i, half, positions[r], log_theta, &lo, &hi);
    uint16_t *out = is_k ? k_out : v_out;
    fp8_store_pair(lo, hi, i, half, (is_k ? k8 : v8) + row * head_dim, (is_k ? k_scale : v_scale) + row,
                   out ? out + ((size_t)r * kv_heads + g) * head_dim : NULL);
}

/* kv_write_kernel's FP8 form, head_dim / 2 threads: a key head's row of k or a value head's row of qkv quantized into
 * its cache slot; k_out / v_out (k_out may be k itself) the dequantized rows. */
__global__ void kv_write_fp8_kernel(const uint16_t *k, const uint16_t *qkv, int heads, int kv_heads, int head_dim,
                                    const int64_t *slots, uint8_t *k8, uint8_t *v8, float *k_scale, float *v_scale,
                                    uint16_t *k_out, uint16_t *v_out)
{
    const int r = blockIdx.x, y = blockIdx.y, g = y % kv_heads, i = threadIdx.x, half = head_dim / 2;
    const int is_k = y < kv_heads;
    const uint16_t *src = is_k ? k + ((size_t)r * kv_heads + g) * head_dim
                               : qkv + ((size_t)r * (heads + 2 * kv_heads) + heads + kv_heads + g) * head_dim;
    const size_t row = (size_t)slots[r] * kv_heads + g;
    uint16_t *out = is_k ? k_out : v_out;
    fp8_store_pair(src[i], src[i + half], i, half, (is_k ? k8 : v8) + row * head_dim, (is_k ? k_scale : v_scale) + row,
                   out ? out + ((size_t)r * kv_heads + g) * head_dim : NULL);
}

/* grid (rows, heads + 2·kv_heads), head_dim / 2 threads: a query head (into q), a key head (into the K pool and
 * k_out) or a value head (into the V pool and v_out). */
__global__ void rope_kv_write_kernel(const uint16_t *qkv, int heads, int kv_heads, int head_dim, double log_theta,
                                     const int *positions, const int64_t *slots, uint16_t *q, uint16_t *k_cache,
                                     uint16_t *v_cache, uint16_t *k_out, uint16_t *v_out)
{
    const int r = blockIdx.x, y = blockIdx.y, i = threadIdx.x, half = head_dim / 2;
    const uint16_t *src = qkv + ((size_t)r * (heads + 2 * kv_heads) + y) * head_dim;
    if (y < heads) {
        rope_pair(src, q + ((size_t)r * heads + y) * head_dim, i, half, positions[r], log_theta);
        return;
    }
    const int g = y < heads + kv_heads ? y - heads : y - heads - kv_heads;
    uint16_t *cache = (y < heads + kv_heads ? k_cache : v_cache) + ((size_t)slots[r] * kv_heads + g) * head_dim;
    if (y < heads + kv_heads)
        rope_pair(src, cache, i, half, positions[r], log_theta);
    else
        cache[i] = src[i], cache[i + half] = src[i + half];
    uint16_t *out = y < heads + kv_heads ? k_out : v_out;
    if (out) {
        out += ((size_t)r * kv_heads + g) * head_dim;
        out[i] = cache[i], out[i + half] = cache[i + half];
    }
}

/* grid (rows, heads + kv_heads): RoPE of a query head into q or a key head into k. */
__global__ void rope_kernel(const uint16_t *qkv, int heads, int kv_heads, int head_dim, double log_theta,
                            const int *positions, uint16_t *q, uint16_t *k)
{
    const int r = blockIdx.x, y = blockIdx.y, half = head_dim / 2;
    const uint16_t *src = qkv + ((size_t)r * (heads + 2 * kv_heads) + y) * head_dim;
    uint16_t *dst =
        y < heads ? q + ((size_t)r * heads + y) * head_dim : k + ((size_t)r * kv_heads + y - heads) * head_dim;
    rope_pair(src, dst, threadIdx.x, half, positions[r], log_theta);
}

/* grid (rows, 2·kv_heads): a key head's row of k or a value head's row of qkv copied to its cache slot. */
__global__ void kv_write_kernel(const uint16_t *k, const uint16_t *qkv, int heads, int kv_heads, int head_dim,
                                const int64_t *slots, uint16_t *k_cache, uint16_t *v_cache, uint16_t *v_out)
{
    const int r = blockIdx.x, y = blockIdx.y, g = y % kv_heads;
    const uint16_t *src = y < kv_heads ? k + ((size_t)r * kv_heads + g) * head_dim
                                       : qkv + ((size_t)r * (heads + 2 * kv_heads) + heads + kv_heads + g) * head_dim;
    uint16_t *dst = (y < kv_heads ? k_cache : v_cache) + ((size_t)slots[r] * kv_heads + g) * head_dim;
    uint16_t *out = y >= kv_heads && v_out ? v_out + ((size_t)r * kv_heads + g) * head_dim : NULL;
    for (int i = threadIdx.x; i < head_dim; i += blockDim.x) {
        dst[i] = src[i];
        if (out)
            out[i] = src[i];
    }
}

/* grid (rows, heads + kv_heads), a warp: one query or key head of qkv normalised in place. */
__global__ void qk_norm_kernel(uint16_t *qkv, int heads, int kv_heads, int head_dim, const uint16_t *q_norm,
                               const uint16_t *k_norm, float eps)
{
    const int r = blockIdx.x, y = blockIdx.y, lane = threadIdx.x;
    uint16_t *h = qkv + ((size_t)r * (heads + 2 * kv_heads) + y) * head_dim;
    const uint16_t *w = y < heads ? q_norm : k_norm;
    float ss = 0.0f;
    for (int i = lane; i < head_dim; i += 32)
        ss += bf16_f(h[i]) * bf16_f(h[i]);
    for (int o = 16; o > 0; o >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    const float inv = rsqrtf(ss / (float)head_dim + eps);
    for (int i = lane; i < head_dim; i += 32)
        h[i] = f_bf16(bf16_f(h[i]) * inv * bf16_f(w[i]));
}

/* 8 outputs a thread (16-byte loads and stores) when width % 8 == 0, else one. */
__global__ void swiglu_kernel(const uint16_t *gu, uint16_t *out, int rows, int width)
{
    const int vec = width % 8 == 0 ? 8 : 1;
    const size_t per_row = (size_t)width / vec, n = (size_t)rows * per_row;
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < n; t += (size_t)gridDim.x * blockDim.x) {
        const size_t r = t / per_row, c = (t % per_row) * vec;
        const uint16_t *g = gu + r * 2 * width + c, *u = g + width;
        uint16_t *o = out + r * width + c;
        if (vec == 8) {
            const uint4 gv = *(const uint4 *)g, uv = *(const uint4 *)u;
            const uint16_t *ge = (const uint16_t *)&gv, *ue = (const uint16_t *)&uv;
            uint4 ov;
            uint16_t *oe = (uint16_t *)&ov;
            for (int e = 0; e < 8; e++) {
                const float x = bf16_f(ge[e]);
                oe[e] = f_bf16(x / (1.0f + expf(-x)) * bf16_f(ue[e]));
            }
            *(uint4 *)o = ov;
        } else {
            const float x = bf16_f(g[0]);
            o[0] = f_bf16(x / (1.0f + expf(-x)) * bf16_f(u[0]));
        }
    }
}

__global__ void residual_add_kernel(const uint16_t *x, const uint16_t *y, uint16_t *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = f_bf16(bf16_f(x[i]) + bf16_f(y[i]));
}

static unsigned grid_for(size_t n)
{
    const size_t blocks = (n + 255) / 256;
    return (unsigned)(blocks < 4096 ? (blocks ? blocks : 1) : 4096);
}

static int heads_ok(int rows, int heads, int kv_heads, int head_dim, double theta)
{
    return rows >= 1 && heads >= 1 && kv_heads >= 1 && head_dim >= 2 && head_dim % 2 == 0 && head_dim <= 2048 &&
           theta > 1.0 && heads + 2 * kv_heads <= 65535;
}

extern "C" cudaError_t pl_engine_rope_kv_write(const uint16_t *qkv, int rows, int heads, int kv_heads, int head_dim,
                                               double theta, const int *positions, const int64_t *slots, uint16_t *q,
                                               uint16_t *k_cache, uint16_t *v_cache, uint16_t *k_out, uint16_t *v_out,
                                               cudaStream_t stream)
{
    if (!heads_ok(rows, heads, kv_heads, head_dim, theta) || (!k_out) != (!v_out))
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)rows, (unsigned)(heads + 2 * kv_heads));
    rope_kv_write_kernel<<<grid, head_dim / 2, 0, stream>>>(qkv, heads, kv_heads, head_dim, log(theta), positions,
                                                            slots, q, k_cache, v_cache, k_out, v_out);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_engine_rope_kv_write_fp8(const uint16_t *qkv, int rows, int heads, int kv_heads, int head_dim,
                                                   double theta, const int *positions, const int64_t *slots,
                                                   uint16_t *q, uint8_t *k8, uint8_t *v8, float *k_scale,
                                                   float *v_scale, uint16_t *k_out, uint16_t *v_out,
                                                   cudaStream_t stream)
{
    if (!heads_ok(rows, heads, kv_heads, head_dim, theta) || (!k_out) != (!v_out) || !k8 || !v8 || !k_scale || !v_scale)
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)rows, (unsigned)(heads + 2 * kv_heads));
    rope_kv_write_fp8_kernel<<<grid, head_dim / 2, 0, stream>>>(qkv, heads, kv_heads, head_dim, log(theta), positions,
                                                                slots, q, k8, v8, k_scale, v_scale, k_out, v_out);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_engine_kv_write_fp8(const uint16_t *k, const uint16_t *qkv, int rows, int heads, int kv_heads,
                                              int head_dim, const int64_t *slots, uint8_t *k8, uint8_t *v8,
                                              float *k_scale, float *v_scale, uint16_t *k_out, uint16_t *v_out,
                                              cudaStream_t stream)
{
    if (!heads_ok(rows, heads, kv_heads, head_dim, 2.0) || !k8 || !v8 || !k_scale || !v_scale)
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)rows, (unsigned)(2 * kv_heads));
    kv_write_fp8_kernel<<<grid, head_dim / 2, 0, stream>>>(k, qkv, heads, kv_heads, head_dim, slots, k8, v8, k_scale,
                                                           v_scale, k_out, v_out);
    return cudaGetLastError();
}

/* A block a cache row: a bf16 pool's row quantized into the e4m3 pool and its scale. */
__global__ void kv_quantize_fp8_kernel(const uint16_t *pool, int head_dim, uint8_t *q, float *scale)
{
    const size_t row = blockIdx.x;
    const int half = head_dim / 2, i = threadIdx.x;
    const uint16_t *src = pool + row * head_dim;
    fp8_store_pair(src[i], src[i + half], i, half, q + row * head_dim, scale + row, NULL);
}

extern "C" cudaError_t pl_engine_kv_quantize_fp8(const uint16_t *pool, size_t slots, int kv_heads, int head_dim,
                                                 uint8_t *q, float *scale, cudaStream_t stream)
{
    const size_t rows = slots * (size_t)(kv_heads > 0 ? kv_heads : 0);
    if (rows < 1 || rows > 0x7fffffffu || head_dim < 2 || head_dim % 2 != 0 || head_dim > 2048 || !pool || !q || !scale)
        return cudaErrorInvalidValue;
    kv_quantize_fp8_kernel<<<(unsigned)rows, head_dim / 2, 0, stream>>>(pool, head_dim, q, scale);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_engine_rope(const uint16_t *qkv, int rows, int heads, int kv_heads, int head_dim,
                                      double theta, const int *positions, uint16_t *q, uint16_t *k, cudaStream_t stream)
{
    if (!heads_ok(rows, heads, kv_heads, head_dim, theta))
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)rows, (unsigned)(heads + kv_heads));
    rope_kernel<<<grid, head_dim / 2, 0, stream>>>(qkv, heads, kv_heads, head_dim, log(theta), positions, q, k);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_engine_kv_write(const uint16_t *k, const uint16_t *qkv, int rows, int heads, int kv_heads,
                                          int head_dim, const int64_t *slots, uint16_t *k_cache, uint16_t *v_cache,
                                          uint16_t *v_out, cudaStream_t stream)
{
    if (!heads_ok(rows, heads, kv_heads, head_dim, 2.0))
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)rows, (unsigned)(2 * kv_heads));
    const unsigned threads = head_dim < 128 ? (unsigned)head_dim : 128u;
    kv_write_kernel<<<grid, threads, 0, stream>>>(k, qkv, heads, kv_heads, head_dim, slots, k_cache, v_cache, v_out);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_engine_qk_norm(uint16_t *qkv, int rows, int heads, int kv_heads, int head_dim,
                                         const uint16_t *q_norm, const uint16_t *k_norm, double eps,
                                         cudaStream_t stream)
{
    if (!heads_ok(rows, heads, kv_heads, head_dim, 2.0) || !q_norm || !k_norm || !(eps > 0.0))
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)rows, (unsigned)(heads + kv_heads));
    qk_norm_kernel<<<grid, 32, 0, stream>>>(qkv, heads, kv_heads, head_dim, q_norm, k_norm, (float)eps);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_engine_swiglu(const uint16_t *gu, uint16_t *out, int rows, int width, cudaStream_t stream)
{
    if (rows < 1 || width < 1)
        return cudaErrorInvalidValue;
    const size_t work = (size_t)rows * (width % 8 == 0 ? width / 8 : width);
    swiglu_kernel<<<grid_for(work), 256, 0, stream>>>(gu, out, rows, width);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_engine_residual_add(const uint16_t *x, const uint16_t *y, uint16_t *out, size_t n,
                                              cudaStream_t stream)
{
    if (n == 0)
        return cudaErrorInvalidValue;
    residual_add_kernel<<<grid_for(n), 256, 0, stream>>>(x, y, out, n);
    return cudaGetLastError();
}
