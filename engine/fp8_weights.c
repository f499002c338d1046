/* The FP8 form of a dense layer's GEMM weights (weights.h, pl_dense_weights_add_fp8): one allocation holding each
 * weight's e4m3 bytes and scales, quantized on the device from the bf16 weights by the library's quantizers. */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine/weights.h"

/* One GEMM weight of the layer: its bf16 source [n][k] and its FP8 form. */
typedef struct fp8_part {
    const uint16_t *src;
    int n, k;
    pl_fp8_linear *dst;
} fp8_part;

static uint64_t align256(uint64_t n)
{
    return (n + 255) & ~(uint64_t)255;
}

/* Floats of a weight's scales: one (tensor) or its 128×128 blocks at the ld gemm/fp8.h defines (block). */
static uint64_t scale_floats(const fp8_part *p, pl_fp8_scaling s)
{
    return s == PL_FP8_SCALING_TENSOR ? 1 : (uint64_t)pl_fp8_scale_b_count(p->n, p->k);
}

/* Places every part (bytes, then scales) from offset 0 and one amax word after them; returns the bytes. With base,
 * sets the parts' pointers and *amax. */
static uint64_t place(fp8_part *parts, int n, pl_fp8_scaling s, char *base, unsigned **amax)
{
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        if (base) {
            parts[i].dst->q = (uint8_t *)(base + at);
            parts[i].dst->scale = (float *)(base + at + align256((uint64_t)parts[i].n * (uint64_t)parts[i].k));
        }
        at += align256((uint64_t)parts[i].n * (uint64_t)parts[i].k) + align256(4 * scale_floats(&parts[i], s));
    }
    if (base)
        *amax = (unsigned *)(base + at);
    return at + 256;
}

static cudaError_t quantize(const fp8_part *p, pl_fp8_scaling s, unsigned *amax)
{
    if (s == PL_FP8_SCALING_TENSOR)
        return pl_fp8_quantize_tensor(p->src, (size_t)p->n * (size_t)p->k, p->dst->q, p->dst->scale, amax, 0);
    return pl_fp8_quantize_blocks(p->src, 1, p->n, p->k, p->dst->q, p->dst->scale, pl_fp8_scale_b_ld(p->k), 0);
}

static int cuda_fail(const char *what, const pl_dense_weights *w, cudaError_t e, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s of %s's FP8 weights: %s", what, w->model->name, cudaGetErrorString(e));
    return -1;
}

/* Allocates and fills the block of `bytes` (zeroed first: the scales' padding columns are defined). */
static int make(pl_dense_weights *w, pl_fp8_weights *f, fp8_part *parts, int n, pl_fp8_scaling s, uint64_t bytes,
                char *err, size_t errlen)
{
    cudaError_t e = cudaMalloc(&f->block, bytes);
    if (e != cudaSuccess) {
        f->block = NULL;
        return cuda_fail("cudaMalloc", w, e, err, errlen);
    }
    f->bytes = bytes;
    unsigned *amax = NULL;
    place(parts, n, s, (char *)f->block, &amax);
    e = cudaMemsetAsync(f->block, 0, bytes, 0);
    for (int i = 0; i < n && e == cudaSuccess; i++)
        e = quantize(&parts[i], s, amax);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        cudaFree(f->block);
        memset(f, 0, sizeof *f);
        return cuda_fail("quantizing", w, e, err, errlen);
    }
    return 0;
}

int pl_dense_weights_add_fp8(pl_dense_weights *w, pl_fp8_scaling scaling, char *err, size_t errlen)
{
    if (!w || !w->block || !w->model) {
        snprintf(err, errlen, "pl_dense_weights_add_fp8: the bf16 weights are not allocated (pl_dense_weights_alloc)");
        return -1;
    }
    if (scaling != PL_FP8_SCALING_TENSOR && scaling != PL_FP8_SCALING_BLOCK) {
        snprintf(err, errlen, "FP8 scaling %d: use PL_FP8_SCALING_TENSOR or PL_FP8_SCALING_BLOCK", (int)scaling);
        return -1;
    }
    pl_fp8_weights *f = &w->fp8[scaling];
    if (f->block)
        return 0;
    const pl_model_config *m = w->model;
    const int qkvw = (m->heads + 2 * m->kv_heads) * m->head_dim, qw = m->heads * m->head_dim;
    fp8_part parts[4] = {{w->qkv, qkvw, m->hidden, &f->qkv},
                         {w->o, m->hidden, qw, &f->o},
                         {w->gate_up, 2 * m->intermediate, m->hidden, &f->gate_up},
                         {w->down, m->hidden, m->intermediate, &f->down}};
    const uint64_t bytes = place(parts, 4, scaling, NULL, NULL);
    size_t free_b = 0, total_b = 0;
    const cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    if (e != cudaSuccess)
        return cuda_fail("cudaMemGetInfo", w, e, err, errlen);
    if (bytes > free_b) {
        snprintf(err, errlen,
                 "%s's layer needs %.3f GiB more for its FP8 weights beside the bf16 ones, the GPU has %.3f GiB "
                 "free: use a smaller model",
                 m->name, (double)bytes / PL_GIB, (double)free_b / PL_GIB);
        return -1;
    }
    return make(w, f, parts, 4, scaling, bytes, err, errlen);
}
