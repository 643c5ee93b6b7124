/* Using a trained model; see include/cairn/infer.h. */
#include "cairn/infer.h"

#include "infer_priv.h"

#include "cairn/clock.h"
#include "cairn/coll.h"
#include "cairn/embed_bag.h"
#include "cairn/embed_ids.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/h5util.h"
#include "cairn/iodefer.h"
#include "cairn/nn.h"
#include "cairn/partition.h"
#include "cairn/reader.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- reading model.h5 ------------------------------------------------------- */

/* model.h5 is untrusted input (anyone may hand over a file), validated as
 * checkpoints are, and python/cairn_model.py applies the same rules with
 * the same messages (cairn-job(5), MODEL FILE):
 * - every object opened is reached through hard links only, and every
 *   dataset keeps its data in the file;
 * - every attribute holds one value of its class, in range; names are
 *   among the known ones (never a default for an unknown one);
 * - attribute 'layers' counts exactly the groups /layers/0 .. L-1, and the
 *   tables' 'column' attributes tile layer 0's input after the features;
 * - datasets are stored exactly as the model's dtype (IEEE floats; only
 *   the byte order may differ from this machine's), of exactly their
 *   shapes, and keep all their bytes in the file, no more than it holds
 *   (checked before anything is allocated);
 * - weights and biases are finite (a table's rows when a batch reads them).
 * Messages name the object: "/layers/0/W: non-finite value at [3, 7]". */

/* An optional string attribute into buf (dflt if it is missing). */
int infer_attr_str(hid_t obj, const char *name, const char *dflt, char *buf, size_t size)
{
    char *s = NULL;
    if (dflt && H5Aexists(obj, name) == 0) {
        snprintf(buf, size, "%s", dflt);
        return 0;
    }
    int rc = h5_attr_get_str(obj, name, size - 1, CAIRN_EINPUT, &s);
    if (rc == 0) snprintf(buf, size, "%s", s);
    free(s);
    return rc;
}

static int name_index(const char *const *names, const char *s)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}

/* Is path (absolute) a hard-linked object of this type?  Soft and external
 * links are refused before they are followed: they may lead anywhere. */
static int check_object(hid_t f, const char *path, H5O_type_t type)
{
    int rc = 0, local = h5_path_local(f, path);
    H5O_info_t info;
    const char *what = type == H5O_TYPE_GROUP ? "group" : "dataset";
    if (local < 0) CAIRN_FAIL(CAIRN_EINPUT, "%s: no such %s", path, what);
    if (local == 0) CAIRN_FAIL(CAIRN_EINPUT, "%s: it is behind a soft or external link", path);
    if (H5Oget_info_by_name(f, path, &info, H5P_DEFAULT) < 0 || info.type != type)
        CAIRN_FAIL(CAIRN_EINPUT, "%s: it is not a %s", path, what);
cleanup:
    return rc;
}

int infer_open_group(hid_t f, const char *path, hid_t *g)
{
    int rc = 0;
    CAIRN_CHECK(check_object(f, path, H5O_TYPE_GROUP));
    CAIRN_CHECK_H5(*g = H5Gopen2(f, path, H5P_DEFAULT));
cleanup:
    return rc;
}

/* Dataset path: of the model's dtype exactly (no conversion but byte
 * order), ndim dimensions, its data in the file; *s its shape. */
int infer_check_dataset(const struct infer_model *m, hid_t f, const char *path, int ndim, struct shape *s)
{
    int rc = 0;
    hid_t d = H5I_INVALID_HID, sp = H5I_INVALID_HID;
    hsize_t dims[H5S_MAX_RANK];
    CAIRN_CHECK(check_object(f, path, H5O_TYPE_DATASET));
    CAIRN_CHECK_H5(d = H5Dopen2(f, path, H5P_DEFAULT));
    if (!h5_dset_is(d, m->dt)) CAIRN_FAIL(CAIRN_EINPUT, "%s: its element type is not %s", path, dtype_name(m->dt));
    CAIRN_CHECK_H5(sp = H5Dget_space(d));
    int nd = H5Sget_simple_extent_ndims(sp);
    if (nd != ndim) CAIRN_FAIL(CAIRN_EINPUT, "%s: it has %d dimensions, not %d", path, nd, ndim);
    CAIRN_CHECK_H5(H5Sget_simple_extent_dims(sp, dims, NULL));
    s->ndim = nd;
    for (int i = 0; i < nd; i++) s->d[i] = dims[i] > (hsize_t)INT64_MAX ? INT64_MAX : (int64_t)dims[i];
    if (!h5_data_local(d)) CAIRN_FAIL(CAIRN_EINPUT, "%s: it keeps its data outside the file", path);
cleanup:
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    return rc;
}

/* Dataset path of rows x cols elements must keep all their bytes in the
 * file, and the file must hold them: a few bytes of header must not make
 * every rank allocate and fill gigabytes, or read a table of zeros (cairn
 * writes models contiguous and unfiltered).  In doubles: rows x cols may
 * not fit in 64 bits. */
static int stored(hid_t f, const char *path, int64_t rows, int64_t cols)
{
    int rc = 0;
    hid_t d = H5I_INVALID_HID, t = H5I_INVALID_HID;
    hsize_t file = 0;
    CAIRN_CHECK_H5(d = H5Dopen2(f, path, H5P_DEFAULT));
    CAIRN_CHECK_H5(t = H5Dget_type(d));
    CAIRN_CHECK_H5(H5Fget_filesize(f, &file));
    double want = (double)rows * (double)cols * (double)H5Tget_size(t), have = (double)H5Dget_storage_size(d);
    if (have > (double)file) have = (double)file; /* what a crafted header claims beyond the end */
    if (have < want)
        CAIRN_FAIL(CAIRN_EINPUT, "%s: it keeps %.0f of its %.0f bytes in the file: damaged, or not a model cairn wrote",
                   path, have, want);
cleanup:
    if (t >= 0) H5Tclose(t);
    if (d >= 0) H5Dclose(d);
    return rc;
}

/* t, read from dataset path, must hold only finite numbers: a NaN weight
 * would score every row NaN, and exit 0. */
static int check_finite(const char *path, const struct tensor *t)
{
    int64_t i = tensor_first_nonfinite(t), cols = t->shape.ndim == 2 ? t->shape.d[1] : 1;
    if (i < 0) return 0;
    if (t->shape.ndim == 2)
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s: non-finite value at [%lld, %lld]", path,
                             (long long)(i / cols), (long long)(i % cols));
    return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s: non-finite value at [%lld]", path, (long long)i);
}

/* Dataset path, [rows, ...], checked, read whole and checked finite. */
int infer_read_param(struct infer_model *m, hid_t f, const char *path, int64_t rows, int64_t cols,
                      struct tensor *t)
{
    int rc = 0;
    CAIRN_CHECK(stored(f, path, rows, cols));
    CAIRN_CHECK(reader_rows(m->rd, m->path, path, 0, rows, m->dt, t));
    CAIRN_CHECK(check_finite(path, t));
cleanup:
    return rc;
}

static int read_layer(struct infer_model *m, hid_t f, int l, int64_t in)
{
    int rc = 0;
    char g[32], ds[48], act[MAX_NAME];
    hid_t grp = H5I_INVALID_HID;
    struct shape ws, bs;
    snprintf(g, sizeof g, "/layers/%d", l);
    CAIRN_CHECK(infer_open_group(f, g, &grp));
    if ((rc = infer_attr_str(grp, "activation", NULL, act, sizeof act)) != 0) {
        cairn_err_wrap(rc, "%s: ", g);
        goto cleanup;
    }
    int a = name_index(act_names, act);
    if (a < 0) CAIRN_FAIL(CAIRN_EINPUT, "%s: unknown activation '%s'", g, act);
    m->act[l] = (enum act)a;
    snprintf(ds, sizeof ds, "%s/W", g);
    CAIRN_CHECK(infer_check_dataset(m, f, ds, 2, &ws));
    if (ws.d[0] != in || ws.d[1] < 1 || ws.d[1] > MAX_WIDTH)
        CAIRN_FAIL(CAIRN_EINPUT, "%s: it is [%lld, %lld]; it must be [%lld, 1 .. %d]", ds, (long long)ws.d[0],
                   (long long)ws.d[1], (long long)in, MAX_WIDTH);
    CAIRN_CHECK(infer_read_param(m, f, ds, in, ws.d[1], &m->W[l]));
    snprintf(ds, sizeof ds, "%s/b", g);
    CAIRN_CHECK(infer_check_dataset(m, f, ds, 1, &bs));
    if (bs.d[0] != ws.d[1])
        CAIRN_FAIL(CAIRN_EINPUT, "%s: it has %lld values; the layer has %lld units", ds, (long long)bs.d[0],
                   (long long)ws.d[1]);
    CAIRN_CHECK(infer_read_param(m, f, ds, bs.d[0], 1, &m->b[l]));
cleanup:
    if (grp >= 0) H5Gclose(grp);
    return rc;
}

/* Attribute 'layers' counts exactly the groups under /layers: a file that
 * says 1 while /layers/1 exists would score hidden units as classes.  With
 * the count equal, read_layer finding /layers/0 .. L-1 leaves no other. */
static int check_layer_count(hid_t f, int64_t L)
{
    int rc = 0;
    hid_t g = H5I_INVALID_HID;
    H5G_info_t info;
    CAIRN_CHECK(infer_open_group(f, "/layers", &g));
    CAIRN_CHECK_H5(H5Gget_info(g, &info));
    if (info.nlinks != (hsize_t)L)
        CAIRN_FAIL(CAIRN_EINPUT, "/layers: it holds %llu objects, but attribute 'layers' is %lld",
                   (unsigned long long)info.nlinks, (long long)L);
cleanup:
    if (g >= 0) H5Gclose(g);
    return rc;
}

static int table_attrs(hid_t g, struct infer_table *x)
{
    int rc = 0;
    char combine[MAX_NAME];
    CAIRN_CHECK(infer_attr_str(g, "ids", NULL, x->ids, sizeof x->ids));
    CAIRN_CHECK(infer_attr_str(g, "combine", NULL, combine, sizeof combine));
    if (strcmp(combine, "sum") != 0 && strcmp(combine, "mean") != 0)
        CAIRN_FAIL(CAIRN_EINPUT, "combine is '%s', not sum or mean", combine);
    x->mean = combine[0] == 'm';
    x->column = -1; /* from the order, for a file of one table without it */
    if (H5Aexists(g, "column") != 0) CAIRN_CHECK(h5_attr_get_i64(g, "column", 0, MAX_WIDTH, CAIRN_EINPUT, &x->column));
cleanup:
    return rc;
}

static int read_table(struct infer_model *m, hid_t f, const char *name, struct infer_table *x)
{
    int rc = 0;
    char g[MAX_NAME + 16];
    hid_t grp = H5I_INVALID_HID;
    struct shape s;
    snprintf(x->name, sizeof x->name, "%s", name);
    snprintf(g, sizeof g, "/embeddings/%s", name);
    snprintf(x->path, sizeof x->path, "%s/table", g);
    CAIRN_CHECK(infer_open_group(f, g, &grp));
    if ((rc = table_attrs(grp, x)) != 0) {
        cairn_err_wrap(rc, "%s: ", g);
        goto cleanup;
    }
    CAIRN_CHECK(infer_check_dataset(m, f, x->path, 2, &s));
    if (s.d[0] < 1 || s.d[1] < 1 || s.d[1] > MAX_WIDTH)
        CAIRN_FAIL(CAIRN_EINPUT, "%s: it is [%lld, %lld]; it must be [1 or more, 1 .. %d]", x->path,
                   (long long)s.d[0], (long long)s.d[1], MAX_WIDTH);
    /* rows x dim bounded as W's elements are, though only the rows that
     * batches touch are read */
    CAIRN_CHECK(stored(f, x->path, s.d[0], s.d[1]));
    x->rows = s.d[0];
    x->dim = s.d[1];
cleanup:
    if (grp >= 0) H5Gclose(grp);
    return rc;
}

static int by_column(const void *a, const void *b)
{
    const struct infer_table *x = a, *y = b;
    return (x->column > y->column) - (x->column < y->column);
}

/* The tables' columns, in the order their vectors take in the first
 * layer's input, which they must tile after the dense features. */
static int order_tables(struct infer_model *m)
{
    int rc = 0;
    if (m->n_tables == 1 && m->tab[0].column < 0) m->tab[0].column = m->inputs;
    for (int e = 0; e < m->n_tables; e++)
        if (m->tab[e].column < 0)
            CAIRN_FAIL(CAIRN_EINPUT, "table '%s' has no attribute 'column': the file does not say in which "
                                     "order its %d tables feed the first layer (an older cairn wrote it)",
                       m->tab[e].name, m->n_tables);
    qsort(m->tab, (size_t)m->n_tables, sizeof *m->tab, by_column);
    m->width0 = m->inputs;
    for (int e = 0; e < m->n_tables; e++) {
        if (m->tab[e].column != m->width0)
            CAIRN_FAIL(CAIRN_EINPUT, "table '%s' starts at input column %lld, not %lld: the tables' "
                                     "columns must follow the dense features without gaps",
                       m->tab[e].name, (long long)m->tab[e].column, (long long)m->width0);
        m->width0 += m->tab[e].dim;
        if (m->width0 > MAX_WIDTH) CAIRN_FAIL(CAIRN_EINPUT, "the tables are too wide");
    }
cleanup:
    return rc;
}

/* The tables under /embeddings (in name order, as HDF5 lists them). */
static int read_tables(struct infer_model *m, hid_t f)
{
    int rc = 0;
    hid_t emb = H5I_INVALID_HID;
    H5G_info_t info;
    if (H5Lexists(f, "embeddings", H5P_DEFAULT) <= 0) return 0;
    CAIRN_CHECK(infer_open_group(f, "/embeddings", &emb));
    CAIRN_CHECK_H5(H5Gget_info(emb, &info));
    if (info.nlinks > MAX_TABLES) CAIRN_FAIL(CAIRN_EINPUT, "/embeddings: more than %d tables", MAX_TABLES);
    CAIRN_CHECK_ALLOC(m->tab = calloc(info.nlinks + 1, sizeof *m->tab));
    for (hsize_t i = 0; i < info.nlinks; i++) {
        char name[MAX_NAME];
        ssize_t n = H5Lget_name_by_idx(emb, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT);
        CAIRN_CHECK_H5(n);
        if (n >= (ssize_t)sizeof name) CAIRN_FAIL(CAIRN_EINPUT, "/embeddings: a table's name is too long");
        char shown[4 * MAX_NAME];
        cairn_escape(shown, sizeof shown, name); /* a name is printed: it must print as itself */
        if (strcmp(shown, name) != 0)
            CAIRN_FAIL(CAIRN_EINPUT, "/embeddings: the table name '%s' is not printable UTF-8", name);
        CAIRN_CHECK(read_table(m, f, name, &m->tab[m->n_tables++]));
    }
    CAIRN_CHECK(order_tables(m));
cleanup:
    if (emb >= 0) H5Gclose(emb);
    return rc;
}

static int read_dtype(struct infer_model *m, hid_t f)
{
    int rc = 0;
    char s[MAX_NAME];
    CAIRN_CHECK(infer_attr_str(f, "dtype", NULL, s, sizeof s));
    if ((m->dt = dtype_parse(s)) != DT_F32 && m->dt != DT_F64) CAIRN_FAIL(CAIRN_EINPUT, "dtype '%s' is not f32 or f64", s);
cleanup:
    return rc;
}

/* The datasets it trained on and its evaluation batch (the defaults of eval). */
static int read_data_names(struct infer_model *m, hid_t f)
{
    int rc = 0;
    CAIRN_CHECK(infer_attr_str(f, "features", "features", m->features, sizeof m->features));
    CAIRN_CHECK(infer_attr_str(f, "labels", "labels", m->labels, sizeof m->labels));
    m->eval_batch = 1024;
    if (H5Aexists(f, "eval_batch") != 0)
        CAIRN_CHECK(h5_attr_get_i64(f, "eval_batch", 1, 1 << 24, CAIRN_EINPUT, &m->eval_batch));
cleanup:
    return rc;
}

/* The root's attributes, each of its class and in range; *L the layers. */
static int read_root(struct infer_model *m, hid_t f, int64_t *L)
{
    int rc = 0;
    char s[MAX_NAME];
    if (H5Aexists(f, "cairn_version") <= 0)
        CAIRN_FAIL(CAIRN_EINPUT, "no attribute 'cairn_version': not a model file cairn wrote");
    CAIRN_CHECK(infer_attr_str(f, "loss", NULL, s, sizeof s));
    int loss = name_index(loss_names, s);
    if (loss < 0) CAIRN_FAIL(CAIRN_EINPUT, "unknown loss '%s'", s);
    m->loss = (enum loss)loss;
    CAIRN_CHECK(read_dtype(m, f));
    CAIRN_CHECK(h5_attr_get_i64(f, "inputs", 0, MAX_WIDTH, CAIRN_EINPUT, &m->inputs));
    CAIRN_CHECK(h5_attr_get_i64(f, "layers", 1, NN_MAX_LAYERS, CAIRN_EINPUT, L));
    CAIRN_CHECK(read_data_names(m, f));
cleanup:
    return rc;
}

/* A language model's root attributes that are not its shape (infer_lm.c
 * reads that). */
static int read_lm_root(struct infer_model *m, hid_t f)
{
    int rc = read_dtype(m, f);
    m->loss = LOSS_SOFTMAX_CE;
    return rc ? rc : read_data_names(m, f);
}

static int read_model(struct infer_model *m)
{
    int rc = 0;
    hid_t f = H5I_INVALID_HID;
    int64_t L;
    h5_quiet();
    if (access(m->path, R_OK) != 0) CAIRN_FAIL(CAIRN_EINPUT, "cannot read it");
    /* a FIFO or a device would block the open (a link to a model is fine) */
    if (!fsx_is_regular(m->path)) CAIRN_FAIL(CAIRN_EINPUT, "not a regular file");
    if ((f = H5Fopen(m->path, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0)
        CAIRN_FAIL(CAIRN_EINPUT, "not an HDF5 file (or a damaged one)");
    if (H5Aexists(f, "cairn_version") > 0 && H5Aexists(f, "kind") > 0) { /* not a model of layers */
        char kind[MAX_NAME];
        CAIRN_CHECK(infer_attr_str(f, "kind", NULL, kind, sizeof kind));
        if (strcmp(kind, "lm") != 0) CAIRN_FAIL(CAIRN_EINPUT, "unknown kind of model '%s'", kind);
        CAIRN_CHECK(read_lm_root(m, f));
        m->lm = true;
        CAIRN_CHECK(infer_lm_read(m, f));
        goto cleanup;
    }
    CAIRN_CHECK(read_root(m, f, &L));
    CAIRN_CHECK(check_layer_count(f, L));
    m->width0 = m->inputs; /* and the tables' columns after */
    CAIRN_CHECK(read_tables(m, f));
    if (m->width0 < 1) CAIRN_FAIL(CAIRN_EINPUT, "the model takes no inputs");
    m->W = calloc((size_t)L, sizeof *m->W);
    m->b = calloc((size_t)L, sizeof *m->b);
    m->act = calloc((size_t)L, sizeof *m->act);
    CAIRN_CHECK_ALLOC(m->W && m->b && m->act ? m->W : NULL);
    m->L = (int)L;
    for (int l = 0; l < m->L; l++) CAIRN_CHECK(read_layer(m, f, l, l ? m->W[l - 1].shape.d[1] : m->width0));
    if (m->loss == LOSS_SOFTMAX_CE && infer_outputs(m) < 2)
        CAIRN_FAIL(CAIRN_EINPUT, "a softmax model needs at least 2 outputs");
cleanup:
    if (f >= 0) H5Fclose(f);
    return rc;
}

int infer_open(const char *path, struct infer_model **out)
{
    int rc = 0;
    struct infer_model *m = calloc(1, sizeof *m);
    *out = NULL;
    CAIRN_CHECK_ALLOC(m);
    if (snprintf(m->path, sizeof m->path, "%s", path) >= (int)sizeof m->path)
        CAIRN_FAIL(CAIRN_EINPUT, "the path is too long");
    CAIRN_CHECK(reader_cache_create(&m->rd));
    CAIRN_CHECK(read_model(m));
    *out = m;
    m = NULL;
cleanup:
    /* whatever HDF5 stumbled on, the file is at fault: bad input */
    if (rc && rc != CAIRN_ENOMEM) rc = cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s", cairn_errmsg());
    if (rc) cairn_err_wrap(rc, "model %s: ", path);
    infer_close(&m);
    return rc;
}

void infer_close(struct infer_model **mp)
{
    if (!mp || !*mp) return;
    struct infer_model *m = *mp;
    for (int l = 0; m->W && l < m->L; l++) tensor_free(&m->W[l]);
    for (int l = 0; m->b && l < m->L; l++) tensor_free(&m->b[l]);
    free(m->W);
    free(m->b);
    free(m->act);
    free(m->tab);
    infer_lm_free(m);
    reader_cache_destroy(&m->rd);
    free(m);
    *mp = NULL;
}

const char *infer_features(const struct infer_model *m) { return m->features; }
const char *infer_labels(const struct infer_model *m) { return m->labels; }
int64_t infer_eval_batch(const struct infer_model *m) { return m->eval_batch; }
int64_t infer_outputs(const struct infer_model *m) { return m->lm ? m->spec.lm.vocab : m->b[m->L - 1].shape.d[0]; }
int64_t infer_tokens(const struct infer_model *m) { return m->lm ? m->spec.lm.ctx : 0; }
bool infer_softmax(const struct infer_model *m) { return m->loss == LOSS_SOFTMAX_CE; }

/* ---- checking the data -------------------------------------------------------- */

/* The data's rows, and that every dataset fits the model: *rows in the
 * file, *targets the columns of [N, k] targets (0: class labels). */
static int check_data(const struct infer_model *m, const struct infer_opts *o, int64_t *rows,
                      int64_t *targets)
{
    int rc = 0;
    struct shape s;
    enum dtype t;
    int64_t k = infer_outputs(m), n, kk;
    *targets = 0;
    if (m->lm) return infer_lm_check_data(m, o, rows);
    CAIRN_CHECK(reader_shape(m->rd, o->data, o->features, &s, &t));
    if (s.ndim != 2 || s.d[1] != m->inputs)
        CAIRN_FAIL(CAIRN_EINPUT, "dataset '%s' in %s must be [N, %lld] (the model's dense inputs), not %dD with %lld columns",
                   o->features, o->data, (long long)m->inputs, s.ndim, (long long)(s.ndim > 1 ? s.d[1] : 0));
    *rows = s.d[0];
    for (int e = 0; e < m->n_tables; e++) {
        CAIRN_CHECK(embed_ids_shape(m->rd, o->data, m->tab[e].ids, &n, &kk));
        if (n != *rows)
            CAIRN_FAIL(CAIRN_EINPUT, "ids dataset '%s' in %s has %lld rows but the features have %lld",
                       m->tab[e].ids, o->data, (long long)n, (long long)*rows);
    }
    if (!o->labels) return 0;
    CAIRN_CHECK(reader_shape(m->rd, o->data, o->labels, &s, &t));
    if (s.d[0] != *rows)
        CAIRN_FAIL(CAIRN_EINPUT, "dataset '%s' in %s has %lld rows but the features have %lld", o->labels,
                   o->data, (long long)s.d[0], (long long)*rows);
    if (s.ndim == 2 && s.d[1] == k && m->loss == LOSS_MSE)
        *targets = k;
    else if (s.ndim != 1 || (t != DT_I32 && t != DT_I64))
        CAIRN_FAIL(CAIRN_EINPUT, "dataset '%s' in %s must hold one integer class per row%s", o->labels, o->data,
                   m->loss == LOSS_MSE ? " or [N, outputs] targets" : "");
cleanup:
    return rc;
}

/* ---- one batch ---------------------------------------------------------------- */

struct work {
    struct tensor x, a[2], y, ids, rows, lm[3];
    int64_t *pos, *slot;
    double *probs; /* scratch for one row's softmax */
};

static void work_free(struct work *w)
{
    tensor_free(&w->x);
    tensor_free(&w->a[0]);
    tensor_free(&w->a[1]);
    tensor_free(&w->y);
    tensor_free(&w->ids);
    tensor_free(&w->rows);
    for (int i = 0; i < 3; i++) tensor_free(&w->lm[i]);
    free(w->pos);
    free(w->slot);
    free(w->probs);
}

/* Table x's combined vectors for n rows from `first` into w->x at col:
 * each distinct row read once from the model file, combined as training
 * combines them (embed_bag.h). */
static int table_input(const struct infer_model *m, const struct infer_opts *o, const struct infer_table *x,
                       int64_t first, int64_t n, struct work *w, int64_t col)
{
    int rc = 0;
    struct shape s;
    enum dtype t;
    CAIRN_CHECK(reader_shape(m->rd, o->data, x->ids, &s, &t));
    int64_t k = s.ndim == 2 ? s.d[1] : 1, n_pos = 0, a = spread_step(x->rows);
    CAIRN_CHECK(embed_ids_read(m->rd, o->data, x->ids, x->rows, first, n, k, &w->ids));
    free(w->pos);
    free(w->slot);
    w->pos = malloc((size_t)(n * k + 1) * sizeof *w->pos);
    w->slot = malloc((size_t)(n * k + 1) * sizeof *w->slot);
    CAIRN_CHECK_ALLOC(w->pos && w->slot ? w->pos : NULL);
    CAIRN_CHECK(embed_touch(w->ids.data, n * k, x->rows, w->pos, &n_pos, w->slot));
    for (int64_t i = 0; i < n_pos; i++) w->pos[i] = spread_row(w->pos[i], x->rows, a); /* the rows' ids */
    if (n_pos) CAIRN_CHECK(reader_gather(m->rd, m->path, x->path, w->pos, n_pos, m->dt, &w->rows));
    /* a table is too large to check whole when the model is opened: the
     * rows a batch uses are checked as the weights were */
    int64_t bad = n_pos ? tensor_first_nonfinite(&w->rows) : -1;
    if (bad >= 0)
        CAIRN_FAIL(CAIRN_EINPUT, "model %s: %s: non-finite value at [%lld, %lld]", m->path, x->path,
                   (long long)w->pos[bad / x->dim], (long long)(bad % x->dim));
    embed_combine(m->dt, n, k, w->slot, w->rows.data, x->dim, x->mean,
                  (char *)w->x.data + (size_t)col * dtype_size(m->dt), m->width0);
cleanup:
    return rc;
}

/* The first layer's input for rows [first, first + n): the dense features,
 * then each table's combined vectors. */
static int batch_input(const struct infer_model *m, const struct infer_opts *o, int64_t first, int64_t n,
                       struct work *w)
{
    int rc = 0;
    size_t esz = dtype_size(m->dt);
    CAIRN_CHECK(reader_rows(m->rd, o->data, o->features, first, n, m->dt, &w->a[0]));
    if (!m->n_tables) return 0;
    struct shape s = {.ndim = 2, .d = {n, m->width0}};
    CAIRN_CHECK(tensor_resize(&w->x, m->dt, &s));
    for (int64_t r = 0; r < n; r++)
        memcpy((char *)w->x.data + (size_t)(r * m->width0) * esz, (char *)w->a[0].data + (size_t)(r * m->inputs) * esz,
               (size_t)m->inputs * esz);
    for (int e = 0; e < m->n_tables; e++) CAIRN_CHECK(table_input(m, o, &m->tab[e], first, n, w, m->tab[e].column));
    struct tensor tmp = w->a[0];
    w->a[0] = w->x;
    w->x = tmp;
cleanup:
    return rc;
}

/* Forward through the layers: the outputs end in w->a[L % 2]. */
static int forward(const struct infer_model *m, int64_t n, struct work *w)
{
    int rc = 0;
    for (int l = 0; l < m->L; l++) {
        struct tensor *in = &w->a[l % 2], *out = &w->a[(l + 1) % 2];
        int64_t units = m->b[l].shape.d[0];
        struct shape s = {.ndim = 2, .d = {n, units}};
        CAIRN_CHECK(tensor_resize(out, m->dt, &s));
        nn_forward(m->dt, n, m->W[l].shape.d[0], units, in->data, m->W[l].data, m->b[l].data, m->act[l], out->data);
    }
cleanup:
    return rc;
}

static double value(enum dtype dt, const void *v, int64_t i)
{
    return dt == DT_F64 ? ((const double *)v)[i] : (double)((const float *)v)[i];
}

/* The outputs as written: softmax probabilities or values, in place (a
 * language model's: its logits, as they are); and each row's largest
 * output. */
static void outputs(const struct infer_model *m, int64_t n, struct work *w, void *z, int32_t *pred)
{
    int64_t k = infer_outputs(m);
    for (int64_t r = 0; r < n; r++) {
        int64_t best = 0;
        double mx = value(m->dt, z, r * k), sum = 0;
        for (int64_t j = 1; j < k; j++)
            if (value(m->dt, z, r * k + j) > mx) mx = value(m->dt, z, r * k + (best = j));
        pred[r] = (int32_t)best;
        if (!infer_softmax(m) || m->lm) continue;
        for (int64_t j = 0; j < k; j++) sum += w->probs[j] = exp(value(m->dt, z, r * k + j) - mx);
        for (int64_t j = 0; j < k; j++) {
            if (m->dt == DT_F64)
                ((double *)z)[r * k + j] = w->probs[j] / sum;
            else
                ((float *)z)[r * k + j] = (float)(w->probs[j] / sum);
        }
    }
}

/* ---- the run ------------------------------------------------------------------ */

struct run {
    MPI_Comm comm;
    const struct infer_model *m;
    const struct infer_opts *o;
    int me, size;
    bool auc; /* two classes, softmax, labels: every rank alike */
    int64_t first, rows, targets, batch, lo, hi; /* this rank's batches [lo, hi) */
    double *sums;                                /* (loss, correct) per batch */
    double *sl;                                  /* (score, label) per row: the AUC */
    int64_t n_sl;
    struct work w;
    void *z; /* the last batch's outputs */
    int32_t *pred;
    int *count, *at; /* the gathers' */
    double *all;     /* rank 0: what they gather */
    struct fsx_out out; /* the predictions file until it is whole (OUT.tmp) */
    hid_t f, d_out, d_pred, dxpl;
};

/* Batch i (of this rank's): metrics, and the outputs into w.a / pred. */
static int run_batch(struct run *x, int64_t i, int64_t *at, int64_t *n)
{
    int rc = 0;
    const struct infer_model *m = x->m;
    int64_t k = infer_outputs(m), correct = 0;
    *at = x->first + i * x->batch;
    *n = x->first + x->rows - *at < x->batch ? x->first + x->rows - *at : x->batch;
    void *z;
    if (m->lm) { /* each position's logits; eval: the loss per token */
        struct tensor *out;
        CAIRN_CHECK(infer_lm_forward(m, x->o, *at, *n, x->w.lm, &out));
        x->z = z = out->data;
        if (x->o->labels) {
            double *s = &x->sums[2 * (i - x->lo)];
            CAIRN_CHECK(infer_lm_loss(m, x->o, *at, *n, z, &x->w.y, &s[0], &correct));
            s[1] = (double)correct;
        }
    } else {
        CAIRN_CHECK(batch_input(m, x->o, *at, *n, &x->w));
        CAIRN_CHECK(forward(m, *n, &x->w));
        x->z = z = x->w.a[m->L % 2].data;
    }
    if (x->o->labels && !m->lm) {
        const int32_t *labels = NULL;
        CAIRN_CHECK(reader_rows(m->rd, x->o->data, x->o->labels, *at, *n, x->targets ? m->dt : DT_I32, &x->w.y));
        if (!x->targets) {
            labels = x->w.y.data;
            for (int64_t r = 0; r < *n; r++)
                if (labels[r] < 0 || labels[r] >= k)
                    CAIRN_FAIL(CAIRN_EINPUT, "dataset '%s' in %s: row %lld holds class %d, but the model has %lld outputs",
                               x->o->labels, x->o->data, (long long)(*at + r), labels[r], (long long)k);
        }
        double *s = &x->sums[2 * (i - x->lo)];
        s[0] = nn_loss(m->dt, m->loss, *n, k, z, labels, x->targets ? x->w.y.data : NULL, *n, NULL, &correct);
        s[1] = (double)correct;
        for (int64_t r = 0; x->sl && r < *n; r++, x->n_sl++) { /* as train.c's evaluate scores */
            x->sl[2 * x->n_sl] = value(m->dt, z, 2 * r + 1) - value(m->dt, z, 2 * r);
            x->sl[2 * x->n_sl + 1] = labels[r];
        }
    }
    if (x->o->out) { /* a language model: every position's next token */
        int64_t r = *n * (m->lm ? infer_tokens(m) : 1);
        free(x->pred);
        CAIRN_CHECK_ALLOC(x->pred = malloc((size_t)(r + 1) * sizeof *x->pred));
        outputs(m, r, &x->w, z, x->pred);
    }
cleanup:
    return rc;
}

/* Collective: the predictions file, created under its temporary name. */
static int out_create(struct run *x)
{
    int rc = 0;
    hid_t fapl = H5I_INVALID_HID;
    int64_t k = infer_outputs(x->m);
    const char *tmp = x->out.tmp;
    CAIRN_CHECK_H5(fapl = H5Pcreate(H5P_FILE_ACCESS));
    CAIRN_CHECK_H5(H5Pset_fapl_mpio(fapl, x->comm, MPI_INFO_NULL));
    h5_mpio_before_open(x->comm, tmp);
    CAIRN_CHECK(h5_create_file(tmp, fapl, &x->f));
    struct shape os = {.ndim = 2, .d = {x->rows, k}}, ps = {.ndim = 1, .d = {x->rows}};
    if (x->m->lm) /* [rows, ctx, vocab] logits, [rows, ctx] tokens */
        os = (struct shape){.ndim = 3, .d = {x->rows, infer_tokens(x->m), k}},
        ps = (struct shape){.ndim = 2, .d = {x->rows, infer_tokens(x->m)}};
    CAIRN_CHECK_H5(x->d_out = h5_create_dataset(x->f, "outputs", x->m->dt, &os, H5P_DEFAULT));
    CAIRN_CHECK_H5(x->d_pred = h5_create_dataset(x->f, "predicted", DT_I32, &ps, H5P_DEFAULT));
    CAIRN_CHECK(h5_attr_put_str(x->f, "model", x->m->path));
    CAIRN_CHECK(h5_attr_put_str(x->f, "data", x->o->data));
    CAIRN_CHECK(h5_attr_put_i64(x->f, "first_row", x->first));
    CAIRN_CHECK(h5_attr_put_str(x->f, "outputs", x->m->lm ? "logits" : infer_softmax(x->m) ? "probabilities" : "values"));
    CAIRN_CHECK_H5(x->dxpl = H5Pcreate(H5P_DATASET_XFER));
    CAIRN_CHECK_H5(H5Pset_dxpl_mpio(x->dxpl, H5FD_MPIO_COLLECTIVE));
cleanup:
    if (fapl >= 0) H5Pclose(fapl);
    return rc;
}

static int out_close(struct run *x)
{
    int rc = 0;
    if (x->dxpl >= 0) H5Pclose(x->dxpl);
    if (x->d_out >= 0 && H5Dclose(x->d_out) < 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Dclose");
    if (x->d_pred >= 0 && H5Dclose(x->d_pred) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Dclose");
    if (x->f >= 0 && H5Fclose(x->f) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Fclose");
    x->dxpl = x->d_out = x->d_pred = x->f = H5I_INVALID_HID;
    return rc;
}

/* Every rank's batches, in rounds so that each round's writes are one
 * collective call (a rank with fewer batches writes nothing in the last). */
static int run_batches(struct run *x)
{
    int rc = 0;
    int64_t batches = (x->rows + x->batch - 1) / x->batch, rounds = (batches + x->size - 1) / x->size;
    for (int64_t i = 0; i < rounds; i++) {
        int64_t at = 0, n = 0;
        if (x->lo + i < x->hi) rc = run_batch(x, x->lo + i, &at, &n);
        if (!x->o->out) {
            if (rc) break;
            continue;
        }
        CAIRN_CHECK(coll_agree(x->comm, rc));
        CAIRN_CHECK(h5_write_rows(x->d_out, x->m->dt, at - x->first, n, x->z, x->dxpl));
        CAIRN_CHECK(h5_write_rows(x->d_pred, DT_I32, at - x->first, n, x->pred, x->dxpl));
    }
cleanup:
    return rc;
}

/* Rank 0: the batches' sums in batch order (shares are contiguous and in
 * rank order, so a gather keeps it), the AUC of every row's pair.  The
 * buffers were made (and agreed on) in run_setup. */
static int run_metrics(struct run *x, struct infer_result *r)
{
    int rc = 0, mine = (int)(2 * (x->hi - x->lo));
    double v[3] = {0, 0, NAN};
    for (int pass = 0; pass < (x->auc ? 2 : 1); pass++) {
        double *src = pass ? x->sl : x->sums;
        int64_t total = 0;
        if (pass) mine = (int)(2 * x->n_sl);
        CAIRN_CHECK_MPI(MPI_Gather(&mine, 1, MPI_INT, x->count, 1, MPI_INT, 0, x->comm));
        for (int i = 0; x->me == 0 && i < x->size; i++) {
            x->at[i] = (int)total;
            total += x->count[i];
        }
        CAIRN_CHECK_MPI(MPI_Gatherv(src, mine, MPI_DOUBLE, x->all, x->count, x->at, MPI_DOUBLE, 0, x->comm));
        for (int64_t i = 0; x->me == 0 && !pass && i < total; i++) v[i % 2] += x->all[i];
        if (x->me == 0 && pass) v[2] = nn_auc(x->all, total / 2);
    }
    CAIRN_CHECK_MPI(MPI_Bcast(v, 3, MPI_DOUBLE, 0, x->comm));
    r->loss = v[0] / (double)x->rows;
    r->accuracy = v[1] / (double)x->rows / (double)(x->m->lm ? x->m->spec.lm.ctx : 1); /* an LM's: of tokens */
    r->auc = v[2];
cleanup:
    return rc;
}

/* OUT must be a regular file if it exists (fsx_out's rule, checked before
 * any work), and not the model or the data: the rename would replace it. */
static int check_out(const struct run *x)
{
    struct stat so, s;
    int rc = fsx_check_target(x->o->out);
    if (rc || stat(x->o->out, &so) != 0) return rc;
    const char *in[2] = {x->m->path, x->o->data};
    for (int i = 0; i < 2; i++)
        if (stat(in[i], &s) == 0 && s.st_dev == so.st_dev && s.st_ino == so.st_ino)
            return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "-o %s is the %s file: it would be replaced",
                                 x->o->out, i ? "data" : "model");
    return 0;
}

static int run_setup(struct run *x, struct infer_result *r)
{
    int rc = 0;
    int64_t n = 0;
    const struct infer_opts *o = x->o;
    rc = check_data(x->m, o, &n, &x->targets);
    if (rc == 0 && (o->first < 0 || o->first > n || (o->end >= 0 && (o->end < o->first || o->end > n))))
        rc = cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "rows %lld:%lld are not within the %lld rows of %s",
                           (long long)o->first, (long long)o->end, (long long)n, o->data);
    if (rc == 0 && o->batch < 1) rc = cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "the batch must be at least 1");
    x->first = o->first;
    x->rows = (o->end < 0 ? n : o->end) - o->first;
    if (rc == 0 && x->rows == 0) rc = cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "no rows to use in %s", o->data);
    x->batch = o->batch;
    int64_t batches = x->rows > 0 ? (x->rows + x->batch - 1) / x->batch : 0;
    if (rc == 0 && batches > INT_MAX / 2)
        rc = cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%lld batches are too many: use a larger --batch",
                           (long long)batches);
    part_range(batches, x->size, x->me, &x->lo, &x->hi);
    r->rows = x->rows;
    int64_t k = infer_outputs(x->m);
    x->sums = calloc((size_t)(2 * (x->hi - x->lo) + 1), sizeof *x->sums);
    x->w.probs = malloc((size_t)k * sizeof *x->w.probs);
    if (rc == 0 && (!x->sums || !x->w.probs)) rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    /* (score, label) pairs of every row go to rank 0 in one gather */
    x->auc = o->labels && infer_softmax(x->m) && k == 2 && !x->m->lm && x->rows <= INT_MAX / 2;
    if (rc == 0 && x->auc) {
        int64_t mine = (x->hi - x->lo) * x->batch;
        if (!(x->sl = malloc((size_t)(2 * mine + 1) * sizeof *x->sl)))
            rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    }
    int64_t gathered = x->auc && x->rows > batches ? x->rows : batches; /* pairs of doubles */
    x->count = malloc((size_t)x->size * sizeof *x->count);
    x->at = malloc((size_t)x->size * sizeof *x->at);
    if (x->me == 0) x->all = malloc((size_t)(2 * gathered + 1) * sizeof *x->all);
    if (rc == 0 && (!x->count || !x->at || (x->me == 0 && !x->all)))
        rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    if (rc == 0 && o->out) rc = check_out(x);
    return rc;
}

int infer_run(MPI_Comm comm, const struct infer_model *m, const struct infer_opts *o, struct infer_result *r)
{
    int rc = 0;
    struct run x = {.comm = comm, .m = m, .o = o, .f = H5I_INVALID_HID, .d_out = H5I_INVALID_HID,
                    .d_pred = H5I_INVALID_HID, .dxpl = H5I_INVALID_HID, .out = {.dir = -1, .fd = -1}};
    bool deferring = false;
    double t0 = clock_now();
    *r = (struct infer_result){.auc = NAN};
    MPI_Comm_rank(comm, &x.me);
    MPI_Comm_size(comm, &x.size);
    CAIRN_CHECK(coll_agree(comm, run_setup(&x, r)));
    if (o->out) {
        CAIRN_CHECK(coll_out_begin(comm, o->out, 0, &x.out));
        h5_quiet();
        iodefer_begin(x.out.tmp); /* a write failing on some ranks only must not split them */
        deferring = true;
        rc = out_create(&x);
        if (rc == 0) rc = run_batches(&x);
        int c = out_close(&x), d = iodefer_end();
        deferring = false;
        rc = rc ? rc : c ? c : d;
    } else {
        rc = run_batches(&x);
    }
    CAIRN_CHECK(coll_agree(comm, rc));
    if (o->labels) CAIRN_CHECK(run_metrics(&x, r));
    if (o->out) CAIRN_CHECK(coll_agree(comm, x.me == 0 ? fsx_out_commit(&x.out) : 0));
    double s = clock_now() - t0;
    CAIRN_CHECK(coll_allreduce(&s, &r->seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
cleanup:
    if (deferring) iodefer_end();
    out_close(&x);
    fsx_out_abort(&x.out); /* never a half-written predictions file */
    free(x.sums);
    free(x.count);
    free(x.at);
    free(x.all);
    free(x.sl);
    free(x.pred);
    work_free(&x.w);
    return rc;
}
