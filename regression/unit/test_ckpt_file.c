/* The checkpoint file on MPI_COMM_SELF: a round trip of every kind of
 * blob, byte-identical files from identical saves, and the damage the
 * loader must refuse: each kind regression/damage.py makes for the
 * scenarios, here on a copy of a good file (ECORRUPT for a damaged file,
 * EINPUT for a sound one of another job or format). */
#include "unit.h"

#include "cairn/checksum.h"
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
    "name = \"t\"; seed = 5; groups = ( { name = \"main\"; ranks = 1; } );\n"
    "init = ( { group = \"main\"; steps = (\n"
    "  { op = \"fill\"; out = \"total\"; dtype = \"i64\"; value = 7; },\n"
    "  { op = \"fill\"; out = \"cursor\"; dtype = \"i64\"; value = 2; },\n"
    "  { op = \"range\"; out = \"rows\"; shape = [5, 3]; dtype = \"f32\"; dist = \"sharded\"; },\n"
    "  { op = \"range\"; out = \"mine\"; shape = [2]; dtype = \"f64\"; dist = \"per-rank\"; start = 3; } ); } );\n"
    "epoch = ( { group = \"main\"; steps = ( { op = \"add\"; in = [\"total\", \"cursor\"]; out = \"total\"; } ); } );\n"
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

/* ---- damage: every kind regression/damage.py makes, and a few more ---------- */

static hid_t attr_space(int n) { return n ? H5Screate_simple(1, (hsize_t[]){(hsize_t)n}, NULL) : H5Screate(H5S_SCALAR); }

/* Attribute name of object path, replaced by n (0: a scalar) values of type. */
static void put(hid_t f, const char *path, const char *name, hid_t type, int n, const void *v)
{
    hid_t o = H5Oopen(f, path, H5P_DEFAULT), sp = attr_space(n);
    assert_true(o >= 0);
    if (H5Aexists(o, name) > 0) assert_true(H5Adelete(o, name) >= 0);
    hid_t a = H5Acreate2(o, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, type, v) >= 0);
    H5Aclose(a);
    H5Sclose(sp);
    H5Oclose(o);
}

static hid_t str_type(size_t size, H5T_str_t pad)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, size);
    H5Tset_strpad(t, pad);
    return t;
}

static void put_str(hid_t f, const char *path, const char *name, const char *v)
{
    hid_t t = str_type(strlen(v) + 1, H5T_STR_NULLTERM);
    put(f, path, name, t, 0, v);
    H5Tclose(t);
}

static void get(hid_t f, const char *path, const char *name, hid_t type, void *v)
{
    hid_t a = H5Aopen_by_name(f, path, name, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Aread(a, type, v) >= 0);
    H5Aclose(a);
}

static char *get_str(hid_t f, const char *name) /* a root string attribute; caller frees */
{
    hid_t a = H5Aopen(f, name, H5P_DEFAULT), t = H5Aget_type(a);
    size_t n = H5Tget_size(t);
    char *s = calloc(n + 1, 1);
    assert_true(H5Aread(a, t, s) >= 0);
    H5Tclose(t);
    H5Aclose(a);
    return s;
}

static void i64_array(hid_t f, const char *path, const char *name)
{
    int64_t v, many[64];
    get(f, path, name, H5T_NATIVE_INT64, &v);
    for (int i = 0; i < 64; i++) many[i] = v;
    put(f, path, name, H5T_NATIVE_INT64, 64, many);
}

/* A meta_checksum that matches the root's (changed) metadata, as
 * cairn-job(5) defines it. */
static void seal(hid_t f)
{
    int64_t epoch, step, done, seed, world, ranks;
    int32_t fmt;
    get(f, "/", "epoch", H5T_NATIVE_INT64, &epoch);
    get(f, "/", "step", H5T_NATIVE_INT64, &step);
    get(f, "/", "done", H5T_NATIVE_INT64, &done);
    get(f, "/", "seed", H5T_NATIVE_INT64, &seed);
    get(f, "/", "world_size", H5T_NATIVE_INT64, &world);
    get(f, "/", "format_version", H5T_NATIVE_INT32, &fmt);
    get(f, "/groups/main", "ranks", H5T_NATIVE_INT64, &ranks);
    char *settings = get_str(f, "settings"), *meta = NULL, sum[17];
    assert_true(asprintf(&meta, "format=%d\nepoch=%lld\nstep=%lld\ndone=%lld\nseed=%lld\n"
                         "world_size=%lld\ngroup main ranks=%lld\n%s", fmt, (long long)epoch,
                         (long long)step, (long long)done, (long long)seed, (long long)world,
                         (long long)ranks, settings) > 0);
    checksum_text(meta, sum);
    put_str(f, "/", "meta_checksum", sum);
    free(meta);
    free(settings);
}

/* /groups/main/total replaced by a dataset of another shape or type,
 * keeping its attributes (checksum: the given one, or the old). */
static void replace_total(hid_t f, hid_t type, int ndim, const hsize_t *dims, const hsize_t *max,
                          hid_t dcpl, const void *data, const uint64_t *checksum)
{
    uint64_t sum;
    char dist[32] = "";
    get(f, "/groups/main/total", "checksum", H5T_NATIVE_UINT64, &sum);
    hid_t t = str_type(sizeof dist, H5T_STR_NULLTERM);
    get(f, "/groups/main/total", "dist", t, dist);
    H5Tclose(t);
    assert_true(H5Ldelete(f, "/groups/main/total", H5P_DEFAULT) >= 0);
    hid_t sp = ndim ? H5Screate_simple(ndim, dims, max) : H5Screate(H5S_SCALAR);
    hid_t d = H5Dcreate2(f, "/groups/main/total", type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    assert_true(d >= 0);
    if (data) assert_true(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    H5Dclose(d);
    H5Sclose(sp);
    put(f, "/groups/main/total", "checksum", H5T_NATIVE_UINT64, 0, checksum ? checksum : &sum);
    put_str(f, "/groups/main/total", "dist", dist);
}

static int64_t total_value(hid_t f)
{
    int64_t v;
    hid_t d = H5Dopen2(f, "/groups/main/total", H5P_DEFAULT);
    assert_true(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) >= 0);
    H5Dclose(d);
    return v;
}

static void damage(const char *kind, hid_t f)
{
    const char *T = "/groups/main/total";
    if (!strcmp(kind, "checksum_array")) {
        uint64_t c, many[64];
        get(f, T, "checksum", H5T_NATIVE_UINT64, &c);
        for (int i = 0; i < 64; i++) many[i] = c;
        put(f, T, "checksum", H5T_NATIVE_UINT64, 64, many);
    } else if (!strcmp(kind, "epoch_array") || !strcmp(kind, "step_array") || !strcmp(kind, "done_array")) {
        char name[8];
        snprintf(name, sizeof name, "%.*s", (int)(strchr(kind, '_') - kind), kind);
        i64_array(f, "/", name);
    } else if (!strcmp(kind, "format_array")) {
        int32_t many[64];
        for (int i = 0; i < 64; i++) many[i] = CAIRN_CKPT_FORMAT;
        put(f, "/", "format_version", H5T_NATIVE_INT32, 64, many);
    } else if (!strcmp(kind, "format_changed") || !strcmp(kind, "format_other")) {
        int32_t v = 7;
        put(f, "/", "format_version", H5T_NATIVE_INT32, 0, &v);
        if (!strcmp(kind, "format_other")) seal(f);
    } else if (!strcmp(kind, "settings_dup") || !strcmp(kind, "settings_changed")) {
        char *s = get_str(f, "settings"), *t = NULL;
        if (!strcmp(kind, "settings_dup")) {
            assert_true(asprintf(&t, "%sblob main/total=i64[] replicated\n", s) > 0);
        } else { /* the first i64[] becomes i64[2], the checksum left as it was */
            char *at = strstr(s, "i64[] replicated");
            assert_non_null(at);
            assert_true(asprintf(&t, "%.*si64[2]%s", (int)(at - s), s, at + 5) > 0);
        }
        put_str(f, "/", "settings", t);
        if (!strcmp(kind, "settings_dup")) seal(f);
        free(s);
        free(t);
    } else if (!strcmp(kind, "format_string")) {
        put_str(f, "/", "format_version", "2");
    } else if (!strcmp(kind, "ranks_array")) {
        i64_array(f, "/groups/main", "ranks");
    } else if (!strcmp(kind, "first_rank_array")) {
        i64_array(f, "/groups/main", "first_rank");
    } else if (!strcmp(kind, "first_rank_big")) {
        int64_t v = 1000;
        put(f, "/groups/main", "first_rank", H5T_NATIVE_INT64, 0, &v);
    } else if (!strcmp(kind, "settings_array") || !strcmp(kind, "job_name_array") ||
               !strcmp(kind, "digest_array") || !strcmp(kind, "cairn_version_array")) {
        char name[16];
        snprintf(name, sizeof name, "%.*s", (int)(strstr(kind, "_array") - kind), kind);
        char *s = get_str(f, name);
        size_t n = strlen(s) + 1;
        char *many = calloc(64, n);
        for (int i = 0; i < 64; i++) memcpy(many + i * n, s, n);
        hid_t t = str_type(n, H5T_STR_NULLTERM);
        put(f, "/", name, t, 64, many);
        H5Tclose(t);
        free(many);
        free(s);
    } else if (!strcmp(kind, "dist_array")) {
        char many[64][11];
        for (int i = 0; i < 64; i++) memcpy(many[i], "replicated", 11);
        hid_t t = str_type(11, H5T_STR_NULLTERM);
        put(f, T, "dist", t, 64, many);
        H5Tclose(t);
    } else if (!strcmp(kind, "dims9")) {
        hsize_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
        int64_t zero = 0;
        replace_total(f, H5T_NATIVE_INT64, 9, dims, NULL, H5P_DEFAULT, &zero, NULL);
    } else if (!strcmp(kind, "epoch_changed")) {
        int64_t v = 2;
        put(f, "/", "epoch", H5T_NATIVE_INT64, 0, &v);
    } else if (!strcmp(kind, "shape_crafted")) { /* a correct checksum for a wrong shape */
        int64_t v[2] = {total_value(f), total_value(f)};
        uint64_t sum = checksum_part(v, 8, 2, 0) + checksum_string("main/total");
        replace_total(f, H5T_NATIVE_INT64, 1, (hsize_t[]){2}, NULL, H5P_DEFAULT, v, &sum);
    } else if (!strcmp(kind, "swapped")) {
        assert_true(H5Lmove(f, T, f, "/groups/main/tmp", H5P_DEFAULT, H5P_DEFAULT) >= 0);
        assert_true(H5Lmove(f, "/groups/main/cursor", f, T, H5P_DEFAULT, H5P_DEFAULT) >= 0);
        assert_true(H5Lmove(f, "/groups/main/tmp", f, "/groups/main/cursor", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    } else if (!strcmp(kind, "huge_chunked")) {
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, (hsize_t[]){1024});
        replace_total(f, H5T_NATIVE_INT64, 1, (hsize_t[]){(hsize_t)1 << 40}, (hsize_t[]){H5S_UNLIMITED},
                      dcpl, NULL, NULL);
        H5Pclose(dcpl);
    } else if (!strcmp(kind, "deleted_dataset")) {
        assert_true(H5Ldelete(f, "/groups/main/cursor", H5P_DEFAULT) >= 0);
    } else if (!strcmp(kind, "deleted_group")) {
        assert_true(H5Ldelete(f, "/groups/main", H5P_DEFAULT) >= 0);
    } else if (!strcmp(kind, "dist_wrong")) {
        put_str(f, T, "dist", "sharded");
    } else if (!strcmp(kind, "dist_missing")) {
        assert_true(H5Adelete_by_name(f, T, "dist", H5P_DEFAULT) >= 0);
    } else if (!strcmp(kind, "dtype_changed")) {
        int32_t v = (int32_t)total_value(f);
        replace_total(f, H5T_NATIVE_INT32, 0, NULL, NULL, H5P_DEFAULT, &v, NULL);
    } else if (strstr(kind, "_missing")) { /* epoch, settings, meta_checksum, checksum_alg */
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(strstr(kind, "_missing") - kind), kind);
        assert_true(H5Adelete(f, name) >= 0);
    } else if (!strcmp(kind, "alg_older")) { /* sound, but an earlier cairn's */
        put_str(f, "/", "checksum_alg", CAIRN_CHECKSUM_OLD);
    } else if (!strcmp(kind, "checksum_float")) {
        double one = 1;
        put(f, T, "checksum", H5T_NATIVE_DOUBLE, 0, &one);
    } else if (!strcmp(kind, "unterminated")) { /* valid: padded, no terminator */
        hid_t t = str_type(10, H5T_STR_NULLPAD);
        put(f, T, "dist", t, 0, "replicated");
        H5Tclose(t);
    } else if (!strcmp(kind, "value_flipped")) {
        int64_t v = total_value(f) + 1;
        hid_t d = H5Dopen2(f, T, H5P_DEFAULT);
        assert_true(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) >= 0);
        H5Dclose(d);
    } else if (!strcmp(kind, "checksum_wrong")) {
        uint64_t v = 12345;
        put(f, T, "checksum", H5T_NATIVE_UINT64, 0, &v);
    } else if (!strcmp(kind, "rows_added")) { /* a sharded blob a row longer, checksum right */
        float v[6 * 3];
        hid_t d = H5Dopen2(f, "/groups/main/rows", H5P_DEFAULT);
        assert_true(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
        H5Dclose(d);
        for (int i = 15; i < 18; i++) v[i] = 0;
        uint64_t sum = checksum_part(v, 4, 18, 0) + checksum_string("main/rows");
        assert_true(H5Ldelete(f, "/groups/main/rows", H5P_DEFAULT) >= 0);
        hid_t sp = H5Screate_simple(2, (hsize_t[]){6, 3}, NULL);
        d = H5Dcreate2(f, "/groups/main/rows", H5T_NATIVE_FLOAT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        assert_true(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
        H5Dclose(d);
        H5Sclose(sp);
        put(f, "/groups/main/rows", "checksum", H5T_NATIVE_UINT64, 0, &sum);
        put_str(f, "/groups/main/rows", "dist", "sharded");
    } else {
        fail_msg("unknown damage %s", kind);
    }
}

static void damage_copy(const char *good, const char *path, const char *kind)
{
    size_t n;
    char *buf = slurp(good, &n);
    FILE *fp = fopen(path, "wb");
    assert_int_equal(fwrite(buf, 1, n, fp), n);
    fclose(fp);
    free(buf);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    damage(kind, f);
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
        const char *kind;
        int want; /* of the loader and of ckpt_file_verify */
    } cases[] = {
        {"checksum_array", CAIRN_ECORRUPT}, {"epoch_array", CAIRN_ECORRUPT},
        {"step_array", CAIRN_ECORRUPT},     {"done_array", CAIRN_ECORRUPT},
        {"format_array", CAIRN_ECORRUPT},   {"format_changed", CAIRN_ECORRUPT},
        {"format_other", CAIRN_EINPUT},     {"settings_dup", CAIRN_ECORRUPT},
        {"format_string", CAIRN_ECORRUPT},  {"ranks_array", CAIRN_ECORRUPT},
        {"settings_array", CAIRN_ECORRUPT}, {"dist_array", CAIRN_ECORRUPT},
        {"dims9", CAIRN_ECORRUPT},          {"epoch_changed", CAIRN_ECORRUPT},
        {"settings_changed", CAIRN_ECORRUPT}, {"shape_crafted", CAIRN_ECORRUPT},
        {"swapped", CAIRN_ECORRUPT},        {"huge_chunked", CAIRN_ECORRUPT},
        {"deleted_dataset", CAIRN_ECORRUPT}, {"deleted_group", CAIRN_ECORRUPT},
        {"dist_wrong", CAIRN_ECORRUPT},     {"dist_missing", CAIRN_ECORRUPT},
        {"dtype_changed", CAIRN_ECORRUPT},  {"epoch_missing", CAIRN_ECORRUPT},
        {"settings_missing", CAIRN_ECORRUPT}, {"meta_checksum_missing", CAIRN_ECORRUPT},
        {"checksum_alg_missing", CAIRN_ECORRUPT}, {"checksum_float", CAIRN_ECORRUPT},
        {"unterminated", 0},                {"value_flipped", CAIRN_ECORRUPT},
        {"checksum_wrong", CAIRN_ECORRUPT}, {"rows_added", CAIRN_ECORRUPT},
        {"alg_older", CAIRN_EINPUT},        {"job_name_array", CAIRN_ECORRUPT},
        {"digest_array", CAIRN_ECORRUPT},   {"cairn_version_array", CAIRN_ECORRUPT},
        {"first_rank_array", CAIRN_ECORRUPT}, {"first_rank_big", CAIRN_ECORRUPT},
    };
    struct fx f;
    fx_open(&f, job_text);
    save(&f, "ck_good.h5");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        damage_copy("ck_good.h5", "ck_bad.h5", cases[i].kind);
        int rc = load(&f, "ck_bad.h5"), vrc = ckpt_file_verify("ck_bad.h5", NULL, NULL);
        if (rc != cases[i].want || vrc != cases[i].want)
            fail_msg("%s: the loader returned %d, verify %d, want %d (%s)", cases[i].kind, rc, vrc,
                     cases[i].want, cairn_errmsg());
        /* extract reads what it copies through the same checks (it may
         * succeed where the damage is in a blob it does not take) */
        int xrc = ckpt_file_extract("ck_bad.h5", (const char *const[]){"main/total"}, 1, "ck_x.h5");
        if (xrc != 0 && xrc != cases[i].want)
            fail_msg("%s: extract returned %d, want %d or 0 (%s)", cases[i].kind, xrc, cases[i].want,
                     cairn_errmsg());
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
