/* The float64 host reference of a dense or MoE layer (layer_ref.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/kv_fp8.h"
#include "common/fp8_quant_ref.h"
#include "common/layer_ref.h"
#include "perflab/device.h"
#include "perflab/verify.h"

static double bf(uint16_t b)
{
    return pl_bf16_to_double(b);
}

static uint16_t rb(double d)
{
    return pl_bf16_round_host((float)d);
}

static void ref_rmsnorm(const uint16_t *x, const uint16_t *w, int rows, int cols, double eps, uint16_t *y)
{
    for (int r = 0; r < rows; r++) {
        const uint16_t *xr = x + (size_t)r * cols;
        double ss = 0;
        for (int c = 0; c < cols; c++)
            ss += bf(xr[c]) * bf(xr[c]);
        const double inv = 1.0 / sqrt(ss / cols + eps);
        for (int c = 0; c < cols; c++)
            y[(size_t)r * cols + c] = rb(bf(xr[c]) * inv * bf(w[c]));
    }
}

/* d [m][n] = a [m][k] · wᵀ (w [n][k]), plus residual [m][n]: added to the product rounded to bf16 and rounded
 * again (an add kernel of its own), or with one_rounding to the exact product and rounded once (a GEMM epilogue).
 * act_fp8: a as the engine quantizes it before an FP8 GEMM (pl_layer_ref_rows.act_fp8). */
static void ref_linear(const uint16_t *a, const uint16_t *w, int m, int n, int k, const uint16_t *residual,
                       int one_rounding, int act_fp8, uint16_t *d)
{
    double *arow = malloc((size_t)k * sizeof *arow);
    uint16_t *aq = act_fp8 ? malloc((size_t)m * k * 2) : NULL;
    if (!arow || (act_fp8 && !aq))
        abort();
    if (act_fp8) {
        pl_fp8_ref_quantize(a, m, k, act_fp8 == PL_LAYER_REF_ACT_TENSOR ? PL_FP8_SCALE_TENSOR : PL_FP8_SCALE_ROWS,
                            pl_fp8_scale_a_ld(m), NULL, NULL, aq);
        a = aq;
    }
    for (int i = 0; i < m; i++) {
        for (int e = 0; e < k; e++)
            arow[e] = bf(a[(size_t)i * k + e]);
        for (int j = 0; j < n; j++) {
            const uint16_t *wr = w + (size_t)j * k;
            double s = 0;
            for (int e = 0; e < k; e++)
                s += arow[e] * bf(wr[e]);
            const double prod = one_rounding ? s : bf(rb(s));
            d[(size_t)i * n + j] = rb(residual ? bf(residual[(size_t)i * n + j]) + prod : prod);
        }
    }
    free(arow), free(aq);
}

static void ref_rope(const uint16_t *src, int hd, int pos, double theta, uint16_t *dst)
{
    for (int i = 0; i < hd / 2; i++) {
        const double angle = (double)pos * exp(-(2.0 * i / hd) * log(theta));
        const double x1 = bf(src[i]), x2 = bf(src[i + hd / 2]);
        dst[i] = rb(x1 * cos(angle) - x2 * sin(angle));
        dst[i + hd / 2] = rb(x2 * cos(angle) + x1 * sin(angle));
    }
}

void pl_layer_ref_fp8_row(const uint16_t *row, int n, uint8_t *q, float *scale, uint16_t *deq)
{
    float amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float a = fabsf((float)bf(row[i]));
        amax = a > amax ? a : amax; /* NaN compares false: left out, as the device's max leaves it */
    }
    const int e = pl_kv_fp8_scale_exp(amax);
    const float s = ldexpf(1.0f, e), inv = ldexpf(1.0f, -e);
    if (scale)
        *scale = s;
    for (int i = 0; i < n; i++) {
        const uint8_t b = pl_kv_e4m3_from_float((float)bf(row[i]) * inv);
        if (q)
            q[i] = b;
        if (deq)
            deq[i] = rb((double)pl_kv_e4m3_to_float(b) * s);
    }
}

/* q [rows][H][hd]; the rows' K (rotated) and V into the pools (an FP8 cache: as it holds them) */
static void ref_rope_kv(const pl_model_config *m, const uint16_t *qkv, const pl_layer_ref_rows *s, uint16_t *q,
                        uint16_t *kc, uint16_t *vc)
{
    const int hd = m->head_dim, H = m->heads, KV = m->kv_heads, row = (H + 2 * KV) * hd;
    for (int r = 0; r < s->rows; r++) {
        const uint16_t *src = qkv + (size_t)r * row;
        for (int h = 0; h < H; h++)
            ref_rope(src + h * hd, hd, s->positions[r], m->rope_theta, q + ((size_t)r * H + h) * hd);
        for (int g = 0; g < KV; g++) {
            const size_t at = ((size_t)s->slots[r] * KV + g) * hd;
            ref_rope(src + (H + g) * hd, hd, s->positions[r], m->rope_theta, kc + at);
            memcpy(vc + at, src + (H + KV + g) * hd, (size_t)hd * 2);
            if (s->kv_fp8) {
                pl_layer_ref_fp8_row(kc + at, hd, NULL, NULL, kc + at);
                pl_layer_ref_fp8_row(vc + at, hd, NULL, NULL, vc + at);
            }
        }
    }
}

/* attn [rows][H][hd]: each row's query heads over its sequence's tokens 0..position, softmax in float64 */
static int ref_attention(const pl_model_config *m, const pl_layer_ref_rows *s, const uint16_t *q, const uint16_t *kc,
                         const uint16_t *vc, uint16_t *attn)
{
    const int hd = m->head_dim, H = m->heads, KV = m->kv_heads, group = H / KV;
    const double scale = 1.0 / sqrt((double)hd);
    int most = 1;
    for (int r = 0; r < s->rows; r++)
        most = s->positions[r] + 1 > most ? s->positions[r] + 1 : most;
    double *p = malloc((size_t)most * sizeof *p), *o = malloc((size_t)hd * sizeof *o);
    if (!p || !o) {
        free(p), free(o);
        return -1;
    }
    for (int r = 0; r < s->rows; r++)
        for (int h = 0; h < H; h++) {
            const uint16_t *qh = q + ((size_t)r * H + h) * hd;
            const int len = s->positions[r] + 1, g = h / group;
            double mx = -INFINITY, sum = 0;
            for (int t = 0; t < len; t++) {
                const int64_t slot = (int64_t)s->table[r][t / s->page_size] * s->page_size + t % s->page_size;
                const uint16_t *kt = kc + ((size_t)slot * KV + g) * hd;
                double d = 0;
                for (int e = 0; e < hd; e++)
                    d += bf(qh[e]) * bf(kt[e]);
                p[t] = d * scale;
                mx = p[t] > mx ? p[t] : mx;
            }
            memset(o, 0, (size_t)hd * sizeof *o);
            for (int t = 0; t < len; t++) {
                const int64_t slot = (int64_t)s->table[r][t / s->page_size] * s->page_size + t % s->page_size;
                const uint16_t *vt = vc + ((size_t)slot * KV + g) * hd;
                const double w = exp(p[t] - mx);
                sum += w;
                for (int e = 0; e < hd; e++)
                    o[e] += w * bf(vt[e]);
            }
            for (int e = 0; e < hd; e++)
                attn[((size_t)r * H + h) * hd + e] = rb(o[e] / sum);
        }
    free(p), free(o);
    return 0;
}

/* qkv's query and key heads RMS-normed over head_dim in place, rounded to bf16 (qk-norm models). */
static void ref_qk_norm(const pl_model_config *m, const uint16_t *q_norm, const uint16_t *k_norm, int rows,
                        uint16_t *qkv)
{
    const int hd = m->head_dim, heads = m->heads + m->kv_heads, row = (m->heads + 2 * m->kv_heads) * hd;
    for (int r = 0; r < rows; r++)
        for (int h = 0; h < heads; h++)
            ref_rmsnorm(qkv + (size_t)r * row + (size_t)h * hd, h < m->heads ? q_norm : k_norm, 1, hd, m->rms_eps,
                        qkv + (size_t)r * row + (size_t)h * hd);
}

/* h = x + attention(RMSNorm(x))·oᵀ, the rows' K/V written into the pools (qk_norm: {q_norm, k_norm} or NULL). */
static int ref_attention_half(const pl_model_config *m, const pl_layer_ref_weights *w, const uint16_t *const *qk_norm,
                              const pl_layer_ref_rows *s, int epilogue_residual, uint16_t *kc, uint16_t *vc,
                              const uint16_t *x, uint16_t *h)
{
    const size_t R = (size_t)s->rows, D = (size_t)m->hidden;
    const size_t qw = (size_t)m->heads * m->head_dim, qkvw = qw + 2 * (size_t)m->kv_heads * m->head_dim;
    uint16_t *xn = malloc(R * D * 2), *qkv = malloc(R * qkvw * 2), *q = malloc(R * qw * 2), *attn = malloc(R * qw * 2);
    int rc = -1;
    if (!xn || !qkv || !q || !attn)
        goto done;
    ref_rmsnorm(x, w->attn_norm, s->rows, m->hidden, m->rms_eps, xn);
    ref_linear(xn, w->qkv, s->rows, (int)qkvw, m->hidden, NULL, 0, s->act_fp8, qkv);
    if (m->qk_norm && !qk_norm)
        goto done;
    if (m->qk_norm)
        ref_qk_norm(m, qk_norm[0], qk_norm[1], s->rows, qkv);
    ref_rope_kv(m, qkv, s, q, kc, vc);
    if (ref_attention(m, s, q, kc, vc, attn) != 0)
        goto done;
    ref_linear(attn, w->o, s->rows, m->hidden, (int)qw, x, epilogue_residual, s->act_fp8, h);
    rc = 0;
done:
    free(xn), free(qkv), free(q), free(attn);
    return rc;
}

/* act [rows][width] = SiLU(gu[:, :width]) · gu[:, width:], rounded to bf16 */
static void ref_swiglu(const uint16_t *gu, size_t rows, size_t width, uint16_t *act)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t i = 0; i < width; i++) {
            const double g = bf(gu[r * 2 * width + i]), u = bf(gu[r * 2 * width + width + i]);
            act[r * width + i] = rb(g / (1.0 + exp(-g)) * u);
        }
}

int pl_layer_ref(const pl_model_config *m, const pl_layer_ref_weights *w, const pl_layer_ref_rows *s,
                 int epilogue_residual, uint16_t *kc, uint16_t *vc, const uint16_t *x, uint16_t *out)
{
    const size_t R = (size_t)s->rows, D = (size_t)m->hidden, I = (size_t)m->intermediate;
    uint16_t *xn = malloc(R * D * 2), *gu = malloc(R * 2 * I * 2), *act = malloc(R * I * 2);
    int rc = -1;
    if (!xn || !gu || !act || ref_attention_half(m, w, NULL, s, epilogue_residual, kc, vc, x, out) != 0)
        goto done;
    ref_rmsnorm(out, w->mlp_norm, s->rows, m->hidden, m->rms_eps, xn);
    ref_linear(xn, w->gate_up, s->rows, (int)(2 * I), m->hidden, NULL, 0, s->act_fp8, gu);
    ref_swiglu(gu, R, I, act);
    ref_linear(act, w->down, s->rows, m->hidden, (int)I, out, epilogue_residual, s->act_fp8, out);
    rc = 0;
done:
    free(xn), free(gu), free(act);
    return rc;
}

/* ---- the MoE half ---- */

/* Row xn's experts (the router's top_k, or the forced ones) and their weights; the margin of its choice. */
static void ref_route(const pl_model_config *m, const uint16_t *router, const uint16_t *xn, const int *force, int *ids,
                      double *weights, double *margin, double *logits)
{
    const int E = m->experts, k = m->top_k;
    for (int e = 0; e < E; e++) {
        double d = 0;
        for (int c = 0; c < m->hidden; c++)
            d += bf(xn[c]) * bf(router[(size_t)e * m->hidden + c]);
        logits[e] = d;
    }
    unsigned char taken[PL_LAYER_REF_MAX_EXPERTS] = {0};
    double kth = HUGE_VAL, next = -HUGE_VAL;
    for (int i = 0; i < k; i++) {
        int best = -1;
        for (int e = 0; e < E; e++)
            if (!taken[e] && (best < 0 || logits[e] > logits[best]))
                best = e;
        ids[i] = force && force[0] >= 0 ? force[i] : best;
        taken[best] = 1;
        kth = logits[best];
    }
    for (int e = 0; e < E; e++)
        next = !taken[e] && logits[e] > next ? logits[e] : next;
    if (margin)
        *margin = k == E ? HUGE_VAL : kth - next;
    double mx = logits[ids[0]], sum = 0;
    for (int i = 0; i < k; i++)
        mx = logits[ids[i]] > mx ? logits[ids[i]] : mx;
    for (int i = 0; i < k; i++)
        sum += weights[i] = exp(logits[ids[i]] - mx);
    for (int i = 0; i < k; i++)
        weights[i] /= sum;
}

/* out = h + Σ weight · down(SwiGLU(gate_up(xn))) over each row's experts (h in out). */
static int ref_moe_half(const pl_model_config *m, const pl_layer_ref_moe_weights *mw, int rows, int epilogue_residual,
                        const pl_layer_ref_routing *routing, uint16_t *out)
{
    const pl_layer_ref_weights *w = &mw->layer;
    const size_t D = (size_t)m->hidden, I = (size_t)m->expert_intermediate;
    const int k = m->top_k;
    uint16_t *xn = malloc(D * 2), *gu = malloc(2 * I * 2), *act = malloc(I * 2), *y = malloc(D * 2);
    double *logits = malloc((size_t)m->experts * sizeof *logits), *acc = malloc(D * sizeof *acc);
    int ids[PL_LAYER_REF_MAX_TOP_K];
    double weights[PL_LAYER_REF_MAX_TOP_K];
    int rc = -1;
    if (!xn || !gu || !act || !y || !logits || !acc || m->experts > PL_LAYER_REF_MAX_EXPERTS ||
        k > PL_LAYER_REF_MAX_TOP_K)
        goto done;
    for (int r = 0; r < rows; r++) {
        uint16_t *h = out + (size_t)r * D;
        ref_rmsnorm(h, w->mlp_norm, 1, m->hidden, m->rms_eps, xn);
        ref_route(m, mw->router, xn, routing && routing->force ? routing->force + (size_t)r * k : NULL, ids, weights,
                  routing && routing->margin ? routing->margin + r : NULL, logits);
        if (routing && routing->ids)
            memcpy(routing->ids + (size_t)r * k, ids, (size_t)k * sizeof *ids);
        memset(acc, 0, D * sizeof *acc);
        for (int i = 0; i < k; i++) {
            ref_linear(xn, w->gate_up + (size_t)ids[i] * 2 * I * D, 1, (int)(2 * I), m->hidden, NULL, 0, 0, gu);
            ref_swiglu(gu, 1, I, act);
            ref_linear(act, w->down + (size_t)ids[i] * D * I, 1, m->hidden, (int)I, NULL, 0, 0, y);
            for (size_t c = 0; c < D; c++)
                acc[c] += weights[i] * bf(y[c]);
        }
        for (size_t c = 0; c < D; c++)
            h[c] = rb(bf(h[c]) + (epilogue_residual ? acc[c] : bf(rb(acc[c]))));
    }
    rc = 0;
done:
    free(xn), free(gu), free(act), free(y), free(logits), free(acc);
    return rc;
}

int pl_layer_ref_moe(const pl_model_config *m, const pl_layer_ref_moe_weights *w, const pl_layer_ref_rows *s,
                     int epilogue_residual, const pl_layer_ref_routing *routing, uint16_t *kc, uint16_t *vc,
                     const uint16_t *x, uint16_t *out)
{
    const uint16_t *qk_norm[2] = {w->q_norm, w->k_norm};
    if (!pl_model_is_moe(m) || ref_attention_half(m, &w->layer, qk_norm, s, epilogue_residual, kc, vc, x, out) != 0)
        return -1;
    return ref_moe_half(m, w, s->rows, epilogue_residual, routing, out);
}

int pl_layer_ref_accept_within(const uint16_t *got, const uint16_t *ref, const uint16_t *x, size_t n, double rel,
                               char *why, size_t whylen)
{
    const double scale = rel / 1e-2;
    double e2 = 0, r2 = 0, u2 = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(bf(got[i]))) {
            snprintf(why, whylen, "output %zu is NaN (unwritten or a NaN reached it)", i);
            return 0;
        }
        const double d = bf(got[i]) - bf(ref[i]), u = bf(ref[i]) - bf(x[i]);
        e2 += d * d, r2 += bf(ref[i]) * bf(ref[i]), u2 += u * u;
    }
    const double rms = sqrt(r2 / (double)n);
    if (!(sqrt(e2 / r2) <= rel)) {
        snprintf(why, whylen, "output relative L2 %.3g > %.3g", sqrt(e2 / r2), rel);
        return 0;
    }
    if (!(u2 > 0 && sqrt(e2 / u2) <= rel)) {
        snprintf(why, whylen, "update (out - x) relative L2 %.3g > %.3g", u2 > 0 ? sqrt(e2 / u2) : HUGE_VAL, rel);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (!(fabs(bf(got[i]) - bf(ref[i])) <= scale * (0.02 * fabs(bf(ref[i])) + 0.03 * rms))) {
            snprintf(why, whylen, "output %zu is %.6g, the reference %.6g", i, bf(got[i]), bf(ref[i]));
            return 0;
        }
    snprintf(why, whylen, "output relative L2 %.3g, update %.3g (bound %.3g)", sqrt(e2 / r2), sqrt(e2 / u2), rel);
    return 1;
}

int pl_layer_ref_accept(const uint16_t *got, const uint16_t *ref, const uint16_t *x, size_t n, char *why, size_t whylen)
{
    return pl_layer_ref_accept_within(got, ref, x, n, 1e-2, why, whylen);
}
