/* perflab's public C API: everything a target needs. */
#ifndef PERFLAB_PERFLAB_H
#define PERFLAB_PERFLAB_H

#include "perflab/ctx.h"
#include "perflab/declare.h"
#include "perflab/device.h"
#include "perflab/params.h"
#include "perflab/target.h"
#include "perflab/target_registry.h"
#include "perflab/text.h"
#include "perflab/verify.h"

#endif
