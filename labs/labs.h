/* Every target perflab ships, registered in one place: the list is labs/targets.def. */
#ifndef PERFLAB_LABS_H
#define PERFLAB_LABS_H

#include "perflab/target.h"

/* Adds every target of labs/targets.def to the registry, in its order (idempotent). */
void pl_labs_register_all(void);
/* The seed lab's names for them (labs/seed_names.def); pl_labs_register_all adds them after the targets. */
void pl_labs_register_seed_names(void);

#endif
