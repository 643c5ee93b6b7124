/* Example and test data sets; see include/cairn/datagen.h. */
#include "cairn/datagen.h"

#include "data_priv.h"

#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/h5util.h"
#include "cairn/iodefer.h"
#include "cairn/partition.h"
#include "cairn/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

int datagen_range(const char *file, const char *dataset, int64_t start, int64_t count)
{
    int rc = 0;
    hid_t f = H5I_INVALID_HID;
    struct fsx_out out = {.dir = -1, .fd = -1};
    int64_t *v = malloc((size_t)(count ? count : 1) * sizeof *v);
    CAIRN_CHECK_ALLOC(v);
    for (int64_t i = 0; i < count; i++) v[i] = start + i;
    h5_quiet();
    struct tensor t = {.dtype = DT_I64, .shape = {1, {count}}, .data = v};
    CAIRN_CHECK(fsx_out_begin(&out, file, 0));
    CAIRN_CHECK(h5_create_file(out.tmp, H5P_DEFAULT, &f));
    CAIRN_CHECK(h5_put_tensor(f, dataset, &t));
cleanup:
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Fclose");
    rc = rc ? rc : fsx_out_commit(&out);
    fsx_out_abort(&out);
    free(v);
    return rc;
}

/* Collective: one dataset, each rank writing rows [lo, lo + n). */
static int write_rows(hid_t f, const char *name, enum dtype t, const struct shape *s, int64_t lo,
                      int64_t n, const void *data)
{
    int rc = 0;
    hid_t d = h5_create_dataset(f, name, t, s, H5P_DEFAULT), x = H5Pcreate(H5P_DATASET_XFER);
    CAIRN_CHECK_H5(d);
    CAIRN_CHECK_H5(x);
    CAIRN_CHECK_H5(H5Pset_dxpl_mpio(x, H5FD_MPIO_COLLECTIVE));
    CAIRN_CHECK(h5_write_rows(d, t, lo, n, data, x));
cleanup:
    if (x >= 0) H5Pclose(x);
    if (d >= 0 && H5Dclose(d) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Dclose");
    return rc;
}

int data_write(MPI_Comm comm, const char *file, int rc, const struct rows_out *d, int nd,
               const struct attr_out *a, int na)
{
    int me = 0;
    hid_t fapl = H5I_INVALID_HID, f = H5I_INVALID_HID;
    struct fsx_out out = {.dir = -1, .fd = -1};
    bool deferring = false;
    MPI_Comm_rank(comm, &me);
    h5_quiet();
    if (rc == 0 && ((fapl = H5Pcreate(H5P_FILE_ACCESS)) < 0 || H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL) < 0))
        rc = cairn_err_h5(__FILE__, __LINE__, "file access for MPI-IO");
    CAIRN_CHECK(coll_agree(comm, rc)); /* every rank, before the collective opening */
    CAIRN_CHECK(coll_out_begin(comm, file, 0, &out)); /* FILE whole or as it was */
    h5_mpio_before_open(comm, out.tmp);
    iodefer_begin(out.tmp); /* a write failing on some ranks only must not split them */
    deferring = true;
    CAIRN_CHECK(h5_create_file(out.tmp, fapl, &f));
    for (int i = 0; i < nd; i++)
        CAIRN_CHECK(write_rows(f, d[i].name, d[i].type, &d[i].s, d[i].lo, d[i].n, d[i].data));
    for (int i = 0; i < na; i++) CAIRN_CHECK(h5_attr_put_str(f, a[i].name, a[i].value));
cleanup:
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Fclose");
    if (deferring) {
        int e = iodefer_end();
        if (e) rc = e;
    }
    rc = coll_agree(comm, rc);
    if (rc == 0) rc = coll_agree(comm, me == 0 ? fsx_out_commit(&out) : 0);
    fsx_out_abort(&out); /* written in part: never a damaged data file */
    if (fapl >= 0) H5Pclose(fapl);
    return rc;
}

int data_sizes(const char *const *files, int n, int64_t *size)
{
    for (int i = 0; i < n; i++) {
        struct stat st;
        int fd = open(files[i], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) return cairn_err_errno(CAIRN_EINPUT, __FILE__, __LINE__, "cannot open %s", files[i]);
        int bad = fstat(fd, &st) != 0 || !S_ISREG(st.st_mode);
        close(fd);
        if (bad) return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "cannot read %s: not a regular file", files[i]);
        size[i] = (int64_t)st.st_size;
    }
    return 0;
}

/* Bytes [from, to) of the files' concatenation into buf. */
static int text_read(const char *const *files, int n, const int64_t *size, int64_t from, int64_t to,
                     unsigned char *buf)
{
    int rc = 0, fd = -1;
    for (int64_t i = 0, at = 0; i < n && at < to; at += size[i++]) {
        int64_t lo = from > at ? from : at, hi = to < at + size[i] ? to : at + size[i];
        if (lo >= hi) continue;
        fd = open(files[i], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        CAIRN_CHECK_ERRNO(fd >= 0, CAIRN_EINPUT, "cannot open %s", files[i]);
        CAIRN_CHECK(fsx_pread(fd, buf + (lo - from), (size_t)(hi - lo), lo - at, files[i]));
        close(fd);
        fd = -1;
    }
cleanup:
    if (fd >= 0) close(fd);
    return rc;
}

int datagen_text(MPI_Comm comm, const char *out, const char *const *files, int n_files, int64_t ctx,
                 int64_t *windows)
{
    int rc = 0, me = 0, size = 1;
    int64_t *sizes = malloc((size_t)n_files * sizeof *sizes), len = 0, N = 0, lo = 0, hi = 0;
    unsigned char *bytes = NULL;
    int32_t *x = NULL, *y = NULL;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    /* rank 0 measures, so that every rank cuts the same windows (a file
     * still growing, or a shared file system's stale sizes elsewhere) */
    rc = sizes ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    if (rc == 0 && me == 0) rc = data_sizes(files, n_files, sizes);
    CAIRN_CHECK(coll_agree(comm, rc));
    CAIRN_CHECK_MPI(MPI_Bcast(sizes, n_files, MPI_INT64_T, 0, comm));
    for (int i = 0; i < n_files; i++) len += sizes[i];
    N = len > 0 ? (len - 1) / ctx : 0; /* a window needs its next tokens too */
    if (rc == 0 && N < 1)
        rc = cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%lld bytes of text make no window of %lld tokens and "
                           "their next", (long long)len, (long long)ctx);
    if (rc == 0 && N > INT64_MAX / ctx / (int64_t)sizeof *x)
        rc = cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%lld bytes of text are too many", (long long)len);
    /* this rank's windows [lo, hi): bytes lo ctx .. hi ctx, the last one's next token too */
    block_range(N, size, me, &lo, &hi);
    if (rc == 0) {
        int64_t n = hi - lo;
        bytes = malloc((size_t)(n * ctx + 1));
        x = malloc((size_t)(n * ctx + 1) * sizeof *x);
        y = malloc((size_t)(n * ctx + 1) * sizeof *y);
        rc = bytes && x && y ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
        if (rc == 0 && n > 0) rc = text_read(files, n_files, sizes, lo * ctx, hi * ctx + 1, bytes);
        for (int64_t i = 0; rc == 0 && i < n * ctx; i++) {
            x[i] = bytes[i];
            y[i] = bytes[i + 1];
        }
    }
    const struct rows_out d[2] = {{"features", DT_I32, {2, {N, ctx}}, lo, hi - lo, x},
                                  {"labels", DT_I32, {2, {N, ctx}}, lo, hi - lo, y}};
    rc = data_write(comm, out, rc, d, 2, NULL, 0);
    if (rc == 0) *windows = N;
cleanup:
    free(sizes);
    free(bytes);
    free(x);
    free(y);
    return rc;
}

struct teacher {
    int64_t d, h, k;
    double *w1, *w2; /* [d, h], [h, k] */
};

static int teacher_make(struct teacher *t, int64_t d, int64_t h, int64_t k, uint64_t seed)
{
    *t = (struct teacher){.d = d, .h = h, .k = k};
    t->w1 = malloc((size_t)(d * h) * sizeof *t->w1);
    t->w2 = malloc((size_t)(h * k) * sizeof *t->w2);
    if (!t->w1 || !t->w2) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (int64_t i = 0; i < d * h; i++)
        t->w1[i] = rng_normal(seed, RNG_STREAM_SYNTH_TEACHER, (uint64_t)i) / sqrt((double)d);
    for (int64_t i = 0; i < h * k; i++)
        t->w2[i] = 3 * rng_normal(seed, RNG_STREAM_SYNTH_TEACHER + 1, (uint64_t)i) / sqrt((double)h);
    return 0;
}

static int32_t teacher_label(const struct teacher *t, const float *x, double *hid)
{
    for (int64_t j = 0; j < t->h; j++) {
        double s = 0;
        for (int64_t i = 0; i < t->d; i++) s += x[i] * t->w1[i * t->h + j];
        hid[j] = tanh(s);
    }
    int32_t best = 0;
    double bv = -INFINITY;
    for (int64_t c = 0; c < t->k; c++) {
        double s = 0;
        for (int64_t j = 0; j < t->h; j++) s += hid[j] * t->w2[j * t->k + c];
        if (s > bv) {
            bv = s;
            best = (int32_t)c;
        }
    }
    return best;
}

/* Rows lo .. lo + n - 1: features x [n, d], each table's ids [n, k]
 * (ids[t]), and the label the teacher gives the features followed by the
 * mean latent vector of each table's bag. */
static int synth_rows(const struct teacher *t, const struct datagen_spec *g, int64_t lo, int64_t n,
                      float *x, int64_t **ids, int32_t *y)
{
    uint64_t seed = (uint64_t)g->seed;
    int64_t d = g->features;
    double *hid = malloc((size_t)(t->h + 1) * sizeof *hid);
    float *in = malloc((size_t)t->d * sizeof *in);
    struct rng_zipf z[DATAGEN_MAX_TABLES];
    if (!hid || !in) {
        free(hid);
        free(in);
        return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    }
    for (int c = 0; c < g->n_tables; c++) rng_zipf_init(&z[c], g->tables[c].rows, g->zipf);
    for (int64_t r = 0; r < n; r++) {
        for (int64_t j = 0; j < d; j++) {
            x[r * d + j] = (float)rng_normal(seed, RNG_STREAM_SYNTH_X(lo + r), (uint64_t)j);
            in[j] = x[r * d + j];
        }
        for (int c = 0; c < g->n_tables; c++) {
            int64_t k = g->tables[c].k, *bag = ids[c] + r * k, row = lo + r;
            /* lengths and ids on streams of their own (a Zipf draw spans 64
             * counters), the ids keyed by (row, place in bag) whatever k */
            int64_t len = 1 + (int64_t)(rng_u64(seed, RNG_STREAM_SYNTH_BAGLEN(c), (uint64_t)row) % (uint64_t)k);
            float *lat = in + d + c * DATAGEN_LATENT;
            for (int j = 0; j < DATAGEN_LATENT; j++) lat[j] = 0;
            for (int64_t i = 0; i < k; i++) {
                uint64_t at = (uint64_t)row * DATAGEN_MAX_BAG + (uint64_t)i;
                bag[i] = i < len ? rng_zipf(&z[c], seed, RNG_STREAM_SYNTH_IDS(c), at) - 1 : -1;
                for (int j = 0; i < len && j < DATAGEN_LATENT; j++)
                    lat[j] += (float)(rng_normal(seed, RNG_STREAM_SYNTH_LATENT(c), (uint64_t)(bag[i] * DATAGEN_LATENT + j)) / (double)len);
            }
        }
        y[r] = teacher_label(t, in, hid);
    }
    free(hid);
    free(in);
    return 0;
}

int datagen_synth(MPI_Comm comm, const char *file, const struct datagen_spec *g)
{
    int rc = 0, me = 0, size = 1;
    struct teacher t = {0};
    float *x = NULL;
    int32_t *y = NULL;
    int64_t *ids[DATAGEN_MAX_TABLES] = {0}, samples = g->samples, features = g->features;
    int64_t lo, hi;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    block_range(samples, size, me, &lo, &hi);
    rc = teacher_make(&t, features + DATAGEN_LATENT * g->n_tables, g->hidden, g->classes, (uint64_t)g->seed);
    bool got = rc == 0;
    if (rc == 0) {
        x = malloc((size_t)((hi - lo) * features + 1) * sizeof *x);
        y = malloc((size_t)(hi - lo + 1) * sizeof *y);
        got = x && y;
        for (int c = 0; c < g->n_tables; c++) {
            ids[c] = malloc((size_t)((hi - lo) * g->tables[c].k + 1) * sizeof **ids);
            got = got && ids[c];
        }
        rc = got ? synth_rows(&t, g, lo, hi - lo, x, ids, y)
                 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    }
    struct rows_out d[2 + DATAGEN_MAX_TABLES] = {{"features", DT_F32, {2, {samples, features}}, lo, hi - lo, x},
                                                 {"labels", DT_I32, {1, {samples}}, lo, hi - lo, y}};
    for (int c = 0; c < g->n_tables; c++)
        d[2 + c] = (struct rows_out){g->tables[c].name, DT_I64, {2, {samples, g->tables[c].k}}, lo, hi - lo, ids[c]};
    rc = data_write(comm, file, rc, d, 2 + g->n_tables, NULL, 0);
    free(x);
    free(y);
    for (int c = 0; c < g->n_tables; c++) free(ids[c]);
    free(t.w1);
    free(t.w2);
    return rc;
}
