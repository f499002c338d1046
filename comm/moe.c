#include "comm/moe.h"

#include "comm/coll.h"

ncclResult_t pl_moe_enqueue(const pl_a2a_plan *p, int rank, const void *send, void *recv, size_t elt,
                            ncclDataType_t type, ncclComm_t comm, cudaStream_t stream)
{
    const size_t n = (size_t)p->nranks, me = (size_t)rank;
    for (size_t peer = 0; peer < n; peer++) {
        const size_t out = p->counts[me * n + peer], in = p->counts[peer * n + me];
        if (out) {
            ncclResult_t r =
                ncclSend((const char *)send + p->send_offset[me * n + peer] * elt, out, type, (int)peer, comm, stream);
            if (r != ncclSuccess)
                return r;
        }
        if (in) {
            ncclResult_t r =
                ncclRecv((char *)recv + p->recv_offset[peer * n + me] * elt, in, type, (int)peer, comm, stream);
            if (r != ncclSuccess)
                return r;
        }
    }
    return ncclSuccess;
}

cudaError_t pl_moe_fill(const pl_a2a_plan *p, int rank, void *send, pl_dtype dt, uint64_t seed, cudaStream_t stream)
{
    return pl_comm_fill(send, p->total_per_rank, dt, seed, rank, 0, stream);
}

cudaError_t pl_moe_check(const pl_a2a_plan *p, int rank, const void *recv, pl_dtype dt, uint64_t seed,
                         pl_comm_check_acc *acc, cudaStream_t stream)
{
    const size_t n = (size_t)p->nranks, me = (size_t)rank, elt = pl_dtype_size(dt);
    for (size_t src = 0; src < n; src++) {
        pl_comm_expect e = {.kind = PL_EXPECT_SOURCE,
                            .nranks = p->nranks,
                            .src_rank = (int)src,
                            .seed = seed,
                            .base = p->send_offset[src * n + me]};
        cudaError_t err = pl_comm_check((const char *)recv + p->recv_offset[src * n + me] * elt,
                                        p->counts[src * n + me], dt, &e, acc, stream);
        if (err != cudaSuccess)
            return err;
    }
    return cudaSuccess;
}
