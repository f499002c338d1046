#include "comm/job.h"

#include "comm/coll.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "perflab/params.h"

static const char *const reg_names[PL_REG_COUNT] = {
    [PL_REG_NONE] = "none", [PL_REG_BUFFER] = "buffer", [PL_REG_WINDOW] = "window"};
static const char *const a2a_names[PL_A2A_COUNT] = {
    [PL_A2A_AUTO] = "auto", [PL_A2A_GROUP] = "group", [PL_A2A_NATIVE] = "native"};

const char *pl_register_mode_name(pl_register_mode m)
{
    return pl_name_of(reg_names, PL_REG_COUNT, (int)m);
}

int pl_register_mode_from_name(const char *name)
{
    return pl_index_of(reg_names, PL_REG_COUNT, name);
}

const char *pl_a2a_api_name(pl_a2a_api a)
{
    return pl_name_of(a2a_names, PL_A2A_COUNT, (int)a);
}

int pl_a2a_api_from_name(const char *name)
{
    return pl_index_of(a2a_names, PL_A2A_COUNT, name);
}

int pl_comm_choice(const char *flag, const char *text, int (*from_name)(const char *), const char *allowed, int *out,
                   char *err, size_t errlen)
{
    *out = from_name(text);
    if (*out < 0) {
        pl_snprintf(err, errlen, "%s must be %s, not '%s'", flag, allowed, PL_ESC(text));
        return -1;
    }
    return 0;
}

static int n_placements(const pl_comm_job *j, pl_coll c)
{
    int n = (j->placements & PL_PLACE_OUT) ? 1 : 0;
    if ((j->placements & PL_PLACE_IN) && pl_coll_has_in_place(c))
        n++;
    return n;
}

size_t pl_comm_job_npoints(const pl_comm_job *j)
{
    if (j->kind == PL_JOB_EP)
        return j->n_ep_tokens * j->n_skews * (size_t)j->n_ep_impls * PL_EP_PHASE_COUNT;
    if (j->kind == PL_JOB_MOE)
        return j->n_msg_sizes * j->n_skews;
    size_t n = 0;
    for (int c = 0; c < j->n_colls; c++)
        n += (size_t)n_placements(j, j->colls[c]) * j->n_sizes;
    return n * (size_t)j->n_dtypes;
}

/* Points run dtype by dtype, then collective by collective, size by size, out-of-place before in-place. */
void pl_comm_job_point(const pl_comm_job *j, size_t index, pl_comm_point *p)
{
    memset(p, 0, sizeof *p);
    if (j->kind == PL_JOB_EP) { /* token counts, then skews, then variants, the phases innermost */
        p->ep_phase = (pl_ep_phase)(index % PL_EP_PHASE_COUNT);
        index /= PL_EP_PHASE_COUNT;
        p->ep_impl = j->ep_impls[index % (size_t)j->n_ep_impls];
        index /= (size_t)j->n_ep_impls;
        p->skew = j->skews[index % j->n_skews];
        p->ep_tokens = (int)j->ep_tokens[index / j->n_skews];
        return;
    }
    if (j->kind == PL_JOB_MOE) {
        p->msg_bytes = j->msg_sizes[index / j->n_skews];
        p->skew = j->skews[index % j->n_skews];
        return;
    }
    size_t per_dtype = pl_comm_job_npoints(j) / (size_t)j->n_dtypes;
    p->dtype = j->dtypes[index / per_dtype];
    size_t k = index % per_dtype;
    for (int c = 0; c < j->n_colls; c++) {
        size_t np = (size_t)n_placements(j, j->colls[c]);
        size_t here = np * j->n_sizes;
        if (k < here) {
            p->coll = j->colls[c];
            p->nominal_bytes = j->sizes[k / np];
            p->in_place = np == 2 ? (int)(k % np) : !(j->placements & PL_PLACE_OUT);
            return;
        }
        k -= here;
    }
}

int pl_comm_job_check_perflab(const pl_comm_job *j, int threaded, char *err, size_t errlen)
{
    const char *name = NULL;
    for (int c = 0; c < j->n_colls && !name; c++)
        name = pl_coll_is_perflab(j->colls[c]) ? pl_coll_name(j->colls[c]) : NULL;
    if (!name)
        return 0;
    size_t most = 0;
    for (size_t i = 0; i < j->n_sizes; i++)
        most = j->sizes[i] > most ? j->sizes[i] : most;
    if (!threaded)
        pl_snprintf(err, errlen, "%s runs in one process with a thread per GPU: run perflab comm, not perflab-mpi",
                    name);
    else if (j->n_dtypes != 1 || j->dtypes[0] != PL_DTYPE_BF16)
        pl_snprintf(err, errlen, "%s sums bf16 only: pass --dtype bf16", name);
    else if (j->op != PL_REDOP_SUM)
        pl_snprintf(err, errlen, "%s sums only: pass --op sum", name);
    else if (most > PL_COMM_PERFLAB_MAX_BYTES)
        pl_snprintf(err, errlen, "%s is for the small messages of a decode step: --max-bytes up to %d MiB", name,
                    (int)(PL_COMM_PERFLAB_MAX_BYTES >> 20));
    else
        return 0;
    return -1;
}

void pl_comm_job_free(pl_comm_job *j)
{
    free(j->sizes);
    free(j->msg_sizes);
    free(j->skews);
    free(j->ep_tokens);
    j->ep_tokens = NULL;
    j->sizes = j->msg_sizes = NULL;
    j->skews = NULL;
}

/* The size after s, or 0 when there is none within max (or no representable one). */
static size_t next_size(size_t s, size_t max, double factor, size_t step)
{
    if (step > 0)
        return step <= max - s ? s + step : 0; /* s <= max: no wrap-around */
    const double x = (double)s * factor;
    if (!(x >= (double)s && x < 0x1p64 && x <= (double)max)) /* checked on the double (NaN too), before the cast */
        return 0;
    size_t next = (size_t)x;
    if (next <= s) /* a factor too close to 1 for this size */
        next = s + 1;
    return next <= max ? next : 0;
}

size_t pl_comm_size_series(size_t min, size_t max, double factor, size_t step, size_t limit, size_t **out)
{
    *out = NULL;
    if (min == 0 || min > max)
        return 0;
    /* counted first, without building anything: a series past the limit is refused before any work */
    size_t n = 1;
    for (size_t s = min; (s = next_size(s, max, factor, step)) != 0 && n <= limit;)
        n++;
    if (n > limit)
        return limit + 1;
    *out = pl_xmalloc(n * sizeof **out);
    size_t i = 0;
    for (size_t s = min; s != 0; s = next_size(s, max, factor, step))
        (*out)[i++] = s;
    return n;
}

int pl_parse_size_list(const char *text, const char *what, size_t **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    char *copy = pl_strdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long long v;
        if (pl_parse_size(tok, &v) != 0 || v <= 0) {
            pl_snprintf(err, errlen, "%s: '%s' is not a size in bytes (write e.g. 48k,192k,768k,2m)", what,
                        PL_ESC(tok));
            free(copy);
            free(*out);
            *out = NULL;
            return -1;
        }
        pl_reserve(out, &cap, *n + 1, sizeof **out);
        (*out)[(*n)++] = (size_t)v;
    }
    free(copy);
    if (*n == 0) {
        pl_snprintf(err, errlen, "%s is empty: give at least one size (e.g. 48k,192k)", what);
        return -1;
    }
    return 0;
}

int pl_parse_double_list(const char *text, const char *what, double lo, double hi, double **out, size_t *n, char *err,
                         size_t errlen)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    char *copy = pl_strdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        errno = 0;
        double v = strtod(tok, &end);
        if (end == tok || *end || errno || !isfinite(v) || v < lo || v > hi) {
            pl_snprintf(err, errlen, "%s: '%s' is not a number between %g and %g", what, PL_ESC(tok), lo, hi);
            free(copy);
            free(*out);
            *out = NULL;
            return -1;
        }
        pl_reserve(out, &cap, *n + 1, sizeof **out);
        (*out)[(*n)++] = v;
    }
    free(copy);
    if (*n == 0) {
        pl_snprintf(err, errlen, "%s is empty: give at least one value", what);
        return -1;
    }
    return 0;
}

const char *pl_format_bytes(size_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        pl_snprintf(buf, len, "%zu B", bytes);
    else if (v == floor(v))
        pl_snprintf(buf, len, "%.0f %s", v, units[u]);
    else
        pl_snprintf(buf, len, "%.2f %s", v, units[u]);
    return buf;
}
