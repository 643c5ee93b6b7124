/* Which column of delimited text goes where (--label, --target, --ids,
 * --hash, --features, --skip); see import_priv.h. */
#include "import_priv.h"

#include "cairn/error.h"
#include "cairn/numtext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void import_layout_free(struct layout *L)
{
    for (int i = 0; L->name && i < L->n; i++) free(L->name[i]);
    free(L->name);
    free(L->col);
    *L = (struct layout){0};
}

/* Column c's name for a message. */
const char *import_col_name(const struct layout *L, int c, char *buf, size_t size)
{
    if (L->name) snprintf(buf, size, "'%s'", L->name[c]);
    else snprintf(buf, size, "%d", c + 1);
    return buf;
}

/* The column a list item names: a name, else a number from 1.  -1 if none. */
static int col_find(const struct layout *L, const char *s, size_t n)
{
    for (int c = 0; L->name && c < L->n; c++)
        if (strlen(L->name[c]) == n && memcmp(L->name[c], s, n) == 0) return c;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > IMPORT_MAX_COLUMNS) return -1;
        v = v * 10 + (s[i] - '0');
    }
    return n && v >= 1 && v <= L->n ? (int)v - 1 : -1;
}

/* Each column of list ("a,b,3,5-9") in order to fn; what names none is an
 * error naming opt. */
static int col_list(const struct layout *L, const char *opt, const char *list,
                    int (*fn)(struct layout *, int, void *), void *arg)
{
    int rc = 0;
    for (const char *s = list, *e; *s; s = *e ? e + 1 : e) {
        e = strchr(s, ',');
        if (!e) e = s + strlen(s);
        int c = col_find(L, s, (size_t)(e - s)), hi = c;
        const char *dash = memchr(s, '-', (size_t)(e - s));
        if (c < 0 && dash) { /* N-M, numbers */
            c = col_find(&(struct layout){.n = L->n}, s, (size_t)(dash - s));
            hi = col_find(&(struct layout){.n = L->n}, dash + 1, (size_t)(e - dash - 1));
            if (hi < c) c = -1;
        }
        if (c < 0)
            CAIRN_FAIL(CAIRN_EINPUT, "%s: no column '%.*s' (a name of the header or --columns, a number from 1 to %d, "
                       "or N-M)", opt, (int)(e - s), s, L->n);
        for (int x = c; x <= hi; x++) CAIRN_CHECK(fn((struct layout *)L, x, arg));
    }
cleanup:
    return rc;
}

struct assign {
    const char *opt;
    uint8_t kind, set;
};

static int col_assign(struct layout *L, int c, void *arg)
{
    const struct assign *a = arg;
    char nm[96];
    if (L->col[c].kind != C_SKIP) /* twice in one list, or in two */
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s: column %s is already used", a->opt,
                             import_col_name(L, c, nm, sizeof nm));
    struct col *x = &L->col[c];
    x->kind = a->kind;
    x->set = a->set;
    x->pos = a->kind == C_FEATURE ? L->features++ : a->kind == C_TARGET ? L->targets++
           : a->kind == C_LABEL ? 0 : L->ids_k[a->set]++;
    if (a->kind == C_LABEL && L->labels)
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "--label: a class label is one column (--target takes several)");
    L->labels = L->labels || a->kind == C_LABEL || a->kind == C_TARGET;
    return 0;
}

static int col_mark_skip(struct layout *L, int c, void *arg)
{
    (void)arg;
    char nm[96];
    if (L->col[c].kind != C_SKIP && L->col[c].kind != 0xff)
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "--skip: column %s is used (--label, --target, --ids "
                             "or --hash)", import_col_name(L, c, nm, sizeof nm));
    L->col[c].kind = 0xff; /* left out of the default features; reset below */
    return 0;
}

/* The columns of L->n fields as spec says, in a fixed order: label,
 * ids, features (given or every column left). */
int import_layout_resolve(struct layout *L, const struct import_spec *spec)
{
    int rc = 0;
    L->col = calloc((size_t)L->n, sizeof *L->col);
    CAIRN_CHECK_ALLOC(L->col);
    if (spec->label)
        CAIRN_CHECK(col_list(L, spec->target ? "--target" : "--label", spec->label, col_assign,
                             &(struct assign){spec->target ? "--target" : "--label", spec->target ? C_TARGET : C_LABEL, 0}));
    for (int i = 0; i < spec->n_ids; i++) {
        const struct import_ids *d = &spec->ids[i];
        CAIRN_CHECK(col_list(L, d->rows ? "--hash" : "--ids", d->columns, col_assign,
                             &(struct assign){d->rows ? "--hash" : "--ids", d->rows ? C_HASH : C_IDS, (uint8_t)i}));
        L->salt[i] = num_mix(num_fnv1a(NUM_FNV_BASIS, d->name, strlen(d->name)) + spec->seed);
    }
    if (spec->features) {
        CAIRN_CHECK(col_list(L, "--features", spec->features, col_assign, &(struct assign){"--features", C_FEATURE, 0}));
    } else {
        if (spec->skip) CAIRN_CHECK(col_list(L, "--skip", spec->skip, col_mark_skip, NULL));
        for (int c = 0; c < L->n; c++)
            if (L->col[c].kind == C_SKIP) CAIRN_CHECK(col_assign(L, c, &(struct assign){"--features", C_FEATURE, 0}));
    }
    for (int c = 0; c < L->n; c++)
        if (L->col[c].kind == 0xff) L->col[c].kind = C_SKIP;
    if (L->features == 0)
        CAIRN_FAIL(CAIRN_EINPUT, "%s", "no feature columns (a model needs at least one; --features names them)");
cleanup:
    return rc;
}
