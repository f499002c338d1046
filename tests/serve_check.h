/* What the serving GPU tests share (test_serve_gpu, test_serve_disagg_gpu): a perflab serve run in a fresh folder,
 * and the token ids each request received. */
#ifndef PERFLAB_TESTS_SERVE_CHECK_H
#define PERFLAB_TESTS_SERVE_CHECK_H

#include <jansson.h>

/* Runs `perflab <workload> <extra> --artifacts-dir <a fresh folder named after tag>`, asserts exit 0, and returns the
 * run folder (the one holding report.json; malloc'd). */
char *pl_serve_check_run(const char *workload, const char *extra, const char *tag);
/* tokens[id] of the run folder's requests-rate-<rate>.jsonl (a JSON object id -> array of token ids, each asserted
 * in the tiny models' 1000-token vocabulary and as long as the request's output). */
json_t *pl_serve_check_tokens(const char *folder, const char *rate);
/* Serves `workload` again at rate inf one request at a time on one GPU (--max-num-seqs 1 --max-concurrency 1, a
 * 12-page pool, --kv-dtype kv) and asserts that each of its n requests received there the tokens it received in
 * folder's run at rate inf (`what` names that run in a failure). */
void pl_serve_check_matches_alone(const char *workload, const char *folder, const char *kv, int n, const char *what);

#endif
