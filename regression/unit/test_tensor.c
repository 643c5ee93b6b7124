/* Tensor kernels and balanced partitions. */
#include "unit.h"

#include "cairn/partition.h"
#include "cairn/tensor.h"

#include <math.h>

static struct shape vec(int64_t n) { return (struct shape){.ndim = 1, .d = {n}}; }

static void fill_add_axpy(void **state)
{
    (void)state;
    struct tensor a = {0}, b = {0}, s = {0}, out = {0};
    struct shape sc = {0}, v = vec(4);
    assert_int_equal(tensor_resize(&a, DT_F64, &v), 0);
    assert_int_equal(tensor_resize(&b, DT_F64, &v), 0);
    assert_int_equal(tensor_resize(&s, DT_F64, &sc), 0);
    for (int i = 0; i < 4; i++) {
        tensor_set(&a, i, i);
        tensor_set(&b, i, 10 * i);
    }
    tensor_fill(&s, 0.5);
    assert_int_equal(tensor_add(&out, &a, &b), 0);
    assert_true(tensor_get(&out, 3) == 33.0);
    assert_int_equal(tensor_add(&out, &a, &s), 0); /* scalar broadcast */
    assert_true(tensor_get(&out, 2) == 2.5);
    assert_int_equal(tensor_axpy(&a, 2.0, &a, &b), 0); /* aliasing the output */
    assert_true(tensor_get(&a, 3) == 36.0);
    assert_int_equal(tensor_add(&s, &s, &s), 0);
    assert_true(tensor_get(&s, 0) == 1.0);
    tensor_free(&a);
    tensor_free(&b);
    tensor_free(&s);
    tensor_free(&out);
}

static void mismatches_are_errors(void **state)
{
    (void)state;
    struct tensor a = {0}, b = {0}, out = {0};
    struct shape v3 = vec(3), v4 = vec(4);
    tensor_resize(&a, DT_F32, &v3);
    tensor_resize(&b, DT_F32, &v4);
    assert_int_equal(tensor_add(&out, &a, &b), CAIRN_ERUNTIME);
    assert_non_null(strstr(cairn_errmsg(), "shapes [3] and [4] differ"));
    tensor_resize(&b, DT_I32, &v3);
    assert_int_equal(tensor_add(&out, &a, &b), CAIRN_ERUNTIME);
    assert_non_null(strstr(cairn_errmsg(), "dtypes f32 and i32 differ"));
    tensor_free(&a);
    tensor_free(&b);
    tensor_free(&out);
}

static void integers_are_exact(void **state)
{
    (void)state;
    struct tensor a = {0}, out = {0};
    struct shape sc = {0};
    tensor_resize(&a, DT_I64, &sc);
    tensor_set_i64(&a, 0, (INT64_C(1) << 60) + 1); /* not representable as a double */
    assert_int_equal(tensor_scale(&out, &a, 2.0), 0);
    assert_true(tensor_get_i64(&out, 0) == (INT64_C(1) << 61) + 2);
    assert_int_equal(tensor_sum(&out, &a), 0);
    assert_true(tensor_get_i64(&out, 0) == (INT64_C(1) << 60) + 1);
    tensor_free(&a);
    tensor_free(&out);
}

static void cmp_and_any(void **state)
{
    (void)state;
    struct tensor a = {0};
    struct shape v = vec(3);
    tensor_resize(&a, DT_F32, &v);
    assert_false(tensor_any(&a)); /* new elements are zero */
    tensor_set(&a, 2, 0.98);
    assert_int_equal(tensor_cmp(&a, &a, CMP_GE, 0.97), 0); /* in place, changes dtype */
    assert_int_equal(a.dtype, DT_I32);
    assert_int_equal(tensor_get_i64(&a, 0), 0);
    assert_int_equal(tensor_get_i64(&a, 2), 1);
    assert_true(tensor_any(&a));
    bool ok;
    assert_int_equal(cmp_parse(">=", &ok), CMP_GE);
    assert_true(ok);
    cmp_parse("~", &ok);
    assert_false(ok);
    tensor_free(&a);
}

/* A model's weights are refused at their first NaN or infinity. */
static void first_nonfinite(void **state)
{
    (void)state;
    struct tensor f = {0}, d = {0}, i = {0};
    struct shape v = vec(5);
    assert_int_equal(tensor_resize(&f, DT_F32, &v), 0);
    assert_int_equal(tensor_resize(&d, DT_F64, &v), 0);
    assert_int_equal(tensor_resize(&i, DT_I32, &v), 0);
    assert_int_equal(tensor_first_nonfinite(&f), -1);
    tensor_set(&f, 3, INFINITY);
    tensor_set(&f, 4, NAN);
    assert_int_equal(tensor_first_nonfinite(&f), 3);
    tensor_set(&d, 1, -INFINITY);
    assert_int_equal(tensor_first_nonfinite(&d), 1);
    assert_int_equal(tensor_first_nonfinite(&i), -1);
    tensor_free(&f);
    tensor_free(&d);
    tensor_free(&i);
}

static void formats(void **state)
{
    (void)state;
    char buf[128];
    struct shape s = {.ndim = 2, .d = {-1, 4}};
    assert_string_equal(shape_format(&s, buf, sizeof buf), "[?, 4]");
    struct tensor t = {0};
    struct shape v = vec(10);
    tensor_resize(&t, DT_I32, &v);
    for (int i = 0; i < 10; i++) tensor_set_i64(&t, i, i);
    assert_string_equal(tensor_format(&t, buf, sizeof buf), "[0, 1, 2, 3, 4, 5, ... 4 more]");
    tensor_free(&t);
}

static void partitions_cover_exactly(void **state)
{
    (void)state;
    for (int64_t n = 0; n < 60; n++) {
        for (int64_t parts = 1; parts < 8; parts++) {
            int64_t next = 0, lo, hi, min = INT64_MAX, max = 0;
            for (int64_t i = 0; i < parts; i++) {
                part_range(n, parts, i, &lo, &hi);
                assert_true(lo == next); /* contiguous, in order */
                next = hi;
                if (hi - lo < min) min = hi - lo;
                if (hi - lo > max) max = hi - lo;
            }
            assert_true(next == n);
            assert_true(max - min <= 1); /* balanced */
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fill_add_axpy),          cmocka_unit_test(mismatches_are_errors),
        cmocka_unit_test(integers_are_exact),     cmocka_unit_test(cmp_and_any),
        cmocka_unit_test(formats),                cmocka_unit_test(first_nonfinite),
        cmocka_unit_test(partitions_cover_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
