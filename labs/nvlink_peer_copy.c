/* nvlink:peer_copy — move n floats from this GPU to another one (the next ordinal) three ways:
 *  - staged: down to page-locked host memory, then up to the other GPU (two trips over the host link, one after
 *    the other; what a program does that knows nothing of peer access);
 *  - cudaMemcpyPeerAsync: one copy between the GPUs' memories by the copy engines, over NVLink where the GPUs have
 *    it (through the host's PCIe root otherwise);
 *  - peer stores: with peer access enabled, a copy kernel on this GPU reads its memory and stores through pointers
 *    into the other GPU's memory (16-byte stores, the SMs drive the link).
 * The ceiling is what `perflab peak --only p2p` measures between the same pair.
 *
 * Timing region: GPU time (latched, on this GPU's stream; the staged variant's second copy runs on a stream of the
 * other GPU, forked from and joined back to it): enabling peer access, allocation and the streams are outside
 * (setup). Needs 2 GPUs: skipped with the reason on one. */
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "common/host_bytes.h"
#include "memory/memory_kernels.h"

#define INPUT_STREAM_ID 1
#define CHECK_CHUNK     (64u << 20)

typedef struct peer_state {
    size_t n;
    int dev, peer;
    float *src;    /* this GPU (tracked) */
    float *dst;    /* the other GPU (freed at teardown) */
    void *staging; /* page-locked host memory (freed at teardown) */
    uint8_t *ref;  /* the bytes of src */
    unsigned store_blocks;
    int peer_access;          /* 1 once cudaDeviceEnablePeerAccess succeeded (disabled at teardown) */
    cudaStream_t peer_stream; /* on the other GPU (destroyed at teardown) */
    cudaEvent_t staged, landed;
    pl_byte_reader reader;
} peer_state;

static const pl_param_def peer_params[] = {
    PL_INT_PARAM("n", "256m", 1, 16.0 * 1024 * 1024 * 1024, "fp32 elements to move (4 bytes each)",
                 .small_value = "1000003"),
    PL_PARAMS_END,
};

/* the bytes crossing between the GPUs: GB/s is the link's rate, as peak's P2P figure counts it */
static void peer_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "n");
    c->bytes_written = 4.0 * n;
    c->elements = n;
}

static void free_peer(peer_state *s)
{
    if (s->peer_access) {
        cudaDeviceDisablePeerAccess(s->peer);
        s->peer_access = 0;
    }
    if (s->staged)
        cudaEventDestroy(s->staged);
    if (s->landed)
        cudaEventDestroy(s->landed);
    if (s->staging)
        cudaFreeHost(s->staging);
    s->staged = s->landed = NULL;
    s->staging = NULL;
    if (s->dst || s->peer_stream) {
        int cur = 0;
        cudaGetDevice(&cur);
        cudaSetDevice(s->peer);
        if (s->dst)
            cudaFree(s->dst);
        if (s->peer_stream)
            cudaStreamDestroy(s->peer_stream);
        cudaSetDevice(cur);
        s->dst = NULL;
        s->peer_stream = NULL;
    }
}

static int peer_alloc(pl_ctx *ctx, peer_state *s)
{
    const size_t bytes = s->n * sizeof(float);
    s->src = pl_device_alloc(ctx, bytes);
    s->ref = pl_host_alloc(ctx, bytes);
    if (!s->src || !s->ref)
        return -1;
    PL_TRY(pl_byte_reader_init(ctx, &s->reader, bytes < CHECK_CHUNK ? bytes : CHECK_CHUNK, 0));
    PL_CUDA(ctx, cudaHostAlloc(&s->staging, bytes, cudaHostAllocPortable));
    PL_CUDA(ctx, cudaEventCreateWithFlags(&s->staged, cudaEventDisableTiming));
    /* the other GPU's buffer, stream and event (an event belongs to the device current when it is created, and is
     * recorded only on that device's streams) */
    PL_CUDA(ctx, cudaSetDevice(s->peer));
    cudaError_t e = cudaMalloc((void **)&s->dst, bytes);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&s->peer_stream, cudaStreamNonBlocking);
    if (e == cudaSuccess)
        e = cudaEventCreateWithFlags(&s->landed, cudaEventDisableTiming);
    cudaError_t back = cudaSetDevice(s->dev);
    PL_CUDA(ctx, e);
    PL_CUDA(ctx, back);

    int can = 0;
    PL_CUDA(ctx, cudaDeviceCanAccessPeer(&can, s->dev, s->peer));
    if (!can)
        return pl_fail(ctx,
                       "nvlink:peer_copy: GPU %d cannot access GPU %d's memory (no peer-to-peer path between "
                       "them); the peer-store variant needs one",
                       s->dev, s->peer);
    e = cudaDeviceEnablePeerAccess(s->peer, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled)
        (void)cudaGetLastError();
    else
        PL_CUDA(ctx, e);
    s->peer_access = 1;
    PL_CUDA(ctx, pl_copy_f32_vec16_resident_blocks(&s->store_blocks));

    PL_TRY(pl_fill_uniform_f32(ctx, s->src, s->n, -1.0f, 1.0f, INPUT_STREAM_ID));
    PL_CUDA(ctx, cudaMemcpyAsync(s->ref, s->src, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

static int peer_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    peer_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->n = (size_t)pl_param_int(p, "n");
    s->dev = ctx->device->ordinal;
    if (ctx->device_count < 2)
        return pl_fail(ctx, "nvlink:peer_copy needs 2 GPUs; this machine has %d", ctx->device_count);
    s->peer = (s->dev + 1) % ctx->device_count;
    if (peer_alloc(ctx, s) != 0) {
        free_peer(s);
        return -1;
    }
    *state = s;
    return 0;
}

static void peer_teardown(pl_ctx *ctx, void *state)
{
    free_peer(state);
}

/* on the other GPU, whose memory it is */
static int peer_poison(pl_ctx *ctx, void *state)
{
    peer_state *s = state;
    PL_CUDA(ctx, cudaSetDevice(s->peer));
    cudaError_t e = cudaMemsetAsync(s->dst, 0xFF, s->n * sizeof(float), s->peer_stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s->peer_stream);
    cudaError_t back = cudaSetDevice(s->dev);
    PL_CUDA(ctx, e);
    PL_CUDA(ctx, back);
    return 0;
}

static int peer_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    peer_state *s = state;
    return pl_verify_copied_bytes(ctx, &s->reader, s->dst, s->ref, s->n * sizeof(float), 0, v);
}

static int run_staged(pl_ctx *ctx, void *state)
{
    peer_state *s = state;
    const size_t bytes = s->n * sizeof(float);
    PL_CUDA(ctx, cudaMemcpyAsync(s->staging, s->src, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaEventRecord(s->staged, ctx->stream));
    PL_CUDA(ctx, cudaStreamWaitEvent(s->peer_stream, s->staged, 0));
    PL_CUDA(ctx, cudaMemcpyAsync(s->dst, s->staging, bytes, cudaMemcpyHostToDevice, s->peer_stream));
    PL_CUDA(ctx, cudaEventRecord(s->landed, s->peer_stream));
    PL_CUDA(ctx, cudaStreamWaitEvent(ctx->stream, s->landed, 0));
    return 0;
}

PL_LAUNCH_RUN(run_memcpy_peer, peer_state,
              cudaMemcpyPeerAsync(s->dst, s->peer, s->src, s->dev, s->n * sizeof(float), ctx->stream))

PL_LAUNCH_RUN(run_peer_store, peer_state, pl_copy_f32_vec16(s->src, s->dst, s->n, s->store_blocks, ctx->stream))

static const pl_variant peer_variants[] = {
    PL_VARIANT("baseline", run_staged,
               "staged through page-locked host memory: device to host, then host to the other device",
               .flags = PL_VARIANT_NO_GRAPH),
    {.name = "memcpy_peer",
     .technique = "cudaMemcpyPeerAsync: the copy engines move it GPU to GPU (NVLink where present)",
     .run = run_memcpy_peer,
     /* a stream capture refuses cudaMemcpyPeerAsync (cudaErrorStreamCaptureUnsupported): --graph times it as it is */
     .flags = PL_VARIANT_NO_GRAPH},
    PL_VARIANT("peer_store", run_peer_store,
               "a copy kernel storing 16 bytes at a time through peer pointers into the other GPU's memory"),
    PL_VARIANTS_END,
};

const pl_target pl_target_nvlink_peer_copy = {
    .group = "nvlink",
    .name = "peer_copy",
    .summary = "GPU to GPU copy of n floats: staged through host memory vs cudaMemcpyPeerAsync vs peer stores from a "
               "kernel; GPU time (latched), peer-access setup outside; ceiling: peak's P2P figure",
    .req = {.needs_gpu = 1, .min_gpus = 2},
    .params = peer_params,
    .variants = peer_variants,
    .counters = peer_counters,
    .setup = peer_setup,
    .poison = peer_poison,
    .check = peer_check,
    .teardown = peer_teardown,
};
