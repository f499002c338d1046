/* Fuzzing every parser of user input, in process: option words, numbers with suffixes and parameter values, target
 * arguments of every registered target, target selections, --shapes strings and shapes files, cutlass_profiler
 * CSV, json: provider records, run.json as compare reads it, and expectations files. A seeded mutator (bit flips,
 * byte insertions and deletions, boundary numbers in place of numbers, long strings, duplicated ranges, splices
 * between valid samples) turns valid seed inputs into thousands of inputs per parser.
 *
 * Each parser must accept its seeds, and on every input either accept it (then what it produced must hold: values
 * within their declared bounds, shapes within the limits, rows of the requested shape, labels that are no paths)
 * or refuse it with a one-line message; messages of the parsers outside run.json and expectations must also be
 * printable (control characters and invalid UTF-8 escaped). A crash or signal fails the test (each test runs in a
 * child process); in the sanitizer build any ASan, LSan or UBSan report does too.
 *
 * PERFLAB_FUZZ_SEED=N repeats a run (the seed is printed), PERFLAB_FUZZ_INPUTS=N sets the inputs per parser. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/options.h"
#include "comm/job.h"
#include "core/compare.h"
#include "core/expectations.h"
#include "core/results_json.h"
#include "core/util.h"
#include "labs.h"
#include "perflab/params.h"
#include "perflab/registry.h"
#include "perflab/stats.h"
#include "selector/comparison.h"
#include "selector/cutlass.h"
#include "selector/shapes.h"
#include "testutil.h"

#define DEFAULT_SEED   20261123ULL
#define DEFAULT_INPUTS 2500
#define FUZZ_MAX_INPUT (64 * 1024) /* mutated inputs are cut here: the time per input stays bounded */

static uint64_t env_u64(const char *name, uint64_t fallback)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : fallback;
}

static int n_inputs(void)
{
    const uint64_t n = env_u64("PERFLAB_FUZZ_INPUTS", DEFAULT_INPUTS);
    return n > 1000000 ? 1000000 : (int)n;
}

/* ---------------------------------------------------------------- corpus and mutator */

typedef struct sample {
    char *data;
    size_t len;
} sample;

typedef struct corpus {
    sample *items;
    size_t n, cap;
} corpus;

static void corpus_add(corpus *c, const char *data, size_t len)
{
    pl_reserve(&c->items, &c->cap, c->n + 1, sizeof *c->items);
    c->items[c->n].data = memcpy(pl_xmalloc(len + 1), data, len);
    c->items[c->n].data[len] = '\0';
    c->items[c->n++].len = len;
}

static void corpus_add_str(corpus *c, const char *s)
{
    corpus_add(c, s, strlen(s));
}

static void corpus_free(corpus *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->items[i].data);
    free(c->items);
    memset(c, 0, sizeof *c);
}

/* Numbers at the edges of every type the parsers convert to, and texts that look like numbers. */
static const char *const boundary[] = {"0",
                                       "-0",
                                       "1",
                                       "-1",
                                       "2",
                                       "7",
                                       "127",
                                       "128",
                                       "255",
                                       "256",
                                       "4095",
                                       "4096",
                                       "4097",
                                       "65535",
                                       "65536",
                                       "2147483647",
                                       "2147483648",
                                       "-2147483648",
                                       "-2147483649",
                                       "4294967295",
                                       "4294967296",
                                       "9007199254740993",
                                       "9223372036854775807",
                                       "9223372036854775808",
                                       "-9223372036854775808",
                                       "-9223372036854775809",
                                       "18446744073709551615",
                                       "18446744073709551616",
                                       "99999999999999999999999999999",
                                       "1048576",
                                       "1048577",
                                       "0.5",
                                       "-0.5",
                                       "1e300",
                                       "-1e300",
                                       "1e-300",
                                       "4.9e-324",
                                       "1.7976931348623157e308",
                                       "1e309",
                                       "nan",
                                       "NaN",
                                       "inf",
                                       "-inf",
                                       "Infinity",
                                       "4096.7",
                                       "4096.0",
                                       "1e3",
                                       "0x10",
                                       "0x",
                                       "010",
                                       "+5",
                                       "--1",
                                       "1k",
                                       "1K",
                                       "64m",
                                       "1g",
                                       "1G",
                                       "64MiB",
                                       "8589934591g",
                                       "8589934592g",
                                       "-8589934592g",
                                       "-18014398509481983k",
                                       "18014398509481984k",
                                       "k",
                                       "1.5k",
                                       "",
                                       " ",
                                       "true",
                                       "false",
                                       "null"};
#define N_BOUNDARY (sizeof boundary / sizeof boundary[0])

/* Bytes that matter to one parser or another. */
static const char interesting[] = {'\0', '\n', '\r', '\t', ' ', ',', ';',    ':',    '=',    '"',    '\'',  '\\', '#',
                                   '{',  '}',  '[',  ']',  '-', '+', '.',    'x',    'X',    'e',    'k',   'm',  'g',
                                   '0',  '1',  '9',  '/',  '*', '%', '\x1b', '\x7f', '\x80', '\xc3', '\xff'};

typedef struct buf {
    char *d;
    size_t n, cap;
} buf;

static void buf_room(buf *b, size_t need)
{
    pl_reserve(&b->d, &b->cap, need + 1, 1);
}

static void buf_insert(buf *b, size_t at, const char *s, size_t n)
{
    buf_room(b, b->n + n);
    memmove(b->d + at + n, b->d + at, b->n - at);
    memcpy(b->d + at, s, n);
    b->n += n;
}

static void buf_erase(buf *b, size_t at, size_t n)
{
    memmove(b->d + at, b->d + at + n, b->n - at - n);
    b->n -= n;
}

static size_t below(pl_rng *r, size_t n)
{
    return n ? (size_t)pl_rng_below(r, n) : 0;
}

/* Where a run of digits (a number, perhaps signed or with a fraction) starts and ends near `at`. */
static int find_number(const buf *b, size_t at, size_t *start, size_t *end)
{
    size_t i = at;
    while (i < b->n && !isdigit((unsigned char)b->d[i]))
        i++;
    if (i == b->n)
        return 0;
    size_t s = i, e = i;
    while (s > 0 && (isdigit((unsigned char)b->d[s - 1]) || b->d[s - 1] == '.' || b->d[s - 1] == '-'))
        s--;
    while (e < b->n && (isalnum((unsigned char)b->d[e]) || b->d[e] == '.' || b->d[e] == '+' || b->d[e] == '-'))
        e++;
    *start = s;
    *end = e;
    return 1;
}

static void mutate_once(pl_rng *r, buf *b, const corpus *c)
{
    const size_t at = below(r, b->n + 1);
    switch (pl_rng_below(r, 10)) {
    case 0: /* flip a bit */
        if (b->n)
            b->d[below(r, b->n)] ^= (char)(1u << pl_rng_below(r, 8));
        break;
    case 1: /* set a byte to one that matters */
        if (b->n)
            b->d[below(r, b->n)] = interesting[below(r, sizeof interesting)];
        break;
    case 2: { /* insert a few bytes, interesting or random */
        char ins[8];
        const size_t k = 1 + below(r, sizeof ins);
        for (size_t i = 0; i < k; i++)
            ins[i] = pl_rng_below(r, 2) ? interesting[below(r, sizeof interesting)] : (char)pl_rng_below(r, 256);
        buf_insert(b, at, ins, k);
        break;
    }
    case 3: /* delete a range */
        if (at < b->n)
            buf_erase(b, at, 1 + below(r, b->n - at < 64 ? b->n - at : 64));
        break;
    case 4:
    case 5: { /* a boundary number in place of a number */
        size_t s, e;
        const char *num = boundary[below(r, N_BOUNDARY)];
        if (find_number(b, at, &s, &e)) {
            buf_erase(b, s, e - s);
            buf_insert(b, s, num, strlen(num));
        } else {
            buf_insert(b, at, num, strlen(num));
        }
        break;
    }
    case 6: { /* a long string: one byte repeated, up to 20 KB */
        const size_t k = 256 + below(r, 20000);
        char *s = pl_xmalloc(k);
        memset(s, pl_rng_below(r, 2) ? 'a' + (int)below(r, 26) : interesting[below(r, sizeof interesting)], k);
        buf_insert(b, at, s, k);
        free(s);
        break;
    }
    case 7: /* duplicate a range of the input */
        if (b->n) {
            const size_t s = below(r, b->n), k = 1 + below(r, b->n - s);
            char *copy = memcpy(pl_xmalloc(k), b->d + s, k);
            buf_insert(b, at, copy, k);
            free(copy);
        }
        break;
    case 8: { /* splice: this input's head, another sample's tail */
        const sample *o = &c->items[below(r, c->n)];
        const size_t from = below(r, o->len + 1);
        b->n = at;
        buf_insert(b, b->n, o->data + from, o->len - from);
        break;
    }
    default: /* truncate */ b->n = at; break;
    }
    if (b->n > FUZZ_MAX_INPUT)
        b->n = FUZZ_MAX_INPUT;
}

/* A mutated copy of one of the samples: 1 to 4 mutations. NUL-terminated; *len counts bytes (NULs inside kept only
 * when `nul_ok`: strings for C-string parsers end at their first NUL anyway). malloc'd. */
static char *mutate(pl_rng *r, const corpus *c, size_t *len, int nul_ok)
{
    const sample *s = &c->items[below(r, c->n)];
    buf b = {0};
    buf_insert(&b, 0, s->data, s->len);
    for (size_t k = 1 + below(r, 4); k > 0; k--)
        mutate_once(r, &b, c);
    buf_room(&b, b.n);
    b.d[b.n] = '\0';
    *len = nul_ok ? b.n : strlen(b.d);
    return b.d;
}

/* ---------------------------------------------------------------- verdicts */

typedef struct fuzz {
    const char *name;
    pl_rng rng;
    uint64_t seed;
    int strict;             /* messages must be printable too */
    long accepted, refused; /* over every parse call */
    long bad;               /* properties or messages that failed */
    long raw;               /* messages with raw control characters or invalid UTF-8 (not strict: counted) */
    char first_bad[1200];   /* the first of them, described */
    char *path;             /* the file of file-based parsers */
} fuzz;

static void fuzz_begin(fuzz *f, const char *name, int strict)
{
    memset(f, 0, sizeof *f);
    f->name = name;
    f->strict = strict;
    uint64_t h = 1469598103934665603ULL; /* FNV-1a of the name: every parser its own stream */
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    f->seed = env_u64("PERFLAB_FUZZ_SEED", DEFAULT_SEED);
    pl_rng_seed(&f->rng, f->seed ^ h);
    char *dir = pl_test_tmpdir("fuzz");
    f->path = pl_strfmt("%s/%s.input", dir, name);
    free(dir);
    printf("fuzz %s: %d inputs, seed %llu (PERFLAB_FUZZ_SEED=%llu repeats it)\n", name, n_inputs(),
           (unsigned long long)f->seed, (unsigned long long)f->seed);
    fflush(stdout);
}

static void fuzz_fail(fuzz *f, const char *input, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fuzz_fail(fuzz *f, const char *input, const char *fmt, ...)
{
    if (f->bad++)
        return;
    char what[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    pl_snprintf(f->first_bad, sizeof f->first_bad, "%s (input: '%s')", what, PL_ESC(input));
}

/* What a parser said about one input: 0 accepted, else refused with a message that must be one line (and
 * printable when strict). Returns rc == 0. */
static int verdict(fuzz *f, const char *input, int rc, const char *err)
{
    if (rc == 0) {
        f->accepted++;
        return 1;
    }
    f->refused++;
    if (!*err)
        fuzz_fail(f, input, "refused without a message");
    else if (strchr(err, '\n'))
        fuzz_fail(f, input, "a message of more than one line: '%s'", PL_ESC(err));
    else {
        char esc[2048];
        if (strcmp(pl_escape(err, 0, esc, sizeof esc), err) != 0) {
            f->raw++;
            if (f->strict)
                fuzz_fail(f, input, "a message with raw control characters or invalid UTF-8: '%s'", esc);
        }
    }
    return 0;
}

static void fuzz_end(fuzz *f)
{
    printf("fuzz %s: %ld accepted, %ld refused", f->name, f->accepted, f->refused);
    if (!f->strict && f->raw)
        printf(" (%ld messages echo raw control characters or invalid UTF-8)", f->raw);
    printf("\n");
    fflush(stdout);
    ck_assert_msg(f->bad == 0, "fuzz %s (seed %llu): %ld failures; the first: %s", f->name, (unsigned long long)f->seed,
                  f->bad, f->first_bad);
    ck_assert_msg(f->refused > 0 && f->accepted > 0, "fuzz %s: the mutations never reached both outcomes", f->name);
    unlink(f->path);
    free(f->path);
}

static void write_input(const fuzz *f, const char *data, size_t len)
{
    FILE *fp = fopen(f->path, "wb");
    ck_assert_msg(fp != NULL, "cannot write %s", f->path);
    ck_assert(fwrite(data, 1, len, fp) == len);
    fclose(fp);
}

/* Every seed parses, then n_inputs() mutations of them go through `parse`. */
typedef void (*parse_fn)(fuzz *f, const char *input, size_t len, void *ctx);

static void run_fuzz(fuzz *f, const corpus *c, int nul_ok, parse_fn parse, void *ctx)
{
    for (size_t i = 0; i < c->n; i++) {
        const long bad = f->bad, refused = f->refused;
        parse(f, c->items[i].data, c->items[i].len, ctx);
        ck_assert_msg(f->bad == bad && f->refused == refused, "fuzz %s: seed sample %zu is refused: %s", f->name, i,
                      f->first_bad[0] ? f->first_bad : PL_ESC(c->items[i].data));
    }
    f->accepted = f->refused = 0;
    for (int i = 0, n = n_inputs(); i < n; i++) {
        size_t len;
        char *in = mutate(&f->rng, c, &len, nul_ok);
        parse(f, in, len, ctx);
        free(in);
    }
}

/* ---------------------------------------------------------------- numbers and option words */

static const pl_param_def number_defs[] = {
    {.name = "n", .type = PL_PARAM_INT, .default_value = "1", .min = 1, .max = 1 << 24},
    {.name = "any", .type = PL_PARAM_INT, .default_value = "0"},
    {.name = "lower", .type = PL_PARAM_INT, .default_value = "0", .min = -5},
    {.name = "ms", .type = PL_PARAM_FLOAT, .default_value = "1", .min = 0.01, .max = 1e4},
    {.name = "x", .type = PL_PARAM_FLOAT, .default_value = "1"},
    {.name = "on", .type = PL_PARAM_BOOL, .default_value = "true"},
    {.name = "dtype", .type = PL_PARAM_STRING, .default_value = "bf16", .choices = "bf16|fp16|fp32"},
    {.name = NULL},
};

static int within(const pl_param_def *d, double x)
{
    if (d->min == 0 && d->max == 0)
        return 1;
    return x >= d->min && (!(d->max > d->min) || x <= d->max);
}

static void parse_numbers(fuzz *f, const char *in, size_t len, void *ctx)
{
    char err[1024] = "";
    long long v;
    int rc = pl_parse_size(in, &v);
    if (rc != 0)
        pl_snprintf(err, sizeof err, "not a size"); /* pl_parse_size says nothing itself */
    verdict(f, in, rc, err);
    for (const pl_param_def *d = number_defs; d->name; d++) {
        long long i = 0;
        double x = 0;
        err[0] = '\0';
        if (!verdict(f, in, pl_param_parse_value(d, in, &i, &x, err, sizeof err), err))
            continue;
        if ((d->type == PL_PARAM_INT || d->type == PL_PARAM_FLOAT) && (!isfinite(x) || !within(d, x)))
            fuzz_fail(f, in, "--%s accepted %g outside its bounds", d->name, x);
        if (d->type == PL_PARAM_INT && (double)i != x)
            fuzz_fail(f, in, "--%s: integer %lld and double %g disagree", d->name, i, x);
    }
    size_t *sizes, n;
    err[0] = '\0';
    if (verdict(f, in, pl_parse_size_list(in, "--message-sizes", &sizes, &n, err, sizeof err), err)) {
        for (size_t k = 0; k < n; k++)
            if (sizes[k] == 0 || sizes[k] > (size_t)LLONG_MAX)
                fuzz_fail(f, in, "size list accepted %zu", sizes[k]);
        if (n >= 2) { /* a sweep between the first two: counted before it is built */
            size_t lo = sizes[0] < sizes[1] ? sizes[0] : sizes[1], hi = sizes[0] ^ sizes[1] ^ lo, *s;
            const size_t m =
                pl_comm_size_series(lo, hi, 1.0 + (double)(sizes[0] % 7), sizes[1] % 3 ? 0 : lo, PL_COMM_MAX_SIZES, &s);
            if (m > PL_COMM_MAX_SIZES ? s != NULL : (m == 0 || s[0] != lo || s[m - 1] > hi))
                fuzz_fail(f, in, "size series %zu..%zu: %zu sizes", lo, hi, m);
            free(s);
        }
        free(sizes);
    }
    double *xs;
    err[0] = '\0';
    if (verdict(f, in, pl_parse_double_list(in, "--skews", 1.0, 4.0, &xs, &n, err, sizeof err), err)) {
        for (size_t k = 0; k < n; k++)
            if (!(xs[k] >= 1.0 && xs[k] <= 4.0))
                fuzz_fail(f, in, "--skews accepted %g", xs[k]);
        free(xs);
    }
    (void)len;
    (void)ctx;
}

START_TEST(fuzz_numbers_with_suffixes)
{
    corpus c = {0};
    static const char *const seeds[] = {"4096",         "64m",   "1g",  "48k",  "2M",   "64MiB",
                                        "12",           "3",     "0.5", "1.25", "true", "48k,192k,768k,2m",
                                        "1.0,1.25,1.5", "1,2,4", "bf16"};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        corpus_add_str(&c, seeds[i]);
    fuzz f;
    fuzz_begin(&f, "numbers", 1);
    /* seeds need not all parse as every kind of number: count them as mutations */
    for (int i = 0, n = n_inputs(); i < n; i++) {
        size_t len;
        char *in = i < (int)c.n ? pl_strdup(c.items[i].data) : mutate(&f.rng, &c, &len, 0);
        parse_numbers(&f, in, strlen(in), NULL);
        free(in);
    }
    fuzz_end(&f);
    corpus_free(&c);
}
END_TEST

/* An option table with every kind, fed words split from a mutated command line. */
static void parse_options(fuzz *f, const char *in, size_t len, void *ctx)
{
    int flag = 0, num = 0, bounded = 0;
    double x = 0;
    const char *str = NULL;
    pl_strlist list = {0}, pos = {0};
    const pl_option opts[] = {
        {"flag", 'f', PL_OPT_FLAG, &flag, NULL, "", 0, 0},
        {"number", 'n', PL_OPT_INT, &num, "N", "", 0, 0},
        {"iterations", 0, PL_OPT_INT, &bounded, "N", "", 1, 1e7},
        {"max-noise", 0, PL_OPT_DOUBLE, &x, "PCT", "", 0.001, 100},
        {"targets", 't', PL_OPT_STRING, &str, "LIST", "", 0, 0},
        {"target-extra-arg", 0, PL_OPT_LIST, &list, "X", "", 0, 0},
        {0},
    };
    char *copy = pl_strdup(in), *argv[256], *save = NULL;
    int argc = 0;
    for (char *w = strtok_r(copy, " ", &save); w && argc < 256; w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    char err[1024] = "";
    if (verdict(f, in, pl_options_parse("fuzz", opts, argc, argv, &pos, err, sizeof err), err)) {
        if (bounded != 0 && (bounded < 1 || bounded > 10000000))
            fuzz_fail(f, in, "--iterations accepted %d", bounded);
        if (x != 0 && !(x >= 0.001 && x <= 100))
            fuzz_fail(f, in, "--max-noise accepted %g", x);
    } else if (pos.items || list.items) {
        fuzz_fail(f, in, "a refused parse left values to free");
    }
    pl_strlist_free(&pos);
    pl_strlist_free(&list);
    free(copy);
    (void)len;
    (void)ctx;
}

START_TEST(fuzz_option_words)
{
    corpus c = {0};
    corpus_add_str(&c, "--targets memory,gemm:bf16 --iterations 20 --max-noise 2.5 -f");
    corpus_add_str(&c, "a b --number=-7 --target-extra-arg 'memory:coalescing=--n 16m' -- --flag");
    corpus_add_str(&c, "-t selftest:sleep -n 3 --target-extra-arg x=1 --target-extra-arg y=2");
    fuzz f;
    fuzz_begin(&f, "options", 1);
    run_fuzz(&f, &c, 0, parse_options, NULL);
    fuzz_end(&f);
    corpus_free(&c);
}
END_TEST

/* ---------------------------------------------------------------- targets */

/* Every declared value within its declared bounds and choices. */
static void check_params(fuzz *f, const char *in, const pl_params *p)
{
    for (size_t i = 0; i < p->count; i++) {
        const pl_param_value *v = &p->values[i];
        const pl_param_def *d = v->def;
        if ((d->type == PL_PARAM_INT || d->type == PL_PARAM_FLOAT) && (!isfinite(v->f) || !within(d, v->f)))
            fuzz_fail(f, in, "--%s holds %g, outside its bounds", d->name, v->f);
        if (d->type == PL_PARAM_BOOL && v->i != 0 && v->i != 1)
            fuzz_fail(f, in, "--%s holds %lld for a boolean", d->name, v->i);
        if (!v->text)
            fuzz_fail(f, in, "--%s has no text", d->name);
    }
}

/* The arguments a user could give a target: every parameter at its default, in both spellings. */
static void target_seeds(const pl_target *t, corpus *c)
{
    pl_buf a = {0}, b = {0};
    pl_buf_appendn(&a, "", 0);
    pl_buf_appendn(&b, "", 0);
    for (const pl_param_def *d = t->params; d && d->name; d++) {
        const char *v = d->small_value ? d->small_value : d->default_value ? d->default_value : "";
        pl_buf_printf(&a, "%s--%s %s", a.len ? " " : "", d->name, *v ? v : "''");
        pl_buf_printf(&b, "%s--%s='%s'", b.len ? "  " : "", d->name, v);
    }
    corpus_add(c, a.data, a.len);
    corpus_add(c, b.data, b.len);
    pl_buf_free(&a);
    pl_buf_free(&b);
}

START_TEST(fuzz_target_arguments)
{
    pl_labs_register_all();
    const size_t nt = pl_registry_count();
    ck_assert(nt > 0);
    corpus *seeds = pl_xcalloc(nt, sizeof *seeds);
    for (size_t i = 0; i < nt; i++)
        target_seeds(pl_registry_at(i), &seeds[i]);
    fuzz f;
    fuzz_begin(&f, "target-arguments", 1);
    char name[256], err[1024];
    for (size_t i = 0; i < nt; i++) /* the seeds parse, small or not */
        for (size_t k = 0; k < seeds[i].n; k++)
            for (int small = 0; small < 2; small++) {
                const pl_target *t = pl_registry_at(i);
                pl_params p;
                ck_assert_msg(pl_params_init(&p, t->params, pl_target_full_name(t, name, sizeof name),
                                             seeds[i].items[k].data, small, err, sizeof err) == 0,
                              "%s '%s': %s", name, seeds[i].items[k].data, err);
                pl_params_free(&p);
            }
    for (int i = 0, n = n_inputs(); i < n; i++) {
        const size_t ti = below(&f.rng, nt);
        const pl_target *t = pl_registry_at(ti);
        size_t len;
        char *in = mutate(&f.rng, &seeds[ti], &len, 0);
        pl_params p;
        err[0] = '\0';
        if (verdict(&f, in,
                    pl_params_init(&p, t->params, pl_target_full_name(t, name, sizeof name), in,
                                   (int)pl_rng_below(&f.rng, 2), err, sizeof err),
                    err)) {
            check_params(&f, in, &p);
            pl_params_free(&p);
        }
        free(in);
    }
    fuzz_end(&f);
    for (size_t i = 0; i < nt; i++)
        corpus_free(&seeds[i]);
    free(seeds);
}
END_TEST

static void parse_selection(fuzz *f, const char *in, size_t len, void *ctx)
{
    const pl_target **sel;
    size_t n;
    char err[1024] = "";
    if (verdict(f, in, pl_registry_select(in, &sel, &n, err, sizeof err), err)) {
        if (n == 0 || n > pl_registry_count())
            fuzz_fail(f, in, "%zu targets selected", n);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (sel[i] == sel[j])
                    fuzz_fail(f, in, "a target selected twice");
        free(sel);
    }
    (void)len;
    (void)ctx;
}

START_TEST(fuzz_target_selections)
{
    pl_labs_register_all();
    corpus c = {0};
    corpus_add_str(&c, "memory,gemm:bf16");
    corpus_add_str(&c, "all");
    corpus_add_str(&c, "selftest:sleep, selftest:noisy,selftest");
    corpus_add_str(&c, "memory:coalescing,memory:vectorized_copy,launch:cuda_graphs");
    fuzz f;
    fuzz_begin(&f, "target-selections", 1);
    run_fuzz(&f, &c, 0, parse_selection, NULL);
    fuzz_end(&f);
    corpus_free(&c);
}
END_TEST

/* ---------------------------------------------------------------- shapes */

static void check_shapes(fuzz *f, const char *in, const pl_gemm_shape_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        const pl_gemm_shape *s = &l->items[i];
        if (s->m < 1 || s->n < 1 || s->k < 1 || s->m > PL_GEMM_DIM_MAX || s->n > PL_GEMM_DIM_MAX ||
            s->k > PL_GEMM_DIM_MAX || (double)s->m * (double)s->n > 4294967295.0)
            fuzz_fail(f, in, "shape %s is %lldx%lldx%lld", s->name, s->m, s->n, s->k);
        if (!memchr(s->name, '\0', sizeof s->name) || !*s->name)
            fuzz_fail(f, in, "a shape without a name");
    }
}

static void parse_shapes(fuzz *f, const char *in, size_t len, void *ctx)
{
    pl_gemm_shape_list l = {0};
    char err[1024] = "";
    int rc = ctx ? (write_input(f, in, len), pl_gemm_shapes_load_file(f->path, &l, err, sizeof err))
                 : pl_gemm_shapes_parse(in, &l, err, sizeof err);
    if (verdict(f, in, rc, err))
        check_shapes(f, in, &l);
    pl_gemm_shape_list_free(&l);
}

START_TEST(fuzz_shapes_strings)
{
    corpus c = {0};
    corpus_add_str(&c, "4096x4096x4096,kv_proj_m4096_n4096_k4096");
    corpus_add_str(&c, "default");
    corpus_add_str(&c, "prefill, decode,16X28672X8192");
    corpus_add_str(&c, "1x1x1,1048576x4095x1,77x1000x3");
    fuzz f;
    fuzz_begin(&f, "shapes-strings", 1);
    run_fuzz(&f, &c, 0, parse_shapes, NULL);
    fuzz_end(&f);
    corpus_free(&c);
}
END_TEST

START_TEST(fuzz_shapes_files)
{
    corpus c = {0};
    corpus_add_str(&c, "# projections\nmy_proj 4096 4096 4096\nup 8192x28672x4096\n\n4096x2048x1024\n"
                       "decode_m16_n4096_k4096   # a built-in\n");
    corpus_add_str(&c, "a.b-c_d 1 1 1\r\ntall 1048576 16 64\r\n");
    fuzz f;
    fuzz_begin(&f, "shapes-files", 1);
    run_fuzz(&f, &c, 1, parse_shapes, &f);
    fuzz_end(&f);
    corpus_free(&c);
}
END_TEST

/* ---------------------------------------------------------------- cutlass_profiler CSV */

static void parse_cutlass(fuzz *f, const char *in, size_t len, void *ctx)
{
    const pl_gemm_shape *shape = ctx;
    pl_gemm_record_list l = {0};
    char err[1024] = "";
    if (verdict(f, in, pl_cutlass_csv_parse(in, "fuzz.csv", shape, "bf16", "nk", &l, err, sizeof err), err))
        for (size_t i = 0; i < l.n; i++) {
            const pl_gemm_record *r = &l.items[i];
            if (r->m != shape->m || r->n != shape->n || r->k != shape->k)
                fuzz_fail(f, in, "a row for %lldx%lldx%lld accepted", r->m, r->n, r->k);
            if (r->status == PL_GEMM_OK && !(r->median_ms > 0 && isfinite(r->median_ms)))
                fuzz_fail(f, in, "an ok row with Runtime %g", r->median_ms);
        }
    pl_gemm_record_list_free(&l);
    (void)len;
}

START_TEST(fuzz_cutlass_csv)
{
    corpus c = {0};
    corpus_add_str(
        &c,
        "Problem,Provider,OperationKind,Operation,Disposition,Status,gemm_kind,m,n,k,A,B,C,D,alpha,beta,cta_m,cta_n,"
        "cta_k,cluster_m,cluster_n,cluster_k,stages,Bytes,Flops,Flops/Byte,Runtime,GB/s,GFLOPs\n"
        "1,CUTLASS,gemm,cutlass3x_sm90_tensorop_gemm_bf16_128x256x64_2x1x1_0_tnn_align8_warpspecialized,passed,success,"
        "universal,4096,4096,4096,bf16:row,bf16:column,bf16:row,bf16:row,1,0,128,256,64,2,1,1,4,100663296,"
        "137438953472,1365,0.1802,558.8,762710\n"
        "1,CUTLASS,gemm,cutlass3x_sm90_slow,incorrect,success,universal,4096,4096,4096,bf16:row,bf16:column,bf16:row,"
        "bf16:row,1,0,64,64,64,1,1,1,7,100663296,137438953472,1365,0.1,558.8,999999\n"
        "\n"
        "Problem,Provider,Disposition,Status,Operation,Runtime,GFLOPs,m,n,k\n"
        "1,CUTLASS,passed,success,\"cutlass3x_other,\"\"quoted\"\"\",0.1760,780917,4096,4096,4096\n");
    corpus_add_str(&c,
                   "Problem,Operation,Disposition,Status,m,n,k,Runtime\r\n1,k,passed,success,4096,4096,4096,0.2\r\n");
    const pl_gemm_shape shape = {"big", 4096, 4096, 4096};
    fuzz f;
    fuzz_begin(&f, "cutlass-csv", 1);
    run_fuzz(&f, &c, 0, parse_cutlass, (void *)&shape);
    fuzz_end(&f);
    corpus_free(&c);
}
END_TEST

/* ---------------------------------------------------------------- json: provider records */

static void parse_records(fuzz *f, const char *in, size_t len, void *ctx)
{
    write_input(f, in, len);
    pl_gemm_record_list l = {0};
    char err[1024] = "";
    verdict(f, in, pl_gemm_records_load(f->path, &l, err, sizeof err), err);
    pl_gemm_record_list_free(&l);
    /* the same file as a provider: its label names a column and a file */
    char *spec = pl_strfmt("json:%s", f->path);
    pl_gemm_provider *p;
    size_t n;
    err[0] = '\0';
    if (verdict(f, in, pl_gemm_providers_parse(spec, &p, &n, err, sizeof err), err)) {
        const char *label = p[0].label;
        if (!*label || strchr(label, '/') || label[0] == '.' || strlen(label) > 64 || strcmp(label, "comparison") == 0)
            fuzz_fail(f, in, "provider label '%s'", PL_ESC(label));
        for (const char *c = label; *c; c++)
            if (!isalnum((unsigned char)*c) && !strchr("_-.+", *c))
                fuzz_fail(f, in, "provider label '%s'", PL_ESC(label));
        pl_gemm_providers_free(p, n);
    }
    free(spec);
    (void)ctx;
}

START_TEST(fuzz_json_provider_records)
{
    corpus c = {0};
    corpus_add_str(&c, "{\"schema\": \"perflab.gemm.records/1\", \"provider\": \"triton\", \"records\": [\n"
                       "  {\"provider\": \"triton\", \"shape\": \"kv\", \"m\": 4096, \"n\": 4096, \"k\": 4096, "
                       "\"dtype\": \"bf16\", \"layout\": \"nk\", \"kernel\": \"matmul_128x128\", \"config\": "
                       "{\"BLOCK_M\": 128, \"num_warps\": 8}, \"median_ms\": 0.21, \"tflops\": 650.5, \"noise\": 0.01, "
                       "\"samples\": 50, \"verified\": true, \"rel_l2_error\": 0.002, \"status\": \"ok\", "
                       "\"reason\": null},\n"
                       "  {\"provider\": \"triton\", \"m\": 16, \"n\": 4096, \"k\": 4096, \"dtype\": \"bf16\", "
                       "\"verified\": false, \"status\": \"failed\", \"reason\": \"wrong result\"}\n]}\n");
    corpus_add_str(&c, "[{\"provider\": \"cublaslt\", \"m\": 1, \"n\": 2, \"k\": 3, \"dtype\": \"fp8\", "
                       "\"median_ms\": 1e-3, \"verified\": true}]");
    fuzz f;
    fuzz_begin(&f, "json-records", 1);
    run_fuzz(&f, &c, 1, parse_records, NULL);
    fuzz_end(&f);
    corpus_free(&c);
}
END_TEST

/* ---------------------------------------------------------------- run.json and expectations */

/* A run as perflab writes it, built here so that the seeds are the same on every machine: three targets (ok,
 * failed verification, crashed), raw samples with their derived statistics and speedups, telemetry, a GPU, and an
 * expectations report. Written with perflab's own writer, so it follows run.json's format. */
static void add_samples(pl_variant_result *v, double median_ms, double spread)
{
    v->n_samples = 16;
    v->samples_ms = pl_xmalloc(v->n_samples * sizeof *v->samples_ms);
    for (size_t i = 0; i < v->n_samples; i++)
        v->samples_ms[i] = median_ms * (1.0 + spread * (double)((int)(i * 7 % 11) - 5) / 5.0);
    v->reps_per_sample = 1;
    v->warmup_runs = 3;
    v->measure_s = 0.25;
    v->stop_reason = pl_strdup("min_time and noise below max_noise");
    v->verification = (pl_verification){.checked = 1,
                                        .passed = 1,
                                        .dtype = PL_DTYPE_F32,
                                        .rel_l2_error = 1e-7,
                                        .tolerance = 1e-5,
                                        .elements = 1 << 20,
                                        .message = "ok"};
}

static pl_variant_result *add_variant(pl_target_result *t, const char *name, pl_status status, const char *reason)
{
    t->variants = pl_xrealloc(t->variants, (t->n_variants + 1) * sizeof *t->variants);
    pl_variant_result *v = &t->variants[t->n_variants++];
    memset(v, 0, sizeof *v);
    v->name = pl_strdup(name);
    v->technique = pl_strfmt("the %s way", name);
    v->status = status;
    v->reason = pl_strdup(reason);
    return v;
}

static pl_target_result *add_target(pl_run *r, const char *name, pl_status status, const char *reason)
{
    r->targets = pl_xrealloc(r->targets, (r->n_targets + 1) * sizeof *r->targets);
    pl_target_result *t = &r->targets[r->n_targets++];
    memset(t, 0, sizeof *t);
    t->name = pl_strdup(name);
    t->summary = pl_strfmt("what %s measures", name);
    t->status = status;
    t->reason = pl_strdup(reason);
    t->n_params = 2;
    t->params = pl_xcalloc(2, sizeof *t->params);
    t->params[0] = (pl_param_kv){pl_strdup("n"), pl_strdup("64m")};
    t->params[1] = (pl_param_kv){pl_strdup("dtype"), pl_strdup("bf16")};
    t->counters = (pl_counters){.flops = 2e9, .bytes_read = 256e6, .bytes_written = 128e6, .elements = 64e6};
    t->duration_s = 1.5;
    t->log_file = pl_strfmt("logs/%.8s.log", name);
    return t;
}

static void build_run(pl_run *r)
{
    memset(r, 0, sizeof *r);
    r->schema_version = PL_SCHEMA_VERSION;
    r->run_id = pl_strdup("20261123-120000-0a1b");
    r->exit_code = 1;
    r->duration_s = 12.5;
    pl_provenance *p = &r->prov;
    p->perflab_version = pl_strdup("0.1.0");
    p->git_commit = pl_strdup("4848b0bc6706");
    p->command_line = pl_strdup("perflab run --targets memory,selftest --profile minimal");
    p->started_at = pl_strdup("2026-11-23T12:00:00Z");
    p->hostname = pl_strdup("gpu-node-7");
    p->os = pl_strdup("Linux 6.8.0 x86_64");
    p->cpu = pl_strdup("Intel(R) Xeon(R) Platinum 8480+ (224 logical CPUs)");
    p->driver_version = pl_strdup("580.65.06");
    p->cuda_driver_version = 13000;
    p->cuda_runtime_version = 13000;
    p->hardware_key = pl_strdup("fuzz");
    p->n_gpus = 1;
    p->gpus = pl_xcalloc(1, sizeof *p->gpus);
    p->gpus[0] = (pl_gpu_record){.name = pl_strdup("NVIDIA H200"),
                                 .pci_bus_id = pl_strdup("00000000:19:00.0"),
                                 .cc_major = 9,
                                 .sm_count = 132,
                                 .memory_gib = 139.8,
                                 .l2_mib = 60,
                                 .sm_clock_mhz = 1980,
                                 .sm_clock_max_mhz = 1980,
                                 .mem_clock_mhz = 3201,
                                 .mem_clock_max_mhz = 3201,
                                 .power_limit_w = 700,
                                 .temperature_c = 41};
    r->settings = (pl_run_settings){.profile = pl_strdup("minimal"),
                                    .mode = pl_strdup("cold"),
                                    .warmup = 3,
                                    .min_time_s = 0.25,
                                    .max_time_s = 3,
                                    .max_noise = 0.02,
                                    .min_samples = 10,
                                    .timeout_s = 300,
                                    .throttle_threshold = 0.75,
                                    .seed = 20261121,
                                    .rounds = 1};

    pl_target_result *t = add_target(r, "memory:coalescing", PL_STATUS_OK, NULL);
    add_samples(add_variant(t, "baseline", PL_STATUS_OK, NULL), 1.58, 0.01);
    pl_variant_result *v = add_variant(t, "coalesced", PL_STATUS_OK, NULL);
    add_samples(v, 0.206, 0.002);
    v->has_telemetry = 1;
    v->telemetry.sm_clock_mhz = (pl_summary){12, 1755, 1890.5, 1980};
    v->telemetry.power_w = (pl_summary){12, 350, 512.25, 690};
    v = add_variant(t, "memcpy", PL_STATUS_OK, NULL);
    add_samples(v, 0.2, 0.001);
    v->is_reference = 1;
    pl_target_result_derive(t, 7);

    t = add_target(r, "selftest:wrong", PL_STATUS_FAILED_VERIFICATION, "a variant failed verification");
    add_samples(add_variant(t, "baseline", PL_STATUS_OK, NULL), 2.08, 0.001);
    v = add_variant(t, "wrong", PL_STATUS_FAILED_VERIFICATION, "relative L2 error 0.0265 exceeds 1e-05");
    v->verification = (pl_verification){.checked = 1,
                                        .dtype = PL_DTYPE_F32,
                                        .rel_l2_error = 0.0265,
                                        .tolerance = 1e-5,
                                        .max_abs_error = 1,
                                        .max_error_index = 512,
                                        .elements = 1024,
                                        .unwritten = 1,
                                        .nonfinite = 2,
                                        .message = "wrong"};
    pl_target_result_derive(t, 8);

    t = add_target(r, "selftest:crash", PL_STATUS_CRASHED, "the target's process died: signal 11 (SIGSEGV)");
    add_samples(add_variant(t, "baseline", PL_STATUS_OK, NULL), 2.0, 0.003);
    add_variant(t, "crashes", PL_STATUS_CRASHED, "signal 11");
    add_variant(t, "after", PL_STATUS_NOT_RUN, "not run: an earlier variant crashed");
    pl_target_result_derive(t, 9);

    pl_expect_report *e = &r->expectations;
    e->present = e->file_found = 1;
    e->key = pl_strdup("fuzz");
    e->file = pl_strdup("expectations/fuzz.json");
    e->n_rows = 2;
    e->regressions = 1;
    e->rows = pl_xcalloc(2, sizeof *e->rows);
    e->rows[0] = (pl_expect_row){
        pl_strdup("memory:coalescing"), pl_strdup("baseline"), PL_EXPECT_MET, 1.6, 1.58, -0.0125, 0.1, NULL};
    e->rows[1] = (pl_expect_row){pl_strdup("memory:coalescing"),
                                 pl_strdup("coalesced"),
                                 PL_EXPECT_REGRESSED,
                                 0.15,
                                 0.206,
                                 0.373,
                                 0.1,
                                 pl_strdup("slower beyond tolerance and noise")};
}

/* The seeds of the file parsers: the run (and a second one without GPUs or expectations), written by perflab, and
 * the expectations file `perflab expectations update` makes from it. */
typedef struct seeds {
    char *dir;
    pl_run run;
    corpus runs, exps;
} seeds;

static void add_file(corpus *c, const char *path)
{
    size_t len;
    char err[1024];
    char *text = pl_read_file(path, &len, err, sizeof err);
    ck_assert_msg(text != NULL, "%s", err);
    corpus_add(c, text, len);
    free(text);
}

static void make_seeds(seeds *s)
{
    memset(s, 0, sizeof *s);
    s->dir = pl_test_tmpdir("fuzz-seeds");
    build_run(&s->run);
    char err[1024], *path = pl_strfmt("%s/run.json", s->dir);
    ck_assert_msg(pl_run_save(&s->run, path, err, sizeof err) == 0, "%s", err);
    add_file(&s->runs, path);
    pl_run bare;
    ck_assert_msg(pl_run_load(path, &bare, err, sizeof err) == 0, "%s", err);
    pl_provenance_free(&bare.prov);
    pl_expect_report_free(&bare.expectations);
    ck_assert_msg(pl_run_save(&bare, path, err, sizeof err) == 0, "%s", err);
    pl_run_free(&bare);
    add_file(&s->runs, path);
    free(path);

    pl_expectations e;
    memset(&e, 0, sizeof e);
    e.schema_version = PL_EXPECTATIONS_SCHEMA_VERSION;
    e.hardware_key = pl_strdup("fuzz");
    ck_assert(pl_expectations_update(&e, &s->run) > 0);
    path = pl_strfmt("%s/fuzz.json", s->dir);
    ck_assert_msg(pl_expectations_save(&e, path, err, sizeof err) == 0, "%s", err);
    pl_expectations_free(&e);
    add_file(&s->exps, path);
    free(path);
}

static void free_seeds(seeds *s)
{
    pl_run_free(&s->run);
    corpus_free(&s->runs);
    corpus_free(&s->exps);
    free(s->dir);
}

static void parse_run_json(fuzz *f, const char *in, size_t len, void *ctx)
{
    const pl_run *other = ctx;
    write_input(f, in, len);
    pl_run run;
    char err[1024] = "";
    if (verdict(f, in, pl_run_load(f->path, &run, err, sizeof err), err)) {
        pl_compare_result c;
        pl_compare_runs(other, &run, 0.05, 1, &c);
        pl_compare_result_free(&c);
        pl_run_free(&run);
    }
}

START_TEST(fuzz_run_json_for_compare)
{
    seeds sd;
    make_seeds(&sd);
    fuzz f;
    fuzz_begin(&f, "run-json", 0);
    run_fuzz(&f, &sd.runs, 1, parse_run_json, &sd.run);
    fuzz_end(&f);
    free_seeds(&sd);
}
END_TEST

static void parse_expectations(fuzz *f, const char *in, size_t len, void *ctx)
{
    const pl_run *run = ctx;
    write_input(f, in, len);
    pl_expectations e;
    char err[1024] = "";
    const int rc = pl_expectations_load(f->path, "fuzz", &e, err, sizeof err);
    if (rc == 1)
        fuzz_fail(f, in, "a file that exists was reported missing");
    if (verdict(f, in, rc, err)) {
        pl_expect_report r;
        memset(&r, 0, sizeof r);
        pl_expectations_compare(&e, run, &r);
        pl_expect_report_free(&r);
    }
    if (rc != -1)
        pl_expectations_free(&e);
}

START_TEST(fuzz_expectations_files)
{
    seeds sd;
    make_seeds(&sd);
    fuzz f;
    fuzz_begin(&f, "expectations", 0);
    run_fuzz(&f, &sd.exps, 1, parse_expectations, &sd.run);
    fuzz_end(&f);
    free_seeds(&sd);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fuzz");
    TCase *tc = tcase_create("parsers");
    tcase_set_timeout(tc, 300); /* a few seconds each; a hang is a failure too */
    tcase_add_test(tc, fuzz_numbers_with_suffixes);
    tcase_add_test(tc, fuzz_option_words);
    tcase_add_test(tc, fuzz_target_arguments);
    tcase_add_test(tc, fuzz_target_selections);
    tcase_add_test(tc, fuzz_shapes_strings);
    tcase_add_test(tc, fuzz_shapes_files);
    tcase_add_test(tc, fuzz_cutlass_csv);
    tcase_add_test(tc, fuzz_json_provider_records);
    tcase_add_test(tc, fuzz_run_json_for_compare);
    tcase_add_test(tc, fuzz_expectations_files);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
