/* Cached HDF5 dataset reading; see include/cairn/reader.h. */
#include "cairn/reader.h"

#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/h5util.h"
#include "cairn/sort.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct entry {
    char *file, *dataset;
    hid_t f, d;
    struct shape shape;
    enum dtype type;
};

struct reader_cache {
    struct entry *v;
    int n;
};

int reader_cache_create(struct reader_cache **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
}

void reader_cache_destroy(struct reader_cache **cp)
{
    if (!cp || !*cp) return;
    struct reader_cache *c = *cp;
    h5_lock();
    for (int i = 0; i < c->n; i++) {
        H5Dclose(c->v[i].d);
        H5Fclose(c->v[i].f);
        free(c->v[i].file);
        free(c->v[i].dataset);
    }
    h5_unlock();
    free(c->v);
    free(c);
    *cp = NULL;
}

/* A dataset's shape is the file's word, and the file is untrusted: a
 * chunked dataset that stores nothing may claim any size.  Its element
 * count must leave every byte count cairn derives from it (8 bytes an
 * element at most) inside an int64_t; anything larger is bad input, named
 * here rather than an allocation failing later without a name. */
static int check_extent(const char *file, const char *dataset, const hsize_t *dims, int nd)
{
    char text[CAIRN_MAX_DIMS * 24 + 4];
    size_t at = 0;
    const hsize_t most = (hsize_t)READER_MAX_ELEMENTS;
    hsize_t n = 1;
    bool over = false;
    for (int i = 0; i < nd; i++) {
        over |= dims[i] > most || (dims[i] && n > most / dims[i]);
        if (!over) n *= dims[i];
        at += (size_t)snprintf(text + at, sizeof text - at, "%s%llu", i ? ", " : "[", (unsigned long long)dims[i]);
    }
    if (!over) return 0;
    return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                         "dataset '%s' in '%s' is %s], more than 2^60 elements (a file may claim any shape; "
                         "cairn reads at most that)", dataset, file, text);
}

static int open_entry(struct reader_cache *c, const char *file, const char *dataset,
                      struct entry **out)
{
    int rc = 0;
    hid_t f = H5I_INVALID_HID, d = H5I_INVALID_HID, space = H5I_INVALID_HID,
          type = H5I_INVALID_HID;
    for (int i = 0; i < c->n; i++) {
        if (strcmp(c->v[i].file, file) == 0 && strcmp(c->v[i].dataset, dataset) == 0) {
            *out = &c->v[i];
            return 0;
        }
    }
    h5_quiet();
    /* a FIFO or a device would block the open, an external link or
     * external storage the read: data files are untrusted */
    if (access(file, F_OK) == 0 && !fsx_is_regular(file))
        CAIRN_FAIL(CAIRN_EINPUT, "'%s' is not a regular file", file);
    f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) CAIRN_FAIL(CAIRN_EINPUT, "cannot open HDF5 file '%s'", file);
    if (h5_path_local(f, dataset) == 0)
        CAIRN_FAIL(CAIRN_EINPUT, "dataset '%s' in '%s' is behind a soft or external link", dataset, file);
    d = H5Dopen2(f, dataset, H5P_DEFAULT);
    if (d < 0) CAIRN_FAIL(CAIRN_EINPUT, "file '%s' has no dataset '%s'", file, dataset);
    if (!h5_data_local(d))
        CAIRN_FAIL(CAIRN_EINPUT, "dataset '%s' in '%s' keeps its data outside the file", dataset, file);
    space = H5Dget_space(d);
    type = H5Dget_type(d);
    CAIRN_CHECK_H5(space);
    CAIRN_CHECK_H5(type);
    struct entry e = {.f = f, .d = d, .type = h5_dtype(type)};
    int nd = H5Sget_simple_extent_ndims(space);
    if (e.type == DT_NONE || nd < 1 || nd > CAIRN_MAX_DIMS)
        CAIRN_FAIL(CAIRN_EINPUT, "dataset '%s' in '%s' must be numeric with 1 to %d dimensions",
                   dataset, file, CAIRN_MAX_DIMS);
    hsize_t dims[CAIRN_MAX_DIMS];
    H5Sget_simple_extent_dims(space, dims, NULL);
    CAIRN_CHECK(check_extent(file, dataset, dims, nd));
    e.shape.ndim = nd;
    for (int i = 0; i < nd; i++) e.shape.d[i] = (int64_t)dims[i];
    struct entry *v = realloc(c->v, (size_t)(c->n + 1) * sizeof *v);
    CAIRN_CHECK_ALLOC(v);
    c->v = v;
    e.file = strdup(file);
    e.dataset = strdup(dataset);
    if (!e.file || !e.dataset) {
        free(e.file);
        free(e.dataset);
        CAIRN_FAIL(CAIRN_ENOMEM, "out of memory");
    }
    c->v[c->n] = e;
    *out = &c->v[c->n++];
    f = d = H5I_INVALID_HID; /* the cache owns them now */
cleanup:
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    if (d >= 0) H5Dclose(d);
    if (f >= 0) H5Fclose(f);
    return rc;
}

int reader_shape(struct reader_cache *c, const char *file, const char *dataset,
                 struct shape *shape, enum dtype *type)
{
    struct entry *e = NULL;
    h5_lock();
    int rc = open_entry(c, file, dataset, &e);
    if (rc == 0) {
        *shape = e->shape;
        *type = e->type;
    }
    h5_unlock();
    return rc;
}

/* Rows at most this many elements long are selected element by element:
 * building a union of one-row hyperslabs costs HDF5 1.10 a few µs per
 * row, a point selection some 30 ns per element (measured here with 32
 * floats a row: 0.5 ms against 1.9 ms for 512 rows). */
enum { POINT_ROW_MAX = 64 };

/* Select the listed rows (ascending) of fspace, whose shape is s's but
 * for its row count. */
static int select_rows(hid_t fspace, const struct shape *s, const int64_t *idx, int64_t count)
{
    int rc = 0;
    int64_t row = 1;
    for (int i = 1; i < s->ndim; i++) row *= s->d[i];
    if (row <= POINT_ROW_MAX) {
        hsize_t *c = malloc((size_t)(count * row * s->ndim + 1) * sizeof *c);
        CAIRN_CHECK_ALLOC(c);
        for (int64_t r = 0; r < count; r++)
            for (int64_t j = 0; j < row; j++) { /* element j of row idx[r], row-major */
                hsize_t *pt = c + (size_t)((r * row + j) * s->ndim);
                int64_t rest = j;
                pt[0] = (hsize_t)idx[r];
                for (int i = s->ndim - 1; i >= 1; i--) {
                    pt[i] = (hsize_t)(rest % s->d[i]);
                    rest /= s->d[i];
                }
            }
        if (H5Sselect_elements(fspace, H5S_SELECT_SET, (size_t)(count * row), c) < 0)
            rc = cairn_err_h5(__FILE__, __LINE__, "H5Sselect_elements");
        free(c);
        return rc;
    }
    hsize_t off[CAIRN_MAX_DIMS] = {0}, cnt[CAIRN_MAX_DIMS];
    for (int i = 0; i < s->ndim; i++) cnt[i] = (hsize_t)s->d[i];
    cnt[0] = 1;
    CAIRN_CHECK_H5(H5Sselect_none(fspace));
    for (int64_t r = 0; r < count; r++) {
        off[0] = (hsize_t)idx[r];
        CAIRN_CHECK_H5(H5Sselect_hyperslab(fspace, H5S_SELECT_OR, off, NULL, cnt, NULL));
    }
cleanup:
    return rc;
}

/* Select rows [start, start+count) of e, or the listed rows (ascending),
 * in the file. */
static int read_sel(struct entry *e, const int64_t *idx, int64_t start, int64_t count,
                    enum dtype dtype, struct tensor *out)
{
    int rc = 0;
    hid_t fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
    struct shape s = e->shape;
    s.d[0] = count;
    CAIRN_CHECK(tensor_resize(out, dtype, &s));
    if (count == 0) goto cleanup;
    hsize_t off[CAIRN_MAX_DIMS] = {0}, cnt[CAIRN_MAX_DIMS], mdims[CAIRN_MAX_DIMS];
    for (int i = 0; i < s.ndim; i++) cnt[i] = mdims[i] = (hsize_t)s.d[i];
    fspace = H5Dget_space(e->d);
    CAIRN_CHECK_H5(fspace);
    if (idx) {
        CAIRN_CHECK(select_rows(fspace, &s, idx, count));
    } else {
        off[0] = (hsize_t)start;
        CAIRN_CHECK_H5(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, off, NULL, cnt, NULL));
    }
    mspace = H5Screate_simple(s.ndim, mdims, NULL);
    CAIRN_CHECK_H5(mspace);
    CAIRN_CHECK_H5(H5Dread(e->d, h5_native(dtype), mspace, fspace, H5P_DEFAULT, out->data));
cleanup:
    if (fspace >= 0) H5Sclose(fspace);
    if (mspace >= 0) H5Sclose(mspace);
    return rc;
}

int reader_rows(struct reader_cache *c, const char *file, const char *dataset, int64_t start,
                int64_t count, enum dtype dtype, struct tensor *out)
{
    struct entry *e = NULL;
    h5_lock();
    int rc = open_entry(c, file, dataset, &e);
    if (rc == 0 && (start < 0 || count < 0 || start + count > e->shape.d[0]))
        rc = cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                           "rows %lld..%lld are outside dataset '%s' (%lld rows)",
                           (long long)start, (long long)(start + count), dataset,
                           (long long)e->shape.d[0]);
    if (rc == 0) rc = read_sel(e, NULL, start, count, dtype, out);
    if (rc && e && rc != CAIRN_ERUNTIME) /* e.g. no memory for the rows: say which */
        cairn_err_wrap(rc, "dataset '%s' in '%s', rows %lld..%lld: ", dataset, file, (long long)start,
                       (long long)(start + count));
    h5_unlock();
    return rc;
}

int reader_u64(struct reader_cache *c, const char *file, const char *dataset, int64_t row, int64_t col,
               uint64_t *out)
{
    int rc = 0;
    struct entry *e = NULL;
    hid_t fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
    hsize_t at[CAIRN_MAX_DIMS] = {0}, one = 1;
    h5_lock();
    CAIRN_CHECK(open_entry(c, file, dataset, &e));
    if (e->shape.ndim > 2 || row < 0 || row >= e->shape.d[0] || col < 0 ||
        col >= (e->shape.ndim == 2 ? e->shape.d[1] : 1))
        CAIRN_FAIL(CAIRN_ERUNTIME, "element (%lld, %lld) is outside dataset '%s'", (long long)row,
                   (long long)col, dataset);
    at[0] = (hsize_t)row;
    at[1] = (hsize_t)col;
    fspace = H5Dget_space(e->d);
    CAIRN_CHECK_H5(fspace);
    CAIRN_CHECK_H5(H5Sselect_elements(fspace, H5S_SELECT_SET, 1, at));
    mspace = H5Screate_simple(1, &one, NULL);
    CAIRN_CHECK_H5(mspace);
    CAIRN_CHECK_H5(H5Dread(e->d, H5T_NATIVE_UINT64, mspace, fspace, H5P_DEFAULT, out));
cleanup:
    if (fspace >= 0) H5Sclose(fspace);
    if (mspace >= 0) H5Sclose(mspace);
    h5_unlock();
    return rc;
}

/* HDF5 selections come back in file order: read the distinct rows sorted,
 * then put each where the batch wants it.  Rows that are one ascending
 * run (an unshuffled batch) are read in place as one block. */
static int gather_sorted(struct entry *e, const int64_t *idx, int64_t count, enum dtype dtype,
                         struct tensor *out)
{
    int rc = 0;
    bool run = true;
    for (int64_t i = 1; run && i < count; i++) run = idx[i] == idx[i - 1] + 1;
    if (run) return read_sel(e, NULL, count ? idx[0] : 0, count, dtype, out);
    struct sort_kv *w = malloc((size_t)(count ? count : 1) * sizeof *w); /* (file row, batch row) */
    int64_t *sorted = malloc((size_t)(count ? count : 1) * sizeof *sorted), uniq = 0;
    struct tensor tmp = {0};
    CAIRN_CHECK_ALLOC(w && sorted ? w : NULL);
    for (int64_t i = 0; i < count; i++) w[i] = (struct sort_kv){idx[i], i};
    CAIRN_CHECK(sort_kv(w, count));
    for (int64_t i = 0; i < count; i++)
        if (uniq == 0 || sorted[uniq - 1] != w[i].key) sorted[uniq++] = w[i].key;
    CAIRN_CHECK(read_sel(e, sorted, 0, uniq, dtype, &tmp));
    struct shape s = e->shape;
    s.d[0] = count;
    CAIRN_CHECK(tensor_resize(out, dtype, &s));
    size_t row = count ? tensor_bytes(out) / (size_t)count : 0;
    for (int64_t i = 0, u = 0; i < count; i++) {
        while (sorted[u] != w[i].key) u++;
        memcpy((char *)out->data + (size_t)w[i].val * row, (char *)tmp.data + (size_t)u * row, row);
    }
cleanup:
    free(w);
    free(sorted);
    tensor_free(&tmp);
    return rc;
}

int reader_gather(struct reader_cache *c, const char *file, const char *dataset,
                  const int64_t *idx, int64_t count, enum dtype dtype, struct tensor *out)
{
    struct entry *e = NULL;
    h5_lock();
    int rc = open_entry(c, file, dataset, &e);
    for (int64_t i = 0; rc == 0 && i < count; i++)
        if (idx[i] < 0 || idx[i] >= e->shape.d[0])
            rc = cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                               "row %lld is outside dataset '%s' (%lld rows)",
                               (long long)idx[i], dataset, (long long)e->shape.d[0]);
    if (rc == 0) rc = gather_sorted(e, idx, count, dtype, out);
    if (rc && e && rc != CAIRN_ERUNTIME)
        cairn_err_wrap(rc, "dataset '%s' in '%s', %lld rows: ", dataset, file, (long long)count);
    h5_unlock();
    return rc;
}
