/* A growable string for printers and JSON rows.  Allocation failure sets
 * `failed`; the text is then truncated but still terminated, and
 * strbuf_finish reports CAIRN_ENOMEM. */
#ifndef CAIRN_STRBUF_H
#define CAIRN_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf {
    char *s;
    size_t len, cap;
    bool failed;
};

void strbuf_addf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_add(struct strbuf *b, const char *s);
void strbuf_indent(struct strbuf *b, int depth); /* two spaces per level */
/* Append s as a JSON string literal (with quotes). */
void strbuf_json_str(struct strbuf *b, const char *s);
const char *strbuf_str(const struct strbuf *b); /* "" when empty */
void strbuf_reset(struct strbuf *b);
int strbuf_finish(struct strbuf *b); /* 0 or CAIRN_ENOMEM */
void strbuf_free(struct strbuf *b);

#endif
