/* Checkpoint files, read on any layout: each rank reads, by hyperslab,
 * what it owns under the current plan (sharded blobs re-split, replicated
 * ones read once per group and broadcast), and every checksum is
 * verified.  See include/cairn/ckpt_file.h. */
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

/* ---- reading ------------------------------------------------------------------ */

int ckf_check_settings(const struct contents *c, const char *path, const struct plan *p)
{
    int rc = 0;
    struct strbuf why = {0}, ours = {0}, mine = {0}, theirs = {0};
    CAIRN_CHECK(ckpt_settings(p, &ours));
    CAIRN_CHECK(ckpt_settings_fold(strbuf_str(&ours), p, &mine));
    CAIRN_CHECK(ckpt_settings_fold(c->settings, p, &theirs));
    if (strcmp(strbuf_str(&theirs), strbuf_str(&mine)) != 0) {
        ckf_explain_settings(strbuf_str(&theirs), strbuf_str(&mine), &why);
        CAIRN_FAIL(CAIRN_EINPUT, "%s was written for other settings: %s", path, strbuf_str(&why));
    }
cleanup:
    strbuf_free(&why);
    strbuf_free(&ours);
    strbuf_free(&mine);
    strbuf_free(&theirs);
    return rc;
}

/* The checkpoint's entry that blob d of the plan loads from: its own, or
 * for a group of a family that the checkpoint lacks, the family's first
 * group's (NULL: the settings did not fold alike). */
static const struct entry *source_of(const struct plan *p, const struct contents *c, const struct desc *d)
{
    const struct group *g = &p->groups[d->group];
    const struct entry *e = ckf_contents_find(c, g->name, g->blobs[d->blob].name);
    if (!e && g->family) e = ckf_contents_find(c, p->groups[ckf_family_first(p, g->family)].name, g->blobs[d->blob].name);
    return e;
}

/* My part of blob d under the current layout, from its checked entry. */
static int plan_read(const struct ckpt_view *v, const struct entry *e, struct desc *d)
{
    const struct group *g = &v->plan->groups[d->group];
    d->dtype = e->dtype;
    d->file = e->file;
    if (d->dist == DIST_LOCAL && e->ranks != g->nranks)
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                             "/groups/%s/%s: it is per-rank state of %lld ranks and group %s now "
                             "has %d; per-rank state is never redistributed: resume with %lld "
                             "ranks in group %s",
                             e->group, e->blob, (long long)e->ranks, g->name, g->nranks,
                             (long long)e->ranks, g->name);
    d->mine = v->group == d->group;
    d->row0 = 0;
    d->rows = d->file.ndim ? d->file.d[0] : 1;
    if (d->mine && d->dist == DIST_REPLICATED && v->group_size > 1)
        d->mine = v->group_rank == 0; /* it reads for the group: share_replicated */
    if (d->mine && d->dist == DIST_SHARDED) {
        int64_t hi;
        block_range(d->file.d[0], v->group_size, v->group_rank, &d->row0, &hi);
        d->rows = hi - d->row0;
    } else if (d->mine && d->dist == DIST_LOCAL) {
        d->row0 = v->group_rank;
        d->rows = 1;
    }
    return 0;
}

/* The shape of my tensor of blob d. */
static struct shape part_shape(const struct desc *d)
{
    struct shape s = d->file;
    if (d->dist == DIST_LOCAL) { /* drop the ranks dimension (checked: there is one) */
        s.ndim--;
        memmove(s.d, s.d + 1, sizeof(int64_t) * (size_t)s.ndim);
    } else if (s.ndim) {
        s.d[0] = d->rows;
    }
    return s;
}

/* My part of blob d into its tensor (independent transfer: a
 * damaged file fails here, on its own, without stalling other ranks). */
static int read_part(const struct ckpt_view *v, hid_t f, const struct entry *e, struct desc *d)
{
    int rc = 0;
    bool summing = false;
    struct checksum_job sum;
    char path[300];
    hid_t dset = H5I_INVALID_HID, fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
    if (!d->mine) return 0;
    struct tensor *t = v->tensors[d->blob];
    struct shape s = part_shape(d);
    CAIRN_CHECK(tensor_resize(t, d->dtype, &s));
    snprintf(path, sizeof path, "/groups/%s/%s", e->group, e->blob);
    dset = H5Dopen2(f, path, H5P_DEFAULT);
    CAIRN_CHECK_H5(dset);
    fspace = H5Dget_space(dset);
    CAIRN_CHECK_H5(fspace);
    /* replicated values are counted once, by group rank 0, as when written */
    bool counted = d->dist != DIST_REPLICATED || v->group_rank == 0;
    int64_t per = ckf_row_elems(&d->file), esz = (int64_t)dtype_size(d->dtype);
    int64_t slab = d->file.ndim && per ? (int64_t)READ_SLAB / (per * esz) : d->rows;
    if (slab < 1) slab = 1; /* rows wider than a slab: one at a time */
    /* slab by slab, each checksummed on a thread while the next is read */
    for (int64_t r = 0; r < d->rows; r += slab) {
        struct desc part = *d;
        part.row0 = d->row0 + r;
        part.rows = d->rows - r < slab ? d->rows - r : slab;
        char *at = (char *)t->data + r * per * esz;
        CAIRN_CHECK(ckf_select_part(fspace, &part, &mspace));
        CAIRN_CHECK_H5(H5Dread(dset, h5_native(d->dtype), mspace, fspace, H5P_DEFAULT, part.rows * per != 0 ? at : NULL));
        H5Sclose(mspace);
        mspace = H5I_INVALID_HID;
        if (summing) d->partial += checksum_finish(&sum);
        summing = counted;
        if (counted) checksum_start(&sum, at, (size_t)esz, part.rows * per, part.row0 * per);
    }
cleanup:
    if (summing) d->partial += checksum_finish(&sum);
    if (rc == CAIRN_EHDF5) rc = CAIRN_ECORRUPT;
    if (rc) cairn_err_wrap(rc, "%s: ", path);
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    if (dset >= 0) H5Dclose(dset);
    return rc;
}

/* Collective on the group that holds replicated blob d (every rank of it,
 * also one that failed before: rc): group rank 0 read it, the others
 * receive it.  The group agrees on rc first. */
static int share_replicated(const struct ckpt_view *v, struct desc *d, int rc)
{
    struct tensor *t = v->tensors[d->blob];
    struct shape s = part_shape(d);
    if (rc == 0 && v->group_rank != 0) rc = tensor_resize(t, d->dtype, &s);
    rc = coll_agree(v->group_comm, rc);
    char *p = rc ? NULL : t->data;
    for (size_t left = rc ? 0 : tensor_bytes(t); left > 0;) { /* counts are ints: 1 GiB at a time */
        int n = left < ((size_t)1 << 30) ? (int)left : 1 << 30;
        int e = MPI_Bcast(p, n, MPI_BYTE, 0, v->group_comm);
        if (e != MPI_SUCCESS) return cairn_err_mpi(e, __FILE__, __LINE__, "MPI_Bcast");
        p += n;
        left -= (size_t)n;
    }
    return rc;
}

static int verify_sums(const struct ckpt_view *v, const struct entry *const *src, struct desc *ds, int n)
{
    int rc = 0;
    uint64_t *sums = calloc((size_t)n + 1, sizeof *sums);
    CAIRN_CHECK_ALLOC(sums);
    for (int i = 0; i < n; i++) sums[i] = ds[i].partial;
    CAIRN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, sums, n, MPI_UINT64_T, MPI_SUM, v->comm));
    for (int i = 0; i < n; i++)
        if (sums[i] != src[i]->stored)
            CAIRN_FAIL(CAIRN_ECORRUPT, "/groups/%s/%s: checksum mismatch (stored %016llx, data %016llx)",
                       src[i]->group, src[i]->blob, (unsigned long long)src[i]->stored,
                       (unsigned long long)sums[i]);
cleanup:
    free(sums);
    return rc;
}

/* The optional blas_kernels attribute into out: "" if absent, "?" if
 * unreadable (it only informs: no reason to refuse the state). */
static void read_kernels(hid_t f, char *out, size_t size)
{
    char *s = NULL;
    out[0] = '\0';
    if (H5Aexists(f, "blas_kernels") <= 0) return;
    snprintf(out, size, "%s", ckf_attr_get_str(f, "blas_kernels", &s) == 0 ? s : "?");
    free(s);
}

/* How the file's world and group sizes differ from the plan's. */
static void layout_change(const struct contents *c, const struct plan *p, char *out, size_t size)
{
    struct strbuf b = {0};
    if (c->world_size != p->nranks)
        strbuf_addf(&b, "world %lld -> %d ranks", (long long)c->world_size, p->nranks);
    for (int i = 0; i < c->n; i++) {
        int g = plan_find_group(p, c->v[i].group);
        if ((i > 0 && strcmp(c->v[i].group, c->v[i - 1].group) == 0) || g < 0 ||
            p->groups[g].nranks == c->v[i].ranks)
            continue;
        strbuf_addf(&b, "%s%s %lld -> %d", b.len ? ", " : "", c->v[i].group,
                    (long long)c->v[i].ranks, p->groups[g].nranks);
    }
    const char **names = malloc(((size_t)c->n + 1) * sizeof *names);
    int n = 0;
    for (int i = 0; names && i < c->n; i++)
        if (i == 0 || strcmp(c->v[i].group, c->v[i - 1].group) != 0) names[n++] = c->v[i].group;
    if (names) ckf_family_change(p, names, n, &b);
    free(names);
    snprintf(out, size, "%s", strbuf_str(&b));
    strbuf_free(&b);
}

int ckpt_file_read(const struct ckpt_view *v, const char *path, struct ckpt_meta *m, struct ckpt_io *io)
{
    int rc = 0, data_rc = 0, n = ckf_count_persistent(v->plan);
    double t0 = clock_now();
    hid_t fapl = H5I_INVALID_HID, f = H5I_INVALID_HID;
    struct desc *ds = calloc((size_t)n + 1, sizeof *ds);
    const struct entry **src = calloc((size_t)n + 1, sizeof *src);
    struct contents c = {0};
    *io = (struct ckpt_io){0};
    /* held across collectives: a load comes before any background save,
     * so no other rank's writer waits on this rank's HDF5 (h5util.h) */
    h5_lock();
    h5_quiet();
    CAIRN_CHECK_ALLOC(ds);
    CAIRN_CHECK_ALLOC(src);
    fapl = ckf_mpio_fapl(v, false, 0);
    CAIRN_CHECK_H5(fapl);
    h5_mpio_before_open(v->comm, path);
    rc = ckf_open_checked(path, fapl, &f, &c);
    if (rc == 0) rc = ckf_check_settings(&c, path, v->plan);
    for (int g = 0, k = 0; rc == 0 && g < v->plan->n_groups; g++)
        for (int b = 0; rc == 0 && b < v->plan->groups[g].n_blobs; b++) {
            if (!v->plan->groups[g].blobs[b].persistent) continue;
            ds[k] = (struct desc){.group = g, .blob = b, .dist = v->plan->groups[g].blobs[b].type.dist};
            if (!(src[k] = source_of(v->plan, &c, &ds[k])))
                rc = cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "%s: no blob %s/%s", path,
                                   v->plan->groups[g].name, v->plan->groups[g].blobs[b].name);
            k++;
        }
    if (rc == 0) read_kernels(f, io->blas_kernels, sizeof io->blas_kernels);
    CAIRN_CHECK(coll_agree(v->comm, rc)); /* leave together: the loop below has group collectives */
    *m = c.meta;
    layout_change(&c, v->plan, io->layout_change, sizeof io->layout_change);
    /* every rank goes through every blob: a group shares its replicated
     * ones (share_replicated) even after a failure, which it agrees on */
    for (int i = 0; i < n; i++) {
        if (data_rc == 0) data_rc = plan_read(v, src[i], &ds[i]);
        if (data_rc == 0) data_rc = read_part(v, f, src[i], &ds[i]);
        if (data_rc == 0 && ds[i].mine)
            io->bytes += (uint64_t)(ds[i].rows * ckf_row_elems(&ds[i].file)) * dtype_size(ds[i].dtype);
        if (v->group == ds[i].group && ds[i].dist == DIST_REPLICATED && v->group_size > 1)
            data_rc = share_replicated(v, &ds[i], data_rc);
    }
    rc = coll_agree(v->comm, data_rc);
    if (rc == 0) rc = verify_sums(v, src, ds, n);
cleanup:
    if (f >= 0) H5Fclose(f);
    if (fapl >= 0) H5Pclose(fapl);
    if (rc == CAIRN_EHDF5) rc = CAIRN_ECORRUPT; /* attributes HDF5 cannot read */
    free(ds);
    free(src);
    ckf_contents_free(&c);
    h5_unlock();
    io->seconds = clock_now() - t0;
    return coll_agree(v->comm, rc);
}
