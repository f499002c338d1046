/* Well-formed XML with clean attributes, by expat (xmlcheck.h). */
#include "xmlcheck.h"

#include <expat.h>
#include <stdio.h>
#include <string.h>

typedef struct state {
    pl_xml_stats s;
    char bad[256]; /* the first attribute with a NaN or an infinity */
} state;

static void XMLCALL on_start(void *user, const XML_Char *name, const XML_Char **attrs)
{
    state *st = user;
    st->s.elements++;
    st->s.svgs += strcmp(name, "svg") == 0;
    if (++st->s.depth > st->s.max_depth)
        st->s.max_depth = st->s.depth;
    for (int i = 0; attrs[i]; i += 2) /* a NaN or Inf never reaches a coordinate */
        if (!st->bad[0] && (strstr(attrs[i + 1], "nan") || strstr(attrs[i + 1], "inf")))
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
