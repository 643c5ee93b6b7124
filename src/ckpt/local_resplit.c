/* A node-local checkpoint loaded on another layout (lp_resplit): after a
 * node is lost the world shrinks, and the parts the ranks wrote no longer
 * match the ranks that read them.  As with the shared file, the state is
 * re-split: sharded blobs by block_range over the new group's ranks,
 * replicated ones to the group's rank 0 and then broadcast, per-rank ones
 * only onto a group of the same size.
 *
 * The manifest names the writer's groups and settings.  Each old part is
 * read whole by one rank of a node that has a copy of it (its own copy
 * first, else the partner copy), checked there against the manifest
 * (header, size, records, checksum), and its rows sent to the ranks that
 * own them now, one blob at a time.  A copy that fails its check is set
 * aside for the part's other copy.
 *
 * The same pieces serve `cairn ckpt extract` (ckpt_local_extract): a
 * blob's parts, found on the node it runs on, joined into the whole. */
#include "ckpt_priv.h"
#include "local_priv.h"

#include "cairn/checksum.h"
#include "cairn/clock.h"
#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/partition.h"
#include "cairn/plan.h"
#include "cairn/h5util.h"
#include "cairn/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SLOT (CAIRN_MAX_DIMS + 1) /* a record's shape: ndim, then its dimensions */

/* The writer's layout and, once fetched, the parts this rank holds. */
struct old {
    const struct ckpt_local_manifest *man;
    struct contents c; /* its settings, parsed: blobs in order, groups contiguous */
    int W;             /* its world */
    int *group_of;     /* W: each old rank's group in man->groups, -1 for a spare */
    int *entry0;       /* man->n_groups: each group's first entry in c, -1 if none */
    char **held;       /* W: the parts this rank read, NULL for the others */
    unsigned char *needed; /* W: the parts of the groups this job loads from */
    bool partner_read;     /* read_here's last part came from a partner copy */
    long long *keys;   /* W: who holds each part (holder + size if a partner copy) */
    int64_t *first;    /* c.n * SLOT: each blob's shape in its group's first part, every rank alike */
    int64_t *rows;     /* c.n: a sharded blob's rows, every part's together */
};

static void old_free(struct old *o)
{
    for (int r = 0; o->held && r < o->W; r++) free(o->held[r]);
    free(o->held);
    free(o->needed);
    free(o->keys);
    free(o->first);
    free(o->rows);
    free(o->group_of);
    free(o->entry0);
    ckf_contents_free(&o->c);
}

static int man_group(const struct ckpt_local_manifest *man, const char *name)
{
    for (int g = 0; g < man->n_groups; g++)
        if (strcmp(man->groups[g].name, name) == 0) return g;
    return -1;
}

/* Does old group rank j's part hold entry e (a replicated blob: rank 0's alone)? */
static bool part_holds(const struct entry *e, int j) { return e->dist != DIST_REPLICATED || j == 0; }

/* The record of entry ei in old rank r's part, or -1. */
static int rec_of(const struct old *o, int r, int ei)
{
    int g = o->group_of[r], j = r - o->man->groups[g].first, k = 0;
    if (!part_holds(&o->c.v[ei], j)) return -1;
    for (int i = o->entry0[g]; i < ei; i++) k += part_holds(&o->c.v[i], j);
    return k;
}

static int records_of(const struct old *o, int r)
{
    int g = o->group_of[r], n = 0;
    if (g < 0 || o->entry0[g] < 0) return 0;
    for (int i = o->entry0[g]; i < o->c.n && strcmp(o->c.v[i].group, o->man->groups[g].name) == 0; i++)
        n += part_holds(&o->c.v[i], r - o->man->groups[g].first);
    return n;
}

/* The writer's layout from the manifest, checked: the settings fit plan's
 * job (if given), the groups cover what the settings name. */
static int old_layout(const struct plan *plan, const char *name, const struct ckpt_local_manifest *man, struct old *o)
{
    int rc = 0;
    char what[300];
    *o = (struct old){.man = man, .W = man->world};
    o->c.settings = strdup(man->settings);
    CAIRN_CHECK_ALLOC(o->c.settings);
    CAIRN_CHECK(ckf_parse_settings(man->settings, &o->c));
    snprintf(what, sizeof what, "the node-local checkpoint %s", name);
    if (plan) CAIRN_CHECK(ckf_check_settings(&o->c, what, plan));
    CAIRN_CHECK_ALLOC(o->group_of = malloc((size_t)o->W * sizeof *o->group_of));
    CAIRN_CHECK_ALLOC(o->entry0 = malloc(((size_t)man->n_groups + 1) * sizeof *o->entry0));
    for (int r = 0; r < o->W; r++) o->group_of[r] = -1;
    for (int g = 0; g < man->n_groups; g++) {
        o->entry0[g] = -1;
        for (int r = man->groups[g].first; r < man->groups[g].first + man->groups[g].nranks; r++) {
            if (o->group_of[r] >= 0) CAIRN_FAIL(CAIRN_ECORRUPT, "%s: its groups overlap", what);
            o->group_of[r] = g;
        }
    }
    for (int i = 0; i < o->c.n; i++) {
        int g = man_group(man, o->c.v[i].group);
        if (g < 0) CAIRN_FAIL(CAIRN_ECORRUPT, "%s: no group %s in its manifest", what, o->c.v[i].group);
        /* a part's records follow its group's blobs, which are contiguous */
        if (o->entry0[g] >= 0 && strcmp(o->c.v[i - 1].group, o->c.v[i].group) != 0)
            CAIRN_FAIL(CAIRN_ECORRUPT, "%s: its settings list group %s's blobs apart", what, o->c.v[i].group);
        if (o->entry0[g] < 0) o->entry0[g] = i;
        o->c.v[i].ranks = man->groups[g].nranks;
    }
cleanup:
    return rc;
}

/* ---- finding and checking the parts -------------------------------------------- */

/* Offer this node's copies of every old part (the node's rank of index r
 * modulo its ranks offers part r), except those excl sets aside. */
static void scan(const struct ckpt_view *v, const struct placement_nodes *nd, const char *root, const char *name,
                 const struct old *o, const unsigned char *excl)
{
    int me = v->rank, size = v->plan->nranks, k = nd->node_of[me];
    char path[4400];
    struct stat st;
    for (int r = 0; r < o->W; r++) {
        o->keys[r] = KEY_NONE;
        if (!o->needed[r] || nd->local[me] != r % lp_node_count(nd, k)) continue;
        for (int partner = 0; partner < 2 && o->keys[r] == KEY_NONE; partner++)
            if (!(excl[r] & (partner ? EXCL_PARTNER : EXCL_OWN)) &&
                lp_part_path(path, sizeof path, root, name, partner ? "partner" : "rank", r) == 0 &&
                lstat(path, &st) == 0 && lp_check_copy(path, r, o->man) == 0)
                o->keys[r] = (long long)partner * size + me;
    }
}

/* Hold old part r (bytes long, read into buf) against the manifest and
 * the writer's settings: header, records and checksum. */
static int check_old(const struct old *o, int r, char *buf, uint64_t bytes)
{
    const struct ckpt_local_manifest *man = o->man;
    const struct part_head *h = (const struct part_head *)buf;
    int n = records_of(o, r);
    size_t head = sizeof *h + (size_t)n * sizeof(struct part_rec);
    if (bytes < head || memcmp(h->magic, PART_MAGIC, 8) != 0 || h->version != PART_VERSION || h->rank != r ||
        h->n_blobs != (uint32_t)n || h->head_sum != lp_head_sum(buf, head))
        return cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "rank %d's part has a damaged header", r);
    if (h->epoch != man->meta.epoch || h->step != man->meta.step || h->done != man->meta.done ||
        h->world != man->world || memcmp(h->identity, man->identity, 17) != 0 || h->data_bytes != bytes - head)
        return cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "rank %d's part disagrees with the manifest", r);
    const struct part_rec *rec = (const struct part_rec *)(buf + sizeof *h);
    uint64_t data = 0, sum = 0;
    int64_t first = 0;
    for (int ei = 0; ei < o->c.n; ei++) {
        int k = o->group_of[r] >= 0 && strcmp(o->c.v[ei].group, man->groups[o->group_of[r]].name) == 0
                    ? rec_of(o, r, ei) : -1;
        if (k < 0) continue;
        const struct entry *e = &o->c.v[ei];
        const struct part_rec *x = &rec[k];
        uint64_t elems = 1;
        bool ok = x->dtype == (int32_t)e->dtype && x->ndim >= 0 && x->ndim <= CAIRN_MAX_DIMS &&
                  (e->shape.ndim < 0 || x->ndim == e->shape.ndim) && (e->dist != DIST_SHARDED || x->ndim > 0);
        for (int d = 0; ok && d < x->ndim; d++) {
            bool pinned = e->shape.ndim >= 0 && e->shape.d[d] >= 0 && (d > 0 || e->dist != DIST_SHARDED);
            ok = x->dims[d] >= 0 && x->dims[d] <= (INT64_C(1) << 50) && (!pinned || x->dims[d] == e->shape.d[d]) &&
                 (x->dims[d] == 0 || elems <= (UINT64_MAX >> 4) / (uint64_t)x->dims[d]);
            elems *= ok ? (uint64_t)x->dims[d] : 1;
        }
        if (!ok || elems * dtype_size(e->dtype) != x->bytes || x->bytes > h->data_bytes - data)
            return cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__,
                                 "rank %d's part holds another type or shape of %s/%s than its settings", r,
                                 e->group, e->blob);
        int64_t words = (int64_t)(x->bytes / 4);
        sum += checksum_part(buf + head + data, 4, words, first);
        first += words;
        data += x->bytes;
    }
    if (data != h->data_bytes || sum != h->data_sum || sum != man->parts[r].sum)
        return cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "rank %d's part fails its checksum", r);
    return 0;
}

/* Read and check the parts this rank holds; failed[r] for each that fails. */
static int read_held(const struct ckpt_view *v, const char *root, const char *name, struct old *o, int *failed)
{
    int size = v->plan->nranks, first = 0;
    bool nomem = false;
    char path[4400];
    for (int r = 0; r < o->W; r++) failed[r] = 0;
    for (int r = 0; r < o->W; r++) {
        if (o->keys[r] == KEY_NONE || o->keys[r] % size != v->rank || o->held[r]) continue;
        bool partner = o->keys[r] >= size;
        int rc = lp_part_path(path, sizeof path, root, name, partner ? "partner" : "rank", r);
        if (rc == 0) rc = lp_read_file(path, o->man->parts[r].bytes, &o->held[r]);
        if (rc == 0) rc = check_old(o, r, o->held[r], o->man->parts[r].bytes);
        if (rc) {
            free(o->held[r]);
            o->held[r] = NULL;
            failed[r] = rc != CAIRN_ENOMEM; /* no copy's fault */
            nomem |= rc == CAIRN_ENOMEM;
            first = first ? first : rc; /* this rank's first reason stays its error */
        }
    }
    return nomem ? CAIRN_ENOMEM : first;
}

/* Every old part read and checked by one rank; a copy that fails is set
 * aside for the other.  Fails alike everywhere: CAIRN_ENOCKPT (a part on
 * no node left) or CAIRN_ECORRUPT (its last copy's reason). */
static int fetch_all(const struct ckpt_view *v, const struct placement_nodes *nd, const char *root,
                     const char *name, struct old *o)
{
    int rc = 0, W = o->W;
    unsigned char *excl = calloc((size_t)W + 1, 1);
    int *failed = calloc((size_t)W + 1, sizeof *failed);
    char damaged[1024] = "";
    CAIRN_CHECK(coll_agree(v->comm, excl && failed ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__,
                                                                        "out of memory")));
    for (int round = 0; round < 3; round++) {
        scan(v, nd, root, name, o, excl);
        CAIRN_CHECK(coll_allreduce(MPI_IN_PLACE, o->keys, W, MPI_LONG_LONG, MPI_MIN, v->comm));
        for (int r = 0; r < W; r++)
            if (o->keys[r] == KEY_NONE && o->needed[r]) {
                if (damaged[0]) CAIRN_FAIL(CAIRN_ECORRUPT, "%s", damaged);
                CAIRN_FAIL(CAIRN_ENOCKPT, "no node of this run holds rank %d's part (%s on nodes it does not have)",
                           r, nd->n < 2 ? "its copy was" : "its own copy and its partner copy were");
            }
        int crc = read_held(v, root, name, o, failed);
        CAIRN_CHECK(coll_allreduce(MPI_IN_PLACE, failed, W, MPI_INT, MPI_MAX, v->comm));
        bool any = false;
        for (int r = 0; r < W; r++) any |= failed[r] != 0;
        if (!any) goto cleanup;
        int nomem = crc == CAIRN_ENOMEM;
        CAIRN_CHECK(coll_allreduce(MPI_IN_PLACE, &nomem, 1, MPI_INT, MPI_MAX, v->comm));
        if (nomem) /* no copy's fault: fail alike, setting none aside */
            CAIRN_FAIL(CAIRN_ENOMEM, "out of memory reading the node-local checkpoint's parts");
        rc = coll_agree(v->comm, crc);
        snprintf(damaged, sizeof damaged, "%s", cairn_errmsg());
        rc = 0;
        for (int r = 0; r < W; r++)
            if (failed[r]) excl[r] |= o->keys[r] >= v->plan->nranks ? EXCL_PARTNER : EXCL_OWN;
    }
    CAIRN_FAIL(CAIRN_ECORRUPT, "%s", damaged);
cleanup:
    free(excl);
    free(failed);
    return rc;
}

/* The parts of each old group that a group of this job loads from (its
 * own name, or its family's first): a spare rank's, or a dropped stage's,
 * may be gone. */
static void mark_needed(const struct plan *p, struct old *o)
{
    for (int g = 0; g < p->n_groups; g++) {
        const char *src = p->groups[g].name;
        if (man_group(o->man, src) < 0 && p->groups[g].family) src = p->groups[ckf_family_first(p, p->groups[g].family)].name;
        int og = man_group(o->man, src);
        for (int j = 0; og >= 0 && j < o->man->groups[og].nranks; j++) o->needed[o->man->groups[og].first + j] = 1;
    }
}

/* What every rank needs of the parts' records, whatever the number of
 * parts: each blob's shape in its group's first part and a sharded one's
 * rows in all.  Their holders check the parts against them: every part
 * of a per-rank blob has the first one's shape, every part of a sharded
 * one its rest and the rows of its block (block_range), as the writer's
 * split had them. */
static int share_blobs(const struct ckpt_view *v, struct old *o)
{
    int rc = 0, n = o->c.n, bad = 0;
    if ((size_t)n * SLOT > INT32_MAX) return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "too many blobs");
    o->first = malloc(((size_t)n * SLOT + 1) * sizeof *o->first);
    o->rows = calloc((size_t)n + 1, sizeof *o->rows);
    CAIRN_CHECK(coll_agree(v->comm, o->first && o->rows ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__,
                                                                            "out of memory")));
    for (size_t i = 0; i < (size_t)n * SLOT; i++) o->first[i] = -1;
    for (int r = 0; r < o->W; r++) {
        for (int ei = 0; o->held[r] && o->group_of[r] >= 0 && ei < n; ei++) {
            int k = strcmp(o->c.v[ei].group, o->man->groups[o->group_of[r]].name) ? -1 : rec_of(o, r, ei);
            if (k < 0) continue;
            const struct part_rec *x = (const struct part_rec *)(o->held[r] + sizeof(struct part_head)) + k;
            if (r == o->man->groups[o->group_of[r]].first) {
                o->first[(size_t)ei * SLOT] = x->ndim;
                for (int d = 0; d < x->ndim; d++) o->first[(size_t)ei * SLOT + 1 + d] = x->dims[d];
            }
            if (o->c.v[ei].dist == DIST_SHARDED) o->rows[ei] += x->dims[0]; /* at most 2^50 each (check_old) */
        }
    }
    CAIRN_CHECK(coll_allreduce(MPI_IN_PLACE, o->first, n * SLOT, MPI_INT64_T, MPI_MAX, v->comm));
    CAIRN_CHECK(coll_allreduce(MPI_IN_PLACE, o->rows, n, MPI_INT64_T, MPI_SUM, v->comm));
    for (int r = 0; r < o->W; r++) {
        const struct ckpt_local_group *g = o->held[r] && o->group_of[r] >= 0 ? &o->man->groups[o->group_of[r]] : NULL;
        for (int ei = 0; g && ei < n; ei++) {
            int k = strcmp(o->c.v[ei].group, g->name) ? -1 : rec_of(o, r, ei);
            if (k < 0) continue;
            const struct part_rec *x = (const struct part_rec *)(o->held[r] + sizeof(struct part_head)) + k;
            const int64_t *f = &o->first[(size_t)ei * SLOT];
            bool sharded = o->c.v[ei].dist == DIST_SHARDED, same = x->ndim == f[0] && (!sharded || x->ndim > 0);
            for (int d = sharded; same && d < x->ndim; d++) same = x->dims[d] == f[1 + d];
            if (sharded && same) {
                int64_t lo, hi;
                block_range(o->rows[ei], g->nranks, r - g->first, &lo, &hi);
                same = o->rows[ei] >= 0 && x->dims[0] == hi - lo;
            }
            bad |= !same;
        }
    }
    rc = bad ? cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "the parts of a blob disagree on its shape") : 0;
cleanup:
    return coll_agree(v->comm, rc);
}

static const int64_t *first_shape(const struct old *o, int ei) { return &o->first[(size_t)ei * SLOT]; }

/* Where record k's data starts in old part r (its holder's buffer). */
static uint64_t data_at(const struct old *o, int r, int k)
{
    const struct part_rec *rec = (const struct part_rec *)(o->held[r] + sizeof(struct part_head));
    uint64_t at = sizeof(struct part_head) + (uint64_t)records_of(o, r) * sizeof(struct part_rec);
    for (int i = 0; i < k; i++) at += rec[i].bytes;
    return at;
}

/* ---- moving the rows -------------------------------------------------------------- */

/* One blob of the new plan and where its rows come from. */
struct move {
    int group, blob; /* in the new plan */
    int ei, og;      /* its entry in the old settings, that entry's old group */
    enum dtype dtype;
    struct shape whole; /* the blob's global shape (sharded), one part's (per-rank, replicated) */
    int64_t per;        /* elements per row */
};

/* The blob's shape from the old parts' records (the same on every rank),
 * checked: a sharded blob's parts agree beyond their rows. */
static int plan_move(const struct ckpt_view *v, const struct old *o, int g, int b, struct move *mv)
{
    const struct plan *p = v->plan;
    const struct group *gr = &p->groups[g];
    const char *src = gr->name;
    if (man_group(o->man, src) < 0 && gr->family) src = p->groups[ckf_family_first(p, gr->family)].name;
    *mv = (struct move){.group = g, .blob = b, .ei = -1, .og = man_group(o->man, src)};
    for (int i = 0; i < o->c.n && mv->og >= 0; i++)
        if (strcmp(o->c.v[i].group, src) == 0 && strcmp(o->c.v[i].blob, gr->blobs[b].name) == 0) mv->ei = i;
    if (mv->ei < 0) return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "no blob %s/%s in it", src, gr->blobs[b].name);
    const struct entry *e = &o->c.v[mv->ei];
    const struct ckpt_local_group *og = &o->man->groups[mv->og];
    if (e->dist == DIST_LOCAL && og->nranks != gr->nranks)
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                             "%s/%s is per-rank state of %d ranks and group %s now has %d; per-rank state is "
                             "never redistributed: resume with %d ranks in group %s", e->group, e->blob,
                             og->nranks, gr->name, gr->nranks, og->nranks, gr->name);
    mv->dtype = e->dtype;
    const int64_t *s0 = first_shape(o, mv->ei);
    mv->whole.ndim = (int)s0[0];
    for (int d = 0; d < mv->whole.ndim; d++) mv->whole.d[d] = s0[1 + d];
    mv->per = 1;
    for (int d = 1; d < mv->whole.ndim; d++) mv->per *= mv->whole.d[d];
    if (e->dist != DIST_SHARDED) return 0; /* every part has the first one's shape (share_blobs) */
    int64_t rows = o->rows[mv->ei];
    if (e->shape.ndim > 0 && e->shape.d[0] >= 0 && rows != e->shape.d[0])
        return cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "the parts of %s/%s hold %lld rows, its settings %lld",
                             e->group, e->blob, (long long)rows, (long long)e->shape.d[0]);
    mv->whole.d[0] = rows;
    return 0;
}

/* Rows [lo, hi) of old group rank j's block of blob mv: the writer's
 * block split (share_blobs checked it). */
static void old_rows(const struct old *o, const struct move *mv, int j, int64_t *lo, int64_t *hi)
{
    block_range(mv->whole.d[0], o->man->groups[mv->og].nranks, j, lo, hi);
}

/* The pieces of a move, each once on its sender and its receiver: from
 * old group rank j (held by `from`) to new group rank i, `bytes` bytes
 * at `src` of the part and `dst` of the tensor. */
typedef int piece_fn(void *arg, int j, int i, int from, uint64_t src, uint64_t dst, uint64_t bytes);

static int pieces(const struct ckpt_view *v, const struct old *o, const struct move *mv, piece_fn *fn, void *arg)
{
    int rc = 0, size = v->plan->nranks;
    const struct entry *e = &o->c.v[mv->ei];
    const struct ckpt_local_group *og = &o->man->groups[mv->og];
    int n = v->plan->groups[mv->group].nranks;
    uint64_t row = (uint64_t)mv->per * dtype_size(mv->dtype);
    for (int j = 0; j < og->nranks; j++) {
        int r = og->first + j, k = rec_of(o, r, mv->ei), from = (int)(o->keys[r] % size);
        if (k < 0) continue;
        uint64_t at = o->held[r] ? data_at(o, r, k) : 0;
        if (e->dist == DIST_REPLICATED || e->dist == DIST_LOCAL) { /* whole, to group rank 0 or j */
            const int64_t *s = first_shape(o, mv->ei);
            uint64_t bytes = dtype_size(mv->dtype);
            for (int d = 0; d < s[0]; d++) bytes *= (uint64_t)s[1 + d];
            CAIRN_CHECK(fn(arg, j, e->dist == DIST_REPLICATED ? 0 : j, from, at, 0, bytes));
            continue;
        }
        int64_t a, b;
        old_rows(o, mv, j, &a, &b);
        for (int i = 0; i < n; i++) {
            int64_t lo, hi;
            block_range(mv->whole.d[0], n, i, &lo, &hi);
            int64_t x = a > lo ? a : lo, y = b < hi ? b : hi;
            if (x < y)
                CAIRN_CHECK(fn(arg, j, i, from, at + (uint64_t)(x - a) * row, (uint64_t)(x - lo) * row,
                               (uint64_t)(y - x) * row));
        }
    }
cleanup:
    return rc;
}

/* Posting one blob's pieces: counting them, then sending and receiving. */
struct poster {
    const struct ckpt_view *v;
    const struct old *o;
    const struct move *mv;
    struct posts sends, recvs;
    int nsend, nrecv;
    bool post;
    uint64_t got;
};

static int chunks(uint64_t bytes) { return (int)((bytes + CHUNK - 1) / CHUNK); }

static int post_piece(void *arg, int j, int i, int from, uint64_t src, uint64_t dst, uint64_t bytes)
{
    struct poster *ps = arg;
    const struct ckpt_view *v = ps->v;
    int first = v->plan->groups[ps->mv->group].first, to = first + i, r = ps->o->man->groups[ps->mv->og].first + j;
    bool mine = v->group == ps->mv->group && v->group_rank == i;
    if (!bytes) return 0;
    if (!ps->post) { /* counting */
        ps->nsend += from == v->rank ? chunks(bytes) : 0;
        ps->nrecv += mine ? chunks(bytes) : 0;
        return 0;
    }
    int rc = 0;
    if (from == v->rank) rc = lp_post(&ps->sends, ps->o->held[r] + src, bytes, to, true, 0, v->comm);
    if (rc == 0 && mine) {
        rc = lp_post(&ps->recvs, (char *)v->tensors[ps->mv->blob]->data + dst, bytes, from, false, 0,
                     v->comm);
        ps->got += bytes;
    }
    return rc;
}

/* This rank's tensor of blob mv, sized for what it receives. */
static int size_tensor(const struct ckpt_view *v, const struct old *o, const struct move *mv)
{
    const struct entry *e = &o->c.v[mv->ei];
    int n = v->plan->groups[mv->group].nranks;
    struct shape s = mv->whole;
    if (v->group != mv->group || (e->dist == DIST_REPLICATED && v->group_rank != 0)) return 0;
    if (e->dist == DIST_SHARDED) {
        int64_t lo, hi;
        block_range(s.d[0], n, v->group_rank, &lo, &hi);
        s.d[0] = hi - lo;
    } else if (e->dist == DIST_LOCAL) {
        const int64_t *x = first_shape(o, mv->ei);
        s.ndim = (int)x[0];
        for (int d = 0; d < s.ndim; d++) s.d[d] = x[1 + d];
    }
    return tensor_resize(v->tensors[mv->blob], mv->dtype, &s);
}

/* Move one blob's rows.  Everything is had before anything is posted:
 * once a rank posts, only MPI itself may fail. */
static int move_blob(const struct ckpt_view *v, const struct old *o, const struct move *mv, uint64_t *got)
{
    int rc = 0;
    struct poster ps = {.v = v, .o = o, .mv = mv};
    rc = size_tensor(v, o, mv);
    if (rc == 0) rc = pieces(v, o, mv, post_piece, &ps);
    if (rc == 0) {
        ps.sends.req = malloc(((size_t)ps.nsend + 1) * sizeof *ps.sends.req);
        ps.sends.sizes = malloc(((size_t)ps.nsend + 1) * sizeof *ps.sends.sizes);
        ps.recvs.req = malloc(((size_t)ps.nrecv + 1) * sizeof *ps.recvs.req);
        ps.recvs.sizes = malloc(((size_t)ps.nrecv + 1) * sizeof *ps.recvs.sizes);
        if (!ps.sends.req || !ps.sends.sizes || !ps.recvs.req || !ps.recvs.sizes)
            rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    }
    CAIRN_CHECK(coll_agree(v->comm, rc));
    ps.post = true;
    rc = pieces(v, o, mv, post_piece, &ps);
    /* every message posted completes, or a peer would wait for it */
    int wrc = ps.sends.n ? coll_wait(ps.sends.n, ps.sends.req) : 0;
    if (rc == 0) rc = wrc;
    wrc = ps.recvs.n ? coll_wait_sized(ps.recvs.n, ps.recvs.req, ps.recvs.sizes) : 0;
    if (rc == 0) rc = wrc;
    *got += ps.got;
    rc = coll_agree(v->comm, rc);
cleanup:
    lp_posts_free(&ps.sends);
    lp_posts_free(&ps.recvs);
    return rc;
}

/* "world 6 -> 4 ranks, ps 4 -> 2" */
static void describe_change(const struct ckpt_view *v, const struct old *o, char *out, size_t size)
{
    const struct plan *p = v->plan;
    struct strbuf b = {0};
    if (o->W != p->nranks) strbuf_addf(&b, "world %d -> %d ranks", o->W, p->nranks);
    for (int g = 0; g < o->man->n_groups; g++) {
        int k = plan_find_group(p, o->man->groups[g].name);
        if (k >= 0 && p->groups[k].nranks != o->man->groups[g].nranks)
            strbuf_addf(&b, "%s%s %d -> %d", b.len ? ", " : "", p->groups[k].name, o->man->groups[g].nranks,
                        p->groups[k].nranks);
    }
    const char **names = malloc(((size_t)o->man->n_groups + 1) * sizeof *names);
    for (int g = 0; names && g < o->man->n_groups; g++) names[g] = o->man->groups[g].name;
    if (names) ckf_family_change(p, names, o->man->n_groups, &b);
    free(names);
    snprintf(out, size, "%s", strbuf_str(&b));
    strbuf_free(&b);
}

int lp_resplit(const struct ckpt_view *v, const char (*hosts)[PLACEMENT_HOST_MAX], const char *root,
               const char *name, const struct ckpt_local_manifest *man, struct ckpt_io *io)
{
    int rc = 0, size = v->plan->nranks, n = ckf_count_persistent(v->plan), k = 0;
    double t0 = clock_now();
    struct old o = {0};
    struct placement_nodes nd = {0};
    struct move *mv = calloc((size_t)n + 1, sizeof *mv);
    rc = mv ? old_layout(v->plan, name, man, &o) : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    if (rc == 0) rc = placement_nodes(hosts, size, &nd);
    if (rc == 0 && !((o.held = calloc((size_t)o.W, sizeof *o.held)) && (o.keys = malloc((size_t)o.W * sizeof *o.keys))))
        rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    if (rc == 0 && !(o.needed = calloc((size_t)o.W, 1)))
        rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    CAIRN_CHECK(coll_agree(v->comm, rc));
    mark_needed(v->plan, &o);
    CAIRN_CHECK(fetch_all(v, &nd, root, name, &o));
    CAIRN_CHECK(share_blobs(v, &o));
    /* every blob's plan first, the same on every rank: no rank posts a
     * message for a blob another rank refuses */
    for (int g = 0; rc == 0 && g < v->plan->n_groups; g++)
        for (int b = 0; rc == 0 && b < v->plan->groups[g].n_blobs; b++)
            if (v->plan->groups[g].blobs[b].persistent) rc = plan_move(v, &o, g, b, &mv[k++]);
    CAIRN_CHECK(coll_agree(v->comm, rc));
    for (int i = 0; i < n; i++) CAIRN_CHECK(move_blob(v, &o, &mv[i], &io->bytes));
    CAIRN_CHECK(coll_agree(v->comm, lp_spread_replicated(v)));
    describe_change(v, &o, io->layout_change, sizeof io->layout_change);
    for (int r = 0; r < o.W; r++) {
        if (o.keys[r] < size || o.keys[r] == KEY_NONE) continue;
        size_t len = strlen(io->partner_ranks);
        snprintf(io->partner_ranks + len, sizeof io->partner_ranks - len, "%s%d", io->partners ? ", " : "", r);
        io->partners++;
    }
    io->seconds = clock_now() - t0;
cleanup:
    old_free(&o);
    placement_nodes_free(&nd);
    free(mv);
    return rc;
}

/* ---- serial: a blob whole (cairn ckpt extract) ------------------------------------ */

/* Rank r's part from a copy under the manifest's directory on this node,
 * checked, into o->held[r]. */
static int read_here(struct old *o, const char *name, int r)
{
    char path[4400];
    struct stat st;
    int rc = CAIRN_ENOCKPT;
    o->partner_read = false;
    for (int partner = 0; partner < 2 && rc; partner++) {
        o->partner_read = partner;
        if (lp_part_path(path, sizeof path, o->man->root, name, partner ? "partner" : "rank", r) ||
            lstat(path, &st) != 0)
            continue;
        rc = lp_check_copy(path, r, o->man);
        if (rc == 0) rc = lp_read_file(path, o->man->parts[r].bytes, &o->held[r]);
        if (rc == 0) rc = check_old(o, r, o->held[r], o->man->parts[r].bytes);
        if (rc) {
            cairn_err_wrap(rc, "%s: ", path);
            free(o->held[r]);
            o->held[r] = NULL;
        }
    }
    if (rc == CAIRN_ENOCKPT)
        return cairn_err_set(CAIRN_ENOCKPT, __FILE__, __LINE__, "rank %d's part is not under %s on this node "
                             "(extract it on a node that holds it or its partner copy)", r, o->man->root);
    return rc;
}

/* Blob "GROUP/BLOB" whole into out: the parts of its group joined (a
 * sharded blob's rows in rank order, a per-rank one's under a leading
 * ranks dimension, a replicated one from the group's first rank). */
static const struct part_rec *rec_at(const struct old *o, int r, int k)
{
    return (const struct part_rec *)(o->held[r] + sizeof(struct part_head)) + k;
}

/* The shape blob e has whole, from its parts' records (read here):
 * sharded parts agree beyond their rows, whose sum its settings fix if
 * they know it; per-rank parts agree entirely and stack under a ranks
 * dimension.  Parts that cannot be joined are bad input. */
static int whole_shape(struct old *o, const char *name, int ei, int parts, struct shape *whole)
{
    int rc = 0;
    const struct entry *e = &o->c.v[ei];
    const struct ckpt_local_group *g = &o->man->groups[man_group(o->man, e->group)];
    int lead = e->dist == DIST_LOCAL;
    int64_t rows = 0;
    for (int j = 0; j < parts; j++) {
        int r = g->first + j;
        if (!o->held[r]) CAIRN_CHECK(read_here(o, name, r));
        const struct part_rec *x = rec_at(o, r, rec_of(o, r, ei)), *x0 = rec_at(o, g->first, rec_of(o, g->first, ei));
        if (x->ndim + lead > CAIRN_MAX_DIMS)
            CAIRN_FAIL(CAIRN_EINPUT, "%s/%s has %d dimensions per rank: at most %d can be joined", e->group,
                       e->blob, x->ndim, CAIRN_MAX_DIMS - 1);
        bool same = x->ndim == x0->ndim && (e->dist != DIST_SHARDED || x->ndim > 0);
        for (int d = e->dist == DIST_SHARDED; same && d < x->ndim; d++) same = x->dims[d] == x0->dims[d];
        if (!same) CAIRN_FAIL(CAIRN_EINPUT, "the parts of %s/%s have shapes that cannot be joined", e->group, e->blob);
        if (e->dist == DIST_SHARDED) rows += x->dims[0]; /* each at most 2^50 (check_old), 2^24 parts */
    }
    const struct part_rec *x0 = rec_at(o, g->first, rec_of(o, g->first, ei));
    *whole = (struct shape){.ndim = x0->ndim + lead};
    for (int d = 0; d < x0->ndim; d++) whole->d[d + lead] = x0->dims[d];
    if (lead) whole->d[0] = parts;
    if (e->dist == DIST_SHARDED) whole->d[0] = rows;
    if (e->dist == DIST_SHARDED && e->shape.ndim > 0 && e->shape.d[0] >= 0 && rows != e->shape.d[0])
        CAIRN_FAIL(CAIRN_ECORRUPT, "the parts of %s/%s hold %lld rows, its settings %lld", e->group, e->blob,
                   (long long)rows, (long long)e->shape.d[0]);
cleanup:
    return rc;
}

/* Blob "GROUP/BLOB" whole into out: the parts of its group joined (a
 * sharded blob's rows in rank order, a per-rank one's under a leading
 * ranks dimension, a replicated one from the group's first rank). */
static int extract_one(struct old *o, const char *name, const char *blob, hid_t out)
{
    int rc = 0, ei = -1;
    struct tensor t = {0};
    struct shape whole;
    for (int i = 0; i < o->c.n; i++) {
        char full[300];
        snprintf(full, sizeof full, "%s/%s", o->c.v[i].group, o->c.v[i].blob);
        if (strcmp(full, blob) == 0) ei = i;
    }
    if (ei < 0) CAIRN_FAIL(CAIRN_EINPUT, "no blob '%s' in the checkpoint (write GROUP/BLOB)", blob);
    const struct entry *e = &o->c.v[ei];
    const struct ckpt_local_group *g = &o->man->groups[man_group(o->man, e->group)];
    int parts = e->dist == DIST_REPLICATED ? 1 : g->nranks;
    CAIRN_CHECK(whole_shape(o, name, ei, parts, &whole));
    CAIRN_CHECK(tensor_resize(&t, e->dtype, &whole));
    uint64_t at = 0;
    for (int j = 0; j < parts; j++) {
        int r = g->first + j, k = rec_of(o, r, ei);
        memcpy((char *)t.data + at, o->held[r] + data_at(o, r, k), rec_at(o, r, k)->bytes);
        at += rec_at(o, r, k)->bytes;
        free(o->held[r]); /* copied: a group's parts need not all be held at once */
        o->held[r] = NULL;
    }
    if (at != tensor_bytes(&t)) CAIRN_FAIL(CAIRN_ECORRUPT, "the parts of %s do not fill it", blob);
    uint64_t sum = checksum_part(t.data, dtype_size(t.dtype), (int64_t)(tensor_bytes(&t) / dtype_size(t.dtype)), 0);
    CAIRN_CHECK(ckf_put_extracted(out, blob, &t, e->dist, sum));
cleanup:
    tensor_free(&t);
    return rc;
}

int ckpt_local_extract(const char *path, const char *const *blobs, int n, const char *to)
{
    int rc = 0;
    struct ckpt_local_manifest man = {0};
    struct old o = {0};
    struct fsx_out out = {.dir = -1, .fd = -1};
    hid_t f = H5I_INVALID_HID;
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    long long seed = 0;
    h5_quiet();
    CAIRN_CHECK(ckpt_local_manifest_read(path, &man));
    if (!man.settings || !man.n_groups || !man.root[0])
        CAIRN_FAIL(CAIRN_EINPUT, "%s: an older cairn wrote it, and its manifest does not say where its parts "
                                 "are or what they hold", path);
    CAIRN_CHECK(old_layout(NULL, name, &man, &o));
    CAIRN_CHECK_ALLOC(o.held = calloc((size_t)o.W, sizeof *o.held));
    const char *s = strstr(man.settings, "\nseed=");
    if (s) sscanf(s + 6, "%lld", &seed);
    CAIRN_CHECK(fsx_out_begin(&out, to, 0));
    CAIRN_CHECK(h5_create_file(out.tmp, H5P_DEFAULT, &f));
    CAIRN_CHECK(h5_attr_put_i64(f, "epoch", man.meta.epoch));
    CAIRN_CHECK(h5_attr_put_i64(f, "step", man.meta.step));
    CAIRN_CHECK(h5_attr_put_i64(f, "seed", seed));
    for (int i = 0; i < n; i++) CAIRN_CHECK(extract_one(&o, name, blobs[i], f));
cleanup:
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Fclose");
    if (rc == 0) rc = fsx_out_commit(&out);
    fsx_out_abort(&out);
    old_free(&o);
    ckpt_local_manifest_free(&man);
    if (rc == CAIRN_EHDF5) rc = CAIRN_ECORRUPT;
    return rc;
}

int lp_verify_parts(const char *path, const struct ckpt_local_manifest *man, FILE *out, int *elsewhere)
{
    int rc = 0;
    struct old o = {0};
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    *elsewhere = 0;
    CAIRN_CHECK(old_layout(NULL, name, man, &o));
    CAIRN_CHECK_ALLOC(o.held = calloc((size_t)o.W, sizeof *o.held));
    for (int r = 0; r < o.W; r++) {
        int prc = read_here(&o, name, r);
        free(o.held[r]);
        o.held[r] = NULL;
        if (prc == CAIRN_ENOCKPT) {
            ++*elsewhere;
            continue;
        }
        CAIRN_CHECK(prc);
        if (out) fprintf(out, "ok\trank %d's part (%s)\n", r, o.partner_read ? "partner copy" : "own copy");
    }
cleanup:
    old_free(&o);
    return rc;
}
