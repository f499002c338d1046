/* The e2e: layer targets' checks (e2e_layer.h): the float64 reference of the rows the host can afford, and the
 * comparison of a variant's output with it and with the baseline's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/kv_fp8.h"
#include "common/e2e_layer.h"
#include "common/layer_ref.h"
#include "perflab/device.h"

#define PREFILL_REF_TOKENS 2 /* a prompt's first tokens the float64 reference computes */

static void *host_copy(pl_ctx *ctx, const void *dev, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    if (!h) {
        pl_fail(ctx, "out of host memory (%zu bytes) for the reference", bytes);
        return NULL;
    }
    if (cudaMemcpy(h, dev, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(h);
        pl_fail(ctx, "copying %zu bytes back for the reference failed", bytes);
        return NULL;
    }
    return h;
}

/* Which rows the float64 reference computes, and their tables (row r's sequence's pages). */
static void pick_ref_rows(e2e_layer *L)
{
    L->ref_n = 0;
    if (L->prefill) {
        const int prompts[2] = {0, L->seqs - 1};
        for (int i = 0; i < (L->seqs > 1 ? 2 : 1); i++)
            for (int t = 0; t < PREFILL_REF_TOKENS && t < L->lens[prompts[i]]; t++)
                L->ref_rows[L->ref_n++] = L->starts[prompts[i]] + t;
        return;
    }
    const int seqs[3] = {0, L->seqs / 2, L->seqs - 1};
    for (int i = 0; i < 3; i++)
        if (L->ref_n == 0 || L->ref_rows[L->ref_n - 1] < seqs[i])
            L->ref_rows[L->ref_n++] = seqs[i];
}

static int seq_of_row(const e2e_layer *L, int row)
{
    int s = 0;
    while (s + 1 < L->seqs && L->starts[s + 1] <= row)
        s++;
    return s;
}

/* The FP8 pools' values as bf16 (each byte times its row's scale): what the reference reads for the FP8 cache. */
static int fp8_pools_host(pl_ctx *ctx, const e2e_layer *L, uint16_t *kc, uint16_t *vc)
{
    const size_t rows = L->pool_elems / L->m->head_dim;
    uint8_t *k8 = host_copy(ctx, L->kv8.k8, L->pool_elems), *v8 = host_copy(ctx, L->kv8.v8, L->pool_elems);
    float *ks = host_copy(ctx, L->kv8.k_scale, rows * sizeof(float)),
          *vs = host_copy(ctx, L->kv8.v_scale, rows * sizeof(float));
    const int ok = k8 && v8 && ks && vs;
    for (size_t i = 0; ok && i < L->pool_elems; i++) {
        const size_t r = i / L->m->head_dim;
        kc[i] = pl_bf16_round_host(pl_kv_e4m3_to_float(k8[i]) * ks[r]);
        vc[i] = pl_bf16_round_host(pl_kv_e4m3_to_float(v8[i]) * vs[r]);
    }
    free(k8), free(v8), free(ks), free(vs);
    return ok ? 0 : -1;
}

/* The picked rows of the layer over the cache kc, vc (host; kv_fp8: the FP8 cache's values) into ref. */
int e2e_reference_rows(pl_ctx *ctx, e2e_layer *L, const uint16_t *wb, const pl_layer_ref_weights *w8, uint16_t *kc,
                       uint16_t *vc, const uint16_t *x, int kv_fp8, double *ref)
{
    const pl_model_config *m = L->m;
    const size_t D = m->hidden;
    uint16_t *xr = malloc((size_t)L->ref_n * D * 2), *out = malloc((size_t)L->ref_n * D * 2);
    int rc = -1;
    if (!xr || !out) {
        pl_fail(ctx, "out of host memory for the reference rows");
        goto done;
    }
#define HOST_OF(w, t)                                                                                                  \
    (w.t ? (const uint16_t *)((const char *)wb + ((const char *)w.t - (const char *)L->wblock)) : NULL)
    pl_layer_ref_moe_weights hw = {{HOST_OF(L->w, attn_norm), HOST_OF(L->w, qkv), HOST_OF(L->w, o),
                                    HOST_OF(L->w, mlp_norm), HOST_OF(L->w, gate_up), HOST_OF(L->w, down)},
                                   NULL,
                                   NULL,
                                   NULL};
    if (L->moe)
        hw = (pl_layer_ref_moe_weights){{HOST_OF(L->mw, attn_norm), HOST_OF(L->mw, qkv), HOST_OF(L->mw, o),
                                         HOST_OF(L->mw, mlp_norm), HOST_OF(L->mw, gate_up), HOST_OF(L->mw, down)},
                                        HOST_OF(L->mw, q_norm),
                                        HOST_OF(L->mw, k_norm),
                                        HOST_OF(L->mw, router)};
#undef HOST_OF
    int pos[8];
    int64_t slots[8];
    const int *tables[8];
    for (int i = 0; i < L->ref_n; i++) {
        const int r = L->ref_rows[i];
        pos[i] = L->positions_h[r];
        slots[i] = L->slots_h[r];
        tables[i] = L->table + (size_t)seq_of_row(L, r) * L->max_pages;
        memcpy(xr + (size_t)i * D, x + (size_t)r * D, D * 2);
    }
    /* FP8 weights (w8): the GEMM inputs 1×128-quantized, as the block-scaled recipe quantizes them (row-local, so the
     * reference's few rows get the scales the whole step's rows get) */
    const pl_layer_ref_rows rows = {
        L->ref_n, L->page_size, pos, slots, tables, kv_fp8, w8 ? PL_LAYER_REF_ACT_ROWS : PL_LAYER_REF_ACT_BF16};
    const pl_layer_ref_routing routing = {NULL, L->ids_ref, L->margin_ref};
    if ((L->moe ? pl_layer_ref_moe(m, &hw, &rows, 0, &routing, kc, vc, xr, out)
                : pl_layer_ref(m, w8 ? w8 : &hw.layer, &rows, 0, kc, vc, xr, out)) != 0) {
        pl_fail(ctx, "out of host memory for the reference layer");
        goto done;
    }
    for (size_t i = 0; i < (size_t)L->ref_n * D; i++)
        ref[i] = pl_bf16_to_double(out[i]);
    rc = 0;
done:
    free(xr), free(out);
    return rc;
}

/* The float64 reference of the picked rows, from host copies of the weights, the pools and x; with an FP8 cache
 * beside the bf16 one, its reference rows too. */
int e2e_layer_reference(pl_ctx *ctx, e2e_layer *L)
{
    pick_ref_rows(L);
    const size_t D = L->m->hidden;
    uint16_t *wb = host_copy(ctx, L->wblock, L->wbytes);
    uint16_t *kc = host_copy(ctx, L->kv.k, L->pool_elems * 2), *vc = host_copy(ctx, L->kv.v, L->pool_elems * 2);
    uint16_t *x = host_copy(ctx, L->x, (size_t)L->rows * D * 2), *kc8 = NULL, *vc8 = NULL;
    L->ref = pl_host_alloc(ctx, (size_t)L->ref_n * D * sizeof(double));
    int rc = -1;
    if (!wb || !kc || !vc || !x || !L->ref || e2e_reference_rows(ctx, L, wb, NULL, kc, vc, x, 0, L->ref) != 0)
        goto done;
    if (L->kv8.k8) {
        kc8 = host_copy(ctx, L->kv.k, L->pool_elems * 2), vc8 = host_copy(ctx, L->kv.v, L->pool_elems * 2);
        L->ref8 = pl_host_alloc(ctx, (size_t)L->ref_n * D * sizeof(double));
        if (!kc8 || !vc8 || !L->ref8 || fp8_pools_host(ctx, L, kc8, vc8) != 0 ||
            e2e_reference_rows(ctx, L, wb, NULL, kc8, vc8, x, 1, L->ref8) != 0)
            goto done;
    }
    /* kc, vc: the bf16 pools (each reference run writes its rows' new tokens before it reads them) */
    if (L->fp8w && e2e_fp8w_reference(ctx, L, wb, kc, vc, kc8, vc8, x) != 0)
        goto done;
    rc = 0;
done:
    free(wb), free(kc), free(vc), free(x), free(kc8), free(vc8);
    return rc;
}

/* Rows of out_h (and of ref, doubles) kept where skip is NULL or skip[row] & mask is 0, one after another into
 * got and want; returns how many rows. */
static int keep_rows(const e2e_layer *L, const int *rows, int n, const double *ref, const unsigned char *skip,
                     unsigned mask, uint16_t *got, double *want)
{
    const size_t D = L->m->hidden;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        const int r = rows ? rows[i] : i;
        if (skip && (skip[r] & mask))
            continue;
        memcpy(got + kept * D, L->out_h + (size_t)r * D, D * 2);
        memcpy(want + kept * D, ref + (size_t)i * D, D * sizeof(double));
        kept++;
    }
    return kept;
}

int e2e_layer_check_output(pl_ctx *ctx, void *state, pl_verification *v)
{
    e2e_layer *L = state;
    if (L->last_floor)
        return e2e_floor_check(ctx, L->floor_run, v);
    const double *ref = L->last_fp8w ? (L->last_fp8 ? L->ref8w_kv : L->ref8w) : L->last_fp8 ? L->ref8 : L->ref;
    const double *base_rows = L->last_fp8w  ? (L->last_fp8 ? L->base8w_kv : L->base8w)
                              : L->last_fp8 ? L->base8
                                            : L->base;
    const size_t D = L->m->hidden, xn = (size_t)L->rows * D;
    PL_CUDA(ctx, cudaMemcpyAsync(L->out_h, L->out, xn * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    int flipped = 0, bad_ref = 0;
    unsigned char *skip = L->moe ? calloc((size_t)L->rows, 1) : NULL;
    uint16_t *got = malloc(xn * 2);
    double *want = malloc(xn * sizeof *want);
    if (!got || !want || (L->moe && !skip)) {
        free(skip), free(got), free(want);
        return pl_fail(ctx, "out of host memory for the check");
    }
    if (L->moe) {
        if (e2e_moe_read_ids(ctx, L, 0) != 0) {
            free(skip), free(got), free(want);
            return -1;
        }
        flipped = e2e_moe_route_diff(L, skip, &bad_ref);
    }
    pl_verification host, base;
    const int nh = keep_rows(L, L->ref_rows, L->ref_n, ref, skip, 2, got, want);
    pl_verify_bf16(got, want, (size_t)nh * D, 0, &host);
    const int nb = keep_rows(L, NULL, L->rows, base_rows, skip, 1, got, want);
    pl_verify_bf16(got, want, (size_t)nb * D, 0, &base);
    free(skip), free(got), free(want);
    const int routing_ok = !bad_ref && flipped <= L->rows / 8;
    *v = host.passed && !base.passed ? base : host;
    char routing[160] = "";
    if (L->moe)
        snprintf(routing, sizeof routing,
                 "; %d of %d rows took other experts than the baseline's (near ties, left "
                 "out)%s",
                 flipped, L->rows, bad_ref ? ", a reference row took other experts than a clear choice" : "");
    snprintf(v->message, sizeof v->message,
             "%s; %d rows against the float64 reference: rel L2 %.2e; every row against the baseline: rel L2 %.2e, "
             "%zu NaN/Inf, %zu unwritten%s",
             host.passed && base.passed && routing_ok ? "ok" : "FAILED", nh, host.rel_l2_error, base.rel_l2_error,
             base.nonfinite, base.unwritten, routing);
    v->passed = host.passed && base.passed && routing_ok;
    return 0;
}
