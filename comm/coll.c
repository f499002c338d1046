#include "comm/coll.h"

#include <math.h>
#include <string.h>

#include "core/util.h"

static const char *const coll_names[PL_COLL_COUNT] = {
    [PL_COLL_ALLTOALL] = "alltoall",
    [PL_COLL_ALLREDUCE] = "allreduce",
    [PL_COLL_ALLGATHER] = "allgather",
    [PL_COLL_REDUCESCATTER] = "reducescatter",
    [PL_COLL_SENDRECV] = "sendrecv",
    [PL_COLL_BROADCAST] = "broadcast",
    [PL_COLL_ALLREDUCE_ONESHOT] = "allreduce_oneshot",
    [PL_COLL_ALLREDUCE_TWOSHOT] = "allreduce_twoshot",
};

static const char *const redop_names[PL_REDOP_COUNT] = {
    [PL_REDOP_SUM] = "sum", [PL_REDOP_MAX] = "max", [PL_REDOP_MIN] = "min"};

const char *pl_coll_name(pl_coll c)
{
    return pl_name_of(coll_names, PL_COLL_COUNT, (int)c);
}

int pl_coll_from_name(const char *name)
{
    return pl_index_of(coll_names, PL_COLL_COUNT, name);
}

const char *pl_redop_name(pl_redop op)
{
    return pl_name_of(redop_names, PL_REDOP_COUNT, (int)op);
}

int pl_redop_from_name(const char *name)
{
    return pl_index_of(redop_names, PL_REDOP_COUNT, name);
}

int pl_coll_is_perflab(pl_coll c)
{
    return c == PL_COLL_ALLREDUCE_ONESHOT || c == PL_COLL_ALLREDUCE_TWOSHOT;
}

pl_coll pl_coll_semantics(pl_coll c)
{
    return pl_coll_is_perflab(c) ? PL_COLL_ALLREDUCE : c;
}

int pl_coll_reduces(pl_coll c)
{
    c = pl_coll_semantics(c);
    return c == PL_COLL_ALLREDUCE || c == PL_COLL_REDUCESCATTER;
}

int pl_coll_has_in_place(pl_coll c)
{
    return c != PL_COLL_ALLTOALL && c != PL_COLL_SENDRECV;
}

double pl_coll_busbw_factor(pl_coll c, int nranks)
{
    const double n = nranks;
    switch (pl_coll_semantics(c)) {
    case PL_COLL_ALLREDUCE: return 2.0 * (n - 1.0) / n;
    case PL_COLL_ALLGATHER:
    case PL_COLL_REDUCESCATTER:
    case PL_COLL_ALLTOALL: return (n - 1.0) / n;
    case PL_COLL_SENDRECV:
    case PL_COLL_BROADCAST:
    default: return 1.0;
    }
}

int pl_comm_dtype_supported(pl_dtype d)
{
    return d == PL_DTYPE_F32 || d == PL_DTYPE_F16 || d == PL_DTYPE_BF16 || d == PL_DTYPE_F64 || d == PL_DTYPE_I32;
}

size_t pl_dtype_size(pl_dtype d)
{
    switch (d) {
    case PL_DTYPE_F64: return 8;
    case PL_DTYPE_F32:
    case PL_DTYPE_TF32:
    case PL_DTYPE_I32: return 4;
    case PL_DTYPE_BF16:
    case PL_DTYPE_F16: return 2;
    case PL_DTYPE_FP8: return 1;
    default: return 0;
    }
}

void pl_coll_layout_for(pl_coll c, size_t bytes, size_t elt, int nranks, int rank, pl_coll_layout *out)
{
    memset(out, 0, sizeof *out);
    const size_t n = (size_t)nranks, r = (size_t)rank;
    const size_t count = elt ? bytes / elt : 0;
    switch (pl_coll_semantics(c)) {
    case PL_COLL_ALLREDUCE:
    case PL_COLL_BROADCAST:
    case PL_COLL_SENDRECV:
        out->count = out->send_count = out->recv_count = count;
        out->bytes = count * elt;
        break;
    case PL_COLL_ALLGATHER: /* count per rank; the receive buffer holds n of them */
        out->count = out->send_count = count / n;
        out->recv_count = out->count * n;
        out->bytes = out->recv_count * elt;
        out->in_place_send_offset = r * out->count;
        break;
    case PL_COLL_REDUCESCATTER: /* count per rank received; the send buffer holds n of them */
        out->count = out->recv_count = count / n;
        out->send_count = out->count * n;
        out->bytes = out->send_count * elt;
        out->in_place_recv_offset = r * out->count;
        break;
    case PL_COLL_ALLTOALL: /* count per peer */
        out->count = count / n;
        out->send_count = out->recv_count = out->count * n;
        out->bytes = out->send_count * elt;
        break;
    default: break;
    }
    if (out->count == 0)
        out->bytes = 0;
}

double pl_algbw_gbps(size_t bytes, double ms)
{
    if (!(ms > 0))
        return NAN;
    return (double)bytes / (ms * 1e-3) / 1e9;
}

double pl_busbw_gbps(pl_coll c, int nranks, size_t bytes, double ms)
{
    return pl_algbw_gbps(bytes, ms) * pl_coll_busbw_factor(c, nranks);
}
