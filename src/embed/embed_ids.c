/* Ids datasets and their rows' balance over the shards; see
 * include/cairn/embed_ids.h. */
#include "cairn/embed_ids.h"

#include "cairn/error.h"
#include "cairn/partition.h"
#include "cairn/reader.h"
#include "cairn/sparse_rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int embed_ids_shape(struct reader_cache *c, const char *file, const char *dataset, int64_t *n,
                    int64_t *k)
{
    struct shape s;
    enum dtype t;
    char sh[96];
    int rc = reader_shape(c, file, dataset, &s, &t);
    if (rc) return rc;
    if (!dtype_is_int(t))
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                             "ids dataset '%s' in %s holds %s values; ids must be integers",
                             dataset, file, dtype_name(t));
    if (s.ndim > 2 || (s.ndim == 2 && s.d[1] < 1))
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                             "ids dataset '%s' in %s is %s, not [N] or [N, k] with k >= 1", dataset,
                             file, shape_format(&s, sh, sizeof sh));
    /* checked before anything is sized by k: a file may claim any shape */
    if (s.ndim == 2 && s.d[1] > EMBED_IDS_K_MAX)
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                             "ids dataset '%s' in %s is %s: bags of more than %d ids per sample are "
                             "not supported", dataset, file, shape_format(&s, sh, sizeof sh), EMBED_IDS_K_MAX);
    *n = s.d[0];
    *k = s.ndim == 2 ? s.d[1] : 1;
    return 0;
}

int embed_ids_read(struct reader_cache *c, const char *file, const char *dataset, int64_t rows,
                   int64_t first, int64_t count, int64_t k, struct tensor *ids)
{
    int rc = reader_rows(c, file, dataset, first, count, DT_I64, ids);
    if (rc) return rc;
    ids->shape = (struct shape){.ndim = 2, .d = {count, k}}; /* [N] is [N, 1] */
    const int64_t *v = ids->data;
    int64_t i = embed_ids_first_bad(v, count * k, rows);
    return i < 0 ? 0 : embed_ids_bad(CAIRN_EINPUT, c, file, dataset, first + i / k, i % k, v[i], rows);
}

int64_t embed_ids_first_bad(const int64_t *v, int64_t n, int64_t rows)
{
    for (int64_t i = 0; i < n; i++)
        if (v[i] < -1 || v[i] >= rows) return i;
    return -1;
}

int embed_ids_bad(int code, struct reader_cache *c, const char *file, const char *dataset, int64_t row,
                  int64_t col, int64_t id, int64_t rows)
{
    char text[32];
    uint64_t u = 0;
    snprintf(text, sizeof text, "%lld", (long long)id);
    /* an unsigned id above INT64_MAX reads as INT64_MAX: show what the file holds */
    if (id == INT64_MAX && c && reader_u64(c, file, dataset, row, col, &u) == 0)
        snprintf(text, sizeof text, "%llu", (unsigned long long)u);
    return cairn_err_set(code, __FILE__, __LINE__,
                         "ids dataset '%s' in %s: row %lld holds id %s; the table has rows 0 to "
                         "%lld (and -1 means no id)",
                         dataset, file, (long long)row, text, (long long)rows - 1);
}

int embed_balance(const int64_t *ids, int64_t n, int64_t k, int64_t rows, int P, int64_t batch,
                  bool spread, struct embed_balance *out)
{
    if (batch > n) batch = n > 0 ? n : 1; /* sized by the data, not by what was asked */
    int64_t *v = malloc((size_t)(batch * k + 1) * sizeof *v), *per = calloc((size_t)P, sizeof *per);
    int64_t a = spread_step(rows), block = (rows + P - 1) / P;
    *out = (struct embed_balance){0};
    if (!v || !per) {
        free(v);
        free(per);
        return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    }
    for (int64_t lo = 0; lo < n; lo += batch) {
        int64_t m = (n - lo < batch ? n - lo : batch) * k, d = 0, busiest = 0;
        memcpy(v, ids + lo * k, (size_t)m * sizeof *v);
        qsort(v, (size_t)m, sizeof *v, pos_cmp);
        memset(per, 0, (size_t)P * sizeof *per);
        for (int64_t i = 0; i < m; i++) {
            if (v[i] < 0 || (i > 0 && v[i] == v[i - 1])) continue;
            int64_t pos = spread ? spread_pos(v[i], rows, a) : v[i];
            per[pos / block]++;
            d++;
        }
        if (d == 0) continue;
        for (int p = 0; p < P; p++)
            busiest = per[p] > busiest ? per[p] : busiest;
        double r = (double)busiest * P / (double)d;
        out->steps++;
        out->rows_per_step += (double)d;
        out->busiest_mean += r;
        out->busiest_worst = r > out->busiest_worst ? r : out->busiest_worst;
    }
    if (out->steps) {
        out->rows_per_step /= (double)out->steps;
        out->busiest_mean /= (double)out->steps;
    }
    free(v);
    free(per);
    return 0;
}
