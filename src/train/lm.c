/* The decoder block's arithmetic; see include/cairn/lm.h. */
#include "cairn/lm.h"

#include "vmath.h"

#include "cairn/rng.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <string.h>

/* Sample i's dropout key, and the uniform number of element e of a site. */
static uint64_t drop_key(const struct lm_drop *k, int64_t i)
{
    return rng_u64(k->seed, RNG_STREAM_DROPOUT(k->pass), (uint64_t)(k->sample0 + i));
}

static double drop_u(const struct lm_drop *k, uint64_t key, int site, int64_t e)
{
    return rng_uniform(key, (uint64_t)k->layer * LM_DROP_SITES + (uint64_t)site, (uint64_t)e);
}

double lm_drop_uniform(const struct lm_drop *k, int64_t sample, int site, int64_t e)
{
    return drop_u(k, drop_key(k, sample), site, e);
}

#define REAL float
#define SUFFIX _f32
#define GEMM cblas_sgemm
#define SQRT sqrtf
#include "lm_impl.h"
#undef REAL
#undef SUFFIX
#undef GEMM
#undef SQRT

#define REAL double
#define SUFFIX _f64
#define GEMM cblas_dgemm
#define SQRT sqrt
#include "lm_impl.h"
#undef REAL
#undef SUFFIX
#undef GEMM
#undef SQRT

#define NAME_ITEM(e, name) name,
static const char *const names[] = {CAIRN_LM_PARAMS(NAME_ITEM)};

bool lm_shape_ok(const struct lm_shape *s)
{
    if (s->ctx < 1 || s->d < 1 || s->heads < 1 || s->mlp < 1 || s->d % s->heads) return false;
    /* a sequence's attention scores, and a matrix's elements */
    return s->ctx <= INT_MAX / s->ctx && s->d <= INT_MAX / (3 * s->d) && s->d <= INT_MAX / s->mlp;
}

const char *lm_param_name(int k) { return k >= 0 && k < LM_N_PARAMS ? names[k] : "?"; }

void lm_param_shape(const struct lm_shape *s, int k, int64_t *rows, int64_t *cols)
{
    int64_t d = s->d;
    *cols = 1;
    switch (k) {
    case LM_QKV_W: *rows = d, *cols = 3 * d; break;
    case LM_QKV_B: *rows = 3 * d; break;
    case LM_PROJ_W: *rows = d, *cols = d; break;
    case LM_FC_W: *rows = d, *cols = s->mlp; break;
    case LM_FC_B: *rows = s->mlp; break;
    case LM_OUT_W: *rows = s->mlp, *cols = d; break;
    default: *rows = d; break; /* the norms' and the projections' vectors */
    }
}

/* With dropout, the forward's room for an output and a head's kept
 * probabilities (the tape's end), and the backward's for a masked
 * gradient and a head's factors and kept probabilities. */
int64_t lm_tape_numel(const struct lm_shape *s, int64_t n)
{
    int64_t R = n * s->ctx, c2 = s->ctx * s->ctx, dq = att_width_f32(s);
    return R * (4 * s->d + 4 * dq + 2 + 2 * s->mlp) + n * s->heads * c2 +
           (s->drop > 0 || s->parts > 1 ? R * s->d : 0) + (s->drop > 0 ? c2 : 0);
}

int64_t lm_scratch_numel(const struct lm_shape *s, int64_t n)
{
    int64_t R = n * s->ctx, c2 = s->ctx * s->ctx, dq = att_width_f32(s);
    return R * (s->mlp + 2 * s->d + 4 * dq) + c2 + (s->drop > 0 ? R * s->d + 2 * c2 : 0);
}

void lm_block_forward(enum dtype dt, const struct lm_shape *s, int64_t n, const void *x,
                      const void *const *p, void *y, void *tape, const struct lm_drop *drop,
                      const struct lm_tp *tp)
{
    if (!(s->drop > 0)) drop = NULL;
    if (s->parts <= 1) tp = NULL;
    if (dt == DT_F32)
        block_forward_f32(s, n, x, (const float *const *)p, y, tape, drop, tp);
    else
        block_forward_f64(s, n, x, (const double *const *)p, y, tape, drop, tp);
}

void lm_block_backward(enum dtype dt, const struct lm_shape *s, int64_t n, const void *const *p,
                       const void *tape, const void *dy, void *const *dp, bool accumulate, void *dx,
                       void *scratch, const struct lm_drop *drop, const struct lm_tp *tp)
{
    if (!(s->drop > 0)) drop = NULL;
    if (s->parts <= 1) tp = NULL;
    if (dt == DT_F32)
        block_backward_f32(s, n, (const float *const *)p, tape, dy, (float *const *)dp, accumulate, dx, scratch,
                           drop, tp);
    else
        block_backward_f64(s, n, (const double *const *)p, tape, dy, (double *const *)dp, accumulate, dx,
                           scratch, drop, tp);
}

void lm_embed_forward(enum dtype dt, const struct lm_shape *s, int64_t n, const void *tokens,
                      const void *tok, const void *pos, void *y, const struct lm_drop *drop)
{
    if (!(s->drop > 0)) drop = NULL;
    if (dt == DT_F32)
        embed_forward_f32(s, n, tokens, tok, pos, y, drop);
    else
        embed_forward_f64(s, n, tokens, tok, pos, y, drop);
}

void lm_embed_backward(enum dtype dt, const struct lm_shape *s, int64_t vocab, int64_t n,
                       const void *tokens, void *dy, void *dtok, void *dpos, bool accumulate,
                       const struct lm_drop *drop)
{
    if (!(s->drop > 0)) drop = NULL;
    if (dt == DT_F32)
        embed_backward_f32(s, vocab, n, tokens, dy, dtok, dpos, accumulate, drop);
    else
        embed_backward_f64(s, vocab, n, tokens, dy, dtok, dpos, accumulate, drop);
}

int64_t lm_head_tape_numel(const struct lm_shape *s, int64_t n) { return n * s->ctx * (2 * s->d + 1); }
int64_t lm_head_scratch_numel(const struct lm_shape *s, int64_t n) { return 2 * n * s->ctx * s->d; }

void lm_head_forward(enum dtype dt, const struct lm_shape *s, int64_t vocab, int64_t n, const void *x,
                     const void *const *p, void *y, void *tape)
{
    if (dt == DT_F32)
        head_forward_f32(s, vocab, n, x, (const float *const *)p, y, tape);
    else
        head_forward_f64(s, vocab, n, x, (const double *const *)p, y, tape);
}

void lm_head_backward(enum dtype dt, const struct lm_shape *s, int64_t vocab, int64_t n,
                      const void *const *p, const void *tape, const void *dy, void *const *dp,
                      bool accumulate, void *dx, void *scratch)
{
    if (dt == DT_F32)
        head_backward_f32(s, vocab, n, (const float *const *)p, tape, dy, (float *const *)dp, accumulate,
                          dx, scratch);
    else
        head_backward_f64(s, vocab, n, (const double *const *)p, tape, dy, (double *const *)dp, accumulate,
                          dx, scratch);
}

int64_t lm_step_work_numel(const struct lm_shape *s) { return 7 * s->d + s->mlp + s->ctx; }

void lm_block_step(enum dtype dt, const struct lm_shape *s, int64_t t, const void *x, const void *const *p,
                   void *kc, void *vc, void *y, void *work)
{
    if (dt == DT_F32)
        block_step_f32(s, t, x, (const float *const *)p, kc, vc, y, work);
    else
        block_step_f64(s, t, x, (const double *const *)p, kc, vc, y, work);
}

void lm_head_row(enum dtype dt, const struct lm_shape *s, int64_t vocab, const void *x, const void *const *p,
                 void *y, void *work)
{
    if (dt == DT_F32)
        head_row_f32(s, vocab, x, (const float *const *)p, y, work);
    else
        head_row_f64(s, vocab, x, (const double *const *)p, y, work);
}
