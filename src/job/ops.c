/* Op schema helpers (include/cairn/op.h).  The ops themselves live in
 * per-family files (src/runtime/ops_*.c, src/train/train_ops.c), each
 * exporting its op_def definitions; src/app/registry.c lists them. */
#include "cairn/op.h"

#include "cairn/diag.h"
#include "cairn/error.h"
#include "cairn/job.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *dist_name(enum dist d)
{
#define NAME_CASE(e, name) case e: return name;
    switch (d) {
    CAIRN_DISTS(NAME_CASE)
    }
    return "?";
}

int infer_error(struct infer *ix, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diags_add(ix->diags, ix->op->file, ix->op->line, "op '%s': %s", ix->op->def->name, msg);
    ix->errors++;
    return CAIRN_EINPUT;
}

const struct op_def *op_find(const char *name)
{
    int n;
    const struct op_def *const *all = op_all(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    return NULL;
}

int op_choice_index(const char *choices, const char *s)
{
    int idx = 0;
    size_t n = strlen(s);
    for (const char *p = choices; *p; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, s, n) == 0) return idx;
        if (!bar) break;
        p = bar + 1;
    }
    return -1;
}

/* Defaults are job-file text in the op table (static, so no copies). */
void op_set_defaults(const struct op_def *def, struct pval *pv)
{
    for (int i = 0; def->params && def->params[i].key; i++) {
        const struct param_def *pd = &def->params[i];
        struct pval *v = &pv[i];
        if (!pd->dflt) continue;
        switch (pd->type) {
        case PT_INT: v->i = strtoll(pd->dflt, NULL, 10); v->f = (double)v->i; break;
        case PT_FLOAT: v->f = strtod(pd->dflt, NULL); break;
        case PT_STR: v->s = pd->dflt; break;
        case PT_BOOL: v->i = strcmp(pd->dflt, "true") == 0; break;
        case PT_ENUM: v->i = op_choice_index(pd->choices, pd->dflt); v->s = pd->dflt; break;
        case PT_INTS: case PT_STRS: v->n = 0; break; /* defaults are empty lists */
        }
    }
}

int op_param_index(const struct op_def *def, const char *key)
{
    for (int i = 0; def->params && def->params[i].key; i++)
        if (strcmp(def->params[i].key, key) == 0) return i;
    return -1;
}
