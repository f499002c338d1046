/* The targets of labs/targets.def: declared and registered from the one list. */
#include "labs.h"
#include "perflab/target_registry.h"

#define PL_TARGET(sym) extern const pl_target pl_target_##sym;
#include "targets.def"
#undef PL_TARGET

void pl_labs_register_all(void)
{
    static const pl_target *const all[] = {
#define PL_TARGET(sym) &pl_target_##sym,
#include "targets.def"
#undef PL_TARGET
    };
    if (pl_registry_count() > 0)
        return;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pl_registry_add(all[i]);
    pl_labs_register_seed_names();
}
