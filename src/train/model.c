/* Model parameters, data split and the single-process reference; see
 * include/cairn/model.h. */
#include "cairn/model.h"

#include "cairn/embed_bag.h"
#include "cairn/embed_ids.h"
#include "cairn/error.h"
#include "layer.h"
#include "cairn/fsx.h"
#include "cairn/h5util.h"
#include "cairn/job.h"
#include "cairn/lm.h"
#include "cairn/nn.h"
#include "cairn/partition.h"
#include "cairn/reader.h"
#include "cairn/rng.h"
#include "cairn/train_spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int model_layer_params(enum layer_kind kind)
{
    switch (kind) {
    case LAYER_DENSE: return 2;
    case LAYER_LM_EMBED: return 2;
    case LAYER_LM_BLOCK: return LM_N_PARAMS;
    case LAYER_LM_HEAD: return 3;
    }
    return 0;
}

int model_param_layer(const struct train_spec *t, int k)
{
    int l = 0;
    while (l + 1 < t->n_layers && k >= t->param0[l + 1]) l++;
    return l;
}

/* A dense layer's inputs. */
static int64_t layer_in(const struct train_spec *t, int l) { return l ? t->layers[l - 1].units : t->width0; }

struct geom {
    int64_t rows, cols; /* a vector: cols = 1 */
    int ndim;
    const char *name;   /* within its layer */
};

static const char *const embed_names[] = {"tok", "pos"}, *const head_names[] = {"lnf.g", "lnf.b", "W"};

/* Parameter q of layer l. */
static struct geom geom_of(const struct train_spec *t, int l, int q)
{
    const struct lm_spec *x = &t->lm;
    struct lm_shape s = {.ctx = x->ctx, .d = x->d, .heads = x->heads, .mlp = x->mlp};
    struct geom g = {.cols = 1, .ndim = 1};
    switch (t->layers[l].kind) {
    case LAYER_DENSE:
        if (q == 0) g = (struct geom){layer_in(t, l), t->layers[l].units, 2, "W"};
        else g = (struct geom){t->layers[l].units, 1, 1, "b"};
        break;
    case LAYER_LM_EMBED:
        g = (struct geom){q ? x->ctx : x->vocab, x->d, 2, embed_names[q]};
        break;
    case LAYER_LM_BLOCK:
        lm_param_shape(&s, q, &g.rows, &g.cols);
        g.ndim = q == LM_QKV_W || q == LM_PROJ_W || q == LM_FC_W || q == LM_OUT_W ? 2 : 1;
        g.name = lm_param_name(q);
        break;
    case LAYER_LM_HEAD:
        g = q == 2 ? (struct geom){x->d, x->vocab, 2, head_names[q]} : (struct geom){x->d, 1, 1, head_names[q]};
        break;
    }
    return g;
}

static struct geom geom(const struct train_spec *t, int k)
{
    int l = model_param_layer(t, k);
    return geom_of(t, l, k - t->param0[l]);
}

int model_param_ndim(const struct train_spec *t, int k) { return k >= t->n_params ? 2 : geom(t, k).ndim; }

int64_t model_param_rows(const struct train_spec *t, int k)
{
    return k >= t->n_params ? t->tables[k - t->n_params].rows : geom(t, k).rows;
}

int64_t model_param_cols(const struct train_spec *t, int k)
{
    return k >= t->n_params ? t->tables[k - t->n_params].dim : geom(t, k).cols;
}

enum model_split model_param_split(const struct train_spec *t, int k, int64_t T, int64_t *nb)
{
    *nb = t->block;
    if (T == 1 || k >= t->n_params) return MODEL_SPLIT_WHOLE;
    int l = model_param_layer(t, k);
    if (t->layers[l].kind == LAYER_DENSE) return MODEL_SPLIT_COLS;
    if (t->layers[l].kind != LAYER_LM_BLOCK) return MODEL_SPLIT_WHOLE; /* embeddings, head */
    switch (k - t->param0[l]) {
    case LM_QKV_W:
    case LM_QKV_B: *nb = t->lm.d / T; return MODEL_SPLIT_COLS; /* q, k and v of its heads */
    case LM_PROJ_W: *nb = t->lm.d / T; return MODEL_SPLIT_ROWS;
    case LM_FC_W:
    case LM_FC_B: *nb = t->lm.mlp / T; return MODEL_SPLIT_COLS;
    case LM_OUT_W: *nb = t->lm.mlp / T; return MODEL_SPLIT_ROWS;
    default: return MODEL_SPLIT_WHOLE;
    }
}

void model_param_local(const struct train_spec *t, int k, int64_t T, int64_t j, int64_t *rows, int64_t *cols)
{
    int64_t nb;
    enum model_split s = model_param_split(t, k, T, &nb);
    *rows = model_param_rows(t, k);
    *cols = model_param_cols(t, k);
    if (s == MODEL_SPLIT_ROWS || (s == MODEL_SPLIT_COLS && model_param_ndim(t, k) == 1))
        *rows = cyclic_owned(*rows, nb, T, j);
    else if (s == MODEL_SPLIT_COLS)
        *cols = cyclic_owned(*cols, nb, T, j);
}

/* A table's rows at positions lo ..: row i's values are uniform in
 * +-1/sqrt(dim), keyed by (seed, table, i, column), whatever the shards. */
static void init_table(const struct train_spec *t, uint64_t seed, int e, int64_t lo, struct tensor *v)
{
    int64_t rows = t->tables[e].rows, dim = t->tables[e].dim, a = spread_step(rows);
    double limit = 1 / sqrt((double)dim);
    for (int64_t r = 0, n = v->shape.d[0]; r < n; r++) {
        int64_t id = spread_row(lo + r, rows, a);
        for (int64_t j = 0; j < dim; j++) {
            double u = rng_uniform(seed, RNG_STREAM_TABLE(e), (uint64_t)(id * dim + j));
            tensor_set(v, r * dim + j, (2 * u - 1) * limit);
        }
    }
}

/* Uniform in +-limit, keyed by (seed, k, element). */
static void init_uniform(uint64_t seed, int k, int64_t lo, int64_t cols, double limit, struct tensor *v)
{
    for (int64_t e = 0, n = tensor_numel(v); e < n; e++) {
        double u = rng_uniform(seed, RNG_STREAM_PARAM(k), (uint64_t)(lo * cols + e));
        tensor_set(v, e, (2 * u - 1) * limit);
    }
}

/* A language model's: norms' gains 1, biases 0, matrices of standard
 * deviation 0.02 (uniform), the residual projections' shrunk by
 * sqrt(2 blocks), as GPT-2's. */
static void init_lm(const struct train_spec *t, uint64_t seed, int k, int64_t lo, struct tensor *v)
{
    int l = model_param_layer(t, k), q = k - t->param0[l];
    struct geom g = geom_of(t, l, q);
    bool block = t->layers[l].kind == LAYER_LM_BLOCK;
    if (g.ndim == 1) {
        bool gain = block ? q == LM_LN1_G || q == LM_LN2_G : t->layers[l].kind == LAYER_LM_HEAD && q == 0;
        if (gain) tensor_fill(v, 1);
        return;
    }
    double limit = 0.02 * sqrt(3.0);
    if (block && (q == LM_PROJ_W || q == LM_OUT_W)) limit /= sqrt(2.0 * (double)t->lm.blocks);
    init_uniform(seed, k, lo, g.cols, limit, v);
}

void model_init_param(const struct train_spec *t, uint64_t seed, int k, int64_t lo,
                      struct tensor *v)
{
    tensor_fill(v, 0);
    if (k >= t->n_params) {
        init_table(t, seed, k - t->n_params, lo, v);
        return;
    }
    if (t->lm_on) {
        init_lm(t, seed, k, lo, v);
        return;
    }
    if (model_param_ndim(t, k) == 1) return; /* biases start at zero */
    int64_t cols = model_param_cols(t, k);
    init_uniform(seed, k, lo, cols, sqrt(6.0 / (double)(model_param_rows(t, k) + cols)), v);
}

void model_param_name(const struct train_spec *t, int k, const char *suffix, char *out, size_t size)
{
    snprintf(out, size, "L%d.%s%s", model_param_layer(t, k), geom(t, k).name, suffix);
}

void model_grad_name(const struct train_spec *t, int k, char *out, size_t size)
{
    snprintf(out, size, "grads/L%d/%s", model_param_layer(t, k), geom(t, k).name);
}

void model_table_grad_name(const char *table, const char *what, char *out, size_t size)
{
    snprintf(out, size, "grads/embeddings/%s/%s", table, what);
}

int64_t model_train_rows(const struct train_spec *t, int64_t n)
{
    if (t->holdout_file || t->holdout <= 0) return n;
    int64_t held = (int64_t)floor(t->holdout * (double)n);
    return n - (held ? held : 1);
}

/* ---- the reference ------------------------------------------------------------ */

/* A table in the reference: whole, in position order (partition.h's
 * spread), and the batch's ids as embed_bag.h takes them. */
struct ref_table {
    struct tensor w, ids;
    int64_t k, n_pos, *pos, *slot, *mark;
    struct sparse_rows leaf;
    struct sparse_tree tree;
};

struct ref {
    const struct train_spec *t;
    int L, K;                      /* layers, parameters */
    uint64_t seed;
    struct tensor *w, *dw, *a;     /* a[0] = input, a[l+1] = layer l's output */
    struct tensor *tape, scratch;  /* by layer (layer.h) */
    struct tensor g[2];
    struct ref_table *tab;
};

/* Parameter k's shape, as the checkpoint holds it. */
static struct shape param_shape(const struct train_spec *t, int k)
{
    struct shape s = {.ndim = model_param_ndim(t, k), .d = {model_param_rows(t, k)}};
    if (s.ndim == 2) s.d[1] = model_param_cols(t, k);
    return s;
}

static int ref_params(struct ref *r, uint64_t seed)
{
    int rc = 0;
    for (int k = 0; k < r->K; k++) {
        struct shape s = param_shape(r->t, k);
        CAIRN_CHECK(tensor_resize(&r->w[k], r->t->dtype, &s));
        CAIRN_CHECK(tensor_resize(&r->dw[k], r->t->dtype, &s));
        model_init_param(r->t, seed, k, 0, &r->w[k]);
    }
cleanup:
    return rc;
}

/* Layer l's tape, and the backward's scratch, sized for n samples. */
static int ref_work(struct ref *r, int l, int64_t n)
{
    int rc = 0;
    struct shape ts = {.ndim = 1, .d = {layer_tape_numel(r->t, l, n, 1)}};
    struct shape ss = {.ndim = 1, .d = {layer_scratch_numel(r->t, l, n, 1)}};
    CAIRN_CHECK(tensor_resize(&r->tape[l], r->t->dtype, &ts));
    if (ss.d[0] > tensor_numel(&r->scratch)) CAIRN_CHECK(tensor_resize(&r->scratch, r->t->dtype, &ss));
cleanup:
    return rc;
}

/* Forward, loss and backward of rows [lo, hi) of x/y; the gradients go to
 * dw (by parameter, overwritten). */
static int ref_micro(struct ref *r, const struct tensor *x, const struct tensor *y, int64_t i, int64_t lo,
                     int64_t hi, int64_t batch, int64_t k_targets, struct tensor *dw)
{
    int rc = 0;
    const struct train_spec *t = r->t;
    int64_t n = hi - lo, k = t->layers[r->L - 1].units, correct, w = t->width0;
    size_t esz = dtype_size(t->dtype);
    struct layer_key key = {.seed = r->seed, .pass = 0, .sample0 = lo}; /* the first pass's first batch */
    struct shape s0 = {.ndim = 2, .d = {n, w}};
    CAIRN_CHECK(tensor_resize(&r->a[0], t->dtype, &s0));
    memcpy(r->a[0].data, (char *)x->data + (size_t)(lo * w) * esz, (size_t)(n * w) * esz);
    for (int l = 0; l < r->L; l++) {
        struct shape s = {.ndim = 2, .d = {n, t->layers[l].units}};
        CAIRN_CHECK(tensor_resize(&r->a[l + 1], t->dtype, &s));
        CAIRN_CHECK(ref_work(r, l, n));
        layer_forward(t, l, n, r->a[l].data, &r->w[t->param0[l]], r->a[l + 1].data, r->tape[l].data, &key, NULL);
    }
    struct shape gs = {.ndim = 2, .d = {n, k}};
    CAIRN_CHECK(tensor_resize(&r->g[r->L % 2], t->dtype, &gs));
    int64_t per = t->lm_on ? t->lm.ctx : 1; /* labels of a sample */
    const int32_t *labels = k_targets ? NULL : (const int32_t *)y->data + lo * per;
    const void *targets = k_targets ? (char *)y->data + (size_t)(lo * k) * esz : NULL;
    layer_loss(t, n, r->a[r->L].data, labels, targets, batch, r->g[r->L % 2].data, &correct);
    for (int l = r->L - 1; l >= 0; l--) {
        int q = t->param0[l];
        struct tensor *dx = l || t->n_tables ? &r->g[l % 2] : NULL; /* tables need layer 0's */
        if (dx) {
            struct shape s = {.ndim = 2, .d = {n, l ? t->layers[l - 1].units : w}};
            CAIRN_CHECK(tensor_resize(dx, t->dtype, &s));
        }
        struct tensor *d[MODEL_LAYER_MAX_PARAMS];
        for (int j = 0; j < t->param0[l + 1] - q; j++) d[j] = &dw[q + j];
        layer_backward(t, l, n, r->a[l].data, r->a[l + 1].data, &r->w[q], r->tape[l].data,
                       r->g[(l + 1) % 2].data, d, dx ? dx->data : NULL, r->scratch.data, &key, NULL);
    }
    for (int e = 0, col = (int)t->inputs; e < t->n_tables; col += (int)t->tables[e++].dim) {
        struct ref_table *x = &r->tab[e];
        CAIRN_CHECK(embed_grad(t->dtype, n, x->k, x->slot + lo * x->k, x->pos, x->n_pos, (char *)r->g[0].data + (size_t)col * esz,
                               w, t->tables[e].dim, t->tables[e].mean, x->mark, &x->leaf));
        CAIRN_CHECK(sparse_tree_add(&x->tree, i, &x->leaf));
    }
cleanup:
    return rc;
}

/* The gradients of micro-batches [lo, hi) of a batch of rows, summed over
 * the bisection tree the pipeline uses (pipeline.c): into dw; tmp holds a
 * set of K per tree level below. */
static int ref_tree(struct ref *r, const struct tensor *x, const struct tensor *y, int64_t lo, int64_t hi,
                    int64_t rows, int64_t batch, int64_t k_targets, struct tensor *dw, struct tensor *tmp)
{
    int rc = 0, K = r->K;
    if (hi - lo == 1) {
        int64_t a, z;
        part_range(rows, r->t->chunks, lo, &a, &z);
        if (z > a) return ref_micro(r, x, y, lo, a, z, batch, k_targets, dw);
        for (int k = 0; k < K; k++) tensor_fill(&dw[k], 0);
        return 0;
    }
    int64_t mid = bisect_mid(lo, hi); /* the pipeline's tree */
    for (int k = 0; k < K; k++) CAIRN_CHECK(tensor_resize(&tmp[k], dw[k].dtype, &dw[k].shape));
    CAIRN_CHECK(ref_tree(r, x, y, lo, mid, rows, batch, k_targets, dw, tmp + K));
    CAIRN_CHECK(ref_tree(r, x, y, mid, hi, rows, batch, k_targets, tmp, tmp + K));
    for (int k = 0; k < K; k++) CAIRN_CHECK(tensor_add(&dw[k], &dw[k], &tmp[k]));
cleanup:
    return rc;
}

/* The tables for the batch's rows idx: each whole at its initial values
 * and the rows' ids read and checked; then x (the dense features) gets
 * each sample's combined vectors, as the first layer takes them. */
static int ref_tables(struct ref *r, struct reader_cache *rd, uint64_t seed, const int64_t *idx, int64_t batch,
                      struct tensor *x)
{
    int rc = 0;
    const struct train_spec *t = r->t;
    size_t esz = dtype_size(t->dtype);
    int64_t w = t->width0, N;
    struct tensor xf = {0};
    char *rows = NULL;
    struct shape fs = {.ndim = 2, .d = {batch, w}};
    CAIRN_CHECK(tensor_resize(&xf, t->dtype, &fs));
    for (int64_t i = 0; i < batch; i++)
        memcpy((char *)xf.data + (size_t)(i * w) * esz, (char *)x->data + (size_t)(i * t->inputs) * esz,
               (size_t)t->inputs * esz);
    for (int e = 0, col = (int)t->inputs; e < t->n_tables; col += (int)t->tables[e++].dim) {
        const struct embed_spec *sp = &t->tables[e];
        struct ref_table *tb = &r->tab[e];
        struct shape ws = {.ndim = 2, .d = {sp->rows, sp->dim}};
        CAIRN_CHECK(tensor_resize(&tb->w, t->dtype, &ws));
        model_init_param(t, seed, t->n_params + e, 0, &tb->w);
        rc = embed_ids_shape(rd, t->data_file, sp->ids, &N, &tb->k);
        if (rc == 0) rc = reader_gather(rd, t->data_file, sp->ids, idx, batch, DT_I64, &tb->ids);
        int64_t bad = rc ? -1 : embed_ids_first_bad(tb->ids.data, batch * tb->k, sp->rows);
        if (bad >= 0)
            rc = embed_ids_bad(CAIRN_EINPUT, rd, t->data_file, sp->ids, idx[bad / tb->k], bad % tb->k,
                               ((const int64_t *)tb->ids.data)[bad], sp->rows);
        if (rc) {
            cairn_err_wrap(rc, "%s:%d: table '%s': ", sp->file, sp->line, sp->name);
            goto cleanup;
        }
        int64_t n = batch * tb->k;
        tb->pos = malloc((size_t)(n + 1) * sizeof *tb->pos);
        tb->slot = malloc((size_t)(n + 1) * sizeof *tb->slot);
        tb->mark = malloc((size_t)(n + 1) * sizeof *tb->mark);
        free(rows);
        rows = malloc((size_t)(n * sp->dim) * esz + 1);
        CAIRN_CHECK_ALLOC(tb->pos && tb->slot && tb->mark && rows ? rows : NULL);
        for (int64_t i = 0; i < n; i++) tb->mark[i] = -1;
        CAIRN_CHECK(embed_touch(tb->ids.data, n, sp->rows, tb->pos, &tb->n_pos, tb->slot));
        for (int64_t i = 0; i < tb->n_pos; i++) /* the rows a reader would pull */
            memcpy(rows + (size_t)(i * sp->dim) * esz, (char *)tb->w.data + (size_t)(tb->pos[i] * sp->dim) * esz,
                   (size_t)sp->dim * esz);
        embed_combine(t->dtype, batch, tb->k, tb->slot, rows, sp->dim, sp->mean, (char *)xf.data + (size_t)col * esz, w);
        sparse_tree_reset(&tb->tree, t->dtype, sp->dim, 0, t->chunks);
    }
    tensor_free(x);
    *x = xf;
    xf = (struct tensor){0};
cleanup:
    free(rows);
    tensor_free(&xf);
    return rc;
}

/* Table e's gradient: the rows the batch touched, in position order, as
 * /grads/embeddings/<name>/ids and .../rows (debug.grads writes the same). */
static int ref_write_table(struct ref *r, hid_t f, int e)
{
    int rc = 0;
    const struct embed_spec *sp = &r->t->tables[e];
    const struct sparse_rows *sum = NULL;
    struct tensor ids = {0}, rows = {0};
    char name[96];
    CAIRN_CHECK(sparse_tree_sum(&r->tab[e].tree, &sum));
    struct shape is = {.ndim = 1, .d = {sum->n}}, rs = {.ndim = 2, .d = {sum->n, sp->dim}};
    CAIRN_CHECK(tensor_resize(&ids, DT_I64, &is));
    CAIRN_CHECK(tensor_resize(&rows, r->t->dtype, &rs));
    int64_t a = spread_step(sp->rows);
    for (int64_t i = 0; i < sum->n; i++) ((int64_t *)ids.data)[i] = spread_row(sum->pos[i], sp->rows, a);
    if (sum->n) memcpy(rows.data, sum->val, (size_t)(sum->n * sp->dim) * dtype_size(r->t->dtype));
    model_table_grad_name(sp->name, "ids", name, sizeof name);
    CAIRN_CHECK(h5_put_tensor(f, name, &ids));
    model_table_grad_name(sp->name, "rows", name, sizeof name);
    CAIRN_CHECK(h5_put_tensor(f, name, &rows));
cleanup:
    tensor_free(&ids);
    tensor_free(&rows);
    return rc;
}

static int ref_write(struct ref *r, const char *out)
{
    int rc = 0;
    hid_t f = H5I_INVALID_HID;
    struct fsx_out o = {.dir = -1, .fd = -1};
    h5_quiet();
    CAIRN_CHECK(fsx_out_begin(&o, out, 0));
    CAIRN_CHECK(h5_create_file(o.tmp, H5P_DEFAULT, &f));
    for (int k = 0; k < r->K; k++) {
        char name[64];
        model_grad_name(r->t, k, name, sizeof name);
        CAIRN_CHECK(h5_put_tensor(f, name, &r->dw[k]));
    }
    for (int e = 0; e < r->t->n_tables; e++) CAIRN_CHECK(ref_write_table(r, f, e));
cleanup:
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Fclose");
    if (rc == 0) rc = fsx_out_commit(&o);
    fsx_out_abort(&o);
    return rc;
}

static void ref_free(struct ref *r)
{
    for (int k = 0; r->w && k < r->K; k++) {
        tensor_free(&r->w[k]);
        tensor_free(&r->dw[k]);
    }
    for (int l = 0; r->a && l <= r->L; l++) tensor_free(&r->a[l]);
    for (int l = 0; r->tape && l < r->L; l++) tensor_free(&r->tape[l]);
    free(r->tape);
    tensor_free(&r->scratch);
    for (int e = 0; r->tab && e < r->t->n_tables; e++) {
        struct ref_table *x = &r->tab[e];
        tensor_free(&x->w);
        tensor_free(&x->ids);
        free(x->pos);
        free(x->slot);
        free(x->mark);
        sparse_rows_free(&x->leaf);
        sparse_tree_free(&x->tree);
    }
    free(r->tab);
    tensor_free(&r->g[0]);
    tensor_free(&r->g[1]);
    free(r->w);
    free(r->dw);
    free(r->a);
}

/* A language model's data as the trainers check it (train.c): integer
 * tokens [N, ctx] in both datasets, and the batch's in the vocabulary
 * (else the embedding would index outside its table). */
static int ref_check_lm(const struct train_spec *t, const struct shape *fs, enum dtype ft, const struct shape *ls,
                        enum dtype lt, const struct tensor *x, const struct tensor *y)
{
    int64_t V = t->lm.vocab;
    if (fs->ndim != 2 || fs->d[1] != t->lm.ctx || !dtype_is_int(ft) || !shape_eq(fs, ls) || !dtype_is_int(lt))
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s:%d: data: a language model of context %lld "
                             "takes integer tokens [N, %lld] in '%s' and '%s' of %s", t->file, t->data_line,
                             (long long)t->lm.ctx, (long long)t->lm.ctx, t->features, t->labels, t->data_file);
    for (int64_t i = 0, n = tensor_numel(x); i < n; i++) {
        double a = tensor_get(x, i);
        int32_t b = ((const int32_t *)y->data)[i];
        if (a >= 0 && a < (double)V && b >= 0 && b < V) continue;
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s:%d: data: a token of the first batch is "
                             "outside the vocabulary [0, %lld) of model.lm", t->file, t->data_line, (long long)V);
    }
    return 0;
}

int model_reference_grads(const struct train_spec *t, uint64_t seed, const char *out)
{
    int rc = 0, L = t->n_layers, K = t->n_params;
    struct ref r = {.t = t, .L = L, .K = K, .seed = seed};
    struct reader_cache *rd = NULL;
    struct tensor x = {0}, y = {0};
    struct shape fs, ls;
    enum dtype ft, lt;
    int64_t *idx = NULL;
    struct tensor *tmp = NULL;
    int depth = 1; /* sets of partial sums the tree needs */
    r.w = calloc((size_t)K, sizeof *r.w);
    r.dw = calloc((size_t)K, sizeof *r.dw);
    r.a = calloc((size_t)L + 1, sizeof *r.a);
    r.tape = calloc((size_t)L + 1, sizeof *r.tape);
    r.tab = calloc((size_t)t->n_tables + 1, sizeof *r.tab);
    CAIRN_CHECK_ALLOC(r.w && r.dw && r.a && r.tape && r.tab ? r.a : NULL);
    CAIRN_CHECK(ref_params(&r, seed));
    CAIRN_CHECK(reader_cache_create(&rd));
    CAIRN_CHECK(reader_shape(rd, t->data_file, t->features, &fs, &ft));
    CAIRN_CHECK(reader_shape(rd, t->data_file, t->labels, &ls, &lt));
    int64_t n_train = model_train_rows(t, fs.d[0]);
    int64_t batch = n_train < t->batch ? n_train : t->batch, k_targets = ls.ndim == 2 && !t->lm_on ? ls.d[1] : 0;
    idx = malloc((size_t)n_train * sizeof *idx);
    CAIRN_CHECK_ALLOC(idx);
    if (t->shuffle)
        rng_permutation(seed, 0, n_train, idx);
    else
        for (int64_t i = 0; i < n_train; i++) idx[i] = i;
    CAIRN_CHECK(reader_gather(rd, t->data_file, t->features, idx, batch, t->dtype, &x));
    CAIRN_CHECK(reader_gather(rd, t->data_file, t->labels, idx, batch, k_targets ? t->dtype : DT_I32, &y));
    if (t->n_tables) CAIRN_CHECK(ref_tables(&r, rd, seed, idx, batch, &x));
    if (t->lm_on) CAIRN_CHECK(ref_check_lm(t, &fs, ft, &ls, lt, &x, &y));
    for (int64_t n = 1; n < t->chunks; n *= 2) depth++;
    tmp = calloc((size_t)(K * depth) + 1, sizeof *tmp);
    CAIRN_CHECK_ALLOC(tmp);
    CAIRN_CHECK(ref_tree(&r, &x, &y, 0, t->chunks, batch, batch, k_targets, r.dw, tmp));
    CAIRN_CHECK(ref_write(&r, out));
cleanup:
    for (int i = 0; tmp && i < K * depth; i++) tensor_free(&tmp[i]);
    free(tmp);
    ref_free(&r);
    reader_cache_destroy(&rd);
    tensor_free(&x);
    tensor_free(&y);
    free(idx);
    return rc;
}
