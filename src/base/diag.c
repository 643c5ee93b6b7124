/* Job-file diagnostics; see include/cairn/diag.h. */
#include "cairn/diag.h"

#include "cairn/error.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void diags_add(struct diags *d, const char *file, int line, const char *fmt, ...)
{
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 16;
        struct diag *v = realloc(d->v, (size_t)cap * sizeof *v);
        if (!v) return; /* dropping a diagnostic beats crashing */
        d->v = v;
        d->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (!file) file = "?";
    /* job files are untrusted: their strings are escaped (error.h), which
     * may make each byte four */
    char *raw = malloc((size_t)n + 1), *msg = malloc(4 * (size_t)n + 1),
         *f = malloc(4 * strlen(file) + 1);
    if (!raw || !msg || !f) {
        free(raw);
        free(msg);
        free(f);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(raw, (size_t)n + 1, fmt, ap);
    va_end(ap);
    cairn_escape(msg, 4 * (size_t)n + 1, raw);
    cairn_escape(f, 4 * strlen(file) + 1, file);
    free(raw);
    d->v[d->n++] = (struct diag){f, line, msg};
}

static int by_place(const void *pa, const void *pb)
{
    const struct diag *a = pa, *b = pb;
    int c = strcmp(a->file, b->file);
    if (c) return c;
    return (a->line > b->line) - (a->line < b->line);
}

void diags_print(struct diags *d, FILE *out)
{
    /* mergesort-like stability is not needed: ties keep message order below */
    for (int i = 1; i < d->n; i++) {
        struct diag x = d->v[i];
        int j = i - 1;
        while (j >= 0 && by_place(&d->v[j], &x) > 0) {
            d->v[j + 1] = d->v[j];
            j--;
        }
        d->v[j + 1] = x;
    }
    for (int i = 0; i < d->n; i++) {
        if (d->v[i].line > 0)
            fprintf(out, "%s:%d: %s\n", d->v[i].file, d->v[i].line, d->v[i].msg);
        else
            fprintf(out, "%s: %s\n", d->v[i].file, d->v[i].msg);
    }
}

int diags_contains(const struct diags *d, const char *needle)
{
    for (int i = 0; i < d->n; i++)
        if (strstr(d->v[i].msg, needle)) return 1;
    return 0;
}

void diags_free(struct diags *d)
{
    for (int i = 0; i < d->n; i++) {
        free(d->v[i].file);
        free(d->v[i].msg);
    }
    free(d->v);
    *d = (struct diags){0};
}
