/* Command-line options of a verb, declared as a table: parsing, typed values, errors and --help from one place. */
#ifndef PERFLAB_CLI_OPTIONS_H
#define PERFLAB_CLI_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "core/exit.h"

typedef enum pl_opt_kind {
    PL_OPT_FLAG,   /* int*: set to 1 */
    PL_OPT_STRING, /* char**: the argument (not copied) */
    PL_OPT_INT,    /* int*, in [min, max] */
    PL_OPT_DOUBLE, /* double*, in [min, max] */
    PL_OPT_LIST,   /* pl_strlist*: repeatable */
} pl_opt_kind;

typedef struct pl_strlist {
    const char **items;
    size_t n;
} pl_strlist;

typedef struct pl_option {
    const char *name; /* long name without "--" */
    char short_name;  /* 0 for none */
    pl_opt_kind kind;
    void *dest;
    const char *metavar;
    const char *help;
    double min, max; /* INT/DOUBLE bounds, inclusive (ignored when equal) */
} pl_option;

/* Parse argv[0..argc) (argv[0] is the first argument after the verb). Positional arguments are collected into
 * `positional`. "--" ends the options. Returns -1 with a one-line message in err (naming the option, the
 * problem and the fix) on bad input; `positional` and every PL_OPT_LIST destination are then empty (freed), so an
 * exit-2 path has nothing to free. */
int pl_options_parse(const char *verb, const pl_option *opts, int argc, char **argv, pl_strlist *positional, char *err,
                     size_t errlen);
void pl_options_help(FILE *out, const pl_option *opts);
void pl_strlist_free(pl_strlist *l);

/* A comma list of names into their values (from_name gives -1 for a name it does not know), each value once, in the
 * list's order, at most max of them: 0 with *n values in out; -1 with the unknown name (or the first past max)
 * in bad. */
int pl_options_name_list(const char *text, int (*from_name)(const char *), int *out, int max, int *n, char *bad,
                         size_t badlen);

/* Print "perflab VERB: message" to stderr and return PL_EXIT_USAGE. */
int pl_usage_error(const char *verb, const char *msg);

#endif
