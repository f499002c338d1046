/* perflab expectations check|show|compare|update: the per-GPU expectation files, with no GPU needed. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/expectations.h"
#include "core/results_json.h"
#include "core/util.h"
#include "core/artifacts.h"
#include "core/run_report.h"
#include "core/table.h"

typedef struct exp_args {
    const char *dir, *key;
    int accept_regressions, help;
} exp_args;

static void usage(const pl_option *opts)
{
    printf("usage: perflab expectations <check|show|compare|update> [ARGS] [options]\n\n"
           "  check [FILE...]      validate expectation files (default: every file in the directory)\n"
           "  show [KEY]           list the expected medians of one hardware key (default: every file)\n"
           "  compare RUN_DIR      judge a stored run against the expectations of its hardware key;\n"
           "                       exit 1 on a regression (unless --accept-regressions)\n"
           "  update RUN_DIR       store the run's medians as the expectations of its hardware key\n\n"
           "A regression is a median slower than expected by more than both the stored tolerance and\n"
           "the measured noise. The hardware key comes from the run's GPUs (h100_sxm, h200, 2x_h200, ...);\n"
           "PERFLAB_EXPECTATION_KEY or --key overrides it.\n\noptions:\n");
    pl_options_help(stdout, opts);
}

/* The file of a key, or NULL with the key refused on stderr: a key names a file, so only a plain name is one. */
static char *path_for_key(const char *verb, const exp_args *a, const char *key, const char *from)
{
    char err[1024];
    char *path = pl_expectations_path(a->dir, key, from, err, sizeof err);
    if (!path)
        pl_usage_error(verb, err);
    return path;
}

/* Every *.json under the expectations directory, sorted. */
static size_t list_files(const exp_args *a, char ***out)
{
    char *dir = pl_expectations_dir(a->dir);
    DIR *d = opendir(dir);
    size_t n = 0;
    *out = NULL;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            size_t len = strlen(e->d_name);
            if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
                continue;
            *(char **)pl_push(out, &n, NULL, sizeof **out) = pl_path_join(dir, e->d_name);
        }
        closedir(d);
    }
    free(dir);
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful of files */
        for (size_t j = i; j > 0 && strcmp((*out)[j - 1], (*out)[j]) > 0; j--) {
            char *t = (*out)[j];
            (*out)[j] = (*out)[j - 1];
            (*out)[j - 1] = t;
        }
    return n;
}

/* The key a file claims for itself: its name without ".json". */
static char *key_of_path(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    return pl_strfmt("%.*s", (int)(len > 5 ? len - 5 : len), base);
}

static void free_files(char **files, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
}

static int cmd_check(const exp_args *a, const pl_strlist *files_given)
{
    char **files = NULL;
    size_t n = 0;
    if (files_given->n) {
        files = pl_xcalloc(files_given->n, sizeof *files);
        for (size_t i = 0; i < files_given->n; i++)
            files[n++] = pl_strdup(files_given->items[i]);
    } else {
        n = list_files(a, &files);
    }
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        char err[1024];
        char *key = key_of_path(files[i]);
        pl_expectations e;
        int rc = pl_expectations_load(files[i], key, &e, err, sizeof err);
        if (rc < 0) {
            fprintf(stderr, "perflab expectations: %s\n", err);
            bad = 1;
        } else if (rc == 1) {
            fprintf(stderr, "perflab expectations: %s: no such file\n", PL_ESC(files[i]));
            bad = 1;
        } else {
            printf("ok %s: %zu entries for %s\n", PL_ESC(files[i]), e.n_entries, PL_ESC(e.hardware_key));
        }
        pl_expectations_free(&e);
        free(key);
    }
    if (n == 0)
        printf("no expectation files in %s\n", a->dir ? PL_ESC(a->dir) : "the expectations directory");
    free_files(files, n);
    return bad ? PL_EXIT_USAGE : PL_EXIT_OK;
}

static void show_one(const pl_expectations *e, const char *path)
{
    static const char *const spec[] = {"target", "variant", ">median", ">noise", ">tolerance", "params", "updated"};
    printf("%s (%s; %s, perflab %s)\n", PL_ESC(e->hardware_key), PL_ESC(path), PL_ESC(e->gpu_name ? e->gpu_name : "?"),
           PL_ESC(e->perflab_version ? e->perflab_version : "?"));
    pl_table *t = pl_table_new(7, spec);
    for (size_t i = 0; i < e->n_entries; i++) {
        const pl_expect_entry *x = &e->entries[i];
        size_t row = pl_table_row(t);
        char b[32];
        pl_table_set(t, row, 0, "%s", x->target);
        pl_table_set(t, row, 1, "%s", x->variant);
        pl_table_set(t, row, 2, "%s", pl_format_ms(x->median_ms, b, sizeof b));
        pl_table_set(t, row, 3, "%.1f%%", 100 * x->rel_noise);
        pl_table_set(t, row, 4, "%.0f%%", 100 * x->tolerance);
        pl_table_set(t, row, 5, "%s", x->params ? x->params : "");
        pl_table_set(t, row, 6, "%s", x->updated_at ? x->updated_at : "");
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

static int cmd_show(const exp_args *a, const pl_strlist *pos)
{
    char **files = NULL;
    size_t n = 0;
    if (pos->n || a->key) {
        char *path = path_for_key("expectations show", a, a->key ? a->key : pos->items[0], a->key ? "--key" : "KEY");
        if (!path)
            return PL_EXIT_USAGE;
        files = pl_xcalloc(1, sizeof *files);
        files[n++] = path;
    } else {
        n = list_files(a, &files);
    }
    int rc = PL_EXIT_OK;
    for (size_t i = 0; i < n; i++) {
        char err[1024];
        char *key = key_of_path(files[i]);
        pl_expectations e;
        int lr = pl_expectations_load(files[i], key, &e, err, sizeof err);
        if (lr == 0)
            show_one(&e, files[i]);
        else {
            if (lr < 0)
                fprintf(stderr, "perflab expectations: %s\n", err);
            else
                fprintf(stderr,
                        "perflab expectations: %s does not exist (store some with perflab run "
                        "--update-expectations)\n",
                        PL_ESC(files[i]));
            rc = PL_EXIT_USAGE;
        }
        pl_expectations_free(&e);
        free(key);
    }
    free_files(files, n);
    return rc;
}

/* compare and update both start from a stored run and the expectation file of its key. */
static int load_run_and_file(const char *verb, const exp_args *a, const pl_strlist *pos, pl_run *run,
                             pl_expectations *e, char **path)
{
    char err[1024];
    *path = NULL;
    if (pos->n != 1)
        return pl_usage_error(verb, "needs one run: an artifacts/<run_id> folder");
    if (pl_run_load(pos->items[0], run, err, sizeof err) != 0)
        return pl_usage_error(verb, err);
    /* --key, else PERFLAB_EXPECTATION_KEY, else the key the run was measured under */
    const char *env = getenv("PERFLAB_EXPECTATION_KEY");
    const char *key = a->key ? a->key : env && *env ? env : NULL;
    if (key) {
        free(run->prov.hardware_key);
        run->prov.hardware_key = pl_strdup(key);
    }
    if (!run->prov.hardware_key || !*run->prov.hardware_key) {
        pl_run_free(run);
        return pl_usage_error(verb, "the run names no hardware key: pass --key");
    }
    *path = path_for_key(verb, a, run->prov.hardware_key,
                         a->key        ? "--key"
                         : env && *env ? "PERFLAB_EXPECTATION_KEY"
                                       : "the run's provenance.hardware_key");
    if (!*path) {
        pl_run_free(run);
        return PL_EXIT_USAGE;
    }
    if (pl_expectations_load(*path, run->prov.hardware_key, e, err, sizeof err) < 0) {
        pl_run_free(run);
        free(*path);
        *path = NULL;
        return pl_usage_error(verb, err);
    }
    return 0;
}

static int cmd_compare(const exp_args *a, const pl_strlist *pos)
{
    pl_run run;
    pl_expectations e;
    char *path;
    int rc = load_run_and_file("expectations compare", a, pos, &run, &e, &path);
    if (rc != 0)
        return rc;
    pl_expect_report_free(&run.expectations);
    run.expectations.present = 1;
    pl_expectations_compare(&e, &run, &run.expectations);
    run.expectations.key = pl_strdup(run.prov.hardware_key);
    run.expectations.file = pl_strdup(path);
    run.expectations.file_found = pl_path_exists(path);
    run.expectations.accepted = a->accept_regressions;
    pl_run_print(&run, stdout);
    rc = run.expectations.regressions && !a->accept_regressions ? PL_EXIT_FAILED : PL_EXIT_OK;
    free(path);
    pl_expectations_free(&e);
    pl_run_free(&run);
    return rc;
}

static int cmd_update(const exp_args *a, const pl_strlist *pos)
{
    pl_run run;
    pl_expectations e;
    char *path;
    int rc = load_run_and_file("expectations update", a, pos, &run, &e, &path);
    if (rc != 0)
        return rc;
    char err[1024];
    size_t written = pl_expectations_update(&e, &run);
    if (pl_expectations_save(&e, path, err, sizeof err) != 0)
        rc = pl_usage_error("expectations update", err);
    else
        printf("wrote %zu entries of %s to %s\n", written, PL_ESC(run.prov.hardware_key), PL_ESC(path));
    free(path);
    pl_expectations_free(&e);
    pl_run_free(&run);
    return rc;
}

int pl_cmd_expectations(int argc, char **argv)
{
    exp_args a = {0};
    const pl_option opts[] = {
        {"expectations-dir", 0, PL_OPT_STRING, &a.dir, "D",
         "where <hardware_key>.json files are (default ./expectations)", 0, 0},
        {"key", 0, PL_OPT_STRING, &a.key, "KEY", "use this hardware key instead of the run's", 0, 0},
        {"accept-regressions", 0, PL_OPT_FLAG, &a.accept_regressions, NULL, "compare: exit 0 despite regressions", 0,
         0},
        {"help", 'h', PL_OPT_FLAG, &a.help, NULL, "show this help", 0, 0},
        {0},
    };
    pl_strlist pos = {0};
    char err[1024];
    if (pl_options_parse("expectations", opts, argc, argv, &pos, err, sizeof err) != 0)
        return pl_usage_error("expectations", err);
    if (a.help) {
        usage(opts);
        pl_strlist_free(&pos);
        return PL_EXIT_OK;
    }
    if (pos.n == 0)
        return pl_usage_error("expectations", "needs a subcommand: check, show, compare or update "
                                              "(perflab expectations --help describes them)");
    const char *sub = pos.items[0];
    pl_strlist rest = {pos.items + 1, pos.n - 1};
    int rc;
    if (strcmp(sub, "check") == 0)
        rc = cmd_check(&a, &rest);
    else if (strcmp(sub, "show") == 0)
        rc = cmd_show(&a, &rest);
    else if (strcmp(sub, "compare") == 0)
        rc = cmd_compare(&a, &rest);
    else if (strcmp(sub, "update") == 0)
        rc = cmd_update(&a, &rest);
    else {
        pl_snprintf(err, sizeof err, "unknown subcommand '%s': use check, show, compare or update", PL_ESC(sub));
        rc = pl_usage_error("expectations", err);
    }
    pl_strlist_free(&pos);
    return rc;
}
