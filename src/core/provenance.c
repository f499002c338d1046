#include "core/provenance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "core/expectations.h"
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
        p->hardware_key = pl_expectations_key(names, p->n_gpus);
        free(names);
    } else {
        p->driver_version = pl_strdup("none");
        p->cuda_runtime_version = inv ? inv->cuda_runtime_version : 0;
        p->hardware_key = pl_expectations_key(NULL, 0);
    }
}
