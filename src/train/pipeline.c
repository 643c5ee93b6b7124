/* One pipeline stage's part of a training step or an evaluation batch.
 *
 * A mini-batch is split into M = `chunks` micro-batches (balanced; empty
 * ones are skipped by every stage alike), whatever the number of replicas
 * R: replica r runs micro-batches r M/R .. (r+1) M/R - 1 (R, a power of
 * two, divides M).  Their gradients are added over one fixed tree (see
 * "the gradient tree" below), so a step's gradient does not depend on R.
 * Schedules: gpipe runs every forward, then every backward; 1f1b runs
 * S-s-1 forwards, then alternates one forward and one backward, then the
 * remaining backwards.  Both run backwards in micro-batch order, so the
 * gradients accumulate in the same order and are the same bit for bit.
 *
 * Activation checkpointing ("always", "except_last", "never"): a
 * checkpointed micro-batch keeps only its stage input (and output) from
 * the forward pass, and its backward recomputes the layers in between.
 *
 * A stage on T ranks (grid.c) computes its dense layers on a grid:
 * activations and gradients arrive and leave whole on member 0, which
 * scatters them onto the grid and gathers them back (the members' "local"
 * tensors below); with T = 1 the local tensors are the whole ones.  A
 * language model's stage on T ranks keeps them whole on every member
 * (member 0 broadcasts what arrives) and splits its blocks' heads and MLP
 * (layer.h's layer_tp; the sums: members_sum).
 *
 * Messages: every receive a step needs is posted when it starts, sends are
 * non-blocking, so transfers overlap compute and no order of arrivals can
 * deadlock.  The step's last backward hands each layer's finished gradient
 * to the PS protocol (ps.c) as it goes.  Tags: 2i for micro-batch i's activations, 2i+1 for its
 * gradients, on the replica's pipe communicator (rank = stage). */
#include "train_priv.h"

#include "layer.h"

#include "cairn/coll.h"
#include "cairn/clock.h"
#include "cairn/error.h"
#include "cairn/nn.h"
#include "cairn/partition.h"
#include "cairn/plan.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mb {
    int64_t n, off;     /* rows of the replica's share */
    bool train;         /* a training step's: dropout keyed by key (layer.h) */
    struct layer_key key;
    struct tensor in;   /* stage input (received; the first stage points into the batch) */
    struct tensor out;  /* stage output (sent on, or the logits) */
    struct tensor gin;  /* gradient with respect to out (received, or from the loss) */
    struct tensor gout; /* gradient with respect to in (sent back) */
    struct tensor *act; /* outputs of the stage's inner layers, if kept (local) */
    struct tensor *tape; /* each layer's tape (layer.h), if kept */
    /* T > 1: this member's rows of in, out, gin and gout */
    struct tensor lin, lout, lgin, lgout;
};

/* The gradient tree: one layer's partial sums, a stack of nodes. */
enum { GSUM_MAX = 64 }; /* > log2 of any M, + 1 */
struct gsum {
    int n, np;                          /* nodes; parameters of the layer */
    int64_t lo[GSUM_MAX], hi[GSUM_MAX]; /* node k covers micro-batches lo .. hi-1 */
    struct tensor *v;                   /* node k's are v[k np ..]; node 0's are dw itself */
};

struct pipe_bufs {
    int m;          /* this replica's micro-batches (M / R) */
    struct mb *mb;
    struct gsum *gs; /* by layer of the stage */
    struct tensor *scratch; /* recomputed inner activations ([L]: a recomputed output) */
    struct tensor *tape;    /* recomputed tapes */
    struct tensor work;     /* a backward's scratch (layer.h) */
    struct tensor g[2];     /* gradients between layers */
    MPI_Request *rin, *rg, *sout, *sg;
    /* a language model's stage on T > 1 ranks: its blocks' partial sums (layer.h) */
    struct layer_tp tp;
    struct tensor sum; /* every member's part of one */
    int sum_rc;        /* the first error of one */
};

static int n_local(const struct trainer *t) { return t->l1 - t->l0; }
/* A language model's stage on T > 1 ranks: activations whole on every
 * member, blocks split by heads and MLP (layer.h), the rest computed alike
 * on each. */
static bool lm_split(const struct trainer *t) { return t->T > 1 && t->spec->lm_on; }
static int parts(const struct trainer *t) { return lm_split(t) ? t->T : 1; }
static int64_t dim(const struct trainer *t, int j) { return t->tp->dims[t->l0 + j]; }

/* lm_tp's sum (lm.h): the members' n elements of buf, gathered and added
 * in member order, so that every member holds the same bits.  An error is
 * kept for the caller (pipe_bufs.sum_rc) and skips the later sums. */
static void members_sum(void *ctx, void *buf, int64_t n)
{
    struct trainer *t = ctx;
    struct pipe_bufs *p = t->bufs;
    int rc = 0, T = t->T;
    MPI_Request req = MPI_REQUEST_NULL;
    if (p->sum_rc) return;
    if (n > INT_MAX / T)
        CAIRN_FAIL(CAIRN_ERUNTIME, "a partial sum of %lld elements on %d ranks is too large for one MPI call",
                   (long long)n, T);
    struct shape s = {.ndim = 1, .d = {n * T}};
    if (tensor_numel(&p->sum) < s.d[0]) CAIRN_CHECK(tensor_resize(&p->sum, t->dt, &s));
    CAIRN_CHECK_MPI(MPI_Iallgather(buf, (int)n, coll_type(t->dt), p->sum.data, (int)n, coll_type(t->dt),
                                   t->members, &req));
    CAIRN_CHECK(coll_wait(1, &req));
    if (t->dt == DT_F64) {
        double *v = buf, *g = p->sum.data;
        for (int64_t e = 0; e < n; e++) v[e] = g[e];
        for (int j = 1; j < T; j++)
            for (int64_t e = 0; e < n; e++) v[e] += g[j * n + e];
    } else {
        float *v = buf, *g = p->sum.data;
        for (int64_t e = 0; e < n; e++) v[e] = g[e];
        for (int j = 1; j < T; j++)
            for (int64_t e = 0; e < n; e++) v[e] += g[j * n + e];
    }
cleanup:
    p->sum_rc = rc;
}

int pipe_create(struct trainer *t)
{
    int rc = 0, m = t->mb_hi - t->mb_lo, L = n_local(t);
    struct pipe_bufs *p = calloc(1, sizeof *p);
    CAIRN_CHECK_ALLOC(p);
    t->bufs = p;
    p->m = m;
    p->mb = calloc((size_t)m, sizeof *p->mb);
    p->gs = calloc((size_t)L + 1, sizeof *p->gs);
    t->mb_loss = calloc((size_t)m + 1, sizeof *t->mb_loss);
    CAIRN_CHECK_ALLOC(p->gs && t->mb_loss ? p->gs : NULL);
    p->scratch = calloc((size_t)L + 1, sizeof *p->scratch);
    p->rin = calloc((size_t)m, sizeof *p->rin);
    p->rg = calloc((size_t)m, sizeof *p->rg);
    p->sout = calloc((size_t)m, sizeof *p->sout);
    p->sg = calloc((size_t)m, sizeof *p->sg);
    CAIRN_CHECK_ALLOC(p->mb);
    CAIRN_CHECK_ALLOC(p->scratch);
    CAIRN_CHECK_ALLOC(p->rin && p->rg && p->sout && p->sg ? p->rin : NULL);
    p->tape = calloc((size_t)L + 1, sizeof *p->tape);
    CAIRN_CHECK_ALLOC(p->tape);
    for (int i = 0; i < m; i++) {
        p->mb[i].act = calloc((size_t)L + 1, sizeof *p->mb[i].act);
        p->mb[i].tape = calloc((size_t)L + 1, sizeof *p->mb[i].tape);
        CAIRN_CHECK_ALLOC(p->mb[i].act && p->mb[i].tape ? p->mb[i].act : NULL);
    }
    for (int j = 0; j < L; j++) {
        struct gsum *g = &p->gs[j];
        g->np = param_first(t, t->l0 + j + 1) - param_first(t, t->l0 + j);
        g->v = calloc((size_t)(GSUM_MAX * g->np), sizeof *g->v);
        CAIRN_CHECK_ALLOC(g->v);
    }
    p->tp = (struct layer_tp){.T = t->T, .member = t->member, .sum = {.sum = members_sum, .ctx = t}};
cleanup:
    return rc;
}

void pipe_destroy(struct trainer *t)
{
    struct pipe_bufs *p = t->bufs;
    if (!p) return;
    for (int i = 0; p->mb && i < p->m; i++) {
        struct mb *b = &p->mb[i];
        tensor_free(&b->in);
        tensor_free(&b->out);
        tensor_free(&b->gin);
        tensor_free(&b->gout);
        tensor_free(&b->lin);
        tensor_free(&b->lout);
        tensor_free(&b->lgin);
        tensor_free(&b->lgout);
        for (int j = 0; b->act && j <= n_local(t); j++) tensor_free(&b->act[j]);
        for (int j = 0; b->tape && j <= n_local(t); j++) tensor_free(&b->tape[j]);
        free(b->act);
        free(b->tape);
    }
    for (int j = 0; p->scratch && j <= n_local(t); j++) tensor_free(&p->scratch[j]);
    for (int j = 0; p->tape && j <= n_local(t); j++) tensor_free(&p->tape[j]);
    free(p->tape);
    tensor_free(&p->work);
    tensor_free(&p->sum);
    for (int j = 0; p->gs && j < n_local(t); j++) {
        for (int k = 0; p->gs[j].v && k < GSUM_MAX * p->gs[j].np; k++) tensor_free(&p->gs[j].v[k]);
        free(p->gs[j].v);
    }
    free(p->gs);
    free(t->mb_loss);
    t->mb_loss = NULL;
    tensor_free(&p->g[0]);
    tensor_free(&p->g[1]);
    free(p->mb);
    free(p->scratch);
    free(p->rin);
    free(p->rg);
    free(p->sout);
    free(p->sg);
    free(p);
    t->bufs = NULL;
}

static int shape2(struct tensor *x, enum dtype dt, int64_t rows, int64_t cols)
{
    struct shape s = {.ndim = 2, .d = {rows, cols}};
    if (x->dtype == dt && shape_eq(&x->shape, &s)) return 0;
    return tensor_resize(x, dt, &s);
}

static bool keeps(const struct trainer *t, int i)
{
    switch (t->spec->recompute) {
    case RECOMPUTE_NEVER: return true;
    case RECOMPUTE_ALWAYS: return false;
    case RECOMPUTE_EXCEPT_LAST: return i == t->bufs->m - 1;
    }
    return true;
}

static void *row(const struct trainer *t, const struct tensor *x, int64_t r, int64_t cols)
{
    return (char *)x->data + (size_t)(r * cols) * t->esz;
}

/* Does this rank talk to the neighbouring stages (member 0)? */
static bool talks(const struct trainer *t) { return t->pipe != MPI_COMM_NULL; }

/* This member's part of a whole micro-batch tensor (the whole one, T = 1). */
static struct tensor *local(const struct trainer *t, struct tensor *whole, struct tensor *part)
{
    return grid_split(t) ? part : whole;
}

/* The first stage's input: a view of the batch rows on member 0, no copy. */
static void view_input(struct trainer *t, struct batch *bt, struct mb *b)
{
    if (!t->first || !talks(t)) return;
    b->in = (struct tensor){.dtype = t->dt, .shape = {.ndim = 2, .d = {b->n, dim(t, 0)}},
                            .data = row(t, &bt->x, b->off, dim(t, 0))};
}

static void unview_input(struct trainer *t, struct mb *b)
{
    if (t->first && talks(t)) b->in = (struct tensor){0}; /* the view is not ours to free */
}

/* Whole (member 0) to local, with T > 1. */
static int scatter(struct trainer *t, int64_t n, int64_t d, struct tensor *whole,
                   struct tensor *part)
{
    int rc = 0;
    if (lm_split(t)) { /* whole on every member */
        MPI_Request req = MPI_REQUEST_NULL;
        if (n * d > INT_MAX) CAIRN_FAIL(CAIRN_ERUNTIME, "%lld x %lld activations are too many for one MPI call",
                                        (long long)n, (long long)d);
        if (!talks(t)) CAIRN_CHECK(shape2(whole, t->dt, n, d));
        CAIRN_CHECK_MPI(MPI_Ibcast(whole->data, (int)(n * d), coll_type(t->dt), 0, t->members, &req));
        return coll_wait(1, &req);
    }
    if (!grid_split(t)) return 0;
    CAIRN_CHECK(shape2(part, t->dt, n, grid_cols(t, d)));
    CAIRN_CHECK(grid_scatter(t, n, d, talks(t) ? whole->data : NULL, part->data));
cleanup:
    return rc;
}

/* Local to whole (member 0), with T > 1. */
static int gather(struct trainer *t, int64_t n, int64_t d, struct tensor *part,
                  struct tensor *whole)
{
    int rc = 0;
    if (!grid_split(t)) return 0;
    if (talks(t)) CAIRN_CHECK(shape2(whole, t->dt, n, d));
    CAIRN_CHECK(grid_gather(t, n, d, part->data, talks(t) ? whole->data : NULL));
cleanup:
    return rc;
}

/* ---- one layer, on one rank or on the stage's grid ---------------------------- */

/* Layer j's parameters: the first of them (the stage's local ones follow). */
static struct tensor *params(struct trainer *t, int j) { return &t->w[param_first(t, t->l0 + j)]; }

static bool dense(const struct trainer *t, int j) { return t->spec->layers[t->l0 + j].kind == LAYER_DENSE; }
/* Does layer j keep a tape (so a recomputation must run it too)? */
static bool taped(const struct trainer *t, int j) { return layer_tape_numel(t->spec, t->l0 + j, 1, 1) > 0; }

static const struct layer_key *key_of(const struct mb *b) { return b->train ? &b->key : NULL; }
static const struct layer_tp *tp_of(const struct trainer *t) { return lm_split(t) ? &t->bufs->tp : NULL; }

static int layer_fwd(struct trainer *t, int j, const struct mb *b, const void *x, void *y, void *tape)
{
    enum act a = t->spec->layers[t->l0 + j].act;
    struct tensor *w = params(t, j);
    if (grid_split(t)) /* dense layers only (config_train.c) */
        return grid_forward(t, b->n, dim(t, j), dim(t, j + 1), x, w[0].data, w[1].data, a, y);
    layer_forward(t->spec, t->l0 + j, b->n, x, w, y, tape, key_of(b), tp_of(t));
    return t->bufs->sum_rc;
}

/* One micro-batch's gradients of layer j, into g (its parameters', overwritten). */
static int layer_backward_params(struct trainer *t, int j, int64_t n, const void *x,
                                 const void *y, void *dy, struct tensor **g)
{
    enum act a = t->spec->layers[t->l0 + j].act;
    if (grid_split(t))
        return grid_backward_params(t, n, dim(t, j), dim(t, j + 1), x, y, a, dy, g[0]->data, g[1]->data,
                                    false);
    nn_backward_params(t->dt, n, dim(t, j), dim(t, j + 1), x, y, a, dy, g[0]->data, g[1]->data, false);
    return 0;
}

/* ---- the gradient tree ------------------------------------------------------------
 * A step's gradient of a parameter is the sum of its micro-batches'
 * gradients over the bisection tree of [0, M): node [lo, hi) is [lo, mid)
 * + [mid, hi) with mid = lo + ceil((hi - lo) / 2) (partition.h).  Replica r's
 * micro-batches [mb_lo, mb_hi) are one node of it (R is a power of two
 * that divides M), which it sums here as the backwards end, in
 * micro-batch order (a stack: two nodes that are halves of one are added
 * at once); ps.c adds the replicas' sums over the tree's top.  Every
 * addition is one IEEE add of two fixed operands, so the step's gradient
 * is the same bits whatever R.  Skipped (empty) micro-batches are zeros. */

/* Node k's gradient of layer j's parameter q. */
static struct tensor *node(struct trainer *t, int j, int k, int q)
{
    struct gsum *g = &t->bufs->gs[j];
    return k ? &g->v[k * g->np + q] : &t->dw[param_first(t, t->l0 + j) + q];
}

static void tree_reset(struct trainer *t)
{
    for (int j = 0; j < n_local(t); j++) t->bufs->gs[j].n = 0;
}

/* Add the top two nodes of layer j's stack while they are halves of one. */
static int tree_fold(struct trainer *t, int j)
{
    int rc = 0;
    struct gsum *g = &t->bufs->gs[j];
    while (g->n >= 2 && bisect_halves(t->mb_lo, t->mb_hi, g->lo[g->n - 2], g->hi[g->n - 2], g->hi[g->n - 1])) {
        int k = g->n - 1;
        for (int q = 0; q < g->np; q++)
            CAIRN_CHECK(tensor_add(node(t, j, k - 1, q), node(t, j, k - 1, q), node(t, j, k, q)));
        g->hi[k - 1] = g->hi[k];
        g->n--;
    }
cleanup:
    return rc;
}

/* The next node on layer j's stack, for micro-batch i (zero nodes for the
 * skipped ones before it are added first): w[q] receives its gradient of
 * the layer's parameter q, then tree_fold. */
static int tree_leaf(struct trainer *t, int j, int64_t i, struct tensor **w)
{
    int rc = 0;
    struct gsum *g = &t->bufs->gs[j];
    for (;;) {
        int64_t next = g->n ? g->hi[g->n - 1] : t->mb_lo;
        if (g->n >= GSUM_MAX || next > i)
            return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "gradient tree out of order");
        int k = g->n;
        for (int q = 0; q < g->np; q++) {
            struct tensor *d = node(t, j, 0, q), *x = node(t, j, k, q);
            if (k && (x->dtype != d->dtype || !shape_eq(&x->shape, &d->shape)))
                CAIRN_CHECK(tensor_resize(x, d->dtype, &d->shape));
            w[q] = x;
        }
        g->lo[k] = next;
        g->hi[k] = next + 1;
        g->n++;
        if (next == i) break;
        for (int q = 0; q < g->np; q++) tensor_fill(w[q], 0); /* a skipped micro-batch */
        CAIRN_CHECK(tree_fold(t, j));
    }
cleanup:
    return rc;
}

/* Layer j's sum over all the replica's micro-batches, into the parameters' gradients. */
static int tree_close(struct trainer *t, int j)
{
    int rc = 0;
    struct gsum *g = &t->bufs->gs[j];
    struct tensor *w[MODEL_LAYER_MAX_PARAMS];
    if (g->n == 0 || g->hi[g->n - 1] < t->mb_hi) { /* zeros for the skipped ones at the end */
        CAIRN_CHECK(tree_leaf(t, j, t->mb_hi - 1, w));
        for (int q = 0; q < g->np; q++) tensor_fill(w[q], 0);
        CAIRN_CHECK(tree_fold(t, j));
    }
    if (g->n != 1 || g->lo[0] != t->mb_lo || g->hi[0] != t->mb_hi)
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "gradient tree left unfinished");
cleanup:
    return rc;
}

int pipe_grads_close(struct trainer *t, int l) { return tree_close(t, l - t->l0); }

static int layer_backward_input(struct trainer *t, int j, int64_t n, const void *dy, void *dx)
{
    const void *W = params(t, j)[0].data;
    if (grid_split(t)) return grid_backward_input(t, n, dim(t, j), dim(t, j + 1), W, dy, dx);
    nn_backward_input(t->dt, n, dim(t, j), dim(t, j + 1), W, dy, dx);
    return 0;
}

/* Inner activation j (1 .. L-1) of micro-batch i: kept, or recomputed into scratch. */
static struct tensor *inner(struct trainer *t, int i, int j, bool kept)
{
    return kept ? &t->bufs->mb[i].act[j] : &t->bufs->scratch[j];
}

/* Layer j's tape of micro-batch i, sized for it. */
static int tape_of(struct trainer *t, int i, int j, bool kept, struct tensor **tape)
{
    struct tensor *x = kept ? &t->bufs->mb[i].tape[j] : &t->bufs->tape[j];
    struct shape s = {.ndim = 1, .d = {layer_tape_numel(t->spec, t->l0 + j, t->bufs->mb[i].n, parts(t))}};
    *tape = x;
    if (x->dtype == t->dt && shape_eq(&x->shape, &s)) return 0;
    return tensor_resize(x, t->dt, &s);
}

/* The backward's scratch for layer j and n samples. */
static int work(struct trainer *t, int j, int64_t n)
{
    struct shape s = {.ndim = 1, .d = {layer_scratch_numel(t->spec, t->l0 + j, n, parts(t))}};
    if (s.d[0] <= tensor_numel(&t->bufs->work)) return 0;
    return tensor_resize(&t->bufs->work, t->dt, &s);
}

/* Forward through the stage's layers from its (local) input; inner
 * activations and tapes go to kept or scratch storage, the last layer's
 * output into the (local) output.  A recomputation (`again`) never
 * rewrites the output, whose send may still be in flight: it stops before
 * the last layer unless that one keeps a tape, whose output then goes to
 * scratch. */
static int forward(struct trainer *t, int i, bool kept, bool again)
{
    int rc = 0, L = n_local(t);
    struct mb *b = &t->bufs->mb[i];
    const void *x = local(t, &b->in, &b->lin)->data;
    int upto = again && !taped(t, L - 1) ? L - 1 : L;
    for (int j = 0; j < upto; j++) {
        struct tensor *y = j < L - 1 ? inner(t, i, j + 1, kept) : again ? &t->bufs->scratch[L] : local(t, &b->out, &b->lout);
        struct tensor *tape;
        CAIRN_CHECK(shape2(y, t->dt, b->n, grid_cols(t, dim(t, j + 1))));
        CAIRN_CHECK(tape_of(t, i, j, kept, &tape));
        CAIRN_CHECK(ps_pull_layer(t, t->l0 + j)); /* the later layers' arrive meanwhile */
        CAIRN_CHECK(layer_fwd(t, j, b, x, y->data, tape->data));
        x = y->data;
    }
cleanup:
    return rc;
}

/* ---- posting and finishing transfers ------------------------------------------ */

static int post_receives(struct trainer *t)
{
    int rc = 0, L = n_local(t);
    struct pipe_bufs *p = t->bufs;
    for (int i = 0; i < p->m; i++) {
        struct mb *b = &p->mb[i];
        p->rin[i] = p->rg[i] = p->sout[i] = p->sg[i] = MPI_REQUEST_NULL;
        if (b->n == 0 || !talks(t)) continue;
        MPI_Datatype real = coll_type(t->dt);
        if (!t->first) {
            CAIRN_CHECK(shape2(&b->in, t->dt, b->n, dim(t, 0)));
            CAIRN_CHECK_MPI(MPI_Irecv(b->in.data, (int)(b->n * dim(t, 0)), real, t->stage - 1,
                                      2 * i, t->pipe, &p->rin[i]));
        }
        if (!t->last) {
            CAIRN_CHECK(shape2(&b->gin, t->dt, b->n, dim(t, L)));
            CAIRN_CHECK_MPI(MPI_Irecv(b->gin.data, (int)(b->n * dim(t, L)), real, t->stage + 1,
                                      2 * i + 1, t->pipe, &p->rg[i]));
        }
    }
cleanup:
    return rc;
}

static int finish(struct trainer *t)
{
    struct pipe_bufs *p = t->bufs;
    int rc = coll_wait(p->m, p->sout);
    return rc ? rc : coll_wait(p->m, p->sg);
}

/* ---- the two halves of a micro-batch --------------------------------------------- */

/* The last stage's loss on member 0, and its gradient onto the grid. */
static int loss(struct trainer *t, struct batch *bt, struct mb *b)
{
    int rc = 0;
    int64_t correct, k = dim(t, n_local(t));
    if (talks(t)) {
        CAIRN_CHECK(shape2(&b->gin, t->dt, b->n, k));
        int64_t per = t->spec->lm_on ? t->spec->lm.ctx : 1; /* labels of a sample */
        const int32_t *labels = t->k_targets ? NULL : (const int32_t *)bt->y.data + b->off * per;
        const void *targets = t->k_targets ? row(t, &bt->y, b->off, k) : NULL;
        t->mb_loss[b - t->bufs->mb] = layer_loss(t->spec, b->n, b->out.data, labels, targets, bt->global,
                                                 b->gin.data, &correct);
    }
    CAIRN_CHECK(scatter(t, b->n, k, &b->gin, &b->lgin));
cleanup:
    return rc;
}

static int do_forward(struct trainer *t, struct batch *bt, int i)
{
    int rc = 0, L = n_local(t);
    struct pipe_bufs *p = t->bufs;
    struct mb *b = &p->mb[i];
    MPI_Datatype real = coll_type(t->dt);
    view_input(t, bt, b);
    if (!t->first) CAIRN_CHECK(coll_wait(1, &p->rin[i]));
    CAIRN_CHECK(scatter(t, b->n, dim(t, 0), &b->in, &b->lin));
    CAIRN_CHECK(forward(t, i, keeps(t, i), false));
    CAIRN_CHECK(gather(t, b->n, dim(t, L), &b->lout, &b->out));
    if (!t->last && talks(t))
        CAIRN_CHECK_MPI(MPI_Isend(b->out.data, (int)tensor_numel(&b->out), real, t->stage + 1,
                                  2 * i, t->pipe, &p->sout[i]));
    if (t->last) CAIRN_CHECK(loss(t, bt, b));
cleanup:
    unview_input(t, b);
    return rc;
}

/* Backward of micro-batch i.  Its parameter gradients join the gradient
 * tree; after the step's last, each layer's are final as soon as they are
 * computed, and go to the other replicas and the shards at once. */
static int do_backward(struct trainer *t, struct batch *bt, int i, bool last_of_step)
{
    int rc = 0, L = n_local(t);
    struct pipe_bufs *p = t->bufs;
    struct mb *b = &p->mb[i];
    bool kept = keeps(t, i);
    int64_t n = b->n;
    MPI_Datatype real = coll_type(t->dt);
    view_input(t, bt, b);
    if (!kept) CAIRN_CHECK(forward(t, i, false, true)); /* recompute the inner layers */
    if (!t->last) {
        CAIRN_CHECK(coll_wait(1, &p->rg[i]));
        CAIRN_CHECK(scatter(t, n, dim(t, L), &b->gin, &b->lgin));
    }
    struct tensor *g = local(t, &b->gin, &b->lgin);
    for (int j = L - 1; j >= 0; j--) {
        int l = t->l0 + j;
        const struct tensor *x = j == 0 ? local(t, &b->in, &b->lin) : inner(t, i, j, kept);
        const struct tensor *y = j < L - 1 ? inner(t, i, j + 1, kept) : !kept && taped(t, j) ? &p->scratch[L] : local(t, &b->out, &b->lout);
        struct tensor *dx = NULL;
        if (j > 0) dx = &p->g[j % 2];
        else if (!t->first || t->spec->n_tables) dx = local(t, &b->gout, &b->lgout); /* tables: their rows' */
        if (dx) CAIRN_CHECK(shape2(dx, t->dt, n, grid_cols(t, dim(t, j))));
        struct tensor *gw[MODEL_LAYER_MAX_PARAMS], *tape;
        CAIRN_CHECK(tree_leaf(t, j, t->mb_lo + i, gw));
        if (dense(t, j)) {
            CAIRN_CHECK(layer_backward_params(t, j, n, x->data, y->data, g->data, gw));
        } else {
            CAIRN_CHECK(tape_of(t, i, j, kept, &tape));
            CAIRN_CHECK(work(t, j, n));
            layer_backward(t->spec, l, n, x->data, y->data, params(t, j), tape->data, g->data, gw,
                           dx ? dx->data : NULL, p->work.data, key_of(b), tp_of(t));
            CAIRN_CHECK(p->sum_rc);
        }
        CAIRN_CHECK(tree_fold(t, j));
        /* the reduction and the shards' update of this layer go on while
         * the input gradient is computed */
        if (last_of_step) {
            CAIRN_CHECK(tree_close(t, j));
            CAIRN_CHECK(ps_push_layer(t, l));
        }
        if (dx && dense(t, j)) CAIRN_CHECK(layer_backward_input(t, j, n, g->data, dx->data));
        g = dx;
    }
    if (!t->first || t->spec->n_tables) CAIRN_CHECK(gather(t, n, dim(t, 0), &b->lgout, &b->gout));
    if (!t->first && talks(t))
        CAIRN_CHECK_MPI(MPI_Isend(b->gout.data, (int)tensor_numel(&b->gout), real, t->stage - 1,
                                  2 * i + 1, t->pipe, &p->sg[i]));
    if (t->first && talks(t) && t->spec->n_tables) /* the tables' rows' gradients */
        CAIRN_CHECK(emb_backward(t, t->mb_lo + i, b->off, n, b->gout.data));
cleanup:
    unview_input(t, b);
    return rc;
}

/* ---- schedules ---------------------------------------------------------------------- */

static int run_schedule(struct trainer *t, struct batch *bt)
{
    int rc = 0, m = t->bufs->m, S = t->tp->stages;
    int *ids = malloc((size_t)m * sizeof *ids), n = 0;
    CAIRN_CHECK_ALLOC(ids);
    for (int i = 0; i < m; i++)
        if (t->bufs->mb[i].n > 0) ids[n++] = i; /* every stage skips the same empty ones */
    if (t->spec->schedule == SCHEDULE_GPIPE) {
        for (int f = 0; f < n; f++) CAIRN_CHECK(do_forward(t, bt, ids[f]));
        for (int b = 0; b < n; b++) CAIRN_CHECK(do_backward(t, bt, ids[b], b == n - 1));
    } else {
        int warm = S - t->stage - 1 < n ? S - t->stage - 1 : n, f = 0, b = 0;
        for (; f < warm; f++) CAIRN_CHECK(do_forward(t, bt, ids[f]));
        for (; f < n; f++, b++) {
            CAIRN_CHECK(do_forward(t, bt, ids[f]));
            CAIRN_CHECK(do_backward(t, bt, ids[b], b == n - 1));
        }
        for (; b < n; b++) CAIRN_CHECK(do_backward(t, bt, ids[b], b == n - 1));
    }
cleanup:
    free(ids);
    return rc;
}

int pipe_step(struct trainer *t, struct batch *bt)
{
    int rc = 0;
    double t0 = clock_now();
    struct pipe_bufs *p = t->bufs;
    int64_t first, end;
    part_range(bt->global, t->M, t->mb_lo, &first, &end); /* the replica's rows start at first */
    for (int i = 0; i < p->m; i++) {
        int64_t lo, hi;
        part_range(bt->global, t->M, t->mb_lo + i, &lo, &hi);
        p->mb[i].off = lo - first;
        p->mb[i].n = hi - lo;
        p->mb[i].train = true;
        p->mb[i].key = (struct layer_key){
            .seed = bt->seed, .pass = (uint64_t)bt->pass, .sample0 = bt->pos + lo};
        t->mb_loss[i] = 0;
    }
    tree_reset(t);
    CAIRN_CHECK(post_receives(t));
    CAIRN_CHECK(run_schedule(t, bt));
    CAIRN_CHECK(finish(t));
cleanup:
    t->pipe_seconds += clock_now() - t0;
    return rc;
}

/* Forward only, the whole batch as one piece, for evaluation. */
int pipe_eval(struct trainer *t, struct batch *bt, double *loss_sum, int64_t *correct, double *score)
{
    int rc = 0, L = n_local(t);
    struct mb *b = &t->bufs->mb[0];
    MPI_Datatype real = coll_type(t->dt);
    b->n = bt->n;
    b->off = 0;
    b->train = false;
    if (bt->n == 0) return 0;
    view_input(t, bt, b);
    if (!t->first && talks(t)) {
        MPI_Request r;
        CAIRN_CHECK(shape2(&b->in, t->dt, b->n, dim(t, 0)));
        CAIRN_CHECK_MPI(MPI_Irecv(b->in.data, (int)(b->n * dim(t, 0)), real, t->stage - 1, 0,
                                  t->pipe, &r));
        CAIRN_CHECK(coll_wait(1, &r));
    }
    CAIRN_CHECK(scatter(t, b->n, dim(t, 0), &b->in, &b->lin));
    CAIRN_CHECK(forward(t, 0, false, false));
    CAIRN_CHECK(gather(t, b->n, dim(t, L), &b->lout, &b->out));
    if (!talks(t)) goto cleanup;
    if (!t->last) {
        MPI_Request r;
        CAIRN_CHECK_MPI(MPI_Isend(b->out.data, (int)tensor_numel(&b->out), real, t->stage + 1, 0,
                                  t->pipe, &r));
        CAIRN_CHECK(coll_wait(1, &r));
    } else {
        int64_t c = 0;
        const int32_t *labels = t->k_targets ? NULL : (const int32_t *)bt->y.data;
        *loss_sum += layer_loss(t->spec, b->n, b->out.data, labels, t->k_targets ? bt->y.data : NULL,
                                bt->global, NULL, &c);
        *correct += c;
        for (int64_t r = 0; score && r < b->n; r++) /* the logits' margin ranks as p(class 1) does */
            score[r] = t->dt == DT_F64 ? ((double *)b->out.data)[2 * r + 1] - ((double *)b->out.data)[2 * r]
                                       : (double)((float *)b->out.data)[2 * r + 1] - (double)((float *)b->out.data)[2 * r];
    }
cleanup:
    unview_input(t, b);
    return rc;
}
