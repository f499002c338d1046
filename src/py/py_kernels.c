/* perflab's kernels on raw device pointers (perflab/py.h): each entry point checks its arguments with the kernel
 * family's own checks (the messages the targets print), gates architecture-specific kernels on the current device,
 * and launches the kernel its target times as the fast one, on the caller's stream. */
#include "perflab/py.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attention/attention.h"
#include "common/device_cc.h"
#include "gemm/fp8.h"
#include "gemm/gemm.h"
#include "gemm/grouped.h"
#include "norm/norm_kernels.h"
#include "softmax/softmax_kernels.h"

static int refuse(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int refuse(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* 0, or -1 with the launch's error named after the kernel. */
static int launched(cudaError_t e, const char *what, char *err, size_t errlen)
{
    if (e == cudaSuccess)
        return 0;
    return refuse(err, errlen, "%s: CUDA error %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

/* The current device is a 9.0 (sm_90a kernels run there alone). */
static int needs_sm90(const char *what, char *err, size_t errlen)
{
    int cc = 0;
    cudaError_t e = pl_current_cc(&cc);
    if (e != cudaSuccess)
        return launched(e, what, err, errlen);
    if (cc != 90)
        return refuse(err, errlen, "%s needs an sm_90 GPU (Hopper: wgmma and TMA); this one is sm_%d", what, cc);
    return 0;
}

static int needs_sm80(const char *what, char *err, size_t errlen)
{
    int cc = 0;
    cudaError_t e = pl_current_cc(&cc);
    if (e != cudaSuccess)
        return launched(e, what, err, errlen);
    if (cc < 80)
        return refuse(err, errlen, "%s needs an sm_80 or newer GPU (mma.sync bf16); this one is sm_%d", what, cc);
    return 0;
}

static int rows_valid(const char *what, const void *x, const void *y, int rows, int cols, char *err, size_t errlen)
{
    if (rows < 1 || cols < 1)
        return refuse(err, errlen, "%s: rows (%d) and cols (%d) must be >= 1", what, rows, cols);
    if (!x || !y)
        return refuse(err, errlen, "%s: x and y must be device pointers (not NULL)", what);
    if (((uintptr_t)x - (uintptr_t)y) % 16 != 0)
        return refuse(err, errlen,
                      "%s: y must have x's alignment modulo 16 bytes (fresh allocations do; slice "
                      "neither, or make both contiguous copies)",
                      what);
    return 0;
}

int pl_py_gemm_bf16(int m, int n, int k, int b_layout, const void *a, const void *b, void *d, cudaStream_t stream,
                    char *err, size_t errlen)
{
    if (b_layout != PL_GEMM_B_NK && b_layout != PL_GEMM_B_KN)
        return refuse(err, errlen, "gemm: b_layout %d: 0 (B is N×K, a linear layer's weight) or 1 (B is K×N)",
                      b_layout);
    pl_gemm_problem p = {.m = m, .n = n, .k = k, .b_layout = (pl_gemm_b_layout)b_layout, .a = a, .b = b, .d = d};
    char why[256];
    if (!pl_gemm_problem_valid(&p, why, sizeof why))
        return refuse(err, errlen, "gemm: %s", why);
    return launched(pl_gemm_bf16(&p, stream), "gemm (bf16)", err, errlen);
}

int pl_py_gemm_fp8(int m, int n, int k, const void *a, const void *b, void *d, const float *scale_a,
                   const float *scale_b, int block, cudaStream_t stream, char *err, size_t errlen)
{
    if (m < 1 || n < 1 || k < 1)
        return refuse(err, errlen, "gemm (fp8): M, N and K must be >= 1 (got %d, %d, %d)", m, n, k);
    pl_gemm_fp8_problem p = {.m = m,
                             .n = n,
                             .k = k,
                             .a = a,
                             .b = b,
                             .d = d,
                             .scale_a = scale_a,
                             .scale_b = scale_b,
                             .scaling = block ? PL_FP8_SCALING_BLOCK : PL_FP8_SCALING_TENSOR};
    char why[256];
    if (!d)
        return refuse(err, errlen, "gemm (fp8): D must be a device pointer (not NULL)");
    if (!pl_gemm_fp8_supports(&p, why, sizeof why))
        return refuse(err, errlen, "gemm (fp8): %s", why);
    if (needs_sm90("gemm (fp8)", err, errlen) != 0)
        return -1;
    return launched(pl_gemm_fp8(&p, stream), "gemm (fp8)", err, errlen); /* the FP8 pick */
}

static pl_grouped_gemm_problem grouped_problem(int groups, int n, int k, int rows, const int *offsets, const void *a,
                                               const void *b, void *d, const float *scale_a, const float *scale_b)
{
    return (pl_grouped_gemm_problem){.groups = groups,
                                     .n = n,
                                     .k = k,
                                     .rows = rows,
                                     .offsets = offsets,
                                     .a = a,
                                     .b = b,
                                     .d = d,
                                     .scale_a = scale_a,
                                     .scale_b = scale_b};
}

static int grouped_valid(const pl_grouped_gemm_problem *p, int fp8, char *err, size_t errlen)
{
    char why[256];
    if (!pl_grouped_gemm_supports(p, fp8, why, sizeof why))
        return refuse(err, errlen, "grouped_gemm: %s", why);
    return 0;
}

int pl_py_grouped_gemm_supports(int groups, int n, int k, int rows, const int *offsets, const void *a, const void *b,
                                const void *d, int fp8, char *err, size_t errlen)
{
    const pl_grouped_gemm_problem p = grouped_problem(groups, n, k, rows, offsets, a, b, (void *)d, NULL, NULL);
    return grouped_valid(&p, fp8, err, errlen) == 0;
}

int pl_py_grouped_gemm(int groups, int n, int k, int rows, const int *offsets, const void *a, const void *b, void *d,
                       const float *scale_a, const float *scale_b, int fp8, cudaStream_t stream, char *err,
                       size_t errlen)
{
    const pl_grouped_gemm_problem p = grouped_problem(groups, n, k, rows, offsets, a, b, d, scale_a, scale_b);
    if (grouped_valid(&p, fp8, err, errlen) != 0)
        return -1;
    if (fp8 && (!scale_a || !scale_b))
        return refuse(err, errlen, "grouped_gemm (fp8): the block scales of A and B are needed (not NULL)");
    if (needs_sm90("grouped_gemm", err, errlen) != 0)
        return -1;
    if (rows == 0)
        return 0;
    return launched(fp8 ? pl_grouped_gemm_fp8(&p, stream) : pl_grouped_gemm_bf16(&p, stream), "grouped_gemm", err,
                    errlen);
}

int pl_py_rms_norm(const void *x, const void *w, void *y, int rows, int cols, float eps, cudaStream_t stream, char *err,
                   size_t errlen)
{
    if (rows_valid("rms_norm", x, y, rows, cols, err, errlen) != 0)
        return -1;
    if (!w)
        return refuse(err, errlen, "rms_norm: the weight w must be a device pointer (not NULL)");
    if (!(eps >= 0))
        return refuse(err, errlen, "rms_norm: eps %g must be >= 0", (double)eps);
    return launched(pl_rmsnorm_fused(x, w, y, rows, cols, eps, 0, stream), "rms_norm", err, errlen);
}

int pl_py_layer_norm(const void *x, const void *w, const void *b, void *y, int rows, int cols, float eps,
                     cudaStream_t stream, char *err, size_t errlen)
{
    if (rows_valid("layer_norm", x, y, rows, cols, err, errlen) != 0)
        return -1;
    if (!w || !b)
        return refuse(err, errlen,
                      "layer_norm: the weight w and bias b must be device pointers (a zero bias for "
                      "none)");
    if (!(eps >= 0))
        return refuse(err, errlen, "layer_norm: eps %g must be >= 0", (double)eps);
    return launched(pl_layernorm_fused(x, w, b, y, rows, cols, eps, 0, stream), "layer_norm", err, errlen);
}

int pl_py_softmax(const void *x, void *y, int rows, int cols, cudaStream_t stream, char *err, size_t errlen)
{
    if (rows_valid("softmax", x, y, rows, cols, err, errlen) != 0)
        return -1;
    return launched(pl_softmax_online(x, y, rows, cols, 0, stream), "softmax", err, errlen);
}

int pl_py_flash_attn(int batch, int heads, int kv_heads, int seq, int head_dim, int causal, int layout, float scale,
                     const void *q, const void *k, const void *v, void *o, float *lse, cudaStream_t stream, char *err,
                     size_t errlen)
{
    if (layout != PL_ATTN_BHSD && layout != PL_ATTN_BSHD)
        return refuse(err, errlen,
                      "flash_attn: layout %d: 0 ([batch][heads][seq][dim]) or 1 ([batch][seq][heads][dim])", layout);
    if (batch < 1 || heads < 1 || kv_heads < 1 || seq < 1)
        return refuse(err, errlen, "flash_attn: batch, heads, kv_heads and seq must be >= 1");
    if (!lse)
        return refuse(err, errlen, "flash_attn: lse must be a device buffer of batch·heads·seq floats (not NULL)");
    pl_attn_problem p = {.batch = batch,
                         .heads = heads,
                         .kv_heads = kv_heads,
                         .seq = seq,
                         .head_dim = head_dim,
                         .causal = causal != 0,
                         .layout = (pl_attn_layout)layout,
                         .scale = scale,
                         .q = q,
                         .k = k,
                         .v = v,
                         .o = o,
                         .lse = lse};
    char why[256];
    if (!pl_attn_problem_valid(&p, why, sizeof why))
        return refuse(err, errlen, "flash_attn: %s", why);
    if (!(scale > 0))
        return refuse(err, errlen, "flash_attn: the softmax scale must be > 0 (1/sqrt(head_dim) by convention)");
    int cc = 0;
    cudaError_t e = pl_current_cc(&cc);
    if (e != cudaSuccess)
        return launched(e, "flash_attn", err, errlen);
    /* Hopper: the wgmma kernel, taking turns where docs/perf/attention.md measured that faster (causal, head_dim 64;
     * at head_dim 256 not yet measured: the same rule) */
    if (cc == 90)
        return launched(pl_attn_flash_wgmma_schedule(&p, causal || head_dim == 64, stream), "flash_attn", err, errlen);
    if (needs_sm80("flash_attn", err, errlen) != 0)
        return -1;
    return launched(pl_attn_flash_mma(&p, stream), "flash_attn", err, errlen);
}

static pl_decode_problem decode_problem(int batch, int heads, int kv_heads, int head_dim, int page_size, int max_pages,
                                        float scale)
{
    return (pl_decode_problem){.batch = batch,
                               .heads = heads,
                               .kv_heads = kv_heads,
                               .head_dim = head_dim,
                               .page_size = page_size,
                               .max_pages = max_pages,
                               .scale = scale};
}

/* The balanced kernel's grid on `device` (all its CTAs resident at once). 0 when it cannot be asked. */
static int decode_ctas(const pl_decode_problem *p, int device)
{
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
        return 0;
    return pl_decode_balanced_ctas(p, sms);
}

size_t pl_py_paged_decode_workspace_bytes(int batch, int heads, int kv_heads, int head_dim, int page_size,
                                          int max_pages, int device)
{
    const pl_decode_problem p = decode_problem(batch, heads, kv_heads, head_dim, page_size, max_pages, 1.0f);
    int ctas = decode_ctas(&p, device);
    return ctas > 0 ? pl_decode_balanced_workspace_bytes(&p, ctas) : 0;
}

int pl_py_paged_decode(int batch, int heads, int kv_heads, int head_dim, int page_size, int max_pages, float scale,
                       const void *q, const void *k_cache, const void *v_cache, const int *block_table,
                       const int *seq_lens, void *o, void *workspace, size_t workspace_bytes, cudaStream_t stream,
                       char *err, size_t errlen)
{
    pl_decode_problem p = decode_problem(batch, heads, kv_heads, head_dim, page_size, max_pages, scale);
    p.q = q;
    p.k_cache = k_cache;
    p.v_cache = v_cache;
    p.block_table = block_table;
    p.seq_lens = seq_lens;
    p.o = o;
    char why[256];
    if (!pl_decode_problem_valid(&p, why, sizeof why))
        return refuse(err, errlen, "paged_decode: %s", why);
    if (needs_sm80("paged_decode", err, errlen) != 0)
        return -1;
    int device = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess)
        return launched(e, "paged_decode", err, errlen);
    const int ctas = decode_ctas(&p, device);
    const size_t need = ctas > 0 ? pl_decode_balanced_workspace_bytes(&p, ctas) : 0;
    if (ctas < 1)
        return refuse(err, errlen,
                      "paged_decode: no CTA of the balanced kernel fits an SM (the occupancy query failed)");
    if (!workspace || workspace_bytes < need || (uintptr_t)workspace % 256 != 0)
        return refuse(err, errlen,
                      "paged_decode: the workspace must be %zu bytes, 256-byte aligned (got %zu): size it "
                      "with pl_py_paged_decode_workspace_bytes",
                      need, workspace_bytes);
    return launched(pl_decode_balanced_mma(&p, ctas, 0, workspace, stream), "paged_decode", err, errlen);
}
