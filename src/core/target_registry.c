#include "perflab/target_registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define PL_MAX_TARGETS 512
#define PL_MAX_ALIASES 256

static const pl_target *targets[PL_MAX_TARGETS];
static size_t n_targets;
static const pl_target_alias *aliases[PL_MAX_ALIASES];
static size_t n_aliases;

const char *pl_target_full_name(const pl_target *t, char *buf, size_t len)
{
    pl_snprintf(buf, len, "%s:%s", t->group, t->name);
    return buf;
}

size_t pl_target_variant_count(const pl_target *t)
{
    size_t n = 0;
    while (t->variants && t->variants[n].name)
        n++;
    return n;
}

static void die(const pl_target *t, const char *why)
{
    fprintf(stderr, "perflab: internal error: target %s:%s %s\n", t->group, t->name, why);
    abort();
}

void pl_registry_add(const pl_target *t)
{
    char name[256];
    if (!t->group || !t->name || !t->summary)
        die(t, "lacks a group, name or summary");
    if (pl_target_variant_count(t) < 2 || strcmp(t->variants[0].name, "baseline") != 0)
        die(t, "needs two or more variants, 'baseline' first");
    for (size_t i = 0; t->variants[i].name; i++)
        if (!t->variants[i].run || !t->variants[i].technique)
            die(t, "has a variant without a run function or technique line");
    if (t->req.needs_gpu && (!t->setup || !t->check || !t->poison))
        die(t, "needs setup, poison and check");
    if (pl_registry_find(pl_target_full_name(t, name, sizeof name)))
        die(t, "is registered twice");
    if (n_targets == PL_MAX_TARGETS)
        die(t, "does not fit: raise PL_MAX_TARGETS");
    targets[n_targets++] = t;
}

size_t pl_registry_count(void)
{
    return n_targets;
}

const pl_target *pl_registry_at(size_t i)
{
    return i < n_targets ? targets[i] : NULL;
}

const pl_target *pl_registry_find(const char *full_name)
{
    char name[256];
    for (size_t i = 0; i < n_targets; i++)
        if (strcmp(pl_target_full_name(targets[i], name, sizeof name), full_name) == 0)
            return targets[i];
    return NULL;
}

static int group_exists(const char *group)
{
    for (size_t i = 0; i < n_targets; i++)
        if (strcmp(targets[i]->group, group) == 0)
            return 1;
    return 0;
}

const pl_target_alias *pl_registry_find_alias(const char *name)
{
    for (size_t i = 0; i < n_aliases; i++)
        if (strcmp(aliases[i]->name, name) == 0)
            return aliases[i];
    return NULL;
}

void pl_registry_add_alias(const pl_target_alias *a)
{
    if (!a->name || !a->targets || pl_registry_find_alias(a->name) || pl_registry_find(a->name) ||
        group_exists(a->name) || n_aliases == PL_MAX_ALIASES) {
        fprintf(stderr,
                "perflab: internal error: alias '%s' is unnamed, registered twice, a target's or group's "
                "name, or one too many (PL_MAX_ALIASES)\n",
                a->name ? a->name : "(null)");
        abort();
    }
    aliases[n_aliases++] = a;
}

const pl_target *pl_registry_find_one(const char *name)
{
    const pl_target_alias *a = pl_registry_find_alias(name);
    if (a && strchr(a->targets, ',') == NULL)
        name = a->targets;
    return pl_registry_find(name);
}

static void unknown_name_error(const char *word, char *err, size_t errlen)
{
    /* candidates: every full name, every group and every alias */
    const char **names = pl_xcalloc(2 * n_targets + n_aliases + 1, sizeof *names);
    char(*full)[256] = pl_xcalloc(n_targets + 1, sizeof *full);
    size_t n = 0;
    for (size_t i = 0; i < n_targets; i++) {
        names[n++] = pl_target_full_name(targets[i], full[i], sizeof full[i]);
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= strcmp(targets[j]->group, targets[i]->group) == 0;
        if (!seen)
            names[n++] = targets[i]->group;
    }
    for (size_t i = 0; i < n_aliases; i++)
        names[n++] = aliases[i]->name;
    char sugg[512];
    if (pl_suggest(word, names, n, 3, sugg, sizeof sugg) > 0)
        pl_snprintf(err, errlen, "unknown target '%s' (did you mean %s?); 'perflab list' shows them all", PL_ESC(word),
                    sugg);
    else
        pl_snprintf(err, errlen, "unknown target '%s'; 'perflab list' shows them all", PL_ESC(word));
    free(names);
    free(full);
}

static int selected(const pl_target **out, size_t n, const pl_target *t)
{
    for (size_t i = 0; i < n; i++)
        if (out[i] == t)
            return 1;
    return 0;
}

static int mark_word(const char *word, unsigned char *mark, int depth, char *err, size_t errlen);

/* The targets of an alias; -1 with err when it has none (saying what it would need). */
static int mark_alias(const pl_target_alias *a, unsigned char *mark, int depth, char *err, size_t errlen)
{
    if (!*a->targets) {
        pl_snprintf(err, errlen, "'%s'%s%s%s has no perflab target yet: it would need %s", a->name,
                    a->title ? " (" : "", a->title ? a->title : "", a->title ? ")" : "",
                    a->missing ? a->missing : "a target of its own");
        return -1;
    }
    char *copy = pl_strdup(a->targets), *save = NULL;
    int rc = 0;
    for (char *w = strtok_r(copy, ",", &save); w && rc == 0; w = strtok_r(NULL, ",", &save))
        rc = mark_word(w, mark, depth + 1, err, errlen);
    free(copy);
    return rc;
}

/* A word ending in '*': every target, group and alias with targets whose name starts with the rest. */
static int mark_prefix(const char *word, unsigned char *mark, int depth, char *err, size_t errlen)
{
    size_t len = strlen(word) - 1;
    char name[256];
    int hit = 0;
    for (size_t i = 0; i < n_targets; i++) {
        pl_target_full_name(targets[i], name, sizeof name);
        if (!(targets[i]->flags & PL_TARGET_SELFTEST) && strncmp(name, word, len) == 0)
            mark[i] = hit = 1;
    }
    for (size_t i = 0; i < n_aliases; i++)
        if (*aliases[i]->targets && strncmp(aliases[i]->name, word, len) == 0) {
            if (mark_alias(aliases[i], mark, depth, err, errlen) != 0)
                return -1;
            hit = 1;
        }
    if (!hit)
        pl_snprintf(err, errlen, "'%s' names no target; 'perflab list' shows them all", PL_ESC(word));
    return hit ? 0 : -1;
}

/* Mark what one word of the selection names; -1 with err when it names nothing. */
static int mark_word(const char *word, unsigned char *mark, int depth, char *err, size_t errlen)
{
    char name[256];
    int hit = 0;
    const pl_target_alias *a = pl_registry_find_alias(word);
    if (a && depth < 4)
        return mark_alias(a, mark, depth, err, errlen);
    if (*word && word[strlen(word) - 1] == '*')
        return mark_prefix(word, mark, depth, err, errlen);
    for (size_t i = 0; i < n_targets; i++) {
        const pl_target *t = targets[i];
        int is_selftest = (t->flags & PL_TARGET_SELFTEST) != 0;
        if ((strcmp(word, "all") == 0 && !is_selftest) || strcmp(word, t->group) == 0 ||
            strcmp(word, pl_target_full_name(t, name, sizeof name)) == 0) {
            mark[i] = 1;
            hit = 1;
        }
    }
    if (!hit && strcmp(word, "all") != 0) {
        unknown_name_error(word, err, errlen);
        return -1;
    }
    return 0;
}

int pl_registry_select(const char *spec, const pl_target ***out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (spec && !*spec) {
        /* given but empty (e.g. --targets "$UNSET"): not the same as not given */
        pl_snprintf(err, errlen,
                    "--targets is empty: name targets or groups (e.g. --targets memory,gemm:bf16; 'perflab list' shows "
                    "them), or leave it out for the quick suite");
        return -1;
    }
    unsigned char *mark = pl_xcalloc(n_targets + 1, 1);
    if (!spec) {
        for (size_t i = 0; i < n_targets; i++)
            mark[i] = (targets[i]->flags & PL_TARGET_QUICK) != 0;
    } else {
        char *copy = pl_strdup(spec), *save = NULL;
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            while (*w == ' ')
                w++;
            if (!*w)
                continue;
            if (mark_word(w, mark, 0, err, errlen) != 0) {
                free(copy);
                free(mark);
                return -1;
            }
        }
        free(copy);
    }
    const pl_target **list = pl_xcalloc(n_targets + 1, sizeof *list);
    for (size_t i = 0; i < n_targets; i++)
        if (mark[i] && !selected(list, *n, targets[i]))
            list[(*n)++] = targets[i];
    free(mark);
    if (*n == 0) {
        pl_snprintf(err, errlen, "the selection '%s' names no target; 'perflab list' shows them all",
                    PL_ESC(spec ? spec : ""));
        free(list);
        return -1;
    }
    *out = list;
    return 0;
}
