/* Gathering rows of HDF5 datasets: both selection strategies (short rows
 * element by element, long rows as a hyperslab union), repeats, any order,
 * type conversion and out-of-range rows; shapes a file claims and
 * unsigned 64-bit values. */
#include "unit.h"

#include "cairn/h5util.h"
#include "cairn/reader.h"

#include <unistd.h>

static char file[64];

/* "short": 10 x 3 int32 (element i*3+j = 100 i + j); "long": 10 x 9 x 10
 * f64 (100 elements a row: element (i, j, k) = 1000 i + 10 j + k). */
static int make_file(void **state)
{
    (void)state;
    snprintf(file, sizeof file, "/tmp/cairn-unit-reader-%d.h5", (int)getpid());
    hid_t f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t d2[2] = {10, 3}, d3[3] = {10, 9, 10};
    int32_t s[30];
    double l[900];
    for (int i = 0; i < 30; i++) s[i] = 100 * (i / 3) + i % 3;
    for (int i = 0; i < 900; i++) l[i] = 1000 * (i / 90) + 10 * (i / 10 % 9) + i % 10;
    hid_t sp = H5Screate_simple(2, d2, NULL);
    hid_t d = H5Dcreate2(f, "short", H5T_NATIVE_INT32, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    herr_t e = H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, s);
    H5Dclose(d);
    H5Sclose(sp);
    sp = H5Screate_simple(3, d3, NULL);
    d = H5Dcreate2(f, "long", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (e >= 0) e = H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, l);
    H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
    return f < 0 || e < 0;
}

static int remove_file(void **state)
{
    (void)state;
    return unlink(file);
}

static const int64_t want[] = {7, 2, 2, 9, 0};

static void short_rows(void **state)
{
    (void)state;
    struct reader_cache *c = NULL;
    struct tensor out = {0};
    assert_int_equal(reader_cache_create(&c), 0);
    assert_int_equal(reader_gather(c, file, "short", want, 5, DT_F32, &out), 0);
    assert_int_equal(out.shape.ndim, 2);
    assert_int_equal(out.shape.d[0], 5);
    assert_int_equal(out.shape.d[1], 3);
    for (int r = 0; r < 5; r++)
        for (int j = 0; j < 3; j++) assert_true(tensor_get(&out, r * 3 + j) == 100 * want[r] + j);
    const int64_t run[] = {4, 5, 6, 7}; /* one ascending run: read as a block */
    assert_int_equal(reader_gather(c, file, "short", run, 4, DT_F32, &out), 0);
    assert_int_equal(out.shape.d[0], 4);
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 3; j++) assert_true(tensor_get(&out, r * 3 + j) == 100 * run[r] + j);
    tensor_free(&out);
    reader_cache_destroy(&c);
}

static void long_rows(void **state)
{
    (void)state;
    struct reader_cache *c = NULL;
    struct tensor out = {0};
    assert_int_equal(reader_cache_create(&c), 0);
    assert_int_equal(reader_gather(c, file, "long", want, 5, DT_F64, &out), 0);
    assert_int_equal(out.shape.ndim, 3);
    assert_int_equal(out.shape.d[0], 5);
    for (int r = 0; r < 5; r++)
        for (int i = 0; i < 90; i++)
            assert_true(tensor_get(&out, r * 90 + i) == 1000 * want[r] + 10 * (i / 10) + i % 10);
    tensor_free(&out);
    reader_cache_destroy(&c);
}

static void outside_rows_are_errors(void **state)
{
    (void)state;
    struct reader_cache *c = NULL;
    struct tensor out = {0};
    const int64_t bad[] = {3, 10};
    assert_int_equal(reader_cache_create(&c), 0);
    assert_int_equal(reader_gather(c, file, "short", bad, 2, DT_F32, &out), CAIRN_ERUNTIME);
    assert_non_null(strstr(cairn_errmsg(), "row 10 is outside dataset 'short' (10 rows)"));
    tensor_free(&out);
    reader_cache_destroy(&c);
}

/* A dataset of n unsigned 64-bit elements ([n] or [n, 1]); data may be
 * NULL (chunked, never written: any size costs nothing). */
static int make_u64(const char *name, hsize_t n, int nd, const uint64_t *data)
{
    hid_t f = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
    hsize_t dims[2] = {n, 1}, chunk[2] = {1024, 1};
    hid_t sp = H5Screate_simple(nd, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    herr_t e = data ? 0 : H5Pset_chunk(dcpl, nd, chunk);
    hid_t d = H5Dcreate2(f, name, H5T_NATIVE_UINT64, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (data && d >= 0) e = H5Dwrite(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(sp);
    H5Fclose(f);
    return d < 0 || e < 0 ? -1 : 0;
}

/* A shape beyond 2^60 elements is refused when opened, naming file and
 * dataset; an unsigned id reads clamped as i64 and exact by reader_u64. */
static void claimed_shapes_and_unsigned(void **state)
{
    (void)state;
    struct reader_cache *c = NULL;
    struct shape s;
    enum dtype t;
    uint64_t u = 0;
    const uint64_t ids[3] = {1, UINT64_MAX, UINT64_C(1) << 63};
    assert_int_equal(make_u64("huge", (hsize_t)1 << 61, 1, NULL), 0);
    assert_int_equal(make_u64("most", (hsize_t)1 << 60, 1, NULL), 0);
    assert_int_equal(make_u64("u64", 3, 2, ids), 0);
    assert_int_equal(reader_cache_create(&c), 0);
    assert_int_equal(reader_shape(c, file, "huge", &s, &t), CAIRN_EINPUT);
    assert_non_null(strstr(cairn_errmsg(), "dataset 'huge' in '"));
    assert_non_null(strstr(cairn_errmsg(), "is [2305843009213693952], more than 2^60 elements"));
    assert_int_equal(reader_shape(c, file, "most", &s, &t), 0);
    assert_true(s.d[0] == INT64_C(1) << 60);
    struct tensor out = {0};
    assert_int_equal(reader_rows(c, file, "u64", 0, 3, DT_I64, &out), 0);
    assert_true(((int64_t *)out.data)[1] == INT64_MAX); /* HDF5 clamps */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(reader_u64(c, file, "u64", i, 0, &u), 0);
        assert_true(u == ids[i]);
    }
    assert_int_equal(reader_u64(c, file, "u64", 3, 0, &u), CAIRN_ERUNTIME);
    tensor_free(&out);
    reader_cache_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(short_rows),
        cmocka_unit_test(long_rows),
        cmocka_unit_test(outside_rows_are_errors),
        cmocka_unit_test(claimed_shapes_and_unsigned),
    };
    return cmocka_run_group_tests(tests, make_file, remove_file);
}
