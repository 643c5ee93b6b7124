/* Row-sparse gradients of an embedding table, and their sum over the
 * bisection tree of a step's micro-batches (partition.h), so that a row's
 * gradient is the same bits whichever replicas computed which
 * micro-batches.
 *
 * A sparse_rows holds n rows of dim values (f32 or f64) at strictly
 * increasing positions (the table's spread positions, partition.h), so a
 * shard's rows are one index range of it. */
#ifndef CAIRN_SPARSE_ROWS_H
#define CAIRN_SPARSE_ROWS_H

#include "cairn/tensor.h"

#include <stdint.h>

struct sparse_rows {
    enum dtype dt;
    int64_t dim, n, cap;
    int64_t *pos; /* [n] */
    void *val;    /* [n, dim] */
};

/* Room for n rows of dim values of dt; n = 0 afterwards.  The buffers are
 * kept when large enough.  Errors: CAIRN_ENOMEM. */
int sparse_rows_reserve(struct sparse_rows *s, enum dtype dt, int64_t dim, int64_t n);
void sparse_rows_free(struct sparse_rows *s);
/* Exchange the contents of a and b (no copy). */
void sparse_rows_swap(struct sparse_rows *a, struct sparse_rows *b);
/* out = a + b: every position of either; where both hold a row, one IEEE
 * add of a's value and b's per element, else a copy.  out is neither a
 * nor b; a and b have the same dt and dim. */
int sparse_rows_add(struct sparse_rows *out, const struct sparse_rows *a, const struct sparse_rows *b);
/* The rows whose positions lie in [lo, hi): indices [*i0, *i1). */
void sparse_rows_range(const struct sparse_rows *s, int64_t lo, int64_t hi, int64_t *i0, int64_t *i1);

/* Sorted positions: the first index of pos[0 .. n) whose value is not
 * below x; and qsort's comparison of int64_t values. */
int64_t pos_lower(const int64_t *pos, int64_t n, int64_t x);
int pos_cmp(const void *a, const void *b);

/* The sum over the bisection tree of leaves [lo, hi), taken as the leaves
 * arrive in order: a stack of nodes, two that are the halves of one added
 * at once.  Leaves that never arrive are empty. */
enum { SPARSE_TREE_MAX = 64 }; /* > log2 of any leaf count, + 1 */
struct sparse_tree {
    enum dtype dt;
    int64_t dim, lo, hi;
    int n;
    int64_t nlo[SPARSE_TREE_MAX], nhi[SPARSE_TREE_MAX];
    struct sparse_rows node[SPARSE_TREE_MAX], tmp;
};
/* Start a new sum of rows of dim values of dt over leaves [lo, hi) (keeps
 * the buffers). */
void sparse_tree_reset(struct sparse_tree *t, enum dtype dt, int64_t dim, int64_t lo, int64_t hi);
/* Leaf i, after every leaf added before it: its rows are taken (swapped
 * with a buffer of the tree's; *leaf is left empty), and must be of the
 * tree's dt and dim.  Errors: CAIRN_ERUNTIME when i is out of order or
 * range or the rows of another shape, CAIRN_ENOMEM. */
int sparse_tree_add(struct sparse_tree *t, int64_t i, struct sparse_rows *leaf);
/* The sum of leaves [lo, hi), after the last leaf (the rest count as
 * empty): valid until the next reset. */
int sparse_tree_sum(struct sparse_tree *t, const struct sparse_rows **sum);
void sparse_tree_free(struct sparse_tree *t);

#endif
