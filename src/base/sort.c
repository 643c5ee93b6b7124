/* Radix sort; see include/cairn/sort.h. */
#include "cairn/sort.h"

#include "cairn/error.h"

#include <stdlib.h>
#include <string.h>

enum { DIGITS = 8, SMALL = 32 };

/* One sort per element type, its key read by KEY: least significant
 * byte first, one histogram pass for all bytes, and no pass over a byte
 * that every key shares. */
#define RADIX(NAME, T, KEY)                                                                      \
    int NAME(T *v, int64_t n)                                                                    \
    {                                                                                            \
        uint64_t all = 0;                                                                        \
        int sorted = 1;                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                        \
            all |= (uint64_t)KEY(v[i]);                                                          \
            if (i && KEY(v[i]) < KEY(v[i - 1])) sorted = 0;                                      \
        }                                                                                        \
        if (sorted) return 0;                                                                    \
        if (n <= SMALL) { /* insertion sort: stable, and cheaper than the histograms */          \
            for (int64_t i = 1; i < n; i++) {                                                    \
                T x = v[i];                                                                      \
                int64_t j = i;                                                                   \
                for (; j > 0 && KEY(v[j - 1]) > KEY(x); j--) v[j] = v[j - 1];                    \
                v[j] = x;                                                                        \
            }                                                                                    \
            return 0;                                                                            \
        }                                                                                        \
        int bytes = 0;                                                                           \
        while (bytes < DIGITS && (all >> (8 * bytes)) != 0) bytes++;                             \
        int64_t count[DIGITS][256];                                                              \
        memset(count, 0, sizeof count);                                                          \
        for (int64_t i = 0; i < n; i++)                                                          \
            for (int b = 0; b < bytes; b++) count[b][((uint64_t)KEY(v[i]) >> (8 * b)) & 255]++;  \
        T *tmp = malloc((size_t)n * sizeof *tmp), *src = v, *dst = tmp;                          \
        if (!tmp) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");       \
        for (int b = 0; b < bytes; b++) {                                                        \
            int64_t at = 0, *c = count[b];                                                       \
            if (c[((uint64_t)KEY(v[0]) >> (8 * b)) & 255] == n) continue; /* one digit */        \
            for (int d = 0; d < 256; d++) {                                                      \
                int64_t k = c[d];                                                                \
                c[d] = at;                                                                       \
                at += k;                                                                         \
            }                                                                                    \
            for (int64_t i = 0; i < n; i++) dst[c[((uint64_t)KEY(src[i]) >> (8 * b)) & 255]++] = src[i]; \
            T *t = src;                                                                          \
            src = dst;                                                                           \
            dst = t;                                                                             \
        }                                                                                        \
        if (src != v) memcpy(v, src, (size_t)n * sizeof *v);                                     \
        free(tmp);                                                                               \
        return 0;                                                                                \
    }

#define KV_KEY(x) ((x).key)
#define I64_KEY(x) (x)
RADIX(sort_kv, struct sort_kv, KV_KEY)
RADIX(sort_i64, int64_t, I64_KEY)
#undef RADIX
