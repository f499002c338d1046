/* perflab list: every target with its summary, variants, requirements and parameters. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/util.h"
#include "perflab/target_registry.h"

const char *pl_requirements_text(const pl_requirements *r, char *buf, size_t len)
{
    pl_buf b = {0};
    if (!r->needs_gpu && !r->min_cc && !r->features)
        pl_buf_append(&b, "host only");
    else
        pl_buf_append(&b, "GPU");
    if (r->min_cc)
        pl_buf_printf(&b, " sm_%d+", r->min_cc);
    if (r->max_cc)
        pl_buf_printf(&b, " (at most sm_%d)", r->max_cc);
    static const struct {
        unsigned bit;
        const char *name;
    } feats[] = {{PL_FEAT_WGMMA, "wgmma"},
                 {PL_FEAT_TMA, "TMA"},
                 {PL_FEAT_CLUSTERS, "clusters"},
                 {PL_FEAT_TCGEN05, "tcgen05"},
                 {PL_FEAT_FP8, "FP8"}};
    for (size_t i = 0; i < sizeof feats / sizeof feats[0]; i++)
        if (r->features & feats[i].bit)
            pl_buf_printf(&b, ", %s", feats[i].name);
    if (r->min_gpus > 1)
        pl_buf_printf(&b, ", %d GPUs", r->min_gpus);
    pl_snprintf(buf, len, "%s", b.data);
    pl_buf_free(&b);
    return buf;
}

static const char *suite_of(const pl_target *t)
{
    int quick = (t->flags & PL_TARGET_QUICK) != 0, selftest = (t->flags & PL_TARGET_SELFTEST) != 0;
    return quick && selftest ? "quick, self-test" : selftest ? "self-test" : quick ? "quick" : "";
}

static const char *type_name(pl_param_type t)
{
    static const char *const names[] = {"int", "float", "string", "bool"};
    return names[t];
}

static json_t *target_json(const pl_target *t)
{
    char name[256], req[256];
    json_t *vs = json_array();
    for (const pl_variant *v = t->variants; v->name; v++) {
        json_t *vj = json_pack("{s:s, s:s, s:b, s:b}", "name", v->name, "technique", v->technique, "reference",
                               (v->flags & PL_VARIANT_REFERENCE) != 0, "graph_capturable",
                               (v->flags & PL_VARIANT_NO_GRAPH) == 0);
        if (v->flags & PL_VARIANT_HOST_TIMED) /* its time is the host's work: expectations gate it by host */
            json_object_set_new(vj, "host_timed", json_true());
        if (v->req.needs_gpu || v->req.min_cc || v->req.features)
            json_object_set_new(vj, "requires", json_string(pl_requirements_text(&v->req, req, sizeof req)));
        json_array_append_new(vs, vj);
    }
    json_t *ps = json_array();
    for (const pl_param_def *p = t->params; p && p->name; p++) {
        json_t *pj = json_pack("{s:s, s:s, s:s, s:s}", "name", p->name, "type", type_name(p->type), "default",
                               p->default_value, "help", p->help ? p->help : "");
        if (p->choices)
            json_object_set_new(pj, "choices", json_string(p->choices));
        if (p->small_value)
            json_object_set_new(pj, "small", json_string(p->small_value));
        json_array_append_new(ps, pj);
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:o, s:o}", "name", pl_target_full_name(t, name, sizeof name),
                     "group", t->group, "summary", t->summary, "suite", suite_of(t), "requires",
                     pl_requirements_text(&t->req, req, sizeof req), "rounds",
                     t->flags & PL_TARGET_POWER_BOUND ? PL_POWER_BOUND_ROUNDS : 1, "variants", vs, "parameters", ps);
}

static void print_target(const pl_target *t)
{
    char name[256], req[256];
    const char *suite = suite_of(t);
    printf("%s%s%s%s  (%s)\n", pl_target_full_name(t, name, sizeof name), *suite ? "  [" : "", suite, *suite ? "]" : "",
           pl_requirements_text(&t->req, req, sizeof req));
    printf("  %s\n", t->summary);
    if (t->flags & PL_TARGET_POWER_BOUND)
        printf("  power-bound: its variants are timed in %d interleaved rounds (--rounds), keeping samples down to %.0f%% "
               "of the max SM clock (--throttle-threshold)\n",
               PL_POWER_BOUND_ROUNDS, 100 * PL_POWER_BOUND_THROTTLE);
    for (const pl_variant *v = t->variants; v->name; v++)
        printf("  - %-14s %s%s%s\n", v->name, v->technique, v->flags & PL_VARIANT_REFERENCE ? " [reference]" : "",
               v->flags & PL_VARIANT_HOST_TIMED ? " [host-timed]" : "");
    for (const pl_param_def *p = t->params; p && p->name; p++)
        printf("    --%s %s (%s%s%s%s%s): %s\n", p->name, p->default_value, type_name(p->type), p->choices ? ": " : "",
               p->choices ? p->choices : "", p->small_value ? "; --small: " : "", p->small_value ? p->small_value : "",
               p->help ? p->help : "");
}

/* --chapter N (or chN, or any of the seed lab's names): the alias it names and the targets it selects; an empty
 * chapter prints what it would need. -1 with err when the name is none of them. */
static int chapter_selection(const char *chapter, int json, const pl_target ***sel, size_t *n, char *err, size_t errlen)
{
    FILE *out = json ? stderr : stdout; /* --json keeps stdout JSON alone */
    char name[64];
    const char *digits = chapter + strspn(chapter, "0123456789");
    pl_snprintf(name, sizeof name, "%s%s", *chapter && !*digits ? "ch" : "", chapter);
    const pl_target_alias *a = pl_registry_find_alias(name);
    if (!a) {
        pl_snprintf(err, errlen,
                    "--chapter '%s' is neither a chapter (1-20) nor one of the seed lab's names "
                    "(labs/seed_names.def)",
                    PL_ESC(chapter));
        return -1;
    }
    if (!*a->targets) {
        fprintf(out, "%s%s%s%s: no perflab target yet; it would need %s\n", a->name, a->title ? " (" : "",
                a->title ? a->title : "", a->title ? ")" : "", a->missing ? a->missing : "a target of its own");
        return 0;
    }
    fprintf(out, "%s%s%s%s: %s\n", a->name, a->title ? " (" : "", a->title ? a->title : "", a->title ? ")" : "",
            a->targets);
    if (a->missing)
        fprintf(out, "  not covered: %s\n", a->missing);
    return pl_registry_select(a->name, sel, n, err, errlen);
}

static int in_selection(const pl_target *const *sel, size_t n, const pl_target *t)
{
    for (size_t i = 0; i < n; i++)
        if (sel[i] == t)
            return 1;
    return 0;
}

int pl_cmd_list(int argc, char **argv)
{
    const char *group = NULL, *chapter = NULL;
    int json = 0, help = 0;
    const pl_option opts[] = {
        {"group", 'g', PL_OPT_STRING, &group, "G", "only the targets of group G", 0, 0},
        {"chapter", 'c', PL_OPT_STRING, &chapter, "N",
         "only the targets covering chapter N of the seed lab (1-20, ch7), or a seed lab name", 0, 0},
        {"json", 0, PL_OPT_FLAG, &json, NULL, "print JSON instead of text", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &help, NULL, "show this help", 0, 0},
        {0},
    };
    pl_strlist pos = {0};
    char err[512];
    if (pl_options_parse("list", opts, argc, argv, &pos, err, sizeof err) != 0)
        return pl_usage_error("list", err);
    if (help) {
        printf("usage: perflab list [--group G] [--chapter N] [--json]\n\nEvery target: its summary, suite (quick = "
               "the default "
               "run), requirements,\nvariants (baseline first) and parameters with defaults (set them with\n"
               "perflab run --target-extra-arg 'group:name=--param value').\n\noptions:\n");
        pl_options_help(stdout, opts);
        pl_strlist_free(&pos);
        return PL_EXIT_OK;
    }
    if (pos.n) {
        pl_snprintf(err, sizeof err, "unexpected argument '%s'; to list one group use --group %s", PL_ESC(pos.items[0]),
                    PL_ESC(pos.items[0]));
        pl_strlist_free(&pos);
        return pl_usage_error("list", err);
    }
    pl_strlist_free(&pos);
    const pl_target **sel = NULL;
    size_t n_sel = 0;
    if (chapter && chapter_selection(chapter, json, &sel, &n_sel, err, sizeof err) != 0)
        return pl_usage_error("list", err);
    if (chapter && !sel)
        return PL_EXIT_OK; /* an empty chapter: said what it would need */
    size_t shown = 0;
    json_t *all = json_array();
    for (size_t i = 0; i < pl_registry_count(); i++) {
        const pl_target *t = pl_registry_at(i);
        if ((group && strcmp(group, t->group) != 0) || (chapter && !in_selection(sel, n_sel, t)))
            continue;
        shown++;
        if (json)
            json_array_append_new(all, target_json(t));
        else
            print_target(t);
    }
    free(sel);
    if (group && shown == 0) {
        json_decref(all);
        pl_snprintf(err, sizeof err, "no target in group '%s'; 'perflab list' shows every group", PL_ESC(group));
        return pl_usage_error("list", err);
    }
    if (json) {
        char *s = json_dumps(all, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(s);
        free(s);
    }
    json_decref(all);
    return PL_EXIT_OK;
}
