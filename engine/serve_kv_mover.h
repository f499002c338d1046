/* The disaggregated run's KV mover on two GPUs (serve_disagg.h's pl_serve_transfer): a request's pages of the
 * prefill executor's cache go to the decode executor's cache (engine/kv_transfer.h: peer copies of runs of pages,
 * every layer's K and V) on a stream of the prefill GPU of its own, between two CUDA events whose elapsed time is
 * the copy's duration. begin() enqueues and returns at once (the prefill steps that follow run beside the copy);
 * end() waits for the copy's last event, which is done by then in the usual case (the scheduler reads it at its next
 * boundary), and reads the time. The decode GPU's step that first reads the pages is enqueued after end(): the
 * copy has completed before any kernel reads them. The first generated token travels with the request on the host
 * (the executors share the request's token history): greedy sampling needs no logits on the decode GPU. */
#ifndef PERFLAB_ENGINE_SERVE_KV_MOVER_H
#define PERFLAB_ENGINE_SERVE_KV_MOVER_H

#include <stddef.h>
#include <stdint.h>

#include "engine/serve_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_serve_kv_mover pl_serve_kv_mover;

/* Between two executors of the same model, KV dtype and page size (on two GPUs, or one); enables peer access both
 * ways. 0, or -1 with one line in err. */
int pl_serve_kv_mover_create(pl_serve_gpu *from, pl_serve_gpu *to, pl_serve_kv_mover **out, char *err, size_t errlen);
/* 1 when the copies go GPU to GPU directly (peer access), 0 through the host (why: the reason). */
int pl_serve_kv_mover_peer(const pl_serve_kv_mover *m, const char **why);
/* pl_serve_transfer's calls (ctx: a pl_serve_kv_mover); 0 or a CUDA error code. */
int pl_serve_kv_mover_begin(void *ctx, int req, const pl_kv_seq *src, const pl_kv_seq *dst, int64_t *bytes);
int pl_serve_kv_mover_end(void *ctx, int req, double *seconds);
void pl_serve_kv_mover_destroy(pl_serve_kv_mover *m);

#ifdef __cplusplus
}
#endif
#endif
