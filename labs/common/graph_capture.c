/* Capture into a graph, instantiate, upload. */
#include "common/graph_capture.h"

#include <cuda_runtime_api.h>

int pl_capture_graph(pl_ctx *ctx, pl_enqueue_fn enqueue, void *arg, cudaGraphExec_t *exec_out)
{
    cudaStream_t st = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    int rc = -1;
    PL_CUDA(ctx, cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        pl_fail_cuda(ctx, e, "cudaStreamBeginCapture", __FILE__, __LINE__);
        goto out;
    }
    const int enqueued = enqueue(ctx, arg, st);
    e = cudaStreamEndCapture(st, &graph); /* even after a failed enqueue: the stream must leave capture mode */
    if (enqueued != 0)
        goto out;
    if (e != cudaSuccess) {
        pl_fail_cuda(ctx, e, "cudaStreamEndCapture", __FILE__, __LINE__);
        goto out;
    }
    if (pl_graph_instantiate_upload(ctx, graph, &exec) != 0)
        goto out;
    rc = 0;
out:
    if (graph)
        cudaGraphDestroy(graph);
    cudaStreamDestroy(st);
    if (rc == 0)
        *exec_out = exec;
    return rc;
}

int pl_graph_instantiate_upload(pl_ctx *ctx, cudaGraph_t graph, cudaGraphExec_t *exec_out)
{
    cudaGraphExec_t exec = NULL;
    cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    if (e != cudaSuccess)
        return pl_fail_cuda(ctx, e, "cudaGraphInstantiate", __FILE__, __LINE__);
    if ((e = cudaGraphUpload(exec, ctx->stream)) != cudaSuccess) {
        cudaGraphExecDestroy(exec);
        return pl_fail_cuda(ctx, e, "cudaGraphUpload", __FILE__, __LINE__);
    }
    *exec_out = exec;
    return 0;
}
