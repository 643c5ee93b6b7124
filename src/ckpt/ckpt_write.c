/* Checkpoint files, written: every rank writes its part of one file at
 * once (collective metadata, independent data), with the file's space
 * reserved before HDF5 holds it.  See include/cairn/ckpt_file.h.
 *
 * Collective discipline: every rank makes the same sequence of collective
 * HDF5 calls whatever happens locally.  Metadata calls (create, open,
 * attributes) fail alike on every rank; a rank whose data transfer fails
 * records it and carries on with the remaining calls, and the ranks agree
 * on the outcome at the end. */
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
#include "cairn/iodefer.h"
#include "cairn/version.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int attr_set(hid_t obj, const char *name, hid_t type, const void *v)
{
    int rc = 0;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    CAIRN_CHECK_H5(a);
    CAIRN_CHECK_H5(H5Awrite(a, type, v));
cleanup:
    if (a >= 0) H5Aclose(a);
    return rc;
}

/* Attributes of an untrusted file: a bad one is a corrupt checkpoint. */
/* Collective on the group: global shape and my rows of a blob I hold. */
static int describe_mine(const struct ckpt_view *v, const struct tensor *t, struct desc *d)
{
    int rc = 0;
    MPI_Comm comm = v->group_comm;
    struct shape s = t->shape;
    int64_t lo[CAIRN_MAX_DIMS + 1], hi[CAIRN_MAX_DIMS + 1];
    for (int i = 0; i < s.ndim; i++) lo[i] = hi[i] = s.d[i];
    lo[s.ndim] = hi[s.ndim] = s.ndim;
    d->dtype = t->dtype;
    d->file = s;
    d->row0 = 0;
    d->rows = s.ndim ? s.d[0] : 1;
    d->mine = 1;
    if (d->dist == DIST_REPLICATED) {
        d->mine = v->group_rank == 0;
        return 0;
    }
    if (d->dist == DIST_LOCAL && s.ndim == CAIRN_MAX_DIMS) /* the file adds a ranks dimension */
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                             "per-rank state of %d dimensions cannot be checkpointed (at most %d)",
                             s.ndim, CAIRN_MAX_DIMS - 1);
    /* sharded: every dimension but the first agrees; per-rank: all agree */
    int first = d->dist == DIST_SHARDED ? 1 : 0;
    CAIRN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, lo, s.ndim + 1, MPI_INT64_T, MPI_MIN, comm));
    CAIRN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, hi, s.ndim + 1, MPI_INT64_T, MPI_MAX, comm));
    bool same = lo[s.ndim] == hi[s.ndim];
    for (int i = first; same && i < s.ndim; i++) same = lo[i] == hi[i];
    if (!same) return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                                    "its ranks hold blocks of different shapes");
    if (d->dist == DIST_SHARDED) {
        int64_t before = 0, total = 0;
        CAIRN_CHECK_MPI(MPI_Exscan(&s.d[0], &before, 1, MPI_INT64_T, MPI_SUM, comm));
        CAIRN_CHECK_MPI(MPI_Allreduce(&s.d[0], &total, 1, MPI_INT64_T, MPI_SUM, comm));
        d->row0 = v->group_rank == 0 ? 0 : before;
        d->file.d[0] = total;
        /* the reader gives rank r the block split's rows (block_range):
         * a file of another split would load onto the wrong ranks */
        int64_t blo, bhi;
        block_range(total, v->group_size, v->group_rank, &blo, &bhi);
        if (blo != d->row0 || bhi - blo != s.d[0])
            return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                                 "rank %d of the group holds rows %lld-%lld of %lld, not the block "
                                 "split's %lld-%lld, which a load would give it",
                                 v->group_rank, (long long)d->row0, (long long)(d->row0 + s.d[0]),
                                 (long long)total, (long long)blo, (long long)bhi);
    } else {
        d->file.ndim = s.ndim + 1;
        d->file.d[0] = v->group_size;
        for (int i = 0; i < s.ndim; i++) d->file.d[i + 1] = s.d[i];
        d->row0 = v->group_rank;
        d->rows = 1;
    }
cleanup:
    return rc;
}

/* The file shape of each group's blobs travels from its first rank to all. */
struct wire {
    int dtype, ndim, bad;
    int64_t d[CAIRN_MAX_DIMS];
};

static int describe(const struct ckpt_view *v, struct desc *ds)
{
    int rc = 0, k = 0, local = 0;
    const struct plan *p = v->plan;
    struct wire *w = NULL;
    for (int g = 0; g < p->n_groups; g++) {
        const struct group *gr = &p->groups[g];
        int first = k;
        for (int b = 0; b < gr->n_blobs; b++) {
            if (!gr->blobs[b].persistent) continue;
            struct desc *d = &ds[k++];
            *d = (struct desc){.group = g, .blob = b, .dist = gr->blobs[b].type.dist};
            if (v->group != g) continue;
            int r = describe_mine(v, v->tensors[b], d);
            if (r && !local) {
                local = cairn_err_wrap(r, "blob %s/%s: ", gr->name, gr->blobs[b].name);
            }
        }
        int n = k - first;
        if (!n) continue;
        free(w);
        w = calloc((size_t)n, sizeof *w);
        CAIRN_CHECK_ALLOC(w);
        for (int i = 0; i < n; i++) {
            const struct desc *d = &ds[first + i];
            w[i] = (struct wire){.dtype = d->dtype, .ndim = d->file.ndim, .bad = local != 0};
            memcpy(w[i].d, d->file.d, sizeof w[i].d);
        }
        CAIRN_CHECK_MPI(MPI_Bcast(w, n * (int)sizeof *w, MPI_BYTE, gr->first, v->comm));
        for (int i = 0; i < n; i++) {
            struct desc *d = &ds[first + i];
            d->dtype = (enum dtype)w[i].dtype;
            d->file.ndim = w[i].ndim;
            memcpy(d->file.d, w[i].d, sizeof d->file.d);
        }
    }
cleanup:
    free(w);
    return coll_agree(v->comm, rc ? rc : local);
}

/* ---- writing ------------------------------------------------------------------ */

/* Our own contents, as a reader will rebuild them from the file. */
static int our_contents(const struct ckpt_view *v, const char *settings, const struct ckpt_meta *m,
                        struct contents *c)
{
    int rc = 0;
    const struct plan *p = v->plan;
    *c = (struct contents){.meta = *m, .format = CAIRN_CKPT_FORMAT, .seed = p->job->seed,
                           .world_size = p->nranks};
    c->settings = strdup(settings);
    CAIRN_CHECK_ALLOC(c->settings);
    CAIRN_CHECK(ckf_parse_settings(settings, c));
    for (int i = 0; i < c->n; i++)
        for (int g = 0; g < p->n_groups; g++)
            if (strcmp(p->groups[g].name, c->v[i].group) == 0) c->v[i].ranks = p->groups[g].nranks;
cleanup:
    if (rc == CAIRN_ECORRUPT) rc = cairn_err_wrap(CAIRN_ERUNTIME, "checkpoint settings: ");
    return rc;
}

static int write_root_attrs(const struct ckpt_view *v, hid_t f, const struct contents *c)
{
    int rc = 0;
    const struct plan *p = v->plan;
    char digest[17], sum[17];
    struct strbuf lay = {0};
    checksum_text(c->settings, digest);
    CAIRN_CHECK(ckf_meta_sum(c, sum));
    for (int g = 0; g < p->n_groups; g++)
        strbuf_addf(&lay, "%s%s=%d+%d", g ? " " : "", p->groups[g].name, p->groups[g].first,
                    p->groups[g].nranks);
    CAIRN_CHECK(strbuf_finish(&lay));
    int32_t fmt = CAIRN_CKPT_FORMAT;
    CAIRN_CHECK(h5_attr_put(f, "format_version", H5T_NATIVE_INT32, &fmt));
    CAIRN_CHECK(h5_attr_put_str(f, "job_name", p->job->name));
    CAIRN_CHECK(h5_attr_put_str(f, "digest", digest));
    CAIRN_CHECK(h5_attr_put_str(f, "settings", c->settings));
    CAIRN_CHECK(h5_attr_put_i64(f, "epoch", c->meta.epoch));
    CAIRN_CHECK(h5_attr_put_i64(f, "step", c->meta.step));
    CAIRN_CHECK(h5_attr_put_i64(f, "done", c->meta.done));
    CAIRN_CHECK(h5_attr_put_i64(f, "seed", c->seed));
    CAIRN_CHECK(h5_attr_put_i64(f, "world_size", c->world_size));
    CAIRN_CHECK(h5_attr_put_str(f, "meta_checksum", sum));
    CAIRN_CHECK(h5_attr_put_str(f, "layout", strbuf_str(&lay)));
    CAIRN_CHECK(h5_attr_put_str(f, "cairn_version", CAIRN_VERSION));
    CAIRN_CHECK(h5_attr_put_str(f, "checksum_alg", CAIRN_CHECKSUM_NAME));
    if (v->blas_kernels) CAIRN_CHECK(h5_attr_put_str(f, "blas_kernels", v->blas_kernels));
cleanup:
    strbuf_free(&lay);
    return rc;
}

/* Groups and (empty) datasets with every attribute, the checksums as
 * placeholders: metadata, the same on every rank, and all of it, so the
 * file's size is known before any data is written. */
static int create_datasets(const struct plan *p, hid_t f, const struct desc *ds, int n,
                           hid_t *dsets)
{
    int rc = 0;
    uint64_t zero = 0;
    hid_t groups = H5I_INVALID_HID, g = H5I_INVALID_HID, dcpl = H5I_INVALID_HID;
    groups = h5_create_group(f, "groups");
    CAIRN_CHECK_H5(groups);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    CAIRN_CHECK_H5(dcpl);
    /* every byte gets written: filling first would double the I/O */
    CAIRN_CHECK_H5(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER));
    CAIRN_CHECK_H5(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY));
    for (int gi = 0; gi < p->n_groups; gi++) {
        const struct group *gr = &p->groups[gi];
        g = h5_create_group(groups, gr->name);
        CAIRN_CHECK_H5(g);
        CAIRN_CHECK(h5_attr_put_i64(g, "ranks", gr->nranks));
        CAIRN_CHECK(h5_attr_put_i64(g, "first_rank", gr->first));
        for (int i = 0; i < n; i++) {
            if (ds[i].group != gi) continue;
            dsets[i] = h5_create_dataset(g, gr->blobs[ds[i].blob].name, ds[i].dtype, &ds[i].file, dcpl);
            CAIRN_CHECK_H5(dsets[i]);
            CAIRN_CHECK(h5_attr_put_str(dsets[i], "dist", dist_name(ds[i].dist)));
            CAIRN_CHECK(h5_attr_put(dsets[i], "checksum", H5T_NATIVE_UINT64, &zero));
        }
        H5Gclose(g);
        g = H5I_INVALID_HID;
    }
cleanup:
    if (g >= 0) H5Gclose(g);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (groups >= 0) H5Gclose(groups);
    return rc;
}

/* Writes go a slab at a time too, smaller: between two, a thread that reads
 * a data file (h5_lock is fair) gets its turn beside a background save. */
#define WRITE_SLAB ((size_t)16 << 20)

/* My part of dataset i (possibly nothing), slab by slab, checksummed on a
 * thread while it is written.  Independent transfers: each rank's part is
 * one contiguous block, so MPI-IO's two-phase aggregation would only add
 * copies, and ranks with more to write need not hold the others in
 * collective calls.  The caller holds h5_lock. */
static int write_part(const struct ckpt_view *v, hid_t dset, struct desc *d)
{
    int rc = 0;
    hid_t fspace = H5Dget_space(dset), mspace = H5I_INVALID_HID;
    const struct tensor *t = v->group == d->group ? v->tensors[d->blob] : NULL;
    int64_t per = ckf_row_elems(&d->file), esz = (int64_t)dtype_size(d->dtype);
    int64_t n = d->mine && t ? d->rows * per : 0;
    int64_t slab = d->file.ndim && per ? (int64_t)WRITE_SLAB / (per * esz) : d->rows;
    struct checksum_job sum = {0};
    if (slab < 1) slab = 1;
    if (n) checksum_start(&sum, t->data, (size_t)esz, n, d->row0 * per);
    CAIRN_CHECK_H5(fspace);
    for (int64_t r = 0; n && r < d->rows; r += slab) {
        struct desc part = *d;
        part.row0 = d->row0 + r;
        part.rows = d->rows - r < slab ? d->rows - r : slab;
        CAIRN_CHECK(ckf_select_part(fspace, &part, &mspace));
        CAIRN_CHECK_H5(H5Dwrite(dset, h5_native(d->dtype), mspace, fspace, H5P_DEFAULT,
                                (const char *)t->data + r * per * esz));
        H5Sclose(mspace);
        mspace = H5I_INVALID_HID;
        h5_unlock(); /* a reader waiting for HDF5 goes first */
        h5_lock();
    }
cleanup:
    if (n) d->partial = checksum_finish(&sum);
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    return rc;
}

static int write_checksums(MPI_Comm world, const struct contents *c, struct desc *ds, int n,
                           const hid_t *dsets)
{
    int rc = 0;
    uint64_t *sums = calloc((size_t)n + 1, sizeof *sums);
    CAIRN_CHECK_ALLOC(sums);
    for (int i = 0; i < n; i++) sums[i] = ds[i].partial;
    h5_unlock(); /* ranks that wrote less wait here for the others, not holding HDF5 */
    rc = coll_allreduce(MPI_IN_PLACE, sums, n, MPI_UINT64_T, MPI_SUM, world); /* idles, not spins */
    h5_lock();
    CAIRN_CHECK(rc);
    for (int i = 0; i < n; i++) {
        uint64_t v = sums[i] + ckf_name_share(&c->v[i]);
        CAIRN_CHECK(attr_set(dsets[i], "checksum", H5T_NATIVE_UINT64, &v));
    }
cleanup:
    free(sums);
    return rc;
}

/* The automatic alignment on a striped file system with its default stripes. */
#define ALIGN_STRIPED ((int64_t)1 << 20)

/* The alignment a save of path uses (checkpoint.align: -1 automatic).
 * Rank 0's answer, for every rank: HDF5 needs the same on all. */
static int64_t align_of(const struct ckpt_view *v, const char *path)
{
    if (v->align >= 0) return v->align;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    if (!fsx_striped(slash ? dir : ".")) return 0;
    return v->stripe_size > 0 ? v->stripe_size : ALIGN_STRIPED;
}

/* Rank 0: create the file.  A file's stripes are fixed when it is created,
 * so with striping hints MPI-IO creates it (alone), not open(2). */
static int create_file(const struct ckpt_view *v, const char *path)
{
    MPI_Info info;
    MPI_File fh;
    int rc = ckf_stripe_info(v, &info);
    if (rc || info == MPI_INFO_NULL) return rc ? rc : fsx_open_write(path, true);
    int e = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh);
    if (e == MPI_SUCCESS) e = MPI_File_close(&fh);
    MPI_Info_free(&info);
    if (e != MPI_SUCCESS) {
        cairn_err_mpi(e, __FILE__, __LINE__, "MPI_File_open");
        return cairn_err_set(CAIRN_EIO, __FILE__, __LINE__, "cannot create %s with striping hints: %s", path,
                             cairn_errmsg());
    }
    return 0;
}

/* ---- disk space ------------------------------------------------------------------
 *
 * HDF5 1.10 cannot abandon a parallel file cleanly: when a write fails on
 * one rank inside H5Fclose's metadata flush (rank 0 writes it), the ranks
 * leave the flush at different places and wait for each other forever.
 * So no write may fail for want of space once HDF5 holds the file:
 *  1. before HDF5 touches the disk, rank 0 reserves the data and a
 *     generous bound on the metadata in a separate reserve file;
 *  2. once every object exists (the file's final size is then known),
 *     rank 0 shrinks the reserve to the metadata bound and allocates the
 *     whole file, then deletes the reserve;
 *  3. only if the ranks agree that the file is allocated do they write
 *     data.  If not, the file holds nothing but metadata, which the freed
 *     reserve has room for, so the collective close still completes.
 * A full disk, a quota or a vanished directory thus fails in step 1 or 2
 * on rank 0, and every rank learns it through coll_agree. */

static int64_t metadata_bound(const struct contents *c)
{
    return ((int64_t)1 << 20) + 4 * (int64_t)strlen(c->settings) + (int64_t)c->n * 65536;
}

static int64_t data_bytes(const struct desc *ds, int n)
{
    int64_t b = 0;
    for (int i = 0; i < n; i++) {
        int64_t e = 1;
        for (int k = 0; k < ds[i].file.ndim; k++) e *= ds[i].file.d[k];
        b += e * (int64_t)dtype_size(ds[i].dtype);
    }
    return b;
}

/* The size to allocate the file to: its size once every object exists
 * (HDF5 shrinks it to its end when it closes it).  Parallel HDF5 writes
 * dirty metadata at a "sync point" once MDC_DIRTY_MAX bytes of it are
 * dirty (mpio_fapl raises that from 256 KiB, which the objects of a model
 * of many parameters passed); after such a write the MPI-IO driver no
 * longer knows the file's end until a collective truncate, and
 * H5Fget_filesize fails (H5Fget_eoa wants a SWMR driver).  Then the
 * datasets' end (contiguous, allocated early) plus the metadata bound is
 * a size every later write lands within. */
static int file_size(hid_t f, hid_t *dsets, int n, int64_t meta, int64_t *end)
{
    hsize_t size = 0;
    if (H5Fget_filesize(f, &size) >= 0) {
        *end = (int64_t)size;
        return 0;
    }
    H5Eclear2(H5E_DEFAULT);
    *end = 0;
    for (int i = 0; i < n; i++) {
        haddr_t at = H5Dget_offset(dsets[i]);
        hsize_t size = H5Dget_storage_size(dsets[i]);
        if (at == HADDR_UNDEF) {
            if (size == 0) continue; /* no data: nothing allocated */
            return cairn_err_set(CAIRN_EHDF5, __FILE__, __LINE__, "a checkpoint dataset has no contiguous storage");
        }
        if ((int64_t)(at + size) > *end) *end = (int64_t)(at + size);
    }
    *end += meta;
    return 0;
}

/* Rank 0, step 2: the reserve gives way to the file itself (neither is
 * allocated where the file system cannot: io->unreserved). */
static int allocate_file(const char *path, const char *reserve, int64_t meta, int64_t end, struct ckpt_io *io)
{
    int rc = 0;
    if (!io->unreserved) {
        CAIRN_CHECK_ERRNO(truncate(reserve, (off_t)meta) == 0, CAIRN_EIO, "cannot shrink %s", reserve);
        CAIRN_CHECK(fsx_allocate(path, end, &io->unreserved));
    }
cleanup:
    unlink(reserve);
    return rc;
}

/* The fault points come with h5_lock held: a rank held there lets its
 * other threads use HDF5 meanwhile. */
static void ckpt_fault(const struct ckpt_view *v, const char *point, int64_t epoch, const char *dir)
{
    if (!v->fault) return;
    h5_unlock();
    v->fault(v->fault_arg, point, epoch, dir);
    h5_lock();
}

static int write_all(const struct ckpt_view *v, hid_t f, const char *path, const struct contents *c,
                     struct desc *ds, int n, struct ckpt_io *io)
{
    int rc = 0, data_rc = 0;
    char reserve[4200], dir[4200];
    bool root = v->rank == 0;
    hid_t *dsets = malloc((size_t)(n + 1) * sizeof *dsets);
    snprintf(reserve, sizeof reserve, "%s.reserve", path);
    snprintf(dir, sizeof dir, "%s", path);
    if (strrchr(dir, '/')) *strrchr(dir, '/') = '\0';
    CAIRN_CHECK_ALLOC(dsets);
    for (int i = 0; i < n; i++) dsets[i] = H5I_INVALID_HID;
    CAIRN_CHECK(write_root_attrs(v, f, c));
    CAIRN_CHECK(create_datasets(v->plan, f, ds, n, dsets));
    ckpt_fault(v, "allocate", c->meta.epoch, dir);
    int64_t end = 0;
    rc = root ? file_size(f, dsets, n, metadata_bound(c), &end) : 0;
    h5_unlock(); /* rank 0 allocates the file (a while), the others wait */
    if (root && rc) unlink(reserve);
    rc = coll_agree(v->comm, root && rc == 0 ? allocate_file(path, reserve, metadata_bound(c), end, io) : rc);
    h5_lock();
    CAIRN_CHECK(rc);
    for (int i = 0; i < n; i++) {
        if (i == n / 2) ckpt_fault(v, "write", c->meta.epoch, dir);
        int r = write_part(v, dsets[i], &ds[i]);
        if (r && !data_rc) data_rc = r; /* keep making the collective calls */
        if (ds[i].mine) io->bytes += (uint64_t)(ds[i].rows * ckf_row_elems(&ds[i].file)) * dtype_size(ds[i].dtype);
    }
    CAIRN_CHECK(write_checksums(v->comm, c, ds, n, dsets));
    rc = data_rc;
cleanup:
    for (int i = 0; dsets && i < n; i++)
        if (dsets[i] >= 0) H5Dclose(dsets[i]);
    free(dsets);
    return rc;
}

/* Rank 0, step 1. */
static int reserve_space(const char *path, int64_t bytes, struct ckpt_io *io)
{
    char reserve[4200];
    snprintf(reserve, sizeof reserve, "%s.reserve", path);
    errno = 0;
    int rc = fsx_allocate(reserve, bytes, &io->unreserved); /* the caller removes the reserve */
    if (rc && (errno == ENOSPC || errno == EDQUOT)) /* other causes speak for themselves */
        cairn_err_wrap(rc, "no room for a checkpoint of %lld bytes: ", (long long)bytes);
    return rc;
}

int ckpt_file_write(const struct ckpt_view *v, const char *path, const struct ckpt_meta *m,
                    struct ckpt_io *io)
{
    int rc = 0, n = ckf_count_persistent(v->plan);
    double t0 = clock_now();
    hid_t fapl = H5I_INVALID_HID, f = H5I_INVALID_HID;
    struct desc *ds = calloc((size_t)n + 1, sizeof *ds);
    struct strbuf settings = {0};
    struct contents c = {0};
    bool root = v->rank == 0, deferring = false, locked = false;
    *io = (struct ckpt_io){0};
    rc = ds ? ckpt_settings(v->plan, &settings)
            : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    if (rc == 0) rc = our_contents(v, strbuf_str(&settings), m, &c);
    CAIRN_CHECK(coll_agree(v->comm, rc));
    CAIRN_CHECK(describe(v, ds));
    int64_t align = root ? align_of(v, path) : 0;
    CAIRN_CHECK_MPI(MPI_Bcast(&align, 1, MPI_INT64_T, 0, v->comm));
    /* the data, the metadata, and the padding alignment may put before each dataset */
    int64_t need = data_bytes(ds, n) + metadata_bound(&c) + (align > 1 ? n * (align - 1) : 0);
    CAIRN_CHECK(coll_agree(v->comm, root ? reserve_space(path, need, io) : 0));
    /* an MPI-IO open that fails on some ranks only would split them:
     * rank 0 makes the file, then every other rank opens it */
    CAIRN_CHECK(coll_agree(v->comm, root ? create_file(v, path) : 0));
    CAIRN_CHECK(coll_agree(v->comm, root ? 0 : fsx_open_write(path, false)));
    h5_mpio_before_open(v->comm, path);
    /* HDF5 from here on, under h5_lock (h5util.h).  It is let go where
     * this rank may wait for others outside HDF5 (the allocation, the
     * checksums' sum), at the fault points and between slabs of data, so
     * a data reader beside a background save waits for one slab at most,
     * not for the slowest rank's writes */
    h5_lock();
    locked = true;
    h5_quiet();
    fapl = ckf_mpio_fapl(v, true, align);
    CAIRN_CHECK_H5(fapl);
    iodefer_begin(path);
    deferring = true;
    CAIRN_CHECK(h5_create_file(path, fapl, &f));
    rc = write_all(v, f, path, &c, ds, n, io);
cleanup:
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Fclose");
    if (deferring) {
        int d = iodefer_end(); /* a failed write explains whatever failed after it */
        if (d) rc = d;
    }
    if (fapl >= 0) H5Pclose(fapl);
    if (locked) h5_unlock();
    /* durable from every rank, not on rank 0's word alone (on a parallel
     * file system one client's fsync need not cover the others' writes),
     * and outside HDF5: a rank that holds little waits for the others'
     * syncs in the agreement below, not in a collective HDF5 call that
     * would keep its data reader out of HDF5 meanwhile */
    if (f >= 0 && rc == 0) rc = fsx_fsync_path(path);
    if (root) {
        char reserve[4200];
        snprintf(reserve, sizeof reserve, "%s.reserve", path);
        unlink(reserve);
    }
    free(ds);
    strbuf_free(&settings);
    ckf_contents_free(&c);
    io->seconds = clock_now() - t0;
    return coll_agree(v->comm, rc);
}
