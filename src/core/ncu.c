/* Nsight Compute mechanics: finding ncu, running one replay under it, reading its CSV back (see ncu.h). */
#include "core/ncu.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util.h"

/* Each metric of the set and where it lands. Percentages are averaged over kernels weighted by duration; the
 * rest are summed. Two tensor-pipe metrics: mma.sync (hmma) and Hopper's wgmma (gmma); the busier one counts. */
typedef enum agg { SUM, PCT } agg;
typedef struct metric_def {
    const char *name;
    size_t offset; /* in pl_ncu_metrics */
    agg how;
} metric_def;

#define M(name, member, how)                                                                                           \
    {                                                                                                                  \
        name, offsetof(pl_ncu_metrics, member), how                                                                    \
    }
static const metric_def metric_defs[] = {
    M("gpu__time_duration.sum", duration_ms, SUM),
    M("dram__bytes_read.sum", dram_bytes_read, SUM),
    M("dram__bytes_write.sum", dram_bytes_write, SUM),
    M("lts__t_bytes.sum", l2_bytes, SUM),
    M("dram__throughput.avg.pct_of_peak_sustained_elapsed", dram_pct, PCT),
    M("lts__throughput.avg.pct_of_peak_sustained_elapsed", l2_pct, PCT),
    M("l1tex__throughput.avg.pct_of_peak_sustained_active", l1_pct, PCT),
    M("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed", shared_pct, PCT),
    M("sm__warps_active.avg.pct_of_peak_sustained_active", occupancy_pct, PCT),
    M("sm__throughput.avg.pct_of_peak_sustained_elapsed", sm_pct, PCT),
    M("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", tensor_pct, PCT),
    M("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active", tensor_pct, PCT),
    M("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", shared_wavefronts, SUM),
    M("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", bank_conflicts, SUM),
    M("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", bank_conflicts, SUM),
};
#undef M
#define N_METRICS (sizeof metric_defs / sizeof metric_defs[0])

const char *const pl_ncu_metric_set[N_METRICS + 1] = {
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    NULL,
};

#define FIELD(m, off) ((double *)((char *)(m) + (off)))

void pl_ncu_metrics_init(pl_ncu_metrics *m)
{
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < N_METRICS; i++)
        *FIELD(m, metric_defs[i].offset) = NAN;
}

/* ---- finding ncu ---- */

char *pl_which(const char *name)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        return NULL;
    char *copy = pl_strdup(path);
    char *found = NULL;
    for (char *save = NULL, *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
        char *cand = pl_path_join(*dir ? dir : ".", name);
        if (access(cand, X_OK) == 0 && !pl_is_dir(cand))
            found = cand;
        else
            free(cand);
    }
    free(copy);
    return found;
}

char *pl_self_exe(void)
{
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    return pl_strdup(buf);
}

char *pl_ncu_find(void)
{
    const char *env = getenv("PERFLAB_NCU");
    if (env)
        return *env && access(env, X_OK) == 0 ? pl_strdup(env) : NULL;
    return pl_which("ncu");
}

/* ---- running a command ---- */

int pl_exec_wait(char *const *argv, const char *out_path, int err_too, int own_group, double timeout_s)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return 127;
    if (pid == 0) {
        if (own_group)
            setpgid(0, 0);
        if (out_path) {
            int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) {
                dup2(fd, STDOUT_FILENO);
                if (err_too)
                    dup2(fd, STDERR_FILENO);
                close(fd);
            }
        }
        for (int fd = 3; fd < 1024; fd++) /* the runner's pipe among them: EOF must mean the target ended */
            close(fd);
        execvp(argv[0], argv);
        fprintf(stderr, "perflab: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (own_group)
        setpgid(pid, pid);
    const double deadline = timeout_s > 0 ? pl_now_s() + timeout_s : INFINITY;
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, timeout_s > 0 ? WNOHANG : 0);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return 127;
        if (timeout_s > 0 && pl_now_s() > deadline) {
            kill(own_group ? -pid : pid, SIGKILL);
            waitpid(pid, &status, 0);
            return 124;
        }
        if (timeout_s > 0)
            pl_sleep_s(0.05);
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 127;
}

char *pl_ncu_describe(void)
{
    char *ncu = pl_ncu_find();
    if (!ncu)
        return pl_strdup(getenv("PERFLAB_NCU")
                             ? "no measured counters: PERFLAB_NCU names no executable ncu"
                             : "no measured counters: ncu (Nsight Compute) is not on the PATH; install it or set "
                               "PERFLAB_NCU to measure DRAM bytes and utilisations");
    char tmp[] = "/tmp/perflab-ncu-version-XXXXXX";
    int fd = mkstemp(tmp);
    char *version = NULL;
    if (fd >= 0) {
        close(fd);
        char *argv[] = {ncu, "--version", NULL};
        if (pl_exec_wait(argv, tmp, 1, 1, 30) == 0) {
            char *text = pl_read_file(tmp, NULL, NULL, 0);
            /* the last line reads "Version 2025.2.1.0 (build ...)" */
            const char *v = text ? strstr(text, "Version ") : NULL;
            if (v) {
                v += 8;
                size_t n = strcspn(v, " \n");
                version = pl_strfmt("%.*s", (int)n, v);
            }
            free(text);
        }
        unlink(tmp);
    }
    char *d = pl_strfmt("ncu %s (%s)", version ? version : "(version unknown)", ncu);
    free(version);
    free(ncu);
    return d;
}

/* ---- the CSV ---- */

/* One CSV record starting at *p (quoted fields with "" escapes); advances *p past its line end. */
static size_t csv_record(const char **p, char ***fields)
{
    size_t n = 0, cap = 0;
    *fields = NULL;
    const char *s = *p;
    pl_buf f = {0};
    int more = 1;
    while (more) {
        pl_buf_append(&f, "");
        if (*s == '"') {
            s++;
            for (; *s; s++) {
                if (*s == '"' && s[1] == '"') {
                    pl_buf_appendn(&f, s, 1);
                    s++;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    pl_buf_appendn(&f, s, 1);
                }
            }
        }
        while (*s && *s != ',' && *s != '\n' && *s != '\r')
            pl_buf_appendn(&f, s++, 1);
        pl_reserve(fields, &cap, n + 1, sizeof **fields);
        (*fields)[n++] = f.data;
        f = (pl_buf){0};
        more = *s == ',';
        if (more)
            s++;
    }
    while (*s == '\r')
        s++;
    if (*s == '\n')
        s++;
    *p = s;
    return n;
}

static void free_fields(char **f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(f[i]);
    free(f);
}

/* A number as ncu prints it ("1,234.5", "n/a"); NaN when it is none. */
static double csv_number(const char *s)
{
    char clean[128];
    size_t k = 0;
    for (; *s && k + 1 < sizeof clean; s++)
        if (*s != ',' && *s != ' ')
            clean[k++] = *s;
    clean[k] = '\0';
    char *end;
    double x = strtod(clean, &end);
    return k > 0 && *end == '\0' ? x : NAN;
}

int pl_ncu_parse_csv(const char *csv, pl_ncu_metrics *out, char *err, size_t errlen)
{
    char *report = out->report, *error = out->error;
    pl_ncu_metrics_init(out);
    out->report = report;
    out->error = error;
    int col[N_METRICS];
    int have_header = 0;
    double weight = 0, pct_sum[N_METRICS] = {0}, pct_weight[N_METRICS] = {0};
    for (const char *p = csv; p && *p;) {
        if (*p != '"') { /* ncu's own lines (==PROF==, ==WARNING==) and blank ones */
            p = strchr(p, '\n');
            p = p ? p + 1 : NULL;
            continue;
        }
        char **f;
        size_t n = csv_record(&p, &f);
        if (!have_header && n > 0 && strcmp(f[0], "ID") == 0) {
            for (size_t m = 0; m < N_METRICS; m++) {
                col[m] = -1;
                for (size_t i = 0; i < n; i++)
                    if (strcmp(f[i], metric_defs[m].name) == 0)
                        col[m] = (int)i;
            }
            have_header = 1;
        } else if (have_header && n > 0 && !isnan(csv_number(f[0]))) { /* a kernel (the units row has no ID) */
            out->kernels++;
            int tcol = col[0];
            double t = tcol >= 0 && (size_t)tcol < n ? csv_number(f[tcol]) : NAN;
            double w = isnan(t) || t <= 0 ? 1.0 : t;
            weight += w;
            for (size_t m = 0; m < N_METRICS; m++) {
                if (col[m] < 0 || (size_t)col[m] >= n)
                    continue;
                double x = csv_number(f[col[m]]);
                if (isnan(x))
                    continue;
                double *dst = FIELD(out, metric_defs[m].offset);
                if (metric_defs[m].how == SUM) {
                    *dst = isnan(*dst) ? x : *dst + x;
                } else {
                    pct_sum[m] += w * x;
                    pct_weight[m] += w;
                }
            }
        }
        free_fields(f, n);
    }
    if (!have_header || out->kernels == 0) {
        pl_snprintf(err, errlen, "%s",
                    have_header ? "no kernel was profiled (the variant launched none between "
                                  "cudaProfilerStart and cudaProfilerStop)"
                                : "ncu printed no metric table");
        return -1;
    }
    for (size_t m = 0; m < N_METRICS; m++) {
        if (metric_defs[m].how != PCT || pct_weight[m] <= 0)
            continue;
        double v = pct_sum[m] / pct_weight[m];
        double *dst = FIELD(out, metric_defs[m].offset);
        *dst = isnan(*dst) ? v : fmax(*dst, v); /* two tensor-pipe metrics: the busier pipe */
    }
    if (!isnan(out->duration_ms))
        out->duration_ms *= 1e-6; /* ns (base units) to ms */
    return 0;
}

/* ---- one replay under ncu ---- */

/* ncu's first error line, or the last line it printed. */
static void ncu_error_line(const char *log, char *out, size_t len)
{
    const char *e = log ? strstr(log, "==ERROR==") : NULL;
    if (!e && log) {
        size_t n = strlen(log);
        while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' '))
            n--;
        size_t start = n;
        while (start > 0 && log[start - 1] != '\n')
            start--;
        pl_snprintf(out, len, "%.*s", (int)(n - start), log + start);
        return;
    }
    if (!e) {
        pl_snprintf(out, len, "no output");
        return;
    }
    pl_snprintf(out, len, "%.*s", (int)strcspn(e, "\n"), e);
}

static int ident_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Whether ncu's messages name the metric: in full, or its base name (before the first '.') as a whole word. */
static int names_metric(const char *log, const char *metric)
{
    if (strstr(log, metric))
        return 1;
    const size_t n = strcspn(metric, ".");
    for (const char *p = log; *p;) {
        const char *w = p;
        while (ident_char(*p))
            p++;
        if ((size_t)(p - w) == n && strncmp(w, metric, n) == 0)
            return 1;
        if (p == w)
            p++;
    }
    return 0;
}

int pl_ncu_profile(const pl_ncu_job *job, pl_ncu_metrics *out, char *err, size_t errlen)
{
    int use[N_METRICS];
    for (size_t m = 0; m < N_METRICS; m++)
        use[m] = 1;
    char *rep = pl_strfmt("%s.ncu-rep", job->out_base);
    char *log_path = pl_strfmt("%s.log", job->out_base);
    char *csv_path = pl_strfmt("%s.csv", job->out_base);
    char device[16], seed[32];
    pl_snprintf(device, sizeof device, "%d", job->device);
    pl_snprintf(seed, sizeof seed, "%llu", job->seed);
    int rc = -1, no_kernel = 0;
    char why[512] = "";
    for (int attempt = 0; attempt < 4; attempt++) {
        pl_buf metrics = {0};
        for (size_t m = 0; m < N_METRICS; m++)
            if (use[m])
                pl_buf_printf(&metrics, "%s%s", metrics.len ? "," : "", metric_defs[m].name);
        char *argv[] = {(char *)job->ncu,
                        "--clock-control",
                        "none",
                        "--profile-from-start",
                        "off",
                        "--target-processes",
                        "all",
                        "--launch-count",
                        "64",
                        "--metrics",
                        metrics.data,
                        "--export",
                        (char *)job->out_base,
                        "--force-overwrite",
                        "--log-file",
                        log_path,
                        (char *)job->exe,
                        "__ncu-replay",
                        "--target",
                        (char *)job->target,
                        "--variant",
                        (char *)job->variant,
                        "--device",
                        device,
                        "--seed",
                        seed,
                        "--params",
                        (char *)(job->params ? job->params : ""),
                        NULL};
        unlink(rep);
        int code = pl_exec_wait(argv, NULL, 0, job->timeout_s > 0, job->timeout_s);
        pl_buf_free(&metrics);
        char *log = pl_read_file(log_path, NULL, NULL, 0);
        if (code == 0 && pl_path_exists(rep)) {
            free(log);
            rc = 0;
            break;
        }
        /* a metric this ncu or GPU lacks: drop it, keep the rest */
        int dropped = 0;
        for (size_t m = 0; log && code != 124 && m < N_METRICS; m++)
            if (use[m] && strstr(log, "==ERROR==") && names_metric(log, metric_defs[m].name)) {
                use[m] = 0;
                dropped = 1;
            }
        if (code == 0 && log && strstr(log, "No kernels were profiled")) {
            no_kernel = 1;
            pl_snprintf(why, sizeof why,
                        "no kernel was profiled: the variant's work ran outside CUDA kernels (a copy "
                        "engine, as cudaMemcpy uses), so ncu has no counters for it");
        } else if (code == 124)
            pl_snprintf(why, sizeof why, "ncu did not finish within %.0f s", job->timeout_s);
        else if (code == 127 && !log)
            pl_snprintf(why, sizeof why, "cannot run %s", job->ncu);
        else {
            char line[400];
            ncu_error_line(log, line, sizeof line);
            pl_snprintf(why, sizeof why, "ncu exited with code %d: %s", code, line);
        }
        free(log);
        if (!dropped)
            break;
    }
    if (rc == 0) {
        char *argv[] = {(char *)job->ncu, "--import", rep, "--csv", "--page", "raw", "--print-units", "base", NULL};
        int code = pl_exec_wait(argv, csv_path, 0, job->timeout_s > 0, job->timeout_s > 0 ? job->timeout_s : 300);
        char *csv = pl_read_file(csv_path, NULL, NULL, 0);
        char sub[256];
        if (code != 0 || !csv) {
            pl_snprintf(why, sizeof why, "ncu --import %s exited with code %d", rep, code);
            rc = -1;
        } else if (pl_ncu_parse_csv(csv, out, sub, sizeof sub) != 0) {
            pl_snprintf(why, sizeof why, "%s", sub);
            rc = -1;
        }
        free(csv);
    }
    if (rc != 0) {
        free(out->error);
        out->error = pl_strdup(why);
        pl_snprintf(err, errlen, "%s", why);
        if (no_kernel)
            rc = 1;
    }
    free(rep);
    free(log_path);
    free(csv_path);
    return rc;
}

char *pl_ncu_params_args(const pl_params *p)
{
    pl_buf b = {0};
    pl_buf_append(&b, "");
    for (size_t i = 0; p && i < p->count; i++)
        pl_buf_printf(&b, "%s--%s %s", b.len ? " " : "", p->values[i].def->name, p->values[i].text);
    return b.data;
}

double pl_ncu_dram_ratio(const pl_ncu_metrics *m, double counted_bytes)
{
    double measured = m->dram_bytes_read + m->dram_bytes_write;
    return isnan(measured) || !(counted_bytes > 0) ? NAN : measured / counted_bytes;
}
