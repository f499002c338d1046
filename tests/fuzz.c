/* The fuzzer of the host tests (fuzz.h): corpus, mutator and verdicts. */
#include "fuzz.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "testutil.h"

static uint64_t env_u64(const char *name, uint64_t fallback)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : fallback;
}

int pl_fuzz_inputs(void)
{
    const uint64_t n = env_u64("PERFLAB_FUZZ_INPUTS", PL_FUZZ_DEFAULT_INPUTS);
    return n > 1000000 ? 1000000 : (int)n;
}

/* ---------------------------------------------------------------- corpus and mutator */

void pl_fuzz_add(pl_fuzz_corpus *c, const char *data, size_t len)
{
    pl_reserve(&c->items, &c->cap, c->n + 1, sizeof *c->items);
    c->items[c->n].data = memcpy(pl_xmalloc(len + 1), data, len);
    c->items[c->n].data[len] = '\0';
    c->items[c->n++].len = len;
}

void pl_fuzz_add_str(pl_fuzz_corpus *c, const char *s)
{
    pl_fuzz_add(c, s, strlen(s));
}

void pl_fuzz_corpus_free(pl_fuzz_corpus *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->items[i].data);
    free(c->items);
    memset(c, 0, sizeof *c);
}

/* Numbers at the edges of every type the parsers convert to, and texts that look like numbers. */
/* clang-format off */
static const char *const boundary[] = {
    "0", "-0", "1", "-1", "2", "7", "127", "128", "255", "256", "4095", "4096", "4097", "65535", "65536",
    "2147483647", "2147483648", "-2147483648", "-2147483649", "4294967295", "4294967296", "9007199254740993",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "18446744073709551615", "18446744073709551616", "99999999999999999999999999999", "1048576", "1048577",
    "0.5", "-0.5", "1e300", "-1e300", "1e-300", "4.9e-324", "1.7976931348623157e308", "1e309", "nan", "NaN",
    "inf", "-inf", "Infinity", "4096.7", "4096.0", "1e3", "0x10", "0x", "010", "+5", "--1", "1k", "1K", "64m",
    "1g", "1G", "64MiB", "8589934591g", "8589934592g", "-8589934592g", "-18014398509481983k", "18014398509481984k",
    "k", "1.5k", "", " ", "true", "false", "null"};
/* clang-format on */
#define N_BOUNDARY (sizeof boundary / sizeof boundary[0])

/* Bytes that matter to one parser or another. */
/* clang-format off */
static const char interesting[] = {'\0', '\n', '\r', '\t', ' ', ',', ';', ':', '=', '"', '\'', '\\', '#', '{', '}', '[',
                                   ']', '-', '+', '.', 'x', 'X', 'e', 'k', 'm', 'g', '0', '1', '9', '/', '*', '%',
                                   '\x1b', '\x7f', '\x80', '\xc3', '\xff'};
/* clang-format on */

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

size_t pl_fuzz_below(pl_rng *r, size_t n)
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

static void mutate_once(pl_rng *r, buf *b, const pl_fuzz_corpus *c)
{
    const size_t at = pl_fuzz_below(r, b->n + 1);
    switch (pl_rng_below(r, 10)) {
    case 0: /* flip a bit */
        if (b->n)
            b->d[pl_fuzz_below(r, b->n)] ^= (char)(1u << pl_rng_below(r, 8));
        break;
    case 1: /* set a byte to one that matters */
        if (b->n)
            b->d[pl_fuzz_below(r, b->n)] = interesting[pl_fuzz_below(r, sizeof interesting)];
        break;
    case 2: { /* insert a few bytes, interesting or random */
        char ins[8];
        const size_t k = 1 + pl_fuzz_below(r, sizeof ins);
        for (size_t i = 0; i < k; i++)
            ins[i] =
                pl_rng_below(r, 2) ? interesting[pl_fuzz_below(r, sizeof interesting)] : (char)pl_rng_below(r, 256);
        buf_insert(b, at, ins, k);
        break;
    }
    case 3: /* delete a range */
        if (at < b->n)
            buf_erase(b, at, 1 + pl_fuzz_below(r, b->n - at < 64 ? b->n - at : 64));
        break;
    case 4:
    case 5: { /* a boundary number in place of a number */
        size_t s, e;
        const char *num = boundary[pl_fuzz_below(r, N_BOUNDARY)];
        if (find_number(b, at, &s, &e)) {
            buf_erase(b, s, e - s);
            buf_insert(b, s, num, strlen(num));
        } else {
            buf_insert(b, at, num, strlen(num));
        }
        break;
    }
    case 6: { /* a long string: one byte repeated, up to 20 KB */
        const size_t k = 256 + pl_fuzz_below(r, 20000);
        char *s = pl_xmalloc(k);
        memset(s,
               pl_rng_below(r, 2) ? 'a' + (int)pl_fuzz_below(r, 26) : interesting[pl_fuzz_below(r, sizeof interesting)],
               k);
        buf_insert(b, at, s, k);
        free(s);
        break;
    }
    case 7: /* duplicate a range of the input */
        if (b->n) {
            const size_t s = pl_fuzz_below(r, b->n), k = 1 + pl_fuzz_below(r, b->n - s);
            char *copy = memcpy(pl_xmalloc(k), b->d + s, k);
            buf_insert(b, at, copy, k);
            free(copy);
        }
        break;
    case 8: { /* splice: this input's head, another pl_fuzz_sample's tail */
        const pl_fuzz_sample *o = &c->items[pl_fuzz_below(r, c->n)];
        const size_t from = pl_fuzz_below(r, o->len + 1);
        b->n = at;
        buf_insert(b, b->n, o->data + from, o->len - from);
        break;
    }
    default: /* truncate */ b->n = at; break;
    }
    if (b->n > PL_FUZZ_MAX_INPUT)
        b->n = PL_FUZZ_MAX_INPUT;
}

/* A mutated copy of one of the samples: 1 to 4 mutations. NUL-terminated; *len counts bytes (NULs inside kept only
 * when `nul_ok`: strings for C-string parsers end at their first NUL anyway). malloc'd. */
char *pl_fuzz_mutate(pl_rng *r, const pl_fuzz_corpus *c, size_t *len, int nul_ok)
{
    const pl_fuzz_sample *s = &c->items[pl_fuzz_below(r, c->n)];
    buf b = {0};
    buf_insert(&b, 0, s->data, s->len);
    for (size_t k = 1 + pl_fuzz_below(r, 4); k > 0; k--)
        mutate_once(r, &b, c);
    buf_room(&b, b.n);
    b.d[b.n] = '\0';
    *len = nul_ok ? b.n : strlen(b.d);
    return b.d;
}

/* ---------------------------------------------------------------- verdicts */

void pl_fuzz_begin(pl_fuzz *f, const char *name, int strict)
{
    memset(f, 0, sizeof *f);
    f->name = name;
    f->strict = strict;
    uint64_t h = 1469598103934665603ULL; /* FNV-1a of the name: every parser its own stream */
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    f->seed = env_u64("PERFLAB_FUZZ_SEED", PL_FUZZ_DEFAULT_SEED);
    pl_rng_seed(&f->rng, f->seed ^ h);
    char *dir = pl_test_tmpdir("fuzz");
    f->path = pl_strfmt("%s/%s.input", dir, name);
    free(dir);
    printf("fuzz %s: %d inputs, seed %llu (PERFLAB_FUZZ_SEED=%llu repeats it)\n", name, pl_fuzz_inputs(),
           (unsigned long long)f->seed, (unsigned long long)f->seed);
    fflush(stdout);
}

void pl_fuzz_fail(pl_fuzz *f, const char *input, const char *fmt, ...)
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
int pl_fuzz_verdict(pl_fuzz *f, const char *input, int rc, const char *err)
{
    if (rc == 0) {
        f->accepted++;
        return 1;
    }
    f->refused++;
    if (!*err)
        pl_fuzz_fail(f, input, "refused without a message");
    else if (strchr(err, '\n'))
        pl_fuzz_fail(f, input, "a message of more than one line: '%s'", PL_ESC(err));
    else {
        char esc[2048];
        if (strcmp(pl_escape(err, 0, esc, sizeof esc), err) != 0) {
            f->raw++;
            if (f->strict)
                pl_fuzz_fail(f, input, "a message with raw control characters or invalid UTF-8: '%s'", esc);
        }
    }
    return 0;
}

void pl_fuzz_end(pl_fuzz *f)
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

void pl_fuzz_write_input(const pl_fuzz *f, const char *data, size_t len)
{
    FILE *fp = fopen(f->path, "wb");
    ck_assert_msg(fp != NULL, "cannot write %s", f->path);
    ck_assert(fwrite(data, 1, len, fp) == len);
    fclose(fp);
}

void pl_fuzz_run(pl_fuzz *f, const pl_fuzz_corpus *c, int nul_ok, pl_fuzz_parse_fn parse, void *ctx)
{
    for (size_t i = 0; i < c->n; i++) {
        const long bad = f->bad, refused = f->refused;
        parse(f, c->items[i].data, c->items[i].len, ctx);
        ck_assert_msg(f->bad == bad && f->refused == refused, "fuzz %s: seed sample %zu is refused: %s", f->name, i,
                      f->first_bad[0] ? f->first_bad : PL_ESC(c->items[i].data));
    }
    f->accepted = f->refused = 0;
    for (int i = 0, n = pl_fuzz_inputs(); i < n; i++) {
        size_t len;
        char *in = pl_fuzz_mutate(&f->rng, c, &len, nul_ok);
        parse(f, in, len, ctx);
        free(in);
    }
}

void pl_fuzz_add_file(pl_fuzz_corpus *c, const char *path)
{
    size_t len;
    char err[1024];
    char *text = pl_read_file(path, &len, err, sizeof err);
    ck_assert_msg(text != NULL, "%s", err);
    pl_fuzz_add(c, text, len);
    free(text);
}

void pl_fuzz_parser(const char *name, int strict, const char *const *seeds, int nul_ok, pl_fuzz_parse_fn parse,
                    void *ctx)
{
    pl_fuzz_corpus c = {0};
    for (const char *const *s = seeds; *s; s++)
        pl_fuzz_add_str(&c, *s);
    pl_fuzz f;
    pl_fuzz_begin(&f, name, strict);
    pl_fuzz_run(&f, &c, nul_ok, parse, ctx);
    pl_fuzz_end(&f);
    pl_fuzz_corpus_free(&c);
}
