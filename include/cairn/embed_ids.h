/* Categorical features: datasets of ids that index the rows of an
 * embedding table, and how their rows fall on the PS shards.
 *
 * An ids dataset is integer, [N] (one id per sample) or [N, k] (a bag of
 * up to k ids); each id is a row 0 .. rows-1 of its table, or -1 for "no
 * id" (so bags can have fewer than k ids).  Anything else is bad input:
 * never clamped, never skipped. */
#ifndef CAIRN_EMBED_IDS_H
#define CAIRN_EMBED_IDS_H

#include "cairn/tensor.h"

#include <stdbool.h>
#include <stdint.h>

struct reader_cache;

/* The dataset is integer and [N] or [N, k]: *n = N, *k = k (1 for [N]).
 * Errors (CAIRN_EINPUT) name file and dataset. */
int embed_ids_shape(struct reader_cache *c, const char *file, const char *dataset, int64_t *n,
                    int64_t *k);

/* Rows [first, first + count) as i64 [count, k] into ids, every id checked
 * against rows; the error (CAIRN_EINPUT) names file, dataset, the first
 * bad row (counted in the file) and its id. */
int embed_ids_read(struct reader_cache *c, const char *file, const char *dataset, int64_t rows,
                   int64_t first, int64_t count, int64_t k, struct tensor *ids);

/* The index of the first of n ids outside -1 .. rows-1, or -1 if none;
 * and the error for such an id at a row (counted in the file) of the
 * dataset, with code CAIRN_EINPUT or (found while running) CAIRN_ERUNTIME. */
int64_t embed_ids_first_bad(const int64_t *v, int64_t n, int64_t rows);
int embed_ids_bad(int code, const char *file, const char *dataset, int64_t row, int64_t id, int64_t rows);

/* How evenly the distinct rows that steps of `batch` samples touch fall on
 * P shards: per step, the busiest shard's rows over the mean; averaged
 * over the steps and the worst step.  spread: rows placed by
 * partition.h's spread_pos before the shards' blocks; else blocks of ids. */
struct embed_balance {
    int64_t steps;
    double rows_per_step; /* distinct rows touched, mean over the steps */
    double busiest_mean, busiest_worst;
};
int embed_balance(const int64_t *ids, int64_t n, int64_t k, int64_t rows, int P, int64_t batch,
                  bool spread, struct embed_balance *out);

#endif
