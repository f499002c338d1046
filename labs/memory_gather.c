/* memory:gather — an embedding lookup, an inference engine's first step: rows rows of a bf16 [vocab x dim] table
 * gathered by int32 token ids, with one 2-byte element per thread, with a warp per row and 16-byte accesses, and a
 * device-to-device copy of the same bytes, the ceiling both are judged against. */
#include <stdlib.h>
#include <string.h>
#include "labs.h"
#include "perflab/perflab.h"
#include "common/copy_ceiling.h"
#include "memory/memory_kernels.h"

#define TABLE_STREAM_ID 1 /* per-buffer seed streams */
#define IDS_STREAM_ID   2

typedef struct gather_state {
    size_t vocab, dim, rows;
    uint16_t *table, *out; /* device, bf16 */
    int32_t *ids;          /* device */
    uint16_t *table_host;  /* the table as the GPU holds it (the ceiling copy's expected bytes) */
    uint16_t *out_host;    /* the checked output, copied back */
    double *ref;           /* the gathered rows in float64, for pl_verify_bf16 */
} gather_state;

static const pl_param_def gather_params[] = {
    PL_INT_PARAM("vocab", "128256", 1, 2147483647, "rows of the table; ids are drawn from [0, vocab)",
                 .small_value = "5003"),
    PL_INT_PARAM("dim", "4096", 1, 1048576, "bf16 elements a row", .small_value = "2053"),
    PL_INT_PARAM("rows", "16384", 1, 1e9, "ids looked up: rows of the output", .small_value = "333"),
    PL_BOOL_PARAM("sorted", "false", "sort the ids ascending, so that neighbouring warps read nearby table rows"),
    PL_PARAMS_END,
};

/* the gathered rows read and written once, plus the ids */
static void gather_counters(const pl_params *p, pl_counters *c)
{
    const double rows = (double)pl_param_int(p, "rows"), dim = (double)pl_param_int(p, "dim");
    c->bytes_read = 2.0 * rows * dim + 4.0 * rows;
    c->bytes_written = 2.0 * rows * dim;
    c->elements = rows * dim;
}

static int gather_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    const double vocab = (double)pl_param_int(p, "vocab"), dim = (double)pl_param_int(p, "dim");
    const double rows = (double)pl_param_int(p, "rows");
    return pl_check_device_memory(gpu, 2.0 * vocab * dim + 2.0 * rows * dim + 4.0 * rows,
                                  "pass a smaller --vocab, --dim or --rows", err, errlen);
}

static int compare_ids(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* uniform ids in [0, vocab), a function of the seed alone; sorted when asked */
static void make_ids(const pl_ctx *ctx, int32_t *ids, size_t rows, size_t vocab, int sorted)
{
    for (size_t r = 0; r < rows; r++) {
        const double u = (double)pl_uniform_host(ctx->seed, IDS_STREAM_ID, r, 0.0f, 1.0f);
        const size_t id = (size_t)(u * (double)vocab);
        ids[r] = (int32_t)(id < vocab ? id : vocab - 1);
    }
    if (sorted)
        qsort(ids, rows, sizeof *ids, compare_ids);
}

static int gather_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    gather_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->vocab = (size_t)pl_param_int(p, "vocab");
    s->dim = (size_t)pl_param_int(p, "dim");
    s->rows = (size_t)pl_param_int(p, "rows");
    const size_t table_n = s->vocab * s->dim, out_n = s->rows * s->dim;
    int32_t *ids_host = pl_host_alloc(ctx, s->rows * sizeof(int32_t));
    s->table = pl_device_alloc(ctx, table_n * sizeof(uint16_t));
    s->out = pl_device_alloc(ctx, out_n * sizeof(uint16_t));
    s->ids = pl_device_alloc(ctx, s->rows * sizeof(int32_t));
    s->table_host = pl_host_alloc(ctx, table_n * sizeof(uint16_t));
    s->out_host = pl_host_alloc(ctx, out_n * sizeof(uint16_t));
    s->ref = pl_host_alloc(ctx, out_n * sizeof(double));
    if (!ids_host || !s->table || !s->out || !s->ids || !s->table_host || !s->out_host || !s->ref)
        return -1;

    make_ids(ctx, ids_host, s->rows, s->vocab, pl_param_bool(p, "sorted"));
    PL_TRY(pl_fill_uniform_bf16(ctx, s->table, table_n, -1.0f, 1.0f, TABLE_STREAM_ID));
    PL_CUDA(ctx, cudaMemcpyAsync(s->ids, ids_host, s->rows * sizeof(int32_t), cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx,
            cudaMemcpyAsync(s->table_host, s->table, table_n * sizeof(uint16_t), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t r = 0; r < s->rows; r++) {
        const uint16_t *row = s->table_host + (size_t)ids_host[r] * s->dim;
        for (size_t c = 0; c < s->dim; c++)
            s->ref[r * s->dim + c] = pl_bf16_to_double(row[c]);
    }
    *state = s;
    return 0;
}

static int gather_poison(pl_ctx *ctx, void *state)
{
    gather_state *s = state;
    return pl_poison(ctx, s->out, s->rows * s->dim * sizeof(uint16_t));
}

/* The ceiling copies the table's bytes into the output, the table again from its start while the output has room
 * (when rows > vocab). Its run and its check walk the same pieces. */
static size_t copy_piece(const gather_state *s, size_t offset)
{
    const size_t total = s->rows * s->dim * sizeof(uint16_t), table = s->vocab * s->dim * sizeof(uint16_t);
    return total - offset < table ? total - offset : table;
}

static int gather_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    gather_state *s = state;
    const size_t n = s->rows * s->dim, bytes = n * sizeof(uint16_t);
    if (strcmp(ctx->variant, "cuda_memcpy") == 0) {
        for (size_t off = 0; off < bytes; off += copy_piece(s, off)) {
            PL_TRY(pl_copy_ceiling_check(ctx, (const char *)s->out + off, s->table_host, copy_piece(s, off),
                                         s->out_host, v));
            if (!v->passed)
                return 0;
        }
        if (bytes > copy_piece(s, 0)) /* each piece said only its own bytes */
            pl_verify_set(v, 1,
                          "a copy of the table's bytes, repeated (the ceiling, not the target's result): all %zu "
                          "bytes equal",
                          bytes);
        return 0;
    }
    PL_CUDA(ctx, cudaMemcpyAsync(s->out_host, s->out, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_bf16(s->out_host, s->ref, n, 0.0, v);
    /* a gather moves bits: any difference at all is a wrong element */
    if (v->passed && v->max_abs_error != 0.0)
        pl_verify_set(v, 0, "element %zu differs from the table element it should be (by %.3g): a gather is exact",
                      v->max_error_index, v->max_abs_error);
    return 0;
}

/* the variants: the timed work, once, enqueued on ctx->stream (s: the state) */
PL_LAUNCH_RUN(run_scalar, gather_state, pl_gather_bf16_scalar(s->table, s->ids, s->out, s->rows, s->dim, ctx->stream))
PL_LAUNCH_RUN(run_warp_vec16, gather_state,
              pl_gather_bf16_warp_vec16(s->table, s->ids, s->out, s->rows, s->dim, ctx->stream))

static int run_memcpy(pl_ctx *ctx, void *state)
{
    gather_state *s = state;
    const size_t bytes = s->rows * s->dim * sizeof(uint16_t);
    for (size_t off = 0; off < bytes; off += copy_piece(s, off))
        PL_CUDA(ctx, cudaMemcpyAsync((char *)s->out + off, s->table, copy_piece(s, off), cudaMemcpyDeviceToDevice,
                                     ctx->stream));
    return 0;
}

static const pl_variant gather_variants[] = {
    PL_VARIANT("baseline", run_scalar, "one 2-byte load and store per thread over the flat output"),
    PL_VARIANT("warp_vec16", run_warp_vec16,
               "a warp per row, 16-byte loads and stores (4 in flight per lane), 2-byte head and tail"),
    PL_VARIANT("cuda_memcpy", run_memcpy,
               "cudaMemcpyAsync device-to-device of the same bytes: the ceiling (checked as a copy)",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_memory_gather = {
    .group = "memory",
    .name = "gather",
    .summary = "embedding lookup, bf16 rows by int32 ids: 2-byte vs 16-byte warp-per-row, against cudaMemcpyAsync",
    .req = {.needs_gpu = 1},
    .params = gather_params,
    .variants = gather_variants,
    .counters = gather_counters,
    .setup = gather_setup,
    .poison = gather_poison,
    .check = gather_check,
    .check_params = gather_check_params,
};
