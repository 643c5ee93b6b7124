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

/* The most ids a sample's bag may hold (k of [N, k]). */
#define EMBED_IDS_K_MAX 65536

/* The dataset is integer and [N] or [N, k] with k <= EMBED_IDS_K_MAX (and
 * at most READER_MAX_ELEMENTS ids): *n = N, *k = k (1 for [N]).  Call it
 * before sizing anything by the dataset's shape.  Errors (CAIRN_EINPUT)
 * name file and dataset. */
int embed_ids_shape(struct reader_cache *c, const char *file, const char *dataset, int64_t *n,
                    int64_t *k);

/* Rows [first, first + count) as i64 [count, k] into ids, every id checked
 * against rows; the error (CAIRN_EINPUT) names file, dataset, the first
 * bad row (counted in the file) and its id. */
int embed_ids_read(struct reader_cache *c, const char *file, const char *dataset, int64_t rows,
                   int64_t first, int64_t count, int64_t k, struct tensor *ids);

/* The index of the first of n ids outside -1 .. rows-1, or -1 if none;
 * and the error for such an id at (row, col) (row counted in the file) of
 * the dataset, with code CAIRN_EINPUT or (found while running)
 * CAIRN_ERUNTIME.  With c (may be NULL), an id read as INT64_MAX is read
 * again as unsigned, so that the message shows an unsigned id as the file
 * holds it (18446744073709551615, not the clamped 9223372036854775807). */
int64_t embed_ids_first_bad(const int64_t *v, int64_t n, int64_t rows);
int embed_ids_bad(int code, struct reader_cache *c, const char *file, const char *dataset, int64_t row,
                  int64_t col, int64_t id, int64_t rows);

/* How evenly the distinct rows that steps of `batch` samples touch fall on
 * P shards: per step, the busiest shard's rows over the mean; averaged
 * over the steps and the worst step.  spread: rows placed by
 * partition.h's spread_pos before the shards' blocks; else blocks of ids.
 * A batch larger than n is one step of all n samples (what is allocated
 * follows the data, not the batch asked for). */
struct embed_balance {
    int64_t steps;
    double rows_per_step; /* distinct rows touched, mean over the steps */
    double busiest_mean, busiest_worst;
};
int embed_balance(const int64_t *ids, int64_t n, int64_t k, int64_t rows, int P, int64_t batch,
                  bool spread, struct embed_balance *out);

#endif
