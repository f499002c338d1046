/* reduce:sum — the sum of n fp32 or bf16 values into one fp32: one global atomic per element, a shared-memory tree
 * per block with one atomic each, and warp shuffles over 16-byte loads with a deterministic last-block pass;
 * against CUB's device-wide reduction (the reference) and a copy of the same bytes (the HBM ceiling). */
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "common/copy_ceiling.h"
#include "common/sum_ref.h"
#include "reduce/reduce.h"

#define INPUT_STREAM_ID 1

typedef struct sum_state {
    size_t n, esize;
    pl_reduce_dtype dtype;
    void *in;   /* device, n elements */
    float *out; /* device, the result */
    void *ws;   /* warp_vec16's workspace */
    size_t ws_bytes;
    unsigned blocks; /* warp_vec16's grid: `waves` resident waves */
    void *cub_temp;  /* CUB's temporary storage */
    size_t cub_bytes;
    void *copy_dst; /* the ceiling copy: half the input's bytes, so that read + written = the input's bytes */
    size_t copy_bytes;
    void *in_host;   /* the input as the GPU holds it */
    void *copy_host; /* the ceiling copy, copied back */
    pl_sum_reference ref;
    int last_is_copy;
} sum_state;

static const pl_param_def sum_params[] = {
    PL_INT_PARAM("n", "256m", 1, 4e9, "elements to sum", .small_value = "1000003"),
    PL_CHOICE_PARAM("dtype", "fp32", "fp32|bf16",
                    "element type (the sum is accumulated and returned in fp32 either way)"),
    PL_INT_PARAM("waves", "3", 1, 64,
                 "warp_vec16's grid in resident waves (SMs x blocks an SM): 1 = every block resident, one equal share "
                 "each; more = smaller shares, blocks starting as others finish (evens out SMs that read slower)",
                 .small_value = "3"),
    PL_PARAMS_END,
};

static size_t elem_size(const pl_params *p)
{
    return strcmp(pl_param_str(p, "dtype"), "bf16") == 0 ? 2 : 4;
}

static void sum_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "n");
    c->flops = n;
    c->bytes_read = n * (double)elem_size(p);
    c->bytes_written = 4.0;
    c->elements = n;
}

static int sum_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    sum_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->n = (size_t)pl_param_int(p, "n");
    s->esize = elem_size(p);
    s->dtype = s->esize == 2 ? PL_REDUCE_BF16 : PL_REDUCE_F32;
    const size_t bytes = s->n * s->esize;
    PL_CUDA(ctx, pl_reduce_sum_warp_vec16_blocks(&s->blocks));
    s->blocks *= (unsigned)pl_param_int(p, "waves");
    s->ws_bytes = pl_reduce_sum_workspace_bytes(s->blocks);
    s->copy_bytes = bytes / 2;
    s->in = pl_device_alloc(ctx, bytes);
    s->out = pl_device_alloc(ctx, sizeof(float));
    s->ws = pl_device_alloc(ctx, s->ws_bytes);
    s->copy_dst = pl_device_alloc(ctx, s->copy_bytes > 0 ? s->copy_bytes : 1);
    s->in_host = pl_host_alloc(ctx, bytes);
    s->copy_host = pl_host_alloc(ctx, s->copy_bytes > 0 ? s->copy_bytes : 1);
    if (!s->in || !s->out || !s->ws || !s->copy_dst || !s->in_host || !s->copy_host)
        return -1;
    PL_CUDA(ctx, cudaMemsetAsync(s->ws, 0, s->ws_bytes, ctx->stream)); /* the ticket counter starts at 0 */
    PL_CUDA(ctx, pl_reduce_sum_cub(s->in, s->dtype, s->n, s->out, NULL, &s->cub_bytes, ctx->stream));
    s->cub_temp = pl_device_alloc(ctx, s->cub_bytes > 0 ? s->cub_bytes : 1);
    if (!s->cub_temp)
        return -1;
    /* zero-mean inputs: the sum is ~sqrt(n) times smaller than Σ|x|, the hard case for an fp32 accumulation */
    if (s->dtype == PL_REDUCE_BF16)
        PL_TRY(pl_fill_uniform_bf16(ctx, s->in, s->n, -1.0f, 1.0f, INPUT_STREAM_ID));
    else
        PL_TRY(pl_fill_uniform_f32(ctx, s->in, s->n, -1.0f, 1.0f, INPUT_STREAM_ID));
    PL_CUDA(ctx, cudaMemcpyAsync(s->in_host, s->in, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    if (s->dtype == PL_REDUCE_BF16)
        pl_sum_reference_bf16(s->in_host, s->n, &s->ref);
    else
        pl_sum_reference_f32(s->in_host, s->n, &s->ref);
    *state = s;
    return 0;
}

static int sum_poison(pl_ctx *ctx, void *state)
{
    sum_state *s = state;
    PL_TRY(pl_poison(ctx, s->out, sizeof(float)));
    return s->copy_bytes ? pl_poison(ctx, s->copy_dst, s->copy_bytes) : 0;
}

static int sum_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    sum_state *s = state;
    if (s->last_is_copy)
        return pl_copy_ceiling_check(ctx, s->copy_dst, s->in_host, s->copy_bytes, s->copy_host, v);
    float got;
    PL_CUDA(ctx, cudaMemcpyAsync(&got, s->out, sizeof got, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_sum_verify(got, &s->ref, v);
    return 0;
}

static int run_atomic(pl_ctx *ctx, void *state)
{
    sum_state *s = state;
    s->last_is_copy = 0;
    PL_CUDA(ctx, pl_reduce_sum_atomic(s->in, s->dtype, s->n, s->out, ctx->stream));
    return 0;
}

static int run_tree(pl_ctx *ctx, void *state)
{
    sum_state *s = state;
    s->last_is_copy = 0;
    PL_CUDA(ctx, pl_reduce_sum_smem_tree(s->in, s->dtype, s->n, s->out, ctx->stream));
    return 0;
}

static int run_vec16(pl_ctx *ctx, void *state)
{
    sum_state *s = state;
    s->last_is_copy = 0;
    PL_CUDA(ctx, pl_reduce_sum_warp_vec16(s->in, s->dtype, s->n, s->out, s->blocks, s->ws, s->ws_bytes, ctx->stream));
    return 0;
}

static int run_cub(pl_ctx *ctx, void *state)
{
    sum_state *s = state;
    s->last_is_copy = 0;
    PL_CUDA(ctx, pl_reduce_sum_cub(s->in, s->dtype, s->n, s->out, s->cub_temp, &s->cub_bytes, ctx->stream));
    return 0;
}

static int run_copy(pl_ctx *ctx, void *state)
{
    sum_state *s = state;
    s->last_is_copy = 1;
    if (s->copy_bytes)
        PL_CUDA(ctx, cudaMemcpyAsync(s->copy_dst, s->in, s->copy_bytes, cudaMemcpyDeviceToDevice, ctx->stream));
    return 0;
}

static const pl_variant sum_variants[] = {
    PL_VARIANT("baseline", run_atomic, "one global atomicAdd per element: n additions serialized on one address in L2"),
    PL_VARIANT("smem_tree", run_tree,
               "a shared-memory tree per block of 256 (a barrier per halving step), one atomicAdd per block"),
    PL_VARIANT(
        "warp_vec16", run_vec16,
        "three resident waves of blocks with equal shares, 16-byte loads (4 in flight), warp shuffles, one partial per "
        "block summed by the last block: deterministic, no atomic on the result"),
    PL_VARIANT("cub", run_cub,
               "CUB DeviceReduce (Sum for fp32; Reduce with an fp32 plus for bf16): the library reference",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANT("hbm_copy", run_copy,
               "cudaMemcpyAsync of half the input: the same bytes through HBM (half read, half written), "
               "the copy ceiling (checked as a copy)",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_reduce_sum = {
    .group = "reduce",
    .name = "sum",
    .summary = "sum of n fp32/bf16 into fp32: atomics, shared tree, warp shuffles + 16-byte loads vs CUB",
    .req = {.needs_gpu = 1},
    .params = sum_params,
    .variants = sum_variants,
    .counters = sum_counters,
    .setup = sum_setup,
    .poison = sum_poison,
    .check = sum_check,
};
