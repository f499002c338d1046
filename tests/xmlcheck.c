/* Well-formed XML with clean attributes, by expat (xmlcheck.h). */
#include "xmlcheck.h"

#include <ctype.h>
#include <expat.h>
#include <stdio.h>
#include <string.h>

typedef struct state {
    pl_xml_stats s;
    char bad[256]; /* the first attribute with a NaN or an infinity */
} state;

/* "nan" or "inf" as a word of its own ("-nan", "translate(inf,3)"), not inside a name such as "info". */
static int non_finite(const char *v)
{
    static const char *const words[] = {"nan", "inf"};
    for (int w = 0; w < 2; w++)
        for (const char *p = strstr(v, words[w]); p; p = strstr(p + 1, words[w])) {
            const int before = p > v && isalpha((unsigned char)p[-1]), after = isalpha((unsigned char)p[3]);
            if (!before && (!after || strncmp(p, "infinity", 8) == 0))
                return 1;
        }
    return 0;
}

/* The attributes that hold numbers: coordinates, sizes, paths, transforms. Others (an id, an href) may hold any
 * name, "...-inf" included. */
static int numeric(const char *name)
{
    static const char *const names[] = {"x",       "y",      "x1",        "x2",           "y1",      "y2",
                                        "cx",      "cy",     "r",         "rx",           "ry",      "dx",
                                        "dy",      "width",  "height",    "points",       "d",       "transform",
                                        "viewBox", "offset", "font-size", "stroke-width", "opacity", "fill-opacity"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return 0;
}

static void XMLCALL on_start(void *user, const XML_Char *name, const XML_Char **attrs)
{
    state *st = user;
    st->s.elements++;
    st->s.svgs += strcmp(name, "svg") == 0;
    if (++st->s.depth > st->s.max_depth)
        st->s.max_depth = st->s.depth;
    for (int i = 0; attrs[i]; i += 2) /* a NaN or Inf never reaches a coordinate */
        if (!st->bad[0] && numeric(attrs[i]) && non_finite(attrs[i + 1]))
            snprintf(st->bad, sizeof st->bad, "%.40s=\"%.120s\" in <%.40s>", attrs[i], attrs[i + 1], name);
}

static void XMLCALL on_end(void *user, const XML_Char *name)
{
    state *st = user;
    st->s.depth--;
    (void)name;
}

int pl_xml_check(const char *text, pl_xml_stats *stats, char *why, size_t len)
{
    state st;
    memset(&st, 0, sizeof st);
    XML_Parser p = XML_ParserCreate("UTF-8");
    XML_SetUserData(p, &st);
    XML_SetElementHandler(p, on_start, on_end);
    const int ok = XML_Parse(p, text, (int)strlen(text), 1) == XML_STATUS_OK;
    if (!ok)
        snprintf(why, len, "not well-formed XML: %s at line %lu, column %lu", XML_ErrorString(XML_GetErrorCode(p)),
                 (unsigned long)XML_GetCurrentLineNumber(p), (unsigned long)XML_GetCurrentColumnNumber(p));
    else if (st.bad[0])
        snprintf(why, len, "%s", st.bad);
    XML_ParserFree(p);
    if (stats)
        *stats = st.s;
    return ok && !st.bad[0] ? 0 : -1;
}
