/* The decoder block of a GPT-style language model: the arithmetic of one
 * block for a batch of n sequences of ctx positions, forward and backward,
 * f32 or f64.  Row-major; BLAS for the products (one thread per rank).
 *
 *   h = x + Attn(LN1(x)) Wo + bo        causal multi-head self-attention
 *   y = h + GELU(LN2(h) W1 + b1) W2 + b2
 *
 * Attn splits LN1(x) Wqkv + bqkv into queries, keys and values of `heads`
 * heads of d / heads columns each; position i attends to positions <= i
 * of its own sequence, softmax(q k^T / sqrt(d / heads)) v.  Layer norm as
 * PyTorch's (biased variance, eps 1e-5), GELU the exact (erf) one (in
 * f32 within 2.5e-7 times max(1, |u|): src/train/vmath.h).  Every
 * sum runs in a fixed order for a given batch, so the same batch gives the
 * same bits; another batch may not (BLAS may sum another shape in another
 * order), which is why every layout keeps the same micro-batches. */
#ifndef CAIRN_LM_H
#define CAIRN_LM_H

#include "cairn/tensor.h"

#include <stdbool.h>
#include <stdint.h>

struct lm_shape {
    int64_t ctx;   /* positions of a sequence */
    int64_t d;     /* width */
    int64_t heads; /* divides d */
    int64_t mlp;   /* the MLP's hidden width */
    double drop;   /* dropout's probability in training (0: none; the tapes make room for it) */
    /* a block split over `parts` ranks (lm_tp): heads and mlp are this
     * rank's, dh the width of a head (d / all heads), head0 the model's
     * index of its first head; 0 for each when whole */
    int64_t dh, head0, parts;
};

/* Tensor parallelism, as Megatron-LM splits a block: each of the parts
 * holds some heads (their columns of qkv, their rows of proj) and a share
 * of the MLP (columns of fc, rows of out), and the rest whole.  Its
 * products with proj and out, and the input gradients through qkv and fc,
 * are partial sums: sum(ctx, buf, n) must replace buf's n elements, on
 * every part, with the sum over the parts in one fixed order.  The biases
 * of proj and out are added after the sum. */
struct lm_tp {
    void (*sum)(void *ctx, void *buf, int64_t n);
    void *ctx;
};

/* Dropout, in training only (a NULL key elsewhere): GPT-2's four places,
 * the embeddings' sum, the attention's probabilities, and the attention's
 * and the MLP's outputs before their residual sums.  An element is zeroed
 * with probability s->drop and the others are scaled by 1 / (1 - drop).
 * Which ones is a pure function of the job's seed, the pass over the data,
 * the sample's place in that pass, the layer, the place and the element
 * (rng.h's RNG_STREAM_DROPOUT, lm_drop_key), so every layout, replica
 * split and recomputation draws the same mask. */
enum lm_drop_site { LM_DROP_EMBED, LM_DROP_ATTN, LM_DROP_PROJ, LM_DROP_MLP, LM_DROP_SITES };
struct lm_drop {
    uint64_t seed, pass;
    int64_t sample0; /* the batch's first sample's place in its pass */
    int layer;
};
/* The uniform number that decides element e of a sample's site: kept if
 * it is at least the probability. */
double lm_drop_uniform(const struct lm_drop *k, int64_t sample, int site, int64_t e);

/* A block's parameters, in this order.  Matrices are [fan-in, fan-out]
 * (x W), vectors [size]. */
#define CAIRN_LM_PARAMS(X) X(LM_LN1_G, "ln1.g") X(LM_LN1_B, "ln1.b") X(LM_QKV_W, "qkv.W") \
    X(LM_QKV_B, "qkv.b") X(LM_PROJ_W, "proj.W") X(LM_PROJ_B, "proj.b") X(LM_LN2_G, "ln2.g") \
    X(LM_LN2_B, "ln2.b") X(LM_FC_W, "fc.W") X(LM_FC_B, "fc.b") X(LM_OUT_W, "out.W") X(LM_OUT_B, "out.b")
#define CAIRN_LM_ITEM(e, name) e,
enum lm_param { CAIRN_LM_PARAMS(CAIRN_LM_ITEM) LM_N_PARAMS };
#undef CAIRN_LM_ITEM

/* Whether the kernels take s: every size at least 1, heads dividing d, and
 * each product they pass to BLAS within its int. */
bool lm_shape_ok(const struct lm_shape *s);

const char *lm_param_name(int k); /* "?" out of range */
/* Parameter k's rows and columns (a vector: [size, 1]). */
void lm_param_shape(const struct lm_shape *s, int k, int64_t *rows, int64_t *cols);

/* Elements of what a forward keeps for the backward (the tape), and of
 * the backward's scratch, for n sequences. */
int64_t lm_tape_numel(const struct lm_shape *s, int64_t n);
int64_t lm_scratch_numel(const struct lm_shape *s, int64_t n);

/* y[n ctx, d] from x[n ctx, d]; p: the LM_N_PARAMS parameters; tape:
 * lm_tape_numel elements.  s must be lm_shape_ok, and n ctx rows of the
 * widest (the MLP's) within an int. */
void lm_block_forward(enum dtype dt, const struct lm_shape *s, int64_t n, const void *x,
                      const void *const *p, void *y, void *tape, const struct lm_drop *drop,
                      const struct lm_tp *tp);

/* From the forward's tape and dy (the gradient with respect to y):
 * each parameter's gradient into dp[k] (set, or added to if accumulate)
 * and, unless dx is NULL, dx[n ctx, d].  scratch: lm_scratch_numel
 * elements. */
void lm_block_backward(enum dtype dt, const struct lm_shape *s, int64_t n, const void *const *p,
                       const void *tape, const void *dy, void *const *dp, bool accumulate, void *dx,
                       void *scratch, const struct lm_drop *drop, const struct lm_tp *tp);

/* The model's ends (a language model's first and last layers).
 * Embedding: y[n ctx, d] = tok[token] + pos[position], the tokens given as
 * reals [n ctx] (each in [0, vocab): the caller checks); its backward sets
 * (or adds to) dtok [vocab, d] and dpos [ctx, d], rows in order.
 * Head: logits y[n ctx, vocab] = LN(x) W, p = {gain, bias, W [d, vocab]};
 * its tape and scratch as the block's. */
void lm_embed_forward(enum dtype dt, const struct lm_shape *s, int64_t n, const void *tokens,
                      const void *tok, const void *pos, void *y, const struct lm_drop *drop);
/* (dropout masks dy in place) */
void lm_embed_backward(enum dtype dt, const struct lm_shape *s, int64_t vocab, int64_t n,
                       const void *tokens, void *dy, void *dtok, void *dpos, bool accumulate,
                       const struct lm_drop *drop);
int64_t lm_head_tape_numel(const struct lm_shape *s, int64_t n);
int64_t lm_head_scratch_numel(const struct lm_shape *s, int64_t n);
void lm_head_forward(enum dtype dt, const struct lm_shape *s, int64_t vocab, int64_t n, const void *x,
                     const void *const *p, void *y, void *tape);
void lm_head_backward(enum dtype dt, const struct lm_shape *s, int64_t vocab, int64_t n,
                      const void *const *p, const void *tape, const void *dy, void *const *dp,
                      bool accumulate, void *dx, void *scratch);

/* Generation with a cache of keys and values: position t of one sequence
 * through a block, x [d] -> y [d] (may alias), kc and vc [ctx, d] holding
 * positions < t's keys and values and receiving t's; and one row through
 * the head, logits y [vocab].  work: lm_step_work_numel elements.  Sums run
 * in another order than the batch kernels': the same numbers within
 * rounding, not bit for bit. */
int64_t lm_step_work_numel(const struct lm_shape *s);
void lm_block_step(enum dtype dt, const struct lm_shape *s, int64_t t, const void *x, const void *const *p,
                   void *kc, void *vc, void *y, void *work);
void lm_head_row(enum dtype dt, const struct lm_shape *s, int64_t vocab, const void *x, const void *const *p,
                 void *y, void *work);

#endif
