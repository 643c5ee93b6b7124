/* Embedding tables at run time: the readers' and the shards' sides of the
 * row-sparse protocol (train_priv.h), on the embedding communicator
 * (readers: rank = replica; shards: rank R + shard).
 *
 * A table's row i lives at position spread_pos(i) (partition.h), and shard
 * p holds the block of positions block_range(rows, P, p), so a shard's
 * rows of a sorted list of positions are one index range of it.  Per
 * step, and per evaluation batch:
 *  - pull: each reader sends every shard its batch touches one request
 *    (per table, the count and the sorted distinct positions), found by a
 *    sparse exchange (coll_exchange: no one needs to know who asks whom),
 *    and receives the rows in that order; it then adds each sample's bag
 *    into its columns of the first layer's input;
 *  - backward: each micro-batch's input gradient gives a leaf of the
 *    table's gradient (embed_bag.h), summed over the micro-batches'
 *    bisection tree (sparse_rows.h); the replicas add their nodes over the
 *    tree's top (replica r + 2^d sends to r at level d), so the sum is the
 *    same bits for any R;
 *  - push: replica 0 sends each shard that served a pull this step the
 *    sum's rows in its block, values only: they are exactly the union of
 *    the positions the shard was asked for, which it kept; the shard
 *    applies the optimizer to those rows and no others, late: at the next
 *    round of pulls, the rows asked for first, then (after the replies)
 *    the rest, while the readers compute; at the epoch's last step and
 *    before checkpoints and model.h5, all at once (emb_settle).
 * Messages per step: a reader sends one request to and receives one reply
 * from each shard its batch touches, plus one message of the replicas'
 * reduction; replica 0 sends one push per shard touched by any replica.
 * Bytes: the positions (8 each) and rows (dim values each) touched. */
#include "train_priv.h"

#include "cairn/coll.h"
#include "cairn/embed_bag.h"
#include "cairn/embed_ids.h"
#include "cairn/error.h"
#include "cairn/h5util.h"
#include "cairn/model.h"
#include "cairn/optim.h"
#include "cairn/partition.h"
#include "cairn/reader.h"
#include "cairn/runtime.h"
#include "cairn/sort.h"
#include "cairn/sparse_rows.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Requests alternate between two tags by round (coll.h: a fast rank's
 * next round must not be taken for this one). */
enum { TAG_EREQ = 1, TAG_EREQ_ODD, TAG_EROWS, TAG_ESUM, TAG_EPUSH };

struct emb_tab {
    const struct embed_spec *spec;
    int64_t col; /* its first column in the first layer's input */
    /* reader */
    int64_t k;             /* ids per sample */
    struct tensor ids;     /* this batch's, [n, k] */
    int64_t *pos, *slot, *mark, cap, n_pos; /* distinct positions, each id's slot, scratch */
    char *rows;            /* the pulled rows, [n_pos, dim] */
    struct sparse_rows leaf, got, sum[2];
    struct sparse_tree tree;
    /* shard */
    int64_t lo, hi;                 /* its positions */
    int64_t *req, n_req, cap_req;   /* the positions this round's pulls asked for */
    int64_t *pend, n_pend, cap_pend; /* the last push's, not yet all updated */
};

/* A pull request kept until the exchange ends: E counts, then positions. */
struct emb_request {
    int source;
    int64_t *q;
};

/* The last push, applied at the next round of pulls (emb_serve) or when
 * the state must be settled (emb_settle): the rows' sums sit in buf,
 * while the next push may already arrive in inbuf. */
struct emb_pending {
    bool on;
    struct optim_args a; /* the step's: adam's bias corrections move */
    struct tensor *w[EMBED_MAX_TABLES], *m[EMBED_MAX_TABLES], *v[EMBED_MAX_TABLES];
};

struct emb {
    MPI_Comm comm;
    int E, R, P, me;
    size_t esz;
    int64_t round; /* pull rounds so far: every rank of comm runs each */
    struct emb_tab *tab;
    /* reader: one request and reply per shard touched */
    int64_t **req;
    char **reply;
    int *req_bytes, *reply_bytes, *dest, n_dest;
    MPI_Request *rreq; /* the replies' receives (n_dest), or the pushes' sends */
    /* shard: requests kept, replies in flight, the pending update */
    struct emb_request *in;
    int n_in, cap_in;
    struct emb_pending pend;
    char **out;
    MPI_Request *oreq;
    int n_out, cap_out;
    int64_t served; /* rows (over the tables) this round's pulls asked for */
    MPI_Request push; /* the receive of replica 0's push, posted when they are known */
    int push_bytes;
    char *buf;      /* the reduction's messages; on a shard, the pending push */
    size_t buf_cap;
    char *inbuf;    /* a shard's next push, received while buf is applied */
    size_t inbuf_cap;
};

bool emb_reader(const struct trainer *t) { return t->emb && t->role == ROLE_STAGE; }

static int grow(void *pp, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    void *p = realloc(*(void **)pp, need);
    if (!p) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    *(void **)pp = p;
    *cap = need;
    return 0;
}

int emb_create(struct trainer *t, MPI_Comm comm)
{
    int rc = 0, E = t->spec->n_tables;
    if (!E || comm == MPI_COMM_NULL) return 0;
    struct emb *m = calloc(1, sizeof *m);
    CAIRN_CHECK_ALLOC(m);
    t->emb = m;
    m->comm = comm;
    m->E = E;
    m->R = t->tp->replicas;
    m->P = t->tp->shards;
    m->esz = t->esz;
    MPI_Comm_rank(comm, &m->me);
    m->tab = calloc((size_t)E, sizeof *m->tab);
    m->req = calloc((size_t)m->P, sizeof *m->req);
    m->reply = calloc((size_t)m->P, sizeof *m->reply);
    m->req_bytes = calloc((size_t)m->P, sizeof *m->req_bytes);
    m->reply_bytes = calloc((size_t)m->P, sizeof *m->reply_bytes);
    m->dest = calloc((size_t)m->P, sizeof *m->dest);
    m->rreq = calloc((size_t)m->P, sizeof *m->rreq);
    m->push = MPI_REQUEST_NULL;
    CAIRN_CHECK_ALLOC(m->tab && m->req && m->reply && m->req_bytes && m->reply_bytes && m->dest && m->rreq
                          ? m->tab
                          : NULL);
    for (int e = 0, col = (int)t->spec->inputs; e < E; e++) {
        struct emb_tab *x = &m->tab[e];
        x->spec = &t->spec->tables[e];
        x->col = col;
        col += (int)x->spec->dim;
        if (t->role == ROLE_PS) block_range(x->spec->rows, m->P, t->shard, &x->lo, &x->hi);
    }
cleanup:
    return rc;
}

void emb_destroy(struct trainer *t)
{
    struct emb *m = t->emb;
    if (!m) return;
    for (int e = 0; m->tab && e < m->E; e++) {
        struct emb_tab *x = &m->tab[e];
        tensor_free(&x->ids);
        free(x->pos);
        free(x->slot);
        free(x->mark);
        free(x->rows);
        free(x->req);
        free(x->pend);
        sparse_rows_free(&x->leaf);
        sparse_rows_free(&x->got);
        sparse_rows_free(&x->sum[0]);
        sparse_rows_free(&x->sum[1]);
        sparse_tree_free(&x->tree);
    }
    for (int p = 0; p < m->P; p++) { /* either list may be missing: emb_create failed between them */
        if (m->req) free(m->req[p]);
        if (m->reply) free(m->reply[p]);
    }
    for (int i = 0; i < m->n_out; i++) free(m->out[i]);
    for (int i = 0; i < m->n_in; i++) free(m->in[i].q);
    free(m->in);
    free(m->tab);
    free(m->req);
    free(m->reply);
    free(m->req_bytes);
    free(m->reply_bytes);
    free(m->dest);
    free(m->rreq);
    free(m->out);
    free(m->oreq);
    free(m->buf);
    free(m->inbuf);
    free(m);
    t->emb = NULL;
}

/* ---- the data ------------------------------------------------------------------- */

int emb_check_data(struct trainer *t, const char *file, int64_t rows, int64_t first, int64_t n)
{
    struct emb *m = t->emb;
    int64_t most = t->spec->batch > t->spec->eval_batch ? t->spec->batch : t->spec->eval_batch, bytes = 0;
    struct tensor v = {0};
    int rc = 0;
    for (int e = 0; e < m->E; e++) {
        struct emb_tab *x = &m->tab[e];
        int64_t N, k;
        rc = embed_ids_shape(t->rt->readers, file, x->spec->ids, &N, &k);
        if (rc) return cairn_err_wrap(rc, "%s:%d: table '%s': ", x->spec->file, x->spec->line, x->spec->name), rc;
        if (N != rows)
            return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                                 "%s:%d: table '%s': ids dataset '%s' in %s has %lld rows but the features "
                                 "have %lld",
                                 x->spec->file, x->spec->line, x->spec->name, x->spec->ids, file,
                                 (long long)N, (long long)rows);
        if (x->k && x->k != k)
            return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                                 "%s:%d: table '%s': ids dataset '%s' holds %lld ids per sample in %s "
                                 "but %lld in the training data",
                                 x->spec->file, x->spec->line, x->spec->name, x->spec->ids, (long long)k,
                                 file, (long long)x->k);
        x->k = k;
        bytes += most * k * (x->spec->dim * (int64_t)m->esz + 8);
        /* every id, once, some 2^20 at a time (k is bounded by embed_ids_shape) */
        int64_t chunk = k < 1 << 20 ? (1 << 20) / k : 1;
        for (int64_t at = first; t->replica == 0 && at < first + n; at += chunk) {
            int64_t c = first + n - at < chunk ? first + n - at : chunk;
            rc = embed_ids_read(t->rt->readers, file, x->spec->ids, x->spec->rows, at, c, k, &v);
            if (rc) {
                cairn_err_wrap(rc, "%s:%d: table '%s': ", x->spec->file, x->spec->line, x->spec->name);
                break;
            }
        }
        if (rc) break;
    }
    tensor_free(&v);
    if (rc == 0 && bytes > INT_MAX) /* a pull is one message per shard */
        rc = cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                           "%s:%d: a batch of %lld samples may pull %lld bytes of embedding rows from "
                           "one shard, more than one MPI message carries (%d): use a smaller "
                           "data.batch or data.eval_batch",
                           t->spec->file, t->spec->line, (long long)most, (long long)bytes, INT_MAX);
    return rc;
}

/* This batch's ids of table x, checked (the file may have changed since
 * emb_check_data: a run-time error then, in the same words). */
static int read_ids(struct trainer *t, struct emb_tab *x, const char *file, const struct batch *b)
{
    int rc = reader_gather(t->rt->readers, file, x->spec->ids, b->idx, b->n, DT_I64, &x->ids);
    if (rc) return rc;
    const int64_t *v = x->ids.data;
    int64_t i = embed_ids_first_bad(v, b->n * x->k, x->spec->rows);
    if (i < 0) return 0;
    return cairn_err_wrap(embed_ids_bad(CAIRN_ERUNTIME, t->rt->readers, file, x->spec->ids, b->idx[i / x->k],
                                        i % x->k, v[i], x->spec->rows),
                          "%s:%d: table '%s': ", x->spec->file, x->spec->line, x->spec->name);
}

static int touch(struct emb_tab *x, int64_t n)
{
    int64_t need = n * x->k;
    if (need > x->cap) {
        int64_t *p = realloc(x->pos, (size_t)need * sizeof *p);
        if (p) x->pos = p;
        int64_t *s = realloc(x->slot, (size_t)need * sizeof *s);
        if (s) x->slot = s;
        int64_t *k = realloc(x->mark, (size_t)need * sizeof *k);
        if (k) x->mark = k;
        if (!p || !s || !k) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
        for (int64_t i = 0; i < need; i++) x->mark[i] = -1;
        x->cap = need;
    }
    return n ? embed_touch(x->ids.data, need, x->spec->rows, x->pos, &x->n_pos, x->slot) : (x->n_pos = 0, 0);
}

/* ---- pulls ------------------------------------------------------------------------ */

/* Table x's positions in shard p's block: indices [*i0, *i1) of pos. */
static void in_block(const struct emb *m, const struct emb_tab *x, const int64_t *pos, int64_t n, int p,
                     int64_t *i0, int64_t *i1)
{
    int64_t lo, hi;
    block_range(x->spec->rows, m->P, p, &lo, &hi);
    *i0 = pos_lower(pos, n, lo);
    *i1 = pos_lower(pos, n, hi);
}

static int no_requests(void *arg, int source, void *data, int bytes)
{
    (void)arg, (void)data, (void)bytes;
    return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "a reader got a pull request from rank %d",
                         source);
}

/* Requests to every shard the batch touches; the replies' receives posted. */
static int post_pulls(struct trainer *t, int *n_dest)
{
    struct emb *m = t->emb;
    int rc = 0;
    *n_dest = 0;
    for (int p = 0; p < m->P; p++) {
        int64_t count = 0, bytes = 0, i0, i1;
        for (int e = 0; e < m->E; e++) {
            in_block(m, &m->tab[e], m->tab[e].pos, m->tab[e].n_pos, p, &i0, &i1);
            count += i1 - i0;
            bytes += (i1 - i0) * m->tab[e].spec->dim * (int64_t)m->esz;
        }
        if (count == 0) continue;
        int d = (*n_dest)++;
        int64_t *q = realloc(m->req[d], (size_t)(m->E + count) * sizeof *q);
        char *r = realloc(m->reply[d], (size_t)bytes + 1);
        if (q) m->req[d] = q;
        if (r) m->reply[d] = r;
        CAIRN_CHECK_ALLOC(q && r ? q : NULL);
        for (int e = 0, at = m->E; e < m->E; e++) {
            in_block(m, &m->tab[e], m->tab[e].pos, m->tab[e].n_pos, p, &i0, &i1);
            q[e] = i1 - i0;
            if (i1 > i0) memcpy(q + at, m->tab[e].pos + i0, (size_t)(i1 - i0) * sizeof *q);
            at += (int)(i1 - i0);
        }
        m->dest[d] = m->R + p;
        m->req_bytes[d] = (int)((m->E + count) * (int64_t)sizeof *q);
        m->reply_bytes[d] = (int)bytes;
        CAIRN_CHECK_MPI(MPI_Irecv(r, (int)bytes + 1, MPI_BYTE, m->dest[d], TAG_EROWS, m->comm, &m->rreq[d]));
    }
cleanup:
    return rc;
}

/* The replies' rows into each table's rows, in position order. */
static int unpack_replies(struct trainer *t, int n_dest)
{
    struct emb *m = t->emb;
    for (int d = 0; d < n_dest; d++) {
        const char *r = m->reply[d];
        for (int e = 0; e < m->E; e++) {
            struct emb_tab *x = &m->tab[e];
            int64_t i0, i1, row = x->spec->dim * (int64_t)m->esz;
            in_block(m, x, x->pos, x->n_pos, m->dest[d] - m->R, &i0, &i1);
            memcpy(x->rows + i0 * row, r, (size_t)((i1 - i0) * row));
            r += (i1 - i0) * row;
        }
    }
    return 0;
}

int emb_pull(struct trainer *t, const char *file, const struct batch *b)
{
    struct emb *m = t->emb;
    int rc = 0;
    for (int e = 0; e < m->E; e++) {
        struct emb_tab *tb = &m->tab[e];
        if (b->n) CAIRN_CHECK(read_ids(t, tb, file, b));
        CAIRN_CHECK(touch(tb, b->n));
        char *rows = realloc(tb->rows, (size_t)(tb->n_pos * tb->spec->dim) * m->esz + 1);
        CAIRN_CHECK_ALLOC(rows); /* the pulled rows, overwritten whole */
        tb->rows = rows;
        sparse_tree_reset(&tb->tree, t->dt, tb->spec->dim, t->mb_lo, t->mb_hi);
    }
    CAIRN_CHECK(post_pulls(t, &m->n_dest));
    CAIRN_CHECK(coll_exchange(m->comm, TAG_EREQ + (int)(m->round++ & 1), m->n_dest, m->dest, (void *const *)m->req,
                              m->req_bytes, no_requests, t));
cleanup:
    return rc;
}

int emb_input(struct trainer *t, struct batch *b)
{
    struct emb *m = t->emb;
    int rc = 0;
    struct tensor x = {0};
    CAIRN_CHECK(coll_wait_sized(m->n_dest, m->rreq, m->reply_bytes));
    CAIRN_CHECK(unpack_replies(t, m->n_dest));
    if (b->n == 0) goto cleanup;
    /* the dense features, then each table's combined vectors */
    int64_t w = t->tp->dims[0], d = t->spec->inputs;
    struct shape s = {.ndim = 2, .d = {b->n, w}};
    CAIRN_CHECK(tensor_resize(&x, t->dt, &s));
    for (int64_t r = 0; r < b->n; r++)
        memcpy((char *)x.data + (size_t)(r * w) * m->esz, (char *)b->x.data + (size_t)(r * d) * m->esz,
               (size_t)d * m->esz);
    for (int e = 0; e < m->E; e++) {
        struct emb_tab *tb = &m->tab[e];
        embed_combine(t->dt, b->n, tb->k, tb->slot, tb->rows, tb->spec->dim, tb->spec->mean,
                      (char *)x.data + (size_t)tb->col * m->esz, w);
    }
    tensor_free(&b->x);
    b->x = x;
    x = (struct tensor){0};
cleanup:
    tensor_free(&x);
    return rc;
}

/* ---- gradients and the push ------------------------------------------------------- */

int emb_backward(struct trainer *t, int64_t i, int64_t off, int64_t n, const void *g)
{
    struct emb *m = t->emb;
    int rc = 0;
    for (int e = 0; e < m->E; e++) {
        struct emb_tab *x = &m->tab[e];
        CAIRN_CHECK(embed_grad(t->dt, n, x->k, x->slot + off * x->k, x->pos, x->n_pos, (const char *)g + (size_t)x->col * m->esz,
                               t->tp->dims[0], x->spec->dim, x->spec->mean, x->mark, &x->leaf));
        CAIRN_CHECK(sparse_tree_add(&x->tree, i, &x->leaf));
    }
cleanup:
    return rc;
}

/* Every table's sum (cur) as one message: the counts, the positions, the
 * values. */
static int pack_sums(struct emb *m, const struct sparse_rows *const *cur, size_t *bytes)
{
    size_t n = (size_t)m->E * 8;
    for (int e = 0; e < m->E; e++) n += (size_t)cur[e]->n * (8 + (size_t)cur[e]->dim * m->esz);
    if (n > INT_MAX)
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                             "the embedding rows' gradients of one step take %zu bytes, more than one "
                             "MPI message carries: use a smaller data.batch", n);
    int rc = grow(&m->buf, &m->buf_cap, n + 1);
    if (rc) return rc;
    char *at = m->buf;
    for (int e = 0; e < m->E; e++, at += 8) memcpy(at, &cur[e]->n, 8);
    for (int e = 0; e < m->E; e++) {
        size_t v = (size_t)cur[e]->n * (size_t)cur[e]->dim * m->esz;
        if (cur[e]->n == 0) continue; /* its buffers may be unallocated */
        memcpy(at, cur[e]->pos, (size_t)cur[e]->n * 8);
        at += (size_t)cur[e]->n * 8;
        memcpy(at, cur[e]->val, v);
        at += v;
    }
    *bytes = n;
    return 0;
}

/* Receive another replica's sums (a pack_sums message) into each table's got. */
static int recv_sums(struct trainer *t, int from)
{
    struct emb *m = t->emb;
    MPI_Status st;
    int rc = 0, bytes = 0;
    CAIRN_CHECK(coll_probe(m->comm, from, TAG_ESUM, &st));
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    CAIRN_CHECK(grow(&m->buf, &m->buf_cap, (size_t)bytes + 1));
    CAIRN_CHECK_MPI(MPI_Recv(m->buf, bytes, MPI_BYTE, from, TAG_ESUM, m->comm, MPI_STATUS_IGNORE));
    const char *at = m->buf;
    size_t left = (size_t)bytes;
    int64_t count[EMBED_MAX_TABLES];
    if (left < (size_t)m->E * 8) goto bad;
    for (int e = 0; e < m->E; e++, at += 8, left -= 8) memcpy(&count[e], at, 8);
    for (int e = 0; e < m->E; e++) {
        struct emb_tab *x = &m->tab[e];
        size_t v = (size_t)count[e] * (size_t)x->spec->dim * m->esz;
        if (count[e] < 0 || left < (size_t)count[e] * 8 + v) goto bad;
        CAIRN_CHECK(sparse_rows_reserve(&x->got, t->dt, x->spec->dim, count[e]));
        memcpy(x->got.pos, at, (size_t)count[e] * 8);
        memcpy(x->got.val, at + count[e] * 8, v);
        x->got.n = count[e];
        at += (size_t)count[e] * 8 + v;
        left -= (size_t)count[e] * 8 + v;
    }
    if (left == 0) return 0;
bad:
    return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "replica reader %d sent a malformed sum of "
                         "embedding gradients (%d bytes)", from, bytes);
cleanup:
    return rc;
}

/* Replica 0: each shard the sum touches gets its rows' values. */
static int send_pushes(struct trainer *t, const struct sparse_rows *const *cur)
{
    struct emb *m = t->emb;
    int rc = 0, n = 0;
    for (int p = 0; p < m->P; p++) {
        int64_t bytes = 0, i0, i1;
        for (int e = 0; e < m->E; e++) {
            in_block(m, &m->tab[e], cur[e]->pos, cur[e]->n, p, &i0, &i1);
            bytes += (i1 - i0) * cur[e]->dim * (int64_t)m->esz;
        }
        if (bytes == 0) continue;
        char *v = realloc(m->reply[n], (size_t)bytes);
        CAIRN_CHECK_ALLOC(v);
        m->reply[n] = v;
        for (int e = 0; e < m->E; e++) {
            size_t row = (size_t)cur[e]->dim * m->esz;
            in_block(m, &m->tab[e], cur[e]->pos, cur[e]->n, p, &i0, &i1);
            if (i1 > i0) memcpy(v, (const char *)cur[e]->val + (size_t)i0 * row, (size_t)(i1 - i0) * row);
            v += (size_t)(i1 - i0) * row;
        }
        CAIRN_CHECK_MPI(MPI_Isend(m->reply[n], (int)bytes, MPI_BYTE, m->R + p, TAG_EPUSH, m->comm, &m->rreq[n]));
        n++;
    }
    rc = coll_wait(n, m->rreq);
cleanup:
    if (rc) MPI_Waitall(n, m->rreq, MPI_STATUSES_IGNORE);
    return rc;
}

int emb_push(struct trainer *t)
{
    struct emb *m = t->emb;
    int rc = 0;
    const struct sparse_rows *cur[EMBED_MAX_TABLES];
    for (int e = 0; e < m->E; e++) CAIRN_CHECK(sparse_tree_sum(&m->tab[e].tree, &cur[e]));
    for (int d = 0; (1 << d) < m->R; d++) { /* the tree's top: level d pairs r and r + 2^d */
        int r = m->me;
        if (r & (1 << d)) {
            size_t bytes = 0;
            MPI_Request q;
            CAIRN_CHECK(pack_sums(m, cur, &bytes));
            CAIRN_CHECK_MPI(MPI_Isend(m->buf, (int)bytes, MPI_BYTE, r - (1 << d), TAG_ESUM, m->comm, &q));
            return coll_wait(1, &q);
        }
        CAIRN_CHECK(recv_sums(t, r + (1 << d)));
        for (int e = 0; e < m->E; e++) {
            struct emb_tab *x = &m->tab[e];
            struct sparse_rows *next = cur[e] == &x->sum[0] ? &x->sum[1] : &x->sum[0];
            CAIRN_CHECK(sparse_rows_add(next, cur[e], &x->got));
            cur[e] = next;
        }
    }
    CAIRN_CHECK(send_pushes(t, cur));
cleanup:
    return rc;
}

/* ---- the shard's side --------------------------------------------------------------- */

/* Rows a step touches are scattered over tables far larger than the
 * caches: ask for a row's values and state this many rows ahead, so
 * that the misses overlap instead of stalling one by one. */
enum { PREFETCH = 8 };

/* While it updates rows no pull waits for, a shard calls MPI every this
 * many rows: a large message moves only then. */
enum { PROGRESS_ROWS = 256 };

static void prefetch_bytes(const char *p, size_t bytes)
{
    for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b, 1);
}

static void prefetch_row(struct tensor *const *w, struct tensor *const *mm, struct tensor *const *v, int e,
                         size_t at, size_t row)
{
    prefetch_bytes((char *)w[e]->data + at, row);
    if (mm && mm[e]) prefetch_bytes((char *)mm[e]->data + at, row);
    if (v && v[e]) prefetch_bytes((char *)v[e]->data + at, row);
}

/* A request is E counts, then that many positions per table, each in
 * this shard's block. */
static int check_request(const struct emb *m, int source, const int64_t *q, int bytes)
{
    int64_t total = 0;
    bool ok = bytes >= m->E * 8 && bytes % 8 == 0;
    for (int e = 0; ok && e < m->E; e++) {
        ok = q[e] >= 0 && q[e] <= bytes / 8;
        total += ok ? q[e] : 0;
    }
    ok = ok && (int64_t)bytes == (m->E + total) * 8;
    const int64_t *p = q + m->E;
    for (int e = 0; ok && e < m->E; e++)
        for (int64_t j = 0; ok && j < q[e]; j++, p++) ok = *p >= m->tab[e].lo && *p < m->tab[e].hi;
    if (ok) return 0;
    return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                         "rank %d of the embedding communicator sent a malformed pull request (%d bytes)",
                         source, bytes);
}

/* Keep a request until the exchange ends (its data lives only during the
 * call), and add its positions to the round's. */
static int on_request(void *arg, int source, void *data, int bytes)
{
    struct trainer *t = arg;
    struct emb *m = t->emb;
    int rc = check_request(m, source, data, bytes);
    if (rc) return rc;
    if (m->n_in == m->cap_in) {
        int cap = m->cap_in ? 2 * m->cap_in : 8;
        struct emb_request *r = realloc(m->in, (size_t)cap * sizeof *r);
        if (!r) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
        m->in = r;
        m->cap_in = cap;
    }
    int64_t *q = malloc((size_t)bytes);
    if (!q) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    memcpy(q, data, (size_t)bytes);
    m->in[m->n_in++] = (struct emb_request){source, q};
    const int64_t *p = q + m->E;
    for (int e = 0; e < m->E; e++) {
        struct emb_tab *x = &m->tab[e];
        if (x->n_req + q[e] > x->cap_req) {
            int64_t cap = 2 * (x->n_req + q[e]);
            int64_t *r = realloc(x->req, (size_t)cap * sizeof *r);
            if (!r) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
            x->req = r;
            x->cap_req = cap;
        }
        if (q[e]) memcpy(x->req + x->n_req, p, (size_t)q[e] * sizeof *p); /* x->req may be NULL */
        x->n_req += q[e];
        p += q[e];
    }
    return 0;
}

/* Reply to request r with its rows of w, in the order it asked. */
static int reply(struct emb *m, const struct emb_request *r, struct tensor *const *w)
{
    const int64_t *q = r->q, *p = q + m->E;
    int64_t vbytes = 0;
    for (int e = 0; e < m->E; e++) vbytes += q[e] * m->tab[e].spec->dim * (int64_t)m->esz;
    if (m->n_out == m->cap_out) {
        int cap = m->cap_out ? 2 * m->cap_out : 8;
        char **o = realloc(m->out, (size_t)cap * sizeof *o);
        if (o) m->out = o;
        MPI_Request *rq = realloc(m->oreq, (size_t)cap * sizeof *rq);
        if (rq) m->oreq = rq;
        if (!o || !rq) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
        m->cap_out = cap;
    }
    char *v = malloc((size_t)vbytes + 1), *at = v;
    if (!v) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (int e = 0; e < m->E; e++) {
        const struct emb_tab *x = &m->tab[e];
        size_t row = (size_t)x->spec->dim * m->esz;
        for (int64_t j = 0; j < q[e]; j++, p++) {
            if (j + PREFETCH < q[e]) __builtin_prefetch((const char *)w[e]->data + (size_t)(p[PREFETCH] - x->lo) * row);
            memcpy(at, (const char *)w[e]->data + (size_t)(*p - x->lo) * row, row);
            at += row;
        }
    }
    m->out[m->n_out] = v;
    int rc = MPI_Isend(v, (int)vbytes, MPI_BYTE, r->source, TAG_EROWS, m->comm, &m->oreq[m->n_out]);
    if (rc != MPI_SUCCESS) {
        free(v);
        return cairn_err_mpi(rc, __FILE__, __LINE__, "MPI_Isend");
    }
    m->n_out++;
    return 0;
}

enum settle { SETTLE_ASKED, SETTLE_REST, SETTLE_ALL };

/* Apply the pending push to its rows that this round's pulls asked for
 * (x->req, sorted), to the others, or to all.  Each row's update is the
 * same arithmetic whenever it runs, so the order changes no bit. */
static void settle(struct trainer *t, enum settle which)
{
    struct emb *m = t->emb;
    int64_t done = 0;
    const struct emb_pending *pd = &m->pend;
    const char *g = m->buf;
    for (int e = 0; e < m->E; e++) {
        struct emb_tab *x = &m->tab[e];
        size_t row = (size_t)x->spec->dim * m->esz;
        for (int64_t j = 0, r = 0; j < x->n_pend; j++, g += row) {
            while (which != SETTLE_ALL && r < x->n_req && x->req[r] < x->pend[j]) r++;
            bool asked = which != SETTLE_ALL && r < x->n_req && x->req[r] == x->pend[j];
            if (which == SETTLE_ASKED ? !asked : asked) continue;
            size_t at = (size_t)(x->pend[j] - x->lo) * row;
            if (which != SETTLE_ASKED && j + PREFETCH < x->n_pend)
                prefetch_row(pd->w, pd->m, pd->v, e, (size_t)(x->pend[j + PREFETCH] - x->lo) * row, row);
            optim_update(t->dt, &pd->a, x->spec->dim, (char *)pd->w[e]->data + at, g,
                         pd->m[e] ? (char *)pd->m[e]->data + at : NULL, pd->v[e] ? (char *)pd->v[e]->data + at : NULL);
            if (++done % PROGRESS_ROWS == 0 && m->push != MPI_REQUEST_NULL) {
                int flag; /* let the next push land, so replica 0 is not kept waiting (keeps the request) */
                MPI_Request_get_status(m->push, &flag, MPI_STATUS_IGNORE);
            }
        }
    }
}

/* Post the receive of this round's push (the rows served: their values, in
 * order) into inbuf, so that replica 0's send completes while the shard
 * still updates the last push's rows (settle polls it) and the dense
 * layers. */
static int expect_push(struct trainer *t)
{
    struct emb *m = t->emb;
    int rc = 0;
    int64_t bytes = 0;
    m->push = MPI_REQUEST_NULL;
    if (m->served == 0) return 0; /* no pull, so no push */
    for (int e = 0; e < m->E; e++) bytes += m->tab[e].n_req * m->tab[e].spec->dim * (int64_t)m->esz;
    CAIRN_CHECK(grow(&m->inbuf, &m->inbuf_cap, (size_t)bytes + 1));
    m->push_bytes = (int)bytes;
    CAIRN_CHECK_MPI(MPI_Irecv(m->inbuf, (int)bytes + 1, MPI_BYTE, 0, TAG_EPUSH, m->comm, &m->push));
cleanup:
    return rc;
}

/* A round of pulls: take every request, bring the rows asked for up to
 * date, reply, and only then update the last push's other rows, while
 * the readers compute (the update is off the step's critical path). */
int emb_serve(struct trainer *t, struct tensor *const *w, bool push)
{
    struct emb *m = t->emb;
    int rc = 0, done = 0;
    for (int e = 0; e < m->E; e++) m->tab[e].n_req = 0;
    rc = coll_exchange(m->comm, TAG_EREQ + (int)(m->round++ & 1), 0, NULL, NULL, NULL, on_request, t);
    m->served = 0;
    for (int e = 0; rc == 0 && e < m->E; e++) { /* the union of the positions asked for, sorted */
        struct emb_tab *x = &m->tab[e];
        int64_t u = 0;
        rc = sort_i64(x->req, x->n_req);
        for (int64_t j = 0; rc == 0 && j < x->n_req; j++)
            if (j == 0 || x->req[j] != x->req[j - 1]) x->req[u++] = x->req[j];
        x->n_req = u;
        m->served += u;
    }
    if (rc == 0 && m->pend.on) settle(t, SETTLE_ASKED);
    for (int i = 0; rc == 0 && i < m->n_in; i++) rc = reply(m, &m->in[i], w);
    for (int i = 0; i < m->n_in; i++) free(m->in[i].q);
    m->n_in = 0;
    m->push = MPI_REQUEST_NULL;
    if (rc == 0 && push) rc = expect_push(t);
    done = coll_wait(m->n_out, m->oreq); /* first: a large reply moves only while MPI is called */
    for (int i = 0; i < m->n_out; i++) free(m->out[i]);
    m->n_out = 0;
    if (rc == 0 && done == 0 && m->pend.on) {
        settle(t, SETTLE_REST);
        m->pend.on = false;
    }
    return rc ? rc : done;
}

int emb_take_push(struct trainer *t, struct tensor *const *w, struct tensor *const *mm,
                  struct tensor *const *v, const struct optim_args *a)
{
    struct emb *m = t->emb;
    int rc = 0;
    if (m->served == 0) return 0;
    CAIRN_CHECK(coll_wait_sized(1, &m->push, &m->push_bytes));
    char *b = m->buf; /* the push received becomes the pending one */
    size_t cap = m->buf_cap;
    m->buf = m->inbuf;
    m->buf_cap = m->inbuf_cap;
    m->inbuf = b;
    m->inbuf_cap = cap;
    m->pend.on = true;
    m->pend.a = *a;
    for (int e = 0; e < m->E; e++) {
        struct emb_tab *x = &m->tab[e];
        int64_t *p = x->pend, c = x->cap_pend; /* the positions served become the pending rows */
        x->pend = x->req;
        x->cap_pend = x->cap_req;
        x->n_pend = x->n_req;
        x->req = p;
        x->cap_req = c;
        x->n_req = 0;
        m->pend.w[e] = w[e];
        m->pend.m[e] = mm ? mm[e] : NULL;
        m->pend.v[e] = v ? v[e] : NULL;
    }
cleanup:
    return rc;
}

void emb_settle(struct trainer *t)
{
    if (!t->emb || !t->emb->pend.on) return;
    settle(t, SETTLE_ALL);
    t->emb->pend.on = false;
}

int emb_dump_grads(struct trainer *t, int64_t f)
{
    struct emb *m = t->emb;
    int rc = 0;
    const char *g = m->buf;
    int64_t *ids = NULL;
    hid_t d = H5I_INVALID_HID;
    for (int e = 0; e < m->E; e++) {
        struct emb_tab *x = &m->tab[e];
        int64_t n = m->pend.on ? x->n_pend : 0, at = 0, total = 0, a = spread_step(x->spec->rows);
        char name[96];
        CAIRN_CHECK_MPI(MPI_Exscan(&n, &at, 1, MPI_INT64_T, MPI_SUM, t->group));
        CAIRN_CHECK_MPI(MPI_Allreduce(&n, &total, 1, MPI_INT64_T, MPI_SUM, t->group));
        if (t->shard == 0) at = 0; /* MPI_Exscan leaves rank 0's undefined */
        free(ids);
        CAIRN_CHECK_ALLOC(ids = malloc((size_t)(n + 1) * sizeof *ids));
        for (int64_t j = 0; j < n; j++) ids[j] = spread_row(x->pend[j], x->spec->rows, a);
        struct shape is = {.ndim = 1, .d = {total}}, rs = {.ndim = 2, .d = {total, x->spec->dim}};
        model_table_grad_name(x->spec->name, "ids", name, sizeof name);
        CAIRN_CHECK_H5(d = h5_create_dataset(f, name, DT_I64, &is, H5P_DEFAULT));
        CAIRN_CHECK(h5_write_rows(d, DT_I64, at, n, ids, H5P_DEFAULT));
        H5Dclose(d);
        model_table_grad_name(x->spec->name, "rows", name, sizeof name);
        CAIRN_CHECK_H5(d = h5_create_dataset(f, name, t->dt, &rs, H5P_DEFAULT));
        CAIRN_CHECK(h5_write_rows(d, t->dt, at, n, g, H5P_DEFAULT));
        H5Dclose(d);
        d = H5I_INVALID_HID;
        g += (size_t)(n * x->spec->dim) * m->esz;
    }
cleanup:
    if (d >= 0) H5Dclose(d);
    free(ids);
    return rc;
}
