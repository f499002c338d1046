/* perflab calc precision: each dtype's error against float64 (precision.h; method in docs/calc.md). */
#include "calc/precision.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"
#include "perflab/stats.h"

const pl_fp_format pl_fp_fp32 = {"fp32", 8, 23, FLT_MAX, 1};
const pl_fp_format pl_fp_tf32 = {"tf32", 8, 10, 0x1.ffcp127, 1};
const pl_fp_format pl_fp_bf16 = {"bf16", 8, 7, 0x1.fep127, 1};
const pl_fp_format pl_fp_fp16 = {"fp16", 5, 10, 65504.0, 1};
const pl_fp_format pl_fp_e4m3 = {"fp8_e4m3", 4, 3, 448.0, 0};
const pl_fp_format pl_fp_e5m2 = {"fp8_e5m2", 5, 2, 57344.0, 1};

double pl_fp_round(double x, const pl_fp_format *f)
{
    if (isnan(x) || x == 0)
        return x;
    if (isinf(x))
        return f->has_inf ? x : copysign(f->max, x);
    const int bias = (1 << (f->exp_bits - 1)) - 1, emin = 1 - bias;
    const double a = fabs(x);
    int e;
    frexp(a, &e); /* a = m * 2^e with m in [0.5, 1) */
    e -= 1;       /* a = m' * 2^e with m' in [1, 2) */
    if (e < emin)
        e = emin; /* subnormals: a fixed quantum */
    const double q = ldexp(1.0, e - f->man_bits);
    double r = nearbyint(a / q) * q; /* a / q is exact (a power-of-two scale); ties to even */
    if (r > f->max)
        r = f->has_inf ? INFINITY : f->max;
    return copysign(r, x);
}

/* ---- the variants ---- */

typedef struct variant {
    const char *name;
    const pl_fp_format *in, *out;
    pl_prec_scale scale;
    pl_dtype tol;
} variant;

static const variant variants[] = {
    {"fp32", &pl_fp_fp32, &pl_fp_fp32, PL_SCALE_NONE, PL_DTYPE_F32},
    {"tf32", &pl_fp_tf32, &pl_fp_fp32, PL_SCALE_NONE, PL_DTYPE_TF32},
    {"bf16", &pl_fp_bf16, &pl_fp_bf16, PL_SCALE_NONE, PL_DTYPE_BF16},
    {"fp16", &pl_fp_fp16, &pl_fp_fp16, PL_SCALE_NONE, PL_DTYPE_F16},
    {"fp8_e4m3/tensor", &pl_fp_e4m3, &pl_fp_bf16, PL_SCALE_TENSOR, PL_DTYPE_FP8},
    {"fp8_e4m3/block", &pl_fp_e4m3, &pl_fp_bf16, PL_SCALE_BLOCK, PL_DTYPE_FP8},
    {"fp8_e5m2/tensor", &pl_fp_e5m2, &pl_fp_bf16, PL_SCALE_TENSOR, PL_DTYPE_FP8},
    {"fp8_e5m2/block", &pl_fp_e5m2, &pl_fp_bf16, PL_SCALE_BLOCK, PL_DTYPE_FP8},
};
#define N_VARIANTS (sizeof variants / sizeof variants[0])

/* x[rows][inner] rounded to the variant's input format, scaled per tensor or per block of `block` along inner. */
static void quantize(const double *x, double *y, size_t rows, size_t inner, const variant *v, int block)
{
    const size_t n = rows * inner;
    const size_t span = v->scale == PL_SCALE_BLOCK ? (size_t)block : v->scale == PL_SCALE_TENSOR ? n : 1;
    for (size_t r = 0; r < (v->scale == PL_SCALE_TENSOR ? 1 : rows); r++) {
        const size_t row_len = v->scale == PL_SCALE_TENSOR ? n : inner;
        for (size_t b0 = 0; b0 < row_len; b0 += span) {
            const size_t b1 = b0 + span < row_len ? b0 + span : row_len;
            const double *xs = x + r * inner;
            double *ys = y + r * inner;
            double s = 1.0;
            if (v->scale != PL_SCALE_NONE) {
                double amax = 0;
                for (size_t i = b0; i < b1; i++)
                    amax = fmax(amax, fabs(xs[i]));
                s = amax > 0 ? v->in->max / amax : 1.0;
            }
            for (size_t i = b0; i < b1; i++)
                ys[i] = pl_fp_round(xs[i] * s, v->in) / s;
        }
    }
}

/* ---- the operations: float64 (reference) and fp32 on rounded inputs (emulated) ---- */

typedef struct problem {
    const pl_prec_request *req;
    double *in[3];  /* the random inputs, float64 */
    size_t len[3];  /* elements of each */
    size_t rows[3]; /* each as rows x inner, inner the reduction dimension */
    size_t n_in;
    size_t n_out;
} problem;

static void gemm(const problem *p, double *const *x, double *out, int exact)
{
    const size_t M = (size_t)p->req->dims[0], N = (size_t)p->req->dims[1], K = (size_t)p->req->dims[2];
    for (size_t m = 0; m < M; m++)
        for (size_t n = 0; n < N; n++) {
            const double *a = x[0] + m * K, *b = x[1] + n * K;
            double acc = 0;
            float accf = 0;
            for (size_t k = 0; k < K; k++) {
                if (exact)
                    acc += a[k] * b[k];
                else
                    accf += (float)a[k] * (float)b[k];
            }
            out[m * N + n] = exact ? acc : accf;
        }
}

static void rmsnorm(const problem *p, double *const *x, double *out, int exact)
{
    const size_t R = (size_t)p->req->dims[0], C = (size_t)p->req->dims[1];
    const double eps = 1e-6;
    for (size_t r = 0; r < R; r++) {
        const double *xr = x[0] + r * C;
        if (exact) {
            double ss = 0;
            for (size_t c = 0; c < C; c++)
                ss += xr[c] * xr[c];
            const double inv = 1.0 / sqrt(ss / C + eps);
            for (size_t c = 0; c < C; c++)
                out[r * C + c] = xr[c] * inv * x[1][c];
        } else {
            float ss = 0;
            for (size_t c = 0; c < C; c++)
                ss += (float)xr[c] * (float)xr[c];
            const float inv = 1.0f / sqrtf(ss / (float)C + (float)eps);
            for (size_t c = 0; c < C; c++)
                out[r * C + c] = (float)xr[c] * inv * (float)x[1][c];
        }
    }
}

static void softmax_rows(const double *x, double *out, size_t R, size_t C, int exact)
{
    for (size_t r = 0; r < R; r++) {
        const double *xr = x + r * C;
        double *o = out + r * C;
        double mx = -INFINITY;
        for (size_t c = 0; c < C; c++)
            mx = fmax(mx, xr[c]);
        if (exact) {
            double s = 0;
            for (size_t c = 0; c < C; c++)
                s += (o[c] = exp(xr[c] - mx));
            for (size_t c = 0; c < C; c++)
                o[c] /= s;
        } else {
            float s = 0;
            for (size_t c = 0; c < C; c++)
                s += (float)(o[c] = expf((float)xr[c] - (float)mx));
            for (size_t c = 0; c < C; c++)
                o[c] = (float)o[c] / s;
        }
    }
}

static void softmax(const problem *p, double *const *x, double *out, int exact)
{
    softmax_rows(x[0], out, (size_t)p->req->dims[0], (size_t)p->req->dims[1], exact);
}

/* One head: O = softmax(Q K^T / sqrt(D)) V; the probabilities are rounded to the input dtype before P V, as
 * flash-attention kernels feed them to the tensor cores. */
static void attention(const problem *p, double *const *x, double *out, int exact, const variant *v)
{
    const size_t S = (size_t)p->req->dims[0], D = (size_t)p->req->dims[1];
    double *s = pl_xcalloc(S * S, sizeof *s), *pr = pl_xcalloc(S * S, sizeof *pr);
    const double scale = 1.0 / sqrt((double)D);
    for (size_t i = 0; i < S; i++)
        for (size_t j = 0; j < S; j++) {
            double acc = 0;
            float accf = 0;
            for (size_t d = 0; d < D; d++) {
                if (exact)
                    acc += x[0][i * D + d] * x[1][j * D + d];
                else
                    accf += (float)x[0][i * D + d] * (float)x[1][j * D + d];
            }
            s[i * S + j] = exact ? acc * scale : (double)(accf * (float)scale);
        }
    softmax_rows(s, pr, S, S, exact);
    if (!exact)
        quantize(pr, pr, S, S, v, p->req->block);
    for (size_t i = 0; i < S; i++)
        for (size_t d = 0; d < D; d++) {
            double acc = 0;
            float accf = 0;
            for (size_t j = 0; j < S; j++) {
                if (exact)
                    acc += pr[i * S + j] * x[2][j * D + d];
                else
                    accf += (float)pr[i * S + j] * (float)x[2][j * D + d];
            }
            out[i * D + d] = exact ? acc : accf;
        }
    free(s);
    free(pr);
}

static void compute(const problem *p, double *const *x, double *out, int exact, const variant *v)
{
    switch (p->req->op) {
    case PL_PREC_GEMM: gemm(p, x, out, exact); break;
    case PL_PREC_NORM: rmsnorm(p, x, out, exact); break;
    case PL_PREC_SOFTMAX: softmax(p, x, out, exact); break;
    case PL_PREC_ATTENTION: attention(p, x, out, exact, v); break;
    }
}

static void make_problem(const pl_prec_request *q, problem *p)
{
    memset(p, 0, sizeof *p);
    p->req = q;
    const size_t a = (size_t)q->dims[0], b = (size_t)q->dims[1], c = (size_t)q->dims[2];
    switch (q->op) {
    case PL_PREC_GEMM: /* A M x K, B N x K (both contiguous along K) */
        p->n_in = 2;
        p->rows[0] = a, p->len[0] = a * c;
        p->rows[1] = b, p->len[1] = b * c;
        p->n_out = a * b;
        break;
    case PL_PREC_NORM: /* x rows x cols, the weight */
        p->n_in = 2;
        p->rows[0] = a, p->len[0] = a * b;
        p->rows[1] = 1, p->len[1] = b;
        p->n_out = a * b;
        break;
    case PL_PREC_SOFTMAX:
        p->n_in = 1;
        p->rows[0] = a, p->len[0] = a * b;
        p->n_out = a * b;
        break;
    case PL_PREC_ATTENTION: /* Q, K, V: S x D each */
        p->n_in = 3;
        for (int i = 0; i < 3; i++)
            p->rows[i] = a, p->len[i] = a * b;
        p->n_out = a * b;
        break;
    }
    pl_rng rng;
    pl_rng_seed(&rng, q->seed);
    for (size_t i = 0; i < p->n_in; i++) {
        p->in[i] = pl_xcalloc(p->len[i], sizeof(double));
        const int weight = q->op == PL_PREC_NORM && i == 1;
        for (size_t k = 0; k < p->len[i]; k++) {
            const double u = 2 * pl_rng_uniform(&rng) - 1;
            p->in[i][k] = weight ? 1.0 + 0.5 * u : q->input_scale * u;
        }
    }
}

static void measure(const double *y, const double *ref, size_t n, pl_prec_row *row)
{
    double num = 0, den = 0, maxabs = 0, maxrel = 0;
    for (size_t i = 0; i < n; i++)
        den += ref[i] * ref[i];
    const double rms = sqrt(den / (double)n);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(y[i])) {
            row->nonfinite++;
            continue;
        }
        const double d = fabs(y[i] - ref[i]);
        num += d * d;
        maxabs = fmax(maxabs, d);
        if (fabs(ref[i]) >= 0.01 * rms) /* relative error only where the value is not near zero */
            maxrel = fmax(maxrel, d / fabs(ref[i]));
    }
    row->rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
    row->max_abs = maxabs;
    row->max_rel = maxrel;
    row->safe = row->nonfinite == 0 && row->rel_l2 <= row->tolerance;
}

static int selected(const char *only, const char *name)
{
    if (!only)
        return 1;
    const size_t n = strlen(name);
    for (const char *p = only; *p;) {
        const size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        /* "fp8_e4m3" selects both its scalings */
        if (len < n && strncmp(p, name, len) == 0 && name[len] == '/')
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

static double max_work = PL_PREC_MAX_WORK;

void pl_prec_limit_work(double w)
{
    max_work = w > 0 && w < PL_PREC_MAX_WORK ? w : PL_PREC_MAX_WORK;
}

/* The largest tensor and the multiply-adds of one dtype's pass, bounded before anything is allocated (the
 * float64 reference and every dtype run on one host core: 2^27 multiply-adds take about 2 s for all dtypes). */
static int check_size(const pl_prec_request *q, char *err, size_t errlen)
{
    const double a = (double)q->dims[0], b = (double)q->dims[1], c = (double)q->dims[2];
    double largest = a * b, work = a * b;
    switch (q->op) {
    case PL_PREC_GEMM:
        largest = fmax(a * b, fmax(a * c, b * c));
        work = a * b * c;
        break;
    case PL_PREC_ATTENTION: /* the S x S scores */
        largest = fmax(a * a, a * b);
        work = a * a * b;
        break;
    case PL_PREC_NORM:
    case PL_PREC_SOFTMAX: break;
    }
    if (largest > PL_PREC_MAX_ELEMENTS || work > max_work) {
        pl_snprintf(err, errlen,
                    "--shape %lldx%lld%s%.0lld: %.3g elements and %.3g multiply-adds; the calculator takes at most "
                    "%.3g and %.3g (a smaller shape gives the same error statistics)",
                    q->dims[0], q->dims[1], q->op == PL_PREC_GEMM ? "x" : "", q->op == PL_PREC_GEMM ? q->dims[2] : 0,
                    largest, work, (double)PL_PREC_MAX_ELEMENTS, max_work);
        return -1;
    }
    return 0;
}

int pl_precision_run(const pl_prec_request *q, pl_prec_row **rows, size_t *n, char *err, size_t errlen)
{
    *rows = NULL;
    *n = 0;
    for (int i = 0; i < 3; i++)
        if (q->dims[i] < 0 || (i < (q->op == PL_PREC_GEMM ? 3 : 2) && q->dims[i] <= 0)) {
            pl_snprintf(err, errlen, "--shape: every dimension must be positive");
            return -1;
        }
    if (check_size(q, err, errlen) != 0)
        return -1;
    if (q->block <= 0 || !(q->input_scale > 0)) {
        pl_snprintf(err, errlen, "--block and --input-scale must be positive");
        return -1;
    }
    size_t chosen = 0;
    for (size_t v = 0; v < N_VARIANTS; v++)
        chosen += selected(q->only, variants[v].name);
    if (!chosen) {
        pl_snprintf(err, errlen,
                    "--dtypes '%s' names no dtype: fp32, tf32, bf16, fp16, fp8_e4m3[/tensor|/block], "
                    "fp8_e5m2[/tensor|/block]",
                    q->only);
        return -1;
    }
    problem p;
    make_problem(q, &p);
    double *ref = pl_xcalloc(p.n_out, sizeof *ref), *y = pl_xcalloc(p.n_out, sizeof *y);
    compute(&p, p.in, ref, 1, NULL);
    double *qin[3] = {NULL, NULL, NULL};
    for (size_t i = 0; i < p.n_in; i++)
        qin[i] = pl_xcalloc(p.len[i], sizeof(double));
    pl_prec_row *out = pl_xcalloc(chosen, sizeof *out);
    for (size_t v = 0; v < N_VARIANTS; v++) {
        const variant *var = &variants[v];
        if (!selected(q->only, var->name))
            continue;
        for (size_t i = 0; i < p.n_in; i++)
            quantize(p.in[i], qin[i], p.rows[i], p.len[i] / p.rows[i], var, q->block);
        compute(&p, qin, y, 0, var);
        for (size_t i = 0; i < p.n_out; i++)
            y[i] = pl_fp_round(y[i], var->out);
        pl_prec_row *row = &out[(*n)++];
        row->name = var->name;
        row->out = var->out->name;
        row->tolerance = pl_default_tolerance(var->tol);
        measure(y, ref, p.n_out, row);
    }
    for (size_t i = 0; i < p.n_in; i++) {
        free(p.in[i]);
        free(qin[i]);
    }
    free(ref);
    free(y);
    *rows = out;
    return 0;
}

static const char *const op_names[] = {"gemm", "norm", "softmax", "attention"};

int pl_prec_op_from_name(const char *name)
{
    return pl_index_of(op_names, 4, name);
}

int pl_prec_parse_shape(pl_prec_op op, const char *text, long long dims[3], char *err, size_t errlen)
{
    const int want = op == PL_PREC_GEMM ? 3 : 2;
    dims[0] = dims[1] = dims[2] = 0;
    int got = 0;
    const char *p = text ? text : "";
    while (got < 3 && *p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || v <= 0 || errno == ERANGE || v > PL_PREC_MAX_DIM) {
            if (end != p && v > 0) {
                pl_snprintf(err, errlen, "--shape '%s': a dimension is at most %d", PL_ESC(text), PL_PREC_MAX_DIM);
                return -1;
            }
            break;
        }
        dims[got++] = v;
        p = end;
        if (*p != 'x')
            break;
        p++;
    }
    if (got != want || *p) {
        static const char *const forms[] = {"MxNxK (e.g. 256x256x1024)", "ROWSxCOLS (e.g. 64x4096)",
                                            "ROWSxCOLS (e.g. 64x4096)", "SEQxHEAD_DIM (e.g. 512x128)"};
        pl_snprintf(err, errlen, "--shape '%s': %s takes %s", PL_ESC(text ? text : ""), op_names[op], forms[op]);
        return -1;
    }
    return 0;
}

json_t *pl_precision_json(const pl_prec_request *q, const pl_prec_row *rows, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:o, s:o, s:o, s:f, s:b, s:I}", "dtype", rows[i].name,
                                             "output", rows[i].out, "rel_l2", pl_json_real(rows[i].rel_l2), "max_abs",
                                             pl_json_real(rows[i].max_abs), "max_rel", pl_json_real(rows[i].max_rel),
                                             "tolerance", rows[i].tolerance, "safe", rows[i].safe, "nonfinite",
                                             (json_int_t)rows[i].nonfinite));
    json_t *shape = json_array();
    for (int i = 0; i < (q->op == PL_PREC_GEMM ? 3 : 2); i++)
        json_array_append_new(shape, json_integer(q->dims[i]));
    return json_pack("{s:s, s:o, s:i, s:I, s:f, s:s, s:o}", "op", op_names[q->op], "shape", shape, "block", q->block,
                     "seed", (json_int_t)q->seed, "input_scale", q->input_scale, "reference",
                     "float64 on the same random inputs; emulated dtypes: inputs rounded (FP8 scaled), fp32 "
                     "arithmetic, output rounded",
                     "rows", arr);
}
