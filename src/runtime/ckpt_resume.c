/* The checkpoint manager, opening and resuming: the checks of the
 * directories at start-up, and the choice of the checkpoint a run
 * resumes, with fallback (see include/cairn/ckpt.h). */
#include "ckpt_priv.h"

#include "cairn/blas_kernel.h"
#include "cairn/ckpt_bg.h"
#include "cairn/ckpt_index.h"
#include "cairn/checksum.h"
#include "cairn/clock.h"
#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fault.h"
#include "cairn/fsx.h"
#include "cairn/job.h"
#include "cairn/plan.h"
#include "cairn/runlog.h"
#include "cairn/strbuf.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- opening ----------------------------------------------------------------- */

/* Rank 0: delete the checkpoints an index lists, then the index. */
static int clear_dir(const char *dir, const struct ckpt_index *idx)
{
    int rc = 0;
    char path[4400];
    for (int i = 0; i < idx->n; i++) {
        CAIRN_CHECK(fsx_join(path, sizeof path, dir, idx->v[i].file));
        if (unlink(path) && errno != ENOENT) CAIRN_FAIL(CAIRN_EIO, "cannot delete %s", path);
    }
    CAIRN_CHECK(fsx_join(path, sizeof path, dir, "index"));
    if (unlink(path) && errno != ENOENT) CAIRN_FAIL(CAIRN_EIO, "cannot delete %s", path);
cleanup:
    return rc;
}

static int check_fresh(struct ckpt_mgr *c)
{
    int rc = 0;
    struct ckpt_index idx = {0}, local = {0};
    char dir[4400];
    CAIRN_CHECK(fsx_join(dir, sizeof dir, c->dir, "local"));
    CAIRN_CHECK(ckpt_index_read(c->dir, &idx));
    CAIRN_CHECK(ckpt_index_read(dir, &local)); /* the node-local tier's list (checkpoint.local) */
    if (idx.n + local.n == 0) goto cleanup;
    int64_t newest = idx.n ? idx.v[idx.n - 1].epoch : -1;
    if (local.n && local.v[local.n - 1].epoch > newest) newest = local.v[local.n - 1].epoch;
    if (!c->ro.force)
        CAIRN_FAIL(CAIRN_EINPUT,
                   "%s already holds checkpoints (newest: epoch %lld); resume with "
                   "--resume=auto, or start over with --resume=none --force, which deletes them",
                   c->dir, (long long)newest);
    CAIRN_CHECK(clear_dir(c->dir, &idx));
    CAIRN_CHECK(clear_dir(dir, &local));
    runlog_line(c->rt->log, "--force: deleted %d checkpoint%s in %s", idx.n + local.n,
                idx.n + local.n == 1 ? "" : "s", c->dir);
cleanup:
    ckpt_index_free(&idx);
    ckpt_index_free(&local);
    return rc;
}

/* Rank 0: "node3 (rank 2), node4 (ranks 5-6)" for the ranks r with
 * odd[r], hosts in rank order. */
static int rank_list(const struct ckpt_mgr *c, const int *odd, struct strbuf *b)
{
    const struct layout *l = c->rt->layout;
    for (int r = 0; r < l->size; r++) {
        if (!odd[r] || (r > 0 && odd[r - 1] && strcmp(l->hosts[r], l->hosts[r - 1]) == 0)) continue;
        int last = r;
        while (last + 1 < l->size && odd[last + 1] && strcmp(l->hosts[last + 1], l->hosts[r]) == 0)
            last++;
        strbuf_addf(b, "%s%s (rank %d", b->len ? ", " : "", l->hosts[r], r);
        if (last > r) strbuf_addf(b, "-%d", last);
        strbuf_add(b, ")");
    }
    return strbuf_finish(b);
}

/* Rank 0 leaves a uniquely named file in dir and every rank looks for it:
 * on rank 0, seen[r] says whether rank r saw it (*seen NULL, and no
 * error, where rank 0 could not leave one: a directory it cannot write to
 * fails every save, which checkpoint.on_failure handles). */
static int token_seen(struct ckpt_mgr *c, const char *dir, int **seen)
{
    const struct layout *l = c->rt->layout;
    int rc = 0, mine = 0, *all = NULL;
    char name[128] = "", path[4400] = "";
    *seen = NULL;
    if (is_root(c)) {
        snprintf(name, sizeof name, ".token-%s-%ld-%lld", l->host, (long)getpid(), (long long)time(NULL));
        all = malloc((size_t)l->size * sizeof *all);
        if (!all || fsx_mkdir_p(dir) || fsx_join(path, sizeof path, dir, name) ||
            fsx_write_atomic(path, name, strlen(name), FSX_PRIVATE))
            name[0] = '\0';
    }
    CAIRN_CHECK_MPI(MPI_Bcast(name, sizeof name, MPI_CHAR, 0, world(c)));
    if (!name[0]) goto cleanup;
    mine = fsx_join(path, sizeof path, dir, name) == 0 && access(path, R_OK) == 0;
    CAIRN_CHECK_MPI(MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, world(c)));
    if (is_root(c)) {
        unlink(path);
        *seen = all;
        all = NULL;
    }
cleanup:
    free(all);
    return rc;
}

/* A checkpoint is one file that every rank opens, so a directory some
 * nodes do not see (a node-local disk) would fail deep in MPI-IO later, or
 * let nodes write files of their own: once, at start-up. */
static int check_shared(struct ckpt_mgr *c)
{
    const struct layout *l = c->rt->layout;
    int rc = 0, *seen = NULL;
    struct strbuf b = {0};
    CAIRN_CHECK(token_seen(c, c->dir, &seen));
    if (!seen) goto cleanup;
    for (int r = 0; r < l->size; r++) seen[r] = !seen[r];
    CAIRN_CHECK(rank_list(c, seen, &b));
    if (b.len)
        CAIRN_FAIL(CAIRN_EINPUT,
                   "the checkpoint directory %s is not shared by all nodes: %s cannot see "
                   "the file rank 0 (%s) wrote there; every rank writes the one checkpoint "
                   "file, so put checkpoint.dir (or the run directory) on a file system "
                   "that every node mounts",
                   c->dir, strbuf_str(&b), l->host);
cleanup:
    free(seen);
    strbuf_free(&b);
    return rc;
}

/* Rank 0, for check_node_local: saw[r] as it says there. */
static int name_shared(struct ckpt_mgr *c, const struct placement_nodes *nd, int *saw)
{
    const struct layout *l = c->rt->layout;
    int rc = 0, other = INT_MAX, lead;
    struct strbuf b = {0};
    for (int r = 0; r < l->size; r++) other = saw[r] >= 0 && saw[r] < other ? saw[r] : other;
    for (int r = 0; r < l->size; r++) saw[r] = other < INT_MAX ? saw[r] == other : saw[r] == -2;
    CAIRN_CHECK(rank_list(c, saw, &b));
    if (b.len && other < INT_MAX) {
        lead = nd->rank[nd->start[other]];
        CAIRN_FAIL(CAIRN_EINPUT,
                   "checkpoint.local = \"%s\" is not node-local: %s see%s the file rank %d (%s) "
                   "wrote there; a partner copy guards against the loss of a node only on storage "
                   "that node has alone (a local disk, /dev/shm), so set checkpoint.local to such a "
                   "directory, or leave it out",
                   c->spec->local, strbuf_str(&b), strchr(strbuf_str(&b), ',') ? "" : "s", lead, l->hosts[lead]);
    }
    if (b.len)
        CAIRN_FAIL(CAIRN_EINPUT,
                   "checkpoint.local = \"%s\": %s cannot see the file the lowest rank of %s node wrote "
                   "there; the ranks of a node must share its node-local directory",
                   c->spec->local, strbuf_str(&b), strchr(strbuf_str(&b), ',') ? "their" : "its");
cleanup:
    strbuf_free(&b);
    return rc;
}

/* The inverse for checkpoint.local, on every node: a partner copy guards
 * a part against the loss of its node only if no other node sees it.  The
 * lowest rank of each node leaves a file in the node-local directory and
 * every rank looks for every node's: it must see its own node's file and
 * no other's.  Rank 0 names the ranks that do not (the error is rank 0's;
 * the caller agrees on it). */
static int check_node_local(struct ckpt_mgr *c)
{
    const struct layout *l = c->rt->layout;
    struct placement_nodes nd = {0};
    char mine[128] = "", (*names)[128] = NULL, path[4400];
    int rc = 0, *saw = NULL, look = -1;
    bool lead = false;
    CAIRN_CHECK(coll_agree(world(c), placement_nodes(hosts(c), l->size, &nd)));
    lead = nd.local[l->rank] == 0;
    if (lead) {
        snprintf(mine, sizeof mine, ".token-%s-%ld-%lld", l->host, (long)getpid(), (long long)time(NULL));
        rc = fsx_join(path, sizeof path, c->local.root, mine);
        if (rc == 0) rc = fsx_write_atomic(path, mine, strlen(mine), FSX_PRIVATE);
        if (rc) rc = cairn_err_wrap(CAIRN_EIO, "cannot write to the node-local checkpoint directory %s on %s: ",
                                    c->local.root, l->host);
    }
    names = calloc((size_t)l->size, sizeof *names);
    saw = calloc((size_t)l->size, sizeof *saw);
    if (rc == 0 && (!names || !saw)) rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    CAIRN_CHECK(coll_agree(world(c), rc));
    CAIRN_CHECK_MPI(MPI_Allgather(mine, sizeof mine, MPI_CHAR, names, sizeof mine, MPI_CHAR, world(c)));
    /* look: the first other node whose file this rank sees, else -2 if it
     * misses its own node's, else -1 */
    for (int k = 0; k < nd.n && look < 0; k++) {
        bool seen = fsx_join(path, sizeof path, c->local.root, names[nd.rank[nd.start[k]]]) == 0 &&
                    access(path, R_OK) == 0;
        if (k != nd.node_of[l->rank] && seen) look = k;
        if (k == nd.node_of[l->rank] && !seen) look = -2;
    }
    CAIRN_CHECK_MPI(MPI_Gather(&look, 1, MPI_INT, saw, 1, MPI_INT, 0, world(c)));
    CAIRN_CHECK(coll_barrier(world(c))); /* every rank has looked before a file goes */
    if (is_root(c)) rc = name_shared(c, &nd, saw);
cleanup:
    if (lead && mine[0] && fsx_join(path, sizeof path, c->local.root, mine) == 0) unlink(path);
    placement_nodes_free(&nd);
    free(names);
    free(saw);
    return rc;
}

/* checkpoint.local: this job's directory on every node is named by its
 * shared checkpoint directory (several jobs may share a node's disk), and
 * has to be node-local. */
static int open_local(struct ckpt_mgr *c)
{
    int rc = 0;
    char key[17] = "", real[PATH_MAX];
    if (is_root(c)) {
        rc = fsx_mkdir_p(c->dir);
        if (rc == 0 && !realpath(c->dir, real))
            rc = cairn_err_errno(CAIRN_EIO, __FILE__, __LINE__, "cannot resolve %s", c->dir);
        if (rc == 0) checksum_text(real, key);
    }
    CAIRN_CHECK(coll_agree(world(c), rc));
    CAIRN_CHECK_MPI(MPI_Bcast(key, sizeof key, MPI_CHAR, 0, world(c)));
    CAIRN_CHECK(fsx_join(c->local.dir, sizeof c->local.dir, c->dir, "local"));
    /* the user's id in the name: users who share a checkpoint directory get
     * trees of their own, each private (see fsx_private_dir) */
    int n = snprintf(c->local.root, sizeof c->local.root, "%s/cairn-%u-%s", c->spec->local, (unsigned)geteuid(), key);
    if (n < 0 || (size_t)n >= sizeof c->local.root)
        CAIRN_FAIL(CAIRN_EINPUT, "checkpoint.local: path too long: %s", c->spec->local);
    /* the tree holds the model and optimizer state, often in /dev/shm:
     * private to this user, checked before anything in it is read */
    rc = fsx_mkdir_p(c->spec->local);
    if (rc == 0) rc = fsx_private_dir(c->local.root, true);
    CAIRN_CHECK(coll_agree(world(c), rc));
    CAIRN_CHECK(coll_agree(world(c), check_node_local(c)));
    bool one_node = true;
    for (int r = 0; r < c->rt->layout->size; r++) one_node &= strcmp(c->rt->layout->hosts[r], c->rt->layout->host) == 0;
    if (one_node && is_root(c))
        runlog_line(c->rt->log, "note: every rank runs on %s: node-local checkpoints in %s have no partner "
                                "copies, so they do not outlive the node (the shared ones in %s do)",
                    c->rt->layout->host, c->spec->local, c->dir);
cleanup:
    return rc;
}

/* checkpoint.async: the writer thread's own communicators and copy.  Its
 * MPI calls run beside the main thread's, which needs
 * MPI_THREAD_MULTIPLE; without it saves stay synchronous. */
static int open_writer(struct ckpt_mgr *c)
{
    const struct layout *l = c->rt->layout;
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE) {
        if (is_root(c))
            runlog_line(c->rt->log, "note: this MPI library does not provide MPI_THREAD_MULTIPLE, "
                                    "which a background save needs: checkpoints are written "
                                    "synchronously (checkpoint.async)");
        return 0;
    }
    int n = l->gid >= 0 ? c->rt->plan->groups[l->gid].n_blobs : 0;
    return coll_agree(l->world, ckpt_bg_create(l->world, l->gid >= 0 ? l->lanes[0] : MPI_COMM_NULL,
                                               n, &c->bg));
}

int ckpt_open(struct runtime *rt, const struct ckpt_spec *spec, const struct resume_opts *ro,
              struct ckpt_mgr **out)
{
    int rc = 0;
    struct ckpt_mgr *c = calloc(1, sizeof *c);
    if (c) {
        c->rt = rt;
        c->spec = spec;
        c->ro = *ro;
        if (spec->dir)
            snprintf(c->dir, sizeof c->dir, "%s", spec->dir);
        else
            rc = fsx_join(c->dir, sizeof c->dir, rt->run_dir, "ckpt");
        const struct layout *l = rt->layout;
        c->shared = (struct ckpt_tier){.ops = &ckpt_tier_shared, .keep = spec->keep, .keep_epoch = -1, .keep_step = -1,
                                       .hosts = (const char(*)[PLACEMENT_HOST_MAX])l->hosts, .kernels = l->kernels_text};
        snprintf(c->shared.dir, sizeof c->shared.dir, "%s", c->dir);
        c->local = c->shared; /* its directories are set by open_local */
        c->local.ops = &ckpt_tier_local;
        c->local.dir[0] = '\0';
    } else {
        rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    }
    if (rc == 0 && ro->mode == RESUME_NONE && rt->layout->rank == 0) rc = check_fresh(c);
    rc = coll_agree(rt->layout->world, rc);
    if (rc == 0 && ckpt_enabled(c)) rc = coll_agree(rt->layout->world, check_shared(c));
    if (rc == 0 && ckpt_enabled(c) && spec->local) rc = open_local(c);
    if (rc == 0 && ckpt_enabled(c) && spec->async) rc = open_writer(c);
    if (rc) {
        ckpt_close(&c);
        return rc;
    }
    *out = c;
    return 0;
}

void ckpt_close(struct ckpt_mgr **c)
{
    if (!c || !*c) return;
    ckpt_bg_destroy(&(*c)->bg); /* a save still in flight ends first */
    free((*c)->local.parts);
    free(*c);
    *c = NULL;
}

/* ---- resuming --------------------------------------------------------------------- */

/* What rank 0 decided to try next, for everyone. */
struct candidate {
    int have, exists;
    int skip;  /* known unusable without reading it */
    int local; /* node-local: file is its manifest, local/NAME */
    int64_t epoch, step, bytes;
    char file[256];
};

static void committed_list(const struct ckpt_index *idx, struct strbuf *b)
{
    for (int i = 0; i < idx->n; i++)
        if (idx->v[i].ok && idx->v[i].step == 0)
            strbuf_addf(b, "%s%lld", b->len ? " " : "", (long long)idx->v[i].epoch);
    if (!b->len) strbuf_add(b, "none");
}

/* Rank 0: say that a checkpoint cannot be loaded, and why. */
static void report_bad(struct ckpt_mgr *c, const char *file, int64_t epoch, int64_t step, const char *why)
{
    runlog_line(c->rt->log, "warning: checkpoint %s/%s (epoch %lld step %lld) cannot be loaded: %s; "
                            "marking it bad",
                c->dir, file, (long long)epoch, (long long)step, why);
    runlog_metric(c->rt->log, "ckpt_bad", epoch, step, "");
}

/* Rank 0's index edit at a resume: from the newest entry down, those whose
 * file is gone are marked bad, up to the newest one that is there (all at
 * once, with one index write: one per missing file made a start-up over a
 * long index quadratic).  The index as edited goes to *out. */
struct missing {
    struct ckpt_mgr *c;
    struct ckpt_index *out;
};

static int mark_missing(struct ckpt_index *idx, struct ckpt_index *gone, void *arg)
{
    const struct missing *a = arg;
    int missing = 0;
    char path[4400];
    (void)gone;
    for (int i = ckpt_index_newest_ok(idx, idx->n); i >= 0; i = ckpt_index_newest_ok(idx, i)) {
        if (fsx_join(path, sizeof path, a->c->dir, idx->v[i].file) == 0 && fsx_is_regular(path))
            break; /* a FIFO named in the index would block its open */
        report_bad(a->c, idx->v[i].file, idx->v[i].epoch, idx->v[i].step, "the file is missing");
        idx->v[i].ok = false;
        missing++;
    }
    *a->out = (struct ckpt_index){.v = malloc(((size_t)idx->n + 1) * sizeof *idx->v), .n = idx->n};
    if (!a->out->v) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    if (idx->n) memcpy(a->out->v, idx->v, (size_t)idx->n * sizeof *idx->v);
    return missing ? 0 : CKPT_INDEX_KEEP;
}

/* Rank 0: the newest node-local checkpoint instead of entry i of the
 * shared index (-1: none) if it is newer. */
static int choose_local(struct ckpt_mgr *c, const struct ckpt_index *shared, int i, struct candidate *k)
{
    int rc = 0;
    struct ckpt_index idx = {0};
    char path[4400];
    CAIRN_CHECK(ckpt_index_read(c->local.dir, &idx));
    int j = ckpt_index_newest_ok(&idx, idx.n);
    if (j < 0) goto cleanup;
    const struct ckpt_entry *e = &idx.v[j], *f = i >= 0 ? &shared->v[i] : NULL;
    if (f && (f->epoch > e->epoch || (f->epoch == e->epoch && f->step >= e->step))) goto cleanup;
    *k = (struct candidate){.have = 1, .local = 1, .epoch = e->epoch, .step = e->step, .bytes = e->bytes};
    if (snprintf(k->file, sizeof k->file, "local/%s", e->file) >= (int)sizeof k->file) {
        *k = (struct candidate){0}; /* no name cairn writes */
        goto cleanup;
    }
    CAIRN_CHECK(fsx_join(path, sizeof path, c->dir, k->file));
    k->exists = fsx_is_regular(path);
cleanup:
    ckpt_index_free(&idx);
    return rc;
}

/* Rank 0: the checkpoint the resume mode points at now. */
static int choose(struct ckpt_mgr *c, struct candidate *k)
{
    int rc = 0, i;
    struct ckpt_index idx = {0};
    struct strbuf list = {0};
    *k = (struct candidate){0};
    if (c->ro.mode == RESUME_EPOCH) {
        CAIRN_CHECK(ckpt_index_read(c->dir, &idx));
        i = ckpt_index_find(&idx, c->ro.epoch, 0);
        if ((i < 0 || !idx.v[i].ok) && c->local.root[0] && !c->skip_local) {
            CAIRN_CHECK(choose_local(c, &idx, -1, k));
            if (k->local && k->epoch == c->ro.epoch && k->step == 0) goto cleanup;
            *k = (struct candidate){0};
        }
        if (i < 0 || !idx.v[i].ok) {
            committed_list(&idx, &list);
            CAIRN_FAIL(CAIRN_ENOCKPT, "no such checkpoint: epoch %lld %s in %s (committed epochs: %s)",
                       (long long)c->ro.epoch, i < 0 ? "was never committed" : "is marked bad",
                       c->dir, strbuf_str(&list));
        }
    } else {
        struct missing a = {.c = c, .out = &idx}; /* the index, read and edited once */
        CAIRN_CHECK(ckpt_index_update(c->dir, mark_missing, &a, NULL, NULL));
        i = ckpt_index_newest_ok(&idx, idx.n);
        if (c->local.root[0] && !c->skip_local) CAIRN_CHECK(choose_local(c, &idx, i, k));
        if (k->local) goto cleanup;
        if (i < 0 && c->ro.mode == RESUME_LATEST)
            CAIRN_FAIL(CAIRN_ENOCKPT, "--resume=latest: no usable committed checkpoint in %s",
                       c->dir);
    }
    if (i < 0) goto cleanup;
    char path[4400];
    k->have = 1;
    k->epoch = idx.v[i].epoch;
    k->step = idx.v[i].step;
    snprintf(k->file, sizeof k->file, "%s", idx.v[i].file);
    CAIRN_CHECK(fsx_join(path, sizeof path, c->dir, k->file));
    k->exists = fsx_is_regular(path); /* a FIFO named in the index would block its open */
    k->bytes = (int64_t)fsx_file_stored(path); /* not a size the file only claims */
cleanup:
    ckpt_index_free(&idx);
    strbuf_free(&list);
    return rc;
}

/* Rank 0: mark a checkpoint bad in dir's index (atomically). */
static int mark_one(struct ckpt_index *idx, struct ckpt_index *gone, void *arg)
{
    const struct candidate *k = arg;
    int i = ckpt_index_find(idx, k->epoch, k->step);
    (void)gone;
    if (i < 0) return CKPT_INDEX_KEEP;
    idx->v[i].ok = false;
    return 0;
}

static int mark_bad_in(const char *dir, const struct candidate *k)
{
    return ckpt_index_update(dir, mark_one, (void *)k, NULL, NULL);
}

/* DIR/loading names the checkpoint being loaded and how many runs tried:
 * if loading a file kills the process, the third run gives up on it. */
static bool load_tried_twice(struct ckpt_mgr *c, const struct candidate *k)
{
    char path[4400], *text = NULL, name[256] = "", buf[300];
    size_t len = 0;
    int tries = 0;
    if (fsx_join(path, sizeof path, c->dir, "loading")) return false;
    if (fsx_is_regular(path) && fsx_read_all(path, &text, &len) == 0)
        sscanf(text, "%255s %d", name, &tries);
    free(text);
    if (strcmp(name, k->file) != 0) tries = 0;
    if (tries >= 2) return true;
    int n = snprintf(buf, sizeof buf, "%s %d\n", k->file, tries + 1);
    fsx_write_atomic(path, buf, (size_t)n, 0); /* best effort: it only guards crash loops */
    return false;
}

/* DIR/restarts counts how often in a row the same checkpoint was resumed
 * (k->file), or the job started fresh for want of one (k->file "-"); a
 * commit, a finished run, a preempted one or one stopped by an error cairn
 * reports (not "lost") removes it.  A resume loop of
 * runs that die, before their first save too, stops after
 * checkpoint.max_resumes. */
static int count_resume(struct ckpt_mgr *c, const struct candidate *k)
{
    char path[4400], *text = NULL, name[256] = "", buf[300];
    size_t len = 0;
    long long n = 0;
    int rc = fsx_join(path, sizeof path, c->dir, "restarts");
    if (rc) return rc;
    if (fsx_is_regular(path) && fsx_read_all(path, &text, &len) == 0) sscanf(text, "%255s %lld", name, &n);
    free(text);
    n = n < 0 ? 0 : n >= INT_MAX ? INT_MAX : n; /* someone else's file: never overflow */
    n = strcmp(name, k->file) != 0 ? 1 : n < INT_MAX ? n + 1 : n;
    int w = snprintf(buf, sizeof buf, "%s %lld\n", k->file, n);
    fsx_write_atomic(path, buf, (size_t)w, 0); /* best effort: a read-only directory still resumes */
    if (n > c->spec->max_resumes && !k->have)
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                             "the job has started fresh %lld times in a row and died each time "
                             "before a checkpoint was committed; stopping to break the restart loop "
                             "(checkpoint.max_resumes = %lld; remove %s to allow more)",
                             n, (long long)c->spec->max_resumes, path);
    if (n > c->spec->max_resumes)
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                             "%s has been resumed %lld times in a row without a newer checkpoint "
                             "being committed; stopping to break the restart loop "
                             "(checkpoint.max_resumes = %lld; remove %s to allow more)",
                             k->file, n, (long long)c->spec->max_resumes, path);
    return 0;
}

void ckpt_run_ended(struct ckpt_mgr *c)
{
    char path[4400];
    if (fsx_join(path, sizeof path, c->dir, "restarts") == 0) unlink(path);
}

static void loading_done(struct ckpt_mgr *c)
{
    char path[4400];
    if (fsx_join(path, sizeof path, c->dir, "loading") == 0) unlink(path);
}

/* Rank 0 picks, everyone learns the pick (and whether to skip it). */
static int next_candidate(struct ckpt_mgr *c, struct candidate *k)
{
    int rc = 0;
    if (is_root(c)) {
        rc = choose(c, k);
        if (rc == 0 && k->have && k->exists && load_tried_twice(c, k)) {
            k->skip = 1;
            cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__,
                          "two earlier runs died while loading it");
        } else if (rc == 0 && k->have && !k->exists) {
            k->skip = 1;
            cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "the file is missing");
        }
    }
    CAIRN_CHECK(coll_agree(world(c), rc));
    CAIRN_CHECK_MPI(MPI_Bcast(k, (int)sizeof *k, MPI_BYTE, 0, world(c)));
cleanup:
    return rc;
}

/* A load failed with damage: say so, mark it bad, fall back. */
static int give_up_on(struct ckpt_mgr *c, const struct candidate *k)
{
    int rc = 0;
    if (is_root(c)) {
        report_bad(c, k->file, k->epoch, k->step, cairn_errmsg());
        rc = mark_bad_in(c->dir, k);
        loading_done(c);
    }
    return coll_agree(world(c), rc);
}

/* Load candidate k from its tier into rt's blobs. */
static int load(struct ckpt_mgr *c, const struct candidate *k, struct ckpt_meta *m, struct ckpt_io *io)
{
    struct ckpt_tier *t = k->local ? &c->local : &c->shared;
    struct ckpt_entry e = {.epoch = k->epoch, .step = k->step, .bytes = k->bytes};
    struct ckpt_view v;
    struct tensor **tv = NULL;
    struct watchdog_lane *lane = watchdog_main(c->rt->watchdog);
    snprintf(e.file, sizeof e.file, "%s", k->local ? k->file + strlen("local/") : k->file);
    mgr_watch_io(c, lane, (double)k->bytes);
    if (k->local)
        mgr_doing(c, lane, "loading the node-local checkpoint %s/%s (every rank's part from its node or a partner)",
                  c->dir, k->file);
    else
        mgr_doing(c, lane, "loading checkpoint %s/%s (collective HDF5 I/O over all ranks)", c->dir, k->file);
    int rc = coll_agree(world(c), mgr_view(c, &v, &tv));
    if (rc == 0) rc = t->ops->read(t, &v, &e, m, io);
    watchdog_progress(lane);
    if (rc == 0) mgr_loaded(c);
    free(tv);
    return rc;
}

/* The node-local checkpoint k did not load: say why, resume from the
 * shared tier instead, and mark it bad, whatever the cause: this run goes
 * on from an older position, and a later run must not return to k (its
 * nodes back, say) and abandon what this one did. */
static int local_unusable(struct ckpt_mgr *c, const struct candidate *k)
{
    int mrc = 0;
    char at[96];
    c->skip_local = true;
    if (!is_root(c)) return coll_agree(world(c), 0);
    runlog_line(c->rt->log, "warning: the node-local checkpoint %s (%s) cannot be loaded: %s; resuming from "
                            "the shared checkpoints in %s instead (it is marked bad)",
                ckpt_position(k->epoch, k->step, at, sizeof at), k->file, cairn_errmsg(), c->dir);
    runlog_metric(c->rt->log, "ckpt_local_unusable", k->epoch, k->step, "");
    mrc = mark_bad_in(c->local.dir, k);
    loading_done(c);
    return coll_agree(world(c), mrc);
}

/* Rank 0, at a resume: the state is right whatever the kernel, but the
 * rest of the run computes on other kernels than the checkpoint's and is
 * not bitwise the uninterrupted run (blas_kernel.h).  theirs: the
 * checkpoint's text, "" if it has none (files and manifests of earlier
 * versions). */
static void kernels_changed(const struct ckpt_mgr *c, const char *theirs)
{
    char ours[sizeof((struct ckpt_io *)0)->blas_kernels], core[BLAS_CORE_MAX];
    snprintf(ours, sizeof ours, "%s", c->rt->layout->kernels_text); /* truncated as theirs is */
    if (!theirs[0] || strcmp(theirs, ours) == 0) return;
    blas_kernels_core(theirs, core);
    runlog_line(c->rt->log, "warning: the checkpoint was written on BLAS kernel%s %s, this run runs %s: "
                            "the results stay correct but are not bitwise equal to a run that was never "
                            "interrupted%s%s%s",
                core[0] ? "" : "s", theirs, ours, core[0] ? " (OPENBLAS_CORETYPE=" : "", core,
                core[0] ? " in every rank's environment runs the checkpoint's kernel)" : "");
}

int ckpt_resume(struct ckpt_mgr *c, struct ckpt_meta *m, bool *resumed)
{
    int rc = 0;
    *resumed = false;
    if (c->ro.mode == RESUME_NONE) return 0;
    for (;;) {
        struct candidate k;
        CAIRN_CHECK(next_candidate(c, &k));
        if (!k.have) {
            if (is_root(c)) runlog_line(c->rt->log, "no committed checkpoint in %s: starting fresh", c->dir);
            snprintf(k.file, sizeof k.file, "-");
            return coll_agree(world(c), is_root(c) && ckpt_enabled(c) ? count_resume(c, &k) : 0);
        }
        struct ckpt_io io = {0};
        double t0 = clock_run();
        int lrc = k.skip ? CAIRN_ECORRUPT : load(c, &k, m, &io), partners = io.partners;
        const char *who = io.partner_ranks;
        if (lrc == 0 && (m->epoch != k.epoch || m->step != k.step))
            lrc = cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__,
                                "it says epoch %lld step %lld, its index entry epoch %lld step %lld",
                                (long long)m->epoch, (long long)m->step, (long long)k.epoch,
                                (long long)k.step);
        if (lrc == 0) {
            if (is_root(c)) loading_done(c);
            CAIRN_CHECK(coll_agree(world(c), is_root(c) ? count_resume(c, &k) : 0));
            if (k.local) {
                c->local_committed = true;
            } else {
                c->shared.keep_epoch = k.epoch;
                c->shared.keep_step = k.step;
                c->last = *m;
                c->committed = true;
            }
            *resumed = true;
            CAIRN_CHECK(mgr_report_io(c, world(c), k.local ? "loaded (node-local)" : "loaded",
                                k.local ? "ckpt_local_load" : "ckpt_load", k.file, m, &io, clock_run() - t0));
            if (is_root(c)) kernels_changed(c, io.blas_kernels);
            if (is_root(c) && io.layout_change[0])
                runlog_line(c->rt->log, "layout changed since that checkpoint: %s; sharded state re-split",
                            io.layout_change);
            if (is_root(c) && k.local)
                runlog_line(c->rt->log, partners ? "node-local checkpoint %s: restored from partner copies "
                                                   "for rank%s %s, from the ranks' own copies for the rest"
                                                 : "node-local checkpoint %s: restored from the ranks' own copies%s%s",
                            k.file, partners == 1 ? "" : partners ? "s" : "", who);
            return 0;
        }
        if (k.local && (lrc == CAIRN_EINPUT || lrc == CAIRN_ENOCKPT || lrc == CAIRN_ECORRUPT ||
                        lrc == CAIRN_ENOMEM)) {
            CAIRN_CHECK(local_unusable(c, &k));
            continue;
        }
        if (lrc != CAIRN_ECORRUPT) {
            if (is_root(c)) loading_done(c);
            return lrc; /* other settings or layout: refuse, change nothing */
        }
        char why[1024];
        snprintf(why, sizeof why, "%s", cairn_errmsg());
        CAIRN_CHECK(give_up_on(c, &k));
        if (c->ro.mode == RESUME_EPOCH)
            CAIRN_FAIL(CAIRN_ECORRUPT, "the checkpoint of epoch %lld (%s) is damaged: %s",
                       (long long)k.epoch, k.file, why);
    }
cleanup:
    return rc;
}

