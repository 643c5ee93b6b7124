/* Numbers from text (numtext.h), as `cairn data import` parses fields:
 * every decimal form gives strtod's double (the fast path included), and
 * anything else is refused, never read as a zero. */
#include "unit.h"

#include "cairn/numtext.h"
#include "cairn/rng.h"

#include <math.h>

static int f64(const char *s, double *v) { return num_f64(s, strlen(s), v); }

/* Random decimals of every shape, against strtod bit for bit. */
static void agrees_with_strtod(void **state)
{
    (void)state;
    char s[64];
    for (uint64_t i = 0; i < 400000; i++) {
        uint64_t r = rng_u64(1, 0, i), digits = 1 + r % 25, point = (r >> 8) % (digits + 2);
        int n = 0;
        if (r >> 16 & 1) s[n++] = '-';
        for (uint64_t d = 0; d < digits; d++) {
            if (d == point) s[n++] = '.';
            s[n++] = (char)('0' + rng_u64(1, 1, i * 32 + d) % 10);
        }
        if (r >> 17 & 1) n += snprintf(s + n, sizeof s - (size_t)n, "e%d", (int)((r >> 20) % 700) - 350);
        s[n] = 0;
        double want = strtod(s, NULL), got = 0;
        int rc = f64(s, &got);
        if (isinf(want)) {
            assert_int_equal(rc, NUM_RANGE);
            continue;
        }
        if (rc != NUM_OK || memcmp(&got, &want, sizeof got) != 0) fail_msg("'%s': got %.17g, want %.17g", s, got, want);
    }
}

static void forms_and_refusals(void **state)
{
    (void)state;
    double v;
    assert_int_equal(f64(" 1.5 ", &v), NUM_OK);
    assert_true(v == 1.5);
    assert_int_equal(f64(".5", &v), NUM_OK);
    assert_true(v == 0.5);
    assert_int_equal(f64("5.", &v), NUM_OK);
    assert_true(v == 5);
    assert_int_equal(f64("-0", &v), NUM_OK);
    assert_true(v == 0 && signbit(v));
    assert_int_equal(f64("1e-400", &v), NUM_OK); /* underflow is a value: zero */
    assert_true(v == 0);
    assert_int_equal(f64("0.1e1", &v), NUM_OK);
    assert_true(v == 1);
    assert_int_equal(f64("1e309", &v), NUM_RANGE);
    const char *bad[] = {"", " ", ".", "-", "e5", "1e", "1e+", "0x10", "inf", "nan", "1,5", "1.5.2", "1 2", "+-1", "1_0", "１"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (f64(bad[i], &v) != NUM_SYNTAX) fail_msg("'%s' was read as a number", bad[i]);
}

static void integers(void **state)
{
    (void)state;
    int64_t v;
    assert_int_equal(num_i64("9223372036854775807", 19, &v), NUM_OK);
    assert_true(v == INT64_MAX);
    assert_int_equal(num_i64("-9223372036854775808", 20, &v), NUM_OK);
    assert_true(v == INT64_MIN);
    assert_int_equal(num_i64("9223372036854775808", 19, &v), NUM_RANGE);
    assert_int_equal(num_i64("-9223372036854775809", 20, &v), NUM_RANGE);
    assert_int_equal(num_i64(" -1 ", 4, &v), NUM_OK);
    assert_true(v == -1);
    assert_int_equal(num_i64("1.0", 3, &v), NUM_SYNTAX);
    assert_int_equal(num_i64("", 0, &v), NUM_SYNTAX);
    assert_int_equal(num_i64("99999999999999999999x", 21, &v), NUM_SYNTAX); /* syntax first */
}

/* The hash cairn-job(5) documents, on known values (FNV-1a's own test
 * vectors, SplitMix64's first output). */
static void hash_values(void **state)
{
    (void)state;
    assert_true(num_fnv1a(NUM_FNV_BASIS, "", 0) == 0xcbf29ce484222325ULL);
    assert_true(num_fnv1a(NUM_FNV_BASIS, "a", 1) == 0xaf63dc4c8601ec8cULL);
    assert_true(num_fnv1a(NUM_FNV_BASIS, "foobar", 6) == 0x85944171f73967e8ULL);
    assert_true(num_mix(0x9e3779b97f4a7c15ULL) == 0xe220a8397b1dcdafULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(agrees_with_strtod),
        cmocka_unit_test(forms_and_refusals),
        cmocka_unit_test(integers),
        cmocka_unit_test(hash_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
