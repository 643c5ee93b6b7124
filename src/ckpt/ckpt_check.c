/* Checkpoint files, validated: everything a loader or `cairn ckpt
 * verify` checks before it trusts a file (root attributes, the metadata
 * checksum, every dataset's type, shape, storage and checksum), and the
 * serial tools built on it (verify, extract, one rank's part of a blob).
 * A checkpoint is untrusted input. */
#include "ckpt_priv.h"

#include "cairn/checksum.h"
#include "cairn/clock.h"
#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/h5util.h"
#include "cairn/partition.h"
#include "cairn/plan.h"
#include "cairn/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The dataset's shape, checked against the blob's and against the file's
 * size: a file of a few kB cannot declare 2^40 rows. */
static int check_space(hid_t dset, struct entry *e, int64_t file_bytes)
{
    int rc = 0;
    hid_t space = H5Dget_space(dset), dcpl = H5I_INVALID_HID;
    hsize_t dims[H5S_MAX_RANK];
    char want[256], got[256];
    CAIRN_CHECK_H5(space);
    int nd = H5Sget_simple_extent_ndims(space), lead = e->dist == DIST_LOCAL;
    if (nd < 0 || nd > CAIRN_MAX_DIMS || (e->shape.ndim >= 0 && nd != e->shape.ndim + lead) ||
        (lead && nd == 0))
        CAIRN_FAIL(CAIRN_ECORRUPT, "it has %d dimensions, not %d", nd, e->shape.ndim + lead);
    CAIRN_CHECK_H5(H5Sget_simple_extent_dims(space, dims, NULL));
    e->file.ndim = nd;
    int64_t elems = 1, cap = file_bytes / (int64_t)dtype_size(e->dtype);
    bool ok = true;
    for (int i = 0; i < nd; i++) {
        e->file.d[i] = dims[i] > (hsize_t)CKPT_MAX_DIM ? CKPT_MAX_DIM + 1 : (int64_t)dims[i];
        int64_t w = lead && i == 0 ? e->ranks : e->shape.ndim >= 0 ? e->shape.d[i - lead] : -1;
        if (w >= 0 && e->file.d[i] != w) ok = false;
        elems = e->file.d[i] && elems > cap / e->file.d[i] ? cap + 1 : elems * e->file.d[i];
    }
    if (!ok) {
        struct shape ws = e->shape;
        if (lead && ws.ndim >= 0 && ws.ndim < CAIRN_MAX_DIMS) {
            memmove(ws.d + 1, ws.d, sizeof(int64_t) * (size_t)ws.ndim);
            ws.d[0] = e->ranks;
            ws.ndim++;
        }
        CAIRN_FAIL(CAIRN_ECORRUPT, "its shape is %s, not %s", shape_format(&e->file, got, sizeof got),
                   shape_format(&ws, want, sizeof want));
    }
    if (elems > cap) CAIRN_FAIL(CAIRN_ECORRUPT, "it claims more data than the file holds");
    dcpl = H5Dget_create_plist(dset);
    CAIRN_CHECK_H5(dcpl);
    if (!h5_data_local(dset)) CAIRN_FAIL(CAIRN_ECORRUPT, "its data is stored outside the file");
    if (H5Pget_layout(dcpl) != H5D_CONTIGUOUS ||
        H5Dget_storage_size(dset) != (hsize_t)elems * dtype_size(e->dtype))
        CAIRN_FAIL(CAIRN_ECORRUPT, "its data is not stored whole and contiguous");
cleanup:
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    return rc;
}

/* Blob e's dataset: there, of e's type, shape and distribution, with a
 * checksum. */
static int check_dataset(hid_t f, struct entry *e, int64_t file_bytes)
{
    int rc = 0;
    char path[300], *dist = NULL;
    hid_t dset = H5I_INVALID_HID;
    H5O_info_t info;
    snprintf(path, sizeof path, "/groups/%s/%s", e->group, e->blob);
    if (h5_path_local(f, path) == 0)
        CAIRN_FAIL(CAIRN_ECORRUPT, "a link on its path leaves the file or is not a plain link");
    if (H5Lexists(f, path, H5P_DEFAULT) <= 0 || H5Oget_info_by_name(f, path, &info, H5P_DEFAULT) < 0 ||
        info.type != H5O_TYPE_DATASET)
        CAIRN_FAIL(CAIRN_ECORRUPT, "no such dataset");
    dset = H5Dopen2(f, path, H5P_DEFAULT);
    CAIRN_CHECK_H5(dset);
    if (!h5_dset_is(dset, e->dtype)) CAIRN_FAIL(CAIRN_ECORRUPT, "its element type is not %s", dtype_name(e->dtype));
    CAIRN_CHECK(check_space(dset, e, file_bytes));
    CAIRN_CHECK(ckf_attr_get_str(dset, "dist", &dist));
    if (strcmp(dist, dist_name(e->dist)) != 0)
        CAIRN_FAIL(CAIRN_ECORRUPT, "it is stored %.32s, not %s", dist, dist_name(e->dist));
    CAIRN_CHECK(ckf_attr_get_u64(dset, "checksum", &e->stored));
    e->stored -= ckf_name_share(e);
cleanup:
    if (rc == CAIRN_EHDF5) rc = CAIRN_ECORRUPT;
    if (rc) cairn_err_wrap(rc, "%s: ", path);
    free(dist);
    if (dset >= 0) H5Dclose(dset);
    return rc;
}

static int check_group(hid_t f, struct entry *e, int64_t world_size)
{
    int rc = 0;
    char path[200];
    hid_t g = H5I_INVALID_HID;
    snprintf(path, sizeof path, "/groups/%s", e->group);
    int local = h5_path_local(f, path);
    if (local < 0) CAIRN_FAIL(CAIRN_ECORRUPT, "group %s is missing", path);
    if (local == 0)
        CAIRN_FAIL(CAIRN_ECORRUPT, "%s: a link on its path leaves the file or is not a plain link", path);
    g = H5Gopen2(f, path, H5P_DEFAULT);
    if (g < 0) CAIRN_FAIL(CAIRN_ECORRUPT, "%s is not a group", path);
    int64_t first = 0;
    rc = ckf_attr_get_i64(g, "ranks", 1, world_size, &e->ranks);
    if (rc == 0) rc = ckf_attr_get_i64(g, "first_rank", 0, world_size - 1, &first);
    if (rc) cairn_err_wrap(rc, "%s: ", path);
cleanup:
    if (g >= 0) H5Gclose(g);
    return rc;
}

static const char *const text_attrs[] = {"job_name", "digest", "cairn_version", "layout", NULL};

/* The root attributes, each of its type and range. */
static int read_root(hid_t f, struct contents *c)
{
    int rc = 0;
    int64_t done = 0;
    char *alg = NULL;
    int64_t fmt = 0;
    CAIRN_CHECK(ckf_attr_get_i64(f, "format_version", 0, INT32_MAX, &fmt));
    c->format = fmt;
    CAIRN_CHECK(ckf_attr_get_str(f, "checksum_alg", &alg));
    if (strcmp(alg, CAIRN_CHECKSUM_OLD) == 0)
        CAIRN_FAIL(CAIRN_EINPUT, "it was written by an earlier cairn (checksums %s; this cairn "
                                 "writes and reads %s): resume it with that version, or start over",
                   CAIRN_CHECKSUM_OLD, CAIRN_CHECKSUM_NAME);
    if (strcmp(alg, CAIRN_CHECKSUM_NAME) != 0)
        CAIRN_FAIL(CAIRN_ECORRUPT, "its checksum algorithm is '%.32s', not %s", alg, CAIRN_CHECKSUM_NAME);
    CAIRN_CHECK(ckf_attr_get_i64(f, "epoch", 0, CKPT_MAX_COUNT, &c->meta.epoch));
    CAIRN_CHECK(ckf_attr_get_i64(f, "step", 0, CKPT_MAX_COUNT, &c->meta.step));
    CAIRN_CHECK(ckf_attr_get_i64(f, "done", 0, 1, &done));
    c->meta.done = (int)done;
    CAIRN_CHECK(ckf_attr_get_i64(f, "seed", INT64_MIN, INT64_MAX, &c->seed));
    CAIRN_CHECK(ckf_attr_get_i64(f, "world_size", 1, CKPT_MAX_RANKS, &c->world_size));
    CAIRN_CHECK(ckf_attr_get_str(f, "settings", &c->settings));
    /* not used to load, but extract copies them: each one string too */
    for (const char *const *n = text_attrs; *n; n++) {
        char *s = NULL;
        rc = ckf_attr_get_str(f, *n, &s);
        free(s);
        CAIRN_CHECK(rc);
    }
cleanup:
    free(alg);
    return rc;
}

/* The root metadata, its checksum included (rc as contents_read).  *sum
 * is left unset when the file has no readable meta_checksum. */
static int read_meta(hid_t f, struct contents *c, char **stored)
{
    int rc = 0;
    char sum[17];
    CAIRN_CHECK(read_root(f, c));
    CAIRN_CHECK(ckf_parse_settings(c->settings, c));
    for (int i = 0; i < c->n; i++) {
        if (i > 0 && strcmp(c->v[i].group, c->v[i - 1].group) == 0)
            c->v[i].ranks = c->v[i - 1].ranks; /* checked with the group's first blob */
        else
            CAIRN_CHECK(check_group(f, &c->v[i], c->world_size));
    }
    CAIRN_CHECK(ckf_attr_get_str(f, "meta_checksum", stored));
    CAIRN_CHECK(ckf_meta_sum(c, sum));
    if (strcmp(sum, *stored) != 0)
        CAIRN_FAIL(CAIRN_ECORRUPT, "its metadata (format, epoch, step, done, settings or group "
                                   "sizes) does not match its checksum");
cleanup:
    return rc;
}

/* Everything the loader and `ckpt verify` check before reading any data:
 * root attributes, settings, the metadata checksum, every blob's group and
 * dataset.  Errors: CAIRN_ECORRUPT naming what is wrong; CAIRN_EINPUT for
 * a file of another format (not damage, so never marked bad): one that
 * says so consistently, or one without a metadata checksum (format 1).  A
 * format_version its own checksum contradicts is damage. */
static int contents_read(hid_t f, struct contents *c)
{
    int rc = 0;
    char *stored = NULL;
    hsize_t size = 0;
    *c = (struct contents){.format = -1};
    rc = read_meta(f, c, &stored);
    if (c->format >= 0 && c->format != CAIRN_CKPT_FORMAT && (rc == 0 || !stored))
        CAIRN_FAIL(CAIRN_EINPUT, "it has checkpoint format %lld; this cairn reads format %d%s",
                   (long long)c->format, CAIRN_CKPT_FORMAT,
                   c->format < CAIRN_CKPT_FORMAT ? " (resume it with the cairn that wrote it)" : "");
    CAIRN_CHECK(rc);
    CAIRN_CHECK_H5(H5Fget_filesize(f, &size));
    for (int i = 0; i < c->n; i++) CAIRN_CHECK(check_dataset(f, &c->v[i], (int64_t)size));
cleanup:
    free(stored);
    if (rc == CAIRN_EHDF5) rc = CAIRN_ECORRUPT; /* HDF5 cannot read it: it is damaged */
    return rc;
}

const struct entry *ckf_contents_find(const struct contents *c, const char *group, const char *blob)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->v[i].group, group) == 0 && strcmp(c->v[i].blob, blob) == 0) return &c->v[i];
    return NULL;
}

/* Open a checkpoint file and validate it (serial or, with an MPI-IO fapl,
 * on every rank alike). */
int ckf_open_checked(const char *path, hid_t fapl, hid_t *f, struct contents *c)
{
    int rc = 0;
    if (!fsx_is_regular(path)) CAIRN_FAIL(CAIRN_ECORRUPT, "%s is not a regular file", path);
    *f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (*f < 0) {
        cairn_err_h5(__FILE__, __LINE__, "H5Fopen");
        CAIRN_FAIL(CAIRN_ECORRUPT, "cannot open %s as HDF5: %s", path, cairn_errmsg());
    }
    rc = contents_read(*f, c);
    if (rc) cairn_err_wrap(rc, "%s: ", path);
cleanup:
    return rc;
}

/* ---- serial tools ----------------------------------------------------------- */

/* Checksum a whole checked dataset, a slab of rows at a time. */
static int dataset_sum(hid_t f, const struct entry *e, uint64_t *sum)
{
    int rc = 0;
    char path[300];
    hid_t dset = H5I_INVALID_HID, space = H5I_INVALID_HID, ms = H5I_INVALID_HID;
    struct tensor buf = {0};
    enum dtype dt = e->dtype;
    snprintf(path, sizeof path, "/groups/%s/%s", e->group, e->blob);
    dset = H5Dopen2(f, path, H5P_DEFAULT);
    CAIRN_CHECK_H5(dset);
    space = H5Dget_space(dset);
    CAIRN_CHECK_H5(space);
    struct desc d = {.dtype = dt, .mine = 1, .file = e->file};
    *sum = 0;
    int64_t total = d.file.ndim ? d.file.d[0] : 1, per = ckf_row_elems(&d.file);
    int64_t slab = per ? (64 << 20) / (per * (int64_t)dtype_size(dt)) + 1 : total;
    for (d.row0 = 0; d.row0 < total; d.row0 += slab) {
        d.rows = total - d.row0 < slab ? total - d.row0 : slab;
        struct shape bs = {.ndim = 1, .d = {d.rows * per}};
        CAIRN_CHECK(tensor_resize(&buf, dt, &bs));
        CAIRN_CHECK(ckf_select_part(space, &d, &ms));
        CAIRN_CHECK_H5(H5Dread(dset, h5_native(dt), ms, space, H5P_DEFAULT, buf.data));
        *sum += checksum_part(buf.data, dtype_size(dt), d.rows * per, d.row0 * per);
        H5Sclose(ms);
        ms = H5I_INVALID_HID;
    }
cleanup:
    if (ms >= 0) H5Sclose(ms);
    if (space >= 0) H5Sclose(space);
    if (dset >= 0) H5Dclose(dset);
    tensor_free(&buf);
    if (rc == CAIRN_EHDF5) rc = CAIRN_ECORRUPT;
    return rc;
}

int ckpt_file_verify(const char *path, const struct plan *job, FILE *out)
{
    int rc = 0;
    hid_t f = H5I_INVALID_HID;
    struct contents c = {0};
    h5_quiet();
    CAIRN_CHECK(ckf_open_checked(path, H5P_DEFAULT, &f, &c));
    if (job) CAIRN_CHECK(ckf_check_settings(&c, path, job));
    for (int i = 0; i < c.n; i++) {
        uint64_t sum = 0;
        const struct entry *e = &c.v[i];
        CAIRN_CHECK(dataset_sum(f, e, &sum));
        if (sum != e->stored)
            CAIRN_FAIL(CAIRN_ECORRUPT, "%s: /groups/%s/%s: checksum mismatch", path, e->group, e->blob);
        char name[300], shown[4 * sizeof name]; /* names from the untrusted file, escaped */
        snprintf(name, sizeof name, "/groups/%s/%s", e->group, e->blob);
        cairn_escape(shown, sizeof shown, name);
        if (out) fprintf(out, "ok\t%s\n", shown);
    }
cleanup:
    if (f >= 0) H5Fclose(f);
    ckf_contents_free(&c);
    return rc;
}

/* The checked root attributes an extract carries, rewritten as cairn
 * writes them (never copied raw: the file is untrusted). */
static int copy_attrs(hid_t from, hid_t to, const struct contents *c)
{
    int rc = 0;
    char *s = NULL;
    for (int i = 0; i < 3; i++) {
        static const char *const names[] = {"job_name", "digest", "cairn_version"};
        CAIRN_CHECK(ckf_attr_get_str(from, names[i], &s));
        CAIRN_CHECK(h5_attr_put_str(to, names[i], s));
        free(s);
        s = NULL;
    }
    CAIRN_CHECK(h5_attr_put_i64(to, "epoch", c->meta.epoch));
    CAIRN_CHECK(h5_attr_put_i64(to, "step", c->meta.step));
    CAIRN_CHECK(h5_attr_put_i64(to, "seed", c->seed));
cleanup:
    free(s);
    return rc;
}

int ckf_put_extracted(hid_t out, const char *name, const struct tensor *t, enum dist dist, uint64_t sum)
{
    int rc = 0;
    hid_t d = H5I_INVALID_HID;
    CAIRN_CHECK(h5_put_tensor(out, name, t));
    d = H5Dopen2(out, name, H5P_DEFAULT);
    CAIRN_CHECK_H5(d);
    CAIRN_CHECK(h5_attr_put_str(d, "dist", dist_name(dist)));
    CAIRN_CHECK(h5_attr_put(d, "checksum", H5T_NATIVE_UINT64, &sum)); /* of the data alone */
cleanup:
    if (d >= 0 && H5Dclose(d) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Dclose");
    return rc;
}

/* GROUP/BLOB of a checked checkpoint, verified, into out. */
static int extract_one(hid_t f, const struct contents *c, hid_t out, const char *name)
{
    int rc = 0;
    char group[128] = "", path[300];
    uint64_t sum = 0;
    struct tensor t = {0};
    hid_t d = H5I_INVALID_HID;
    const char *slash = strchr(name, '/');
    if (slash && slash - name < (long)sizeof group) snprintf(group, sizeof group, "%.*s", (int)(slash - name), name);
    const struct entry *e = slash ? ckf_contents_find(c, group, slash + 1) : NULL;
    if (!e) CAIRN_FAIL(CAIRN_EINPUT, "no blob '%s' in the checkpoint (write GROUP/BLOB)", name);
    CAIRN_CHECK(dataset_sum(f, e, &sum));
    if (sum != e->stored) CAIRN_FAIL(CAIRN_ECORRUPT, "blob %s does not verify", name);
    snprintf(path, sizeof path, "/groups/%s", name);
    d = H5Dopen2(f, path, H5P_DEFAULT);
    CAIRN_CHECK_H5(d);
    CAIRN_CHECK(tensor_resize(&t, e->dtype, &e->file));
    CAIRN_CHECK_H5(H5Dread(d, h5_native(e->dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data));
    CAIRN_CHECK(ckf_put_extracted(out, name, &t, e->dist, sum));
cleanup:
    tensor_free(&t);
    if (d >= 0) H5Dclose(d);
    return rc;
}

int ckpt_file_extract(const char *path, const char *const *blobs, int n, const char *to)
{
    int rc = 0;
    struct fsx_out out = {.dir = -1, .fd = -1};
    hid_t f = H5I_INVALID_HID, o = H5I_INVALID_HID;
    struct contents c = {0};
    h5_quiet();
    CAIRN_CHECK(ckf_open_checked(path, H5P_DEFAULT, &f, &c));
    CAIRN_CHECK(fsx_out_begin(&out, to, 0));
    CAIRN_CHECK(h5_create_file(out.tmp, H5P_DEFAULT, &o));
    CAIRN_CHECK(copy_attrs(f, o, &c));
    for (int i = 0; i < n; i++) CAIRN_CHECK(extract_one(f, &c, o, blobs[i]));
cleanup:
    if (o >= 0 && H5Fclose(o) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Fclose");
    if (f >= 0) H5Fclose(f);
    ckf_contents_free(&c);
    if (rc == 0) rc = fsx_out_commit(&out);
    fsx_out_abort(&out);
    if (rc == CAIRN_EHDF5) rc = CAIRN_ECORRUPT;
    return rc;
}

int ckpt_file_read_part(const char *path, const char *group, const char *blob, int rank,
                        int size, struct tensor *t, uint64_t *partial, uint64_t *stored,
                        enum dist *dist)
{
    int rc = 0;
    char dpath[300];
    hid_t f = H5I_INVALID_HID, d = H5I_INVALID_HID, sp = H5I_INVALID_HID, ms = H5I_INVALID_HID;
    struct contents c = {0};
    h5_lock();
    h5_quiet();
    CAIRN_CHECK(ckf_open_checked(path, H5P_DEFAULT, &f, &c));
    const struct entry *e = ckf_contents_find(&c, group, blob);
    if (!e) CAIRN_FAIL(CAIRN_EINPUT, "%s has no blob %s/%s", path, group, blob);
    if (e->dist == DIST_LOCAL)
        CAIRN_FAIL(CAIRN_EINPUT, "blob %s/%s is %s state, which cannot be loaded by other ranks",
                   group, blob, dist_name(e->dist));
    *dist = e->dist;
    *stored = e->stored;
    snprintf(dpath, sizeof dpath, "/groups/%s/%s", group, blob);
    d = H5Dopen2(f, dpath, H5P_DEFAULT);
    CAIRN_CHECK_H5(d);
    sp = H5Dget_space(d);
    CAIRN_CHECK_H5(sp);
    struct desc ds = {.dtype = e->dtype, .mine = 1, .file = e->file, .rows = e->file.ndim ? e->file.d[0] : 1};
    if (e->dist == DIST_SHARDED) {
        int64_t hi;
        block_range(ds.file.d[0], size, rank, &ds.row0, &hi);
        ds.rows = hi - ds.row0;
    }
    struct shape s = ds.file;
    if (s.ndim) s.d[0] = ds.rows;
    CAIRN_CHECK(tensor_resize(t, ds.dtype, &s));
    CAIRN_CHECK(ckf_select_part(sp, &ds, &ms));
    CAIRN_CHECK_H5(H5Dread(d, h5_native(ds.dtype), ms, sp, H5P_DEFAULT, t->data));
    *partial = checksum_part(t->data, dtype_size(ds.dtype), ds.rows * ckf_row_elems(&ds.file),
                             ds.row0 * ckf_row_elems(&ds.file));
cleanup:
    if (ms >= 0) H5Sclose(ms);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    if (f >= 0) H5Fclose(f);
    ckf_contents_free(&c);
    h5_unlock();
    if (rc == CAIRN_EHDF5) rc = CAIRN_ECORRUPT;
    return rc;
}
