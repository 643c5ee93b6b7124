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

#include <stdbool.h>
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

/* The bisection tree of [lo, hi): node [lo, hi) is [lo, mid) + [mid, hi)
 * with mid = lo + ceil((hi - lo) / 2), down to single items.  Sums taken
 * over it (gradients over micro-batches) have one fixed order whichever
 * owners computed which nodes. */
static inline int64_t bisect_mid(int64_t lo, int64_t hi) { return lo + (hi - lo + 1) / 2; }

/* Are [a, b) and [b, c) the halves of a node of the tree of [lo, hi)? */
static inline bool bisect_halves(int64_t lo, int64_t hi, int64_t a, int64_t b, int64_t c)
{
    while (hi - lo > 1) {
        int64_t m = bisect_mid(lo, hi);
        if (lo == a && hi == c) return m == b;
        if (c <= m) hi = m;
        else if (a >= m) lo = m;
        else return false;
    }
    return false;
}

/* Row spreading, for tables whose traffic is skewed toward some rows (an
 * embedding's frequent ids, which are often the small ones): row i of n is
 * kept at position (i a) mod n, a = spread_step(n), and positions are then
 * split like any sharded blob (block_range).  a is the integer nearest
 * n (sqrt 5 - 1) / 2 that is coprime with n, so the map is a permutation,
 * and consecutive rows land as far apart as a golden-ratio sequence
 * allows: any run of hot ids, and any ids that share a residue, fall into
 * every block alike. */
static inline int64_t spread_gcd(int64_t a, int64_t b)
{
    while (b) {
        int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

static inline int64_t spread_step(int64_t n)
{
    if (n <= 2) return 1;
    int64_t a0 = (int64_t)((double)n * 0.6180339887498949 + 0.5);
    for (int64_t d = 0;; d++) { /* a coprime lies within a few steps */
        if (a0 + d < n && spread_gcd(a0 + d, n) == 1) return a0 + d;
        if (a0 - d > 0 && spread_gcd(a0 - d, n) == 1) return a0 - d;
    }
}
static inline int64_t spread_pos(int64_t i, int64_t n, int64_t a)
{
    if (n <= INT64_C(1) << 31 && (uint64_t)i < (uint64_t)n) /* i, a < n: i a fits 64 bits, whose modulo is cheaper */
        return (int64_t)((uint64_t)i * (uint64_t)a % (uint64_t)n);
    return (int64_t)((unsigned __int128)i * (unsigned __int128)a % (unsigned __int128)n);
}

/* The row at position pos: pos a^-1 mod n (a from spread_step). */
static inline int64_t spread_row(int64_t pos, int64_t n, int64_t a)
{
    int64_t r0 = n, r1 = a % n, t0 = 0, t1 = 1; /* extended Euclid: t1 a = r1 (mod n) */
    while (r1 > 1) {
        int64_t q = r0 / r1, r = r0 - q * r1, t = t0 - q * t1;
        r0 = r1, r1 = r, t0 = t1, t1 = t;
    }
    int64_t inv = n == 1 ? 0 : (t1 % n + n) % n;
    return (int64_t)((unsigned __int128)pos * (unsigned __int128)inv % (unsigned __int128)n);
}

#endif
