/* The float64 references and host-side logic of the attention targets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/attention_host.h"
#include "perflab/device.h"
#include "perflab/verify.h"

#define LEN_STREAM   0x1e9 /* seed streams of the lengths and of the page shuffle */
#define PAGES_STREAM 0x9a9

/* bf16 bits to double, exactly (inlined: the references convert every element of the inputs) */
static inline double bf16d(uint16_t bits)
{
    union {
        uint32_t u;
        float f;
    } x = {.u = (uint32_t)bits << 16};
    return (double)x.f;
}

double pl_attn_fwd_flops(int batch, int heads, int seq, int head_dim, int causal)
{
    const double f = 4.0 * batch * heads * (double)seq * seq * head_dim;
    return causal ? 0.5 * f : f;
}

void pl_attn_shape_from_params(const pl_params *params, pl_attn_problem *p)
{
    p->batch = (int)pl_param_int(params, "batch");
    p->heads = (int)pl_param_int(params, "heads");
    const int kv = (int)pl_param_int(params, "kv-heads");
    p->kv_heads = kv == 0 ? p->heads : kv;
    p->seq = (int)pl_param_int(params, "seq");
    p->head_dim = (int)pl_param_int(params, "head-dim");
    p->causal = pl_param_bool(params, "causal");
    p->layout = (pl_attn_layout)pl_attn_layout_from_name(pl_param_str(params, "layout"));
    const double scale = pl_param_float(params, "scale");
    p->scale = scale > 0 ? (float)scale : (float)(1.0 / sqrt((double)p->head_dim));
}

int pl_attn_fwd_params_check(int batch, int heads, int kv_heads, int seq, int head_dim, int with_256, char *err,
                             size_t errlen)
{
    if (head_dim != 64 && head_dim != 128 && !(with_256 && head_dim == 256)) {
        snprintf(err, errlen, "--head-dim %d is not supported: use 64%s128%s", head_dim, with_256 ? ", " : " or ",
                 with_256 ? " or 256" : "");
        return -1;
    }
    if (kv_heads < 1 || heads % kv_heads != 0) {
        snprintf(err, errlen, "--heads %d is not a multiple of --kv-heads %d: pick kv heads that divide the heads",
                 heads, kv_heads);
        return -1;
    }
    if (batch < 1 || seq < 1) {
        snprintf(err, errlen, "--batch and --seq must be >= 1");
        return -1;
    }
    if (heads > 65535 || batch > 65535) {
        snprintf(err, errlen, "--heads and --batch must be at most 65535 (grid dimensions)");
        return -1;
    }
    return 0;
}

void pl_attn_fwd_reference_host(const pl_attn_problem *p, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                float *out, double *lse)
{
    const int d = p->head_dim, n = p->seq, g = p->heads / p->kv_heads;
    const pl_attn_strides qs = pl_attn_strides_of(p, p->heads), ks = pl_attn_strides_of(p, p->kv_heads);
    double *qrow = malloc((size_t)d * sizeof *qrow), *sc = malloc((size_t)n * sizeof *sc),
           *acc = malloc((size_t)d * sizeof *acc);
    double *kd = malloc((size_t)n * d * sizeof *kd), *vd = malloc((size_t)n * d * sizeof *vd);
    if (!qrow || !sc || !acc || !kd || !vd) {
        fprintf(stderr, "perflab: out of host memory for the attention reference\n");
        abort();
    }
    for (int b = 0; b < p->batch; b++)
        for (int h = 0; h < p->heads; h++) {
            const int kvh = h / g;
            if (h % g == 0) /* this kv head's K and V in float64, once per GQA group */
                for (int j = 0; j < n; j++)
                    for (int e = 0; e < d; e++) {
                        const long long off = b * ks.b + kvh * ks.h + j * ks.s + e;
                        kd[(size_t)j * d + e] = bf16d(k[off]);
                        vd[(size_t)j * d + e] = bf16d(v[off]);
                    }
            for (int i = 0; i < n; i++) {
                const long long qoff = b * qs.b + h * qs.h + i * qs.s;
                for (int e = 0; e < d; e++)
                    qrow[e] = bf16d(q[qoff + e]);
                const int visible = p->causal ? i + 1 : n;
                double mx = -INFINITY;
                for (int j = 0; j < visible; j++) {
                    double s = 0;
                    for (int e = 0; e < d; e++)
                        s += qrow[e] * kd[(size_t)j * d + e];
                    sc[j] = s * (double)p->scale;
                    if (sc[j] > mx)
                        mx = sc[j];
                }
                double l = 0;
                memset(acc, 0, (size_t)d * sizeof *acc);
                for (int j = 0; j < visible; j++) {
                    const double w = exp(sc[j] - mx);
                    l += w;
                    for (int e = 0; e < d; e++)
                        acc[e] += w * vd[(size_t)j * d + e];
                }
                for (int e = 0; e < d; e++)
                    out[qoff + e] = (float)(acc[e] / l);
                lse[((long long)b * p->heads + h) * n + i] = mx + log(l);
            }
        }
    free(qrow);
    free(sc);
    free(acc);
    free(kd);
    free(vd);
}

static int length_of(int b, int kv_len, double spread, uint64_t len_seed)
{
    long long lo = llround((1.0 - spread) * kv_len);
    if (lo < 1)
        lo = 1;
    if (lo > kv_len)
        lo = kv_len;
    const double u = pl_uniform_host(len_seed, LEN_STREAM, (size_t)b, 0.0f, 1.0f);
    long long len = lo + (long long)floor(u * (double)(kv_len - lo + 1));
    return (int)(len > kv_len ? kv_len : len);
}

void pl_decode_lengths(int batch, int kv_len, double spread, uint64_t len_seed, int *lens)
{
    for (int b = 0; b < batch; b++)
        lens[b] = length_of(b, kv_len, spread, len_seed);
}

long long pl_decode_total_tokens(int batch, int kv_len, double spread, uint64_t len_seed)
{
    long long t = 0;
    for (int b = 0; b < batch; b++)
        t += length_of(b, kv_len, spread, len_seed);
    return t;
}

int pl_decode_block_table(int batch, const int *lens, int page_size, int max_pages, uint64_t seed, int *table)
{
    int total = 0;
    for (int b = 0; b < batch; b++)
        total += (lens[b] + page_size - 1) / page_size;
    int *pool = malloc((size_t)(total > 0 ? total : 1) * sizeof *pool);
    if (!pool) {
        fprintf(stderr, "perflab: out of host memory for the block table\n");
        abort();
    }
    for (int i = 0; i < total; i++)
        pool[i] = i;
    for (int i = total - 1; i > 0; i--) { /* Fisher-Yates */
        const int j = (int)floor(pl_uniform_host(seed, PAGES_STREAM, (size_t)i, 0.0f, 1.0f) * (i + 1));
        const int jj = j > i ? i : j, t = pool[i];
        pool[i] = pool[jj];
        pool[jj] = t;
    }
    int next = 0;
    for (int b = 0; b < batch; b++) {
        const int pages = (lens[b] + page_size - 1) / page_size;
        for (int i = 0; i < max_pages; i++)
            table[(size_t)b * max_pages + i] = i < pages ? pool[next++] : -1;
    }
    free(pool);
    return total;
}

void pl_decode_reference_host(const pl_decode_problem *p, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                              const int *table, const int *lens, double *out)
{
    const int d = p->head_dim, g = p->heads / p->kv_heads;
    int max_len = 1;
    for (int b = 0; b < p->batch; b++)
        if (lens[b] > max_len)
            max_len = lens[b];
    double *sc = malloc((size_t)max_len * g * sizeof *sc), *qd = malloc((size_t)g * d * sizeof *qd);
    double *acc = malloc((size_t)g * d * sizeof *acc), *mx = malloc((size_t)g * sizeof *mx);
    double *row = malloc((size_t)d * sizeof *row);
    if (!sc || !qd || !acc || !mx || !row) {
        fprintf(stderr, "perflab: out of host memory for the decode reference\n");
        abort();
    }
    for (int b = 0; b < p->batch; b++)
        for (int kvh = 0; kvh < p->kv_heads; kvh++) {
            for (int j = 0; j < g; j++) {
                mx[j] = -INFINITY;
                for (int e = 0; e < d; e++)
                    qd[j * d + e] = bf16d(q[((size_t)b * p->heads + kvh * g + j) * d + e]);
            }
            /* pass 1: scores of every query head of the group from each K row */
            for (int t = 0; t < lens[b]; t++) {
                const long long page = table[(size_t)b * p->max_pages + t / p->page_size];
                const uint16_t *kr = k + ((page * p->page_size + t % p->page_size) * p->kv_heads + kvh) * d;
                for (int e = 0; e < d; e++)
                    row[e] = bf16d(kr[e]);
                for (int j = 0; j < g; j++) {
                    double s = 0;
                    for (int e = 0; e < d; e++)
                        s += qd[j * d + e] * row[e];
                    s *= (double)p->scale;
                    sc[(size_t)t * g + j] = s;
                    if (s > mx[j])
                        mx[j] = s;
                }
            }
            /* pass 2: weights and the weighted sum of V rows */
            memset(acc, 0, (size_t)g * d * sizeof *acc);
            double l[8] = {0};
            for (int t = 0; t < lens[b]; t++) {
                const long long page = table[(size_t)b * p->max_pages + t / p->page_size];
                const uint16_t *vr = v + ((page * p->page_size + t % p->page_size) * p->kv_heads + kvh) * d;
                for (int e = 0; e < d; e++)
                    row[e] = bf16d(vr[e]);
                for (int j = 0; j < g; j++) {
                    const double w = exp(sc[(size_t)t * g + j] - mx[j]);
                    l[j] += w;
                    for (int e = 0; e < d; e++)
                        acc[j * d + e] += w * row[e];
                }
            }
            for (int j = 0; j < g; j++)
                for (int e = 0; e < d; e++)
                    out[((size_t)b * p->heads + kvh * g + j) * d + e] = acc[j * d + e] / l[j];
        }
    free(sc);
    free(qd);
    free(acc);
    free(mx);
    free(row);
}
