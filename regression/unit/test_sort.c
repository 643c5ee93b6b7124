/* The radix sort against qsort: random keys of every width, duplicates,
 * sorted and reversed input, short arrays; pairs keep the order of equal
 * keys. */
#include "unit.h"

#include "cairn/rng.h"
#include "cairn/sort.h"

static int by_key_then_val(const void *a, const void *b)
{
    const struct sort_kv *x = a, *y = b;
    if (x->key != y->key) return (x->key > y->key) - (x->key < y->key);
    return (x->val > y->val) - (x->val < y->val);
}

/* n keys below 2^bits (spread over few values when dup), in one of four
 * orders: random, ascending, descending, all equal. */
static void fill(struct sort_kv *v, int64_t n, int bits, int order, uint64_t seed)
{
    uint64_t mask = bits >= 63 ? INT64_MAX : ((uint64_t)1 << bits) - 1;
    for (int64_t i = 0; i < n; i++) {
        uint64_t k = rng_u64(seed, (uint64_t)bits, (uint64_t)i) & mask;
        if (order == 1) k = (uint64_t)i & mask;
        if (order == 2) k = (uint64_t)(n - i) & mask;
        if (order == 3) k = mask;
        v[i] = (struct sort_kv){(int64_t)k, i}; /* val ascending: qsort by (key, val) is the stable order */
    }
}

static void pairs_match_qsort(void **state)
{
    (void)state;
    const int64_t sizes[] = {0, 1, 2, 31, 32, 33, 1000, 70000};
    const int widths[] = {1, 7, 8, 9, 20, 40, 63};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
            for (int order = 0; order < 4; order++) {
                int64_t n = sizes[s];
                struct sort_kv *a = malloc((size_t)(n + 1) * sizeof *a), *b = malloc((size_t)(n + 1) * sizeof *b);
                int64_t *k = malloc((size_t)(n + 1) * sizeof *k);
                assert_non_null(a);
                assert_non_null(b);
                assert_non_null(k);
                fill(a, n, widths[w], order, 11 + (uint64_t)s);
                memcpy(b, a, (size_t)n * sizeof *a);
                for (int64_t i = 0; i < n; i++) k[i] = a[i].key;
                qsort(b, (size_t)n, sizeof *b, by_key_then_val);
                assert_int_equal(sort_kv(a, n), 0);
                assert_memory_equal(a, b, (size_t)n * sizeof *a);
                assert_int_equal(sort_i64(k, n), 0);
                for (int64_t i = 0; i < n; i++) assert_int_equal(k[i], b[i].key);
                free(a);
                free(b);
                free(k);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pairs_match_qsort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
