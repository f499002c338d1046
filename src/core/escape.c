/* Escaping for print (escape.h). */
#include "core/escape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* The length of the valid UTF-8 sequence at p (shortest form, no surrogates), or 0. */
static size_t utf8_sequence(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        n = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 3;
        lo = p[0] == 0xe0 ? 0xa0 : 0x80;
        hi = p[0] == 0xed ? 0x9f : 0xbf;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4;
        lo = p[0] == 0xf0 ? 0x90 : 0x80;
        hi = p[0] == 0xf4 ? 0x8f : 0xbf;
    } else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* Three-byte characters that change how a line reads without being seen: the line and paragraph separators
 * (U+2028, U+2029), the bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069) and the
 * noncharacters U+FFFE, U+FFFF (which XML refuses too). */
static int invisible(const unsigned char *p)
{
    const unsigned cp = ((unsigned)(p[0] & 0x0f) << 12) | ((unsigned)(p[1] & 0x3f) << 6) | (unsigned)(p[2] & 0x3f);
    return (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfffe || cp == 0xffff;
}

void pl_buf_append_escaped(pl_buf *b, const char *s, size_t max_bytes)
{
    if (!s) {
        pl_buf_append(b, "(null)");
        return;
    }
    const unsigned char *p = (const unsigned char *)s;
    const size_t total = strlen(s);
    size_t used = 0;
    pl_buf_appendn(b, "", 0);
    while (p[used]) {
        const size_t n = utf8_sequence(p + used);
        const size_t take = n ? n : 1;
        if (max_bytes && used + take > max_bytes) {
            pl_buf_printf(b, "… (%zu bytes)", total);
            return;
        }
        const unsigned char c = p[used];
        /* C1 controls (U+0080..U+009F: 0xc2 0x9b is a CSI) and the invisible characters above */
        const int unseen = (n == 2 && c == 0xc2 && p[used + 1] < 0xa0) || (n == 3 && invisible(p + used));
        if (n == 1 && c >= 0x20 && c != 0x7f)
            pl_buf_appendn(b, (const char *)p + used, 1);
        else if (c == '\n')
            pl_buf_append(b, "\\n");
        else if (c == '\t')
            pl_buf_append(b, "\\t");
        else if (c == '\r')
            pl_buf_append(b, "\\r");
        else if (n > 1 && !unseen)
            pl_buf_appendn(b, (const char *)p + used, n);
        else
            for (size_t i = 0; i < take; i++)
                pl_buf_printf(b, "\\x%02x", p[used + i]);
        used += take;
    }
}

const char *pl_escape(const char *s, size_t max_bytes, char *buf, size_t len)
{
    if (!buf || len == 0)
        return "";
    pl_buf b = {0};
    pl_buf_append_escaped(&b, s, max_bytes);
    size_t n = b.len < len ? b.len : len - 1;
    while (n > 0 && n < b.len && ((unsigned char)b.data[n] & 0xc0) == 0x80)
        n--; /* never cut inside a UTF-8 sequence */
    memcpy(buf, b.data, n);
    buf[n] = '\0';
    pl_buf_free(&b);
    return buf;
}

char *pl_escape_dup(const char *s)
{
    pl_buf b = {0};
    pl_buf_append_escaped(&b, s, 0);
    return b.data;
}

int pl_is_printable(const char *s)
{
    char *e = pl_escape_dup(s);
    const int same = s && strcmp(e, s) == 0;
    free(e);
    return same;
}

int pl_is_utf8(const char *s)
{
    if (!s)
        return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        const size_t n = utf8_sequence(p);
        if (!n)
            return 0;
        p += n;
    }
    return 1;
}

size_t pl_utf8_length(const char *s)
{
    return utf8_sequence((const unsigned char *)s);
}
