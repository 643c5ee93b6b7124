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

/* Rejection-inversion: H is an antiderivative of h(x) = x^-s, written with
 * expm1 and log1p so that s near 1 loses no precision. */
static double zh(const struct rng_zipf *z, double x) { return exp(-z->s * log(x)); }

static double zH(const struct rng_zipf *z, double x)
{
    double lx = log(x), t = (1 - z->s) * lx;
    return (fabs(t) > 1e-8 ? expm1(t) / t : 1 + t / 2) * lx;
}

static double zH_inv(const struct rng_zipf *z, double x)
{
    double t = x * (1 - z->s);
    if (t < -1) t = -1;
    return exp((fabs(t) > 1e-8 ? log1p(t) / t : 1 - t / 2) * x);
}

void rng_zipf_init(struct rng_zipf *z, int64_t n, double s)
{
    *z = (struct rng_zipf){.s = s, .n = (double)n};
    z->h_x1 = zH(z, 1.5) - 1;
    z->h_n = zH(z, z->n + 0.5);
    z->cut = 2 - zH_inv(z, zH(z, 2.5) - zh(z, 2));
}

int64_t rng_zipf(const struct rng_zipf *z, uint64_t seed, uint64_t stream, uint64_t counter)
{
    double k = 1;
    for (uint64_t a = 0; a < 64; a++) {
        double u = z->h_n + rng_uniform(seed, stream, 64 * counter + a) * (z->h_x1 - z->h_n);
        double x = zH_inv(z, u);
        k = floor(x + 0.5);
        if (k < 1) k = 1;
        if (k > z->n) k = z->n;
        if (k - x <= z->cut || u >= zH(z, k + 0.5) - zh(z, k)) break;
    }
    return (int64_t)k;
}
