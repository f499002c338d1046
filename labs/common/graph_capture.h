/* Capture work into an executable CUDA graph at setup, for the labs that replay one as a variant. */
#ifndef PERFLAB_LABS_GRAPH_CAPTURE_H
#define PERFLAB_LABS_GRAPH_CAPTURE_H

#include "perflab/ctx.h"

/* Enqueues the work to capture on `stream`; 0 or -1 (with ctx->error set). */
typedef int (*pl_enqueue_fn)(pl_ctx *ctx, void *arg, cudaStream_t stream);

/* Capture what `enqueue` issues on a stream of our own (ctx->stream may be the legacy stream, which cannot be
 * captured), instantiate it and upload it on ctx->stream, so that the first timed launch does not pay for either.
 * Cleans up after itself on failure. */
int pl_capture_graph(pl_ctx *ctx, pl_enqueue_fn enqueue, void *arg, cudaGraphExec_t *exec_out);

/* Instantiate `graph` and upload it on ctx->stream. On failure nothing is left behind (*exec_out untouched); the
 * graph itself stays the caller's. */
int pl_graph_instantiate_upload(pl_ctx *ctx, cudaGraph_t graph, cudaGraphExec_t *exec_out);

#endif
