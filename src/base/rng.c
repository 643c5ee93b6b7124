/* Counter-based random numbers; see include/cairn/rng.h. */
#include "cairn/rng.h"

#include <math.h>

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint64_t rng_u64(uint64_t seed, uint64_t stream, uint64_t counter)
{
    uint64_t k = mix(seed + UINT64_C(0x9e3779b97f4a7c15));
    k = mix(k ^ (stream * UINT64_C(0xd1b54a32d192ed03)));
    return mix(k ^ (counter * UINT64_C(0x9e3779b97f4a7c15) + UINT64_C(0x632be59bd9b4e019)));
}

double rng_uniform(uint64_t seed, uint64_t stream, uint64_t counter)
{
    return (double)(rng_u64(seed, stream, counter) >> 11) * 0x1.0p-53;
}

double rng_normal(uint64_t seed, uint64_t stream, uint64_t counter)
{
    double u1 = rng_uniform(seed, stream, 2 * counter), u2 = rng_uniform(seed, stream, 2 * counter + 1);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
}

void rng_permutation(uint64_t seed, uint64_t pass, int64_t n, int64_t *perm)
{
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(rng_u64(seed, RNG_STREAM_SHUFFLE(pass), (uint64_t)i) % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}
