/* A language model's model.h5 read back and run over data (infer.h):
 * checked as untrusted input like every model file, then run through the
 * kernels training uses (layer.h), so its held-out loss is the figure the
 * run logged. */
#include "infer_priv.h"

#include "layer.h"

#include "cairn/error.h"
#include "cairn/h5util.h"
#include "cairn/lm.h"
#include "cairn/model.h"
#include "cairn/rng.h"

#include <math.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shape's attributes, each in range, and the spec they make. */
static int read_shape(struct infer_model *m, hid_t f)
{
    int rc = 0;
    struct train_spec *t = &m->spec;
    struct lm_spec *x = &t->lm;
    CAIRN_CHECK(h5_attr_get_i64(f, "vocab", 2, 1 << 24, CAIRN_EINPUT, &x->vocab));
    CAIRN_CHECK(h5_attr_get_i64(f, "context", 1, 1 << 16, CAIRN_EINPUT, &x->ctx));
    CAIRN_CHECK(h5_attr_get_i64(f, "width", 1, 1 << 16, CAIRN_EINPUT, &x->d));
    CAIRN_CHECK(h5_attr_get_i64(f, "heads", 1, 1 << 12, CAIRN_EINPUT, &x->heads));
    CAIRN_CHECK(h5_attr_get_i64(f, "blocks", 1, NN_MAX_LAYERS - 2, CAIRN_EINPUT, &x->blocks));
    CAIRN_CHECK(h5_attr_get_i64(f, "mlp", 1, 1 << 20, CAIRN_EINPUT, &x->mlp));
    struct lm_shape s = {.ctx = x->ctx, .d = x->d, .heads = x->heads, .mlp = x->mlp};
    if (x->d % x->heads || !lm_shape_ok(&s) || x->vocab * x->d > INT_MAX || x->ctx * x->vocab > INT_MAX)
        CAIRN_FAIL(CAIRN_EINPUT, "the attributes' shape (vocab %lld, context %lld, width %lld, heads %lld, mlp "
                                 "%lld) is not one cairn trains",
                   (long long)x->vocab, (long long)x->ctx, (long long)x->d, (long long)x->heads, (long long)x->mlp);
    t->lm_on = true;
    t->dtype = m->dt;
    t->loss = LOSS_SOFTMAX_CE;
    t->inputs = t->width0 = x->ctx;
    t->n_layers = (int)x->blocks + 2;
    t->layers = m->layers;
    t->param0 = m->param0;
    for (int l = 0; l < t->n_layers; l++) {
        enum layer_kind k = l == 0 ? LAYER_LM_EMBED : l == t->n_layers - 1 ? LAYER_LM_HEAD : LAYER_LM_BLOCK;
        m->layers[l] = (struct layer_spec){.kind = k, .units = x->ctx * (k == LAYER_LM_HEAD ? x->vocab : x->d)};
        m->param0[l + 1] = m->param0[l] + model_layer_params(k);
    }
    t->n_params = m->param0[t->n_layers];
cleanup:
    return rc;
}

/* Group path holds exactly n objects (a file with more says something
 * cairn would not read). */
static int count_is(hid_t f, const char *path, hsize_t n)
{
    int rc = 0;
    hid_t g = H5I_INVALID_HID;
    H5G_info_t info;
    CAIRN_CHECK(infer_open_group(f, path, &g));
    CAIRN_CHECK_H5(H5Gget_info(g, &info));
    if (info.nlinks != n)
        CAIRN_FAIL(CAIRN_EINPUT, "%s: it holds %llu objects, not %llu", path, (unsigned long long)info.nlinks,
                   (unsigned long long)n);
cleanup:
    if (g >= 0) H5Gclose(g);
    return rc;
}

/* Layer l's group: /embed, /blocks/<l-1> or /head. */
static void group_of(const struct train_spec *t, int l, char *out, size_t size)
{
    if (l == 0) snprintf(out, size, "/embed");
    else if (l == t->n_layers - 1) snprintf(out, size, "/head");
    else snprintf(out, size, "/blocks/%d", l - 1);
}

int infer_lm_read(struct infer_model *m, hid_t f)
{
    int rc = 0;
    const struct train_spec *t = &m->spec;
    CAIRN_CHECK(read_shape(m, f));
    CAIRN_CHECK(count_is(f, "/", 3));
    CAIRN_CHECK(count_is(f, "/blocks", (hsize_t)t->lm.blocks));
    CAIRN_CHECK_ALLOC(m->p = calloc((size_t)t->n_params, sizeof *m->p));
    for (int l = 0; l < t->n_layers; l++) {
        char g[32];
        group_of(t, l, g, sizeof g);
        CAIRN_CHECK(count_is(f, g, (hsize_t)(t->param0[l + 1] - t->param0[l])));
        for (int k = t->param0[l]; k < t->param0[l + 1]; k++) {
            char name[96], path[160];
            struct shape s;
            model_param_name(t, k, "", name, sizeof name);
            snprintf(path, sizeof path, "%s/%s", g, strchr(name, '.') + 1); /* "L<l>." dropped */
            int nd = model_param_ndim(t, k);
            int64_t rows = model_param_rows(t, k), cols = model_param_cols(t, k);
            CAIRN_CHECK(infer_check_dataset(m, f, path, nd, &s));
            if (s.d[0] != rows || (nd == 2 && s.d[1] != cols)) {
                char want[64];
                snprintf(want, sizeof want, nd == 2 ? "[%lld, %lld]" : "[%lld]", (long long)rows, (long long)cols);
                CAIRN_FAIL(CAIRN_EINPUT, "%s: its shape is not %s, as the attributes give it", path, want);
            }
            CAIRN_CHECK(infer_read_param(m, f, path, rows, cols, &m->p[k]));
        }
    }
cleanup:
    return rc;
}

void infer_lm_free(struct infer_model *m)
{
    for (int k = 0; m->p && k < m->spec.n_params; k++) tensor_free(&m->p[k]);
    free(m->p);
    m->p = NULL;
}

int infer_lm_check_data(const struct infer_model *m, const struct infer_opts *o, int64_t *rows)
{
    int rc = 0;
    const char *ds[2] = {o->features, o->labels};
    for (int i = 0; i < 2 && ds[i]; i++) {
        struct shape s;
        enum dtype dt;
        CAIRN_CHECK(reader_shape(m->rd, o->data, ds[i], &s, &dt));
        if (s.ndim != 2 || s.d[1] != m->spec.lm.ctx || !dtype_is_int(dt))
            CAIRN_FAIL(CAIRN_EINPUT, "dataset '%s' in %s must hold integer tokens [N, %lld] (the model's context)",
                       ds[i], o->data, (long long)m->spec.lm.ctx);
        if (i && s.d[0] != *rows)
            CAIRN_FAIL(CAIRN_EINPUT, "dataset '%s' in %s has %lld rows but '%s' has %lld", ds[i], o->data,
                       (long long)s.d[0], ds[0], (long long)*rows);
        *rows = s.d[0];
    }
cleanup:
    return rc;
}

/* Every token of t (rows from `first`) in the vocabulary. */
static int check_tokens(const struct infer_model *m, const char *data, const char *ds, int64_t first,
                        const struct tensor *t)
{
    int64_t V = m->spec.lm.vocab, C = m->spec.lm.ctx;
    for (int64_t i = 0, n = tensor_numel(t); i < n; i++) {
        double v = tensor_get(t, i);
        if (v >= 0 && v < (double)V) continue;
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "dataset '%s' in %s: row %lld holds token %.0f, "
                             "outside the model's vocabulary [0, %lld)", ds, data, (long long)(first + i / C), v,
                             (long long)V);
    }
    return 0;
}

int infer_lm_forward(const struct infer_model *m, const struct infer_opts *o, int64_t first, int64_t n,
                     struct tensor *work, struct tensor **z)
{
    int rc = 0;
    const struct train_spec *t = &m->spec;
    CAIRN_CHECK(reader_rows(m->rd, o->data, o->features, first, n, m->dt, &work[0]));
    CAIRN_CHECK(check_tokens(m, o->data, o->features, first, &work[0]));
    for (int l = 0; l < t->n_layers; l++) {
        struct tensor *in = &work[l % 2], *out = &work[(l + 1) % 2];
        struct shape s = {.ndim = 2, .d = {n, t->layers[l].units}}, ts = {.ndim = 1, .d = {layer_tape_numel(t, l, n, 1)}};
        CAIRN_CHECK(tensor_resize(out, m->dt, &s));
        CAIRN_CHECK(tensor_resize(&work[2], m->dt, &ts));
        layer_forward(t, l, n, in->data, &m->p[t->param0[l]], out->data, work[2].data, NULL, NULL);
    }
    *z = &work[t->n_layers % 2];
cleanup:
    return rc;
}

int infer_lm_loss(const struct infer_model *m, const struct infer_opts *o, int64_t first, int64_t n,
                  const void *z, struct tensor *y, double *loss, int64_t *correct)
{
    int rc = 0;
    CAIRN_CHECK(reader_rows(m->rd, o->data, o->labels, first, n, DT_I32, y));
    CAIRN_CHECK(check_tokens(m, o->data, o->labels, first, y));
    *loss = layer_loss(&m->spec, n, z, y->data, NULL, n, NULL, correct);
cleanup:
    return rc;
}

/* ---- generation ------------------------------------------------------------- */

struct gen {
    const struct infer_model *m;
    const struct infer_gen *g;
    struct lm_shape s;
    size_t esz;
    char *kc, *vc;           /* [blocks][ctx, d] each */
    char *x, *work, *logits; /* a row, the kernels' work, [vocab] */
    struct tensor full[3];   /* without the cache: the window through the batch kernels */
};

static const void *const *params_of(const struct gen *x, int l, const void **p)
{
    const struct train_spec *t = &x->m->spec;
    for (int k = t->param0[l]; k < t->param0[l + 1]; k++) p[k - t->param0[l]] = x->m->p[k].data;
    return p;
}

/* Token `tok` at position t through the model with the cache: the logits
 * of the next token into x->logits. */
static void step(struct gen *x, int64_t t, int64_t tok)
{
    const struct train_spec *sp = &x->m->spec;
    int64_t d = x->s.d;
    const void *p[MODEL_LAYER_MAX_PARAMS];
    for (int64_t j = 0; j < d; j++) /* the embedding's row, as lm_embed_forward adds it */
        tensor_set(&(struct tensor){.dtype = x->m->dt, .data = x->x}, j,
                   tensor_get(&x->m->p[0], tok * d + j) + tensor_get(&x->m->p[1], t * d + j));
    for (int b = 0; b < sp->lm.blocks; b++) {
        size_t off = (size_t)(b * x->s.ctx * d) * x->esz;
        lm_block_step(x->m->dt, &x->s, t, x->x, params_of(x, b + 1, p), x->kc + off, x->vc + off, x->x, x->work);
    }
    lm_head_row(x->m->dt, &x->s, sp->lm.vocab, x->x, params_of(x, sp->n_layers - 1, p), x->logits, x->work);
}

/* Without the cache: the whole window (n tokens, the rest padded with 0,
 * which causality keeps from mattering) through the batch kernels, the
 * logits of position n-1 into x->logits. */
static int full(struct gen *x, const int64_t *toks, int64_t n)
{
    int rc = 0;
    const struct train_spec *t = &x->m->spec;
    int64_t C = x->s.ctx, V = t->lm.vocab;
    struct shape in = {.ndim = 2, .d = {1, C}};
    CAIRN_CHECK(tensor_resize(&x->full[0], x->m->dt, &in));
    for (int64_t i = 0; i < C; i++) tensor_set(&x->full[0], i, (double)(i < n ? toks[i] : 0));
    for (int l = 0; l < t->n_layers; l++) {
        struct tensor *a = &x->full[l % 2], *b = &x->full[(l + 1) % 2];
        struct shape s = {.ndim = 2, .d = {1, t->layers[l].units}}, ts = {.ndim = 1, .d = {layer_tape_numel(t, l, 1, 1)}};
        CAIRN_CHECK(tensor_resize(b, x->m->dt, &s));
        CAIRN_CHECK(tensor_resize(&x->full[2], x->m->dt, &ts));
        layer_forward(t, l, 1, a->data, &x->m->p[t->param0[l]], b->data, x->full[2].data, NULL, NULL);
    }
    memcpy(x->logits, (char *)x->full[t->n_layers % 2].data + (size_t)((n - 1) * V) * x->esz, (size_t)V * x->esz);
cleanup:
    return rc;
}

/* The next token from x->logits: the largest (the first of equals) at
 * temperature 0; else drawn from the softmax of logits / temperature over
 * the top_k largest (all if 0), with the uniform number keyed by (seed,
 * the token's place), so one seed gives one text.  Logits that overflowed
 * (finite weights, f32 activations) are a runtime error, not a text. */
static int pick(const struct gen *x, int64_t place, double *z, int64_t *order, int64_t *tok)
{
    const struct infer_gen *g = x->g;
    int64_t V = x->m->spec.lm.vocab, best = 0;
    for (int64_t j = 0; j < V; j++) {
        z[j] = tensor_get(&(struct tensor){.dtype = x->m->dt, .data = x->logits}, j);
        if (!isfinite(z[j]))
            return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "the model's logit of token %lld is %g at "
                                 "the %lld-th generated byte", (long long)j, z[j], (long long)place + 1);
        if (z[j] > z[best]) best = j;
    }
    *tok = best;
    if (g->temperature <= 0) return 0;
    int64_t k = g->top_k > 0 && g->top_k < V ? g->top_k : V;
    for (int64_t j = 0; j < V; j++) order[j] = j;
    for (int64_t i = 0; i < k; i++) /* the k largest first (selection: k is small) */
        for (int64_t j = i + 1; j < V; j++)
            if (z[order[j]] > z[order[i]]) {
                int64_t tmp = order[i];
                order[i] = order[j];
                order[j] = tmp;
            }
    double sum = 0, u = rng_uniform(g->seed, RNG_STREAM_GENERATE, (uint64_t)place), at = 0;
    for (int64_t i = 0; i < k; i++) sum += exp((z[order[i]] - z[best]) / g->temperature);
    *tok = order[k - 1];
    for (int64_t i = 0; i < k; i++) {
        at += exp((z[order[i]] - z[best]) / g->temperature) / sum;
        if (u < at) {
            *tok = order[i];
            break;
        }
    }
    return 0;
}

int infer_generate(const struct infer_model *m, const struct infer_gen *g, unsigned char **out, int64_t *n_out)
{
    int rc = 0;
    const struct train_spec *t = &m->spec;
    int64_t C = t->lm.ctx, V = t->lm.vocab, d = t->lm.d, total = g->prompt_len + g->tokens, len = 0, start = 0;
    struct gen x = {.m = m, .g = g, .s = {.ctx = C, .d = d, .heads = t->lm.heads, .mlp = t->lm.mlp},
                    .esz = dtype_size(m->dt)};
    int64_t *toks = NULL, *order = NULL;
    double *z = NULL;
    *out = NULL;
    if (!m->lm) CAIRN_FAIL(CAIRN_EINPUT, "not a language model: generate takes a model of kind 'lm'");
    if (V > 256) CAIRN_FAIL(CAIRN_EINPUT, "its vocabulary has %lld tokens: generate writes byte tokens (256 at most)", (long long)V);
    if (g->prompt_len < 1) CAIRN_FAIL(CAIRN_EINPUT, "the prompt is empty: give at least one byte");
    for (int64_t i = 0; i < g->prompt_len; i++)
        if ((unsigned char)g->prompt[i] >= V)
            CAIRN_FAIL(CAIRN_EINPUT, "the prompt's byte %lld is %d, outside the vocabulary [0, %lld)", (long long)i,
                       (unsigned char)g->prompt[i], (long long)V);
    toks = malloc((size_t)total * sizeof *toks);
    order = malloc((size_t)V * sizeof *order);
    z = malloc((size_t)V * sizeof *z);
    *out = malloc((size_t)total + 1);
    x.kc = malloc((size_t)(t->lm.blocks * C * d) * x.esz);
    x.vc = malloc((size_t)(t->lm.blocks * C * d) * x.esz);
    x.x = malloc((size_t)d * x.esz);
    x.work = malloc((size_t)lm_step_work_numel(&x.s) * x.esz);
    x.logits = malloc((size_t)V * x.esz);
    CAIRN_CHECK_ALLOC(toks && order && z && *out && x.kc && x.vc && x.x && x.work && x.logits ? toks : NULL);
    for (int64_t i = 0; i < g->prompt_len; i++) toks[i] = (unsigned char)g->prompt[i];
    len = g->prompt_len;
    /* the window is toks[start .. len); the cache holds positions 0 .. done-1 of it */
    int64_t done = 0;
    while (len < total) {
        if (len - start > C) { /* full: keep the last half, re-encoded from position 0 */
            start = len - (C / 2 > 0 ? C / 2 : 1);
            done = 0;
        }
        if (g->no_cache) {
            CAIRN_CHECK(full(&x, toks + start, len - start));
        } else {
            for (; done < len - start; done++) step(&x, done, toks[start + done]);
        }
        CAIRN_CHECK(pick(&x, len - g->prompt_len, z, order, &toks[len]));
        len++;
    }
    for (int64_t i = 0; i < len; i++) (*out)[i] = (unsigned char)toks[i];
    *n_out = len;
cleanup:
    if (rc) {
        free(*out);
        *out = NULL;
    }
    free(toks);
    free(order);
    free(z);
    free(x.kc);
    free(x.vc);
    free(x.x);
    free(x.work);
    free(x.logits);
    for (int i = 0; i < 3; i++) tensor_free(&x.full[i]);
    return rc;
}
