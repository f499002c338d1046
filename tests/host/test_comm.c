/* The fabric's host logic: skewed splits (exact counts, sums, largest-remainder order, Gini, max/mean), busbw
 * factors and nccl-tests layouts, size series, SLO verdicts, merging rank messages, and the reports (JSON
 * values, well-formed SVG heatmaps, tables). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/coll.h"
#include "comm/job.h"
#include "comm/kernels.h"
#include "comm/comm_report.h"
#include "comm/result.h"
#include "comm/skew.h"
#include "comm/slo.h"
#include "core/chart.h"
#include "core/util.h"
#include "testutil.h"

#define NEAR(a, b) ck_assert_msg(fabs((a) - (b)) < 1e-9, "%.12g != %.12g", (double)(a), (double)(b))

static size_t sum_of(const size_t *x, size_t n)
{
    size_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

START_TEST(split_exact_small_cases)
{
    size_t c[4];
    /* weights 1, 1/2, 1/3, 1/4: exact 4.8, 2.4, 1.6, 1.2 -> floors 4,2,1,1; the 2 left go to .8 and .6 */
    pl_skew_split(PL_SKEW_DISTANCE, 10, 4, 0, 1.0, c);
    ck_assert_uint_eq(c[0], 5);
    ck_assert_uint_eq(c[1], 2);
    ck_assert_uint_eq(c[2], 2);
    ck_assert_uint_eq(c[3], 1);
    /* from rank 1 the same shares rotate: distance 1 is rank 1 itself, rank 0 is the farthest */
    pl_skew_split(PL_SKEW_DISTANCE, 10, 4, 1, 1.0, c);
    ck_assert_uint_eq(c[1], 5);
    ck_assert_uint_eq(c[2], 2);
    ck_assert_uint_eq(c[3], 2);
    ck_assert_uint_eq(c[0], 1);
    /* hotspot: every source favours rank 0 */
    pl_skew_split(PL_SKEW_HOTSPOT, 10, 4, 3, 1.0, c);
    ck_assert_uint_eq(c[0], 5);
    ck_assert_uint_eq(c[3], 1);
    /* uniform with ties in the remainder: 2.5 each; the two extra go to the smallest distances */
    pl_skew_split(PL_SKEW_DISTANCE, 10, 4, 2, 0.0, c);
    ck_assert_uint_eq(c[2], 3);
    ck_assert_uint_eq(c[3], 3);
    ck_assert_uint_eq(c[0], 2);
    ck_assert_uint_eq(c[1], 2);
    /* fewer elements than ranks */
    pl_skew_split(PL_SKEW_DISTANCE, 2, 4, 0, 1.5, c);
    ck_assert_uint_eq(sum_of(c, 4), 2);
    ck_assert_uint_eq(c[0], 1);
    ck_assert_uint_eq(c[1], 1);
    /* one rank keeps everything */
    pl_skew_split(PL_SKEW_DISTANCE, 12345, 1, 0, 1.25, c);
    ck_assert_uint_eq(c[0], 12345);
}
END_TEST

START_TEST(split_preserves_sum_and_is_largest_remainder)
{
    pl_rng rng;
    pl_rng_seed(&rng, 7);
    size_t c[64];
    double dist[64];
    /* violations are counted and the first one described, then asserted once: Check records every assertion that
     * passes, which in this loop would cost more than the test itself */
    long bad = 0;
    char first[256] = "";
    for (int t = 0; t < 2000; t++) {
        const int n = 1 + (int)pl_rng_below(&rng, 64);
        const size_t total = (size_t)pl_rng_below(&rng, 5000000);
        const double alpha = pl_rng_uniform(&rng) * 3;
        const int src = (int)pl_rng_below(&rng, (uint64_t)n);
        const pl_skew_model m = t % 2 ? PL_SKEW_HOTSPOT : PL_SKEW_DISTANCE;
        pl_skew_split(m, total, n, src, alpha, c);
        ck_assert_uint_eq(sum_of(c, (size_t)n), total);
        double wsum = 0;
        for (int d = 0; d < n; d++) {
            dist[d] = pl_skew_rank_distance(m, n, src, d);
            wsum += pow(dist[d], -alpha);
        }
        double min_bumped = 2, max_kept = -1;
        for (int d = 0; d < n; d++) {
            const double exact = (double)total * pow(dist[d], -alpha) / wsum;
            const double fl = floor(exact), frac = exact - fl;
            if ((double)c[d] != fl && (double)c[d] != fl + 1 && !bad++)
                pl_snprintf(first, sizeof first, "trial %d: count %zu, exact %g", t, c[d], exact);
            if ((double)c[d] == fl + 1)
                min_bumped = fmin(min_bumped, frac);
            else
                max_kept = fmax(max_kept, frac);
        }
        /* every destination that got one more had a fraction at least as large as any that did not */
        if (!(min_bumped >= max_kept - 1e-9) && !bad++)
            pl_snprintf(first, sizeof first, "trial %d: largest remainder order: %g < %g", t, min_bumped, max_kept);
        /* heavier weights never get fewer elements */
        for (int d = 0; d < n && alpha > 0; d++)
            for (int e = 0; e < n; e++)
                if (dist[d] < dist[e] && c[d] < c[e] && !bad++)
                    pl_snprintf(first, sizeof first, "trial %d: destination %d (nearer) got %zu < %zu", t, d, c[d],
                                c[e]);
    }
    ck_assert_msg(bad == 0, "%ld violations; the first: %s", bad, first);
}
END_TEST

START_TEST(gini_and_max_over_mean)
{
    const size_t equal[] = {5, 5, 5, 5}, one[] = {0, 0, 0, 8}, ramp[] = {1, 2, 3, 4}, zero[] = {0, 0};
    NEAR(pl_gini(equal, 4), 0);
    NEAR(pl_gini(one, 4), 0.75);  /* (n-1)/n */
    NEAR(pl_gini(ramp, 4), 0.25); /* sum |xi-xj| = 20, / (2 * 4 * 10) */
    NEAR(pl_gini(zero, 2), 0);
    NEAR(pl_gini(ramp, 1), 0);
    NEAR(pl_max_over_mean(equal, 4), 1);
    NEAR(pl_max_over_mean(ramp, 4), 1.6);
    NEAR(pl_max_over_mean(one, 4), 4);
    NEAR(pl_max_over_mean(zero, 2), 0);
}
END_TEST

START_TEST(plan_offsets_and_totals)
{
    pl_a2a_plan p;
    pl_a2a_plan_make(&p, PL_SKEW_DISTANCE, 1000, 4, 1.25);
    for (int s = 0; s < 4; s++) {
        ck_assert_uint_eq(sum_of(p.counts + s * 4, 4), 1000);
        for (int d = 1; d < 4; d++)
            ck_assert_uint_eq(p.send_offset[s * 4 + d], p.send_offset[s * 4 + d - 1] + p.counts[s * 4 + d - 1]);
    }
    for (int d = 0; d < 4; d++) {
        ck_assert_uint_eq(p.recv_total[d], 1000); /* rotation: everyone receives what it sends */
        for (int s = 1; s < 4; s++)
            ck_assert_uint_eq(p.recv_offset[s * 4 + d], p.recv_offset[(s - 1) * 4 + d] + p.counts[(s - 1) * 4 + d]);
    }
    NEAR(p.recv_gini, 0);
    ck_assert(p.split_gini > 0.2 && p.split_max_mean > 1.5);
    pl_a2a_plan_free(&p);
    pl_a2a_plan_make(&p, PL_SKEW_HOTSPOT, 1000, 4, 1.0);
    ck_assert(p.recv_gini > 0.2);
    ck_assert_uint_eq(pl_a2a_plan_max_recv(&p), p.recv_total[0]);
    pl_a2a_plan_free(&p);
}
END_TEST

START_TEST(busbw_factors)
{
    NEAR(pl_coll_busbw_factor(PL_COLL_ALLREDUCE, 4), 1.5);
    NEAR(pl_coll_busbw_factor(PL_COLL_ALLREDUCE, 8), 1.75);
    NEAR(pl_coll_busbw_factor(PL_COLL_ALLREDUCE, 1), 0);
    NEAR(pl_coll_busbw_factor(PL_COLL_ALLGATHER, 8), 0.875);
    NEAR(pl_coll_busbw_factor(PL_COLL_REDUCESCATTER, 2), 0.5);
    NEAR(pl_coll_busbw_factor(PL_COLL_ALLTOALL, 4), 0.75);
    NEAR(pl_coll_busbw_factor(PL_COLL_BROADCAST, 8), 1);
    NEAR(pl_coll_busbw_factor(PL_COLL_SENDRECV, 8), 1);
    /* 1e9 bytes in 10 ms: algbw 100 GB/s; allreduce on 4 ranks: busbw 150 */
    NEAR(pl_algbw_gbps(1000000000, 10.0), 100);
    NEAR(pl_busbw_gbps(PL_COLL_ALLREDUCE, 4, 1000000000, 10.0), 150);
    ck_assert(isnan(pl_algbw_gbps(1000, 0)));
}
END_TEST

START_TEST(layouts_follow_nccl_tests)
{
    pl_coll_layout L;
    pl_coll_layout_for(PL_COLL_ALLGATHER, 1 << 20, 4, 3, 2, &L);
    ck_assert_uint_eq(L.count, 87381); /* 262144 / 3 */
    ck_assert_uint_eq(L.recv_count, 87381 * 3);
    ck_assert_uint_eq(L.bytes, 87381 * 3 * 4);
    ck_assert_uint_eq(L.in_place_send_offset, 2 * 87381);
    pl_coll_layout_for(PL_COLL_REDUCESCATTER, 1 << 20, 2, 4, 1, &L);
    ck_assert_uint_eq(L.count, 131072);
    ck_assert_uint_eq(L.send_count, 524288);
    ck_assert_uint_eq(L.in_place_recv_offset, 131072);
    pl_coll_layout_for(PL_COLL_ALLTOALL, 1000, 4, 3, 0, &L);
    ck_assert_uint_eq(L.count, 83);
    ck_assert_uint_eq(L.bytes, 83 * 3 * 4);
    pl_coll_layout_for(PL_COLL_ALLREDUCE, 1002, 4, 8, 0, &L);
    ck_assert_uint_eq(L.count, 250);
    ck_assert_uint_eq(L.bytes, 1000);
    pl_coll_layout_for(PL_COLL_ALLTOALL, 8, 4, 8, 0, &L); /* under one element per rank */
    ck_assert_uint_eq(L.count, 0);
    ck_assert_uint_eq(L.bytes, 0);
    ck_assert(!pl_coll_has_in_place(PL_COLL_ALLTOALL) && !pl_coll_has_in_place(PL_COLL_SENDRECV));
    ck_assert(pl_coll_has_in_place(PL_COLL_ALLGATHER));
    /* perflab's all-reduce: an all-reduce's layout, bus factor and in-place form, a name of its own, not in `all` */
    const pl_coll mine[] = {PL_COLL_ALLREDUCE_ONESHOT, PL_COLL_ALLREDUCE_TWOSHOT};
    for (int i = 0; i < 2; i++) {
        pl_coll_layout A, B;
        pl_coll_layout_for(mine[i], 1002, 2, 4, 3, &A);
        pl_coll_layout_for(PL_COLL_ALLREDUCE, 1002, 2, 4, 3, &B);
        ck_assert(memcmp(&A, &B, sizeof A) == 0);
        NEAR(pl_coll_busbw_factor(mine[i], 4), 1.5);
        ck_assert(pl_coll_has_in_place(mine[i]) && pl_coll_reduces(mine[i]) && pl_coll_is_perflab(mine[i]));
        ck_assert(pl_coll_semantics(mine[i]) == PL_COLL_ALLREDUCE && (int)mine[i] >= PL_COLL_NCCL_COUNT);
        ck_assert_int_eq(pl_coll_from_name(pl_coll_name(mine[i])), (int)mine[i]);
    }
    ck_assert_str_eq(pl_coll_name(PL_COLL_ALLREDUCE_ONESHOT), "allreduce_oneshot");
    ck_assert(!pl_coll_is_perflab(PL_COLL_ALLREDUCE) && pl_coll_semantics(PL_COLL_ALLGATHER) == PL_COLL_ALLGATHER);
}
END_TEST

START_TEST(size_series_and_lists)
{
    size_t *s;
    size_t n = pl_comm_size_series(8 << 10, 1 << 30, 2, 0, PL_COMM_MAX_SIZES, &s);
    ck_assert_uint_eq(n, 18);
    ck_assert_uint_eq(s[0], 8192);
    ck_assert_uint_eq(s[17], 1u << 30);
    free(s);
    n = pl_comm_size_series(100, 400, 2, 100, PL_COMM_MAX_SIZES, &s);
    ck_assert_uint_eq(n, 4);
    ck_assert_uint_eq(s[3], 400);
    free(s);
    char err[256];
    ck_assert_int_eq(pl_parse_size_list("48k,192k,768k,2m", "x", &s, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, 4);
    ck_assert_uint_eq(s[0], 49152);
    ck_assert_uint_eq(s[3], 2097152);
    free(s);
    ck_assert_int_eq(pl_parse_size_list("48k,zz", "--message-sizes", &s, &n, err, sizeof err), -1);
    ck_assert(strstr(err, "'zz'"));
    double *d;
    ck_assert_int_eq(pl_parse_double_list("1.0,1.25,1.5", "x", 0, 8, &d, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, 3);
    NEAR(d[1], 1.25);
    free(d);
    ck_assert_int_eq(pl_parse_double_list("1,-1", "--skews", 0, 8, &d, &n, err, sizeof err), -1);
}
END_TEST

START_TEST(slo_verdicts)
{
    char why[256];
    const pl_slo both = {.max_p99_ms = 6.0, .min_bw_gbps = 16.0}, none = {0};
    ck_assert_int_eq(pl_slo_judge(&both, 1, 5.0, 20.0, why, sizeof why), PL_SLO_PASS);
    ck_assert_str_eq(why, "");
    ck_assert_int_eq(pl_slo_judge(&both, 1, 6.0, 16.0, why, sizeof why), PL_SLO_PASS); /* limits are inclusive */
    ck_assert_int_eq(pl_slo_judge(&both, 1, 7.1, 20.0, why, sizeof why), PL_SLO_MISS);
    ck_assert(strstr(why, "p99 7.100 ms > 6 ms"));
    ck_assert_int_eq(pl_slo_judge(&both, 1, 5.0, 12.5, why, sizeof why), PL_SLO_MISS);
    ck_assert(strstr(why, "12.50 GB/s < 16 GB/s"));
    ck_assert_int_eq(pl_slo_judge(&both, 1, 7.0, 12.5, why, sizeof why), PL_SLO_MISS);
    ck_assert(strstr(why, "; "));
    ck_assert_int_eq(pl_slo_judge(&both, 1, NAN, NAN, why, sizeof why), PL_SLO_MISS);
    ck_assert_int_eq(pl_slo_judge(&both, 0, 1.0, 100.0, why, sizeof why), PL_SLO_MISS);
    ck_assert_int_eq(pl_slo_judge(&none, 1, 100.0, 0.1, why, sizeof why), PL_SLO_UNGATED);
    ck_assert_int_eq(pl_slo_judge(&none, 0, 1.0, 1.0, why, sizeof why), PL_SLO_MISS);
    const pl_slo_verdict a[] = {PL_SLO_PASS, PL_SLO_PASS}, b[] = {PL_SLO_PASS, PL_SLO_MISS},
                         c[] = {PL_SLO_UNGATED, PL_SLO_UNGATED};
    ck_assert_int_eq(pl_slo_overall(a, 2), PL_SLO_PASS);
    ck_assert_int_eq(pl_slo_overall(b, 2), PL_SLO_MISS);
    ck_assert_int_eq(pl_slo_overall(c, 2), PL_SLO_UNGATED);
    ck_assert_int_eq(pl_slo_overall(a, 0), PL_SLO_UNGATED);
}
END_TEST

/* A MoE job of 2 sizes x 2 skews on 2 ranks, and the messages its ranks would send. */
static void fake_moe(pl_comm_job *job, pl_comm_outcome *out, double ms_rank1, int wrong_point)
{
    memset(job, 0, sizeof *job);
    job->kind = PL_JOB_MOE;
    job->nranks = 2;
    job->iters = 4;
    job->moe_dtype = PL_DTYPE_BF16;
    char err[128];
    pl_parse_size_list("48k,2m", "s", &job->msg_sizes, &job->n_msg_sizes, err, sizeof err);
    pl_parse_double_list("1.0,1.5", "k", 0, 8, &job->skews, &job->n_skews, err, sizeof err);
    memset(out, 0, sizeof *out);
    out->mode = "threads";
    out->is_root = 1;
    out->messages = json_array();
    for (int r = 0; r < 2; r++) {
        json_array_append_new(out->messages, json_pack("{s:s, s:i, s:s, s:i}", "t", "rank", "rank", r, "name",
                                                       "Test GPU", "nccl_version", 22803));
        for (int p = 0; p < 4; p++) {
            const double base = p < 2 ? 0.02 : 0.2; /* 48 KiB points fast, 2 MiB slower */
            json_t *s = json_pack("[f, f, f, f]", base, base, base * 1.1, r ? ms_rank1 : base);
            json_t *check = json_pack("{s:i, s:i, s:i, s:i, s:f, s:f, s:f}", "elements", 100, "wrong",
                                      p == wrong_point ? 3 : 0, "nonfinite", 0, "unwritten", p == wrong_point ? 3 : 0,
                                      "err2", 0.0, "ref2", 50.0, "max_abs", 0.0);
            json_array_append_new(out->messages, json_pack("{s:s, s:i, s:i, s:o, s:o}", "t", "point", "rank", r,
                                                           "point", p, "samples_ms", s, "check", check));
        }
        json_array_append_new(out->messages, json_pack("{s:s, s:i}", "t", "rank_done", "rank", r));
    }
}

START_TEST(result_merges_ranks_and_checks)
{
    pl_comm_job job;
    pl_comm_outcome out;
    fake_moe(&job, &out, 0.5, 2);
    pl_comm_result r;
    pl_comm_result_build(&r, &job, &out);
    ck_assert_int_eq(r.n_points, 4);
    ck_assert_int_eq(r.points[0].status, PL_POINT_OK);
    ck_assert_uint_eq(r.points[0].n_samples, 8); /* iterations x ranks */
    NEAR(r.points[0].latency.max, 0.5);          /* rank 1's slow sample shows in max */
    NEAR(r.points[0].latency.p50, 0.02);
    ck_assert_int_eq(r.points[2].status, PL_POINT_FAILED_VERIFICATION);
    ck_assert_uint_eq(r.points[2].check.unwritten, 6);
    ck_assert_int_eq(r.failed_points, 1);
    ck_assert_int_eq(r.nccl_version, 22803);
    pl_comm_result_free(&r);
    /* a rank that never reported: every point is an error that says so */
    json_t *keep = json_array();
    for (size_t i = 0; i < json_array_size(out.messages); i++) {
        json_t *m = json_array_get(out.messages, i);
        if (json_integer_value(json_object_get(m, "rank")) == 0)
            json_array_append(keep, m);
    }
    json_array_append_new(keep, json_pack("{s:s, s:i, s:s}", "t", "rank_error", "rank", 1, "reason", "boom"));
    json_decref(out.messages);
    out.messages = keep;
    pl_comm_result_build(&r, &job, &out);
    ck_assert_int_eq(r.points[0].status, PL_POINT_ERROR);
    ck_assert(strstr(r.points[0].reason, "1 of 2 ranks") && strstr(r.points[0].reason, "boom"));
    ck_assert_int_eq(r.failed_points, 4);
    pl_comm_result_free(&r);
    json_decref(out.messages);
    pl_comm_job_free(&job);
}
END_TEST

/* Tags open and closed in pairs, and nothing after the root closes. */
static void assert_well_formed_svg(const char *svg)
{
    ck_assert(strncmp(svg, "<?xml", 5) == 0);
    const char *end = strstr(svg, "</svg>");
    ck_assert_ptr_nonnull(end);
    ck_assert_str_eq(end, "</svg>\n");
    int depth = 0;
    for (const char *p = strchr(svg, '<'); p; p = strchr(p + 1, '<')) {
        if (p[1] == '?')
            continue;
        const char *close = strchr(p, '>');
        ck_assert_ptr_nonnull(close);
        if (p[1] == '/')
            depth--;
        else if (close[-1] != '/')
            depth++;
        ck_assert_int_ge(depth, 0);
    }
    ck_assert_int_eq(depth, 0);
    ck_assert_ptr_null(strstr(svg, "nan"));
}

START_TEST(moe_report_json_table_and_heatmaps)
{
    pl_comm_job job;
    pl_comm_outcome out;
    fake_moe(&job, &out, 0.02, -1);
    pl_comm_result r;
    pl_comm_result_build(&r, &job, &out);
    const pl_slo slo = {.max_p99_ms = 0.1, .min_bw_gbps = 1.0};
    pl_moe_summary s;
    pl_moe_summarize(&job, &r, &slo, &s);
    /* 48 KiB in 0.02 ms: 2.46 GB/s, passes; 2 MiB: p99 0.22 ms > 0.1 ms, misses */
    ck_assert_int_eq(s.points[0].verdict, PL_SLO_PASS);
    NEAR(s.points[0].bw_p50_gbps, 49152 / 0.02e-3 / 1e9);
    ck_assert_int_eq(s.points[2].verdict, PL_SLO_MISS);
    ck_assert_int_eq(s.overall, PL_SLO_MISS);
    ck_assert_uint_eq(s.missed, 2);
    ck_assert(s.points[1].split_gini > s.points[0].split_gini); /* alpha 1.5 is more uneven than 1.0 */

    json_t *j = pl_moe_report_json(&job, &r, &s, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "verdict"), "overall")), "miss");
    json_t *p0 = json_array_get(json_object_get(j, "points"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(p0, "message_bytes")), 49152);
    NEAR(json_real_value(json_object_get(json_object_get(p0, "latency_ms"), "p50")), 0.02);
    ck_assert_uint_eq(json_array_size(json_object_get(p0, "samples_ms")), 8);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(p0, "slo"), "verdict")), "pass");
    json_t *counts = json_object_get(json_object_get(p0, "split"), "rank0_counts");
    ck_assert_int_eq(json_integer_value(json_array_get(counts, 0)) + json_integer_value(json_array_get(counts, 1)),
                     49152 / 2);
    json_decref(j);

    pl_buf text = {0}, md = {0};
    pl_moe_report_table(&job, &r, &s, &text, &md);
    ck_assert(strstr(text.data, "48 KiB") && strstr(text.data, "verdict: miss (2 of 4 points missed)"));
    ck_assert(strstr(md.data, "| message |"));
    pl_buf_free(&text);
    pl_buf_free(&md);

    for (int which = 0; which < 2; which++) {
        char *svg = pl_moe_heatmap_svg(&job, &r, &s, which);
        assert_well_formed_svg(svg);
        ck_assert(strstr(svg, which == 0 ? "0.0220" : "2.46")); /* a value in its cell */
        ck_assert(strstr(svg, "alpha 1.50") && strstr(svg, "2 MiB"));
        ck_assert(strstr(svg, "SLO missed"));
        free(svg);
    }
    pl_moe_summary_free(&s);
    pl_comm_result_free(&r);
    json_decref(out.messages);
    pl_comm_job_free(&job);
}
END_TEST

START_TEST(comm_report_json_and_tables)
{
    pl_comm_job job;
    memset(&job, 0, sizeof job);
    job.kind = PL_JOB_COLL;
    job.nranks = 4;
    job.iters = 2;
    job.colls[job.n_colls++] = PL_COLL_ALLREDUCE;
    job.dtypes[job.n_dtypes++] = PL_DTYPE_F32;
    job.placements = PL_PLACE_OUT | PL_PLACE_IN;
    job.n_sizes = pl_comm_size_series(1 << 20, 1 << 20, 2, 0, PL_COMM_MAX_SIZES, &job.sizes);
    pl_comm_outcome out = {.mode = "threads", .is_root = 1, .messages = json_array()};
    for (int r = 0; r < 4; r++)
        for (int p = 0; p < 2; p++)
            json_array_append_new(out.messages,
                                  json_pack("{s:s, s:i, s:i, s:[f, f], s:{s:i, s:i, s:i, s:i, s:f, s:f, s:f}}", "t",
                                            "point", "rank", r, "point", p, "samples_ms", 0.01, 0.01, "check",
                                            "elements", 262144, "wrong", 0, "nonfinite", 0, "unwritten", 0, "err2", 0.0,
                                            "ref2", 1.0, "max_abs", 0.0));
    pl_comm_result r;
    pl_comm_result_build(&r, &job, &out);
    json_t *j = pl_comm_report_json(&job, &r, NULL);
    json_t *p0 = json_array_get(json_object_get(j, "points"), 0);
    /* 1 MiB in 10 us: algbw 104.86 GB/s, busbw x 2*3/4 */
    NEAR(json_real_value(json_object_get(p0, "algbw_gbps")), 1048576 / 1e-5 / 1e9);
    NEAR(json_real_value(json_object_get(p0, "busbw_gbps")), 1048576 / 1e-5 / 1e9 * 1.5);
    ck_assert_str_eq(json_string_value(json_object_get(p0, "status")), "ok");
    ck_assert(json_is_true(json_object_get(json_array_get(json_object_get(j, "points"), 1), "in_place")));
    json_decref(j);
    pl_buf text = {0};
    pl_comm_report_tables(&job, &r, &text, NULL);
    ck_assert(strstr(text.data, "# allreduce, 4 ranks (threads), fp32"));
    ck_assert(strstr(text.data, "157.29")); /* busbw */
    pl_buf_free(&text);
    pl_comm_result_free(&r);
    json_decref(out.messages);
    pl_comm_job_free(&job);
}
END_TEST

START_TEST(points_enumerate_in_order)
{
    pl_comm_job job;
    memset(&job, 0, sizeof job);
    job.colls[job.n_colls++] = PL_COLL_ALLTOALL; /* out of place only */
    job.colls[job.n_colls++] = PL_COLL_ALLREDUCE;
    job.dtypes[job.n_dtypes++] = PL_DTYPE_F32;
    job.dtypes[job.n_dtypes++] = PL_DTYPE_BF16;
    job.placements = PL_PLACE_OUT | PL_PLACE_IN;
    job.n_sizes = pl_comm_size_series(1024, 4096, 2, 0, PL_COMM_MAX_SIZES, &job.sizes);
    ck_assert_uint_eq(pl_comm_job_npoints(&job), 2 * (3 + 6));
    pl_comm_point p;
    pl_comm_job_point(&job, 0, &p);
    ck_assert(p.coll == PL_COLL_ALLTOALL && p.nominal_bytes == 1024 && !p.in_place && p.dtype == PL_DTYPE_F32);
    pl_comm_job_point(&job, 3, &p);
    ck_assert(p.coll == PL_COLL_ALLREDUCE && p.nominal_bytes == 1024 && !p.in_place);
    pl_comm_job_point(&job, 4, &p);
    ck_assert(p.coll == PL_COLL_ALLREDUCE && p.nominal_bytes == 1024 && p.in_place);
    pl_comm_job_point(&job, 5, &p);
    ck_assert(p.coll == PL_COLL_ALLREDUCE && p.nominal_bytes == 2048 && !p.in_place);
    pl_comm_job_point(&job, 9, &p);
    ck_assert(p.dtype == PL_DTYPE_BF16 && p.coll == PL_COLL_ALLTOALL);
    pl_comm_job_free(&job);
    /* the host twin of the device values: k/8 with k in [-15, 15] \ {0} */
    for (size_t i = 0; i < 1000; i++) {
        double v = pl_comm_value_host(1, 3, i) * 8;
        ck_assert(v == floor(v) && v != 0 && fabs(v) <= 15);
    }
}
END_TEST

START_TEST(xml_escape)
{
    pl_buf e = {0};
    pl_xml_escape_into(&e, "a<b & \"c\">");
    ck_assert_str_eq(e.data, "a&lt;b &amp; &quot;c&quot;&gt;");
    pl_buf_free(&e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("comm");
    TCase *t = tcase_create("host");
    tcase_set_timeout(t, 60); /* each test takes well under a second alone; room for a loaded machine (ctest -j8) */
    tcase_add_test(t, split_exact_small_cases);
    tcase_add_test(t, split_preserves_sum_and_is_largest_remainder);
    tcase_add_test(t, gini_and_max_over_mean);
    tcase_add_test(t, plan_offsets_and_totals);
    tcase_add_test(t, busbw_factors);
    tcase_add_test(t, layouts_follow_nccl_tests);
    tcase_add_test(t, size_series_and_lists);
    tcase_add_test(t, slo_verdicts);
    tcase_add_test(t, result_merges_ranks_and_checks);
    tcase_add_test(t, moe_report_json_table_and_heatmaps);
    tcase_add_test(t, comm_report_json_and_tables);
    tcase_add_test(t, points_enumerate_in_order);
    tcase_add_test(t, xml_escape);
    suite_add_tcase(s, t);
    return pl_run_suite(s);
}
