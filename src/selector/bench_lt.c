/* The cublaslt provider: every algorithm cuBLASLt's heuristic proposes for the problem (up to --max-algos), each
 * verified and timed, described by its configuration (algorithm id, tile, stages, split-K, swizzle, cluster). */
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "common/gemm_host.h"
#include "selector/bench.h"
#include "selector/lt_names.h"

#define MAX_ALGOS 64

static cudaDataType lt_type(pl_dtype d)
{
    return d == PL_DTYPE_F16 ? CUDA_R_16F : d == PL_DTYPE_FP8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
}

static int launch_lt(pl_gemm_candidate *c, pl_ctx *ctx, const pl_gemm_operands *ops)
{
    void *ws;
    size_t ws_bytes;
    int max_algos;
    cublasLtHandle_t lt = pl_gemm_bench_lt_handle(c->bench, &ws, &ws_bytes, &max_algos);
    const float alpha = 1.0f, beta = 0.0f;
    /* column-major Dᵀ = op(B)·Aᵀ: cuBLASLt's "A" is our B, its "B" our A */
    const pl_gemm_bench_shape *s = c->shape;
    PL_CUBLAS(ctx, cublasLtMatmul(lt, s->lt_op, &alpha, ops->b, s->lt_a, ops->a, s->lt_b, &beta, ops->d, s->lt_d,
                                  ops->d, s->lt_d, &c->lt_algo, ws, ws_bytes, ctx->stream));
    return 0;
}

static unsigned algo_attr(const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t attr, size_t size)
{
    unsigned long long v = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(algo, attr, &v, size, &written) != CUBLAS_STATUS_SUCCESS)
        return 0;
    return (unsigned)v; /* little-endian: the low bytes hold the value of any width */
}

static const char *named(const char *name, unsigned id, char *buf, size_t len)
{
    if (name)
        return name;
    pl_snprintf(buf, len, "id%u", id);
    return buf;
}

/* "algo 66 tile 128x256 stages 64x4 splitK 1 reduction 0 swizzle 1 custom 0 cluster 2x1x1" and the same as JSON. */
static char *describe(const cublasLtMatmulHeuristicResult_t *h, json_t **config)
{
    const cublasLtMatmulAlgo_t *a = &h->algo;
    const int id = (int)algo_attr(a, CUBLASLT_ALGO_CONFIG_ID, sizeof(int32_t));
    const unsigned tile = algo_attr(a, CUBLASLT_ALGO_CONFIG_TILE_ID, sizeof(uint32_t));
    const unsigned stages = algo_attr(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, sizeof(uint32_t));
    const int splitk = (int)algo_attr(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, sizeof(int32_t));
    const unsigned reduction = algo_attr(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, sizeof(uint32_t));
    const unsigned swizzle = algo_attr(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, sizeof(uint32_t));
    const unsigned custom = algo_attr(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, sizeof(uint32_t));
    const unsigned cluster = algo_attr(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, sizeof(uint16_t));
    char tb[32], sb[32], cb[32];
    const char *tile_s = named(pl_lt_tile_name(tile), tile, tb, sizeof tb);
    const char *stages_s = named(pl_lt_stages_name(stages), stages, sb, sizeof sb);
    const char *cluster_s = cluster ? named(pl_lt_cluster_name(cluster), cluster, cb, sizeof cb) : "auto";
    *config = json_pack("{s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:s, s:f, s:I}", "algo_id", id, "tile", tile_s, "stages",
                        stages_s, "splitk", splitk, "reduction_scheme", (int)reduction, "cta_swizzling", (int)swizzle,
                        "custom_option", (int)custom, "cluster", cluster_s, "waves", (double)h->wavesCount,
                        "workspace_bytes", (json_int_t)h->workspaceSize);
    return pl_strfmt("cublasLt algo %d tile %s stages %s splitK %d reduction %u swizzle %u custom %u cluster %s", id,
                     tile_s, stages_s, splitk, reduction, swizzle, custom, cluster_s);
}

int pl_gemm_bench_cublaslt(pl_gemm_bench *b, pl_gemm_bench_shape *s, pl_gemm_record_list *out, char *why, size_t whylen)
{
    void *ws;
    size_t ws_bytes;
    int max_algos;
    cublasLtHandle_t lt = pl_gemm_bench_lt_handle(b, &ws, &ws_bytes, &max_algos);
    if (max_algos > MAX_ALGOS)
        max_algos = MAX_ALGOS;
    const uint64_t m = (uint64_t)s->shape->m, n = (uint64_t)s->shape->n, k = (uint64_t)s->shape->k;
    const cudaDataType in = lt_type(s->in_dtype), outt = s->out_dtype == PL_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
    const int nk = pl_gemm_bench_layout(b) == PL_GEMM_B_NK;
    pl_gemm_candidate c;
    memset(&c, 0, sizeof c);
    c.bench = b;
    c.shape = s;
    c.launch = launch_lt;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t results[MAX_ALGOS];
    int returned = 0, rc = 0;
    const cublasOperation_t ta = nk ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    pl_gemm_bench_lt_release(s);
    cublasStatus_t st = cublasLtMatmulDescCreate(&s->lt_op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(s->lt_op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(s->lt_op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    /* our B: N×K row-major is K×N column-major (ld K, transposed); K×N row-major is N×K column-major (ld N) */
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&s->lt_a, in, nk ? k : n, nk ? n : k, (int64_t)(nk ? k : n));
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&s->lt_b, in, k, m, (int64_t)k);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&s->lt_d, outt, n, m, (int64_t)n);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceCreate(&pref);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                  sizeof ws_bytes);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(lt, s->lt_op, s->lt_a, s->lt_b, s->lt_d, s->lt_d, pref, max_algos, results,
                                            &returned);
    if (st != CUBLAS_STATUS_SUCCESS || returned == 0) {
        const char *hint = s->in_dtype == PL_DTYPE_FP8 && !nk ? " (FP8 needs B N×K)" : "";
        pl_snprintf(why, whylen, "cuBLASLt returned no algorithm for this problem%s%s%s", hint,
                    st != CUBLAS_STATUS_SUCCESS ? ": " : "",
                    st != CUBLAS_STATUS_SUCCESS ? cublasGetStatusString(st) : "");
        returned = 0;
    }
    for (int i = 0; i < returned && rc == 0; i++) {
        if (results[i].state != CUBLAS_STATUS_SUCCESS)
            continue;
        c.lt_algo = results[i].algo;
        json_t *config;
        char *name = describe(&results[i], &config);
        rc = pl_gemm_bench_evaluate(b, &c, "cublaslt", name, config, out);
        free(name);
    }
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    return rc; /* the descriptors stay with the shape: its configurations may still be timed in rounds */
}

void pl_gemm_bench_lt_release(pl_gemm_bench_shape *s)
{
    if (s->lt_d)
        cublasLtMatrixLayoutDestroy(s->lt_d);
    if (s->lt_b)
        cublasLtMatrixLayoutDestroy(s->lt_b);
    if (s->lt_a)
        cublasLtMatrixLayoutDestroy(s->lt_a);
    if (s->lt_op)
        cublasLtMatmulDescDestroy(s->lt_op);
    s->lt_op = NULL;
    s->lt_a = s->lt_b = s->lt_d = NULL;
}
