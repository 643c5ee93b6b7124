/* The parameter server and its protocol with the trainers.
 *
 * Parameter k is model.h's: a matrix ([inputs, units], W) or a vector
 * ([units], b) of one layer.  PS shard p holds rows [p*B, (p+1)*B) of each, with
 * B = ceil(rows / P) (block_range), plus its optimizer state.  A stage on
 * T ranks holds each parameter split as model_param_split says: each
 * member receives only its own part of each shard's rows, and sends its
 * part of the gradient (of a parameter the members hold whole, member 0).
 *
 * A step, streamed so that the shards' work overlaps the stages':
 *  - as soon as the step's last micro-batch has a layer's gradients (the
 *    last layers first), before that layer's input gradient and the layers
 *    below are computed, the replicas add theirs over the top of the
 *    gradient tree (see "the replicas' sum" below), and the replica where
 *    a parameter's sum ends sends it to the shards, each its rows;
 *  - each shard, as soon as a parameter's blocks are in, applies the
 *    optimizer element by element (so the result does not depend on P),
 *    and publishes the new rows to the stages that hold the layer;
 *  - a stage posts the receives of that publication when it next needs
 *    parameters (its next step, or an evaluation), after reading the next
 *    step's rows, and a layer's forward waits for that layer's alone, so
 *    the later layers arrive while the first ones compute.
 * The first step of a run (or a quiesce with no step) publishes the
 * parameters as they are.  trainer_quiesce completes the last publication
 * so nothing is in flight when the epochs end. */
#include "train_priv.h"

#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/exec.h"
#include "cairn/fsx.h"
#include "cairn/h5util.h"
#include "cairn/iodefer.h"
#include "cairn/layout.h"
#include "cairn/model.h"
#include "cairn/op.h"
#include "cairn/optim.h"
#include "cairn/partition.h"
#include "cairn/plan.h"
#include "cairn/rng.h"
#include "cairn/runtime.h"
#include "cairn/workspace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


/* ---- geometry ------------------------------------------------------------------ */

int n_params(const struct trainer *t) { return t->spec->n_params; }
int64_t param_rows(const struct trainer *t, int k) { return model_param_rows(t->spec, k); }
int64_t param_cols(const struct trainer *t, int k) { return model_param_cols(t->spec, k); }
int param_first(const struct trainer *t, int l) { return t->spec->param0[l]; }
static bool is_vector(const struct trainer *t, int k) { return model_param_ndim(t->spec, k) == 1; }
static int layer_of(const struct trainer *t, int k) { return model_param_layer(t->spec, k); }

void param_block(const struct trainer *t, int k, int p, int64_t *lo, int64_t *hi)
{
    block_range(param_rows(t, k), t->tp->shards, p, lo, hi);
}

static int stage_of_layer(const struct trainer *t, int l)
{
    int s = 0;
    while (l >= t->tp->first_layer[s + 1]) s++;
    return s;
}

int stage_rank(const struct trainer *t, int replica, int stage, int member)
{
    int T = t->tp->ranks_per_stage;
    return t->rt->plan->groups[t->tp->stage_group[stage]].first + replica * T + member;
}

/* Member j's part of rows [lo, hi) of parameter k, in its local tensor
 * (model_param_split): the columns of its blocks of each row, [hi - lo,
 * cols_j], or of a vector its entries there; its rows among them, whole;
 * or all of them.  Contiguous there: *off and the return value count
 * elements. */
static int64_t member_span(const struct trainer *t, int k, int j, int64_t lo, int64_t hi,
                           int64_t *off)
{
    int64_t nb, T = t->tp->ranks_per_stage, cols = param_cols(t, k);
    enum model_split s = model_param_split(t->spec, k, t->tp->ranks_per_stage, &nb);
    if (s == MODEL_SPLIT_WHOLE) {
        *off = lo * cols;
        return (hi - lo) * cols;
    }
    if (s == MODEL_SPLIT_ROWS || is_vector(t, k)) { /* the owned rows among lo .. hi-1, consecutive */
        *off = cyclic_owned(lo, nb, T, j) * cols;
        return cyclic_owned(hi, nb, T, j) * cols - *off;
    }
    int64_t cj = cyclic_owned(cols, nb, T, j);
    *off = lo * cj;
    return (hi - lo) * cj;
}

/* Whether member j sends parameter k's gradients: all of them, but of a
 * whole parameter (its members compute the same bits) member 0 only. */
static bool member_sends(const struct trainer *t, int k, int j)
{
    int64_t nb;
    return j == 0 || model_param_split(t->spec, k, t->tp->ranks_per_stage, &nb) != MODEL_SPLIT_WHOLE;
}

/* Member j's blocks (of nb) among items [from, from + n) of a block-cyclic
 * dimension, as an indexed datatype of items of `unit` elements whose
 * offsets count from item from. */
static int blocks_type(const struct trainer *t, int64_t nb, int64_t n, int j, int64_t from, int64_t unit,
                       MPI_Datatype *type)
{
    int rc = 0, k = 0, *len = NULL, *at = NULL;
    int64_t T = t->tp->ranks_per_stage, runs = (n + from) / nb + 2;
    len = malloc((size_t)runs * sizeof *len);
    at = malloc((size_t)runs * sizeof *at);
    CAIRN_CHECK_ALLOC(len && at ? len : NULL);
    for (int64_t b0 = from / nb * nb; b0 < from + n; b0 += nb) {
        int64_t a = b0 > from ? b0 : from, z = b0 + nb < from + n ? b0 + nb : from + n;
        if ((b0 / nb) % T == j) len[k] = (int)((z - a) * unit), at[k++] = (int)((a - from) * unit);
    }
    CAIRN_CHECK_MPI(MPI_Type_indexed(k, len, at, coll_type(t->dt), type));
cleanup:
    free(len);
    free(at);
    return rc;
}

/* Shard side: member j's part of my rows [lo, hi) of parameter k, as a
 * datatype over them: a vector's entries of its blocks; of each matrix
 * row, the columns of its blocks (COLS); its rows (ROWS); all (WHOLE).  *type is MPI_DATATYPE_NULL if it holds none; the
 * caller frees it once the transfer is posted. */
static int member_type(const struct trainer *t, int k, int j, int64_t lo, int64_t hi,
                       MPI_Datatype *type)
{
    int rc = 0;
    int64_t off, nb, cols = param_cols(t, k);
    enum model_split split = model_param_split(t->spec, k, t->tp->ranks_per_stage, &nb);
    MPI_Datatype one_row = MPI_DATATYPE_NULL, row = MPI_DATATYPE_NULL;
    *type = MPI_DATATYPE_NULL;
    if (member_span(t, k, j, lo, hi, &off) == 0) return 0;
    if (split == MODEL_SPLIT_WHOLE) {
        CAIRN_CHECK_MPI(MPI_Type_contiguous((int)((hi - lo) * cols), coll_type(t->dt), type));
    } else if (split == MODEL_SPLIT_ROWS || is_vector(t, k)) {
        CAIRN_CHECK(blocks_type(t, nb, hi - lo, j, lo, cols, type));
    } else {
        CAIRN_CHECK(blocks_type(t, nb, cols, j, 0, 1, &one_row));
        CAIRN_CHECK_MPI(MPI_Type_create_resized(one_row, 0, (MPI_Aint)(cols * (int64_t)t->esz), &row));
        CAIRN_CHECK_MPI(MPI_Type_contiguous((int)(hi - lo), row, type));
    }
    CAIRN_CHECK_MPI(MPI_Type_commit(type));
cleanup:
    if (one_row != MPI_DATATYPE_NULL) MPI_Type_free(&one_row);
    if (row != MPI_DATATYPE_NULL) MPI_Type_free(&row);
    return rc;
}

int ps_rank_of_shard(const struct trainer *t, int p)
{
    return t->rt->plan->groups[t->tp->ps_group].first + p;
}

/* ---- stage side ------------------------------------------------------------------ */

/* ---- the replicas' sum ------------------------------------------------------------
 * Each replica holds its micro-batches' sum of a parameter's gradient (its
 * node of the gradient tree, pipeline.c).  The replicas add theirs over
 * the tree's top, the bisection of replicas [0, R) (R a power of two): at
 * level d the replicas r and r + 2^d, r a multiple of 2^(d+1), meet, one
 * adds the other's sum to its own, and the other is done.  Parameter k's
 * sum ends on replica root(k), spread over the replicas by layer; at each
 * meeting the replica on root's side receives (or the lower one, if
 * neither is).  One IEEE addition of the same two sums per meeting, so
 * the total does not depend on R, nor on which replica adds; and a shard
 * receives one sum of each parameter from each member, whatever R. */

enum { LEVELS_MAX = 32 };
struct reduction {
    int n_from, next;         /* meetings where this replica adds; the next one */
    int from[LEVELS_MAX];     /* the replica each one's sum comes from */
    MPI_Request req[LEVELS_MAX];
    struct tensor buf[LEVELS_MAX];
    int to;                   /* the replica it sends its sum to; -1: the root */
    bool busy;                /* started this step, not yet sent on */
};

static int root_of(const struct trainer *t, int k) { return layer_of(t, k) % t->tp->replicas; }

/* The replica that holds the sum of replicas [lo, lo + n) for root q. */
static int holder(int lo, int n, int q) { return q >= lo && q < lo + n ? q : lo; }

static void plan_reduction(const struct trainer *t, int k, struct reduction *x)
{
    int r = t->replica, R = t->tp->replicas, q = root_of(t, k);
    x->n_from = 0;
    x->to = -1;
    for (int n = 1; n < R; n *= 2) {
        int lo = r / (2 * n) * (2 * n), other = r < lo + n ? lo + n : lo;
        if (holder(lo, 2 * n, q) != r) {
            x->to = holder(lo, 2 * n, q);
            return;
        }
        x->from[x->n_from++] = holder(other, n, q);
    }
}

int ps_create(struct trainer *t)
{
    int rc = 0, K = n_params(t), P = t->tp->shards, R = t->tp->replicas;
    /* a shard publishes to every replica's members; a member sends each
     * parameter's sum to the shards or to one replica */
    size_t n = t->role == ROLE_PS ? (size_t)K * R * t->tp->ranks_per_stage : (size_t)K * (P + 1);
    t->pending = true; /* the first step receives the parameters as they are */
    t->pushed = calloc((size_t)t->tp->n_layers + 1, sizeof *t->pushed);
    t->push_req = calloc(n + 1, sizeof *t->push_req);
    t->pub_req = calloc(n + 1, sizeof *t->pub_req);
    t->red = calloc((size_t)K + 1, sizeof *t->red);
    t->pull_req = malloc(((size_t)K * P + 1) * sizeof *t->pull_req);
    CAIRN_CHECK_ALLOC(t->pushed && t->push_req && t->pub_req && t->red && t->pull_req ? t->pushed : NULL);
    for (size_t i = 0; i < (size_t)K * P; i++) t->pull_req[i] = MPI_REQUEST_NULL;
    for (int k = 0; t->role == ROLE_STAGE && k < K; k++) plan_reduction(t, k, &t->red[k]);
cleanup:
    return rc;
}

void ps_destroy(struct trainer *t)
{
    for (int k = 0; t->red && k < n_params(t); k++)
        for (int i = 0; i < LEVELS_MAX; i++) tensor_free(&t->red[k].buf[i]);
    free(t->red);
    free(t->pull_req);
    free(t->pushed);
    free(t->push_req);
    free(t->pub_req);
}

/* The receives of a publication, by parameter: pull_req[k * P + p]. */
static MPI_Request *pull_of(const struct trainer *t, int k) { return &t->pull_req[k * t->tp->shards]; }

int ps_pull(struct trainer *t)
{
    int rc = 0, P = t->tp->shards;
    CAIRN_CHECK(coll_wait(t->n_push, t->push_req)); /* the last step's gradients, sent by now */
    t->n_push = 0;
    if (!t->pending) return 0;
    CAIRN_CHECK(ps_pull_all(t)); /* one a step without samples did not need */
    for (int k = param_first(t, t->l0); k < param_first(t, t->l1); k++) {
        struct tensor *v = &t->w[k];
        for (int p = 0; p < P; p++) {
            int64_t lo, hi, off, count;
            MPI_Request *q = &pull_of(t, k)[p];
            *q = MPI_REQUEST_NULL;
            param_block(t, k, p, &lo, &hi);
            if ((count = member_span(t, k, t->member, lo, hi, &off)) == 0) continue;
            CAIRN_CHECK_MPI(MPI_Irecv((char *)v->data + (size_t)off * t->esz, (int)count,
                                      coll_type(t->dt), ps_rank_of_shard(t, p), TAG_PARAM + k,
                                      t->train, q));
        }
    }
    t->pending = false;
cleanup:
    return rc;
}

int ps_pull_layer(struct trainer *t, int l)
{
    int k = param_first(t, l);
    return coll_wait((param_first(t, l + 1) - k) * t->tp->shards, pull_of(t, k));
}

int ps_pull_all(struct trainer *t)
{
    int rc = 0;
    for (int l = t->l0; l < t->l1; l++) CAIRN_CHECK(ps_pull_layer(t, l));
cleanup:
    return rc;
}


/* The root: each shard gets its rows of parameter k's sum. */
static int send_to_shards(struct trainer *t, int k)
{
    int rc = 0;
    struct tensor *g = &t->dw[k];
    if (!member_sends(t, k, t->member)) return 0;
    for (int p = 0; p < t->tp->shards; p++) {
        int64_t lo, hi, off, count;
        param_block(t, k, p, &lo, &hi);
        if ((count = member_span(t, k, t->member, lo, hi, &off)) == 0) continue;
        CAIRN_CHECK_MPI(MPI_Isend((char *)g->data + (size_t)off * t->esz, (int)count,
                                  coll_type(t->dt), ps_rank_of_shard(t, p), TAG_GRAD + k, t->train,
                                  &t->push_req[t->n_push++]));
    }
cleanup:
    return rc;
}

/* Add every partial sum of parameter k that is in, in level order; once
 * all are, send the sum on (to a replica, or to the shards). */
static int advance(struct trainer *t, int k)
{
    int rc = 0;
    struct reduction *x = &t->red[k];
    struct tensor *g = &t->dw[k];
    while (x->busy && x->next < x->n_from) {
        int done = 0;
        CAIRN_CHECK_MPI(MPI_Test(&x->req[x->next], &done, MPI_STATUS_IGNORE));
        if (!done) return 0;
        CAIRN_CHECK(tensor_add(g, g, &x->buf[x->next++]));
    }
    if (!x->busy) return 0;
    x->busy = false;
    if (x->to < 0) return send_to_shards(t, k);
    CAIRN_CHECK_MPI(MPI_Isend(g->data, (int)tensor_numel(g), coll_type(t->dt),
                              stage_rank(t, x->to, t->stage, t->member), TAG_SUM + k, t->train,
                              &t->push_req[t->n_push++]));
cleanup:
    return rc;
}

int ps_push_layer(struct trainer *t, int l)
{
    int rc = 0;
    for (int k = param_first(t, l); k < param_first(t, l + 1); k++) {
        struct reduction *x = &t->red[k];
        struct tensor *g = &t->dw[k];
        for (int i = 0; i < x->n_from; i++) {
            if (x->buf[i].dtype != g->dtype || !shape_eq(&x->buf[i].shape, &g->shape))
                CAIRN_CHECK(tensor_resize(&x->buf[i], g->dtype, &g->shape));
            CAIRN_CHECK_MPI(MPI_Irecv(x->buf[i].data, (int)tensor_numel(g), coll_type(t->dt),
                                      stage_rank(t, x->from[i], t->stage, t->member), TAG_SUM + k,
                                      t->train, &x->req[i]));
        }
        x->next = 0;
        x->busy = true;
        CAIRN_CHECK(advance(t, k));
    }
    t->pushed[l] = true;
    for (int k = param_first(t, t->l0); k < param_first(t, t->l1); k++)
        CAIRN_CHECK(advance(t, k)); /* the layers pushed before */
cleanup:
    return rc;
}

int ps_push_finish(struct trainer *t)
{
    int rc = 0, busy = 1;
    for (int l = t->l0; l < t->l1; l++) {
        if (t->pushed[l]) continue;
        CAIRN_CHECK(pipe_grads_close(t, l)); /* no samples here this step: zeros */
        CAIRN_CHECK(ps_push_layer(t, l));
    }
    for (long spins = 0, was = -1; busy; spins++) {
        busy = 0;
        for (int k = param_first(t, t->l0); k < param_first(t, t->l1); k++) {
            CAIRN_CHECK(advance(t, k));
            busy += t->red[k].busy + (t->red[k].busy ? t->red[k].n_from - t->red[k].next : 0);
        }
        if (busy != was) spins = 0; /* progress: poll at once again */
        was = busy;
        if (busy) coll_idle(spins);
    }
    for (int l = t->l0; l < t->l1; l++) t->pushed[l] = false;
    t->pending = true;
cleanup:
    return rc;
}

/* ---- shard side ------------------------------------------------------------------ */

/* Parameters and tables: the stride of ps_step's operand groups (trainplan.c). */
static int n_state(const struct trainer *t) { return n_params(t) + t->spec->n_tables; }

/* Send my rows of parameter k (in v) to every replica's stage holding it,
 * each member its own. */
static int publish_one(struct trainer *t, int k, const struct tensor *v)
{
    int rc = 0, s = stage_of_layer(t, layer_of(t, k));
    int64_t lo, hi;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    if (tensor_numel(v) == 0) return 0;
    param_block(t, k, t->shard, &lo, &hi);
    for (int j = 0; j < t->tp->ranks_per_stage; j++) {
        CAIRN_CHECK(member_type(t, k, j, lo, hi, &type));
        if (type == MPI_DATATYPE_NULL) continue;
        for (int r = 0; r < t->tp->replicas; r++)
            CAIRN_CHECK_MPI(MPI_Isend(v->data, 1, type, stage_rank(t, r, s, j), TAG_PARAM + k,
                                      t->train, &t->pub_req[t->n_pub++]));
        MPI_Type_free(&type);
    }
cleanup:
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
    return rc;
}

/* The previous publication must be received before the next goes out. */
static int publication_done(struct trainer *t)
{
    int rc = coll_wait(t->n_pub, t->pub_req);
    t->n_pub = 0;
    return rc;
}

static int publish_all(struct trainer *t, struct blob **params)
{
    int rc = 0;
    for (int k = 0; k < n_params(t); k++) CAIRN_CHECK(publish_one(t, k, &params[k]->t));
    t->published = true;
cleanup:
    return rc;
}

/* Post a receive for every member's part of the replicas' sum of every
 * parameter I hold rows of: req[k * T + j] (MPI_REQUEST_NULL where none
 * comes); left[k]: how many will come. */
static int post_grads(struct trainer *t, MPI_Request *req, int *left)
{
    int rc = 0, K = n_params(t), T = t->tp->ranks_per_stage;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    for (int k = 0; k < K; k++) {
        int64_t lo, hi;
        param_block(t, k, t->shard, &lo, &hi);
        left[k] = 0;
        struct tensor *g = &t->grads[k];
        struct shape s = {.ndim = 1, .d = {(hi - lo) * param_cols(t, k)}};
        if (g->dtype != t->dt || !shape_eq(&g->shape, &s)) /* receives fill it whole */
            CAIRN_CHECK(tensor_resize(g, t->dt, &s));
        for (int j = 0; j < T; j++) {
            MPI_Request *q = &req[k * T + j];
            *q = MPI_REQUEST_NULL;
            if (hi == lo || !member_sends(t, k, j)) continue;
            CAIRN_CHECK(member_type(t, k, j, lo, hi, &type));
            if (type == MPI_DATATYPE_NULL) continue;
            CAIRN_CHECK_MPI(MPI_Irecv(g->data, 1, type, stage_rank(t, root_of(t, k), stage_of_layer(t, layer_of(t, k)), j),
                                      TAG_GRAD + k, t->train, q));
            MPI_Type_free(&type);
            left[k]++;
        }
    }
cleanup:
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
    return rc;
}

double ps_bytes(const struct trainer *t)
{
    double n = 0;
    for (int k = 0; k < n_params(t); k++) n += (double)t->grads[k].cap;
    for (int b = 0; b < t->rt->ws->n; b++) n += (double)t->rt->ws->v[b].t.cap;
    return n;
}

static int dump_grads(struct trainer *t);

static struct optim_args opt_args(struct trainer *t, struct op_call *c)
{
    const struct train_spec *sp = t->spec;
    struct optim_args a = {.opt = sp->opt, .lr = sp->lr, .wd = sp->weight_decay, .mu = sp->momentum,
                         .b1 = sp->beta1, .b2 = sp->beta2, .eps = sp->eps, .c1 = 1, .c2 = 1};
    if (sp->opt == OPT_ADAM) { /* this step's count, and the bias corrections it gives */
        struct tensor *step = &c->out[3 * n_state(t)]->t;
        int64_t n = tensor_get_i64(step, 0) + 1;
        tensor_set_i64(step, 0, n);
        a.c1 = 1 - pow(sp->beta1, (double)n);
        a.c2 = 1 - pow(sp->beta2, (double)n);
    }
    return a;
}

/* The replicas' sum of parameter k's gradient is in: update, publish. */
static int finish_param(struct trainer *t, struct op_call *c, const struct optim_args *a, int k)
{
    int K = n_state(t);
    struct tensor *w = &c->out[k]->t;
    void *m = a->opt == OPT_SGD ? NULL : c->out[K + k]->t.data;
    void *v = a->opt == OPT_ADAM ? c->out[2 * K + k]->t.data : NULL;
    optim_update(t->dt, a, tensor_numel(w), w->data, t->grads[k].data, m, v);
    return publish_one(t, k, w);
}

/* Handle each parameter as soon as all its blocks are in, without
 * spinning a core while waiting (see wait_all). */
static int stream_updates(struct trainer *t, struct op_call *c, const struct optim_args *a,
                          MPI_Request *req, int *left)
{
    int rc = 0, RT = t->tp->ranks_per_stage, K = n_params(t), n = K * RT, todo = 0;
    int *idx = malloc((size_t)n * sizeof *idx), got;
    CAIRN_CHECK_ALLOC(idx);
    for (int k = 0; k < K; k++) {
        if (left[k] == 0) CAIRN_CHECK(finish_param(t, c, a, k)); /* rows elsewhere: nothing */
        todo += left[k] > 0;
    }
    for (long spins = 0; todo > 0; spins++) {
        CAIRN_CHECK_MPI(MPI_Testsome(n, req, &got, idx, MPI_STATUSES_IGNORE));
        for (int i = 0; got != MPI_UNDEFINED && i < got; i++) {
            int k = idx[i] / RT;
            if (--left[k] > 0) continue;
            CAIRN_CHECK(finish_param(t, c, a, k));
            todo--;
            spins = 0;
        }
        if (got == 0) coll_idle(spins);
    }
cleanup:
    free(idx);
    return rc;
}

int train_op_ps_step(struct op_call *c)
{
    struct trainer *t = c->state;
    int rc = 0, K = n_params(t), RT = t->tp->ranks_per_stage;
    MPI_Request *req = malloc((size_t)(K * RT + 1) * sizeof *req);
    int *left = calloc((size_t)K + 1, sizeof *left);
    CAIRN_CHECK_ALLOC(req && left ? req : NULL);
    CAIRN_CHECK(publication_done(t));
    if (!t->published) CAIRN_CHECK(publish_all(t, c->in));
    CAIRN_CHECK(post_grads(t, req, left));
    CAIRN_CHECK(publication_done(t)); /* the stages took it before they computed */
    struct optim_args a = opt_args(t, c);
    struct tensor *tw[EMBED_MAX_TABLES], *tm[EMBED_MAX_TABLES], *tv[EMBED_MAX_TABLES];
    for (int e = 0; e < t->spec->n_tables; e++) { /* the tables and their state */
        int S = n_state(t), i = K + e;
        tw[e] = &c->out[i]->t;
        tm[e] = a.opt == OPT_SGD ? NULL : &c->out[S + i]->t;
        tv[e] = a.opt == OPT_ADAM ? &c->out[2 * S + i]->t : NULL;
    }
    if (t->emb) CAIRN_CHECK(emb_serve(t, tw, true)); /* the readers' pulls; their push posted */
    CAIRN_CHECK(stream_updates(t, c, &a, req, left));
    if (t->emb) CAIRN_CHECK(emb_take_push(t, tw, tm, tv, &a));
    /* the dump reads the push as pending: before a settle, which clears it */
    if (t->spec->debug_grads && !t->grads_dumped) CAIRN_CHECK(dump_grads(t));
    if (t->emb && t->rt->step == t->rt->steps_per_epoch) emb_settle(t); /* tasks after the steps see it all */
cleanup:
    free(req);
    free(left);
    return rc;
}

int trainer_quiesce(struct trainer *t)
{
    int rc = 0;
    if (t->role == ROLE_STAGE) rc = ps_pull(t);
    if (t->role == ROLE_STAGE && rc == 0) rc = ps_pull_all(t);
    if (t->role == ROLE_PS) {
        struct workspace *ws = t->rt->ws;
        emb_settle(t);
        if (!t->published) {
            struct blob **params = malloc((size_t)n_params(t) * sizeof *params);
            if (!params) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
            for (int k = 0; k < n_params(t); k++) {
                char name[32];
                model_param_name(t->spec, k, "", name, sizeof name);
                params[k] = workspace_find(ws, name);
            }
            rc = publish_all(t, params);
            free(params);
        }
        if (rc == 0) rc = publication_done(t);
    }
    return coll_agree(t->rt->layout->world, rc);
}

/* ---- initial values ---------------------------------------------------------------- */

/* The parameters' initial values (model.c: keyed by seed, parameter and
 * element, so the same whatever the number of shards) and zero state. */
int train_op_ps_init(struct op_call *c)
{
    struct trainer *t = c->state;
    int rc = 0, K = n_state(t);
    uint64_t seed = (uint64_t)c->ctx->rt->plan->job->seed;
    for (int i = 0; i < c->op->n_out; i++) {
        struct tensor *v = &c->out[i]->t;
        if (i == c->op->n_out - 1 && t->spec->opt == OPT_ADAM) { /* the step count */
            struct shape scalar = {0};
            CAIRN_CHECK(tensor_resize(v, DT_I64, &scalar));
            continue;
        }
        int k = i % K;
        int64_t lo, hi;
        param_block(t, k, t->shard, &lo, &hi);
        struct shape s = {.ndim = k < n_params(t) && is_vector(t, k) ? 1 : 2, .d = {hi - lo, param_cols(t, k)}};
        CAIRN_CHECK(tensor_resize(v, t->dt, &s)); /* zeros: the optimizer state */
        if (i < K) model_init_param(t->spec, seed, k, lo, v);
    }
cleanup:
    return rc;
}

/* ---- debug.grads -------------------------------------------------------------------- */

/* The first step's summed gradients, as /grads/L<i>/W and /grads/L<i>/b,
 * each shard writing its rows (collective over the PS group). */
static int dump_grads(struct trainer *t)
{
    int rc = 0, K = n_params(t);
    hid_t fapl = H5I_INVALID_HID, f = H5I_INVALID_HID, d = H5I_INVALID_HID;
    struct fsx_out out = {.dir = -1, .fd = -1};
    bool deferring = false;
    int me = 0;
    MPI_Comm_rank(t->group, &me);
    t->grads_dumped = true;
    h5_quiet();
    CAIRN_CHECK(coll_out_begin(t->group, t->spec->debug_grads, 0, &out));
    iodefer_begin(out.tmp); /* a write failing on some ranks only must not split them */
    deferring = true;
    fapl = H5Pcreate(H5P_FILE_ACCESS);
    CAIRN_CHECK_H5(fapl);
    CAIRN_CHECK_H5(H5Pset_fapl_mpio(fapl, t->group, MPI_INFO_NULL));
    h5_mpio_before_open(t->group, out.tmp);
    CAIRN_CHECK(h5_create_file(out.tmp, fapl, &f));
    for (int k = 0; k < K; k++) {
        char name[64];
        int64_t lo, hi;
        struct shape gs = {is_vector(t, k) ? 1 : 2, {param_rows(t, k), param_cols(t, k)}};
        model_grad_name(t->spec, k, name, sizeof name);
        param_block(t, k, t->shard, &lo, &hi);
        d = h5_create_dataset(f, name, t->dt, &gs, H5P_DEFAULT);
        CAIRN_CHECK_H5(d);
        CAIRN_CHECK(h5_write_rows(d, t->dt, lo, hi - lo, t->grads[k].data, H5P_DEFAULT));
        H5Dclose(d);
        d = H5I_INVALID_HID;
    }
    if (t->emb) CAIRN_CHECK(emb_dump_grads(t, f));
cleanup:
    if (d >= 0) H5Dclose(d);
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Fclose");
    if (fapl >= 0) H5Pclose(fapl);
    if (deferring) {
        int e = iodefer_end();
        rc = rc ? rc : e;
        /* renamed once every shard wrote its rows, by the rank that made it */
        rc = coll_agree(t->group, rc);
        if (rc == 0) rc = coll_agree(t->group, me == 0 ? fsx_out_commit(&out) : 0);
    }
    fsx_out_abort(&out);
    return rc;
}
