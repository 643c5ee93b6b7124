/* Private to the training modules: one layer's arithmetic on one rank,
 * whatever its kind (train_spec.h), for the pipeline stages and the
 * single-process reference alike, so both compute every number the same
 * way.  x [n, in] -> y [n, units] for n samples; w: the layer's
 * parameters (model.h's order).  What the backward needs beyond x and y
 * is kept in a tape of layer_tape_numel elements; the backward's working
 * space is layer_scratch_numel elements. */
#ifndef CAIRN_LAYER_H
#define CAIRN_LAYER_H

#include "cairn/lm.h"
#include "cairn/tensor.h"
#include "cairn/train_spec.h"

#include <stdint.h>

/* Where a training pass's n samples are: dropout's key (lm.h); NULL
 * elsewhere (evaluation: no dropout). */
struct layer_key {
    uint64_t seed, pass;
    int64_t sample0; /* the first sample's place in the pass over the data */
};

/* A stage on T ranks (pipeline.ranks_per_stage): member `member` holds
 * its part of each language model block's parameters (model_param_split)
 * and sums the partial products with the others (lm.h's lm_tp); the
 * other layers are whole on every member.  NULL: the whole model. */
struct layer_tp {
    int T, member;
    struct lm_tp sum;
};

/* T: the parts of a tensor-parallel stage (1: whole). */
int64_t layer_tape_numel(const struct train_spec *t, int l, int64_t n, int T);
int64_t layer_scratch_numel(const struct train_spec *t, int l, int64_t n, int T);
void layer_forward(const struct train_spec *t, int l, int64_t n, const void *x, const struct tensor *w,
                   void *y, void *tape, const struct layer_key *key, const struct layer_tp *tp);
/* dy (overwritten) -> dw[q] = each parameter's gradient, and, unless dx
 * is NULL, dx [n, in].  A language model's embedding layer takes tokens
 * and has no dx.  key: the forward's. */
void layer_backward(const struct train_spec *t, int l, int64_t n, const void *x, const void *y,
                    const struct tensor *w, const void *tape, void *dy, struct tensor *const *dw, void *dx,
                    void *scratch, const struct layer_key *key, const struct layer_tp *tp);

/* The loss of the model's outputs z for n samples against their labels
 * (a language model: each sample's ctx next tokens) or targets; as
 * nn_loss, the sum of the samples' losses (a language model's: the mean
 * over its positions), dz (unless NULL) averaged over the `batch` samples
 * of the whole mini-batch, and *correct the right predictions (a language
 * model's: tokens). */
double layer_loss(const struct train_spec *t, int64_t n, const void *z, const int32_t *labels,
                  const void *targets, int64_t batch, void *dz, int64_t *correct);

#endif
