/* On-device tuning of the BF16 pick (gemm/tune.h): the store of tuned problem classes, the timing of the model's
 * candidates, and the tune file. */
#include "gemm/tune.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/host/heuristic.h"

#define TUNE_MAX           4096 /* tuned problem classes a process holds (a model's GEMMs are a few dozen) */
#define DEFAULT_CANDIDATES 6
#define DEFAULT_ROUNDS     5
#define MAX_ROUNDS         20
#define FILE_HEADER        "# perflab gemm tune/1"
#define LINE_MAX_CHARS     512

/* ---- the store ---- */

typedef struct tune_key {
    int cc, sms, l2_mib, layout, m, n, k, epi, aligned;
} tune_key;

typedef struct tune_entry {
    tune_key key;
    const pl_gemm_kernel *kernel;
    double us;
} tune_entry;

static struct {
    pthread_mutex_t lock;
    tune_entry e[TUNE_MAX];
    int used, next;
    int autotune;
} store = {.lock = PTHREAD_MUTEX_INITIALIZER};

static tune_key key_of(const pl_gemm_problem *p, const pl_gemm_gpu *g)
{
    tune_key k;
    memset(&k, 0, sizeof k);
    k.cc = g->cc, k.sms = g->sms, k.l2_mib = g->l2_mib, k.layout = (int)p->b_layout;
    k.m = p->m, k.n = p->n, k.k = p->k;
    k.epi = pl_gemm_problem_epilogue(p);
    k.aligned = pl_gemm_problem_aligned(p);
    return k;
}

static int find_locked(const tune_key *k)
{
    for (int i = 0; i < store.used; i++)
        if (memcmp(&store.e[i].key, k, sizeof *k) == 0)
            return i;
    return -1;
}

static void put(const tune_key *k, const pl_gemm_kernel *kernel, double us)
{
    pthread_mutex_lock(&store.lock);
    int i = find_locked(k);
    if (i < 0)
        i = store.used < TUNE_MAX ? store.used++ : store.next++ % TUNE_MAX;
    store.e[i] = (tune_entry){*k, kernel, us};
    pthread_mutex_unlock(&store.lock);
}

const pl_gemm_kernel *pl_gemm_tuned_kernel(const pl_gemm_problem *p, const pl_gemm_gpu *g, double *us)
{
    const tune_key k = key_of(p, g);
    const pl_gemm_kernel *found = NULL;
    pthread_mutex_lock(&store.lock);
    const int i = find_locked(&k);
    if (i >= 0) {
        found = store.e[i].kernel;
        if (us)
            *us = store.e[i].us;
    }
    pthread_mutex_unlock(&store.lock);
    return found;
}

void pl_gemm_tune_clear(void)
{
    pthread_mutex_lock(&store.lock);
    store.used = store.next = 0;
    pthread_mutex_unlock(&store.lock);
}

void pl_gemm_set_autotune(int on)
{
    __atomic_store_n(&store.autotune, on != 0, __ATOMIC_RELAXED);
}

int pl_gemm_autotune_on(void)
{
    return __atomic_load_n(&store.autotune, __ATOMIC_RELAXED);
}

/* ---- timing ---- */

/* What one tuning call holds on the device: the problem it times (D perhaps moved to scratch), the flush buffer,
 * and an event pair a (round, candidate). */
typedef struct tune_run {
    pl_gemm_problem p;
    void *scratch_d, *flush;
    size_t flush_bytes;
    cudaEvent_t *ev;
    int nev;
} tune_run;

static int overlaps(const void *a, size_t abytes, const void *b, size_t bbytes)
{
    const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return a && b && x < y + bbytes && y < x + abytes;
}

/* D into scratch memory when it overlaps an input (running the candidates repeatedly must not change their inputs),
 * at D's offset modulo 256 so that the problem keeps its alignment class. */
static cudaError_t place_d(tune_run *t, const pl_gemm_problem *p)
{
    const size_t d = (size_t)p->m * p->n * 2, ab = (size_t)p->m * p->k * 2, bb = (size_t)p->n * p->k * 2;
    if (!overlaps(p->d, d, p->a, ab) && !overlaps(p->d, d, p->b, bb) && !overlaps(p->d, d, p->epi.residual, d) &&
        !overlaps(p->d, d, p->epi.bias, (size_t)p->n * 2))
        return cudaSuccess;
    cudaError_t e = cudaMalloc(&t->scratch_d, d + 256);
    if (e == cudaSuccess)
        t->p.d = (uint16_t *)((char *)t->scratch_d + ((uintptr_t)p->d & 255));
    return e;
}

static void run_free(tune_run *t)
{
    for (int i = 0; i < t->nev; i++)
        cudaEventDestroy(t->ev[i]);
    free(t->ev);
    cudaFree(t->scratch_d);
    cudaFree(t->flush);
}

static cudaError_t run_alloc(tune_run *t, const pl_gemm_problem *p, int hot, int nev)
{
    memset(t, 0, sizeof *t);
    t->p = *p;
    cudaError_t e = place_d(t, p);
    if (e == cudaSuccess && !hot) {
        int dev = 0, l2 = 0;
        e = cudaGetDevice(&dev);
        if (e == cudaSuccess)
            e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
        t->flush_bytes = 2 * (size_t)(l2 > 0 ? l2 : 1 << 20);
        if (e == cudaSuccess)
            e = cudaMalloc(&t->flush, t->flush_bytes);
    }
    if (e == cudaSuccess && !(t->ev = calloc((size_t)nev, sizeof *t->ev)))
        e = cudaErrorMemoryAllocation;
    for (; e == cudaSuccess && t->nev < nev; t->nev++)
        e = cudaEventCreate(&t->ev[t->nev]);
    return e;
}

/* The candidates: the model's fastest, and the pick before tuning (table or model) among them. */
static int candidates_of(const pl_gemm_problem *p, const pl_gemm_gpu *g, int want, const pl_gemm_kernel **ks,
                         const pl_gemm_kernel **pick)
{
    size_t nt, np;
    const pl_gemm_heuristic_entry *table = pl_gemm_heuristic_table(&nt);
    const pl_gemm_point *points = pl_gemm_heuristic_points(&np);
    double us[PL_GEMM_TUNE_MAX_CANDIDATES];
    int n = (int)pl_gemm_bf16_rank(p, g, points, np, ks, us, (size_t)want);
    pl_gemm_pick before;
    *pick = pl_gemm_bf16_pick_measured(p, g, table, nt, points, np, &before) == 0 ? before.kernel : NULL;
    int have = 0;
    for (int i = 0; i < n; i++)
        have |= ks[i] == *pick;
    if (*pick && !have)
        ks[n < want ? n++ : want - 1] = *pick;
    return n;
}

static double median(double *x, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && x[j - 1] > x[j]; j--) {
            const double t = x[j];
            x[j] = x[j - 1], x[j - 1] = t;
        }
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* Every candidate once (lazy module loading, clocks), then `rounds` rounds timing each once, L2 flushed before each
 * run unless hot; one synchronisation at the end. med[c] gets candidate c's median in µs. */
static cudaError_t time_candidates(tune_run *t, const pl_gemm_kernel **ks, int n, int rounds, cudaStream_t stream,
                                   double *med)
{
    cudaError_t e = cudaSuccess;
    for (int c = 0; c < n && e == cudaSuccess; c++)
        e = ks[c]->launch(&t->p, stream);
    for (int r = 0; r < rounds && e == cudaSuccess; r++)
        for (int c = 0; c < n && e == cudaSuccess; c++) {
            cudaEvent_t *pair = &t->ev[2 * (r * n + c)];
            if (t->flush)
                e = cudaMemsetAsync(t->flush, (r * n + c) & 0xff, t->flush_bytes, stream);
            if (e == cudaSuccess)
                e = cudaEventRecord(pair[0], stream);
            if (e == cudaSuccess)
                e = ks[c]->launch(&t->p, stream);
            if (e == cudaSuccess)
                e = cudaEventRecord(pair[1], stream);
        }
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(stream);
    if (e == cudaSuccess)
        e = cudaGetLastError();
    double x[MAX_ROUNDS];
    for (int c = 0; c < n && e == cudaSuccess; c++) {
        for (int r = 0; r < rounds && e == cudaSuccess; r++) {
            float ms = 0;
            e = cudaEventElapsedTime(&ms, t->ev[2 * (r * n + c)], t->ev[2 * (r * n + c) + 1]);
            x[r] = 1e3 * ms;
        }
        med[c] = e == cudaSuccess ? median(x, rounds) : NAN;
    }
    return e;
}

static int clamp(int v, int dflt, int hi)
{
    return v <= 0 ? dflt : v > hi ? hi : v;
}

cudaError_t pl_gemm_bf16_tune(const pl_gemm_problem *p, cudaStream_t stream, const pl_gemm_tune_options *o,
                              pl_gemm_tune_result *out)
{
    memset(out, 0, sizeof *out);
    out->us = out->model_pick_us = NAN;
    char why[160];
    enum cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(stream, &capturing);
    if (e != cudaSuccess)
        return e;
    if (!pl_gemm_problem_valid(p, why, sizeof why) || capturing != cudaStreamCaptureStatusNone)
        return cudaErrorInvalidValue;
    pl_gemm_gpu g;
    if ((e = pl_gemm_gpu_query(&g)) != cudaSuccess)
        return e;
    const int want = clamp(o ? o->candidates : 0, DEFAULT_CANDIDATES, PL_GEMM_TUNE_MAX_CANDIDATES);
    const int rounds = clamp(o ? o->rounds : 0, DEFAULT_ROUNDS, MAX_ROUNDS);
    const pl_gemm_kernel *ks[PL_GEMM_TUNE_MAX_CANDIDATES];
    const int n = candidates_of(p, &g, want, ks, &out->model_pick);
    if (n == 0)
        return cudaErrorInvalidValue;
    tune_run t;
    double med[PL_GEMM_TUNE_MAX_CANDIDATES];
    e = run_alloc(&t, p, o && o->hot, 2 * rounds * n);
    if (e == cudaSuccess)
        e = time_candidates(&t, ks, n, rounds, stream, med);
    run_free(&t);
    if (e != cudaSuccess)
        return e;
    int best = 0;
    for (int c = 0; c < n; c++) {
        best = med[c] < med[best] ? c : best;
        if (ks[c] == out->model_pick)
            out->model_pick_us = med[c];
    }
    /* the pick before tuning keeps its place unless another is faster by more than the timing's noise (1%) */
    if (out->model_pick && !(med[best] < 0.99 * out->model_pick_us))
        for (int c = 0; c < n; c++)
            best = ks[c] == out->model_pick ? c : best;
    out->kernel = ks[best];
    out->us = med[best];
    out->timed = n;
    const tune_key k = key_of(p, &g);
    put(&k, out->kernel, out->us);
    return cudaSuccess;
}

/* ---- the tune file ---- */

static const char *layout_of(int l)
{
    return pl_gemm_layout_name((pl_gemm_b_layout)l);
}

int pl_gemm_tune_save(const char *path, char *err, size_t errlen)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        snprintf(err, errlen, "tune file %s: the path is too long", path);
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "tune file %s: %s", tmp, strerror(errno));
        return -1;
    }
    fprintf(f, "%s\n# cc sms l2_mib layout m n k epilogue aligned kernel median_us\n", FILE_HEADER);
    pthread_mutex_lock(&store.lock);
    for (int i = 0; i < store.used; i++) {
        const tune_entry *e = &store.e[i];
        fprintf(f, "%d %d %d %s %d %d %d %d %d %s %.6g\n", e->key.cc, e->key.sms, e->key.l2_mib,
                layout_of(e->key.layout), e->key.m, e->key.n, e->key.k, e->key.epi, e->key.aligned, e->kernel->name,
                e->us);
    }
    pthread_mutex_unlock(&store.lock);
    const int bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        snprintf(err, errlen, "tune file %s: could not write it: %s", path, strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
}

static int name_ok(const char *s)
{
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return 0;
    return 1;
}

/* One entry line into *e (kernel NULL when this build lacks it). 0, or -1 with the reason in why. */
static int parse_line(const char *line, tune_entry *e, char *why, size_t whylen)
{
    char layout[8], kernel[96], extra[2];
    tune_key *k = &e->key;
    memset(e, 0, sizeof *e);
    const int got = sscanf(line, "%d %d %d %7s %d %d %d %d %d %95s %lf %1s", &k->cc, &k->sms, &k->l2_mib, layout, &k->m,
                           &k->n, &k->k, &k->epi, &k->aligned, kernel, &e->us, extra);
    if (got != 11) {
        snprintf(why, whylen, "expected 11 fields (cc sms l2_mib layout m n k epilogue aligned kernel median_us)");
        return -1;
    }
    k->layout = pl_gemm_layout_from_name(layout);
    if (k->cc < 0 || k->cc > 1000 || k->sms < 1 || k->sms > 100000 || k->l2_mib < 0 || k->l2_mib > 1 << 20 ||
        k->layout < 0 || k->m < 1 || k->n < 1 || k->k < 1 || k->epi < 0 || k->epi > 7 || k->aligned < 0 ||
        k->aligned > 1 || !name_ok(kernel) || !(e->us > 0) || !isfinite(e->us)) {
        snprintf(why, whylen,
                 "a field out of range (sizes >= 1, layout nk or kn, epilogue 0-7, aligned 0 or 1, a "
                 "kernel name of letters, digits and _, a positive time)");
        return -1;
    }
    e->kernel = pl_gemm_kernel_find(kernel);
    return 0;
}

int pl_gemm_tune_load(const char *path, int *skipped, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "tune file %s: %s", path, strerror(errno));
        return -1;
    }
    tune_entry *got = malloc(TUNE_MAX * sizeof *got);
    char line[LINE_MAX_CHARS], why[200];
    int n = 0, lineno = 0, skip = 0, rc = 0;
    while (got && rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, errlen, "tune file %s, line %d: longer than %d characters", path, lineno, LINE_MAX_CHARS - 1);
            rc = -1;
        } else if (lineno == 1 && strncmp(line, FILE_HEADER, strlen(FILE_HEADER)) != 0) {
            snprintf(err, errlen, "tune file %s: not a perflab tune file (its first line is not \"%s\")", path,
                     FILE_HEADER);
            rc = -1;
        } else if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0') {
            continue;
        } else if (n == TUNE_MAX) {
            snprintf(err, errlen, "tune file %s: more than %d entries", path, TUNE_MAX);
            rc = -1;
        } else if (parse_line(line, &got[n], why, sizeof why) != 0) {
            snprintf(err, errlen, "tune file %s, line %d: %s", path, lineno, why);
            rc = -1;
        } else if (!got[n].kernel) {
            skip++;
        } else {
            n++;
        }
    }
    if (!got) {
        snprintf(err, errlen, "tune file %s: out of memory", path);
        rc = -1;
    } else if (rc == 0 && lineno == 0) {
        snprintf(err, errlen, "tune file %s: empty (a tune file starts with \"%s\")", path, FILE_HEADER);
        rc = -1;
    } else if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "tune file %s: %s", path, strerror(errno));
        rc = -1;
    }
    fclose(f);
    for (int i = 0; rc == 0 && i < n; i++)
        put(&got[i].key, got[i].kernel, got[i].us);
    free(got);
    if (skipped)
        *skipped = skip;
    return rc == 0 ? n : -1;
}
