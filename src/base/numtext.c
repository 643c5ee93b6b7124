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
    if (n && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t')) trim(&s, &n);
    const char *p = s, *e = s + n;
    bool neg = false;
    uint64_t w = 0; /* the digits as one integer: exact while there are 19 at most */
    if (p < e && (*p == '+' || *p == '-')) neg = *p++ == '-';
    const char *d = p;
    for (; p < e && (unsigned)(*p - '0') <= 9; p++) w = w * 10 + (unsigned)(*p - '0');
    size_t digits = (size_t)(p - d), frac = 0;
    if (p < e && *p == '.') {
        d = ++p;
        for (; p < e && (unsigned)(*p - '0') <= 9; p++) w = w * 10 + (unsigned)(*p - '0');
        frac = (size_t)(p - d);
        digits += frac;
    }
    if (digits == 0) return NUM_SYNTAX;
    int64_t e10 = -(int64_t)frac;
    if (p < e && (*p == 'e' || *p == 'E')) {
        bool eneg = false;
        int64_t x = 0;
        p++;
        if (p < e && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        if (p == e || (unsigned)(*p - '0') > 9) return NUM_SYNTAX;
        for (; p < e && (unsigned)(*p - '0') <= 9; p++)
            if (x < 100000000) x = x * 10 + (*p - '0'); /* far beyond any double's range */
        e10 += eneg ? -x : x;
    }
    if (p != e) return NUM_SYNTAX;
    /* Clinger's fast path: w and 10^|e10| both exact doubles, so one
     * IEEE operation rounds the exact value once, correctly. */
    if (digits <= 19 && w <= (1ULL << 53) && e10 >= -22 && e10 <= 22) {
        double f = (double)w;
        f = e10 < 0 ? f / exact10[-e10] : f * exact10[e10];
        *v = neg ? -f : f;
        return NUM_OK;
    }
    char buf[512];
    if (n >= sizeof buf) { /* longer than any number worth writing out; strtod needs a terminated copy */
        char *heap = malloc(n + 1);
        if (!heap) return NUM_RANGE;
        memcpy(heap, s, n);
        heap[n] = 0;
        *v = strtod(heap, NULL);
        free(heap);
    } else {
        memcpy(buf, s, n);
        buf[n] = 0;
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
