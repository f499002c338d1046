/* Text for a target's messages (pl_fail, parameter errors, notes). */
#ifndef PERFLAB_TEXT_H
#define PERFLAB_TEXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* snprintf that, when it has to cut, cuts at a UTF-8 character boundary. */
void pl_snprintf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
