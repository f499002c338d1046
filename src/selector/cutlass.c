#include "selector/cutlass.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/piped_child.h"
#include "core/util.h"

#define MAX_COLUMNS 256

typedef struct csv_row {
    char *cells[MAX_COLUMNS];
    int n;
} csv_row;

/* Split one line in place at commas; a field may be double-quoted (quotes removed, "" kept as "). */
static int split_csv(char *line, csv_row *row)
{
    row->n = 0;
    char *p = line;
    for (;;) {
        if (row->n == MAX_COLUMNS)
            return -1;
        char *start = p, *w = p;
        if (*p == '"') {
            start = w = ++p;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"')
                    p++;
                *w++ = *p++;
            }
            if (*p == '"')
                p++;
        } else {
            while (*p && *p != ',')
                *w++ = *p++;
        }
        const char sep = *p;
        *w = '\0';
        row->cells[row->n++] = start;
        if (sep != ',')
            return 0;
        p++;
    }
}

static int column(const csv_row *header, const char *name)
{
    for (int i = 0; i < header->n; i++)
        if (strcmp(header->cells[i], name) == 0)
            return i;
    return -1;
}

static const char *cell(const csv_row *row, int col)
{
    return col >= 0 && col < row->n ? row->cells[col] : NULL;
}

static int to_double(const char *s, double *out)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* "128x256x64" from three columns when present. */
static char *triple(const csv_row *row, const csv_row *h, const char *a, const char *b, const char *c)
{
    const char *x = cell(row, column(h, a)), *y = cell(row, column(h, b)), *z = cell(row, column(h, c));
    if (!x || !y || !z || !*x)
        return NULL;
    return pl_strfmt("%sx%sx%s", x, y, z);
}

typedef struct columns {
    int operation, disposition, status, m, n, k, runtime, gflops;
} columns;

static int find_columns(const csv_row *h, const char *source, int lineno, columns *c, char *err, size_t errlen)
{
    static const char *const required[] = {"Operation", "Disposition", "Status", "m", "n", "k", "Runtime"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (column(h, required[i]) < 0) {
            pl_snprintf(err, errlen, "%s:%d: the CSV header has no '%s' column: not a cutlass_profiler GEMM CSV",
                        source, lineno, required[i]);
            return -1;
        }
    c->operation = column(h, "Operation");
    c->disposition = column(h, "Disposition");
    c->status = column(h, "Status");
    c->m = column(h, "m");
    c->n = column(h, "n");
    c->k = column(h, "k");
    c->runtime = column(h, "Runtime");
    c->gflops = column(h, "GFLOPs");
    return 0;
}

static int parse_row(const csv_row *row, const csv_row *h, const columns *c, const char *where,
                     const pl_gemm_shape *shape, const char *dtype, const char *layout, pl_gemm_record *r, char *err,
                     size_t errlen)
{
    memset(r, 0, sizeof *r);
    long long m, n, k;
    double ms, gflops = NAN;
    const char *cm = cell(row, c->m), *cn = cell(row, c->n), *ck = cell(row, c->k);
    if (pl_gemm_dim_parse(cm, &m) || pl_gemm_dim_parse(cn, &n) || pl_gemm_dim_parse(ck, &k)) {
        pl_snprintf(err, errlen, "%s: m, n, k must be integers from 1 to %lld, not '%s', '%s', '%s'", where,
                    PL_GEMM_DIM_MAX, PL_ESC(cm), PL_ESC(cn), PL_ESC(ck));
        return -1;
    }
    if (m != shape->m || n != shape->n || k != shape->k) {
        pl_snprintf(err, errlen, "%s: a row for %lldx%lldx%lld, but the profiler was asked for %s (%lldx%lldx%lld)",
                    where, m, n, k, shape->name, shape->m, shape->n, shape->k);
        return -1;
    }
    if (to_double(cell(row, c->runtime), &ms)) {
        pl_snprintf(err, errlen, "%s: Runtime '%s' is not a number", where,
                    PL_ESC(cell(row, c->runtime) ? cell(row, c->runtime) : ""));
        return -1;
    }
    if (c->gflops >= 0 && to_double(cell(row, c->gflops), &gflops))
        gflops = NAN;
    const char *disposition = cell(row, c->disposition), *status = cell(row, c->status);
    r->provider = pl_strdup("cutlass");
    r->shape = pl_strdup(shape->name);
    r->m = m;
    r->n = n;
    r->k = k;
    r->dtype = pl_strdup(dtype);
    r->layout = pl_strdup(layout);
    r->kernel = pl_strdup(cell(row, c->operation));
    r->median_ms = ms;
    r->tflops = ms > 0 ? 2.0 * (double)m * (double)n * (double)k / (ms * 1e9) : (isnan(gflops) ? NAN : gflops / 1e3);
    r->noise = NAN;
    r->rel_l2_error = NAN;
    r->verified = disposition && strcmp(disposition, "passed") == 0;
    const int success = status && strcmp(status, "success") == 0;
    r->status = success && r->verified && ms > 0 ? PL_GEMM_OK : PL_GEMM_FAILED;
    if (r->status != PL_GEMM_OK)
        r->reason = pl_strfmt("cutlass_profiler: status %s, disposition %s", status ? status : "?",
                              disposition ? disposition : "?");
    r->config = json_object();
    char *cta = triple(row, h, "cta_m", "cta_n", "cta_k"),
         *cluster = triple(row, h, "cluster_m", "cluster_n", "cluster_k");
    if (cta)
        json_object_set_new(r->config, "cta", json_string(cta));
    if (cluster)
        json_object_set_new(r->config, "cluster", json_string(cluster));
    free(cta);
    free(cluster);
    static const char *const extra[] = {"stages", "A", "B", "C", "D", "split_k_slices", "raster_order", "Disposition"};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        const char *v = cell(row, column(h, extra[i]));
        if (v && *v)
            json_object_set_new(r->config, extra[i], json_string(v));
    }
    return 0;
}

int pl_cutlass_csv_parse(const char *text, const char *source, const pl_gemm_shape *shape, const char *dtype,
                         const char *layout, pl_gemm_record_list *out, char *err, size_t errlen)
{
    char *copy = pl_strdup(text), *header_line = NULL;
    csv_row header = {0};
    columns cols = {-1, -1, -1, -1, -1, -1, -1, -1};
    int rc = 0, lineno = 0, rows = 0;
    for (char *line = copy; line && rc == 0;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[--len] = '\0';
        char where[512];
        pl_snprintf(where, sizeof where, "%s:%d", source, lineno);
        if (strncmp(line, "Problem,", 8) == 0) {
            free(header_line);
            header_line = pl_strdup(line);
            if (split_csv(header_line, &header) != 0) {
                pl_snprintf(err, errlen, "%s: more than %d columns", where, MAX_COLUMNS);
                rc = -1;
            } else {
                rc = find_columns(&header, source, lineno, &cols, err, errlen);
            }
        } else if (len > 0) {
            if (!header_line) {
                pl_snprintf(err, errlen, "%s: a data row before any 'Problem,Provider,...' header", where);
                rc = -1;
                break;
            }
            csv_row row;
            if (split_csv(line, &row) != 0 || row.n != header.n) {
                pl_snprintf(err, errlen, "%s: %d fields where the header has %d", where, row.n, header.n);
                rc = -1;
                break;
            }
            pl_gemm_record r;
            if ((rc = parse_row(&row, &header, &cols, where, shape, dtype, layout, &r, err, errlen)) == 0) {
                pl_gemm_record_list_push(out, &r);
                rows++;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    if (rc == 0 && rows == 0) {
        pl_snprintf(err, errlen, "%s: no result rows (did the profiler find a kernel for this problem?)", source);
        rc = -1;
    }
    free(header_line);
    free(copy);
    return rc;
}

static const char *cutlass_type(const char *dtype)
{
    return strcmp(dtype, "fp16") == 0 ? "f16" : strcmp(dtype, "fp8") == 0 ? "fe4m3" : "bf16";
}

char **pl_cutlass_argv(const char *bin, const pl_gemm_shape *s, const char *dtype, const char *layout,
                       const char *prefix)
{
    const char *t = cutlass_type(dtype), *out_t = strcmp(dtype, "fp16") == 0 ? "f16" : "bf16";
    /* perflab's A is M×K row-major; B N×K row-major is CUTLASS's column-major K×N, B K×N is row-major */
    const char *b_major = strcmp(layout, "kn") == 0 ? "row" : "column";
    char **argv = pl_xcalloc(16, sizeof *argv);
    int i = 0;
    argv[i++] = pl_strdup(bin);
    argv[i++] = pl_strdup("--operation=Gemm");
    argv[i++] = pl_strfmt("--m=%lld", s->m);
    argv[i++] = pl_strfmt("--n=%lld", s->n);
    argv[i++] = pl_strfmt("--k=%lld", s->k);
    argv[i++] = pl_strfmt("--A=%s:row", t);
    argv[i++] = pl_strfmt("--B=%s:%s", t, b_major);
    argv[i++] = pl_strfmt("--C=%s:row", out_t);
    argv[i++] = pl_strfmt("--D=%s:row", out_t);
    argv[i++] = pl_strdup("--accumulator-type=f32");
    argv[i++] = pl_strdup("--providers=cutlass");
    argv[i++] = pl_strdup("--verification-enabled=true");
    argv[i++] = pl_strfmt("--output=%s", prefix);
    argv[i] = NULL;
    return argv;
}

void pl_cutlass_argv_free(char **argv)
{
    for (char **p = argv; p && *p; p++)
        free(*p);
    free(argv);
}

int pl_cutlass_run(const char *bin, const pl_gemm_shape *s, const char *dtype, const char *layout, const char *workdir,
                   const char *log_path, double timeout_s, pl_gemm_record_list *out, char *err, size_t errlen)
{
    if (access(bin, X_OK) != 0) {
        pl_snprintf(err, errlen, "%s=%s is not an executable file", PL_CUTLASS_ENV, bin);
        return -1;
    }
    char *prefix = pl_strfmt("%s/cutlass_%s", workdir, s->name);
    char **argv = pl_cutlass_argv(bin, s, dtype, layout, prefix);
    pl_child c;
    int rc = -1;
    if (pl_child_spawn(&c, log_path) != 0) {
        pl_snprintf(err, errlen, "cannot start %s", bin);
        goto out;
    }
    if (c.pid == 0) {
        execv(bin, argv);
        fprintf(stderr, "perflab: cannot run %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    /* the profiler never writes to our pipe: it closes (EOF) when the profiler exits */
    const double deadline = pl_now_s() + timeout_s;
    json_t *msg;
    int r;
    while ((r = pl_child_next(&c, deadline, &msg)) == 1)
        json_decref(msg);
    pl_child_end end;
    pl_child_finish(&c, r != 0, &end);
    if (r == -1 || r == -2) {
        pl_snprintf(err, errlen, "cutlass_profiler %s (log: %s)",
                    r == -1 ? "did not finish within the timeout" : "was interrupted", log_path);
        goto out;
    }
    if (!end.exited || end.exit_code != 0) {
        pl_snprintf(err, errlen, "cutlass_profiler %s (log: %s)", end.description, log_path);
        goto out;
    }
    char *csv_path = pl_strfmt("%s.gemm.csv", prefix), rerr[512];
    char *text = pl_read_file(csv_path, NULL, rerr, sizeof rerr);
    if (!text)
        pl_snprintf(err, errlen, "cutlass_profiler wrote no CSV: %s", rerr);
    else
        rc = pl_cutlass_csv_parse(text, csv_path, s, dtype, layout, out, err, errlen);
    free(text);
    free(csv_path);
out:
    pl_cutlass_argv_free(argv);
    free(prefix);
    return rc;
}
