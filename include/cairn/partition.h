/* Two ways to split n items over `parts` owners into contiguous runs.
 *
 * part_range: balanced, the first n % parts owners taking one extra; for
 * work that is divided anew each time (a reader's batch, micro-batches,
 * replicas' shares).
 *
 * block_range: blocks of ceil(n / parts) items, the remainder last (and
 * possibly empty owners at the end); the layout of every sharded blob,
 * PS shards included, because it is ScaLAPACK's block distribution over a
 * line of processes, which p?gemr2d redistributes directly. */
#ifndef CAIRN_PARTITION_H
#define CAIRN_PARTITION_H

#include <stdint.h>

static inline void part_range(int64_t n, int64_t parts, int64_t i, int64_t *lo, int64_t *hi)
{
    int64_t q = n / parts, r = n % parts;
    *lo = i * q + (i < r ? i : r);
    *hi = *lo + q + (i < r ? 1 : 0);
}

static inline void block_range(int64_t n, int64_t parts, int64_t i, int64_t *lo, int64_t *hi)
{
    int64_t b = parts > 0 ? (n + parts - 1) / parts : n;
    *lo = i * b < n ? i * b : n;
    *hi = *lo + b < n ? *lo + b : n;
}

/* Block-cyclic ownership (ScaLAPACK's, as numroc counts it): items in
 * blocks of nb dealt round-robin to `parts` owners.  How many of items
 * [0, x) owner i holds; its items among [lo, hi) are the local items
 * cyclic_owned(lo) .. cyclic_owned(hi) - 1, consecutive. */
static inline int64_t cyclic_owned(int64_t x, int64_t nb, int64_t parts, int64_t i)
{
    int64_t cycle = nb * parts, rem = x % cycle - i * nb;
    return x / cycle * nb + (rem < 0 ? 0 : rem > nb ? nb : rem);
}

#endif
