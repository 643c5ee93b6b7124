/* The checkpoint manager; see include/cairn/ckpt.h. */
#include "ckpt_priv.h"

#include "cairn/blas_kernel.h"
#include "cairn/ckpt_bg.h"
#include "cairn/ckpt_file.h"
#include "cairn/ckpt_index.h"
#include "cairn/ckpt_local.h"
#include "cairn/ckpt_tier.h"
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


bool ckpt_enabled(const struct ckpt_mgr *c) { return c && c->spec->every > 0; }
int64_t ckpt_every(const struct ckpt_mgr *c) { return c->spec->every; }
double ckpt_longest_save(const struct ckpt_mgr *c) { return c->longest; }
double ckpt_longest_stall(const struct ckpt_mgr *c) { return c->longest_stall; }

/* A stop writes the shared file alone: with a node-local tier its time is
 * not that of the (quick) node-local saves.  Before one is measured, the
 * state's bytes at this run's last shared rate, or a slow file system's. */
static double stop_save_seconds(const struct ckpt_mgr *c)
{
    double shared = c->longest_shared;
    if (!c->local.root[0] && c->longest > shared) shared = c->longest;
    if (shared > 0) return shared;
    return c->state_bytes / (c->rate > 0 ? c->rate : CKPT_SLOW_RATE);
}
double ckpt_stop_seconds(const struct ckpt_mgr *c)
{
    return (c->bg ? c->longest : 0) + stop_save_seconds(c);
}
bool ckpt_local_tier(const struct ckpt_mgr *c) { return c && c->local.root[0] && !c->local_off; }
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
int mgr_view(const struct ckpt_mgr *c, struct ckpt_view *v, struct tensor ***tensors)
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
void mgr_watch_io(const struct ckpt_mgr *c, struct watchdog_lane *lane, double bytes)
{
    double allow = bytes / CKPT_SLOW_RATE;
    if (c->rate > 0 && 3 * bytes / c->rate > allow) allow = 3 * bytes / c->rate;
    watchdog_progress(lane);
    watchdog_allow(lane, allow);
}

/* What every rank does now, for the watchdog: one piece of the save or the
 * load, which all ranks reach. */
void mgr_doing(const struct ckpt_mgr *c, struct watchdog_lane *lane, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void mgr_doing(const struct ckpt_mgr *c, struct watchdog_lane *lane, const char *fmt, ...)
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
    int rc = coll_agree(s->world, mgr_view(c, v, t));
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

/* A load defines every persistent blob of this rank's group. */
void mgr_loaded(const struct ckpt_mgr *c)
{
    const struct layout *l = c->rt->layout;
    for (int b = 0; l->gid >= 0 && b < c->rt->plan->groups[l->gid].n_blobs; b++)
        if (c->rt->plan->groups[l->gid].blobs[b].persistent) c->rt->ws->v[b].defined = true;
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
int mgr_report_io(struct ckpt_mgr *c, MPI_Comm world, const char *what, const char *metric,
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

/* ---- saving ------------------------------------------------------------------------ */

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

/* Write m's position with s to tier t and commit it: every rank returns
 * the same result (0, or the failure to hand to failed()); *seconds, the
 * time it took; *state, the state's bytes.  The watchdog allows each
 * piece a slow file system's time: the node-local tier writes each part
 * twice (its partner copy). */
static int save_to(struct ckpt_mgr *c, const struct saver *s, struct ckpt_tier *t, const struct ckpt_meta *m,
                   double *seconds, double *state)
{
    bool local = t->ops == &ckpt_tier_local;
    const char *kind = local ? "node-local checkpoint" : "checkpoint";
    char name[256];
    struct ckpt_view v;
    struct tensor **tv = NULL;
    struct ckpt_io io = {0};
    double bytes = 0, t0 = clock_run();
    int rc = 0;
    ckpt_file_name(m->epoch, m->step, name, sizeof name);
    if (local) *strrchr(name, '.') = '\0'; /* its directory of parts */
    CAIRN_CHECK(state_bytes(c, s, &bytes));
    *state = bytes;
    mgr_watch_io(c, s->lane, local ? 2 * bytes : bytes);
    mgr_doing(c, s->lane, "saving the %s of epoch %lld step %lld (%s)", kind, (long long)m->epoch,
              (long long)m->step, local ? "every rank's part and its partner copy" : "collective HDF5 I/O over all ranks");
    CAIRN_CHECK(saver_view(c, s, &v, &tv));
    rc = t->ops->write(t, &v, m, &io);
    if (t->unreserved && !c->unreserved_said) { /* rank 0's finding, which explains a failed write */
        c->unreserved_said = true;
        runlog_line(c->rt->log, "note: the file system of %s cannot reserve space ahead (no fallocate): "
                                "checkpoints are written without a reservation, so a disk that fills "
                                "fails a save after its writes, not before them (checkpoint.on_failure)",
                    c->dir);
    }
    CAIRN_CHECK(rc);
    if (!local && clock_run() > t0) c->rate = bytes / (clock_run() - t0);
    if (!local) mgr_watch_io(c, s->lane, bytes); /* the commit syncs the file again on rank 0 */
    mgr_doing(c, s->lane, "committing the %s of epoch %lld step %lld (rank 0 %s)", kind, (long long)m->epoch,
              (long long)m->step, local ? "writes its manifest" : "syncs and renames it");
    CAIRN_CHECK(coll_agree(s->world, is_root(c) ? t->ops->commit(t, &v, m) : 0));
    if (is_root(c)) ckpt_run_ended(c); /* a commit is progress too */
    watchdog_progress(s->lane);
    t->ops->prune(t, &v, m);
    *seconds = clock_run() - t0;
    /* committed: statistics that cannot be had are no failed save */
    if (mgr_report_io(c, s->world, local ? "saved (node-local)" : "saved", local ? "ckpt_local_save" : "ckpt_save",
                  name, m, &io, *seconds) && is_root(c))
        runlog_line(c->rt->log, "warning: the statistics of the %s %s: %s", kind, name, cairn_errmsg());
cleanup:
    free(tv);
    return rc;
}

/* A stop's shared checkpoint supersedes every node-local one (a resume
 * takes the shared one at the same position or newer), whose parts hold
 * the nodes' storage, RAM in /dev/shm, for good once the job ends: the
 * node-local tier drops them all.  Collective on s->world; best effort (a
 * node-local checkpoint left older than the shared one is never loaded,
 * and the next node-local commit on that node prunes it). */
static void drop_local(struct ckpt_mgr *c, const struct saver *s, const struct ckpt_meta *m)
{
    struct ckpt_view v;
    struct tensor **t = NULL;
    char at[96];
    if (saver_view(c, s, &v, &t) == 0 && c->local.ops->prune(&c->local, &v, NULL) > 0 && is_root(c))
        runlog_line(c->rt->log, "the checkpoint %s in %s supersedes the node-local ones: removed from the "
                                "nodes of this run (%s)", ckpt_position(m->epoch, m->step, at, sizeof at),
                    c->dir, c->local.root);
    free(t);
}

void ckpt_drop_local(struct ckpt_mgr *c, const struct ckpt_meta *m)
{
    if (!ckpt_enabled(c) || !c->local.root[0] || !ckpt_committed_at(c, m)) return;
    struct ckpt_view v;
    struct tensor **t = NULL;
    if (coll_agree(world(c), mgr_view(c, &v, &t)) == 0) {
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
        lrc = coll_agree(s->world, save_to(c, s, &c->local, m, &seconds, &out->bytes));
        if (lrc) snprintf(why, sizeof why, "%s", cairn_errmsg());
        out->committed |= lrc ? 0 : TIER_LOCAL;
        out->failed |= lrc ? TIER_LOCAL : 0;
    }
    if (tiers & TIER_SHARED) {
        rc = save_to(c, s, &c->shared, m, &out->shared_seconds, &out->bytes);
        out->committed |= rc ? 0 : TIER_SHARED;
        out->failed |= rc ? TIER_SHARED : 0;
        if (rc == 0 && c->local.root[0] && !(tiers & TIER_LOCAL)) drop_local(c, s, m); /* a stop's */
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
    mgr_doing(c, watchdog_main(c->rt->watchdog), "copying the state for a background save of the "
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
    int rc = coll_agree(world(c), mgr_view(c, &v, &t));
    if (rc == 0) {
        struct saver s = main_saver(c, t);
        rc = state_bytes(c, &s, &c->state_bytes); /* what a stop writes, before a save is measured */
    }
    if (rc == 0 && c->local.root[0]) {
        bool short_of_room = false;
        rc = ckpt_local_check_room(&v, hosts(c), c->local.root, setting, &short_of_room);
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
    mgr_doing(c, watchdog_main(c->rt->watchdog), "saving the checkpoint of epoch %lld step %lld "
              "(collective HDF5 I/O over all ranks)", (long long)m->epoch, (long long)m->step);
    int rc = coll_agree(world(c), mgr_view(c, &v, &t));
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
    if (!c->local.root[0] || c->local_off || now) return TIER_SHARED;
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

static int put_entry(struct ckpt_index *idx, struct ckpt_index *gone, void *arg)
{
    (void)gone;
    return ckpt_index_put(idx, arg);
}

static int upload(struct ckpt_mgr *c, struct ckpt_entry *e)
{
    int rc = 0;
    char src[4400], dst[4400];
    struct ckpt_index idx = {0};
    const char *to = c->spec->upload_to;
    CAIRN_CHECK(ckpt_index_read(c->dir, &idx));
    int i = ckpt_index_newest_ok(&idx, idx.n);
    if (i < 0) CAIRN_FAIL(CAIRN_ENOCKPT, "no committed checkpoint in %s to upload", c->dir);
    *e = idx.v[i];
    CAIRN_CHECK(fsx_mkdir_p(to));
    CAIRN_CHECK(fsx_join(src, sizeof src, c->dir, e->file));
    CAIRN_CHECK(fsx_join(dst, sizeof dst, to, e->file));
    CAIRN_CHECK(fsx_copy_atomic(src, dst));
    CAIRN_CHECK(ckpt_index_update(to, put_entry, e, NULL, NULL));
cleanup:
    ckpt_index_free(&idx);
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

