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

/* Resolve a selection: NULL (not given) = the default quick suite; "" (given, empty) is refused; "all" = every
 * target but the self-tests; a comma list of "group:name" and group names. Unknown names fail with the closest
 * known names suggested.
 * On success *out is a malloc'd array (caller frees) in registry order without duplicates. */
int pl_registry_select(const char *spec, const pl_target ***out, size_t *n, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
