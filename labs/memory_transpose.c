/* memory:transpose — out (cols × rows) = in (rows × cols)ᵀ in fp32: naive (uncoalesced writes), a shared-memory
 * tile (coalesced both ways, bank conflicts on the column reads), the padded tile (conflict-free), 64×64 tiles with
 * 16-byte accesses and a swizzled tile, and the padded tile with 4× the loads in flight (padded_ilp); against
 * cudaMemcpyAsync of the same bytes, the ceiling, and cuBLAS's transpose (cublasSgeam with op T), the library a user
 * would call instead. */
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "common/copy_ceiling.h"
#include "common/gemm_host.h"
#include "memory/transpose.h"
#include "memory/transpose_ilp.h"

#define INPUT_STREAM_ID 1

typedef struct transpose_state {
    size_t rows, cols, n;
    float *in, *out;  /* device */
    float *in_host;   /* the input as the GPU holds it */
    float *out_host;  /* the checked output, copied back */
    double *ref;      /* the transpose of in_host, in float64 for pl_verify_f32 */
    int last_is_copy; /* the variant just run was the ceiling copy */
    cublasHandle_t cublas; /* for the library reference; destroyed at teardown */
} transpose_state;

static const pl_param_def transpose_params[] = {
    PL_INT_PARAM("rows", "16384", 1, 2097120, "rows of the input (columns of the output)", .small_value = "777"),
    PL_INT_PARAM("cols", "16384", 1, 1e9, "columns of the input (rows of the output)", .small_value = "1001"),
    PL_PARAMS_END,
};

static void transpose_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "rows") * (double)pl_param_int(p, "cols");
    c->bytes_read = 4.0 * n;
    c->bytes_written = 4.0 * n;
    c->elements = n;
}

/* Before any work (in the parent, and again by the setup): a matrix of at most 2^34 elements, both in the GPU. */
static int transpose_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    const double n = (double)pl_param_int(p, "rows") * (double)pl_param_int(p, "cols");
    if (n > (double)((size_t)1 << 34))
        return pl_params_refuse(err, errlen,
                                "rows × cols = %.0f elements is more than 2^34 (64 GiB a matrix); pass smaller "
                                "--rows/--cols",
                                n);
    return pl_check_device_memory(gpu, 2.0 * 4.0 * n, "pass smaller --rows/--cols", err, errlen);
}

static int transpose_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    char refused[256];
    if (transpose_check_params(p, NULL, refused, sizeof refused) != 0)
        return pl_fail(ctx, "memory:transpose: %s", refused);
    transpose_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->rows = (size_t)pl_param_int(p, "rows");
    s->cols = (size_t)pl_param_int(p, "cols");
    s->n = s->rows * s->cols;
    const size_t bytes = s->n * sizeof(float);
    s->in = pl_device_alloc(ctx, bytes);
    s->out = pl_device_alloc(ctx, bytes);
    s->in_host = pl_host_alloc(ctx, bytes);
    s->out_host = pl_host_alloc(ctx, bytes);
    s->ref = pl_host_alloc(ctx, s->n * sizeof(double));
    if (!s->in || !s->out || !s->in_host || !s->out_host || !s->ref)
        return -1;
    PL_TRY(pl_fill_uniform_f32(ctx, s->in, s->n, -1.0f, 1.0f, INPUT_STREAM_ID));
    PL_CUDA(ctx, cudaMemcpyAsync(s->in_host, s->in, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    /* in 64x64 blocks, so that neither side walks memory with a stride for long */
    for (size_t r0 = 0; r0 < s->rows; r0 += 64)
        for (size_t c0 = 0; c0 < s->cols; c0 += 64)
            for (size_t r = r0; r < r0 + 64 && r < s->rows; r++)
                for (size_t c = c0; c < c0 + 64 && c < s->cols; c++)
                    s->ref[c * s->rows + r] = (double)s->in_host[r * s->cols + c];
    PL_CUBLAS(ctx, cublasCreate(&s->cublas));
    *state = s;
    return 0;
}

static void transpose_teardown(pl_ctx *ctx, void *state)
{
    transpose_state *s = state;
    (void)ctx;
    if (s->cublas)
        cublasDestroy(s->cublas);
    s->cublas = NULL;
}

static int transpose_poison(pl_ctx *ctx, void *state)
{
    transpose_state *s = state;
    return pl_poison(ctx, s->out, s->n * sizeof(float));
}

static int transpose_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    transpose_state *s = state;
    const size_t bytes = s->n * sizeof(float);
    if (s->last_is_copy)
        return pl_copy_ceiling_check(ctx, s->out, s->in_host, bytes, s->out_host, v);
    PL_CUDA(ctx, cudaMemcpyAsync(s->out_host, s->out, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_f32(s->out_host, s->ref, s->n, PL_DTYPE_F32, 0.0, v);
    /* a transpose moves bits: any difference at all is a wrong element */
    if (v->passed && v->max_abs_error != 0.0)
        pl_verify_set(v, 0, "element %zu differs from the input element it should be (by %.3g): a transpose is exact",
                      v->max_error_index, v->max_abs_error);
    return 0;
}

typedef cudaError_t (*transpose_fn)(const float *, float *, size_t, size_t, cudaStream_t);

static int run_with(pl_ctx *ctx, transpose_state *s, transpose_fn fn)
{
    s->last_is_copy = 0;
    PL_CUDA(ctx, fn(s->in, s->out, s->rows, s->cols, ctx->stream));
    return 0;
}

static int run_naive(pl_ctx *ctx, void *state)
{
    return run_with(ctx, state, pl_transpose_f32_naive);
}

static int run_smem(pl_ctx *ctx, void *state)
{
    return run_with(ctx, state, pl_transpose_f32_smem);
}

static int run_padded(pl_ctx *ctx, void *state)
{
    return run_with(ctx, state, pl_transpose_f32_padded);
}

static int run_vec16(pl_ctx *ctx, void *state)
{
    return run_with(ctx, state, pl_transpose_f32_vec16);
}

static int run_ilp(pl_ctx *ctx, void *state)
{
    return run_with(ctx, state, pl_transpose_f32_ilp);
}

/* cuBLAS is column-major: the row-major input is a cols × rows matrix (leading dimension cols), the row-major
 * output a rows × cols one (leading dimension rows); C = 1·Aᵀ + 0·B, B not read (C passed for it). */
static int run_cublas_geam(pl_ctx *ctx, void *state)
{
    transpose_state *s = state;
    const float one = 1.0f, zero = 0.0f;
    s->last_is_copy = 0;
    PL_CUBLAS(ctx, cublasSetStream(s->cublas, ctx->stream));
    PL_CUBLAS(ctx, cublasSgeam(s->cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)s->rows, (int)s->cols, &one, s->in,
                               (int)s->cols, &zero, s->out, (int)s->rows, s->out, (int)s->rows));
    PL_CUDA(ctx, cudaGetLastError());
    return 0;
}

static int run_memcpy(pl_ctx *ctx, void *state)
{
    transpose_state *s = state;
    s->last_is_copy = 1;
    PL_CUDA(ctx, cudaMemcpyAsync(s->out, s->in, s->n * sizeof(float), cudaMemcpyDeviceToDevice, ctx->stream));
    return 0;
}

static const pl_variant transpose_variants[] = {
    PL_VARIANT("baseline", run_naive,
               "naive: coalesced reads, each warp's 32 writes in 32 rows of the output (32 sectors for 128 bytes)"),
    PL_VARIANT("smem_tile", run_smem,
               "32x32 tile through shared memory: both global sides coalesced; column reads 32-way bank conflicts"),
    PL_VARIANT("padded_tile", run_padded,
               "the tile padded to 33 words a row: column reads spread over the 32 banks (conflict-free)"),
    PL_VARIANT("vec16_swizzled", run_vec16,
               "64x64 tiles, 16-byte global loads and stores; the tile XOR-swizzled in 16-byte groups, "
               "conflict-free both ways"),
    PL_VARIANT("padded_ilp", run_ilp,
               "64x64 padded tile, 16 loads in flight a thread (4x padded_tile's): whole lines both sides"),
    PL_VARIANT("cuda_memcpy", run_memcpy,
               "cudaMemcpyAsync device-to-device of the same bytes: the ceiling (checked as a copy)",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANT("cublas_geam", run_cublas_geam,
               "cublasSgeam with op T (C = Aᵀ): the library transpose a user would call instead",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_memory_transpose = {
    .group = "memory",
    .name = "transpose",
    .summary = "fp32 rows x cols transpose: naive, shared tile, padded tile, 16-byte swizzled tile, more loads in "
               "flight vs a copy and cuBLAS",
    .req = {.needs_gpu = 1},
    .params = transpose_params,
    .variants = transpose_variants,
    .counters = transpose_counters,
    .setup = transpose_setup,
    .teardown = transpose_teardown,
    .poison = transpose_poison,
    .check = transpose_check,
    .check_params = transpose_check_params,
};
