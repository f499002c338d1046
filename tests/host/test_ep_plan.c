/* The EP routing and plan (comm/ep_plan.h) on 2, 4 and 8 ranks, decode-like and odd shapes: every token's experts
 * distinct with weights summing to 1; the dispatch sends each token once to each distinct rank among its experts;
 * every staging, expert-major, pull and combine row leads back to the (rank, token, expert) it stands for; the counts
 * and fabric rows add up; the routing is reproducible, independent of the token count, and skewed by alpha; bad
 * shapes are refused with one line, and the verb refuses them with exit 2 before any GPU work. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ep_plan.h"
#include "testutil.h"

static pl_ep_shape shape(int n, int T, int H, int k, int E, double alpha)
{
    pl_ep_shape s = {.nranks = n, .tokens = T, .hidden = H, .topk = k, .experts = E, .alpha = alpha, .seed = 20261121};
    return s;
}

static void make(pl_ep_plan *p, const pl_ep_shape *s)
{
    char err[256] = "";
    ck_assert_msg(pl_ep_plan_make(p, s, err, sizeof err) == 0, "%s", err);
}

/* Routing: distinct experts in range, positive weights summing to 1. */
static void check_routing(const pl_ep_plan *p)
{
    const int n = p->shape.nranks, T = p->shape.tokens, k = p->shape.topk, E = p->shape.experts;
    for (int s = 0; s < n; s++)
        for (int t = 0; t < T; t++) {
            const int *e = p->rank[s].expert + (size_t)t * k;
            const float *w = p->rank[s].weight + (size_t)t * k;
            double sum = 0;
            for (int j = 0; j < k; j++) {
                ck_assert(e[j] >= 0 && e[j] < E);
                ck_assert(w[j] > 0);
                sum += w[j];
                for (int i = 0; i < j; i++)
                    ck_assert_msg(e[i] != e[j], "rank %d token %d picks expert %d twice", s, t, e[j]);
            }
            ck_assert(fabs(sum - 1) < 1e-5);
        }
}

/* Dispatch: rank s sends token t to d exactly when one of its experts lives on d; each staging row is written once;
 * returns stage_owner[d][row] = s * T + t. */
static int **check_dispatch_send(const pl_ep_plan *p)
{
    const int n = p->shape.nranks, T = p->shape.tokens, k = p->shape.topk, L = p->local_experts, H = p->shape.hidden;
    int **owner = calloc(n > 0 ? (size_t)n : 1, sizeof *owner);
    for (int d = 0; d < n; d++) {
        owner[d] = malloc(((size_t)p->rank[d].stage_rows + 1) * sizeof(int));
        for (int i = 0; i < p->rank[d].stage_rows; i++)
            owner[d][i] = -1;
    }
    size_t fabric = 0;
    for (int s = 0; s < n; s++) {
        const pl_ep_rank_plan *rp = &p->rank[s];
        char *want = calloc((size_t)T * n, 1);
        int wanted = 0;
        for (int t = 0; t < T; t++)
            for (int j = 0; j < k; j++) {
                char *w = &want[(size_t)t * n + rp->expert[(size_t)t * k + j] / L];
                wanted += !*w;
                *w = 1;
            }
        ck_assert_int_eq(rp->send_rows, wanted);
        for (int i = 0; i < rp->send_rows; i++) {
            const int t = rp->send_token[i], d = rp->send_dest[i], row = rp->send_dest_row[i];
            ck_assert(i == 0 || d >= rp->send_dest[i - 1]); /* destination-major */
            ck_assert_msg(want[(size_t)t * n + d] == 1, "rank %d sends token %d to %d twice or needlessly", s, t, d);
            want[(size_t)t * n + d] = 2;
            ck_assert(row >= 0 && row < p->rank[d].stage_rows && owner[d][row] == -1);
            owner[d][row] = s * T + t;
            fabric += d != s;
        }
        free(want);
    }
    ck_assert_uint_eq(fabric, p->dispatch_fabric_rows);
    size_t total = 0;
    for (size_t i = 0; i < (size_t)n * n; i++)
        total += p->dispatch.counts[i];
    size_t rows = 0;
    for (int s = 0; s < n; s++)
        rows += (size_t)p->rank[s].send_rows;
    ck_assert_uint_eq(total, rows * (size_t)H);
    return owner;
}

/* Expert-major: every (s, t, j) has one row on its expert's rank, in expert then (source, token) order, whose staging
 * row holds that token; the pull tables point at it. */
static void check_expert_major(const pl_ep_plan *p, int **owner)
{
    const int n = p->shape.nranks, T = p->shape.tokens, k = p->shape.topk, L = p->local_experts;
    size_t all = 0;
    for (int d = 0; d < n; d++) {
        const pl_ep_rank_plan *rp = &p->rank[d];
        ck_assert_int_eq(rp->expert_offset[0], 0);
        ck_assert_int_eq(rp->expert_offset[L], rp->recv_rows);
        for (int l = 0; l < L; l++)
            for (int r = rp->expert_offset[l]; r < rp->expert_offset[l + 1]; r++) {
                ck_assert_int_eq(rp->recv_expert[r], l);
                const int key = rp->recv_src[r] * T + rp->recv_token[r];
                ck_assert(r == rp->expert_offset[l] || key > rp->recv_src[r - 1] * T + rp->recv_token[r - 1]);
                ck_assert_int_eq(owner[d][rp->recv_stage_row[r]], key);
            }
        all += (size_t)rp->recv_rows;
    }
    ck_assert_uint_eq(all, (size_t)n * T * k);
    for (int s = 0; s < n; s++)
        for (size_t i = 0; i < (size_t)T * k; i++) {
            const pl_ep_rank_plan *src = &p->rank[s];
            const int d = src->pull_rank[i], r = src->pull_row[i];
            ck_assert_int_eq(d, src->expert[i] / L);
            ck_assert(r >= 0 && r < p->rank[d].recv_rows);
            ck_assert_int_eq(p->rank[d].recv_src[r], s);
            ck_assert_int_eq(p->rank[d].recv_token[r], (int)(i / (size_t)k));
            ck_assert_int_eq(p->rank[d].recv_expert[r] + d * L, src->expert[i]);
        }
}

/* Combine: the row landing at comb_recv_row of (t, j) on s is the one d packed from pull_row of (t, j). */
static void check_combine(const pl_ep_plan *p)
{
    const int n = p->shape.nranks, T = p->shape.tokens, k = p->shape.topk;
    const size_t H = (size_t)p->shape.hidden;
    size_t fabric = 0;
    for (int s = 0; s < n; s++) {
        const pl_ep_rank_plan *src = &p->rank[s];
        ck_assert_int_eq(src->comb_recv_rows, T * k);
        char *seen = calloc((size_t)T * k, 1);
        for (size_t i = 0; i < (size_t)T * k; i++) {
            const int d = src->pull_rank[i], at = src->comb_recv_row[i];
            const size_t in_chunk = (size_t)at - p->combine.recv_offset[(size_t)d * n + s] / H;
            ck_assert(in_chunk < p->combine.counts[(size_t)d * n + s] / H);
            ck_assert(!seen[at]);
            seen[at] = 1;
            const size_t sent = p->combine.send_offset[(size_t)d * n + s] / H + in_chunk;
            ck_assert(sent < (size_t)p->rank[d].comb_send_rows);
            ck_assert_int_eq(p->rank[d].comb_send_row[sent], src->pull_row[i]);
            fabric += d != s;
        }
        free(seen);
    }
    ck_assert_uint_eq(fabric, p->combine_fabric_rows);
}

static void check_plan(const pl_ep_shape *s)
{
    pl_ep_plan p;
    make(&p, s);
    check_routing(&p);
    int **owner = check_dispatch_send(&p);
    check_expert_major(&p, owner);
    check_combine(&p);
    for (int d = 0; d < s->nranks; d++)
        free(owner[d]);
    free(owner);
    ck_assert(pl_ep_plan_rank_bytes(&p) > 0 && (double)pl_ep_plan_rank_bytes(&p) <= pl_ep_worst_rank_bytes(s));
    pl_ep_plan_free(&p);
}

static const int rank_counts[] = {2, 4, 8};

START_TEST(plans_hold_together)
{
    const int n = rank_counts[_i];
    const double alphas[] = {0.0, 1.0, 1.25, 1.5};
    for (size_t a = 0; a < sizeof alphas / sizeof alphas[0]; a++) {
        pl_ep_shape decode = shape(n, 128, 64, 8, 256, alphas[a]); /* the hidden size does not change the rows */
        check_plan(&decode);
        pl_ep_shape odd = shape(n, 77, 72, 3, 12 * (n == 8 ? 2 : 1), alphas[a]); /* 12 experts: not on 8 ranks */
        check_plan(&odd);
        pl_ep_shape one_expert_each = shape(n, 5, 8, n, n, alphas[a]); /* every token to every rank */
        check_plan(&one_expert_each);
    }
}
END_TEST

START_TEST(routing_reproducible_and_skewed)
{
    pl_ep_shape s = shape(4, 128, 64, 8, 256, 1.5);
    pl_ep_plan a, b, c;
    make(&a, &s);
    make(&b, &s);
    s.tokens = 77; /* a token's routing does not depend on the token count */
    make(&c, &s);
    for (int r = 0; r < 4; r++) {
        ck_assert(memcmp(a.rank[r].expert, b.rank[r].expert, 128 * 8 * sizeof(int)) == 0);
        ck_assert(memcmp(a.rank[r].weight, b.rank[r].weight, 128 * 8 * sizeof(float)) == 0);
        ck_assert(memcmp(a.rank[r].expert, c.rank[r].expert, 77 * 8 * sizeof(int)) == 0);
    }
    pl_ep_plan_free(&c);
    s.tokens = 128;
    s.seed++;
    make(&c, &s);
    ck_assert(memcmp(a.rank[0].expert, c.rank[0].expert, 128 * 8 * sizeof(int)) != 0);
    pl_ep_plan_free(&c);
    s.alpha = 0;
    make(&c, &s);
    ck_assert_msg(a.expert_max_mean > 2 * c.expert_max_mean, "alpha 1.5: max/mean %.2f, uniform %.2f",
                  a.expert_max_mean, c.expert_max_mean);
    ck_assert(a.expert_gini > c.expert_gini);
    pl_ep_plan_free(&a);
    pl_ep_plan_free(&b);
    pl_ep_plan_free(&c);
}
END_TEST

static void refused(pl_ep_shape s, const char *needle)
{
    char err[256] = "";
    pl_ep_plan p;
    ck_assert_int_eq(pl_ep_plan_make(&p, &s, err, sizeof err), -1);
    ck_assert_msg(strstr(err, needle) && !strchr(err, '\n'), "'%s' lacks '%s'", err, needle);
}

START_TEST(bad_shapes_refused)
{
    refused(shape(3, 128, 7168, 8, 256, 1), "not divisible by the 3 ranks");
    refused(shape(4, 128, 7168, 300, 256, 1), "exceeds --experts");
    refused(shape(4, 128, 100, 8, 256, 1), "multiple of 8");
    refused(shape(1, 128, 7168, 8, 256, 1), "use 2 to 8");
    refused(shape(9, 128, 7168, 8, 288, 1), "use 2 to 8");
    refused(shape(4, 128, 7168, 8, 256, -1), "alpha");
    refused(shape(4, 4000000, 7168, 8, 256, 1), "GiB of EP buffers");
    pl_ep_shape unknown = shape(0, 128, 7168, 8, 255, 1); /* the rank count unknown: divisibility not judged */
    char err[256];
    ck_assert_int_eq(pl_ep_shape_check(&unknown, err, sizeof err), 0);
}
END_TEST

START_TEST(verb_refuses_before_any_gpu_work)
{
    static const char *const cases[][2] = {
        {"moe-readiness --ep --gpus 3", "not divisible by the 3 ranks"},
        {"moe-readiness --ep --gpus 2 --tokens 10000000", "GiB of EP buffers"},
        {"moe-readiness --ep --hidden 100", "multiple of 8"},
        {"moe-readiness --ep --topk 300", "exceeds --experts"},
        {"moe-readiness --ep --ep-impl foo", "not nccl or peer"},
        {"moe-readiness --ep --tokens 0", "--tokens"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pl_cmd_result r = pl_run_perflab(NULL, cases[i][0]);
        ck_assert_msg(r.exit_code == 2, "'%s': exit %d\n%s", cases[i][0], r.exit_code, r.err);
        ck_assert_msg(strstr(r.err, cases[i][1]), "'%s': '%s' lacks '%s'", cases[i][0], r.err, cases[i][1]);
        ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "'%s': not one line: %s", cases[i][0], r.err);
        pl_cmd_result_free(&r);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ep_plan");
    TCase *tc = tcase_create("plan");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, plans_hold_together, 0, 3);
    tcase_add_test(tc, routing_reproducible_and_skewed);
    tcase_add_test(tc, bad_shapes_refused);
    tcase_add_test(tc, verb_refuses_before_any_gpu_work);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
