#include "comm/slo.h"

#include <math.h>

#include "core/util.h"

static const char *const verdict_names[PL_SLO_COUNT] = {
    [PL_SLO_PASS] = "pass", [PL_SLO_MISS] = "miss", [PL_SLO_UNGATED] = "ungated"};

const char *pl_slo_verdict_name(pl_slo_verdict v)
{
    return pl_name_of(verdict_names, PL_SLO_COUNT, (int)v);
}

int pl_slo_is_set(const pl_slo *s)
{
    return s->max_p99_ms > 0 || s->min_bw_gbps > 0;
}

pl_slo_verdict pl_slo_judge(const pl_slo *s, int point_ok, double p99_ms, double bw_gbps, char *why, size_t whylen)
{
    pl_buf b = {0};
    pl_buf_append(&b, "");
    pl_slo_verdict v = pl_slo_is_set(s) ? PL_SLO_PASS : PL_SLO_UNGATED;
    if (!point_ok) {
        pl_buf_append(&b, "the point did not run or did not verify");
        v = PL_SLO_MISS;
    } else {
        /* a NaN figure (nothing measured) misses any threshold set on it */
        if (s->max_p99_ms > 0 && !(p99_ms <= s->max_p99_ms)) {
            pl_buf_printf(&b, "p99 %.3f ms > %g ms", p99_ms, s->max_p99_ms);
            v = PL_SLO_MISS;
        }
        if (s->min_bw_gbps > 0 && !(bw_gbps >= s->min_bw_gbps)) {
            pl_buf_printf(&b, "%s%.2f GB/s < %g GB/s", b.len ? "; " : "", bw_gbps, s->min_bw_gbps);
            v = PL_SLO_MISS;
        }
    }
    pl_snprintf(why, whylen, "%s", b.data);
    pl_buf_free(&b);
    return v;
}

pl_slo_verdict pl_slo_overall(const pl_slo_verdict *v, size_t n)
{
    int judged = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == PL_SLO_MISS)
            return PL_SLO_MISS;
        judged |= v[i] == PL_SLO_PASS;
    }
    return judged ? PL_SLO_PASS : PL_SLO_UNGATED;
}
