/* Checkpoint files, their layout and metadata: the settings text that
 * says what state a checkpoint holds, its parsed contents, the metadata
 * checksum, attributes and selections.  See include/cairn/ckpt_file.h;
 * ckpt_check.c validates a file, ckpt_write.c writes one, ckpt_read.c
 * reads one on any layout. */
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

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t ckf_row_elems(const struct shape *s)
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
void ckf_explain_settings(const char *theirs, const char *ours, struct strbuf *why)
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

/* ---- families of groups ------------------------------------------------------ */

int ckf_family_first(const struct plan *p, const char *family)
{
    for (int g = 0; g < p->n_groups; g++)
        if (p->groups[g].family && strcmp(p->groups[g].family, family) == 0) return g;
    return -1;
}

int ckpt_family_group(const struct plan *p, const char *name)
{
    int g = plan_find_group(p, name);
    if (g >= 0) return g;
    for (g = 0; g < p->n_groups; g++) {
        const char *f = p->groups[g].family;
        size_t n = f ? strlen(f) : 0;
        if (!n || strncmp(name, f, n) != 0) continue; /* name + n is inside name only now */
        size_t digits = strspn(name + n, "0123456789");
        if (digits > 0 && name[n + digits] == '\0') return ckf_family_first(p, f);
    }
    return -1;
}

void ckf_family_change(const struct plan *p, const char *const *names, int n, struct strbuf *b)
{
    for (int g = 0; g < p->n_groups; g++) {
        const char *fam = p->groups[g].family;
        int had = 0, has = 0;
        if (!fam || g != ckf_family_first(p, fam)) continue;
        for (int k = 0; k < p->n_groups; k++) has += p->groups[k].family && strcmp(p->groups[k].family, fam) == 0;
        for (int i = 0; i < n; i++) {
            int k = ckpt_family_group(p, names[i]);
            had += k >= 0 && p->groups[k].family && strcmp(p->groups[k].family, fam) == 0;
        }
        if (had != has) strbuf_addf(b, "%s%s groups %d -> %d", b->len ? ", " : "", fam, had, has);
    }
}

static int by_text(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The line's group if it is a family's other than the job's first (which
 * *src receives), else -1; line is "blob G/B=V". */
static int family_other(const struct plan *p, const char *line, int *src)
{
    char group[128];
    if (strncmp(line, "blob ", 5) != 0) return -1; /* line + 5 is inside line only now */
    const char *slash = strchr(line + 5, '/');
    if (!slash || slash - line - 5 >= (long)sizeof group) return -1;
    snprintf(group, sizeof group, "%.*s", (int)(slash - line - 5), line + 5);
    int g = ckpt_family_group(p, group);
    if (g < 0 || !p->groups[g].family) return -1;
    *src = ckf_family_first(p, p->groups[g].family);
    return strcmp(group, p->groups[*src].name) ? g : -1;
}

int ckpt_settings_fold(const char *text, const struct plan *p, struct strbuf *out)
{
    int rc = 0, n = 0;
    char *copy = strdup(text), **lines = NULL, **keys = NULL, *save = NULL, want[1200];
    CAIRN_CHECK_ALLOC(copy);
    for (const char *q = text; *q; q++) n += *q == '\n';
    CAIRN_CHECK_ALLOC(lines = malloc(((size_t)n + 2) * sizeof *lines));
    CAIRN_CHECK_ALLOC(keys = malloc(((size_t)n + 2) * sizeof *keys));
    n = 0;
    for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) lines[n++] = l;
    memcpy(keys, lines, (size_t)n * sizeof *keys);
    qsort(keys, (size_t)n, sizeof *keys, by_text); /* n log n: a crafted text may be long */
    for (int i = 0; i < n; i++) {
        int src = -1;
        const char *l = lines[i], *rest = strchr(l, '/');
        if (family_other(p, l, &src) >= 0 && rest &&
            snprintf(want, sizeof want, "blob %s%s", p->groups[src].name, rest) < (int)sizeof want) {
            const char *key = want;
            if (bsearch(&key, keys, (size_t)n, sizeof *keys, by_text)) continue; /* what the first says */
        }
        strbuf_addf(out, "%s\n", l);
    }
    rc = strbuf_finish(out);
cleanup:
    free(keys);
    free(lines);
    free(copy);
    return rc;
}

/* ---- attributes ------------------------------------------------------------ */

/* Attributes of an untrusted file: a bad one is a corrupt checkpoint. */
int ckf_attr_get_i64(hid_t obj, const char *name, int64_t lo, int64_t hi, int64_t *v)
{
    return h5_attr_get_i64(obj, name, lo, hi, CAIRN_ECORRUPT, v);
}

int ckf_attr_get_u64(hid_t obj, const char *name, uint64_t *v)
{
    return h5_attr_get_u64(obj, name, CAIRN_ECORRUPT, v);
}

int ckf_attr_get_str(hid_t obj, const char *name, char **out)
{
    return h5_attr_get_str(obj, name, CKPT_MAX_TEXT, CAIRN_ECORRUPT, out);
}

/* ---- describing the state ------------------------------------------------- */

int ckf_count_persistent(const struct plan *p)
{
    int n = 0;
    for (int g = 0; g < p->n_groups; g++)
        for (int b = 0; b < p->groups[g].n_blobs; b++) n += p->groups[g].blobs[b].persistent;
    return n;
}

/* ---- selections -------------------------------------------------------------- */

/* Select my part of the dataset in fspace and make the matching memory space. */
int ckf_select_part(hid_t fspace, const struct desc *d, hid_t *mspace)
{
    int rc = 0;
    hsize_t one = 1;
    int64_t n = d->mine ? d->rows * ckf_row_elems(&d->file) : 0;
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

void ckf_contents_free(struct contents *c)
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
int ckf_parse_settings(const char *text, struct contents *c)
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
int ckf_meta_sum(const struct contents *c, char out[17])
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
    int rc = ckf_parse_settings(settings, &c);
    c.settings = (char *)settings;
    for (int i = 0; rc == 0 && i < c.n; i++) c.v[i].ranks = ranks(c.v[i].group, arg);
    if (rc == 0) rc = ckf_meta_sum(&c, out);
    free(c.v);
    return rc;
}

/* A dataset's checksum attribute binds its name: two datasets swapped do
 * not verify. */
uint64_t ckf_name_share(const struct entry *e)
{
    char name[300];
    snprintf(name, sizeof name, "%s/%s", e->group, e->blob);
    return checksum_string(name);
}

/* Datasets of this size and more start at multiples of the alignment. */
#define ALIGN_THRESHOLD ((hsize_t)64 << 10)
/* Dirty metadata parallel HDF5 keeps before it writes it: its most (H5C__MAX_MAX_CACHE_SIZE / 4). */
#define MDC_DIRTY_MAX ((size_t)32 << 20)

/* The striping hints (MPI_INFO_NULL when none are set). */
int ckf_stripe_info(const struct ckpt_view *v, MPI_Info *info)
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

/* File access over MPI-IO.  Metadata is written collectively (MPI-IO's
 * aggregators write it, not every rank).  It is still read by every rank:
 * HDF5 1.10.5 to 1.10.8 ignore the file-wide collective-read setting
 * (fixed in 1.10.9), and read_part opens datasets on the ranks that read
 * them only.  A file being written gets the striping hints and the
 * alignment (align: the same on every rank). */
hid_t ckf_mpio_fapl(const struct ckpt_view *v, bool create, int64_t align)
{
    int rc = 0;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    MPI_Info info = MPI_INFO_NULL;
    CAIRN_CHECK_H5(fapl);
    if (create) CAIRN_CHECK(ckf_stripe_info(v, &info));
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
