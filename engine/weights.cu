/* A dense layer's bf16 weights: sized from the memory plan's tensor list, checked against cudaMemGetInfo before the
 * one cudaMalloc, filled by a counter-hash kernel (weights.h). */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/weights.h"

/* splitmix64's finaliser: a well-mixed 64-bit value of (seed, tensor, element) */
__device__ static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

__global__ void fill_uniform_kernel(uint16_t *w, size_t n, uint64_t key, float lo, float hi)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float u = (float)(mix64(key + 0x9e3779b97f4a7c15ull * (i + 1)) >> 40) * (1.0f / 16777216.0f);
        const __nv_bfloat16 v = __float2bfloat16_rn(lo + (hi - lo) * u);
        w[i] = *(const uint16_t *)&v;
    }
}

cudaError_t pl_engine_fill_uniform(uint16_t *p, size_t n, uint64_t key, float lo, float hi, cudaStream_t stream)
{
    if (n == 0)
        return cudaErrorInvalidValue;
    const unsigned blocks = (unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
    fill_uniform_kernel<<<blocks, 256, 0, stream>>>(p, n, key, lo, hi);
    return cudaGetLastError();
}

static uint16_t **slot_of(pl_dense_weights *w, const char *name)
{
    static const char *const names[] = {"attn_norm", "qkv", "o", "mlp_norm", "gate_up", "down"};
    uint16_t **const slots[] = {&w->attn_norm, &w->qkv, &w->o, &w->mlp_norm, &w->gate_up, &w->down};
    for (int i = 0; i < 6; i++)
        if (strcmp(names[i], name) == 0)
            return slots[i];
    return NULL;
}

/* Places each tensor at a 256-byte aligned offset of the block; returns the block's bytes. */
static uint64_t layout(const pl_weight_tensor *t, int n, uint64_t *offsets)
{
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        offsets[i] = at;
        at += (pl_tensor_bytes(&t[i], PL_WEIGHTS_BF16, NULL) + 255) & ~(uint64_t)255;
    }
    return at;
}

static int fill(pl_dense_weights *w, const pl_weight_tensor *t, int n, const uint64_t *offsets, uint64_t seed,
                char *err, size_t errlen)
{
    for (int i = 0; i < n; i++) {
        uint16_t *p = (uint16_t *)((char *)w->block + offsets[i]);
        *slot_of(w, t[i].name) = p;
        const size_t elems = (size_t)t[i].rows * (size_t)t[i].cols;
        const float bound = t[i].quantized ? (float)(1.0 / sqrt((double)t[i].cols)) : 0.5f;
        const float lo = t[i].quantized ? -bound : 0.5f, hi = t[i].quantized ? bound : 1.5f;
        const uint64_t key = seed * 0x2545f4914f6cdd1dull + (uint64_t)(i + 1) * 0x632be59bd9b4e019ull;
        const cudaError_t e = pl_engine_fill_uniform(p, elems, key, lo, hi, 0);
        if (e != cudaSuccess) {
            snprintf(err, errlen, "filling %s's weight %s: %s", w->model->name, t[i].name, cudaGetErrorString(e));
            return -1;
        }
    }
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        snprintf(err, errlen, "filling %s's weights: %s", w->model->name, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

int pl_dense_weights_alloc(const pl_model_config *m, uint64_t seed, pl_dense_weights *w, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    w->model = m;
    if (pl_model_is_moe(m) || m->qk_norm) {
        snprintf(err, errlen, "%s is a %s model: the dense layer takes a dense model without qk-norm (e.g. tiny-dense)",
                 m->name, m->qk_norm ? "qk-norm" : "MoE");
        return -1;
    }
    pl_weight_tensor t[PL_MAX_LAYER_TENSORS];
    uint64_t offsets[PL_MAX_LAYER_TENSORS];
    const int n = pl_layer_tensors(m, t);
    const uint64_t bytes = layout(t, n, offsets);
    size_t free_b = 0, total_b = 0;
    cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cudaMemGetInfo: %s", cudaGetErrorString(e));
        return -1;
    }
    if (bytes > free_b) {
        snprintf(err, errlen,
                 "%s's layer needs %.3f GiB of bf16 weights, the GPU has %.3f GiB free: use a smaller model", m->name,
                 (double)bytes / PL_GIB, (double)free_b / PL_GIB);
        return -1;
    }
    e = cudaMalloc(&w->block, bytes);
    if (e != cudaSuccess) {
        w->block = NULL;
        snprintf(err, errlen, "cudaMalloc of %s's %llu weight bytes: %s", m->name, (unsigned long long)bytes,
                 cudaGetErrorString(e));
        return -1;
    }
    w->bytes = bytes;
    if (fill(w, t, n, offsets, seed, err, errlen) != 0) {
        pl_dense_weights_free(w);
        return -1;
    }
    return 0;
}

void pl_dense_weights_free(pl_dense_weights *w)
{
    if (w->block)
        cudaFree(w->block);
    memset(w, 0, sizeof *w);
}
