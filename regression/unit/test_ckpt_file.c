/* The checkpoint file on MPI_COMM_SELF: a round trip of every kind of
 * blob, byte-identical files from identical saves, and the damage the
 * loader must refuse (each on a copy of a good file: ECORRUPT for a
 * damaged file, EINPUT for a sound one of another job or format). */
#include "unit.h"

#include "cairn/ckpt_file.h"
#include "cairn/h5util.h"
#include "cairn/tensor.h"

#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

/* Open MPI's own allocations at exit cannot be told from cairn's; the
 * fuzz target covers the file format's leaks without MPI. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return 1; }

static const char *job_text =
    "name = \"t\"; seed = 5; groups = ( { name = \"g\"; ranks = 1; } );\n"
    "init = ( { group = \"g\"; steps = (\n"
    "  { op = \"fill\"; out = \"count\"; dtype = \"i64\"; value = 7; },\n"
    "  { op = \"range\"; out = \"rows\"; shape = [5, 3]; dtype = \"f32\"; dist = \"sharded\"; },\n"
    "  { op = \"range\"; out = \"mine\"; shape = [2]; dtype = \"f64\"; dist = \"per-rank\"; start = 3; } ); } );\n"
    "epoch = ( { group = \"g\"; steps = ( { op = \"add\"; in = [\"count\", \"count\"]; out = \"count\"; } ); } );\n"
    "stop = { max_epochs = 1; };\n";

struct fx {
    struct job *job;
    struct plan *plan;
    struct diags d;
    struct tensor t[8];
    struct tensor *tp[8];
    struct ckpt_view v;
};

static void fx_open(struct fx *f, const char *text)
{
    memset(f, 0, sizeof *f);
    int rc = load_text(text, NULL, 0, 1, &f->job, &f->plan, &f->d);
    if (rc) show(&f->d);
    assert_int_equal(rc, 0);
    const struct group *g = &f->plan->groups[0];
    assert_true(g->n_blobs <= 8);
    for (int b = 0; b < g->n_blobs; b++) {
        const struct blob_info *bi = &g->blobs[b];
        assert_int_equal(tensor_resize(&f->t[b], bi->type.dtype, &bi->type.shape), 0);
        for (int64_t i = 0; i < tensor_numel(&f->t[b]); i++) tensor_set(&f->t[b], i, (double)(b * 100 + i));
        f->tp[b] = &f->t[b];
    }
    f->v = (struct ckpt_view){.plan = f->plan, .comm = MPI_COMM_SELF, .rank = 0, .group = 0,
                              .group_comm = MPI_COMM_SELF, .group_rank = 0, .group_size = 1,
                              .tensors = f->tp};
}

static void fx_close(struct fx *f)
{
    for (int b = 0; b < 8; b++) tensor_free(&f->t[b]);
    plan_destroy(&f->plan);
    job_destroy(&f->job);
    diags_free(&f->d);
}

static const struct ckpt_meta meta = {.epoch = 3, .step = 2};

static void save(struct fx *f, const char *path)
{
    struct ckpt_io io = {0};
    int rc = ckpt_file_write(&f->v, path, &meta, &io);
    if (rc) fprintf(stderr, "%s\n", cairn_errmsg());
    assert_int_equal(rc, 0);
    assert_true(io.bytes > 0);
}

static int load(struct fx *f, const char *path)
{
    struct ckpt_meta m = {0};
    struct ckpt_io io = {0};
    for (int b = 0; b < f->plan->groups[0].n_blobs; b++) tensor_fill(&f->t[b], -1);
    int rc = ckpt_file_read(&f->v, path, &m, &io);
    if (rc == 0) {
        assert_int_equal(m.epoch, meta.epoch);
        assert_int_equal(m.step, meta.step);
    }
    return rc;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    *n = (size_t)ftell(fp);
    rewind(fp);
    char *buf = malloc(*n + 1);
    assert_int_equal(fread(buf, 1, *n, fp), *n);
    fclose(fp);
    return buf;
}

static void round_trip(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, job_text);
    save(&f, "ck_rt.h5");
    assert_int_equal(load(&f, "ck_rt.h5"), 0);
    const struct group *g = &f.plan->groups[0];
    for (int b = 0; b < g->n_blobs; b++)
        for (int64_t i = 0; i < tensor_numel(&f.t[b]); i++)
            assert_true(tensor_get(&f.t[b], i) == (double)(b * 100 + i));
    assert_int_equal(ckpt_file_verify("ck_rt.h5", NULL, NULL), 0);
    /* the same save twice: the same bytes (no timestamps) */
    save(&f, "ck_rt2.h5");
    size_t n1, n2;
    char *a = slurp("ck_rt.h5", &n1), *b = slurp("ck_rt2.h5", &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    free(a);
    free(b);
    fx_close(&f);
}

/* ---- damage ------------------------------------------------------------------- */

static void set_attr_i64(hid_t f, const char *obj, const char *name, int64_t v)
{
    /* deleted and created again, as h5py replaces an attribute */
    hid_t o = H5Oopen(f, obj, H5P_DEFAULT), a = H5Aopen(o, name, H5P_DEFAULT);
    assert_true(a >= 0);
    hid_t t = H5Aget_type(a);
    H5Aclose(a);
    assert_true(H5Adelete(o, name) >= 0);
    assert_int_equal(h5_attr_put(o, name, t, &v), 0);
    H5Tclose(t);
    H5Oclose(o);
}

static void flip_value(hid_t f)
{
    hid_t d = H5Dopen2(f, "/groups/g/rows", H5P_DEFAULT);
    float v[15];
    assert_true(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    v[7] += 1;
    assert_true(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(d);
}
static void bad_checksum(hid_t f) { set_attr_i64(f, "/groups/g/count", "checksum", 12345); }
static void epoch_changed(hid_t f) { set_attr_i64(f, "/", "epoch", 4); }
static void ranks_changed(hid_t f) { set_attr_i64(f, "/groups/g", "ranks", 2); }
static void blob_removed(hid_t f) { assert_true(H5Ldelete(f, "/groups/g/mine", H5P_DEFAULT) >= 0); }
static void root_attr_removed(hid_t f) { assert_true(H5Adelete(f, "seed") >= 0); }
static void format_changed(hid_t f)
{
    int32_t v = 99;
    hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
    assert_true(H5Awrite(a, H5T_NATIVE_INT32, &v) >= 0);
    H5Aclose(a);
}

/* the count dataset again, as f64 of the same value */
static void type_changed(hid_t f)
{
    uint64_t sum = 0;
    hid_t a = H5Aopen_by_name(f, "/groups/g/count", "checksum", H5P_DEFAULT, H5P_DEFAULT);
    assert_true(H5Aread(a, H5T_NATIVE_UINT64, &sum) >= 0);
    H5Aclose(a);
    assert_true(H5Ldelete(f, "/groups/g/count", H5P_DEFAULT) >= 0);
    struct tensor t = {0};
    struct shape s = {0};
    assert_int_equal(tensor_resize(&t, DT_F64, &s), 0);
    tensor_set(&t, 0, 7);
    hid_t g = H5Gopen2(f, "/groups/g", H5P_DEFAULT);
    assert_int_equal(h5_put_tensor(g, "count", &t), 0);
    hid_t d = H5Dopen2(g, "count", H5P_DEFAULT);
    assert_int_equal(h5_attr_put(d, "checksum", H5T_NATIVE_UINT64, &sum), 0);
    assert_int_equal(h5_attr_put_str(d, "dist", "replicated"), 0);
    H5Dclose(d);
    H5Gclose(g);
    tensor_free(&t);
}

static void damage_file(const char *good, const char *path, void (*how)(hid_t))
{
    size_t n;
    char *buf = slurp(good, &n);
    FILE *fp = fopen(path, "wb");
    assert_int_equal(fwrite(buf, 1, n, fp), n);
    fclose(fp);
    free(buf);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    how(f);
    assert_true(H5Fclose(f) >= 0);
}

static void write_bytes(const char *good, const char *path, long keep, const char *junk)
{
    size_t n;
    char *buf = slurp(good, &n);
    FILE *fp = fopen(path, "wb");
    if (junk) fputs(junk, fp);
    else assert_int_equal(fwrite(buf, 1, (size_t)keep, fp), (size_t)keep);
    fclose(fp);
    free(buf);
}

static void damage_is_refused(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        void (*how)(hid_t);
        int want;
    } cases[] = {
        {"flipped value", flip_value, CAIRN_ECORRUPT},
        {"wrong checksum", bad_checksum, CAIRN_ECORRUPT},
        {"epoch changed, metadata not resealed", epoch_changed, CAIRN_ECORRUPT},
        {"group ranks changed", ranks_changed, CAIRN_ECORRUPT},
        {"blob removed", blob_removed, CAIRN_ECORRUPT},
        {"root attribute removed", root_attr_removed, CAIRN_ECORRUPT},
        {"dataset of another type", type_changed, CAIRN_ECORRUPT},
        {"another format version", format_changed, CAIRN_ECORRUPT},
    };
    struct fx f;
    fx_open(&f, job_text);
    save(&f, "ck_good.h5");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        damage_file("ck_good.h5", "ck_bad.h5", cases[i].how);
        int rc = load(&f, "ck_bad.h5");
        if (rc != cases[i].want) fprintf(stderr, "%s: got %d (%s)\n", cases[i].name, rc, cairn_errmsg());
        assert_int_equal(rc, cases[i].want);
        assert_int_equal(ckpt_file_verify("ck_bad.h5", NULL, NULL), cases[i].want);
    }
    size_t n;
    free(slurp("ck_good.h5", &n));
    write_bytes("ck_good.h5", "ck_bad.h5", (long)n / 2, NULL);
    assert_int_equal(load(&f, "ck_bad.h5"), CAIRN_ECORRUPT);
    write_bytes("ck_good.h5", "ck_bad.h5", 0, "not an HDF5 file\n");
    assert_int_equal(load(&f, "ck_bad.h5"), CAIRN_ECORRUPT);
    assert_int_equal(load(&f, "ck_good.h5"), 0); /* and the good one still loads */
    fx_close(&f);
}

/* A sound checkpoint of other settings is bad input, not damage. */
static void other_job_is_input_error(void **state)
{
    (void)state;
    struct fx a, b;
    fx_open(&a, job_text);
    save(&a, "ck_other.h5");
    fx_close(&a);
    char *text = strdup(job_text);
    char *p = strstr(text, "shape = [5, 3]");
    p[9] = '4'; /* rows becomes [5, 4] */
    fx_open(&b, text);
    assert_int_equal(load(&b, "ck_other.h5"), CAIRN_EINPUT);
    fx_close(&b);
    free(text);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    h5_quiet();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(damage_is_refused),
        cmocka_unit_test(other_job_is_input_error),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink("ck_rt.h5");
    unlink("ck_rt2.h5");
    unlink("ck_good.h5");
    unlink("ck_bad.h5");
    unlink("ck_other.h5");
    MPI_Finalize();
    return rc;
}
