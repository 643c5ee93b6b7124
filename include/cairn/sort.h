/* Sorting of non-negative 64-bit keys in linear time (radix sort), for
 * the per-step paths that sort a batch's rows or a table's positions:
 * glibc's qsort is a merge sort whose comparison calls cost some 10 ns
 * each, n log n of them. */
#ifndef CAIRN_SORT_H
#define CAIRN_SORT_H

#include <stdint.h>

struct sort_kv {
    int64_t key, val;
};

/* Sort v[0 .. n) by key, ascending and stable (pairs with equal keys keep
 * their order).  Keys must be >= 0.  Input already in order costs one
 * pass.  Errors: CAIRN_ENOMEM. */
int sort_kv(struct sort_kv *v, int64_t n);
/* Sort v[0 .. n) ascending; values must be >= 0.  Errors: CAIRN_ENOMEM. */
int sort_i64(int64_t *v, int64_t n);

#endif
