/* Balanced contiguous blocks: n items over `parts` owners, the first
 * n % parts owners taking one extra.  Used for sharded blobs, readers and
 * the parameter-server shards, so all agree on who owns what. */
#ifndef CAIRN_PARTITION_H
#define CAIRN_PARTITION_H

#include <stdint.h>

static inline void part_range(int64_t n, int64_t parts, int64_t i, int64_t *lo, int64_t *hi)
{
    int64_t q = n / parts, r = n % parts;
    *lo = i * q + (i < r ? i : r);
    *hi = *lo + q + (i < r ? 1 : 0);
}

#endif
