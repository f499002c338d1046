/* The seed lab's names (labs/seed_names.def) as aliases of perflab's targets: its target names and its chapters. */
#include "labs.h"
#include "perflab/target_registry.h"

#define PL_STR2(x) #x
#define PL_STR(x)  PL_STR2(x)

static const pl_target_alias seed_names[] = {
#define PL_SEED_NAME(name, targets, missing)        {name, targets, NULL, missing},
#define PL_SEED_CHAPTER(n, focus, targets, missing) {"ch" PL_STR(n), targets, focus, missing},
#include "seed_names.def"
#undef PL_SEED_NAME
#undef PL_SEED_CHAPTER
};

void pl_labs_register_seed_names(void)
{
    for (size_t i = 0; i < sizeof seed_names / sizeof seed_names[0]; i++)
        pl_registry_add_alias(&seed_names[i]);
}
