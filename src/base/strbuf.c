/* Growable strings; see include/cairn/strbuf.h. */
#include "cairn/strbuf.h"

#include "cairn/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct strbuf *b, size_t extra)
{
    if (b->failed) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->failed = true;
        return false;
    }
    b->s = s;
    b->cap = cap;
    return true;
}

void strbuf_addf(struct strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void strbuf_add(struct strbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (!reserve(b, n)) return;
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void strbuf_indent(struct strbuf *b, int depth)
{
    for (int i = 0; i < depth; i++) strbuf_add(b, "  ");
}

void strbuf_json_str(struct strbuf *b, const char *s)
{
    strbuf_add(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            strbuf_addf(b, "\\%c", *p);
        else if (*p < 0x20)
            strbuf_addf(b, "\\u%04x", *p);
        else
            strbuf_addf(b, "%c", *p);
    }
    strbuf_add(b, "\"");
}

const char *strbuf_str(const struct strbuf *b) { return b->s ? b->s : ""; }

void strbuf_reset(struct strbuf *b)
{
    b->len = 0;
    if (b->s) b->s[0] = '\0';
}

int strbuf_finish(struct strbuf *b)
{
    if (!b->failed) return 0;
    return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory building text");
}

void strbuf_free(struct strbuf *b)
{
    free(b->s);
    *b = (struct strbuf){0};
}
