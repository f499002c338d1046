/* The engine's GPU step executor (engine/serve_gpu.h), or, in a build whose engine does not have it yet, the same
 * declarations with stubs that say so (serve_gpu_missing.{h,c}, deleted once the engine's lands). */
#ifndef PERFLAB_SERVE_SERVE_GPU_API_H
#define PERFLAB_SERVE_SERVE_GPU_API_H

#if defined(__has_include)
#if __has_include("engine/serve_gpu.h")
#define PL_SERVE_HAVE_GPU_EXECUTOR 1
#endif
#endif

#ifdef PL_SERVE_HAVE_GPU_EXECUTOR
#include "engine/serve_gpu.h"
#else
#include "serve/serve_gpu_missing.h"
#endif

#endif
