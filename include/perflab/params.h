/* Named, typed target parameters: declared with defaults by a target, overridden from the command line
 * (--target-extra-arg 'group:name=--n 4096 --dtype bf16'), read back by the target with typed accessors. */
#ifndef PERFLAB_PARAMS_H
#define PERFLAB_PARAMS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_param_type {
    PL_PARAM_INT,    /* integer; accepts k/m/g suffixes (powers of 1024), e.g. 64m */
    PL_PARAM_FLOAT,  /* double */
    PL_PARAM_STRING, /* free text, or one of `choices` ("bf16|fp16|fp32") */
    PL_PARAM_BOOL    /* true/false/1/0/yes/no/on/off */
} pl_param_type;

typedef struct pl_param_def {
    const char *name; /* as written after "--" */
    pl_param_type type;
    const char *default_value; /* text, parsed like a command-line value */
    const char *help;
    const char *choices; /* STRING only: '|'-separated allowed values, or NULL */
    double min, max;     /* INT/FLOAT bounds, inclusive. Both 0: none; max <= min: a lower bound only */
    /* The value of a small run (`perflab verify --small`, which the GPU tests' `sanitize` label runs under
     * compute-sanitizer): a size that exercises every code path, edges included (not a multiple of any tile), in
     * well under a second. NULL: the default serves. Every parameter that sets a problem size declares one. */
    const char *small_value;
} pl_param_def;

typedef struct pl_param_value {
    const pl_param_def *def;
    char *text;     /* the value as given (or the default) */
    long long i;    /* INT and BOOL */
    double f;       /* FLOAT (and INT, converted) */
    int overridden; /* 1 when set on the command line */
} pl_param_value;

typedef struct pl_params {
    pl_param_value *values;
    size_t count;
} pl_params;

/* Accessors abort on a name the target did not declare: that is a programming error, not bad input. */
long long pl_param_int(const pl_params *p, const char *name);
double pl_param_float(const pl_params *p, const char *name);
const char *pl_param_str(const pl_params *p, const char *name);
int pl_param_bool(const pl_params *p, const char *name);

/* Fill `out` with every declared parameter at its default (its small_value when `small`), then apply
 * "--name value" / "--name=value" tokens from `args` (a shell-like string; quotes group words). On bad input returns
 * -1 and writes one line into err that names the problem and the fix. */
int pl_params_init(pl_params *out, const pl_param_def *defs, const char *target_name, const char *args, int small,
                   char *err, size_t errlen);
void pl_params_free(pl_params *p);

/* Parse one value as its type would ("64m" -> 67108864). Returns -1 with a message on bad input. */
int pl_param_parse_value(const pl_param_def *def, const char *text, long long *i, double *f, char *err, size_t errlen);

/* Parse an integer with an optional k/m/g suffix (powers of 1024). Returns -1 on bad input. */
int pl_parse_size(const char *text, long long *out);

#ifdef __cplusplus
}
#endif
#endif
