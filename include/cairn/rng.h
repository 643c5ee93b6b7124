/* Counter-based random numbers: every value is a pure function of (seed,
 * stream, counter), so no generator state exists to save or to split, and
 * the values do not depend on which rank computes them.  Streams name the
 * purpose (parameter k's initial values, epoch e's shuffle, ...). */
#ifndef CAIRN_RNG_H
#define CAIRN_RNG_H

#include <stdint.h>

uint64_t rng_u64(uint64_t seed, uint64_t stream, uint64_t counter);
/* Uniform in [0, 1) with 53 random bits. */
double rng_uniform(uint64_t seed, uint64_t stream, uint64_t counter);
/* Standard normal (Box-Muller on counters 2c and 2c+1). */
double rng_normal(uint64_t seed, uint64_t stream, uint64_t counter);

/* Streams used by cairn (documented in cairn-job(5)). */
#define RNG_STREAM_PARAM(k) (UINT64_C(0x100000) + (uint64_t)(k))
#define RNG_STREAM_TABLE(e) (UINT64_C(0x180000) + (uint64_t)(e))
#define RNG_STREAM_SHUFFLE(pass) (UINT64_C(0x200000000) + (uint64_t)(pass))
#define RNG_STREAM_SYNTH_X(row) (UINT64_C(0x1000000000000) + (uint64_t)(row))
#define RNG_STREAM_SYNTH_TEACHER UINT64_C(0x300000)
#define RNG_STREAM_SYNTH_IDS(table) (UINT64_C(0x400000) + (uint64_t)(table))
#define RNG_STREAM_SYNTH_LATENT(table) (UINT64_C(0x500000) + (uint64_t)(table))
#define RNG_STREAM_SYNTH_BAGLEN(table) (UINT64_C(0x600000) + (uint64_t)(table))
#define RNG_STREAM_GENERATE UINT64_C(0x700000)
#define RNG_STREAM_DROPOUT(pass) (UINT64_C(0x4000000000000000) + (uint64_t)(pass))

/* The permutation of 0..n-1 for one pass over the data (Fisher-Yates
 * driven by the counters); perm has n entries. */
void rng_permutation(uint64_t seed, uint64_t pass, int64_t n, int64_t *perm);

/* Zipf's law over 1..n: P(k) proportional to k^-s (s > 0), drawn by
 * rejection-inversion (Hormann and Derflinger, 1996) in O(1) time and
 * memory whatever n.  A draw uses counters 64 c .. 64 c + 63 (it almost
 * always takes the first; after 64 rejections it returns the last
 * candidate, an event of probability far below 2^-64). */
struct rng_zipf {
    double s, n, h_x1, h_n, cut;
};
void rng_zipf_init(struct rng_zipf *z, int64_t n, double s);
int64_t rng_zipf(const struct rng_zipf *z, uint64_t seed, uint64_t stream, uint64_t counter);

#endif
