/* An embedding bag's kernels on a trainer: which rows a batch's ids touch,
 * the combined vector of each sample's bag (forward), and the rows'
 * gradients from the combined vectors' (backward), in one fixed order so
 * that a row's gradient does not depend on how the batch is split.
 *
 * ids are [n, k] (k per sample, -1 for no id; embed_ids.h); rows are
 * fetched once per distinct id, at their spread positions (partition.h),
 * and every id refers to its row by a slot: its index among them. */
#ifndef CAIRN_EMBED_BAG_H
#define CAIRN_EMBED_BAG_H

#include "cairn/sparse_rows.h"
#include "cairn/tensor.h"

#include <stdbool.h>
#include <stdint.h>

/* The distinct rows n_ids ids of a table of `rows` rows touch: their
 * spread positions in increasing order into pos (room for n_ids), *n_rows
 * of them, and slot[i], the index in pos of id i's row (-1 for no id).
 * Ids must be in range (embed_ids_read checks).  Errors: CAIRN_ENOMEM. */
int embed_touch(const int64_t *ids, int64_t n_ids, int64_t rows, int64_t *pos, int64_t *n_rows,
                int64_t *slot);

/* Forward: for each of n samples, dim values at out + s ld = its bag's
 * rows (rows + slot * dim) added in bag order, divided by how many for
 * mean; zeros for a bag without ids. */
void embed_combine(enum dtype dt, int64_t n, int64_t k, const int64_t *slot, const void *rows,
                   int64_t dim, bool mean, void *out, int64_t ld);

/* Backward: the rows' gradients from the combined vectors' (dim values at
 * g + s ld), as one leaf of the sparse tree: each row touched by these n
 * samples, at its position pos[slot], gets the gradients of the samples
 * whose bags hold it, added from zero in sample order and bag order (each
 * divided by the bag's count for mean; an id twice in a bag adds twice).
 * Slots are below n_pos; mark: room for n_pos, all -1, and left so.
 * Errors: CAIRN_ENOMEM. */
int embed_grad(enum dtype dt, int64_t n, int64_t k, const int64_t *slot, const int64_t *pos, int64_t n_pos,
               const void *g, int64_t ld, int64_t dim, bool mean, int64_t *mark,
               struct sparse_rows *leaf);

#endif
