/* Every target perflab ships, registered in one place: the list is labs/targets.def. */
#ifndef PERFLAB_LABS_H
#define PERFLAB_LABS_H

#include "perflab/target.h"

/* Adds every target of labs/targets.def to the registry, in its order (idempotent). */
void pl_labs_register_all(void);

#endif
