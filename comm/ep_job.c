/* The EP job's names and its checks before any GPU work (job.h). */
#include <string.h>

#include "comm/ep_plan.h"
#include "comm/job.h"
#include "core/util.h"

static const char *const impl_names[PL_EP_IMPL_COUNT] = {[PL_EP_NCCL] = "nccl", [PL_EP_PEER] = "peer"};
static const char *const phase_names[PL_EP_PHASE_COUNT] = {[PL_EP_DISPATCH] = "dispatch", [PL_EP_COMBINE] = "combine"};

const char *pl_ep_impl_name(pl_ep_impl i)
{
    return pl_name_of(impl_names, PL_EP_IMPL_COUNT, (int)i);
}

int pl_ep_impl_from_name(const char *name)
{
    return pl_index_of(impl_names, PL_EP_IMPL_COUNT, name);
}

const char *pl_ep_phase_name(pl_ep_phase p)
{
    return pl_name_of(phase_names, PL_EP_PHASE_COUNT, (int)p);
}

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

int pl_ep_job_capacity(const pl_comm_job *j, int nranks, pl_ep_capacity *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    for (size_t t = 0; t < j->n_ep_tokens; t++)
        for (size_t k = 0; k < j->n_skews; k++) {
            const pl_ep_shape s = {.nranks = nranks,
                                   .tokens = (int)j->ep_tokens[t],
                                   .hidden = j->ep_hidden,
                                   .topk = j->ep_topk,
                                   .experts = j->ep_experts,
                                   .alpha = j->skews[k],
                                   .seed = j->seed};
            pl_ep_plan p;
            if (pl_ep_plan_make(&p, &s, err, errlen) != 0)
                return -1;
            c->tokens = max_int(c->tokens, s.tokens);
            c->send_rows = max_int(c->send_rows, p.max_send_rows);
            c->stage_rows = max_int(c->stage_rows, p.max_stage_rows);
            c->recv_rows = max_int(c->recv_rows, p.max_recv_rows);
            c->comb_send_rows = max_int(c->comb_send_rows, p.max_comb_send_rows);
            pl_ep_plan_free(&p);
        }
    return 0;
}

int pl_comm_job_check_ep(const pl_comm_job *j, int nranks, int threaded, char *err, size_t errlen)
{
    for (int i = 0; i < j->n_ep_impls; i++)
        if (j->ep_impls[i] == PL_EP_PEER && !threaded) {
            pl_snprintf(err, errlen,
                        "--ep-impl peer runs in one process with a thread per GPU: run perflab "
                        "moe-readiness, or pass --ep-impl nccl to perflab-mpi");
            return -1;
        }
    for (size_t t = 0; t < j->n_ep_tokens; t++)
        for (size_t k = 0; k < j->n_skews; k++) {
            const pl_ep_shape s = {.nranks = nranks,
                                   .tokens = j->ep_tokens[t] > 0x7fffffff ? 0x7fffffff : (int)j->ep_tokens[t],
                                   .hidden = j->ep_hidden,
                                   .topk = j->ep_topk,
                                   .experts = j->ep_experts,
                                   .alpha = j->skews[k],
                                   .seed = j->seed};
            if (pl_ep_shape_check(&s, err, errlen) != 0)
                return -1;
        }
    return 0;
}
