/* Dataset checksums; see include/cairn/checksum.h. */
#include "cairn/checksum.h"

#include <stdio.h>
#include <string.h>

#define K UINT64_C(0x9e3779b97f4a7c15)

uint64_t checksum_part(const void *data, size_t elem_size, int64_t n, int64_t first)
{
    uint64_t sum = 0, m = 2 * (uint64_t)first + 1;
    if (elem_size == 8) {
        const unsigned char *p = data;
        for (int64_t i = 0; i < n; i++, m += 2) {
            uint64_t x;
            memcpy(&x, p + 8 * i, 8);
            sum += (x + K) * m;
        }
    } else {
        const unsigned char *p = data;
        for (int64_t i = 0; i < n; i++, m += 2) {
            uint32_t x;
            memcpy(&x, p + 4 * i, 4);
            sum += ((uint64_t)x + K) * m;
        }
    }
    return sum;
}

uint64_t checksum_string(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

void checksum_text(const char *s, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)checksum_string(s));
}
