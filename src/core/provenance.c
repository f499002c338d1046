#include "core/provenance.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "perflab_build_info.h"

char *pl_utc_timestamp(void)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char buf[32];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return pl_strdup(buf);
}

char *pl_new_run_id(void)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char buf[32];
    strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned tag = ((unsigned)getpid() * 2654435761u) ^ (unsigned)ts.tv_nsec;
    return pl_strfmt("%s-%04x", buf, tag & 0xffff);
}

static char *cpu_model(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return pl_strdup("unknown");
    char line[512];
    char *model = NULL;
    int cpus = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "processor", 9) == 0)
            cpus++;
        if (!model && strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon += 2;
                colon[strcspn(colon, "\n")] = '\0';
                model = pl_strdup(colon);
            }
        }
    }
    fclose(f);
    char *out = pl_strfmt("%s (%d logical CPUs)", model ? model : "unknown", cpus);
    free(model);
    return out;
}

/* The command line as one line of valid UTF-8 (JSON strings must be): control characters and bytes that are not
 * UTF-8 are escaped (\xff), never a reason to drop the line. */
static char *join_args(int argc, char **argv)
{
    pl_buf b = {0};
    pl_buf_append(&b, "perflab");
    for (int i = 1; i < argc; i++) {
        int quote = strpbrk(argv[i], " \t'\"") != NULL;
        pl_buf_append(&b, quote ? " '" : " ");
        pl_buf_append_escaped(&b, argv[i], 0);
        if (quote)
            pl_buf_append(&b, "'");
    }
    return b.data;
}

void pl_provenance_collect(pl_provenance *p, int argc, char **argv, const pl_gpu_inventory *inv)
{
    memset(p, 0, sizeof *p);
    p->perflab_version = pl_strdup(PERFLAB_VERSION);
    p->git_commit = pl_strdup(PERFLAB_GIT_COMMIT);
    p->command_line = join_args(argc, argv);
    p->started_at = pl_utc_timestamp();
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    p->hostname = pl_strdup(host);
    struct utsname u;
    p->os = uname(&u) == 0 ? pl_strfmt("%s %s %s", u.sysname, u.release, u.machine) : pl_strdup("unknown");
    p->cpu = cpu_model();
    /* Virtual machines all report the same host name ("vm") and CPU ("Intel(R) Xeon(R) Processor"), so nothing
     * read here tells one host from another: the user names a host they keep the same (docs/expectations.md). */
    const char *host_key = getenv("PERFLAB_HOST_KEY");
    p->host_key = host_key && *host_key ? pl_strdup(host_key) : NULL;
    if (inv && inv->device_count > 0) {
        p->driver_version = pl_strdup(inv->driver_version[0] ? inv->driver_version : "unknown");
        p->cuda_driver_version = inv->cuda_driver_version;
        p->cuda_runtime_version = inv->cuda_runtime_version;
        p->n_gpus = (size_t)inv->device_count;
        p->gpus = pl_xcalloc(p->n_gpus, sizeof *p->gpus);
        const char **names = pl_xcalloc(p->n_gpus, sizeof *names);
        for (size_t i = 0; i < p->n_gpus; i++) {
            p->gpus[i] = inv->records[i];
            p->gpus[i].name = pl_strdup(inv->records[i].name);
            p->gpus[i].pci_bus_id = pl_strdup(inv->records[i].pci_bus_id);
            names[i] = p->gpus[i].name;
        }
        p->hardware_key = pl_hardware_key(names, p->n_gpus);
        free(names);
    } else {
        p->driver_version = pl_strdup("none");
        p->cuda_runtime_version = inv ? inv->cuda_runtime_version : 0;
        p->hardware_key = pl_hardware_key(NULL, 0);
    }
}

/* ---------------------------------------------------------------- hardware keys */

/* Splits a lower-cased GPU name into alphanumeric words, so that "gh200" never matches "h200". */
typedef struct name_words {
    char buf[256];
    const char *word[32];
    size_t n;
} name_words;

static void split_words(const char *name, name_words *w)
{
    size_t len = 0;
    w->n = 0;
    int in_word = 0;
    for (const char *p = name; *p && len + 1 < sizeof w->buf; p++) {
        int c = tolower((unsigned char)*p);
        if (isalnum(c)) {
            if (!in_word && w->n < sizeof w->word / sizeof w->word[0])
                w->word[w->n++] = &w->buf[len];
            in_word = 1;
            w->buf[len++] = (char)c;
        } else if (in_word) {
            in_word = 0;
            w->buf[len++] = '\0';
        }
    }
    w->buf[len] = '\0';
}

static int has_word(const name_words *w, const char *word)
{
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->word[i], word) == 0)
            return 1;
    return 0;
}

/* Lower-case, non-alphanumerics folded to one '_', without the vendor prefix (every name starts "NVIDIA"). */
static char *fold_name(const name_words *w)
{
    pl_buf b = {0};
    for (size_t i = 0; i < w->n; i++) {
        if (i == 0 && w->n > 1 && strcmp(w->word[0], "nvidia") == 0)
            continue;
        pl_buf_printf(&b, "%s%s", b.len ? "_" : "", w->word[i]);
    }
    return b.data ? b.data : pl_strdup("unknown");
}

static char *key_of_one_gpu(const char *name)
{
    name_words w;
    split_words(name ? name : "", &w);
    /* Variants whose form factor changes the numbers (clocks, power, memory) get their own key. */
    if (has_word(&w, "h100"))
        return pl_strdup(has_word(&w, "pcie") ? "h100_pcie" : has_word(&w, "nvl") ? "h100_nvl" : "h100_sxm");
    if (has_word(&w, "h200"))
        return pl_strdup(has_word(&w, "nvl") ? "h200_nvl" : "h200");
    if (has_word(&w, "a100"))
        return pl_strdup(has_word(&w, "pcie") ? "a100_pcie" : "a100_sxm");
    static const char *const plain[] = {"gh200", "gb200", "gb300", "b200", "b300", "gb10", "l40s"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (has_word(&w, plain[i]))
            return pl_strdup(plain[i]);
    return fold_name(&w);
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *pl_hardware_key_from_names(const char *const *gpu_names, size_t n)
{
    if (n == 0)
        return pl_strdup("no_gpu");
    char **keys = pl_xmalloc(n * sizeof *keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = key_of_one_gpu(gpu_names[i]);
    /* sorted, so that the key does not depend on the order of the ordinals */
    qsort(keys, n, sizeof *keys, cmp_str_ptr);
    pl_buf b = {0};
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && strcmp(keys[j], keys[i]) == 0)
            j++;
        if (b.len)
            pl_buf_append(&b, "+");
        if (j - i > 1)
            pl_buf_printf(&b, "%zux_", j - i);
        pl_buf_append(&b, keys[i]);
        i = j;
    }
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    return b.data;
}

char *pl_hardware_key(const char *const *gpu_names, size_t n)
{
    const char *env = getenv("PERFLAB_EXPECTATION_KEY");
    if (env && *env)
        return pl_strdup(env);
    return pl_hardware_key_from_names(gpu_names, n);
}
