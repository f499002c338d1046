/* A seeded mutation fuzzer for the host tests: valid seed inputs (a corpus) turned into thousands of inputs by bit
 * flips, interesting bytes, insertions and deletions, boundary numbers in place of numbers, long strings,
 * duplicated ranges and splices between samples; and the verdict on what a parser made of each (accepted, or
 * refused with a one-line message). Deterministic: PERFLAB_FUZZ_SEED=N repeats a run (the seed is printed),
 * PERFLAB_FUZZ_INPUTS=N sets the inputs per parser. */
#ifndef PERFLAB_TESTS_FUZZ_H
#define PERFLAB_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "perflab/stats.h"

#define PL_FUZZ_DEFAULT_SEED   20261123ULL
#define PL_FUZZ_DEFAULT_INPUTS 2500
#define PL_FUZZ_MAX_INPUT      (64 * 1024) /* mutated inputs are cut here: the time per input stays bounded */

typedef struct pl_fuzz_sample {
    char *data; /* NUL-terminated; may hold NULs inside (len counts them) */
    size_t len;
} pl_fuzz_sample;

typedef struct pl_fuzz_corpus {
    pl_fuzz_sample *items;
    size_t n, cap;
} pl_fuzz_corpus;

void pl_fuzz_add(pl_fuzz_corpus *c, const char *data, size_t len);
void pl_fuzz_add_str(pl_fuzz_corpus *c, const char *s);
/* A file's contents as a sample (fails the test when it cannot be read). */
void pl_fuzz_add_file(pl_fuzz_corpus *c, const char *path);
void pl_fuzz_corpus_free(pl_fuzz_corpus *c);

/* One parser's run: its random stream (the seed mixed with its name), what it did, the first failure. */
typedef struct pl_fuzz {
    const char *name;
    pl_rng rng;
    uint64_t seed;
    int strict;             /* messages must be printable too (escaped control characters and invalid UTF-8) */
    long accepted, refused; /* over every parse */
    long bad;               /* properties or messages that failed */
    long raw;               /* messages with raw control characters or invalid UTF-8 (counted when not strict) */
    char first_bad[1200];   /* the first failure, described */
    char *path;             /* a file for file-based parsers */
} pl_fuzz;

/* Inputs per parser: PERFLAB_FUZZ_INPUTS or the default. */
int pl_fuzz_inputs(void);
size_t pl_fuzz_below(pl_rng *r, size_t n);
/* A mutated copy of a sample of c: 1 to 4 mutations, malloc'd and NUL-terminated; *len counts its bytes (with NULs
 * inside only when nul_ok: C-string parsers end at the first NUL anyway). */
char *pl_fuzz_mutate(pl_rng *r, const pl_fuzz_corpus *c, size_t *len, int nul_ok);

void pl_fuzz_begin(pl_fuzz *f, const char *name, int strict);
/* Records a failure (the first one is kept, described with the input, escaped). */
void pl_fuzz_fail(pl_fuzz *f, const char *input, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* What a parser said about an input: rc 0 is accepted (returns 1); else refused (returns 0), with a message that
 * must be there, one line, and printable when strict. */
int pl_fuzz_verdict(pl_fuzz *f, const char *input, int rc, const char *err);
/* Prints the counts; fails the test on any failure, or when the inputs never reached both outcomes. */
void pl_fuzz_end(pl_fuzz *f);
/* Write an input to f->path (no fsync: thousands of them). */
void pl_fuzz_write_input(const pl_fuzz *f, const char *data, size_t len);

/* Every sample of c must be accepted; then pl_fuzz_inputs() mutations of them go through parse. */
typedef void (*pl_fuzz_parse_fn)(pl_fuzz *f, const char *input, size_t len, void *ctx);
void pl_fuzz_run(pl_fuzz *f, const pl_fuzz_corpus *c, int nul_ok, pl_fuzz_parse_fn parse, void *ctx);
/* The whole of a parser's test over NULL-terminated seed strings: begin, run, end. */
void pl_fuzz_parser(const char *name, int strict, const char *const *seeds, int nul_ok, pl_fuzz_parse_fn parse,
                    void *ctx);

#endif
