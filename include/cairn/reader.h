/* Reading records (rows along dimension 0) of HDF5 datasets.  Each rank
 * opens files read-only on its own and reads only the rows it needs, so
 * reading never involves collectives.  Open datasets are cached per rank.
 * Thread-safe (calls are serialized by h5_lock). */
#ifndef CAIRN_READER_H
#define CAIRN_READER_H

#include "cairn/tensor.h"

struct reader_cache;

int reader_cache_create(struct reader_cache **out);
void reader_cache_destroy(struct reader_cache **c); /* accepts NULL, NULLs *c */

/* The most elements a dataset may claim (2^60: eight bytes each still fit
 * an int64_t); a larger one is refused as bad input when first opened. */
#define READER_MAX_ELEMENTS (INT64_C(1) << 60)

/* The dataset's shape and element type.  Errors name file and dataset:
 * CAIRN_EINPUT if it cannot be opened, is not numeric or claims more than
 * READER_MAX_ELEMENTS. */
int reader_shape(struct reader_cache *c, const char *file, const char *dataset,
                 struct shape *shape, enum dtype *type);

/* Rows [start, start + count) converted to dtype, into out (resized to
 * [count, dims 1..]).  Errors: CAIRN_EINPUT, CAIRN_EHDF5, CAIRN_ENOMEM. */
int reader_rows(struct reader_cache *c, const char *file, const char *dataset, int64_t start,
                int64_t count, enum dtype dtype, struct tensor *out);

/* Element (row, col) of a 1-D (col 0) or 2-D integer dataset as uint64_t:
 * the value an unsigned 64-bit integer really has where an i64 read
 * clamps it to INT64_MAX (for an error message that shows it). */
int reader_u64(struct reader_cache *c, const char *file, const char *dataset, int64_t row, int64_t col,
               uint64_t *out);

/* Rows idx[0..count) (any order, repeats allowed) into out, in that order. */
int reader_gather(struct reader_cache *c, const char *file, const char *dataset,
                  const int64_t *idx, int64_t count, enum dtype dtype, struct tensor *out);

#endif
