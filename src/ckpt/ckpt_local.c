/* The node-local checkpoint tier; see include/cairn/ckpt_local.h. */
#include "local_priv.h"

#include "cairn/checksum.h"
#include "cairn/clock.h"
#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/plan.h"
#include "cairn/strbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct part_head *head_of(const struct part *p) { return (struct part_head *)p->head; }
static struct part_rec *recs_of(const struct part *p) { return (struct part_rec *)(p->head + sizeof(struct part_head)); }

static void part_free(struct part *p)
{
    free(p->head);
    free(p->t);
    *p = (struct part){0};
}

int ckpt_local_identity(const struct plan *p, char out[17])
{
    struct strbuf b = {0};
    int rc = ckpt_settings(p, &b);
    strbuf_addf(&b, "world=%d\n", p->nranks);
    for (int g = 0; g < p->n_groups; g++)
        strbuf_addf(&b, "group %s=%d+%d\n", p->groups[g].name, p->groups[g].first, p->groups[g].nranks);
    if (rc == 0) rc = strbuf_finish(&b);
    if (rc == 0) checksum_text(strbuf_str(&b), out);
    strbuf_free(&b);
    return rc;
}

/* Does this rank's part hold blob b: a persistent one, and of a
 * replicated one the group's rank 0 holds the value. */
static bool holds(const struct ckpt_view *v, int b)
{
    const struct blob_info *bi = &v->plan->groups[v->group].blobs[b];
    return bi->persistent && (bi->type.dist != DIST_REPLICATED || v->group_rank == 0);
}

uint64_t lp_head_sum(char *head, size_t head_bytes)
{
    struct part_head *h = (struct part_head *)head;
    uint64_t keep = h->head_sum, sum;
    h->head_sum = 0;
    sum = checksum_part(head, 8, (int64_t)(head_bytes / 8), 0);
    h->head_sum = keep;
    return sum;
}

static uint64_t head_sum(const struct part *p) { return lp_head_sum(p->head, p->head_bytes); }

/* The part v's tensors make for position m (its header filled in). */
static int part_make(const struct ckpt_view *v, const char *identity, const struct ckpt_meta *m,
                     struct part *p)
{
    int rc = 0, n = 0, nb = v->group >= 0 ? v->plan->groups[v->group].n_blobs : 0;
    *p = (struct part){0};
    for (int b = 0; b < nb; b++) n += holds(v, b);
    p->head_bytes = sizeof(struct part_head) + (size_t)n * sizeof(struct part_rec);
    p->head = calloc(1, p->head_bytes);
    p->t = calloc((size_t)n + 1, sizeof *p->t);
    CAIRN_CHECK_ALLOC(p->head);
    CAIRN_CHECK_ALLOC(p->t);
    p->n = n;
    struct part_head *h = head_of(p);
    *h = (struct part_head){.version = PART_VERSION, .n_blobs = (uint32_t)n, .epoch = m->epoch,
                            .step = m->step, .done = m->done, .rank = v->rank,
                            .world = v->plan->nranks};
    memcpy(h->magic, PART_MAGIC, 8);
    memcpy(h->identity, identity, 17);
    p->total = p->head_bytes;
    for (int b = 0, i = 0; b < nb; b++) {
        if (!holds(v, b)) continue;
        struct tensor *t = v->tensors[b];
        struct part_rec *r = &recs_of(p)[i];
        *r = (struct part_rec){.blob = b, .dtype = t->dtype, .ndim = t->shape.ndim,
                               .bytes = tensor_bytes(t)};
        for (int d = 0; d < t->shape.ndim && d < CAIRN_MAX_DIMS; d++) r->dims[d] = t->shape.d[d];
        p->t[i++] = t;
        h->data_bytes += r->bytes;
    }
    p->total += h->data_bytes;
cleanup:
    if (rc) part_free(p);
    return rc;
}

/* The pieces of a part as messages: segment 0 the header and records,
 * segment i the (i-1)th tensor, each cut into CHUNK bytes at most.
 * Calls fn for each piece in order. */
typedef int piece_fn(void *arg, char *data, size_t bytes);
static int part_pieces(const struct part *p, piece_fn *fn, void *arg)
{
    int rc = 0;
    for (int i = -1; i < p->n; i++) {
        char *data = i < 0 ? p->head : p->t[i]->data;
        size_t bytes = i < 0 ? p->head_bytes : tensor_bytes(p->t[i]);
        for (size_t off = 0; off < bytes; off += CHUNK)
            CAIRN_CHECK(fn(arg, data + off, bytes - off < CHUNK ? bytes - off : CHUNK));
    }
cleanup:
    return rc;
}

/* A part file is written through an fsx_out (private: 0600, no link
 * followed), synced and renamed: whole or absent.  file_end: with rc 0,
 * commit; either way o is closed and, on failure, the temporary removed.
 * Returns rc or the first error of its own. */
static int file_begin(const char *path, struct fsx_out *o)
{
    *o = (struct fsx_out){.dir = -1, .fd = -1};
    if (!path[0]) return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "path too long");
    return fsx_out_begin(o, path, FSX_PRIVATE);
}

static int file_end(int rc, struct fsx_out *o)
{
    if (rc == 0) return fsx_out_commit(o);
    fsx_out_abort(o);
    return rc;
}

/* This rank's own part at path: the header last (pwrite at 0), once the
 * data's checksum, summed on a thread beside each tensor's write, is
 * known. */
static int write_own(const char *path, struct part *p)
{
    struct fsx_out o;
    int rc = file_begin(path, &o);
    struct part_head *h = head_of(p);
    if (rc == 0) rc = fsx_out_write(&o, p->head, p->head_bytes);
    int64_t first = 0;
    h->data_sum = 0;
    for (int i = 0; rc == 0 && i < p->n; i++) {
        struct checksum_job j;
        int64_t words = (int64_t)(tensor_bytes(p->t[i]) / 4);
        checksum_start(&j, p->t[i]->data, 4, words, first);
        rc = fsx_out_write(&o, p->t[i]->data, tensor_bytes(p->t[i]));
        h->data_sum += checksum_finish(&j);
        first += words;
    }
    h->head_sum = head_sum(p);
    ssize_t w = rc == 0 ? pwrite(o.fd, p->head, p->head_bytes, 0) : 0;
    if (rc == 0 && w != (ssize_t)p->head_bytes)
        rc = w < 0 ? cairn_err_errno(CAIRN_EIO, __FILE__, __LINE__, "cannot write %s", o.tmp)
                   : cairn_err_set(CAIRN_EIO, __FILE__, __LINE__, "cannot write %s: short write", o.tmp);
    return file_end(rc, &o);
}

static void remove_tree(const char *path);

/* ---- nodes and partners ------------------------------------------------------ */

int lp_node_count(const struct placement_nodes *n, int k) { return n->start[k + 1] - n->start[k]; }

/* Rank r's partner: the rank of the next node (placement_nodes' order)
 * with r's index among its node's ranks, modulo that node's ranks; -1 on
 * one node. */
static int partner_of(const struct placement_nodes *n, int r)
{
    if (n->n < 2) return -1;
    int k = (n->node_of[r] + 1) % n->n;
    return n->rank[n->start[k] + n->local[r] % lp_node_count(n, k)];
}

/* ---- writing ----------------------------------------------------------------- */

/* A part's sends, posted at once (their buffers are the part's). */
struct sends {
    MPI_Request *req;
    int n, cap;
    MPI_Comm comm;
    int to;
};

static int count_piece(void *arg, char *data, size_t bytes)
{
    (void)data;
    (void)bytes;
    ((struct sends *)arg)->cap++;
    return 0;
}

static int send_piece(void *arg, char *data, size_t bytes)
{
    struct sends *s = arg;
    int rc = s->n < s->cap ? MPI_Isend(data, (int)bytes, MPI_BYTE, s->to, TAG_PARTNER, s->comm, &s->req[s->n])
                           : MPI_ERR_COUNT;
    if (rc != MPI_SUCCESS) return cairn_err_mpi(rc, __FILE__, __LINE__, "MPI_Isend");
    s->n++;
    return 0;
}

int lp_part_path(char *out, size_t size, const char *root, const char *name, const char *kind, int r)
{
    int n = snprintf(out, size, "%s/%s/%s%06d", root, name, kind, r);
    return n > 0 && (size_t)n < size ? 0 : cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                                                          "path too long: %s/%s", root, name);
}

/* Rank `from`'s part, its size first, into path.  Every piece is received
 * even when the file cannot be written: the sender waits for them all. */
static int receive_copy(MPI_Comm comm, int from, char *buf, const char *path)
{
    struct fsx_out o;
    int rc = file_begin(path, &o), mrc = 0;
    uint64_t total = 0, got = 0;
    MPI_Request q;
    MPI_Status st;
    if ((mrc = MPI_Irecv(&total, (int)sizeof total, MPI_BYTE, from, TAG_PARTNER, comm, &q)) == MPI_SUCCESS)
        mrc = coll_wait(1, &q) ? MPI_ERR_OTHER : MPI_SUCCESS;
    while (mrc == MPI_SUCCESS && got < total) {
        int bytes = 0;
        if (coll_probe(comm, from, TAG_PARTNER, &st) || MPI_Get_count(&st, MPI_BYTE, &bytes) != MPI_SUCCESS ||
            bytes < 0 || (size_t)bytes > CHUNK || (uint64_t)bytes > total - got) {
            mrc = MPI_ERR_TRUNCATE; /* not cairn's protocol: nothing more can be read right */
            break;
        }
        if ((mrc = MPI_Irecv(buf, bytes, MPI_BYTE, from, TAG_PARTNER, comm, &q)) == MPI_SUCCESS)
            mrc = coll_wait(1, &q) ? MPI_ERR_OTHER : MPI_SUCCESS;
        if (mrc == MPI_SUCCESS && rc == 0) rc = fsx_out_write(&o, buf, (size_t)bytes);
        got += (uint64_t)bytes;
    }
    if (mrc != MPI_SUCCESS && rc == 0)
        rc = cairn_err_set(CAIRN_EMPI, __FILE__, __LINE__, "receiving rank %d's partner copy failed", from);
    return file_end(rc, &o);
}

/* Receive the partner copies of the ranks whose partner this rank is
 * (buf: CHUNK bytes); the first error, after all are received. */
static int receive_partners(const struct ckpt_view *v, const struct placement_nodes *nd, const char *root,
                            const char *name, char *buf)
{
    int rc = 0;
    char path[4400];
    for (int s = 0; s < v->plan->nranks; s++) {
        if (partner_of(nd, s) != v->rank) continue;
        int prc = lp_part_path(path, sizeof path, root, name, "partner", s);
        prc = receive_copy(v->comm, s, buf, prc ? "" : path);
        if (rc == 0) rc = prc;
    }
    return rc;
}

int ckpt_local_write(const struct ckpt_view *v, const char (*hosts)[PLACEMENT_HOST_MAX],
                     const char *root, const char *name, const struct ckpt_meta *m,
                     struct ckpt_local_part *mine, struct ckpt_io *io)
{
    int rc = 0;
    char identity[17], dir[4400], path[4400];
    char *buf = NULL;
    struct part p = {0};
    struct placement_nodes nd = {0};
    struct sends s = {.comm = v->comm};
    double t0 = clock_now();
    rc = ckpt_local_identity(v->plan, identity);
    if (rc == 0) rc = placement_nodes(hosts, v->plan->nranks, &nd);
    if (rc == 0) rc = part_make(v, identity, m, &p);
    if (rc == 0) rc = fsx_join(dir, sizeof dir, root, name);
    /* files a killed run left of this position (perhaps another layout's
     * partner copies) would disagree with the new manifest: the node's
     * lowest rank clears them before anyone writes */
    if (rc == 0 && nd.local[v->rank] == 0) remove_tree(dir);
    CAIRN_CHECK(coll_agree(v->comm, rc));
    rc = fsx_private_dir(dir, true);
    if (rc == 0) rc = lp_part_path(path, sizeof path, root, name, "rank", v->rank);
    if (rc == 0) rc = write_own(path, &p); /* and the header's checksums */
    *mine = (struct ckpt_local_part){.bytes = p.total, .sum = head_of(&p)->data_sum};
    /* what the exchange needs is had before it starts: once a rank posts,
     * only MPI itself may fail */
    s.to = partner_of(&nd, v->rank);
    if (rc == 0 && s.to >= 0) {
        s.cap = 1;
        part_pieces(&p, count_piece, &s);
        if (!(s.req = malloc((size_t)s.cap * sizeof *s.req)))
            rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    }
    for (int r = 0; rc == 0 && !buf && r < v->plan->nranks; r++)
        if (partner_of(&nd, r) == v->rank && !(buf = malloc(CHUNK)))
            rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    CAIRN_CHECK(coll_agree(v->comm, rc));
    if (v->fault) v->fault(v->fault_arg, "local", m->epoch, dir);
    /* every rank sends and receives: the sends go first, unblocked, so a
     * ring of partners cannot wait on itself */
    if (s.to >= 0) {
        rc = send_piece(&s, (char *)&p.total, sizeof p.total);
        if (rc == 0) rc = part_pieces(&p, send_piece, &s);
    }
    int prc = receive_partners(v, &nd, root, name, buf);
    if (rc == 0) rc = prc;
    if (s.n) { /* the posted sends end whatever happened (the receivers take them all) */
        int wrc = coll_wait(s.n, s.req);
        if (rc == 0) rc = wrc;
    }
    CAIRN_CHECK(coll_agree(v->comm, rc));
    io->bytes = p.total;
    io->seconds = clock_now() - t0;
cleanup:
    free(buf);
    free(s.req);
    part_free(&p);
    placement_nodes_free(&nd);
    return rc;
}

/* ---- reading ----------------------------------------------------------------- */

/* Which copy of rank r's part this rank offers, as a key that prefers a
 * copy on r's node to one elsewhere and r's own copy to a partner copy
 * (the smallest wins); KEY_NONE if none.  Every rank of a node sees the
 * node's files: the one that offers a file is r itself where r runs on
 * this node, else the node's rank of index r modulo its ranks. */

static bool offers(const struct ckpt_view *v, const struct placement_nodes *nd, int r)
{
    int me = v->rank, k = nd->node_of[me];
    if (nd->node_of[r] == k) return r == me;
    return nd->local[me] == r % lp_node_count(nd, k);
}

/* Read the header of a copy and hold it against the manifest: 0 if it is
 * the part the manifest lists, CAIRN_ECORRUPT (saying why) if not. */
int lp_check_copy(const char *path, int r, const struct ckpt_local_manifest *man)
{
    struct part_head h;
    int fd = fsx_open_nofollow(path, O_RDONLY); /* a link planted in place of a part is no part */
    if (fd < 0) return cairn_err_errno(CAIRN_ECORRUPT, __FILE__, __LINE__, "cannot open %s", path);
    ssize_t got = pread(fd, &h, sizeof h, 0);
    struct stat st;
    bool sized = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == man->parts[r].bytes;
    close(fd);
    if (got != (ssize_t)sizeof h || memcmp(h.magic, PART_MAGIC, 8) != 0 || h.version != PART_VERSION)
        return cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "%s is no cairn part file", path);
    if (!sized || h.rank != r || h.world != man->world || h.epoch != man->meta.epoch ||
        h.step != man->meta.step || memcmp(h.identity, man->identity, 17) != 0 ||
        h.data_sum != man->parts[r].sum)
        return cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__,
                             "%s disagrees with the manifest (another rank, position, size or checksum)", path);
    return 0;
}


/* Offer the copies on this node that excl does not set aside and that
 * agree with the manifest: keys[r] for every rank; bad[r], whether a copy
 * of r here disagrees with it. */
static void scan_node(const struct ckpt_view *v, const struct placement_nodes *nd, const char *root,
                      const char *name, const struct ckpt_local_manifest *man, const unsigned char *excl,
                      long long *keys, unsigned char *bad)
{
    int size = v->plan->nranks;
    char dir[4400], path[4400];
    for (int r = 0; r < size; r++) keys[r] = KEY_NONE;
    memset(bad, 0, (size_t)size);
    struct stat st;
    if (fsx_join(dir, sizeof dir, root, name) || lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return; /* a link in place of the position's directory is not followed */
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        int r = -1, partner = strncmp(de->d_name, "partner", 7) == 0;
        const char *num = partner ? de->d_name + 7 : strncmp(de->d_name, "rank", 4) == 0 ? de->d_name + 4 : NULL;
        char tail = 0;
        if (!num || strlen(num) != 6 || strspn(num, "0123456789") != 6 || sscanf(num, "%d%c", &r, &tail) != 1 || r >= size ||
            !offers(v, nd, r) || excl[r] & (partner ? EXCL_PARTNER : EXCL_OWN))
            continue;
        if (fsx_join(path, sizeof path, dir, de->d_name)) continue;
        if (lp_check_copy(path, r, man)) {
            bad[r] = 1;
            continue;
        }
        long long key = (nd->node_of[r] == nd->node_of[v->rank] ? 0 : 2LL * size) + (partner ? size : 0) + v->rank;
        if (key < keys[r]) keys[r] = key;
    }
    if (d) closedir(d);
}

/* Read a whole file that must have `bytes` bytes into a new buffer. */
int lp_read_file(const char *path, uint64_t bytes, char **out)
{
    size_t len = 0;
    int rc = fsx_read_private(path, out, &len);
    if (rc == 0 && len != bytes) {
        free(*out);
        *out = NULL;
        rc = cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "%s has %zu bytes, its manifest says %llu",
                           path, len, (unsigned long long)bytes);
    }
    return rc == CAIRN_EIO ? cairn_err_wrap(CAIRN_ECORRUPT, "%s", "") : rc;
}

/* Post the messages of a buffer of `bytes` (CHUNK each at most) to or
 * from peer, into room made beforehand.  With slack 1 (a buffer with a
 * byte to spare) the last receive has room for one byte more, so that a
 * longer message is an error too (coll_wait_sized); into a tensor, 0. */

int lp_post(struct posts *ps, char *buf, uint64_t bytes, int peer, bool send, int slack, MPI_Comm comm)
{
    for (uint64_t off = 0; off < bytes; off += CHUNK) {
        int len = (int)(bytes - off < CHUNK ? bytes - off : CHUNK);
        int rc = send ? MPI_Isend(buf + off, len, MPI_BYTE, peer, TAG_RESTORE, comm, &ps->req[ps->n])
                      : MPI_Irecv(buf + off, len + (off + CHUNK >= bytes ? slack : 0), MPI_BYTE, peer, TAG_RESTORE, comm,
                                  &ps->req[ps->n]);
        if (rc != MPI_SUCCESS) return cairn_err_mpi(rc, __FILE__, __LINE__, send ? "MPI_Isend" : "MPI_Irecv");
        ps->sizes[ps->n++] = len;
    }
    return 0;
}

void lp_posts_free(struct posts *ps)
{
    free(ps->req);
    free(ps->sizes);
}

/* Does record r describe blob b of v's group as the plan types it (the
 * known dimensions; of a block of a sharded or per-rank blob, all but the
 * first), with bytes that fit its shape? */
static bool rec_fits(const struct ckpt_view *v, const struct part_rec *r, int b)
{
    const struct blob_type *ty = &v->plan->groups[v->group].blobs[b].type;
    if (r->blob != b || r->dtype != (int32_t)ty->dtype || r->ndim < 0 || r->ndim > CAIRN_MAX_DIMS ||
        (ty->shape.ndim >= 0 && r->ndim != ty->shape.ndim))
        return false;
    uint64_t n = dtype_size(ty->dtype);
    for (int d = 0; d < r->ndim; d++) {
        bool pinned = ty->shape.ndim >= 0 && ty->shape.d[d] >= 0 && (d > 0 || ty->dist == DIST_REPLICATED);
        if (r->dims[d] < 0 || (pinned && r->dims[d] != ty->shape.d[d])) return false;
        if (r->dims[d] > 0 && n > UINT64_MAX / (uint64_t)r->dims[d]) return false;
        n *= (uint64_t)r->dims[d];
    }
    return n == r->bytes;
}

/* Hold the received part buf (bytes long) against what this rank's part
 * must be (p: the blobs it holds) and the manifest. */
static int check_part(const struct ckpt_view *v, const struct part *p, char *buf, uint64_t bytes,
                      const struct ckpt_local_manifest *man)
{
    int rank = v->rank;
    const struct part_head *h = (const struct part_head *)buf;
    const struct part_rec *r = (const struct part_rec *)(buf + sizeof *h), *want = recs_of(p);
    struct part got = {.head = buf, .head_bytes = p->head_bytes};
    if (bytes < p->head_bytes || memcmp(h->magic, PART_MAGIC, 8) != 0 || h->version != PART_VERSION ||
        h->rank != rank || h->n_blobs != (uint32_t)p->n || h->head_sum != head_sum(&got))
        return cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "rank %d's part has a damaged header", rank);
    if (h->epoch != man->meta.epoch || h->step != man->meta.step || h->done != man->meta.done ||
        h->world != man->world || memcmp(h->identity, man->identity, 17) != 0 ||
        h->data_bytes != bytes - p->head_bytes)
        return cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "rank %d's part disagrees with the manifest", rank);
    uint64_t data = 0;
    for (int i = 0; i < p->n; i++) {
        if (!rec_fits(v, &r[i], want[i].blob) || r[i].bytes > h->data_bytes - data)
            return cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__,
                                 "rank %d's part holds another blob, type or shape than this job's", rank);
        data += r[i].bytes;
    }
    if (data != h->data_bytes)
        return cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "rank %d's part has %llu bytes of data, "
                             "its blobs %llu", rank, (unsigned long long)h->data_bytes, (unsigned long long)data);
    uint64_t sum = 0;
    int64_t first = 0;
    const char *at = buf + p->head_bytes;
    for (int i = 0; i < p->n; i++) {
        int64_t words = (int64_t)(r[i].bytes / 4);
        sum += checksum_part(at, 4, words, first);
        first += words;
        at += r[i].bytes;
    }
    if (sum != h->data_sum || sum != man->parts[rank].sum)
        return cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "rank %d's part fails its checksum", rank);
    return 0;
}

/* The checked part buf into this rank's tensors.  Errors: CAIRN_ENOMEM. */
static int apply_part(const struct part *p, const char *buf)
{
    int rc = 0;
    const struct part_rec *r = (const struct part_rec *)(buf + sizeof(struct part_head));
    const char *data = buf + p->head_bytes;
    for (int i = 0; i < p->n; i++) {
        struct shape sh = {.ndim = r[i].ndim};
        memcpy(sh.d, r[i].dims, sizeof sh.d);
        CAIRN_CHECK(tensor_resize(p->t[i], (enum dtype)r[i].dtype, &sh));
        if (r[i].bytes) memcpy(p->t[i]->data, data, r[i].bytes);
        data += r[i].bytes;
    }
cleanup:
    return rc;
}

/* Replicated blobs come in the group's rank 0 part: to the others now,
 * their type and shape first. */
int lp_spread_replicated(const struct ckpt_view *v)
{
    int rc = 0;
    if (v->group < 0 || v->group_size < 2) return 0;
    const struct group *g = &v->plan->groups[v->group];
    for (int b = 0; b < g->n_blobs; b++) {
        if (!g->blobs[b].persistent || g->blobs[b].type.dist != DIST_REPLICATED) continue;
        struct tensor *t = v->tensors[b];
        struct {
            int32_t dtype;
            struct shape shape;
        } ty = {.dtype = (int32_t)t->dtype, .shape = t->shape};
        CAIRN_CHECK_MPI(MPI_Bcast(&ty, (int)sizeof ty, MPI_BYTE, 0, v->group_comm));
        if (v->group_rank != 0) rc = tensor_resize(t, (enum dtype)ty.dtype, &ty.shape);
        CAIRN_CHECK(coll_agree(v->group_comm, rc));
        char *data = t->data;
        size_t bytes = tensor_bytes(t);
        for (size_t off = 0; off < bytes; off += CHUNK)
            CAIRN_CHECK_MPI(MPI_Bcast(data + off, (int)(bytes - off < CHUNK ? bytes - off : CHUNK),
                                      MPI_BYTE, 0, v->group_comm));
    }
cleanup:
    return rc;
}

/* Rank r's copy to use: the holder's rank and whether it is a partner copy. */
static int holder_of(long long key, int size, bool *partner)
{
    *partner = key % (2LL * size) >= size;
    return (int)(key % size);
}

/* Everything the moves need, had before any is posted: the copies this
 * rank serves read into served[r], the buffer for its own part (*buf, the
 * caller frees; its own copy if it serves itself), and room for the
 * requests. */
static int prepare_moves(const struct ckpt_view *v, const char *root, const char *name,
                         const struct ckpt_local_manifest *man, const long long *keys, char **served,
                         char **buf, struct posts *sends, struct posts *recvs)
{
    int rc = 0, size = v->plan->nranks, me = v->rank, nsend = 0;
    char path[4400];
    bool partner;
    for (int r = 0; r < size; r++) {
        if (holder_of(keys[r], size, &partner) != me) continue;
        CAIRN_CHECK(lp_part_path(path, sizeof path, root, name, partner ? "partner" : "rank", r));
        CAIRN_CHECK(lp_read_file(path, man->parts[r].bytes, &served[r]));
        if (r != me) nsend += (int)((man->parts[r].bytes + CHUNK - 1) / CHUNK);
    }
    if (holder_of(keys[me], size, &partner) == me) {
        *buf = served[me];
        served[me] = NULL;
    } else {
        CAIRN_CHECK_ALLOC(*buf = malloc(man->parts[me].bytes + 1));
    }
    int nrecv = (int)((man->parts[me].bytes + CHUNK - 1) / CHUNK);
    CAIRN_CHECK_ALLOC(sends->req = malloc((size_t)(nsend + 1) * sizeof *sends->req));
    CAIRN_CHECK_ALLOC(sends->sizes = malloc((size_t)(nsend + 1) * sizeof *sends->sizes));
    CAIRN_CHECK_ALLOC(recvs->req = malloc((size_t)(nrecv + 1) * sizeof *recvs->req));
    CAIRN_CHECK_ALLOC(recvs->sizes = malloc((size_t)(nrecv + 1) * sizeof *recvs->sizes));
cleanup:
    return rc;
}

/* Send the copies read to their owners and receive this rank's part
 * unless it served itself; only MPI can fail here. */
static int move_parts(const struct ckpt_view *v, const struct ckpt_local_manifest *man,
                      const long long *keys, char **served, char *buf, struct posts *sends,
                      struct posts *recvs)
{
    int rc = 0, size = v->plan->nranks, me = v->rank;
    bool partner;
    int from = holder_of(keys[me], size, &partner);
    if (from != me) CAIRN_CHECK(lp_post(recvs, buf, man->parts[me].bytes, from, false, 1, v->comm));
    for (int r = 0; r < size; r++)
        if (served[r]) CAIRN_CHECK(lp_post(sends, served[r], man->parts[r].bytes, r, true, 0, v->comm));
cleanup:
    /* every message posted completes, or a peer would wait for it */
    if (sends->n) {
        int wrc = coll_wait(sends->n, sends->req);
        if (rc == 0) rc = wrc;
    }
    if (recvs->n) {
        int wrc = coll_wait_sized(recvs->n, recvs->req, recvs->sizes);
        if (rc == 0) rc = wrc;
    }
    return rc;
}

/* Why this rank's node has no good copy of rank r's part, if it has a
 * bad one (check_copy's reason), else 0. */
static int why_bad(const struct ckpt_view *v, const struct placement_nodes *nd, const char *root,
                   const char *name, const struct ckpt_local_manifest *man, int r)
{
    char path[4400];
    struct stat st;
    for (int partner = 0; partner < 2 && offers(v, nd, r); partner++)
        if (lp_part_path(path, sizeof path, root, name, partner ? "partner" : "rank", r) == 0 &&
            lstat(path, &st) == 0 && lp_check_copy(path, r, man))
            return CAIRN_ECORRUPT;
    return 0;
}

/* Which copy of each part to use (keys, the same on every rank), agreed:
 * one that agrees with the manifest and excl does not set aside.  A bad
 * copy costs nothing while a good one is left (a partner copy stands in
 * for a damaged own copy); a part without one fails the load, saying why. */
static int find_copies(const struct ckpt_view *v, const struct placement_nodes *nd, const char *root, const char *name,
                       const struct ckpt_local_manifest *man, const unsigned char *excl, long long *keys)
{
    int rc = 0, size = v->plan->nranks, r = 0;
    unsigned char *bad = malloc((size_t)size);
    CAIRN_CHECK(coll_agree(v->comm, bad ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory")));
    scan_node(v, nd, root, name, man, excl, keys, bad);
    CAIRN_CHECK(coll_allreduce(MPI_IN_PLACE, keys, size, MPI_LONG_LONG, MPI_MIN, v->comm));
    while (r < size && keys[r] != KEY_NONE) r++;
    if (r == size) goto cleanup;
    /* the rank that found a bad copy of it says why */
    CAIRN_CHECK(coll_agree(v->comm, bad[r] ? why_bad(v, nd, root, name, man, r) : 0));
    CAIRN_FAIL(CAIRN_ENOCKPT, "no node of this run holds rank %d's part (%s on nodes it does not have)", r,
               nd->n < 2 ? "its copy was" : "its own copy and its partner copy were");
cleanup:
    free(bad);
    return rc;
}

/* One try at the parts: a copy of each (none that excl sets aside) to
 * its owner, into *buf (the caller frees).  Agreed on every rank. */
static int fetch_parts(const struct ckpt_view *v, const struct placement_nodes *nd, const char *root,
                       const char *name, const struct ckpt_local_manifest *man, const unsigned char *excl,
                       long long *keys, char **buf)
{
    int rc = 0, size = v->plan->nranks;
    char **served = calloc((size_t)size, sizeof *served);
    struct posts sends = {0}, recvs = {0};
    CAIRN_CHECK(coll_agree(v->comm, served ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory")));
    CAIRN_CHECK(find_copies(v, nd, root, name, man, excl, keys));
    /* each step is agreed before the next: no rank posts messages that a
     * failed peer would never match */
    CAIRN_CHECK(coll_agree(v->comm, prepare_moves(v, root, name, man, keys, served, buf, &sends, &recvs)));
    CAIRN_CHECK(coll_agree(v->comm, move_parts(v, man, keys, served, *buf, &sends, &recvs)));
cleanup:
    for (int r = 0; served && r < size; r++) free(served[r]);
    free(served);
    lp_posts_free(&sends);
    lp_posts_free(&recvs);
    return rc;
}

/* Fetch and check every rank's part; a copy that fails its check (its
 * header's or data's checksum) is set aside and the part fetched again
 * from another copy (a partner copy for a damaged own one).  Each round
 * sets one copy aside at least, so it ends: with every part good, or
 * with a part left without copies, failing with the reason its last copy
 * failed.  *buf: this rank's part (the caller frees). */
static int fetch_good_parts(const struct ckpt_view *v, const struct placement_nodes *nd, const char *root,
                            const char *name, const struct ckpt_local_manifest *man, const struct part *mine,
                            long long *keys, char **buf)
{
    int rc = 0, size = v->plan->nranks;
    char damaged[1024] = "";
    unsigned char *excl = calloc((size_t)size, 1);
    int *failed = calloc((size_t)size, sizeof *failed);
    CAIRN_CHECK(coll_agree(v->comm, excl && failed ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__,
                                                                        "out of memory")));
    for (;;) {
        free(*buf);
        *buf = NULL;
        rc = fetch_parts(v, nd, root, name, man, excl, keys, buf);
        if (rc == CAIRN_ENOCKPT && damaged[0]) /* its last copy was set aside: say why */
            CAIRN_FAIL(CAIRN_ECORRUPT, "%s", damaged);
        CAIRN_CHECK(rc);
        int crc = check_part(v, mine, *buf, man->parts[v->rank].bytes, man);
        memset(failed, 0, (size_t)size * sizeof *failed);
        failed[v->rank] = crc != 0;
        CAIRN_CHECK(coll_allreduce(MPI_IN_PLACE, failed, size, MPI_INT, MPI_MAX, v->comm));
        bool any = false;
        for (int r = 0; r < size; r++) any |= failed[r] != 0;
        if (!any) break;
        coll_agree(v->comm, crc); /* fails alike everywhere, with the lowest failing rank's reason */
        snprintf(damaged, sizeof damaged, "%s", cairn_errmsg());
        for (int r = 0; r < size; r++) {
            bool partner;
            holder_of(keys[r], size, &partner);
            excl[r] |= failed[r] ? (partner ? EXCL_PARTNER : EXCL_OWN) : 0;
        }
    }
cleanup:
    free(excl);
    free(failed);
    return rc;
}

int ckpt_local_read(const struct ckpt_view *v, const char (*hosts)[PLACEMENT_HOST_MAX],
                    const char *root, const char *name, const struct ckpt_local_manifest *man,
                    struct ckpt_io *io)
{
    int *partners = &io->partners;
    char *who = io->partner_ranks;
    size_t who_size = sizeof io->partner_ranks;
    int rc = 0, size = v->plan->nranks;
    char identity[17];
    long long *keys = NULL;
    char *buf = NULL;
    struct placement_nodes nd = {0};
    struct part mine = {0};
    double t0 = clock_now();
    *partners = 0;
    who[0] = '\0';
    CAIRN_CHECK(coll_agree(v->comm, ckpt_local_identity(v->plan, identity)));
    if ((man->world != size || memcmp(identity, man->identity, 17) != 0) && man->settings && man->n_groups)
        return lp_resplit(v, hosts, root, name, man, io); /* another layout */
    if (man->world != size || memcmp(identity, man->identity, 17) != 0)
        CAIRN_FAIL(CAIRN_EINPUT, "it is of %d ranks%s, this run has %d (an older cairn wrote it: it "
                   "loads on its own layout only)", man->world,
                   man->world == size ? " of another layout or other settings" : "", size);
    rc = placement_nodes(hosts, size, &nd);
    if (rc == 0) rc = part_make(v, identity, &man->meta, &mine); /* which blobs: the records */
    if (rc == 0 && !(keys = malloc((size_t)size * sizeof *keys)))
        rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    CAIRN_CHECK(coll_agree(v->comm, rc));
    CAIRN_CHECK(fetch_good_parts(v, &nd, root, name, man, &mine, keys, &buf));
    CAIRN_CHECK(coll_agree(v->comm, apply_part(&mine, buf)));
    CAIRN_CHECK(coll_agree(v->comm, lp_spread_replicated(v)));
    for (int r = 0; r < size; r++) {
        bool partner;
        holder_of(keys[r], size, &partner);
        if (!partner) continue;
        size_t len = strlen(who);
        snprintf(who + len, who_size - len, "%s%d", *partners ? ", " : "", r);
        (*partners)++;
    }
    io->bytes = man->parts[v->rank].bytes;
    io->seconds = clock_now() - t0;
cleanup:
    free(buf);
    free(keys);
    part_free(&mine);
    placement_nodes_free(&nd);
    return rc;
}

/* ---- pruning ----------------------------------------------------------------- */

/* A checkpoint's directory of parts, and the parts in it. */
static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (!S_ISDIR(st.st_mode)) { /* a link or a file of that name goes, not what it points to */
        unlink(path);
        return;
    }
    DIR *d = opendir(path);
    struct dirent *de;
    char sub[4400];
    while (d && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && fsx_join(sub, sizeof sub, path, de->d_name) == 0)
            unlink(sub);
    if (d) closedir(d);
    rmdir(path);
}

void ckpt_local_prune(const struct ckpt_view *v, const char (*hosts)[PLACEMENT_HOST_MAX],
                      const char *root, const char *keep)
{
    struct placement_nodes nd = {0};
    bool first = placement_nodes(hosts, v->plan->nranks, &nd) == 0 && nd.local[v->rank] == 0;
    placement_nodes_free(&nd);
    if (!first) return; /* the node's lowest rank prunes it */
    DIR *d = opendir(root);
    struct dirent *de;
    char path[4400];
    while (d && (de = readdir(d)))
        if (strncmp(de->d_name, "ckpt-", 5) == 0 && (!keep || strcmp(de->d_name, keep) != 0) &&
            fsx_join(path, sizeof path, root, de->d_name) == 0)
            remove_tree(path);
    if (d) closedir(d);
}

/* ---- room ------------------------------------------------------------------------ */

#define PAGE ((uint64_t)4096) /* in memory a file takes whole pages */

/* This rank's part of v's state: its file's bytes, about. */
static uint64_t part_bytes(const struct ckpt_view *v)
{
    int nb = v->group >= 0 ? v->plan->groups[v->group].n_blobs : 0;
    uint64_t bytes = sizeof(struct part_head);
    for (int b = 0; b < nb; b++)
        if (holds(v, b)) bytes += sizeof(struct part_rec) + tensor_bytes(v->tensors[b]);
    return (bytes + PAGE - 1) / PAGE * PAGE;
}

/* The bytes the files of this job's tree on this node take. */
static double tree_bytes(const char *root)
{
    double sum = 0;
    DIR *d = opendir(root), *e;
    struct dirent *de, *f;
    char sub[4400], path[4400];
    struct stat st;
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, "ckpt-", 5) != 0 || fsx_join(sub, sizeof sub, root, de->d_name)) continue;
        e = lstat(sub, &st) == 0 && S_ISDIR(st.st_mode) ? opendir(sub) : NULL;
        while (e && (f = readdir(e)))
            if (fsx_join(path, sizeof path, sub, f->d_name) == 0 && lstat(path, &st) == 0 && S_ISREG(st.st_mode))
                sum += (double)st.st_blocks * 512;
        if (e) closedir(e);
    }
    if (d) closedir(d);
    return sum;
}

int ckpt_local_check_room(const struct ckpt_view *v, const char (*hosts)[PLACEMENT_HOST_MAX],
                          const char *root, const char *setting, bool *short_of_room)
{
    int rc = 0, size = v->plan->nranks;
    *short_of_room = false;
    struct placement_nodes nd = {0};
    uint64_t mine = part_bytes(v), *parts = malloc((size_t)size * sizeof *parts);
    double need = 0, avail = 0;
    rc = placement_nodes(hosts, size, &nd);
    if (rc == 0 && !parts) rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    CAIRN_CHECK(coll_agree(v->comm, rc));
    CAIRN_CHECK_MPI(MPI_Allgather(&mine, 1, MPI_UINT64_T, parts, 1, MPI_UINT64_T, v->comm));
    int k = nd.node_of[v->rank];
    for (int r = 0; r < size; r++) {
        int p = partner_of(&nd, r);
        need += (double)(nd.node_of[r] == k ? parts[r] : 0) + (double)(p >= 0 && nd.node_of[p] == k ? parts[r] : 0);
    }
    need *= 2; /* the new checkpoint beside the one before, until it commits */
    if (nd.local[v->rank] == 0 && fsx_in_memory(root, &avail) && avail + tree_bytes(root) < need)
        rc = cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                           "%s is in memory (tmpfs) on %s, with room for %.1f MB, but that node will hold "
                           "%.1f MB of node-local checkpoints (its ranks' parts%s, twice while a save "
                           "commits): give it more room, use a local disk, or leave checkpoint.local out",
                           setting, hosts[v->rank], (avail + tree_bytes(root)) / 1e6, need / 1e6,
                           nd.n > 1 ? " and the partner copies it keeps" : "");
    rc = coll_agree(v->comm, rc);
    *short_of_room = rc == CAIRN_EINPUT;
cleanup:
    free(parts);
    placement_nodes_free(&nd);
    return rc;
}
