/* GPU <-> GPU: for every ordered pair, copy-engine (cudaMemcpyPeerAsync) and SM (a kernel on the source GPU
 * storing into the peer's memory) bandwidth one way, and for every pair both ways at once; and the latency of a
 * dependent load from one GPU into the other's memory. One process drives all GPUs. Every copy is checked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "hw/peak.h"
#include "hw/topology.h"
#include "peak/peak_kernels.h"
#include "perflab/device.h"

typedef struct p2p_gpu {
    pl_hw_gpu *g;
    float *src, *dst;
    cudaEvent_t event; /* recorded on this GPU's stream for the other one to wait on */
} p2p_gpu;

typedef struct p2p_run {
    int sm;   /* 0: copy engine, 1: kernel */
    int both; /* also b -> a at the same time */
    p2p_gpu *a, *b;
    int ia, ib; /* ordinals */
    size_t n;   /* floats */
    pl_stream_config cfg;
    unsigned grid_a, grid_b;
} p2p_run;

/* One direction: from->src into to->dst, on from's stream. */
static int copy_one_way(pl_ctx *ctx, p2p_run *r, p2p_gpu *from, int ifrom, p2p_gpu *to, int ito, unsigned grid)
{
    PL_CUDA(ctx, cudaSetDevice(ifrom));
    cudaStream_t s = from->g->ctx.stream;
    if (r->sm)
        PL_CUDA(ctx, pl_stream_copy(from->src, to->dst, r->n, &r->cfg, grid, s));
    else
        PL_CUDA(ctx, cudaMemcpyPeerAsync(to->dst, ito, from->src, ifrom, r->n * sizeof(float), s));
    return 0;
}

/* Timed on a's stream; with `both`, b's stream forks from it and joins back, so a's events span both copies. */
static int run_p2p(pl_ctx *ctx, void *state)
{
    p2p_run *r = state;
    if (r->both) {
        PL_CUDA(ctx, cudaEventRecord(r->a->event, r->a->g->ctx.stream));
        PL_CUDA(ctx, cudaStreamWaitEvent(r->b->g->ctx.stream, r->a->event, 0));
        PL_TRY(copy_one_way(ctx, r, r->b, r->ib, r->a, r->ia, r->grid_b));
        PL_CUDA(ctx, cudaEventRecord(r->b->event, r->b->g->ctx.stream));
    }
    PL_TRY(copy_one_way(ctx, r, r->a, r->ia, r->b, r->ib, r->grid_a));
    if (r->both)
        PL_CUDA(ctx, cudaStreamWaitEvent(r->a->g->ctx.stream, r->b->event, 0));
    PL_CUDA(ctx, cudaSetDevice(r->ia));
    return 0;
}

/* Compare the first, a middle and the last MiB of what landed with what was sent. */
static int check_landed(pl_ctx *ctx, const float *sent, const float *landed, size_t n, int *ok)
{
    const size_t chunk = n < (1u << 18) ? n : (1u << 18), starts[3] = {0, n / 2 - chunk / 2, n - chunk};
    float *a = malloc(chunk * sizeof *a), *b = malloc(chunk * sizeof *b);
    *ok = a && b;
    for (int i = 0; i < 3 && *ok; i++) {
        if (cudaMemcpy(a, sent + starts[i], chunk * sizeof *a, cudaMemcpyDefault) != cudaSuccess ||
            cudaMemcpy(b, landed + starts[i], chunk * sizeof *b, cudaMemcpyDefault) != cudaSuccess) {
            free(a);
            free(b);
            return pl_fail(ctx, "reading back a peer copy failed: %s", cudaGetErrorString(cudaGetLastError()));
        }
        *ok = memcmp(a, b, chunk * sizeof *a) == 0;
    }
    free(a);
    free(b);
    return 0;
}

static const char *mode_name(int sm, int both)
{
    return sm ? (both ? "sm_bidir" : "sm") : (both ? "ce_bidir" : "ce");
}

static int p2p_figure(pl_hw_child *c, p2p_gpu *gpus, int ia, int ib, int sm, int both, const pl_pair_link *link)
{
    const pl_peak_options *o = c->user;
    p2p_gpu *a = &gpus[ia], *b = &gpus[ib];
    pl_ctx *ctx = &a->g->ctx;
    int access = 0;
    PL_CUDA(ctx, cudaDeviceCanAccessPeer(&access, ia, ib));
    char id[64], label[96], method[320];
    pl_snprintf(id, sizeof id, "p2p_%s_%d_%d", mode_name(sm, both), ia, ib);
    pl_snprintf(label, sizeof label, "GPU%d %s GPU%d, %s", ia, both ? "<->" : "->", ib,
                sm ? "SM stores" : "copy engine");
    pl_snprintf(method, sizeof method,
                "%s of %zu MiB%s, CUDA events on GPU%d's stream; first, middle and last MiB "
                "checked",
                sm ? "a 16-byte-store copy kernel on the source GPU writing the peer's memory" : "cudaMemcpyPeerAsync",
                o->p2p_bytes >> 20, both ? " each way at once" : "", ia);
    const char *sheet = link->nvlink ? (both ? "nvlink_both" : "nvlink") : (both ? "host_both" : "host");
    json_t *f = pl_peak_figure(id, "p2p", label, "GB/s", both ? "both directions" : "each direction", method, sheet);
    json_object_set_new(f, "src", json_integer(ia));
    json_object_set_new(f, "dst", json_integer(ib));
    json_object_set_new(f, "mode", json_string(mode_name(sm, both)));
    json_object_set_new(f, "peer_access", json_boolean(access));
    if (sm && !access) {
        pl_peak_set_status(f, "skipped", "CUDA refuses peer access between these GPUs: no kernel can reach the peer");
        pl_hw_emit(c, f);
        return 0;
    }
    p2p_run r = {.sm = sm, .both = both, .a = a, .b = b, .ia = ia, .ib = ib, .n = o->p2p_bytes / sizeof(float)};
    r.cfg = (pl_stream_config){4, 0, 0};
    unsigned resident = 0;
    PL_CUDA(ctx, pl_stream_resident_blocks(PL_STREAM_COPY, &r.cfg, &resident));
    r.grid_a = r.grid_b = pl_stream_grid(r.n, &r.cfg, resident);
    PL_TRY(pl_poison(ctx, b->dst, r.n * sizeof(float)));
    PL_TRY(run_p2p(ctx, &r));
    PL_CUDA(ctx, cudaDeviceSynchronize());
    PL_CUDA(ctx, cudaSetDevice(ib));
    PL_CUDA(ctx, cudaDeviceSynchronize());
    PL_CUDA(ctx, cudaSetDevice(ia));
    int ok1 = 0, ok2 = 1;
    PL_TRY(check_landed(ctx, a->src, b->dst, r.n, &ok1));
    if (both)
        PL_TRY(check_landed(ctx, b->src, a->dst, r.n, &ok2));
    if (!ok1 || !ok2) {
        pl_peak_set_status(f, "failed", "the bytes that landed differ from those sent");
    } else {
        pl_stats st;
        PL_TRY(pl_peak_measure(a->g, run_p2p, &r, PL_VARIANT_NO_GRAPH, &st));
        pl_peak_set_value(f, (both ? 2.0 : 1.0) * (double)r.n * sizeof(float) / st.median / 1e6, &st, NAN);
        if (!access && !sm)
            json_object_set_new(f, "note", json_string("no peer access: the driver stages the copy through the host"));
    }
    pl_hw_emit(c, f);
    return 0;
}

static int latency_figure(pl_hw_child *c, p2p_gpu *gpus, int ia, int ib)
{
    const pl_peak_options *o = c->user;
    p2p_gpu *a = &gpus[ia], *b = &gpus[ib];
    int access = 0;
    PL_CUDA(&a->g->ctx, cudaDeviceCanAccessPeer(&access, ia, ib));
    char id[48], label[64];
    pl_snprintf(id, sizeof id, "p2p_latency_%d_%d", ia, ib);
    pl_snprintf(label, sizeof label, "GPU%d loads from GPU%d's memory", ia, ib);
    json_t *f = pl_peak_figure(id, "p2p", label, "ns", NULL,
                               "one thread on the first GPU, dependent 4-byte loads 4224 B apart in the second GPU's "
                               "memory; median per load",
                               NULL);
    json_object_set_new(f, "src", json_integer(ia));
    json_object_set_new(f, "dst", json_integer(ib));
    json_object_set_new(f, "mode", json_string("latency"));
    if (!access) {
        pl_peak_set_status(f, "skipped", "CUDA refuses peer access between these GPUs");
    } else {
        double ns = NAN;
        char why[128] = "";
        PL_CUDA(&a->g->ctx, cudaSetDevice(ia));
        PL_TRY(pl_peak_chase_ns(a->g, (unsigned *)b->dst, o->p2p_bytes / sizeof(unsigned), o->quick ? 500 : 2000, &ns,
                                why, sizeof why));
        if (isnan(ns))
            pl_peak_set_status(f, "failed", why);
        else
            pl_peak_set_value(f, ns, NULL, NAN);
    }
    pl_hw_emit(c, f);
    return 0;
}

static int p2p_all(pl_hw_child *c, p2p_gpu *gpus, int count)
{
    const pl_peak_options *o = c->user;
    char why[512];
    for (int i = 0; i < count; i++) {
        gpus[i].g = pl_hw_gpu_get(c, i, why, sizeof why);
        if (!gpus[i].g) {
            json_t *f = pl_peak_figure("p2p", "p2p", "GPU <-> GPU", "", NULL, "", NULL);
            pl_peak_set_status(f, "failed", why);
            pl_hw_emit(c, f);
            return 0;
        }
        pl_ctx *ctx = &gpus[i].g->ctx;
        /* the matrix has many entries: the quick settings keep it to seconds, and copies are steady */
        pl_peak_options quick = *o;
        quick.quick = 1;
        pl_peak_settings(gpus[i].g, &quick, 0);
        gpus[i].src = pl_device_alloc(ctx, o->p2p_bytes);
        gpus[i].dst = pl_device_alloc(ctx, o->p2p_bytes);
        if (!gpus[i].src || !gpus[i].dst)
            return -1;
        PL_CUDA(ctx, cudaEventCreateWithFlags(&gpus[i].event, cudaEventDisableTiming));
        PL_TRY(pl_fill_uniform_f32(ctx, gpus[i].src, o->p2p_bytes / sizeof(float), -1.f, 1.f, 20 + (uint64_t)i));
        for (int j = 0; j < count; j++) {
            int access = 0;
            if (j != i && cudaDeviceCanAccessPeer(&access, i, j) == cudaSuccess && access) {
                cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
                if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
                    return pl_fail_cuda(ctx, e, "cudaDeviceEnablePeerAccess", __FILE__, __LINE__);
                cudaGetLastError();
            }
        }
        PL_CUDA(ctx, cudaDeviceSynchronize());
    }
    for (int i = 0; i < count; i++)
        for (int j = 0; j < count; j++) {
            if (i == j)
                continue;
            pl_pair_link link;
            pl_pair_link_query(gpus[i].g->dev.pci_bus_id, gpus[j].g->dev.pci_bus_id, &link);
            pl_hw_gpu_get(c, i, why, sizeof why);
            PL_TRY(p2p_figure(c, gpus, i, j, 0, 0, &link));
            PL_TRY(p2p_figure(c, gpus, i, j, 1, 0, &link));
            if (i < j) {
                PL_TRY(p2p_figure(c, gpus, i, j, 0, 1, &link));
                PL_TRY(p2p_figure(c, gpus, i, j, 1, 1, &link));
            }
            PL_TRY(latency_figure(c, gpus, i, j));
        }
    return 0;
}

int pl_peak_task_p2p(pl_hw_child *c)
{
    const pl_peak_options *o = c->user;
    if (!(o->groups & PL_PEAK_P2P))
        return 0;
    if (c->device_count < 2) {
        json_t *f =
            pl_peak_figure("p2p", "p2p", "GPU <-> GPU bandwidth and latency", "GB/s", NULL,
                           "every ordered pair: copy engine and SM copies, one way and both ways, and latency", NULL);
        char why[96];
        pl_snprintf(why, sizeof why, "needs 2+ GPUs; this machine has %d", c->device_count);
        pl_peak_set_status(f, "skipped", why);
        pl_hw_emit(c, f);
        return 0;
    }
    p2p_gpu *gpus = pl_xcalloc((size_t)c->device_count, sizeof *gpus);
    int rc = p2p_all(c, gpus, c->device_count);
    char error[512] = "";
    for (int i = 0; i < c->device_count; i++) {
        if (!gpus[i].g)
            continue;
        if (rc != 0 && !error[0] && gpus[i].g->ctx.error[0])
            pl_snprintf(error, sizeof error, "%s", gpus[i].g->ctx.error);
        if (gpus[i].event)
            cudaEventDestroy(gpus[i].event);
        cudaSetDevice(i);
        pl_free_all(&gpus[i].g->ctx);
    }
    free(gpus);
    if (rc == 0)
        return 0;
    json_t *f = pl_peak_figure("p2p", "p2p", "GPU <-> GPU", "", NULL, "", NULL);
    pl_peak_set_status(f, "failed", error);
    pl_hw_emit(c, f);
    return pl_hw_context_ok() ? 0 : -1;
}
