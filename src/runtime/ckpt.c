/* The checkpoint manager; see include/cairn/ckpt.h. */
#include "cairn/ckpt.h"

#include "cairn/blas_kernel.h"
#include "cairn/ckpt_bg.h"
#include "cairn/ckpt_file.h"
#include "cairn/ckpt_index.h"
#include "cairn/ckpt_local.h"
#include "cairn/checksum.h"
#include "cairn/clock.h"
#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fault.h"
#include "cairn/fsx.h"
#include "cairn/job.h"
#include "cairn/layout.h"
#include "cairn/plan.h"
#include "cairn/runlog.h"
#include "cairn/runtime.h"
#include "cairn/strbuf.h"
#include "cairn/watchdog.h"
#include "cairn/workspace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Who does a save: the main thread over the job's communicators and
 * tensors, or the writer thread (ckpt_bg.h) over its own and the copy. */
struct saver {
    MPI_Comm world, group;
    struct tensor **tensors; /* by blob id */
    struct watchdog_lane *lane;
};

/* The tiers a save goes to (checkpoint.local). */
enum { TIER_SHARED = 1, TIER_LOCAL = 2 };

/* What a save did, for the main thread to take in. */
struct saved {
    double seconds;        /* from its start to its commit */
    double shared_seconds; /* of its shared file alone (0: none written) */
    double bytes;          /* the state's, every rank's together (0: unknown) */
    double rate;           /* bytes per second, 0 if it failed */
    int committed;         /* the tiers it committed */
    int failed;            /* the tiers it tried and did not commit */
};

struct ckpt_mgr {
    struct runtime *rt;
    const struct ckpt_spec *spec;
    struct resume_opts ro;
    char dir[4096];
    int64_t keep_epoch, keep_step; /* the checkpoint resumed from: never deleted */
    struct ckpt_meta last;         /* the position this run last committed or resumed ... */
    bool committed;                /* ... if there is one */
    double longest;
    double longest_shared; /* of saves that wrote the shared file (what a stop writes) */
    double longest_stall;  /* the main thread's part of a save: all of it, or the copy */
    double rate; /* bytes per second of this run's last save (every rank), 0: none yet */
    bool kill_wait_said;
    bool unreserved_said;
    /* checkpoint.async: the writer, and the save it has in flight */
    struct ckpt_bg *bg;
    struct ckpt_meta pending;
    struct saved pending_out;
    struct watchdog_lane *writer_lane; /* the writer's, while it writes */
    int pending_tiers;
    /* checkpoint.local: this job's directory on every node, the shared
     * directory's list of node-local checkpoints, and whether this run
     * committed or resumed one */
    char local_root[4400];
    char local_dir[4400];
    bool local_committed;
    bool skip_local;   /* a resume found the node-local tier unusable */
    bool flushed;      /* this run committed a shared checkpoint */
    bool local_failed; /* the last node-local save failed: the next one flushes */
    bool local_off;    /* a resumed run whose nodes lack room: shared saves only */
    bool fallback_said;
    double state_bytes; /* every rank's together: at the start, then as each save found it */
};

static bool is_root(const struct ckpt_mgr *c) { return c->rt->layout->rank == 0; }
static MPI_Comm world(const struct ckpt_mgr *c) { return c->rt->layout->world; }
static const char (*hosts(const struct ckpt_mgr *c))[PLACEMENT_HOST_MAX]
{
    return (const char(*)[PLACEMENT_HOST_MAX])c->rt->layout->hosts;
}

bool ckpt_enabled(const struct ckpt_mgr *c) { return c && c->spec->every > 0; }
int64_t ckpt_every(const struct ckpt_mgr *c) { return c->spec->every; }
double ckpt_longest_save(const struct ckpt_mgr *c) { return c->longest; }
double ckpt_longest_stall(const struct ckpt_mgr *c) { return c->longest_stall; }
/* bytes per second of a slow parallel file system (see watch_io) */
#define CKPT_SLOW_RATE 50e6

/* A stop writes the shared file alone: with a node-local tier its time is
 * not that of the (quick) node-local saves.  Before one is measured, the
 * state's bytes at this run's last shared rate, or a slow file system's. */
static double stop_save_seconds(const struct ckpt_mgr *c)
{
    double shared = c->longest_shared;
    if (!c->local_dir[0] && c->longest > shared) shared = c->longest;
    if (shared > 0) return shared;
    return c->state_bytes / (c->rate > 0 ? c->rate : CKPT_SLOW_RATE);
}
double ckpt_stop_seconds(const struct ckpt_mgr *c)
{
    return (c->bg ? c->longest : 0) + stop_save_seconds(c);
}
bool ckpt_local_tier(const struct ckpt_mgr *c) { return c && c->local_dir[0] && !c->local_off; }
bool ckpt_committed_at(const struct ckpt_mgr *c, const struct ckpt_meta *m)
{
    return c->committed && c->last.epoch == m->epoch && c->last.step == m->step;
}
const char *ckpt_dir(const struct ckpt_mgr *c) { return c->dir; }

/* At a point of a save: CAIRN_FAULT's kill, fill, ..., and hold, which
 * keeps a background save there until the main thread waits for it. */
static void fault_hook(void *arg, const char *point, int64_t epoch, const char *dir)
{
    const struct ckpt_mgr *c = arg;
    const struct runtime *rt = c->rt;
    fault_point(&rt->fault, rt->layout->rank, point, epoch, dir);
    if (fault_hold(&rt->fault, rt->layout->rank, point, epoch) && ckpt_bg_running(c->bg)) {
        fprintf(stderr, "cairn: rank %d: CAIRN_FAULT holds the background save at %s until the "
                        "run waits for it\n", rt->layout->rank, point);
        watchdog_pause(c->writer_lane); /* held on purpose, for as long as an epoch takes */
        ckpt_bg_hold(c->bg);
        watchdog_progress(c->writer_lane);
    }
}

/* The checkpoint file's view of this rank: the plan, the layout's
 * communicators and the workspace's tensors (*tensors: the caller frees). */
static int make_view(const struct ckpt_mgr *c, struct ckpt_view *v, struct tensor ***tensors)
{
    const struct runtime *rt = c->rt;
    const struct layout *l = rt->layout;
    int n = l->gid >= 0 ? rt->plan->groups[l->gid].n_blobs : 0;
    *tensors = calloc((size_t)n + 1, sizeof **tensors);
    for (int b = 0; *tensors && b < n; b++) (*tensors)[b] = &rt->ws->v[b].t;
    *v = (struct ckpt_view){.plan = rt->plan, .comm = l->world, .rank = l->rank, .group = l->gid,
                            .group_comm = l->gid >= 0 ? l->lanes[0] : MPI_COMM_NULL,
                            .group_rank = l->grank, .group_size = l->gsize, .tensors = *tensors,
                            .stripe_count = c->spec->stripe_count, .stripe_size = c->spec->stripe_size,
                            .align = c->spec->align, .blas_kernels = l->kernels_text,
                            .small_mdc = fault_mdc(&rt->fault), .fault = fault_hook, .fault_arg = (void *)c};
    return *tensors ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
}

/* The main thread's saver. */
static struct saver main_saver(const struct ckpt_mgr *c, struct tensor **tensors)
{
    const struct layout *l = c->rt->layout;
    return (struct saver){.world = l->world, .group = l->gid >= 0 ? l->lanes[0] : MPI_COMM_NULL,
                          .tensors = tensors, .lane = watchdog_main(c->rt->watchdog)};
}

/* A save or load may take longer than any step before it (a large state, a
 * busy file system; the first save comes before any step): every rank's
 * watchdog allows the whole file's `bytes` at a slow parallel file
 * system's pace, or at a third of this run's last save rate if that is
 * slower, on top of its timeout.  Every rank: one that holds nothing waits
 * in the same collective I/O as the one that holds the most. */
static void watch_io(const struct ckpt_mgr *c, struct watchdog_lane *lane, double bytes)
{
    double allow = bytes / CKPT_SLOW_RATE;
    if (c->rate > 0 && 3 * bytes / c->rate > allow) allow = 3 * bytes / c->rate;
    watchdog_progress(lane);
    watchdog_allow(lane, allow);
}

/* What every rank does now, for the watchdog: one piece of the save or the
 * load, which all ranks reach. */
static void doing_all(const struct ckpt_mgr *c, struct watchdog_lane *lane, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void doing_all(const struct ckpt_mgr *c, struct watchdog_lane *lane, const char *fmt, ...)
{
    char what[4400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    watchdog_doing(lane, "%s", what);
    watchdog_peers(lane, 0, c->rt->layout->size, NULL);
}

/* A save's view: s's communicators and tensors (*t: the caller frees).
 * Collective on s->world. */
static int saver_view(const struct ckpt_mgr *c, const struct saver *s, struct ckpt_view *v,
                      struct tensor ***t)
{
    const struct layout *l = c->rt->layout;
    int rc = coll_agree(s->world, make_view(c, v, t));
    if (rc) return rc;
    v->comm = s->world;
    v->group_comm = s->group;
    for (int b = 0; l->gid >= 0 && b < c->rt->plan->groups[l->gid].n_blobs; b++) (*t)[b] = s->tensors[b];
    return 0;
}

/* The persistent bytes of every rank, about (collective on s->world). */
static int state_bytes(const struct ckpt_mgr *c, const struct saver *s, double *all)
{
    const struct layout *l = c->rt->layout;
    double mine = 0;
    for (int b = 0; l->gid >= 0 && b < c->rt->plan->groups[l->gid].n_blobs; b++)
        if (c->rt->plan->groups[l->gid].blobs[b].persistent) mine += (double)tensor_bytes(s->tensors[b]);
    return coll_allreduce(&mine, all, 1, MPI_DOUBLE, MPI_SUM, s->world);
}

/* *bytes: the file's size, about (every rank). */
static int file_write(struct ckpt_mgr *c, const struct saver *s, const char *path,
                      const struct ckpt_meta *m, struct ckpt_io *io, double *bytes)
{
    struct ckpt_view v;
    struct tensor **t = NULL;
    double all = 0, t0 = clock_run();
    int rc = state_bytes(c, s, &all);
    if (rc) return rc;
    *bytes = all;
    watch_io(c, s->lane, all);
    doing_all(c, s->lane, "saving the checkpoint of epoch %lld step %lld (collective HDF5 I/O over all ranks)",
              (long long)m->epoch, (long long)m->step);
    rc = saver_view(c, s, &v, &t);
    if (rc == 0) rc = ckpt_file_write(&v, path, m, io);
    watchdog_progress(s->lane);
    if (io->unreserved && !c->unreserved_said) { /* rank 0's finding */
        c->unreserved_said = true;
        runlog_line(c->rt->log, "note: the file system of %s cannot reserve space ahead (no fallocate): "
                                "checkpoints are written without a reservation, so a disk that fills "
                                "fails a save after its writes, not before them (checkpoint.on_failure)",
                    c->dir);
    }
    if (rc == 0 && clock_run() > t0) c->rate = all / (clock_run() - t0);
    free(t);
    return rc;
}

/* A load defines every persistent blob of this rank's group. */
static int file_read(const struct ckpt_mgr *c, const char *path, struct ckpt_meta *m,
                     struct ckpt_io *io)
{
    struct ckpt_view v;
    struct tensor **t = NULL;
    const struct layout *l = c->rt->layout;
    struct watchdog_lane *lane = watchdog_main(c->rt->watchdog);
    watch_io(c, lane, (double)fsx_file_stored(path)); /* not a size the file only claims */
    doing_all(c, lane, "loading checkpoint %s (collective HDF5 I/O over all ranks)", path);
    int rc = coll_agree(world(c), make_view(c, &v, &t));
    if (rc == 0) rc = ckpt_file_read(&v, path, m, io);
    watchdog_progress(lane);
    for (int b = 0; rc == 0 && l->gid >= 0 && b < c->rt->plan->groups[l->gid].n_blobs; b++)
        if (c->rt->plan->groups[l->gid].blobs[b].persistent) c->rt->ws->v[b].defined = true;
    free(t);
    return rc;
}

static void fault(const struct ckpt_mgr *c, const char *point, int64_t epoch)
{
    fault_hook((void *)c, point, epoch, c->dir);
}

/* ---- statistics ----------------------------------------------------------- */

static const char *human(double bytes, char *buf, size_t size)
{
    if (bytes >= 1e9) snprintf(buf, size, "%.2f GB", bytes / 1e9);
    else if (bytes >= 1e6) snprintf(buf, size, "%.1f MB", bytes / 1e6);
    else snprintf(buf, size, "%.1f kB", bytes / 1e3);
    return buf;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Bytes, wall time, GB/s and the per-rank spread of one save or load; the
 * slowest rank is the one the others waited for. */
static int report_io(struct ckpt_mgr *c, MPI_Comm world, const char *what, const char *metric,
                     const char *file, const struct ckpt_meta *m, const struct ckpt_io *io, double seconds)
{
    int rc = 0, size = c->rt->layout->size;
    double *t = is_root(c) ? malloc((size_t)size * 2 * sizeof *t) : NULL;
    uint64_t bytes = 0;
    /* no rank may skip the collectives below alone */
    CAIRN_CHECK(coll_agree(world, is_root(c) && !t ? cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__,
                                                                     "out of memory") : 0));
    CAIRN_CHECK(coll_gather_double(world, io->seconds, t));
    CAIRN_CHECK_MPI(MPI_Reduce(&io->bytes, &bytes, 1, MPI_UINT64_T, MPI_SUM, 0, world));
    if (!is_root(c)) goto cleanup;
    int slowest = 0;
    for (int i = 0; i < size; i++) {
        t[size + i] = t[i];
        if (t[i] > t[slowest]) slowest = i;
    }
    qsort(t + size, (size_t)size, sizeof *t, by_value);
    double gbps = seconds > 0 ? (double)bytes / 1e9 / seconds : 0;
    char hb[32];
    runlog_line(c->rt->log,
                "checkpoint %s: epoch %lld step %lld (%s): %s in %.3f s = %.3f GB/s; "
                "per rank %.3f/%.3f/%.3f s (min/median/max), slowest rank %d",
                what, (long long)m->epoch, (long long)m->step, file, human((double)bytes, hb, sizeof hb),
                seconds, gbps, t[size], t[size + size / 2], t[2 * size - 1], slowest);
    char fields[512];
    snprintf(fields, sizeof fields,
             "\"file\":\"%s\",\"bytes\":%llu,\"seconds\":%.6f,\"gbps\":%.6f,\"rank_min\":%.6f,"
             "\"rank_median\":%.6f,\"rank_max\":%.6f,\"slowest_rank\":%d",
             file, (unsigned long long)bytes, seconds, gbps, t[size], t[size + size / 2],
             t[2 * size - 1], slowest);
    runlog_metric(c->rt->log, metric, m->epoch, m->step, fields);
cleanup:
    free(t);
    return rc;
}

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
        rc = fsx_join(path, sizeof path, c->local_root, mine);
        if (rc == 0) rc = fsx_write_atomic(path, mine, strlen(mine), FSX_PRIVATE);
        if (rc) rc = cairn_err_wrap(CAIRN_EIO, "cannot write to the node-local checkpoint directory %s on %s: ",
                                    c->local_root, l->host);
    }
    names = calloc((size_t)l->size, sizeof *names);
    saw = calloc((size_t)l->size, sizeof *saw);
    if (rc == 0 && (!names || !saw)) rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    CAIRN_CHECK(coll_agree(world(c), rc));
    CAIRN_CHECK_MPI(MPI_Allgather(mine, sizeof mine, MPI_CHAR, names, sizeof mine, MPI_CHAR, world(c)));
    /* look: the first other node whose file this rank sees, else -2 if it
     * misses its own node's, else -1 */
    for (int k = 0; k < nd.n && look < 0; k++) {
        bool seen = fsx_join(path, sizeof path, c->local_root, names[nd.rank[nd.start[k]]]) == 0 &&
                    access(path, R_OK) == 0;
        if (k != nd.node_of[l->rank] && seen) look = k;
        if (k == nd.node_of[l->rank] && !seen) look = -2;
    }
    CAIRN_CHECK_MPI(MPI_Gather(&look, 1, MPI_INT, saw, 1, MPI_INT, 0, world(c)));
    CAIRN_CHECK(coll_barrier(world(c))); /* every rank has looked before a file goes */
    if (is_root(c)) rc = name_shared(c, &nd, saw);
cleanup:
    if (lead && mine[0] && fsx_join(path, sizeof path, c->local_root, mine) == 0) unlink(path);
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
    CAIRN_CHECK(fsx_join(c->local_dir, sizeof c->local_dir, c->dir, "local"));
    /* the user's id in the name: users who share a checkpoint directory get
     * trees of their own, each private (see fsx_private_dir) */
    int n = snprintf(c->local_root, sizeof c->local_root, "%s/cairn-%u-%s", c->spec->local, (unsigned)geteuid(), key);
    if (n < 0 || (size_t)n >= sizeof c->local_root)
        CAIRN_FAIL(CAIRN_EINPUT, "checkpoint.local: path too long: %s", c->spec->local);
    /* the tree holds the model and optimizer state, often in /dev/shm:
     * private to this user, checked before anything in it is read */
    rc = fsx_mkdir_p(c->spec->local);
    if (rc == 0) rc = fsx_private_dir(c->local_root, true);
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
        c->keep_epoch = c->keep_step = -1;
        if (spec->dir)
            snprintf(c->dir, sizeof c->dir, "%s", spec->dir);
        else
            rc = fsx_join(c->dir, sizeof c->dir, rt->run_dir, "ckpt");
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
    free(*c);
    *c = NULL;
}

/* ---- resuming --------------------------------------------------------------------- */

/* What rank 0 decided to try next, for everyone. */
struct candidate {
    int have, exists;
    int skip;  /* known unusable without reading it */
    int local; /* node-local: file is its manifest, local/NAME */
    int64_t epoch, step;
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

/* Rank 0: from entry i down, the newest one whose file is there.  Those
 * whose file is gone are marked bad all at once, with one index write:
 * one write per missing file made a start-up over a long index quadratic. */
static int skip_missing(struct ckpt_mgr *c, struct ckpt_index *idx, int *i)
{
    int rc = 0, missing = 0;
    char path[4400];
    for (; *i >= 0; *i = ckpt_index_newest_ok(idx, *i)) {
        CAIRN_CHECK(fsx_join(path, sizeof path, c->dir, idx->v[*i].file));
        if (fsx_is_regular(path)) break; /* a FIFO named in the index would block its open */
        report_bad(c, idx->v[*i].file, idx->v[*i].epoch, idx->v[*i].step, "the file is missing");
        idx->v[*i].ok = false;
        missing++;
    }
    if (missing) {
        CAIRN_CHECK(ckpt_index_write_tmp(c->dir, idx));
        CAIRN_CHECK(ckpt_index_commit_tmp(c->dir, NULL));
    }
cleanup:
    return rc;
}

/* Rank 0: the newest node-local checkpoint instead of entry i of the
 * shared index (-1: none) if it is newer. */
static int choose_local(struct ckpt_mgr *c, const struct ckpt_index *shared, int i, struct candidate *k)
{
    int rc = 0;
    struct ckpt_index idx = {0};
    char path[4400];
    CAIRN_CHECK(ckpt_index_read(c->local_dir, &idx));
    int j = ckpt_index_newest_ok(&idx, idx.n);
    if (j < 0) goto cleanup;
    const struct ckpt_entry *e = &idx.v[j], *f = i >= 0 ? &shared->v[i] : NULL;
    if (f && (f->epoch > e->epoch || (f->epoch == e->epoch && f->step >= e->step))) goto cleanup;
    *k = (struct candidate){.have = 1, .local = 1, .epoch = e->epoch, .step = e->step};
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
    CAIRN_CHECK(ckpt_index_read(c->dir, &idx));
    if (c->ro.mode == RESUME_EPOCH) {
        i = ckpt_index_find(&idx, c->ro.epoch, 0);
        if ((i < 0 || !idx.v[i].ok) && c->local_dir[0] && !c->skip_local) {
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
        i = ckpt_index_newest_ok(&idx, idx.n);
        CAIRN_CHECK(skip_missing(c, &idx, &i));
        if (c->local_dir[0] && !c->skip_local) CAIRN_CHECK(choose_local(c, &idx, i, k));
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
cleanup:
    ckpt_index_free(&idx);
    strbuf_free(&list);
    return rc;
}

/* Rank 0: mark a checkpoint bad in dir's index (atomically). */
static int mark_bad_in(const char *dir, int64_t epoch, int64_t step)
{
    int rc = 0;
    struct ckpt_index idx = {0};
    CAIRN_CHECK(ckpt_index_read(dir, &idx));
    int i = ckpt_index_find(&idx, epoch, step);
    if (i >= 0) {
        idx.v[i].ok = false;
        CAIRN_CHECK(ckpt_index_write_tmp(dir, &idx));
        CAIRN_CHECK(ckpt_index_commit_tmp(dir, NULL));
    }
cleanup:
    ckpt_index_free(&idx);
    return rc;
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
        rc = mark_bad_in(c->dir, k->epoch, k->step);
        loading_done(c);
    }
    return coll_agree(world(c), rc);
}

/* Load the node-local checkpoint whose manifest is at path: rank 0 reads
 * the manifest, every rank gets it, and the parts go where they belong. */
static int local_read(struct ckpt_mgr *c, const char *path, struct ckpt_meta *m, struct ckpt_io *io,
                      int *partners, char *who, size_t who_size)
{
    int rc = 0;
    struct ckpt_local_manifest man = {0};
    struct ckpt_view v;
    struct tensor **t = NULL;
    const struct layout *l = c->rt->layout;
    struct watchdog_lane *lane = watchdog_main(c->rt->watchdog);
    int rc0 = is_root(c) ? ckpt_local_manifest_read(path, &man) : 0;
    if (rc0 == 0 && is_root(c) && man.world != l->size) /* before any rank sizes anything by it */
        rc0 = cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "it is of %d ranks, this run has %d",
                            man.world, l->size);
    CAIRN_CHECK(coll_agree(world(c), rc0));
    CAIRN_CHECK_MPI(MPI_Bcast(&man, (int)sizeof man, MPI_BYTE, 0, world(c)));
    if (!is_root(c)) man.parts = calloc((size_t)man.world, sizeof *man.parts);
    CAIRN_CHECK(coll_agree(world(c), man.parts ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__,
                                                                    "out of memory")));
    CAIRN_CHECK_MPI(MPI_Bcast(man.parts, 2 * man.world, MPI_UINT64_T, 0, world(c)));
    double bytes = 0;
    for (int r = 0; r < man.world; r++) bytes += (double)man.parts[r].bytes;
    watch_io(c, lane, bytes);
    doing_all(c, lane, "loading the node-local checkpoint %s (every rank's part from its node or a partner)", path);
    CAIRN_CHECK(coll_agree(world(c), make_view(c, &v, &t)));
    CAIRN_CHECK(ckpt_local_read(&v, hosts(c), c->local_root, strrchr(path, '/') + 1, &man, io, partners,
                                who, who_size));
    watchdog_progress(lane);
    *m = man.meta;
    snprintf(io->blas_kernels, sizeof io->blas_kernels, "%s", man.blas_kernels);
    for (int b = 0; l->gid >= 0 && b < c->rt->plan->groups[l->gid].n_blobs; b++)
        if (c->rt->plan->groups[l->gid].blobs[b].persistent) c->rt->ws->v[b].defined = true;
cleanup:
    ckpt_local_manifest_free(&man);
    free(t);
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
    mrc = mark_bad_in(c->local_dir, k->epoch, k->step);
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
        char path[4400];
        CAIRN_CHECK(next_candidate(c, &k));
        if (!k.have) {
            if (is_root(c)) runlog_line(c->rt->log, "no committed checkpoint in %s: starting fresh", c->dir);
            snprintf(k.file, sizeof k.file, "-");
            return coll_agree(world(c), is_root(c) && ckpt_enabled(c) ? count_resume(c, &k) : 0);
        }
        struct ckpt_io io = {0};
        double t0 = clock_run();
        int lrc = k.skip ? CAIRN_ECORRUPT : 0, partners = 0;
        char who[1024] = "";
        if (!k.skip) {
            CAIRN_CHECK(fsx_join(path, sizeof path, c->dir, k.file));
            lrc = k.local ? local_read(c, path, m, &io, &partners, who, sizeof who) : file_read(c, path, m, &io);
        }
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
                c->keep_epoch = k.epoch;
                c->keep_step = k.step;
                c->last = *m;
                c->committed = true;
            }
            *resumed = true;
            CAIRN_CHECK(report_io(c, world(c), k.local ? "loaded (node-local)" : "loaded",
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

/* ---- saving ------------------------------------------------------------------------ */

/* Rank 0: drop checkpoints beyond `keep` from the index; their files are
 * listed in *gone for deletion once the new index is durable. */
static void retain(struct ckpt_mgr *c, struct ckpt_index *idx, struct ckpt_index *gone)
{
    int64_t keep = c->spec->keep, ok = 0;
    if (keep <= 0) return;
    for (int i = idx->n - 1; i >= 0; i--) {
        const struct ckpt_entry *e = &idx->v[i];
        bool protect = e->epoch == c->keep_epoch && e->step == c->keep_step;
        if (e->ok && ok < keep) {
            ok++;
            continue;
        }
        if (protect || ok < keep) continue;
        if (ckpt_index_put(gone, e) == 0) ckpt_index_remove(idx, i);
    }
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n > t && strcmp(s + n - t, tail) == 0;
}

/* Files of saves that a killed run left unfinished ("ckpt-*.h5.tmp", their
 * space reserves, and the lock files Open MPI's MPI-IO makes beside a file
 * opened on several nodes): never loadable, possibly large; a commit
 * clears them away. */
static void remove_unfinished(const struct ckpt_mgr *c)
{
    DIR *d = opendir(c->dir);
    struct dirent *de;
    char path[4400];
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, "ckpt-", 5) == 0 &&
            (ends_with(de->d_name, ".h5.tmp") || ends_with(de->d_name, ".h5.tmp.reserve") ||
             (strstr(de->d_name, ".h5.tmp-") && ends_with(de->d_name, ".lock"))) &&
            fsx_join(path, sizeof path, c->dir, de->d_name) == 0)
            unlink(path);
    }
    if (d) closedir(d);
}

/* Rank 0, after every rank wrote its part: make the checkpoint durable,
 * visible, and listed, in that order. */
static int commit(struct ckpt_mgr *c, const char *name, const struct ckpt_meta *m)
{
    int rc = 0;
    char path[4400], tmp[sizeof path + 8], tmp_name[300];
    struct ckpt_index idx = {0}, gone = {0};
    bool listed = false, renamed = false;
    CAIRN_CHECK(fsx_join(path, sizeof path, c->dir, name));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(tmp_name, sizeof tmp_name, "%s.tmp", name);
    fault(c, "before_rename", m->epoch);
    CAIRN_CHECK(fsx_fsync_path(tmp));
    CAIRN_CHECK(fsx_replace(c->dir, tmp_name, name, &renamed));
    fault(c, "after_rename", m->epoch);
    CAIRN_CHECK(ckpt_index_read(c->dir, &idx));
    struct ckpt_entry e = {.epoch = m->epoch, .step = m->step, .bytes = fsx_file_size(path), .ok = true};
    snprintf(e.file, sizeof e.file, "%s", name);
    CAIRN_CHECK(ckpt_index_put(&idx, &e));
    retain(c, &idx, &gone);
    CAIRN_CHECK(ckpt_index_write_tmp(c->dir, &idx));
    fault(c, "index_tmp", m->epoch);
    CAIRN_CHECK(ckpt_index_commit_tmp(c->dir, &listed)); /* listed: never delete it now */
    fault(c, "after_index", m->epoch);
    ckpt_run_ended(c); /* a commit is progress too */
    remove_unfinished(c);
    for (int i = 0; i < gone.n; i++)
        if (fsx_join(path, sizeof path, c->dir, gone.v[i].file) == 0) unlink(path);
cleanup:
    if (rc && renamed && !listed && fsx_join(path, sizeof path, c->dir, name) == 0)
        unlink(path); /* never listed, so never loaded: give its space back */
    ckpt_index_free(&idx);
    ckpt_index_free(&gone);
    return rc;
}

/* warn: log and go on; abort: the job stops (exit 3).  Committed
 * checkpoints are untouched either way. */
static int failed(struct ckpt_mgr *c, const char *what, const struct ckpt_meta *m, int rc)
{
    char at[96];
    ckpt_position(m->epoch, m->step, at, sizeof at);
    if (c->spec->abort_on_failure)
        return cairn_err_wrap(rc, "%s %s failed (checkpoint.on_failure = \"abort\"): ", what, at);
    if (is_root(c)) {
        /* c->committed: this run resumed or committed one; a run that did
         * neither found none to resume (or deleted them with --force) */
        runlog_line(c->rt->log, "warning: %s %s failed: %s; %s", what, at, cairn_errmsg(),
                    c->committed || c->local_committed ? "the last committed checkpoint stays the newest"
                                 : "no checkpoint is committed yet, so a rerun starts over");
        runlog_metric(c->rt->log, "ckpt_failed", m->epoch, m->step, "");
    }
    return 0;
}

/* Rank 0: make the directory and create the temporary (never through a
 * planted link or FIFO: see fsx_out), for MPI-IO reports a failed open
 * only as "MPI_ERR_OTHER" while errno says why. */
static int probe(struct ckpt_mgr *c, const char *tmp)
{
    struct fsx_out o;
    char path[4400];
    int rc = fsx_mkdir_p(c->dir);
    size_t n = strlen(tmp) - 4; /* less ".tmp" */
    if (rc == 0 && n < sizeof path) {
        memcpy(path, tmp, n);
        path[n] = '\0';
        rc = fsx_out_begin(&o, path, 0);
        o.made = false; /* left for every rank to write */
        fsx_out_abort(&o);
    }
    return rc;
}

/* A preemption by TERM leaves the job Slurm's KillWait before the KILL:
 * a stop whose checkpoint needs longer (ckpt_stop_seconds: a background
 * save in flight, then the stop's own) cannot finish.  Said once, by rank
 * 0. */
static void warn_kill_wait(struct ckpt_mgr *c)
{
    double kw = c->rt->kill_wait, need = ckpt_stop_seconds(c);
    if (!is_root(c) || kw <= 0 || need <= kw || c->kill_wait_said) return;
    c->kill_wait_said = true;
    runlog_line(c->rt->log, "warning: a checkpoint at a stop takes %.1f s (%s), longer than Slurm's KillWait "
                            "(%.0f s): a preemption by TERM would kill the job before its save is committed, "
                            "and the rerun would repeat the work since the last one (have Slurm "
                            "signal the job ahead, #SBATCH --signal=B:USR1@SECONDS, or ask for a "
                            "longer KillWait or GraceTime)", need,
                c->bg ? "a background save in flight, then the stop's own save to the shared directory"
                      : "its save to the shared directory", kw);
}

/* Write and commit the shared checkpoint file of m's position with s:
 * every rank returns the same result (0, or the failure to hand to
 * failed()); *seconds, the time it took. */
static int save_shared(struct ckpt_mgr *c, const struct saver *s, const struct ckpt_meta *m, double *seconds,
                       double *state)
{
    char name[256], tmp[4400];
    struct ckpt_io io = {0};
    double t0 = clock_run(), bytes = 0;
    ckpt_file_name(m->epoch, m->step, name, sizeof name);
    doing_all(c, s->lane, "saving the checkpoint of epoch %lld step %lld (collective HDF5 I/O over all ranks)",
              (long long)m->epoch, (long long)m->step);
    int rc = fsx_join(tmp, sizeof tmp - 4, c->dir, name);
    strcat(tmp, ".tmp");
    if (rc == 0 && is_root(c)) rc = probe(c, tmp);
    rc = coll_agree(s->world, rc);
    if (rc == 0) rc = file_write(c, s, tmp, m, &io, &bytes);
    if (bytes > 0) *state = bytes;
    if (rc == 0) {
        watch_io(c, s->lane, bytes); /* the commit syncs the file again on rank 0 */
        doing_all(c, s->lane, "committing the checkpoint of epoch %lld step %lld (rank 0 syncs and renames it)",
                  (long long)m->epoch, (long long)m->step);
        rc = coll_agree(s->world, is_root(c) ? commit(c, name, m) : 0);
        watchdog_progress(s->lane);
    }
    if (rc) {
        if (is_root(c)) unlink(tmp); /* never listed, so never loaded; tidy up */
        return rc;
    }
    *seconds = clock_run() - t0;
    /* committed: statistics that cannot be had are no failed save */
    if (report_io(c, s->world, "saved", "ckpt_save", name, m, &io, *seconds) && is_root(c))
        runlog_line(c->rt->log, "warning: the statistics of the checkpoint %s: %s", name, cairn_errmsg());
    return 0;
}

/* "ckpt-e000003": the node-local name of m's position (its file's, less
 * ".h5"). */
static void local_name(const struct ckpt_meta *m, char *out, size_t size)
{
    ckpt_file_name(m->epoch, m->step, out, size);
    char *dot = strrchr(out, '.');
    if (dot) *dot = '\0';
}

/* Rank 0, once every part and partner copy is durable: the manifest, then
 * DIR/local/index lists it as the one node-local checkpoint (node-local
 * storage is small: each commit prunes the one before). */
static int commit_local(struct ckpt_mgr *c, const char *name, const struct ckpt_meta *m,
                        struct ckpt_local_part *parts)
{
    int rc = 0;
    char path[4400] = "", old[4400];
    struct ckpt_index idx = {0}, gone = {0};
    bool listed = false, wrote = false;
    struct ckpt_local_manifest man = {.meta = *m, .world = c->rt->layout->size, .parts = parts};
    snprintf(man.blas_kernels, sizeof man.blas_kernels, "%s", c->rt->layout->kernels_text);
    struct ckpt_entry e = {.epoch = m->epoch, .step = m->step, .ok = true};
    snprintf(e.file, sizeof e.file, "%s", name);
    for (int r = 0; r < man.world; r++) e.bytes += (int64_t)parts[r].bytes;
    CAIRN_CHECK(ckpt_local_identity(c->rt->plan, man.identity));
    CAIRN_CHECK(fsx_mkdir_p(c->local_dir));
    CAIRN_CHECK(fsx_join(path, sizeof path, c->local_dir, name));
    CAIRN_CHECK(ckpt_local_manifest_write(path, &man));
    wrote = true;
    CAIRN_CHECK(ckpt_index_read(c->local_dir, &idx));
    for (int i = idx.n - 1; i >= 0; i--)
        if ((idx.v[i].epoch != e.epoch || idx.v[i].step != e.step) && ckpt_index_put(&gone, &idx.v[i]) == 0)
            ckpt_index_remove(&idx, i);
    CAIRN_CHECK(ckpt_index_put(&idx, &e));
    CAIRN_CHECK(ckpt_index_write_tmp(c->local_dir, &idx));
    fault(c, "local_index", m->epoch);
    CAIRN_CHECK(ckpt_index_commit_tmp(c->local_dir, &listed));
    ckpt_run_ended(c); /* a commit is progress too */
    for (int i = 0; i < gone.n; i++)
        if (fsx_join(old, sizeof old, c->local_dir, gone.v[i].file) == 0) unlink(old);
cleanup:
    if (rc && wrote && !listed) unlink(path);
    ckpt_index_free(&idx);
    ckpt_index_free(&gone);
    return rc;
}

/* Write and commit the node-local checkpoint of m's position with s:
 * every rank's part on its node, a partner copy on the next, the manifest
 * in the shared directory. */
static int save_local(struct ckpt_mgr *c, const struct saver *s, const struct ckpt_meta *m, double *seconds,
                      double *state)
{
    int rc = 0;
    char name[256];
    struct ckpt_view v;
    struct tensor **t = NULL;
    struct ckpt_io io = {0};
    struct ckpt_local_part mine = {0}, *all = NULL;
    double bytes = 0, t0 = clock_run();
    local_name(m, name, sizeof name);
    CAIRN_CHECK(state_bytes(c, s, &bytes));
    *state = bytes;
    watch_io(c, s->lane, 2 * bytes); /* each part and its partner copy */
    doing_all(c, s->lane, "saving the node-local checkpoint of epoch %lld step %lld (every rank's part "
              "and its partner copy)", (long long)m->epoch, (long long)m->step);
    CAIRN_CHECK(saver_view(c, s, &v, &t));
    CAIRN_CHECK(ckpt_local_write(&v, hosts(c), c->local_root, name, m, &mine, &io));
    if (is_root(c)) all = calloc((size_t)c->rt->layout->size, sizeof *all);
    CAIRN_CHECK(coll_agree(s->world, is_root(c) && !all ? cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__,
                                                                         "out of memory") : 0));
    CAIRN_CHECK_MPI(MPI_Gather(&mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, 0, s->world));
    doing_all(c, s->lane, "committing the node-local checkpoint of epoch %lld step %lld (rank 0 writes "
              "its manifest)", (long long)m->epoch, (long long)m->step);
    CAIRN_CHECK(coll_agree(s->world, is_root(c) ? commit_local(c, name, m, all) : 0));
    watchdog_progress(s->lane);
    ckpt_local_prune(&v, hosts(c), c->local_root, name);
    *seconds = clock_run() - t0;
    if (report_io(c, s->world, "saved (node-local)", "ckpt_local_save", name, m, &io, *seconds) && is_root(c))
        runlog_line(c->rt->log, "warning: the statistics of the node-local checkpoint %s: %s", name,
                    cairn_errmsg());
cleanup:
    free(all);
    free(t);
    return rc;
}

/* A stop's shared checkpoint supersedes every node-local one (a resume
 * takes the shared one at the same position or newer), whose parts hold
 * the nodes' storage, RAM in /dev/shm, for good once the job ends: rank 0
 * unlists them (the index first, then the manifests), then every node of
 * this run removes its tree.  Collective on s->world; best effort (a
 * node-local checkpoint left older than the shared one is never loaded,
 * and the next node-local commit on that node prunes it). */
static void drop_local(struct ckpt_mgr *c, const struct saver *s, const struct ckpt_meta *m)
{
    struct ckpt_index idx = {0}, none = {0};
    struct ckpt_view v;
    struct tensor **t = NULL;
    char path[4400], at[96];
    if (is_root(c) && ckpt_index_read(c->local_dir, &idx) == 0 && idx.n &&
        ckpt_index_write_tmp(c->local_dir, &none) == 0 && ckpt_index_commit_tmp(c->local_dir, NULL) == 0) {
        for (int i = 0; i < idx.n; i++)
            if (fsx_join(path, sizeof path, c->local_dir, idx.v[i].file) == 0) unlink(path);
        runlog_line(c->rt->log, "the checkpoint %s in %s supersedes the node-local ones: removed from the "
                                "nodes of this run (%s)", ckpt_position(m->epoch, m->step, at, sizeof at),
                    c->dir, c->local_root);
    }
    ckpt_index_free(&idx);
    if (saver_view(c, s, &v, &t) == 0) ckpt_local_prune(&v, hosts(c), c->local_root, NULL);
    free(t);
}

void ckpt_drop_local(struct ckpt_mgr *c, const struct ckpt_meta *m)
{
    if (!ckpt_enabled(c) || !c->local_dir[0] || !ckpt_committed_at(c, m)) return;
    struct ckpt_view v;
    struct tensor **t = NULL;
    if (coll_agree(world(c), make_view(c, &v, &t)) == 0) {
        struct saver s = main_saver(c, t);
        drop_local(c, &s, m);
    }
    free(t);
}

/* Save m's position with s to the tiers asked for: the node-local one
 * first (it is quick), then the shared file.  A node-local save that fails
 * does not keep a flush from being tried.  Every rank returns the same
 * result and out->failed: the next save's tiers follow it. */
static int save_with(struct ckpt_mgr *c, const struct saver *s, const struct ckpt_meta *m, int tiers,
                     struct saved *out)
{
    int rc = 0, lrc = 0;
    double t0 = clock_run(), seconds = 0;
    char why[2048] = "";
    *out = (struct saved){0};
    if (tiers & TIER_LOCAL) {
        lrc = coll_agree(s->world, save_local(c, s, m, &seconds, &out->bytes));
        if (lrc) snprintf(why, sizeof why, "%s", cairn_errmsg());
        out->committed |= lrc ? 0 : TIER_LOCAL;
        out->failed |= lrc ? TIER_LOCAL : 0;
    }
    if (tiers & TIER_SHARED) {
        rc = save_shared(c, s, m, &out->shared_seconds, &out->bytes);
        out->committed |= rc ? 0 : TIER_SHARED;
        out->failed |= rc ? TIER_SHARED : 0;
        if (rc == 0 && c->local_dir[0] && !(tiers & TIER_LOCAL)) drop_local(c, s, m); /* a stop's */
    }
    if (lrc && rc == 0) rc = cairn_err_set(lrc, __FILE__, __LINE__, "%s", why);
    out->seconds = clock_run() - t0;
    out->rate = c->rate;
    return rc;
}

/* A node-local save failed (a full /dev/shm, a dead disk): the next save
 * goes to the shared file too, so that the tier loses one epoch at most,
 * not flush_every of them.  Said once a run, by rank 0. */
static void local_fell_back(struct ckpt_mgr *c)
{
    c->local_failed = true;
    if (!is_root(c) || c->fallback_said) return;
    c->fallback_said = true;
    runlog_line(c->rt->log, "note: a node-local save failed, so the next save goes to the shared directory "
                            "%s too (so does the one after every node-local save that fails; said once)",
                c->dir);
}

/* The main thread takes in the outcome of the save of m: statistics, or
 * the failure under checkpoint.on_failure. */
static int take_outcome(struct ckpt_mgr *c, const struct ckpt_meta *m, int rc, const struct saved *out)
{
    if (out->committed & TIER_LOCAL) c->local_committed = true;
    if (out->committed & TIER_LOCAL) c->local_failed = false;
    if (out->committed & TIER_SHARED) {
        c->last = *m;
        c->committed = c->flushed = true;
    }
    if (out->bytes > 0) c->state_bytes = out->bytes;
    if (out->shared_seconds > c->longest_shared) c->longest_shared = out->shared_seconds;
    if (rc) rc = failed(c, out->failed == TIER_LOCAL ? "node-local checkpoint" : "checkpoint", m, rc);
    if (rc == 0 && out->failed & TIER_LOCAL) local_fell_back(c);
    if (rc || out->failed) return rc;
    if (out->seconds > c->longest) c->longest = out->seconds;
    warn_kill_wait(c);
    return 0;
}

/* The writer thread's work: the pending save, from the copy, over the
 * writer's communicators and a watchdog lane of its own. */
static int write_pending(void *arg, MPI_Comm world, MPI_Comm group, struct tensor **tensors)
{
    struct ckpt_mgr *c = arg;
    struct saver s = {.world = world, .group = group, .tensors = tensors,
                      .lane = watchdog_lane_open(c->rt->watchdog, "starting a background checkpoint save")};
    c->writer_lane = s.lane;
    int rc = save_with(c, &s, &c->pending, c->pending_tiers, &c->pending_out);
    c->writer_lane = NULL;
    watchdog_lane_close(&s.lane);
    return rc;
}

/* Copy this rank's persistent tensors (of a replicated one, group rank 0
 * alone writes the value: the others keep its shape), then save the copy
 * on the writer thread: the copy is the whole stall. */
static int save_background(struct ckpt_mgr *c, const struct ckpt_meta *m, int tiers)
{
    const struct layout *l = c->rt->layout;
    const struct group *g = l->gid >= 0 ? &c->rt->plan->groups[l->gid] : NULL;
    int n = g ? g->n_blobs : 0, rc = 0;
    struct tensor **src = calloc((size_t)n + 1, sizeof *src);
    enum ckpt_bg_take *take = calloc((size_t)n + 1, sizeof *take);
    if (!src || !take) rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (int b = 0; rc == 0 && b < n; b++) {
        src[b] = &c->rt->ws->v[b].t;
        bool value = g->blobs[b].type.dist != DIST_REPLICATED || l->grank == 0;
        take[b] = !g->blobs[b].persistent ? CKPT_BG_NONE : value ? CKPT_BG_DATA : CKPT_BG_SHAPE;
    }
    doing_all(c, watchdog_main(c->rt->watchdog), "copying the state for a background save of the "
              "checkpoint of epoch %lld step %lld", (long long)m->epoch, (long long)m->step);
    if (rc == 0) rc = ckpt_bg_copy(c->bg, src, take);
    free(src);
    free(take);
    rc = coll_agree(world(c), rc);
    if (rc) return failed(c, "checkpoint", m, cairn_err_wrap(rc, "copying the state to save it: "));
    c->pending = *m;
    c->pending_tiers = tiers;
    /* should no thread be had, the save is written here and now, on the
     * writer's lane with a save's allowance: the main lane waits for it.
     * So do the other ranks' (their threads may have started): a rank
     * writing inline reaches the next step only once its save is written,
     * and they wait for it here, paused, not in that step's first
     * collective, where the save's time would count as idleness. */
    struct watchdog_lane *lane = watchdog_main(c->rt->watchdog);
    watchdog_pause(lane);
    ckpt_bg_start(c->bg, write_pending, c, !fault_nothread(&c->rt->fault, l->rank, "writer", m->epoch));
    rc = coll_barrier(world(c));
    watchdog_progress(lane);
    return rc;
}

/* A resumed run whose nodes cannot hold the node-local tier (a rerun on
 * fewer nodes, each with more ranks' parts) goes on with shared saves
 * only: refusing it would fail the job for good (a rerun cannot give a
 * node more room), and its progress is safe in the shared file. */
static void local_off(struct ckpt_mgr *c)
{
    c->local_off = true;
    if (is_root(c))
        runlog_line(c->rt->log, "warning: %s; this run resumed a checkpoint, so it goes on without "
                                "node-local saves: every save goes to the shared directory %s",
                    cairn_errmsg(), c->dir);
}

int ckpt_ready(struct ckpt_mgr *c, bool resumed)
{
    if (!ckpt_enabled(c)) return 0;
    struct ckpt_view v;
    struct tensor **t = NULL;
    char setting[4200];
    snprintf(setting, sizeof setting, "checkpoint.local = \"%s\"", c->spec->local ? c->spec->local : "");
    int rc = coll_agree(world(c), make_view(c, &v, &t));
    if (rc == 0) {
        struct saver s = main_saver(c, t);
        rc = state_bytes(c, &s, &c->state_bytes); /* what a stop writes, before a save is measured */
    }
    if (rc == 0 && c->local_dir[0]) {
        bool short_of_room = false;
        rc = ckpt_local_check_room(&v, hosts(c), c->local_root, setting, &short_of_room);
        if (rc && short_of_room && resumed) {
            local_off(c);
            rc = 0;
        }
    }
    free(t);
    return rc;
}

int ckpt_wait(struct ckpt_mgr *c)
{
    if (!c || !ckpt_bg_busy(c->bg)) return 0;
    double waited = 0;
    struct watchdog_lane *lane = watchdog_main(c->rt->watchdog);
    watchdog_pause(lane); /* the writer's lane is watched meanwhile */
    int rc = ckpt_bg_join(c->bg, &waited);
    watchdog_progress(lane);
    if (waited > 0 && is_root(c)) {
        char at[96], fields[96];
        runlog_line(c->rt->log, "waited %.3f s for the background save of the checkpoint %s", waited,
                    ckpt_position(c->pending.epoch, c->pending.step, at, sizeof at));
        snprintf(fields, sizeof fields, "\"seconds\":%.6f", waited);
        runlog_metric(c->rt->log, "ckpt_wait", c->pending.epoch, c->pending.step, fields);
    }
    return take_outcome(c, &c->pending, rc, &c->pending_out);
}

bool ckpt_writing(const struct ckpt_mgr *c) { return c && ckpt_bg_running(c->bg); }
bool ckpt_async(const struct ckpt_mgr *c) { return c && c->bg; }

/* Write and commit the checkpoint of m's position on this thread. */
static int save_now(struct ckpt_mgr *c, const struct ckpt_meta *m, int tiers)
{
    struct saved out = {0};
    struct tensor **t = NULL;
    struct ckpt_view v;
    doing_all(c, watchdog_main(c->rt->watchdog), "saving the checkpoint of epoch %lld step %lld "
              "(collective HDF5 I/O over all ranks)", (long long)m->epoch, (long long)m->step);
    int rc = coll_agree(world(c), make_view(c, &v, &t));
    if (rc == 0) {
        struct saver s = main_saver(c, t);
        rc = save_with(c, &s, m, tiers, &out);
    }
    free(t);
    return take_outcome(c, m, rc, &out);
}

/* With a node-local tier a save goes to the nodes, and also to the
 * shared directory when this run has not committed one there yet (fresh
 * or resumed from either tier: its first save also measures what a stop
 * will cost), after a node-local save failed, when flush_every epochs
 * have passed since, and whenever the job stops (now: there alone, the
 * rerun may have other nodes). */
static int save_tiers(const struct ckpt_mgr *c, const struct ckpt_meta *m, bool now)
{
    if (!c->local_dir[0] || c->local_off || now) return TIER_SHARED;
    bool flush = !c->flushed || c->local_failed || m->epoch - c->last.epoch >= c->spec->flush_every;
    return flush ? TIER_LOCAL | TIER_SHARED : TIER_LOCAL;
}

int ckpt_save(struct ckpt_mgr *c, const struct ckpt_meta *m, bool now)
{
    if (!ckpt_enabled(c)) return 0;
    double t0 = clock_run();
    bool background = c->bg && !now;
    /* with a node-local tier, saves go there, and to the shared directory
     * every flush_every epochs and whenever the job stops (now) */
    int rc = ckpt_wait(c); /* its outcome first: the flush below follows the last shared commit */
    double t1 = clock_run();
    if (rc == 0) rc = background ? save_background(c, m, save_tiers(c, m, now)) : save_now(c, m, save_tiers(c, m, now));
    if (clock_run() - t1 > c->longest_stall) c->longest_stall = clock_run() - t1;
    if (is_root(c)) { /* every rank leaves the save together (it ends in an agreement) */
        char fields[96];
        snprintf(fields, sizeof fields, "\"seconds\":%.6f,\"background\":%s", clock_run() - t0,
                 background ? "true" : "false");
        runlog_metric(c->rt->log, "ckpt_stall", m->epoch, m->step, fields);
    }
    return rc;
}

/* ---- upload -------------------------------------------------------------------------- */

static int upload(struct ckpt_mgr *c, struct ckpt_entry *e)
{
    int rc = 0;
    char src[4400], dst[4400];
    struct ckpt_index idx = {0}, up = {0};
    const char *to = c->spec->upload_to;
    CAIRN_CHECK(ckpt_index_read(c->dir, &idx));
    int i = ckpt_index_newest_ok(&idx, idx.n);
    if (i < 0) CAIRN_FAIL(CAIRN_ENOCKPT, "no committed checkpoint in %s to upload", c->dir);
    *e = idx.v[i];
    CAIRN_CHECK(fsx_mkdir_p(to));
    CAIRN_CHECK(fsx_join(src, sizeof src, c->dir, e->file));
    CAIRN_CHECK(fsx_join(dst, sizeof dst, to, e->file));
    CAIRN_CHECK(fsx_copy_atomic(src, dst));
    CAIRN_CHECK(ckpt_index_read(to, &up));
    CAIRN_CHECK(ckpt_index_put(&up, e));
    CAIRN_CHECK(ckpt_index_write_tmp(to, &up));
    CAIRN_CHECK(ckpt_index_commit_tmp(to, NULL));
cleanup:
    ckpt_index_free(&idx);
    ckpt_index_free(&up);
    return rc;
}

int ckpt_upload(struct ckpt_mgr *c)
{
    if (!c->spec->upload_to || !ckpt_enabled(c)) return 0;
    struct ckpt_entry e = {0};
    double t0 = clock_run();
    int rc = coll_agree(world(c), is_root(c) ? upload(c, &e) : 0);
    struct ckpt_meta m = {.epoch = e.epoch, .step = e.step};
    if (rc) return failed(c, "upload", &m, rc);
    if (is_root(c)) {
        char hb[32];
        runlog_line(c->rt->log, "uploaded %s (epoch %lld, %s) to %s in %.3f s", e.file,
                    (long long)e.epoch, human((double)e.bytes, hb, sizeof hb), c->spec->upload_to,
                    clock_run() - t0);
    }
    return 0;
}
