/* The ranks' BLAS kernels as text (blas_kernel.h): one kernel alone names
 * no ranks, so the text is the same on any number of ranks; several are
 * listed by first rank with their ranks as runs and, for the log, their
 * hosts (the first eight, then a count); the core of a lone kernel is
 * found again from its text, and of a mixed one not. */
#include "unit.h"

#include "cairn/blas_kernel.h"
#include "cairn/strbuf.h"

static struct blas_kernel kernel(const char *core)
{
    struct blas_kernel k;
    memset(&k, 0, sizeof k);
    snprintf(k.core, sizeof k.core, "%s", core);
    snprintf(k.config, sizeof k.config, "OpenBLAS 0.3.21 DYNAMIC_ARCH %s", core);
    return k;
}

static void one_kernel_names_no_ranks(void **state)
{
    (void)state;
    struct blas_kernel k[3] = {kernel("Zen"), kernel("Zen"), kernel("Zen")};
    struct strbuf a = {0}, b = {0};
    char core[BLAS_CORE_MAX];
    assert_int_equal(blas_kernels_distinct(k, 3), 1);
    assert_int_equal(blas_kernels_text(k, 3, NULL, &a), 0);
    assert_int_equal(blas_kernels_text(k, 1, NULL, &b), 0);
    assert_string_equal(strbuf_str(&a), "Zen (OpenBLAS 0.3.21 DYNAMIC_ARCH Zen)");
    assert_string_equal(strbuf_str(&a), strbuf_str(&b));
    blas_kernels_core(strbuf_str(&a), core);
    assert_string_equal(core, "Zen");
    strbuf_free(&a);
    strbuf_free(&b);
}

static void mixed_kernels_by_first_rank(void **state)
{
    (void)state;
    enum { N = 14 };
    struct blas_kernel k[N];
    char hosts[N][PLACEMENT_HOST_MAX];
    for (int r = 0; r < N; r++) {
        k[r] = kernel(r == 1 || r == 2 || r == 5 ? "SkylakeX" : "Haswell");
        snprintf(hosts[r], sizeof hosts[r], "node%d", r < 3 ? 1 : r);
    }
    struct strbuf a = {0}, b = {0};
    char core[BLAS_CORE_MAX];
    assert_int_equal(blas_kernels_distinct(k, N), 2);
    assert_int_equal(blas_kernels_text(k, N, NULL, &a), 0);
    assert_string_equal(strbuf_str(&a), "Haswell (OpenBLAS 0.3.21 DYNAMIC_ARCH Haswell) on ranks 0,3,4,6-13; "
                                        "SkylakeX (OpenBLAS 0.3.21 DYNAMIC_ARCH SkylakeX) on ranks 1,2,5");
    assert_int_equal(blas_kernels_text(k, N, (const char(*)[PLACEMENT_HOST_MAX])hosts, &b), 0);
    assert_string_equal(strbuf_str(&b),
                        "Haswell (OpenBLAS 0.3.21 DYNAMIC_ARCH Haswell) on ranks 0,3,4,6-13 (node1, node3, node4, "
                        "node6, node7, node8, node9, node10 and 3 more); "
                        "SkylakeX (OpenBLAS 0.3.21 DYNAMIC_ARCH SkylakeX) on ranks 1,2,5 (node1, node5)");
    blas_kernels_core(strbuf_str(&a), core);
    assert_string_equal(core, "");
    strbuf_free(&a);
    strbuf_free(&b);
}

static void this_process_has_a_kernel(void **state)
{
    (void)state;
    struct blas_kernel k, again;
    blas_kernel_get(&k);
    blas_kernel_get(&again);
    assert_true(k.core[0] && k.config[0]);
    assert_true(blas_kernel_same(&k, &again));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_kernel_names_no_ranks),
        cmocka_unit_test(mixed_kernels_by_first_rank),
        cmocka_unit_test(this_process_has_a_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
