/* Diagnostics about a job file: each one a `FILE:LINE: message` for the
 * user.  Config, plan and analyze append to one list so that `cairn check`
 * reports every problem at once; the functions that append still return
 * CAIRN_EINPUT through the normal error mechanism. */
#ifndef CAIRN_DIAG_H
#define CAIRN_DIAG_H

#include <stdio.h>

struct diag {
    char *file; /* job file, or "--set" for a command-line override */
    int line;
    char *msg;
};

struct diags {
    struct diag *v;
    int n, cap;
};

void diags_add(struct diags *d, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Print each as FILE:LINE: message, in file order then line order. */
void diags_print(struct diags *d, FILE *out);
/* True if some diagnostic's text contains needle (used by tests). */
int diags_contains(const struct diags *d, const char *needle);
void diags_free(struct diags *d);

#endif
