/* One layer's arithmetic, whatever its kind; see src/train/layer.h. */
#include "layer.h"

#include "cairn/lm.h"
#include "cairn/model.h"
#include "cairn/nn.h"

/* A block's shape on member j of T (the whole one: T = 1). */
static struct lm_shape shape_of(const struct train_spec *t, int T, int j)
{
    struct lm_shape s = {.ctx = t->lm.ctx, .d = t->lm.d, .heads = t->lm.heads, .mlp = t->lm.mlp,
                         .drop = t->lm.dropout};
    if (T > 1 && t->lm_on) {
        s.dh = t->lm.d / t->lm.heads;
        s.heads /= T;
        s.mlp /= T;
        s.head0 = j * s.heads;
        s.parts = T;
    }
    return s;
}

/* Layer l's dropout key, or NULL. */
static const struct lm_drop *drop_of(const struct layer_key *key, int l, struct lm_drop *d)
{
    if (!key) return NULL;
    *d = (struct lm_drop){.seed = key->seed, .pass = key->pass, .sample0 = key->sample0, .layer = l};
    return d;
}

static int64_t layer_inputs(const struct train_spec *t, int l) { return l ? t->layers[l - 1].units : t->width0; }

int64_t layer_tape_numel(const struct train_spec *t, int l, int64_t n, int T)
{
    struct lm_shape s = shape_of(t, T, 0);
    switch (t->layers[l].kind) {
    case LAYER_LM_BLOCK: return lm_tape_numel(&s, n);
    case LAYER_LM_HEAD: return lm_head_tape_numel(&s, n);
    default: return 0; /* x and y are enough */
    }
}

int64_t layer_scratch_numel(const struct train_spec *t, int l, int64_t n, int T)
{
    struct lm_shape s = shape_of(t, T, 0);
    switch (t->layers[l].kind) {
    case LAYER_LM_BLOCK: return lm_scratch_numel(&s, n);
    case LAYER_LM_HEAD: return lm_head_scratch_numel(&s, n);
    default: return 0;
    }
}

void layer_forward(const struct train_spec *t, int l, int64_t n, const void *x, const struct tensor *w,
                   void *y, void *tape, const struct layer_key *key, const struct layer_tp *tp)
{
    struct lm_shape s = tp ? shape_of(t, tp->T, tp->member) : shape_of(t, 1, 0);
    struct lm_drop dk;
    const struct lm_drop *k = drop_of(key, l, &dk);
    const void *p[MODEL_LAYER_MAX_PARAMS];
    for (int q = 0; q < model_layer_params(t->layers[l].kind); q++) p[q] = w[q].data;
    switch (t->layers[l].kind) {
    case LAYER_DENSE:
        nn_forward(t->dtype, n, layer_inputs(t, l), t->layers[l].units, x, p[0], p[1], t->layers[l].act, y);
        break;
    case LAYER_LM_EMBED: lm_embed_forward(t->dtype, &s, n, x, p[0], p[1], y, k); break;
    case LAYER_LM_BLOCK: lm_block_forward(t->dtype, &s, n, x, p, y, tape, k, tp ? &tp->sum : NULL); break;
    case LAYER_LM_HEAD: lm_head_forward(t->dtype, &s, t->lm.vocab, n, x, p, y, tape); break;
    }
}

void layer_backward(const struct train_spec *t, int l, int64_t n, const void *x, const void *y,
                    const struct tensor *w, const void *tape, void *dy, struct tensor *const *dw, void *dx,
                    void *scratch, const struct layer_key *key, const struct layer_tp *tp)
{
    struct lm_shape s = tp ? shape_of(t, tp->T, tp->member) : shape_of(t, 1, 0);
    struct lm_drop dk;
    const struct lm_drop *k = drop_of(key, l, &dk);
    const void *p[MODEL_LAYER_MAX_PARAMS];
    void *dp[MODEL_LAYER_MAX_PARAMS];
    for (int q = 0; q < model_layer_params(t->layers[l].kind); q++) p[q] = w[q].data, dp[q] = dw[q]->data;
    switch (t->layers[l].kind) {
    case LAYER_DENSE:
        nn_backward(t->dtype, n, layer_inputs(t, l), t->layers[l].units, x, p[0], y, t->layers[l].act, dy,
                    dp[0], dp[1], dx, false);
        break;
    case LAYER_LM_EMBED: lm_embed_backward(t->dtype, &s, t->lm.vocab, n, x, dy, dp[0], dp[1], false, k); break;
    case LAYER_LM_BLOCK:
        lm_block_backward(t->dtype, &s, n, p, tape, dy, dp, false, dx, scratch, k, tp ? &tp->sum : NULL);
        break;
    case LAYER_LM_HEAD:
        lm_head_backward(t->dtype, &s, t->lm.vocab, n, p, tape, dy, dp, false, dx, scratch);
        break;
    }
}

double layer_loss(const struct train_spec *t, int64_t n, const void *z, const int32_t *labels,
                  const void *targets, int64_t batch, void *dz, int64_t *correct)
{
    if (!t->lm_on)
        return nn_loss(t->dtype, t->loss, n, t->layers[t->n_layers - 1].units, z, labels, targets, batch, dz,
                       correct);
    int64_t c = t->lm.ctx;
    return nn_loss(t->dtype, LOSS_SOFTMAX_CE, n * c, t->lm.vocab, z, labels, NULL, batch * c, dz, correct) /
           (double)c;
}
