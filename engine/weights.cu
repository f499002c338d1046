/* A dense or MoE layer's bf16 weights: sized from the memory plan's tensor list, checked against cudaMemGetInfo before
 * the one cudaMalloc, filled by a counter-hash kernel (weights.h). */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/mix64.h"
#include "engine/weights.h"

__global__ void fill_uniform_kernel(uint16_t *w, size_t n, uint64_t key, float lo, float hi)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float u = (float)(pl_mix64(key + 0x9e3779b97f4a7c15ull * (i + 1)) >> 40) * (1.0f / 16777216.0f);
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

/* Where each tensor of the layer goes: its name in pl_layer_tensors and the struct's pointer for it. */
typedef struct named_slot {
    const char *name;
    uint16_t **slot;
} named_slot;

/* The weights being made: the struct's block and bytes, its pointers by name. */
typedef struct layer_alloc {
    const pl_model_config *m;
    const named_slot *slots;
    int nslots;
    void **block;
    uint64_t *bytes;
} layer_alloc;

static uint16_t **slot_of(const layer_alloc *a, const char *name)
{
    for (int i = 0; i < a->nslots; i++)
        if (strcmp(a->slots[i].name, name) == 0)
            return a->slots[i].slot;
    return NULL;
}

static uint64_t tensor_bytes(const pl_weight_tensor *t)
{
    return pl_tensor_bytes(t, PL_WEIGHTS_BF16, NULL) * (uint64_t)t->copies;
}

/* Places each tensor (all its copies) at a 256-byte aligned offset of the block; returns the block's bytes. */
static uint64_t layout(const pl_weight_tensor *t, int n, uint64_t *offsets)
{
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        offsets[i] = at;
        at += (tensor_bytes(&t[i]) + 255) & ~(uint64_t)255;
    }
    return at;
}

static int is_norm(const pl_weight_tensor *t)
{
    const size_t len = strlen(t->name);
    return len >= 4 && strcmp(t->name + len - 4, "norm") == 0;
}

static int fill(const layer_alloc *a, const pl_weight_tensor *t, int n, const uint64_t *offsets, uint64_t seed,
                char *err, size_t errlen)
{
    for (int i = 0; i < n; i++) {
        uint16_t *p = (uint16_t *)((char *)*a->block + offsets[i]);
        *slot_of(a, t[i].name) = p;
        const size_t elems = (size_t)t[i].rows * (size_t)t[i].cols * (size_t)t[i].copies;
        const float bound = (float)(1.0 / sqrt((double)t[i].cols));
        const float lo = is_norm(&t[i]) ? 0.5f : -bound, hi = is_norm(&t[i]) ? 1.5f : bound;
        const uint64_t key = seed * 0x2545f4914f6cdd1dull + (uint64_t)(i + 1) * 0x632be59bd9b4e019ull;
        const cudaError_t e = pl_engine_fill_uniform(p, elems, key, lo, hi, 0);
        if (e != cudaSuccess) {
            snprintf(err, errlen, "filling %s's weight %s: %s", a->m->name, t[i].name, cudaGetErrorString(e));
            return -1;
        }
    }
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        snprintf(err, errlen, "filling %s's weights: %s", a->m->name, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

static void block_free(void **block)
{
    if (*block)
        cudaFree(*block);
    *block = NULL;
}

/* Sizes the layer's tensors, checks them against the free memory, allocates the one block and fills it. */
static int layer_alloc_fill(const layer_alloc *a, uint64_t seed, char *err, size_t errlen)
{
    const pl_model_config *m = a->m;
    pl_weight_tensor t[PL_MAX_LAYER_TENSORS];
    uint64_t offsets[PL_MAX_LAYER_TENSORS];
    const int n = pl_layer_tensors(m, t);
    for (int i = 0; i < n; i++)
        if (!slot_of(a, t[i].name)) {
            snprintf(err, errlen, "%s's weight %s has no place in the layer's weights", m->name, t[i].name);
            return -1;
        }
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
    e = cudaMalloc(a->block, bytes);
    if (e != cudaSuccess) {
        *a->block = NULL;
        snprintf(err, errlen, "cudaMalloc of %s's %llu weight bytes: %s", m->name, (unsigned long long)bytes,
                 cudaGetErrorString(e));
        return -1;
    }
    *a->bytes = bytes;
    /* the 256-byte alignment leaves gaps between tensors: zeroed, so that a floor reading the whole block reads
     * defined bytes */
    e = cudaMemsetAsync(*a->block, 0, bytes, 0);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "clearing %s's weight block: %s", m->name, cudaGetErrorString(e));
        block_free(a->block);
        return -1;
    }
    if (fill(a, t, n, offsets, seed, err, errlen) != 0) {
        block_free(a->block);
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
    const named_slot slots[] = {{"attn_norm", &w->attn_norm}, {"qkv", &w->qkv},         {"o", &w->o},
                                {"mlp_norm", &w->mlp_norm},   {"gate_up", &w->gate_up}, {"down", &w->down}};
    const layer_alloc a = {m, slots, 6, &w->block, &w->bytes};
    if (layer_alloc_fill(&a, seed, err, errlen) != 0) {
        pl_dense_weights_free(w);
        return -1;
    }
    return 0;
}

int pl_moe_weights_alloc(const pl_model_config *m, uint64_t seed, pl_moe_weights *w, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    w->model = m;
    if (!pl_model_is_moe(m)) {
        snprintf(err, errlen, "%s is a dense model: the MoE layer takes a MoE model (e.g. tiny-moe)", m->name);
        return -1;
    }
    const named_slot slots[] = {{"attn_norm", &w->attn_norm},
                                {"qkv", &w->qkv},
                                {"q_norm", &w->q_norm},
                                {"k_norm", &w->k_norm},
                                {"o", &w->o},
                                {"mlp_norm", &w->mlp_norm},
                                {"router", &w->router},
                                {"expert_gate_up", &w->gate_up},
                                {"expert_down", &w->down}};
    const layer_alloc a = {m, slots, 9, &w->block, &w->bytes};
    if (layer_alloc_fill(&a, seed, err, errlen) != 0) {
        pl_moe_weights_free(w);
        return -1;
    }
    return 0;
}

void pl_moe_weights_free(pl_moe_weights *w)
{
    block_free(&w->block);
    memset(w, 0, sizeof *w);
}

void pl_dense_weights_free(pl_dense_weights *w)
{
    block_free(&w->block);
    for (int i = 0; i < 2; i++)
        block_free(&w->fp8[i].block);
    memset(w, 0, sizeof *w);
}
