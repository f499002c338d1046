/* cuBLASLt's algorithm configuration ids as names ("128x256", "64x4", "2x1x1"); NULL for unknown ids. */
#ifndef PERFLAB_GEMM_LT_NAMES_H
#define PERFLAB_GEMM_LT_NAMES_H

const char *pl_lt_tile_name(unsigned id);
const char *pl_lt_stages_name(unsigned id);
const char *pl_lt_cluster_name(unsigned id);

#endif
