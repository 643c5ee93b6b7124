/* Checkpoint files: format, collective writes, layout-independent reads.
 * See include/cairn/ckpt_file.h.
 *
 * Collective discipline: every rank makes the same sequence of collective
 * HDF5 calls whatever happens locally.  Metadata calls (create, open,
 * attributes) fail alike on every rank; a rank whose data transfer fails
 * records it and carries on with the remaining calls, and the ranks agree
 * on the outcome at the end. */
#include "cairn/ckpt_file.h"

#include "cairn/checksum.h"
#include "cairn/clock.h"
#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/h5util.h"
#include "cairn/iodefer.h"
#include "cairn/partition.h"
#include "cairn/plan.h"
#include "cairn/strbuf.h"
#include "cairn/version.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Limits on what a checkpoint file may claim (it is untrusted input). */
#define CKPT_MAX_TEXT (64 << 20)        /* bytes of a string attribute */
#define CKPT_MAX_DIM (INT64_C(1) << 50) /* one dimension */
#define CKPT_MAX_COUNT (INT64_C(1) << 50) /* epochs, steps */
#define CKPT_MAX_RANKS (1 << 24)

/* A persistent blob as the file holds it, and this rank's part of it. */
struct desc {
    int group, blob;
    enum dtype dtype;
    enum dist dist;
    struct shape file; /* the dataset's shape */
    int64_t row0, rows; /* my rows of file.d[0] (all of a scalar: rows 1) */
    int mine;           /* do I write (or count) a part? */
    uint64_t partial;   /* my part's checksum */
};

static int64_t row_elems(const struct shape *s)
{
    int64_t n = 1;
    for (int i = 1; i < s->ndim; i++) n *= s->d[i];
    return n;
}

/* ---- settings ---------------------------------------------------------- */

int ckpt_settings(const struct plan *p, struct strbuf *out)
{
    strbuf_addf(out, "format=%d\nseed=%" PRId64 "\n", CAIRN_CKPT_FORMAT, p->job->seed);
    for (int g = 0; g < p->n_groups; g++) {
        for (int b = 0; b < p->groups[g].n_blobs; b++) {
            const struct blob_info *bi = &p->groups[g].blobs[b];
            char sh[256];
            if (!bi->persistent) continue;
            strbuf_addf(out, "blob %s/%s=%s%s %s\n", p->groups[g].name, bi->name,
                        dtype_name(bi->type.dtype), shape_format(&bi->type.shape, sh, sizeof sh),
                        dist_name(bi->type.dist));
        }
    }
    return strbuf_finish(out);
}

/* One "key=value" line of a settings text. */
struct kv {
    const char *k, *v;
    int klen, vlen;
};

static int split_settings(const char *text, struct kv *out, int max)
{
    int n = 0;
    for (const char *l = text; *l && n < max;) {
        const char *nl = strchr(l, '\n'), *eq = strchr(l, '=');
        if (!nl) nl = l + strlen(l);
        if (eq && eq < nl) out[n++] = (struct kv){l, eq + 1, (int)(eq - l), (int)(nl - eq - 1)};
        l = *nl ? nl + 1 : nl;
    }
    return n;
}

static const struct kv *find_kv(const struct kv *v, int n, const struct kv *key)
{
    for (int i = 0; i < n; i++)
        if (v[i].klen == key->klen && strncmp(v[i].k, key->k, (size_t)key->klen) == 0) return &v[i];
    return NULL;
}

/* Name up to three settings that differ, e.g. "blob main/w: the checkpoint
 * has f32[4] sharded, this job f32[5] sharded". */
static void explain_settings(const char *theirs, const char *ours, struct strbuf *why)
{
    enum { MAX = 4096 };
    struct kv *a = calloc(MAX, sizeof *a), *b = calloc(MAX, sizeof *b);
    if (!a || !b) goto done;
    int na = split_settings(theirs, a, MAX), nb = split_settings(ours, b, MAX), shown = 0;
    for (int i = 0; i < nb && shown < 3; i++) {
        const struct kv *t = find_kv(a, na, &b[i]);
        if (t && t->vlen == b[i].vlen && strncmp(t->v, b[i].v, (size_t)t->vlen) == 0) continue;
        if (t)
            strbuf_addf(why, "%s%.*s: the checkpoint has %.*s, this job %.*s", shown++ ? "; " : "",
                        b[i].klen, b[i].k, t->vlen, t->v, b[i].vlen, b[i].v);
        else
            strbuf_addf(why, "%s%.*s: not in the checkpoint (this job has %.*s)",
                        shown++ ? "; " : "", b[i].klen, b[i].k, b[i].vlen, b[i].v);
    }
    for (int i = 0; i < na && shown < 3; i++)
        if (!find_kv(b, nb, &a[i]))
            strbuf_addf(why, "%s%.*s: in the checkpoint but not in this job", shown++ ? "; " : "",
                        a[i].klen, a[i].k);
    if (!shown)
        strbuf_add(why, "the same settings, written differently (order, spacing or a line end): "
                        "not a file cairn wrote for this job");
done:
    free(a);
    free(b);
}

/* ---- attributes ------------------------------------------------------------ */

/* Overwrite the value of an existing attribute (its size stays put). */
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
static int attr_get_i64(hid_t obj, const char *name, int64_t lo, int64_t hi, int64_t *v)
{
    return h5_attr_get_i64(obj, name, lo, hi, CAIRN_ECORRUPT, v);
}

static int attr_get_u64(hid_t obj, const char *name, uint64_t *v)
{
    return h5_attr_get_u64(obj, name, CAIRN_ECORRUPT, v);
}

static int attr_get_str(hid_t obj, const char *name, char **out)
{
    return h5_attr_get_str(obj, name, CKPT_MAX_TEXT, CAIRN_ECORRUPT, out);
}

/* ---- describing the state ------------------------------------------------- */

static int count_persistent(const struct plan *p)
{
    int n = 0;
    for (int g = 0; g < p->n_groups; g++)
        for (int b = 0; b < p->groups[g].n_blobs; b++) n += p->groups[g].blobs[b].persistent;
    return n;
}

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

/* ---- selections -------------------------------------------------------------- */

/* Select my part of the dataset in fspace and make the matching memory space. */
static int select_part(hid_t fspace, const struct desc *d, hid_t *mspace)
{
    int rc = 0;
    hsize_t one = 1;
    int64_t n = d->mine ? d->rows * row_elems(&d->file) : 0;
    if (n == 0) {
        CAIRN_CHECK_H5(H5Sselect_none(fspace));
        *mspace = H5Screate_simple(1, &one, NULL);
        CAIRN_CHECK_H5(*mspace);
        CAIRN_CHECK_H5(H5Sselect_none(*mspace));
    } else if (d->file.ndim == 0) {
        CAIRN_CHECK_H5(H5Sselect_all(fspace));
        *mspace = H5Screate(H5S_SCALAR);
        CAIRN_CHECK_H5(*mspace);
    } else {
        hsize_t start[CAIRN_MAX_DIMS + 1] = {0}, count[CAIRN_MAX_DIMS + 1];
        start[0] = (hsize_t)d->row0;
        count[0] = (hsize_t)d->rows;
        for (int i = 1; i < d->file.ndim; i++) count[i] = (hsize_t)d->file.d[i];
        CAIRN_CHECK_H5(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL));
        *mspace = H5Screate_simple(d->file.ndim, count, NULL);
        CAIRN_CHECK_H5(*mspace);
    }
cleanup:
    return rc;
}

/* ---- what a checkpoint holds ------------------------------------------------------ */

/* One persistent blob as a settings text describes it, and once checked,
 * its dataset. */
struct entry {
    char group[128], blob[128];
    enum dtype dtype;
    enum dist dist;
    struct shape shape; /* the blob's global shape (ndim -1 or dims -1: any) */
    int64_t ranks;      /* its group's ranks */
    struct shape file;  /* the dataset's shape */
    uint64_t stored;    /* the dataset's data checksum (its name's share removed) */
};

/* A checkpoint's metadata, validated. */
struct contents {
    struct ckpt_meta meta;
    int64_t format, seed, world_size;
    char *settings;
    int n;
    struct entry *v;
};

static void contents_free(struct contents *c)
{
    free(c->settings);
    free(c->v);
    *c = (struct contents){0};
}

/* "[]", "[3, 4]", "[?, 4]" or "[...]" at *p. */
static int parse_shape(const char **p, struct shape *s)
{
    const char *q = *p;
    *s = (struct shape){0};
    if (strncmp(q, "[...]", 5) == 0) {
        s->ndim = -1;
        *p = q + 5;
        return 0;
    }
    if (*q++ != '[') return -1;
    while (*q != ']') {
        if (s->ndim == CAIRN_MAX_DIMS) return -1;
        if (s->ndim && strncmp(q, ", ", 2) != 0) return -1;
        q += s->ndim ? 2 : 0;
        if (*q == '?') {
            s->d[s->ndim++] = -1;
            q++;
            continue;
        }
        char *end;
        if (*q < '0' || *q > '9') return -1;
        errno = 0;
        long long v = strtoll(q, &end, 10);
        if (errno || v > CKPT_MAX_DIM) return -1;
        s->d[s->ndim++] = v;
        q = end;
    }
    *p = q + 1;
    return 0;
}

/* "blob GROUP/BLOB=DTYPE[SHAPE] DIST" (without its newline, len bytes). */
static int parse_blob_line(const char *l, size_t len, struct entry *e)
{
    char line[1024], dt[8], dist[16];
    if (len >= sizeof line || strncmp(l, "blob ", 5) != 0) return -1;
    memcpy(line, l, len);
    line[len] = '\0';
    char *name = line + 5, *eq = strchr(name, '='), *slash = strchr(name, '/');
    if (!eq || !slash || slash > eq || slash == name || slash + 1 == eq) return -1;
    if ((size_t)(slash - name) >= sizeof e->group || (size_t)(eq - slash - 1) >= sizeof e->blob)
        return -1;
    *e = (struct entry){0};
    memcpy(e->group, name, (size_t)(slash - name));
    memcpy(e->blob, slash + 1, (size_t)(eq - slash - 1));
    const char *q = eq + 1, *br = strchr(q, '[');
    if (!br || br - q >= (long)sizeof dt) return -1;
    snprintf(dt, sizeof dt, "%.*s", (int)(br - q), q);
    if ((e->dtype = dtype_parse(dt)) == DT_NONE) return -1;
    if (parse_shape(&br, &e->shape) || *br != ' ') return -1;
    snprintf(dist, sizeof dist, "%s", br + 1);
    for (int d = DIST_REPLICATED; d <= DIST_LOCAL; d++)
        if (strcmp(dist, dist_name((enum dist)d)) == 0) return e->dist = (enum dist)d, 0;
    return -1;
}

static int by_name(const void *a, const void *b)
{
    const struct entry *x = *(const struct entry *const *)a, *y = *(const struct entry *const *)b;
    int g = strcmp(x->group, y->group);
    return g ? g : strcmp(x->blob, y->blob);
}

/* No blob listed twice (sorted, so a crafted list of a million lines is
 * checked in n log n). */
static int check_unique(const struct contents *c)
{
    int rc = 0;
    const struct entry **v = malloc(((size_t)c->n + 1) * sizeof *v);
    CAIRN_CHECK_ALLOC(v);
    for (int i = 0; i < c->n; i++) v[i] = &c->v[i];
    qsort(v, (size_t)c->n, sizeof *v, by_name);
    for (int i = 1; i < c->n; i++)
        if (by_name(&v[i - 1], &v[i]) == 0)
            CAIRN_FAIL(CAIRN_ECORRUPT, "its settings list blob %s/%s twice", v[i]->group, v[i]->blob);
cleanup:
    free(v);
    return rc;
}

/* The blobs a settings text lists, in its order (groups are contiguous). */
static int parse_settings(const char *text, struct contents *c)
{
    int rc = 0, lines = 0;
    for (const char *q = text; *q; q++) lines += *q == '\n';
    c->v = calloc((size_t)lines + 1, sizeof *c->v);
    CAIRN_CHECK_ALLOC(c->v);
    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        if (strncmp(l, "blob ", 5) == 0) {
            if (parse_blob_line(l, len, &c->v[c->n]))
                CAIRN_FAIL(CAIRN_ECORRUPT, "its settings hold a bad line: %.*s", (int)(len > 80 ? 80 : len), l);
            c->n++;
        } else if (strncmp(l, "format=", 7) && strncmp(l, "seed=", 5)) {
            CAIRN_FAIL(CAIRN_ECORRUPT, "its settings hold a bad line: %.*s", (int)(len > 80 ? 80 : len), l);
        }
        l += len + (nl != NULL);
    }
    CAIRN_CHECK(check_unique(c));
cleanup:
    return rc;
}

/* The checksum of the root metadata: a damaged epoch, step or done, a
 * changed settings text or group size, is damage like a flipped data bit. */
static int meta_sum(const struct contents *c, char out[17])
{
    struct strbuf b = {0};
    strbuf_addf(&b, "format=%lld\nepoch=%lld\nstep=%lld\ndone=%d\nseed=%lld\nworld_size=%lld\n",
                (long long)c->format, (long long)c->meta.epoch, (long long)c->meta.step,
                c->meta.done, (long long)c->seed, (long long)c->world_size);
    for (int i = 0; i < c->n; i++)
        if (i == 0 || strcmp(c->v[i].group, c->v[i - 1].group))
            strbuf_addf(&b, "group %s ranks=%lld\n", c->v[i].group, (long long)c->v[i].ranks);
    strbuf_addf(&b, "%s", c->settings);
    int rc = strbuf_finish(&b);
    if (rc == 0) checksum_text(strbuf_str(&b), out);
    strbuf_free(&b);
    return rc;
}

int ckpt_file_meta_checksum(const struct ckpt_meta *m, int64_t seed, int64_t world_size,
                            const char *settings, int64_t (*ranks)(const char *group, void *arg),
                            void *arg, char out[17])
{
    struct contents c = {.meta = *m, .format = CAIRN_CKPT_FORMAT, .seed = seed, .world_size = world_size};
    int rc = parse_settings(settings, &c);
    c.settings = (char *)settings;
    for (int i = 0; rc == 0 && i < c.n; i++) c.v[i].ranks = ranks(c.v[i].group, arg);
    if (rc == 0) rc = meta_sum(&c, out);
    free(c.v);
    return rc;
}

/* A dataset's checksum attribute binds its name: two datasets swapped do
 * not verify. */
static uint64_t name_share(const struct entry *e)
{
    char name[300];
    snprintf(name, sizeof name, "%s/%s", e->group, e->blob);
    return checksum_string(name);
}

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
    CAIRN_CHECK(attr_get_str(dset, "dist", &dist));
    if (strcmp(dist, dist_name(e->dist)) != 0)
        CAIRN_FAIL(CAIRN_ECORRUPT, "it is stored %.32s, not %s", dist, dist_name(e->dist));
    CAIRN_CHECK(attr_get_u64(dset, "checksum", &e->stored));
    e->stored -= name_share(e);
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
    rc = attr_get_i64(g, "ranks", 1, world_size, &e->ranks);
    if (rc == 0) rc = attr_get_i64(g, "first_rank", 0, world_size - 1, &first);
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
    CAIRN_CHECK(attr_get_i64(f, "format_version", 0, INT32_MAX, &fmt));
    c->format = fmt;
    CAIRN_CHECK(attr_get_str(f, "checksum_alg", &alg));
    if (strcmp(alg, CAIRN_CHECKSUM_OLD) == 0)
        CAIRN_FAIL(CAIRN_EINPUT, "it was written by an earlier cairn (checksums %s; this cairn "
                                 "writes and reads %s): resume it with that version, or start over",
                   CAIRN_CHECKSUM_OLD, CAIRN_CHECKSUM_NAME);
    if (strcmp(alg, CAIRN_CHECKSUM_NAME) != 0)
        CAIRN_FAIL(CAIRN_ECORRUPT, "its checksum algorithm is '%.32s', not %s", alg, CAIRN_CHECKSUM_NAME);
    CAIRN_CHECK(attr_get_i64(f, "epoch", 0, CKPT_MAX_COUNT, &c->meta.epoch));
    CAIRN_CHECK(attr_get_i64(f, "step", 0, CKPT_MAX_COUNT, &c->meta.step));
    CAIRN_CHECK(attr_get_i64(f, "done", 0, 1, &done));
    c->meta.done = (int)done;
    CAIRN_CHECK(attr_get_i64(f, "seed", INT64_MIN, INT64_MAX, &c->seed));
    CAIRN_CHECK(attr_get_i64(f, "world_size", 1, CKPT_MAX_RANKS, &c->world_size));
    CAIRN_CHECK(attr_get_str(f, "settings", &c->settings));
    /* not used to load, but extract copies them: each one string too */
    for (const char *const *n = text_attrs; *n; n++) {
        char *s = NULL;
        rc = attr_get_str(f, *n, &s);
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
    CAIRN_CHECK(parse_settings(c->settings, c));
    for (int i = 0; i < c->n; i++) {
        if (i > 0 && strcmp(c->v[i].group, c->v[i - 1].group) == 0)
            c->v[i].ranks = c->v[i - 1].ranks; /* checked with the group's first blob */
        else
            CAIRN_CHECK(check_group(f, &c->v[i], c->world_size));
    }
    CAIRN_CHECK(attr_get_str(f, "meta_checksum", stored));
    CAIRN_CHECK(meta_sum(c, sum));
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

static const struct entry *contents_find(const struct contents *c, const char *group, const char *blob)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->v[i].group, group) == 0 && strcmp(c->v[i].blob, blob) == 0) return &c->v[i];
    return NULL;
}

/* Open a checkpoint file and validate it (serial or, with an MPI-IO fapl,
 * on every rank alike). */
static int open_checked(const char *path, hid_t fapl, hid_t *f, struct contents *c)
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
    CAIRN_CHECK(parse_settings(settings, c));
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
    CAIRN_CHECK(meta_sum(c, sum));
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

/* Reads go a slab of this many bytes at a time (a part's checksum runs
 * beside the next slab's read). */
#define READ_SLAB ((size_t)64 << 20)
/* Writes too, smaller: between two, a thread that reads a data file
 * (h5_lock is fair) gets its turn beside a background save. */
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
    int64_t per = row_elems(&d->file), esz = (int64_t)dtype_size(d->dtype);
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
        CAIRN_CHECK(select_part(fspace, &part, &mspace));
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
        uint64_t v = sums[i] + name_share(&c->v[i]);
        CAIRN_CHECK(attr_set(dsets[i], "checksum", H5T_NATIVE_UINT64, &v));
    }
cleanup:
    free(sums);
    return rc;
}

/* Datasets of this size and more start at multiples of the alignment. */
#define ALIGN_THRESHOLD ((hsize_t)64 << 10)
/* Dirty metadata parallel HDF5 keeps before it writes it: its most (H5C__MAX_MAX_CACHE_SIZE / 4). */
#define MDC_DIRTY_MAX ((size_t)32 << 20)
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

/* The striping hints (MPI_INFO_NULL when none are set). */
static int stripe_info(const struct ckpt_view *v, MPI_Info *info)
{
    int rc = 0;
    char num[32];
    *info = MPI_INFO_NULL;
    if (v->stripe_count <= 0 && v->stripe_size <= 0) return 0;
    CAIRN_CHECK_MPI(MPI_Info_create(info));
    snprintf(num, sizeof num, "%lld", (long long)v->stripe_count);
    if (v->stripe_count > 0) CAIRN_CHECK_MPI(MPI_Info_set(*info, "striping_factor", num));
    snprintf(num, sizeof num, "%lld", (long long)v->stripe_size);
    if (v->stripe_size > 0) CAIRN_CHECK_MPI(MPI_Info_set(*info, "striping_unit", num));
cleanup:
    return rc;
}

/* Rank 0: create the file.  A file's stripes are fixed when it is created,
 * so with striping hints MPI-IO creates it (alone), not open(2). */
static int create_file(const struct ckpt_view *v, const char *path)
{
    MPI_Info info;
    MPI_File fh;
    int rc = stripe_info(v, &info);
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

/* File access over MPI-IO.  Metadata is written collectively (MPI-IO's
 * aggregators write it, not every rank).  It is still read by every rank:
 * HDF5 1.10.5 to 1.10.8 ignore the file-wide collective-read setting
 * (fixed in 1.10.9), and read_part opens datasets on the ranks that read
 * them only.  A file being written gets the striping hints and the
 * alignment (align: the same on every rank). */
static hid_t mpio_fapl(const struct ckpt_view *v, bool create, int64_t align)
{
    int rc = 0;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    MPI_Info info = MPI_INFO_NULL;
    CAIRN_CHECK_H5(fapl);
    if (create) CAIRN_CHECK(stripe_info(v, &info));
    CAIRN_CHECK_H5(H5Pset_fapl_mpio(fapl, v->comm, info));
    /* v2 object headers carry HDF5's own metadata checksums */
    CAIRN_CHECK_H5(H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST));
    CAIRN_CHECK_H5(H5Pset_coll_metadata_write(fapl, true));
    if (align > 0) CAIRN_CHECK_H5(H5Pset_alignment(fapl, ALIGN_THRESHOLD, (hsize_t)align));
    if (create) { /* no metadata reaches the disk before the file is allocated (see file_size) */
        H5AC_cache_config_t mdc = {.version = H5AC__CURR_CACHE_CONFIG_VERSION};
        CAIRN_CHECK_H5(H5Pget_mdc_config(fapl, &mdc));
        if (!v->small_mdc) mdc.dirty_bytes_threshold = MDC_DIRTY_MAX;
        CAIRN_CHECK_H5(H5Pset_mdc_config(fapl, &mdc));
    }
cleanup:
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    if (rc && fapl >= 0) H5Pclose(fapl);
    return rc ? H5I_INVALID_HID : fapl;
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
        if (ds[i].mine) io->bytes += (uint64_t)(ds[i].rows * row_elems(&ds[i].file)) * dtype_size(ds[i].dtype);
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
    int rc = 0, n = count_persistent(v->plan);
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
    fapl = mpio_fapl(v, true, align);
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
    contents_free(&c);
    io->seconds = clock_now() - t0;
    return coll_agree(v->comm, rc);
}

/* ---- reading ------------------------------------------------------------------ */

static int check_settings(const struct contents *c, const char *path, const char *ours)
{
    int rc = 0;
    struct strbuf why = {0};
    if (strcmp(c->settings, ours) != 0) {
        explain_settings(c->settings, ours, &why);
        CAIRN_FAIL(CAIRN_EINPUT, "%s was written for other settings: %s", path, strbuf_str(&why));
    }
cleanup:
    strbuf_free(&why);
    return rc;
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
    int64_t per = row_elems(&d->file), esz = (int64_t)dtype_size(d->dtype);
    int64_t slab = d->file.ndim && per ? (int64_t)READ_SLAB / (per * esz) : d->rows;
    if (slab < 1) slab = 1; /* rows wider than a slab: one at a time */
    /* slab by slab, each checksummed on a thread while the next is read */
    for (int64_t r = 0; r < d->rows; r += slab) {
        struct desc part = *d;
        part.row0 = d->row0 + r;
        part.rows = d->rows - r < slab ? d->rows - r : slab;
        char *at = (char *)t->data + r * per * esz;
        CAIRN_CHECK(select_part(fspace, &part, &mspace));
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

static int verify_sums(const struct ckpt_view *v, const struct contents *c, struct desc *ds, int n)
{
    int rc = 0;
    uint64_t *sums = calloc((size_t)n + 1, sizeof *sums);
    CAIRN_CHECK_ALLOC(sums);
    for (int i = 0; i < n; i++) sums[i] = ds[i].partial;
    CAIRN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, sums, n, MPI_UINT64_T, MPI_SUM, v->comm));
    for (int i = 0; i < n; i++)
        if (sums[i] != c->v[i].stored)
            CAIRN_FAIL(CAIRN_ECORRUPT, "/groups/%s/%s: checksum mismatch (stored %016llx, data %016llx)",
                       c->v[i].group, c->v[i].blob, (unsigned long long)c->v[i].stored,
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
    snprintf(out, size, "%s", attr_get_str(f, "blas_kernels", &s) == 0 ? s : "?");
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
    snprintf(out, size, "%s", strbuf_str(&b));
    strbuf_free(&b);
}

int ckpt_file_read(const struct ckpt_view *v, const char *path, struct ckpt_meta *m, struct ckpt_io *io)
{
    int rc = 0, data_rc = 0, n = count_persistent(v->plan);
    double t0 = clock_now();
    hid_t fapl = H5I_INVALID_HID, f = H5I_INVALID_HID;
    struct desc *ds = calloc((size_t)n + 1, sizeof *ds);
    struct strbuf ours = {0};
    struct contents c = {0};
    *io = (struct ckpt_io){0};
    /* held across collectives: a load comes before any background save,
     * so no other rank's writer waits on this rank's HDF5 (h5util.h) */
    h5_lock();
    h5_quiet();
    CAIRN_CHECK_ALLOC(ds);
    CAIRN_CHECK(ckpt_settings(v->plan, &ours));
    fapl = mpio_fapl(v, false, 0);
    CAIRN_CHECK_H5(fapl);
    h5_mpio_before_open(v->comm, path);
    rc = open_checked(path, fapl, &f, &c);
    if (rc == 0) rc = check_settings(&c, path, strbuf_str(&ours));
    if (rc == 0 && c.n != n) rc = cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "%s: %d blobs, the plan has %d", path, c.n, n);
    if (rc == 0) read_kernels(f, io->blas_kernels, sizeof io->blas_kernels);
    CAIRN_CHECK(coll_agree(v->comm, rc)); /* leave together: the loop below has group collectives */
    *m = c.meta;
    layout_change(&c, v->plan, io->layout_change, sizeof io->layout_change);
    for (int g = 0, k = 0; g < v->plan->n_groups; g++)
        for (int b = 0; b < v->plan->groups[g].n_blobs; b++)
            if (v->plan->groups[g].blobs[b].persistent)
                ds[k++] = (struct desc){.group = g, .blob = b,
                                        .dist = v->plan->groups[g].blobs[b].type.dist};
    /* every rank goes through every blob: a group shares its replicated
     * ones (share_replicated) even after a failure, which it agrees on */
    for (int i = 0; i < n; i++) {
        if (data_rc == 0) data_rc = plan_read(v, &c.v[i], &ds[i]);
        if (data_rc == 0) data_rc = read_part(v, f, &c.v[i], &ds[i]);
        if (data_rc == 0 && ds[i].mine)
            io->bytes += (uint64_t)(ds[i].rows * row_elems(&ds[i].file)) * dtype_size(ds[i].dtype);
        if (v->group == ds[i].group && ds[i].dist == DIST_REPLICATED && v->group_size > 1)
            data_rc = share_replicated(v, &ds[i], data_rc);
    }
    rc = coll_agree(v->comm, data_rc);
    if (rc == 0) rc = verify_sums(v, &c, ds, n);
cleanup:
    if (f >= 0) H5Fclose(f);
    if (fapl >= 0) H5Pclose(fapl);
    if (rc == CAIRN_EHDF5) rc = CAIRN_ECORRUPT; /* attributes HDF5 cannot read */
    free(ds);
    strbuf_free(&ours);
    contents_free(&c);
    h5_unlock();
    io->seconds = clock_now() - t0;
    return coll_agree(v->comm, rc);
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
    int64_t total = d.file.ndim ? d.file.d[0] : 1, per = row_elems(&d.file);
    int64_t slab = per ? (64 << 20) / (per * (int64_t)dtype_size(dt)) + 1 : total;
    for (d.row0 = 0; d.row0 < total; d.row0 += slab) {
        d.rows = total - d.row0 < slab ? total - d.row0 : slab;
        struct shape bs = {.ndim = 1, .d = {d.rows * per}};
        CAIRN_CHECK(tensor_resize(&buf, dt, &bs));
        CAIRN_CHECK(select_part(space, &d, &ms));
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

int ckpt_file_verify(const char *path, const char *settings, FILE *out)
{
    int rc = 0;
    hid_t f = H5I_INVALID_HID;
    struct contents c = {0};
    h5_quiet();
    CAIRN_CHECK(open_checked(path, H5P_DEFAULT, &f, &c));
    if (settings) CAIRN_CHECK(check_settings(&c, path, settings));
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
    contents_free(&c);
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
        CAIRN_CHECK(attr_get_str(from, names[i], &s));
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

/* GROUP/BLOB of a checked checkpoint, verified, into out. */
static int extract_one(hid_t f, const struct contents *c, hid_t out, const char *name)
{
    int rc = 0;
    char group[128] = "", path[300];
    uint64_t sum = 0;
    struct tensor t = {0};
    hid_t d = H5I_INVALID_HID, d2 = H5I_INVALID_HID;
    const char *slash = strchr(name, '/');
    if (slash && slash - name < (long)sizeof group) snprintf(group, sizeof group, "%.*s", (int)(slash - name), name);
    const struct entry *e = slash ? contents_find(c, group, slash + 1) : NULL;
    if (!e) CAIRN_FAIL(CAIRN_EINPUT, "no blob '%s' in the checkpoint (write GROUP/BLOB)", name);
    CAIRN_CHECK(dataset_sum(f, e, &sum));
    if (sum != e->stored) CAIRN_FAIL(CAIRN_ECORRUPT, "blob %s does not verify", name);
    snprintf(path, sizeof path, "/groups/%s", name);
    d = H5Dopen2(f, path, H5P_DEFAULT);
    CAIRN_CHECK_H5(d);
    CAIRN_CHECK(tensor_resize(&t, e->dtype, &e->file));
    CAIRN_CHECK_H5(H5Dread(d, h5_native(e->dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data));
    CAIRN_CHECK(h5_put_tensor(out, name, &t));
    d2 = H5Dopen2(out, name, H5P_DEFAULT);
    CAIRN_CHECK_H5(d2);
    CAIRN_CHECK(h5_attr_put_str(d2, "dist", dist_name(e->dist)));
    CAIRN_CHECK(h5_attr_put(d2, "checksum", H5T_NATIVE_UINT64, &sum)); /* of the data alone */
cleanup:
    tensor_free(&t);
    if (d2 >= 0 && H5Dclose(d2) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Dclose");
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
    CAIRN_CHECK(open_checked(path, H5P_DEFAULT, &f, &c));
    CAIRN_CHECK(fsx_out_begin(&out, to, 0));
    CAIRN_CHECK(h5_create_file(out.tmp, H5P_DEFAULT, &o));
    CAIRN_CHECK(copy_attrs(f, o, &c));
    for (int i = 0; i < n; i++) CAIRN_CHECK(extract_one(f, &c, o, blobs[i]));
cleanup:
    if (o >= 0 && H5Fclose(o) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Fclose");
    if (f >= 0) H5Fclose(f);
    contents_free(&c);
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
    CAIRN_CHECK(open_checked(path, H5P_DEFAULT, &f, &c));
    const struct entry *e = contents_find(&c, group, blob);
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
    CAIRN_CHECK(select_part(sp, &ds, &ms));
    CAIRN_CHECK_H5(H5Dread(d, h5_native(ds.dtype), ms, sp, H5P_DEFAULT, t->data));
    *partial = checksum_part(t->data, dtype_size(ds.dtype), ds.rows * row_elems(&ds.file),
                             ds.row0 * row_elems(&ds.file));
cleanup:
    if (ms >= 0) H5Sclose(ms);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    if (f >= 0) H5Fclose(f);
    contents_free(&c);
    h5_unlock();
    if (rc == CAIRN_EHDF5) rc = CAIRN_ECORRUPT;
    return rc;
}
