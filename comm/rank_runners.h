/* The point runners of the three job kinds, called by pl_comm_rank_main (rank.c); they use comm/rank_ops.h only. */
#ifndef PERFLAB_COMM_RANK_RUNNERS_H
#define PERFLAB_COMM_RANK_RUNNERS_H

#include "comm/rank_ops.h"

int pl_comm_rank_run_coll(pl_comm_rank *r); /* rank_coll.c */
int pl_comm_rank_run_moe(pl_comm_rank *r);  /* rank_moe.c */
int pl_comm_rank_run_ep(pl_comm_rank *r);   /* rank_ep.c */

#endif
