/* Row-sparse gradients and their tree sum; see include/cairn/sparse_rows.h. */
#include "cairn/sparse_rows.h"

#include "cairn/error.h"
#include "cairn/partition.h"

#include <stdlib.h>
#include <string.h>

int sparse_rows_reserve(struct sparse_rows *s, enum dtype dt, int64_t dim, int64_t n)
{
    size_t esz = dtype_size(dt);
    if (n > s->cap || dim != s->dim || dt != s->dt) {
        int64_t cap = n > s->cap ? n : s->cap;
        int64_t *pos = realloc(s->pos, (size_t)(cap ? cap : 1) * sizeof *pos);
        if (pos) s->pos = pos;
        void *val = realloc(s->val, (size_t)(cap ? cap : 1) * (size_t)dim * esz + 1);
        if (val) s->val = val;
        if (!pos || !val) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
        s->cap = cap;
    }
    s->dt = dt;
    s->dim = dim;
    s->n = 0;
    return 0;
}

void sparse_rows_free(struct sparse_rows *s)
{
    free(s->pos);
    free(s->val);
    *s = (struct sparse_rows){0};
}

void sparse_rows_swap(struct sparse_rows *a, struct sparse_rows *b)
{
    struct sparse_rows t = *a;
    *a = *b;
    *b = t;
}

static void add_row(enum dtype dt, int64_t dim, void *out, const void *a, const void *b)
{
    if (dt == DT_F64) {
        double *o = out;
        const double *x = a, *y = b;
        for (int64_t j = 0; j < dim; j++) o[j] = x[j] + y[j];
    } else {
        float *o = out;
        const float *x = a, *y = b;
        for (int64_t j = 0; j < dim; j++) o[j] = x[j] + y[j];
    }
}

int sparse_rows_add(struct sparse_rows *out, const struct sparse_rows *a, const struct sparse_rows *b)
{
    int rc = sparse_rows_reserve(out, a->dt, a->dim, a->n + b->n);
    if (rc) return rc;
    size_t row = (size_t)a->dim * dtype_size(a->dt);
    const char *va = a->val, *vb = b->val;
    char *vo = out->val;
    int64_t i = 0, j = 0, k = 0;
    while (i < a->n || j < b->n) {
        if (j == b->n || (i < a->n && a->pos[i] < b->pos[j])) {
            out->pos[k] = a->pos[i];
            memcpy(vo + k * row, va + i++ * row, row);
        } else if (i == a->n || b->pos[j] < a->pos[i]) {
            out->pos[k] = b->pos[j];
            memcpy(vo + k * row, vb + j++ * row, row);
        } else {
            out->pos[k] = a->pos[i];
            add_row(a->dt, a->dim, vo + k * row, va + i++ * row, vb + j++ * row);
        }
        k++;
    }
    out->n = k;
    return 0;
}

int pos_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t pos_lower(const int64_t *v, int64_t n, int64_t x)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t m = lo + (hi - lo) / 2;
        if (v[m] < x) lo = m + 1;
        else hi = m;
    }
    return lo;
}

void sparse_rows_range(const struct sparse_rows *s, int64_t lo, int64_t hi, int64_t *i0, int64_t *i1)
{
    *i0 = pos_lower(s->pos, s->n, lo);
    *i1 = pos_lower(s->pos, s->n, hi);
}

void sparse_tree_reset(struct sparse_tree *t, enum dtype dt, int64_t dim, int64_t lo, int64_t hi)
{
    t->dt = dt;
    t->dim = dim;
    t->lo = lo;
    t->hi = hi;
    t->n = 0;
}

/* Add the top two nodes while they are the halves of one. */
static int fold(struct sparse_tree *t)
{
    while (t->n >= 2 && bisect_halves(t->lo, t->hi, t->nlo[t->n - 2], t->nhi[t->n - 2], t->nhi[t->n - 1])) {
        int k = t->n - 1;
        int rc = sparse_rows_add(&t->tmp, &t->node[k - 1], &t->node[k]);
        if (rc) return rc;
        sparse_rows_swap(&t->tmp, &t->node[k - 1]);
        t->nhi[k - 1] = t->nhi[k];
        t->n--;
    }
    return 0;
}

/* Push leaf i (its rows swapped in from leaf, or none) and fold. */
static int push(struct sparse_tree *t, int64_t i, struct sparse_rows *leaf)
{
    if (t->n >= SPARSE_TREE_MAX)
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "sparse gradient tree too deep");
    int k = t->n++, rc = 0;
    t->nlo[k] = i;
    t->nhi[k] = i + 1;
    if (leaf) sparse_rows_swap(&t->node[k], leaf);
    else rc = sparse_rows_reserve(&t->node[k], t->dt, t->dim, 0);
    if (leaf) leaf->n = 0;
    return rc ? rc : fold(t);
}

int sparse_tree_add(struct sparse_tree *t, int64_t i, struct sparse_rows *leaf)
{
    int64_t next = t->n ? t->nhi[t->n - 1] : t->lo;
    if (i < next || i >= t->hi || (leaf->n && (leaf->dt != t->dt || leaf->dim != t->dim)))
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                             "sparse gradient tree: leaf %lld (of %lld values) after %lld, of [%lld, %lld)",
                             (long long)i, (long long)leaf->dim, (long long)next - 1, (long long)t->lo,
                             (long long)t->hi);
    for (; next < i; next++) { /* leaves that never came are empty */
        int rc = push(t, next, NULL);
        if (rc) return rc;
    }
    if (leaf->n == 0) return push(t, i, NULL);
    return push(t, i, leaf);
}

int sparse_tree_sum(struct sparse_tree *t, const struct sparse_rows **sum)
{
    for (int64_t next = t->n ? t->nhi[t->n - 1] : t->lo; next < t->hi; next++) {
        int rc = push(t, next, NULL);
        if (rc) return rc;
    }
    if (t->n == 0) { /* no leaves at all */
        int rc = sparse_rows_reserve(&t->node[0], t->dt, t->dim, 0);
        if (rc) return rc;
    }
    *sum = &t->node[0];
    return 0;
}

void sparse_tree_free(struct sparse_tree *t)
{
    for (int k = 0; k < SPARSE_TREE_MAX; k++) sparse_rows_free(&t->node[k]);
    sparse_rows_free(&t->tmp);
}
