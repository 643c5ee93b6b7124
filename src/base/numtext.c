/* Numbers from text; see include/cairn/numtext.h. */
#include "cairn/numtext.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t')) (*s)++, (*n)--;
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t')) (*n)--;
}

static bool digit(char c) { return c >= '0' && c <= '9'; }

/* Powers of ten a double holds exactly. */
static const double exact10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

int num_f64(const char *s, size_t n, double *v)
{
    trim(&s, &n);
    size_t i = 0, digits = 0, sig = 0;
    bool neg = false;
    uint64_t w = 0; /* the first 19 significant digits */
    int64_t e10 = 0; /* w * 10^e10, while every digit fits in w */
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    for (; i < n && digit(s[i]); i++, digits++) {
        if (w == 0 && s[i] == '0') continue; /* leading zeros are not significant */
        if (sig++ < 19) w = w * 10 + (uint64_t)(s[i] - '0');
        else e10++;
    }
    if (i < n && s[i] == '.')
        for (i++; i < n && digit(s[i]); i++, digits++) {
            if (w == 0 && s[i] == '0') {
                e10--;
                continue;
            }
            if (sig++ < 19) {
                w = w * 10 + (uint64_t)(s[i] - '0');
                e10--;
            }
        }
    if (digits == 0) return NUM_SYNTAX;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        bool eneg = false;
        int64_t x = 0;
        size_t at = ++i;
        if (i < n && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
        if (i == n || !digit(s[i])) return NUM_SYNTAX;
        (void)at;
        for (; i < n && digit(s[i]); i++)
            if (x < 100000000) x = x * 10 + (s[i] - '0'); /* far beyond any double's range */
        e10 += eneg ? -x : x;
    }
    if (i != n) return NUM_SYNTAX;
    /* Clinger's fast path: w and 10^|e10| both exact doubles, so one
     * IEEE operation rounds the exact value once, correctly. */
    if (sig <= 19 && w <= (1ULL << 53) && e10 >= -22 && e10 <= 22) {
        double d = (double)w;
        d = e10 < 0 ? d / exact10[-e10] : d * exact10[e10];
        *v = neg ? -d : d;
        return NUM_OK;
    }
    if (w == 0) { /* zeros, with any exponent */
        *v = neg ? -0.0 : 0.0;
        return NUM_OK;
    }
    char buf[512];
    if (n >= sizeof buf) { /* longer than any number worth writing out; strtod needs a terminated copy */
        char *heap = malloc(n + 1);
        if (!heap) return NUM_RANGE;
        memcpy(heap, s, n);
        heap[n] = 0;
        errno = 0;
        *v = strtod(heap, NULL);
        free(heap);
    } else {
        memcpy(buf, s, n);
        buf[n] = 0;
        errno = 0;
        *v = strtod(buf, NULL);
    }
    return isinf(*v) ? NUM_RANGE : NUM_OK; /* underflow to zero or a subnormal is a value */
}

int num_i64(const char *s, size_t n, int64_t *v)
{
    trim(&s, &n);
    size_t i = 0;
    bool neg = false;
    uint64_t x = 0, lim;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    if (i == n) return NUM_SYNTAX;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    bool over = false;
    for (; i < n; i++) {
        if (!digit(s[i])) return NUM_SYNTAX;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (x > (lim - d) / 10) over = true; /* keep checking the syntax */
        else x = x * 10 + d;
    }
    if (over) return NUM_RANGE;
    *v = neg ? (int64_t)(0 - x) : (int64_t)x;
    return NUM_OK;
}

uint64_t num_fnv1a(uint64_t h, const void *s, size_t n)
{
    const unsigned char *p = s;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

uint64_t num_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
