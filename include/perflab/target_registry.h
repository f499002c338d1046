/* The registry of targets. Labs add theirs at start-up (pl_labs_register_all); the core only looks them up. */
#ifndef PERFLAB_TARGET_REGISTRY_H
#define PERFLAB_TARGET_REGISTRY_H

#include <stddef.h>
#include "perflab/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds a target; aborts on a duplicate name or a target without a baseline-first pair of variants, which
 * are programming errors. */
void pl_registry_add(const pl_target *t);
size_t pl_registry_count(void);
const pl_target *pl_registry_at(size_t i);
/* By "group:name"; NULL when absent. */
const pl_target *pl_registry_find(const char *full_name);
/* "group:name" of a target into buf. */
const char *pl_target_full_name(const pl_target *t, char *buf, size_t len);
size_t pl_target_variant_count(const pl_target *t);

/* Another name for a set of targets: the seed lab's target names ("labs/fullstack_cluster:moe_readiness") and its
 * chapters ("ch7"). Labs add theirs at start-up (labs/seed_names.def); the core resolves them in selections. */
typedef struct pl_target_alias {
    const char *name;    /* as the user writes it */
    const char *targets; /* a comma list of targets and groups; "" when perflab has none for it */
    const char *title;   /* what it covers (a chapter's focus), or NULL */
    const char *missing; /* when targets is "" (or covers part of it): what it would need; else NULL */
} pl_target_alias;

/* Adds an alias; aborts on a duplicate or one that names an existing target or group (programming errors). */
void pl_registry_add_alias(const pl_target_alias *a);
const pl_target_alias *pl_registry_find_alias(const char *name); /* NULL when absent */
/* The one target an alias or a full name names (NULL when it names none, a group, or several). */
const pl_target *pl_registry_find_one(const char *name);

/* Resolve a selection: NULL (not given) = the default quick suite; "" (given, empty) is refused; "all" = every
 * target but the self-tests; a comma list of "group:name", group names and aliases; a word ending in '*' selects
 * every target, group and alias (that has targets) it starts. Unknown names fail with the closest known names
 * suggested; an alias with no target fails saying what it would need.
 * On success *out is a malloc'd array (caller frees) in registry order without duplicates. */
int pl_registry_select(const char *spec, const pl_target ***out, size_t *n, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
