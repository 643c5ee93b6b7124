/* libFuzzer target: the checkpoint loader's validation on files the target
 * writes from the fuzzer's bytes.
 *
 * The bytes first size a valid checkpoint (a replicated i64 scalar, a
 * sharded f32 matrix, per-rank i32 rows), then apply up to eight edits,
 * each a kind and its arguments: attributes replaced by arrays, other
 * types or other values (with or without a matching metadata checksum),
 * datasets of other shapes, types, layouts or names, huge chunked extents,
 * deleted links, an edited settings text.  `ckpt verify` (with and without
 * the job's settings), the per-blob reader and extract then run on the
 * file.  Any crash, hang, sanitizer finding or HDF5 object left open is a
 * bug. */
#include "cairn/checksum.h"
#include "cairn/ckpt_file.h"
#include "cairn/job.h"
#include "cairn/plan.h"
#include "cairn/tensor.h"

#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cursor {
    const uint8_t *p;
    size_t n;
};

/* The next `bytes` bytes as an unsigned number (0 once the input ends). */
static uint64_t take(struct cursor *c, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) {
        v = v << 8 | (c->n ? *c->p : 0);
        if (c->n) c->p++, c->n--;
    }
    return v;
}

/* The valid file's contents, sized by the first bytes. */
struct model {
    int64_t ranks, rows, cols, per, epoch, step, done, seed;
    int64_t total;
    float w[64 * 8];
    int32_t mine[4 * 4];
    char settings[512];
};

static int64_t group_ranks(const char *group, void *arg)
{
    return strcmp(group, "main") == 0 ? ((struct model *)arg)->ranks : 1;
}

static void model_init(struct cursor *c, struct model *m)
{
    m->ranks = 1 + (int64_t)take(c, 1) % 4;
    m->rows = (int64_t)take(c, 1) % 65;
    m->cols = 1 + (int64_t)take(c, 1) % 8;
    m->per = 1 + (int64_t)take(c, 1) % 4;
    m->epoch = (int64_t)take(c, 1);
    m->step = (int64_t)take(c, 1) % 3;
    m->done = (int64_t)take(c, 1) % 2;
    m->seed = (int64_t)take(c, 2);
    m->total = (int64_t)take(c, 8);
    for (int i = 0; i < 64 * 8; i++) m->w[i] = (float)i * 0.5f;
    for (int i = 0; i < 16; i++) m->mine[i] = i * 7 - 3;
    snprintf(m->settings, sizeof m->settings,
             "format=%d\nseed=%lld\nblob main/total=i64[] replicated\n"
             "blob main/w=f32[%lld, %lld] sharded\nblob main/mine=i32[%lld] per-rank\n",
             CAIRN_CKPT_FORMAT, (long long)m->seed, (long long)m->rows, (long long)m->cols,
             (long long)m->per);
}

/* Verify path for the job whose settings m's are, its group in a family
 * (ckpt_settings_fold runs on the crafted settings). */
static void verify_for_job(const char *path, const struct model *m, FILE *sink)
{
    struct job job = {.seed = m->seed};
    struct blob_info blobs[3] = {
        {.name = "total", .type = {.dtype = DT_I64, .dist = DIST_REPLICATED}, .persistent = true},
        {.name = "w", .type = {.dtype = DT_F32, .shape = {.ndim = 2, .d = {m->rows, m->cols}}, .dist = DIST_SHARDED},
         .persistent = true},
        {.name = "mine", .type = {.dtype = DT_I32, .shape = {.ndim = 1, .d = {m->per}}, .dist = DIST_LOCAL},
         .persistent = true}};
    struct group g = {.name = "main", .nranks = (int)m->ranks, .blobs = blobs, .n_blobs = 3, .family = "ma"};
    struct plan p = {.job = &job, .nranks = (int)m->ranks, .groups = &g, .n_groups = 1};
    ckpt_file_verify(path, &p, sink);
}

static void put_attr(hid_t obj, const char *name, hid_t type, hid_t space, const void *v)
{
    if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
    hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) {
        H5Awrite(a, type, v);
        H5Aclose(a);
    }
}

static void put_scalar(hid_t obj, const char *name, hid_t type, const void *v)
{
    hid_t s = H5Screate(H5S_SCALAR);
    put_attr(obj, name, type, s, v);
    H5Sclose(s);
}

static void put_str(hid_t obj, const char *name, const char *v, size_t size, bool nullterm)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, size ? size : 1);
    H5Tset_strpad(t, nullterm ? H5T_STR_NULLTERM : H5T_STR_NULLPAD);
    put_scalar(obj, name, t, v);
    H5Tclose(t);
}

static void put_i64(hid_t obj, const char *name, int64_t v) { put_scalar(obj, name, H5T_NATIVE_INT64, &v); }

/* A dataset with its dist and (correct, name-bound) checksum. */
static void put_dataset(hid_t g, const char *group, const char *name, hid_t type, int nd,
                        const hsize_t *dims, const void *data, size_t elem, const char *dist)
{
    hid_t s = nd ? H5Screate_simple(nd, dims, NULL) : H5Screate(H5S_SCALAR);
    hid_t d = H5Dcreate2(g, name, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= (int64_t)dims[i];
    if (d >= 0) {
        char full[64];
        snprintf(full, sizeof full, "%s/%s", group, name);
        if (n) H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
        uint64_t sum = checksum_part(data, elem, n, 0) + checksum_string(full);
        put_str(d, "dist", dist, strlen(dist) + 1, true);
        put_scalar(d, "checksum", H5T_NATIVE_UINT64, &sum);
        H5Dclose(d);
    }
    H5Sclose(s);
}

static void write_valid(hid_t f, struct model *m)
{
    struct ckpt_meta meta = {.epoch = m->epoch, .step = m->step, .done = (int)m->done};
    char sum[17] = "0000000000000000";
    int32_t fmt = CAIRN_CKPT_FORMAT;
    ckpt_file_meta_checksum(&meta, m->seed, m->ranks, m->settings, group_ranks, m, sum);
    put_scalar(f, "format_version", H5T_NATIVE_INT32, &fmt);
    put_str(f, "settings", m->settings, strlen(m->settings) + 1, true);
    put_i64(f, "epoch", m->epoch);
    put_i64(f, "step", m->step);
    put_i64(f, "done", m->done);
    put_i64(f, "seed", m->seed);
    put_i64(f, "world_size", m->ranks);
    put_str(f, "meta_checksum", sum, 17, true);
    put_str(f, "checksum_alg", CAIRN_CHECKSUM_NAME, strlen(CAIRN_CHECKSUM_NAME) + 1, true);
    hid_t gs = H5Gcreate2(f, "groups", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t g = H5Gcreate2(gs, "main", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    put_i64(g, "ranks", m->ranks);
    hsize_t wd[2] = {(hsize_t)m->rows, (hsize_t)m->cols}, md[2] = {(hsize_t)m->ranks, (hsize_t)m->per};
    put_dataset(g, "main", "total", H5T_NATIVE_INT64, 0, NULL, &m->total, 8, "replicated");
    put_dataset(g, "main", "w", H5T_NATIVE_FLOAT, 2, wd, m->w, 4, "sharded");
    put_dataset(g, "main", "mine", H5T_NATIVE_INT32, 2, md, m->mine, 4, "per-rank");
    H5Gclose(g);
    H5Gclose(gs);
}

static const char *const root_ints[] = {"format_version", "epoch", "step", "done", "seed", "world_size"};
static const char *const root_strs[] = {"settings", "meta_checksum", "checksum_alg"};
static const char *const blobs[] = {"total", "w", "mine"};
static const char *const links[] = {"/groups", "/groups/main", "/groups/main/total",
                                    "/groups/main/w", "/groups/main/mine"};

/* Replace attribute `name` of obj by something else of the fuzzer's choosing. */
static void edit_attr(struct cursor *c, hid_t obj, const char *name)
{
    unsigned mode = (unsigned)take(c, 1) % 6;
    int64_t v = (int64_t)take(c, 8);
    hsize_t n = 1 + take(c, 1) % 70;
    if (mode == 0) { /* an array */
        int64_t *a = calloc(n, sizeof *a);
        for (hsize_t i = 0; a && i < n; i++) a[i] = v;
        hid_t s = H5Screate_simple(1, &n, NULL);
        if (a) put_attr(obj, name, H5T_NATIVE_INT64, s, a);
        H5Sclose(s);
        free(a);
    } else if (mode == 1) { /* a value */
        put_i64(obj, name, v);
    } else if (mode == 2) { /* a float */
        double d = (double)v;
        put_scalar(obj, name, H5T_NATIVE_DOUBLE, &d);
    } else if (mode == 3) { /* a string of the fuzzer's bytes, maybe without terminator */
        char s[72] = "";
        for (hsize_t i = 0; i < n && i < 71; i++) s[i] = (char)take(c, 1);
        put_str(obj, name, s, (size_t)n, take(c, 1) & 1);
    } else if (mode == 4) { /* an unsigned or narrow integer */
        uint8_t b = (uint8_t)v;
        uint64_t u = (uint64_t)v;
        if (take(c, 1) & 1) put_scalar(obj, name, H5T_NATIVE_UINT8, &b);
        else put_scalar(obj, name, H5T_NATIVE_UINT64, &u);
    } else {
        H5Adelete(obj, name);
    }
}

/* A dataset of another shape, type or layout in place of blob b. */
static void edit_dataset(struct cursor *c, hid_t f, struct model *m)
{
    const char *b = blobs[take(c, 1) % 3];
    char path[64];
    snprintf(path, sizeof path, "/groups/main/%s", b);
    int nd = (int)(take(c, 1) % 10);
    hsize_t dims[10], maxd[10];
    for (int i = 0; i < nd; i++) {
        unsigned k = (unsigned)take(c, 1);
        dims[i] = k < 250 ? k % 9 : (hsize_t)1 << (k - 210); /* now and then 2^40 .. 2^45 */
        maxd[i] = H5S_UNLIMITED;
    }
    hid_t types[] = {H5T_NATIVE_INT64, H5T_NATIVE_FLOAT, H5T_NATIVE_INT32, H5T_NATIVE_DOUBLE,
                     H5T_NATIVE_UINT64, H5T_NATIVE_INT16};
    hid_t type = types[take(c, 1) % 6];
    bool chunked = take(c, 1) & 1;
    H5Ldelete(f, path, H5P_DEFAULT);
    hid_t s = nd ? H5Screate_simple(nd, dims, chunked ? maxd : NULL) : H5Screate(H5S_SCALAR);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (chunked && nd) {
        hsize_t ch[10];
        for (int i = 0; i < nd; i++) ch[i] = 1;
        H5Pset_chunk(dcpl, nd, ch);
    }
    hid_t d = H5Dcreate2(f, path, type, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d >= 0) {
        uint64_t sum = take(c, 1) & 1 ? m->total : 0;
        const char *dist = take(c, 1) & 1 ? "sharded" : "replicated";
        put_str(d, "dist", dist, strlen(dist) + 1, true);
        put_scalar(d, "checksum", H5T_NATIVE_UINT64, &sum);
        H5Dclose(d);
    }
    H5Pclose(dcpl);
    H5Sclose(s);
}

/* The settings text with one byte changed, with (or without) a matching
 * metadata checksum, so crafted-but-consistent files reach the deep checks. */
static void edit_settings(struct cursor *c, hid_t f, struct model *m)
{
    size_t len = strlen(m->settings), at = len ? take(c, 2) % len : 0;
    m->settings[at] = (char)take(c, 1);
    if (!m->settings[at]) m->settings[at] = ' ';
    put_str(f, "settings", m->settings, strlen(m->settings) + 1, true);
    if (take(c, 1) & 1) {
        struct ckpt_meta meta = {.epoch = m->epoch, .step = m->step, .done = (int)m->done};
        char sum[17];
        if (ckpt_file_meta_checksum(&meta, m->seed, m->ranks, m->settings, group_ranks, m, sum) == 0)
            put_str(f, "meta_checksum", sum, 17, true);
    }
}

static void edit(struct cursor *c, hid_t f, struct model *m)
{
    hid_t g = H5I_INVALID_HID, o = H5I_INVALID_HID;
    switch (take(c, 1) % 7) {
    case 0: edit_attr(c, f, root_ints[take(c, 1) % 6]); break;
    case 1: edit_attr(c, f, root_strs[take(c, 1) % 3]); break;
    case 2:
        if ((g = H5Gopen2(f, "/groups/main", H5P_DEFAULT)) >= 0) edit_attr(c, g, "ranks");
        break;
    case 3:
        if ((o = H5Dopen2(f, links[2 + take(c, 1) % 3], H5P_DEFAULT)) >= 0)
            edit_attr(c, o, take(c, 1) & 1 ? "checksum" : "dist");
        break;
    case 4: edit_dataset(c, f, m); break;
    case 5: edit_settings(c, f, m); break;
    default: H5Ldelete(f, links[take(c, 1) % 5], H5P_DEFAULT); break;
    }
    if (g >= 0) H5Gclose(g);
    if (o >= 0) H5Dclose(o);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    static char path[64], out[64];
    if (!sink) {
        sink = fopen("/dev/null", "w");
        snprintf(path, sizeof path, "/dev/shm/cairn-fuzz-%d.h5", (int)getpid());
        snprintf(out, sizeof out, "/dev/shm/cairn-fuzz-%d-out.h5", (int)getpid());
    }
    struct cursor c = {data, size};
    struct model m;
    model_init(&c, &m);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (f < 0) return 0;
    write_valid(f, &m);
    for (int i = 0; i < 8 && c.n; i++) edit(&c, f, &m);
    H5Fclose(f);

    ckpt_file_verify(path, NULL, sink);
    verify_for_job(path, &m, sink);
    for (int b = 0; b < 3; b++) {
        struct tensor t = {0};
        uint64_t partial = 0, stored = 0;
        enum dist dist;
        int size_ = 1 + (int)(m.ranks % 3);
        for (int r = 0; r < size_; r++)
            ckpt_file_read_part(path, "main", blobs[b], r, size_, &t, &partial, &stored, &dist);
        tensor_free(&t);
    }
    const char *all[] = {"main/total", "main/w", "main/mine"};
    ckpt_file_extract(path, all, 3, out);
    unlink(out);
    unlink(path);
    /* every path, failing ones included, must close what it opened */
    ssize_t open_ids = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    if (open_ids != 0) {
        fprintf(stderr, "fuzz_ckpt: %zd HDF5 objects left open\n", open_ids);
        abort();
    }
    return 0;
}
