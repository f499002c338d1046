/* The one way a string from a file or an argument reaches a terminal, a log or a message: control characters
 * (ESC, OSC, BEL, DEL, the C1 range), newlines and bytes that are not UTF-8 are shown escaped, so that crafted
 * names cannot move the cursor, retitle a terminal or split a one-line error in two. */
#ifndef PERFLAB_CORE_ESCAPE_H
#define PERFLAB_CORE_ESCAPE_H

#include <stddef.h>

struct pl_buf;

/* User input echoed in a message: control characters and bytes that are not UTF-8 become \n, \t, \r or \xNN, and
 * input longer than max_bytes (0: no limit) is cut there, at a character boundary, with "…" and its length
 * ("… (100000 bytes)"). Printable text and valid UTF-8 pass unchanged, so escaping twice changes nothing. */
void pl_buf_append_escaped(struct pl_buf *b, const char *s, size_t max_bytes);
/* The same into buf (cut to fit); returns buf. PL_ESC(s) is the form for a message: it escapes into a buffer that
 * lives until the end of the enclosing statement's block, cut at PL_ESC_MAX bytes of input, e.g.
 *   pl_snprintf(err, errlen, "unknown target '%s'", PL_ESC(word)); */
const char *pl_escape(const char *s, size_t max_bytes, char *buf, size_t len);
#define PL_ESC_MAX 200
#define PL_ESC_BUF (4 * PL_ESC_MAX + 32)
#define PL_ESC(s)  pl_escape((s), PL_ESC_MAX, (char[PL_ESC_BUF]){0}, PL_ESC_BUF)

/* Escaped with no length limit, malloc'd: for text printed whole (a table cell, a JSON value for a path). */
char *pl_escape_dup(const char *s);
/* The length of the valid UTF-8 character at s (shortest form, no surrogates): 1 to 4, or 0 for a byte that does
 * not start one. */
size_t pl_utf8_length(const char *s);
/* Whether s is valid UTF-8 (what JSON strings and XML text must be). */
int pl_is_utf8(const char *s);
/* Whether s is printed unchanged by the escaping above (valid UTF-8 without control characters). */
int pl_is_printable(const char *s);

#endif
