/* Embedding bags on a trainer; see include/cairn/embed_bag.h. */
#include "cairn/embed_bag.h"

#include "cairn/error.h"
#include "cairn/partition.h"
#include "cairn/sort.h"

#include <stdlib.h>
#include <string.h>

int embed_touch(const int64_t *ids, int64_t n_ids, int64_t rows, int64_t *pos, int64_t *n_rows,
                int64_t *slot)
{
    struct sort_kv *p = malloc((size_t)(n_ids + 1) * sizeof *p); /* (position, id's index) */
    if (!p) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    int64_t a = spread_step(rows), m = 0, u = 0;
    for (int64_t i = 0; i < n_ids; i++) {
        slot[i] = -1;
        if (ids[i] >= 0) p[m++] = (struct sort_kv){spread_pos(ids[i], rows, a), i};
    }
    int rc = sort_kv(p, m);
    for (int64_t j = 0; rc == 0 && j < m; j++) {
        if (j == 0 || p[j].key != p[j - 1].key) pos[u++] = p[j].key;
        slot[p[j].val] = u - 1;
    }
    *n_rows = u;
    free(p);
    return rc;
}

#define COMBINE(T)                                                                                 \
    static void combine_##T(int64_t n, int64_t k, const int64_t *slot, const T *rows, int64_t dim,  \
                            bool mean, T *out, int64_t ld)                                         \
    {                                                                                              \
        for (int64_t s = 0; s < n; s++) {                                                          \
            T *o = out + s * ld;                                                                   \
            int64_t c = 0;                                                                         \
            for (int64_t j = 0; j < k; j++) {                                                      \
                int64_t r = slot[s * k + j];                                                       \
                if (r < 0) continue;                                                               \
                for (int64_t d = 0; d < dim; d++) o[d] = c ? o[d] + rows[r * dim + d] : rows[r * dim + d]; \
                c++;                                                                               \
            }                                                                                      \
            for (int64_t d = 0; d < dim; d++) o[d] = c == 0 ? 0 : mean ? o[d] / (T)c : o[d];       \
        }                                                                                          \
    }
COMBINE(float)
COMBINE(double)
#undef COMBINE

void embed_combine(enum dtype dt, int64_t n, int64_t k, const int64_t *slot, const void *rows,
                   int64_t dim, bool mean, void *out, int64_t ld)
{
    if (dt == DT_F64) combine_double(n, k, slot, rows, dim, mean, out, ld);
    else combine_float(n, k, slot, rows, dim, mean, out, ld);
}

#define SCATTER(T)                                                                                 \
    static void scatter_##T(int64_t n, int64_t k, const int64_t *slot, const int64_t *mark,         \
                            const T *g, int64_t ld, int64_t dim, bool mean, T *val)                \
    {                                                                                              \
        for (int64_t s = 0; s < n; s++) {                                                          \
            int64_t c = 0;                                                                         \
            for (int64_t j = 0; j < k; j++) c += slot[s * k + j] >= 0;                             \
            for (int64_t j = 0; j < k; j++) {                                                      \
                int64_t r = slot[s * k + j];                                                       \
                if (r < 0) continue;                                                               \
                T *v = val + mark[r] * dim;                                                        \
                const T *x = g + s * ld;                                                           \
                for (int64_t d = 0; d < dim; d++) v[d] += mean ? x[d] / (T)c : x[d];               \
            }                                                                                      \
        }                                                                                          \
    }
SCATTER(float)
SCATTER(double)
#undef SCATTER

int embed_grad(enum dtype dt, int64_t n, int64_t k, const int64_t *slot, const int64_t *pos, int64_t n_pos,
               const void *g, int64_t ld, int64_t dim, bool mean, int64_t *mark,
               struct sparse_rows *leaf)
{
    int64_t *used = malloc((size_t)(n * k + 1) * sizeof *used), u = 0;
    if (!used) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (int64_t i = 0; i < n * k; i++)
        if (slot[i] >= 0 && mark[slot[i]] < 0) {
            mark[slot[i]] = 0;
            used[u++] = slot[i];
        }
    int rc = 0; /* slots are in position order: sort them, or scan the marks when most are used */
    if (u * 8 >= n_pos) {
        for (int64_t s = 0, c = 0; s < n_pos; s++)
            if (mark[s] >= 0) used[c++] = s;
    } else {
        rc = sort_i64(used, u);
    }
    if (rc == 0) rc = sparse_rows_reserve(leaf, dt, dim, u);
    if (rc == 0) {
        for (int64_t j = 0; j < u; j++) {
            mark[used[j]] = j;
            leaf->pos[j] = pos[used[j]];
        }
        leaf->n = u;
        memset(leaf->val, 0, (size_t)(u * dim) * dtype_size(dt));
        if (dt == DT_F64) scatter_double(n, k, slot, mark, g, ld, dim, mean, leaf->val);
        else scatter_float(n, k, slot, mark, g, ld, dim, mean, leaf->val);
    }
    for (int64_t j = 0; j < u; j++) mark[used[j]] = -1;
    free(used);
    return rc;
}
