/* The job runner; see include/cairn/runner.h. */
#include "cairn/runner.h"

#include "cairn/blas_kernel.h"
#include "cairn/ckpt.h"
#include "cairn/ckpt_index.h"
#include "cairn/coll.h"
#include "cairn/clock.h"
#include "cairn/error.h"
#include "cairn/exec.h"
#include "cairn/ext.h"
#include "cairn/fsx.h"
#include "cairn/guard.h"
#include "cairn/layout.h"
#include "cairn/placement.h"
#include "cairn/plan.h"
#include "cairn/preempt.h"
#include "cairn/reader.h"
#include "cairn/runlog.h"
#include "cairn/runtime.h"
#include "cairn/slurm.h"
#include "cairn/strbuf.h"
#include "cairn/version.h"
#include "cairn/watchdog.h"
#include "cairn/workspace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool is_root(const struct runtime *rt) { return rt->layout->rank == 0; }
static int world_rank(MPI_Comm world)
{
    int me = 0;
    MPI_Comm_rank(world, &me);
    return me;
}

/* ---- set-up ------------------------------------------------------------- */

/* Rank 0 makes the run directory; everyone learns whether that worked. */
static int make_run_dir(MPI_Comm world, const char *dir)
{
    int me = 0, rc = 0;
    MPI_Comm_rank(world, &me);
    if (me == 0) rc = fsx_mkdir_p(dir);
    return coll_agree(world, rc);
}

/* RUN_DIR/exit_status: cairn's own exit code, for a batch script whose
 * launcher reports another (mpirun signalled by Slurm returns 1 after its
 * ranks exited 75), and for a failure the reason, as runtime_last_words
 * leaves it: "2 input: ..." or "3 fatal: ...".  Best effort: the run's
 * outcome does not depend on it. */
static void write_exit_status(const char *run_dir, int rc)
{
    char path[4200], text[4200];
    int code = cairn_exit_code(rc);
    const char *kind = runtime_exit_kind(rc);
    int n = code == 0 || code == CAIRN_EXIT_PREEMPTED
                ? snprintf(text, sizeof text, "%d\n", code)
                : snprintf(text, sizeof text, "%d %s: %.4000s\n", code, kind, cairn_errmsg());
    if (n < 0) return;
    if ((size_t)n >= sizeof text) n = (int)sizeof text - 1;
    for (int i = 0; i < n; i++)
        if (text[i] == '\n') text[i] = ' ';
    text[n - 1] = '\n'; /* one line */
    /* O_EXCL: a rank's last words (runtime_last_words) stand */
    if (fsx_join(path, sizeof path, run_dir, "exit_status") == 0 && fsx_mkdir_p(run_dir) == 0)
        fsx_write_new(path, text, (size_t)n);
}

/* Rank 0, once the run has started: an earlier run's exit_status goes, so
 * that this run's last words (runtime_last_words) or its end stand alone.
 * A run refused before its log is open leaves the run directory as it was. */
static void forget_exit_status(const char *run_dir)
{
    char path[4200];
    struct stat st;
    if (fsx_join(path, sizeof path, run_dir, "exit_status") == 0 && lstat(path, &st) == 0 &&
        S_ISREG(st.st_mode))
        unlink(path); /* anything else there is not cairn's to remove; the new one then cannot be written */
}

static void log_start(struct runtime *rt)
{
    const struct plan *p = rt->plan;
    struct strbuf b = {0};
    for (int i = 0; i < p->n_groups; i++) {
        const struct group *g = &p->groups[i];
        strbuf_addf(&b, "%s%s=%d", i ? ", " : "", g->name, g->first);
        if (g->nranks > 1) strbuf_addf(&b, "-%d", g->first + g->nranks - 1);
    }
    runlog_line(rt->log, "cairn %s: job %s on %d rank%s (groups %s), run dir %s", CAIRN_VERSION,
                p->job->name, p->nranks, p->nranks == 1 ? "" : "s", strbuf_str(&b), rt->run_dir);
    int spare = p->nranks - p->used_ranks;
    if (spare == 1)
        runlog_line(rt->log, "warning: %d ranks given but the groups use %d; rank %d idles "
                             "until the end",
                    p->nranks, p->used_ranks, p->used_ranks);
    else if (spare > 1)
        runlog_line(rt->log, "warning: %d ranks given but the groups use %d; ranks %d-%d idle "
                             "until the end",
                    p->nranks, p->used_ranks, p->used_ranks, p->nranks - 1);
    strbuf_free(&b);
}

/* "placement: node1: ranks 0,3 (stage0, ps); node2: rank 1 (stage1)" */
static void log_placement(struct runtime *rt)
{
    struct strbuf b = {0};
    if (placement_text(rt->plan, (const char(*)[PLACEMENT_HOST_MAX])rt->layout->hosts, "; ", &b) == 0)
        runlog_line(rt->log, "placement: %s", strbuf_str(&b));
    strbuf_free(&b);
}

/* The ranks' BLAS kernels when they are not all the same (blas_kernel.h):
 * which replica or stage computes a micro-batch then changes its bits. */
static void log_kernels(struct runtime *rt)
{
    const struct layout *l = rt->layout;
    struct strbuf b = {0};
    if (blas_kernels_distinct(l->kernels, l->size) > 1 &&
        blas_kernels_text(l->kernels, l->size, (const char(*)[PLACEMENT_HOST_MAX])l->hosts, &b) == 0)
        runlog_line(rt->log, "warning: the ranks run different BLAS kernels: %s. The results are correct, "
                             "but a micro-batch's bits depend on the kernel that computes it, so this run "
                             "is bitwise equal only to runs that give the same work to the same kernels; "
                             "pin one kernel in every rank's environment (OPENBLAS_CORETYPE=%s, say)",
                    strbuf_str(&b), l->kernels[0].core);
    strbuf_free(&b);
}

/* The allocation's nodes, and the ones this run uses when they are fewer
 * (a rerun in place after a node was lost): "node[1-3]" or
 * "node1,node2 of node[1-3]". */
static void run_nodes(const struct runtime *rt, struct strbuf *b)
{
    const struct layout *l = rt->layout;
    const char *all = *rt->slurm.nodes ? rt->slurm.nodes : "?";
    int used = 0, cap = rt->slurm.n_nodes;
    const char **seen = cap > 0 ? calloc((size_t)cap, sizeof *seen) : NULL;
    for (int r = 0; seen && r < l->size && used < cap; r++) { /* ranks x nodes compares */
        int q = 0;
        while (q < used && strcmp(seen[q], l->hosts[r]) != 0) q++;
        if (q == used) seen[used++] = l->hosts[r];
    }
    if (seen && used < cap) {
        for (int q = 0; q < used; q++) strbuf_addf(b, "%s%s", q ? "," : "", seen[q]);
        strbuf_addf(b, " of %s", all);
    } else {
        strbuf_add(b, all); /* every node of the allocation: Slurm's short form */
    }
    free(seen);
}

static void log_slurm(struct runtime *rt)
{
    const struct slurm_job *s = &rt->slurm;
    struct strbuf nodes = {0};
    char end[64] = "no end time";
    if (rt->end_time > 0) {
        time_t t = (time_t)rt->end_time;
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(end, sizeof end, "ends %Y-%m-%dT%H:%M:%S", &tm);
    }
    run_nodes(rt, &nodes);
    rt->kill_wait = slurm_kill_wait(s);
    runlog_line(rt->log, "slurm: job %s, restart %d, nodes %s, launched by %s, %s", s->id,
                s->restarts, strbuf_str(&nodes), s->launcher, end);
    strbuf_free(&nodes);
}

/* Check every op's outside resources before anything runs, so a missing
 * data file is a clean input error on all ranks rather than an abort. */
static int prepare_list(struct runtime *rt, const struct task *t, const struct steplist *l);

static int prepare_op(struct runtime *rt, const struct task *t, const struct op_node *op)
{
    const struct layout *lay = rt->layout;
    struct exec_ctx x = {.rt = rt, .task = t, .comm = lay->lanes[0], .rank = lay->grank,
                         .size = lay->gsize};
    struct op_call call = {.ctx = &x, .op = op};
    int rc = op->def->prepare(&call);
    if (rc) cairn_err_wrap(rc, "%s:%d: op '%s': ", op->file, op->line, op->def->name);
    return rc;
}

static int prepare_list(struct runtime *rt, const struct task *t, const struct steplist *l)
{
    int rc = 0;
    for (int i = 0; i < l->n && rc == 0; i++) {
        const struct step *st = &l->v[i];
        if (st->kind == STEP_OP && st->op.def->prepare) rc = prepare_op(rt, t, &st->op);
        if (st->kind == STEP_LOOP || st->kind == STEP_REPORT) rc = prepare_list(rt, t, &st->body);
        for (int b = 0; st->kind == STEP_PARALLEL && b < st->n_branches && rc == 0; b++)
            rc = prepare_list(rt, t, &st->branches[b]);
    }
    return rc;
}

static int prepare_ops(struct runtime *rt)
{
    int rc = 0;
    for (int ph = 0; ph < N_PHASES && rc == 0; ph++) {
        const struct phase *phase = &rt->plan->phases[ph];
        for (int i = 0; i < phase->n && rc == 0; i++)
            if (phase->v[i].group_id == rt->layout->gid)
                rc = prepare_list(rt, &phase->v[i], &phase->v[i].steps);
    }
    return coll_agree(rt->layout->world, rc);
}

/* ---- phases --------------------------------------------------------------- */

static void run_tasks(struct runtime *rt, enum phase_id ph)
{
    const struct phase *phase = &rt->plan->phases[ph];
    rt->phase = ph;
    for (int i = 0; i < phase->n; i++)
        if (phase->v[i].group_id == rt->layout->gid) exec_task(rt, &phase->v[i]);
}

/* Run a once-only phase on every group, then wait for all ranks so the next
 * phase sees this one finished everywhere; rank 0 logs the duration. */
static int run_phase(struct runtime *rt, enum phase_id ph)
{
    int rc = 0;
    if (rt->plan->phases[ph].n == 0) return 0;
    double t0 = clock_run();
    watchdog_progress(watchdog_main(rt->watchdog));
    run_tasks(rt, ph);
    guard_all(rt, "waiting for every group to finish the phase");
    CAIRN_CHECK(coll_barrier(rt->layout->world));
    double dt = clock_run() - t0;
    if (is_root(rt)) {
        char fields[128];
        runlog_line(rt->log, "%s done in %.3f s", phase_name(ph), dt);
        snprintf(fields, sizeof fields, "\"phase\":\"%s\",\"seconds\":%.6f", phase_name(ph), dt);
        runlog_metric(rt->log, "phase", rt->epoch, 0, fields);
    }
cleanup:
    return rc;
}

/* Which stop blobs hold on some rank, as flags[] (every rank gets all). */
static int stop_flags(struct runtime *rt, int *flags)
{
    int rc = 0;
    const struct plan *p = rt->plan;
    for (int i = 0; i < p->n_stops; i++) {
        flags[i] = 0;
        if (p->stops[i].group == rt->layout->gid)
            flags[i] = tensor_any(&rt->ws->v[p->stops[i].blob].t);
    }
    if (p->n_stops) guard_all(rt, "agreeing on the stop conditions");
    if (p->n_stops)
        CAIRN_CHECK(coll_allreduce(MPI_IN_PLACE, flags, p->n_stops, MPI_INT, MPI_MAX,
                                   rt->layout->world));
cleanup:
    return rc;
}

/* After epoch e: does a stop blob hold (*by_blob), or is max_epochs reached? */
static int should_stop(struct runtime *rt, int64_t e, bool *by_blob, bool *by_max)
{
    int rc = 0;
    const struct plan *p = rt->plan;
    int *flags = calloc((size_t)p->n_stops + 1, sizeof *flags);
    CAIRN_CHECK_ALLOC(flags);
    CAIRN_CHECK(stop_flags(rt, flags));
    *by_blob = false;
    for (int i = 0; i < p->n_stops; i++) {
        if (!flags[i]) continue;
        const struct group *g = &p->groups[p->stops[i].group];
        if (is_root(rt))
            runlog_line(rt->log, "stopping after epoch %lld: %s/%s is true", (long long)e,
                        g->name, g->blobs[p->stops[i].blob].name);
        *by_blob = true;
    }
    *by_max = p->job->stop.max_epochs && e >= p->job->stop.max_epochs;
    if (!*by_blob && *by_max && is_root(rt))
        runlog_line(rt->log, "stopping after epoch %lld: max_epochs reached", (long long)e);
cleanup:
    free(flags);
    return rc;
}

/* Rank 0 under Slurm: seconds until the job's end time (CAIRN_FAULT may
 * move the clock), or -1 without one. */
static double time_left(const struct runtime *rt)
{
    if (rt->end_time <= 0) return -1;
    double now = (double)time(NULL) + fault_clock(&rt->fault, rt->layout->rank, rt->epoch, rt->step);
    return rt->end_time - now > 0 ? rt->end_time - now : 0;
}

/* Rank 0 logs the epoch, with what the extensions add (throughput, say). */
static int log_epoch(struct runtime *rt, int64_t e, double dt)
{
    int rc = 0;
    const struct plan *p = rt->plan;
    struct strbuf fields = {0}, text = {0};
    char eta[160] = "";
    strbuf_addf(&fields, "\"seconds\":%.6f", dt);
    for (int i = 0; i < p->n_exts; i++)
        if (p->exts[i].def->epoch_stats)
            CAIRN_CHECK(p->exts[i].def->epoch_stats(rt->ext_state[i], rt->steps_seconds, &fields, &text));
    CAIRN_CHECK(strbuf_finish(&fields));
    CAIRN_CHECK(strbuf_finish(&text));
    if (is_root(rt)) {
        progress_epoch_end(&rt->progress, rt->log, e, clock_run(), time_left(rt), eta, sizeof eta);
        runlog_line(rt->log, "epoch %lld done in %.3f s%s%s", (long long)e, dt, strbuf_str(&text), eta);
        runlog_metric(rt->log, "epoch", e, rt->step, strbuf_str(&fields));
    }
cleanup:
    strbuf_free(&fields);
    strbuf_free(&text);
    return rc;
}

/* Collective: every extension settles its messages in flight. */
static int quiesce_exts(struct runtime *rt)
{
    int rc = 0;
    guard_all(rt, "quiescing the extensions");
    for (int i = 0; i < rt->plan->n_exts; i++)
        if (rt->plan->exts[i].def->quiesce) CAIRN_CHECK(rt->plan->exts[i].def->quiesce(rt->ext_state[i]));
cleanup:
    return rc;
}

/* A checkpoint of a settled state: no extension has a message in flight.
 * now: committed before the return, also with checkpoint.async. */
static int save_settled(struct runtime *rt, const struct ckpt_meta *m, bool now)
{
    int rc = 0;
    CAIRN_CHECK(quiesce_exts(rt));
    CAIRN_CHECK(ckpt_save(rt->ckpt, m, now));
cleanup:
    return rc;
}

/* ---- preemption ------------------------------------------------------------- */

/* Stop this far before the job's end: what the stop's checkpoint needs
 * (ckpt_stop_seconds: a background save in flight finishes first) and the
 * longest step so far, with room to spare, unless slurm.time_margin says
 * otherwise. */
static double time_margin(const struct runtime *rt)
{
    double m = rt->plan->job->slurm.time_margin;
    if (m > 0) return m;
    return 1.25 * (ckpt_stop_seconds(rt->ckpt) + rt->longest_step) + 5;
}

/* Rank 0: the Slurm job's end time, asked again at most once a minute
 * (someone may change the time limit; slurmctld should not hear from
 * every epoch of every job), and after a suspension (must_stop). */
static void refresh_end_time(struct runtime *rt)
{
    if (!rt->slurm.present || (rt->end_asked > 0 && clock_now() - rt->end_asked < 60)) return;
    rt->end_time = slurm_end_time(&rt->slurm);
    rt->end_asked = clock_now();
    rt->end_stops = clock_stops();
}

/* At a step boundary: has any rank received a preemption signal, or is the
 * job's end near?  One small collective; every rank gets the same answer
 * in *why (0: carry on; a signal number; -1: the time limit).  It also
 * tells whether every rank's background save has finished: its outcome
 * (a failure under checkpoint.on_failure) is then taken here. */
static int must_stop(struct runtime *rt, int *why)
{
    int rc = 0, v[3] = {preempt_signal(), 0, ckpt_writing(rt->ckpt)};
    *why = 0;
    if (!ckpt_enabled(rt->ckpt)) return 0; /* nothing to save; see setup() */
    if (is_root(rt) && rt->end_asked > 0 && clock_stops() != rt->end_stops) {
        double before = rt->end_time;
        rt->end_asked = 0; /* the job was suspended: Slurm has moved its end since */
        refresh_end_time(rt);
        /* later only: Slurm also sends a SIGCONT just before the TERM of
         * scancel, when the job's end is already set to the cancel time
         * (which is no time limit) */
        if (before > rt->end_time) rt->end_time = before;
    }
    double t = (double)time(NULL) + fault_clock(&rt->fault, rt->layout->rank, rt->epoch, rt->step);
    if (rt->end_time > 0 && rt->end_time - t < time_margin(rt)) v[1] = 1;
    guard_all(rt, "agreeing whether to stop here (a signal, the time limit)");
    CAIRN_CHECK(coll_allreduce(MPI_IN_PLACE, v, 3, MPI_INT, MPI_MAX, rt->layout->world));
    if (!v[2]) CAIRN_CHECK(ckpt_wait(rt->ckpt)); /* over on every rank: no waiting */
    *why = v[0] ? v[0] : v[1] ? -1 : 0;
cleanup:
    return rc;
}

/* Rank 0, after the checkpoint (saved or not): ask Slurm to run the job
 * again, unless told not to or Slurm is already ending or requeueing it. */
static void requeue(struct runtime *rt, const struct run_opts *o, bool saved)
{
    const struct slurm_job *s = &rt->slurm;
    char state[32];
    bool requeueable;
    if (!s->present) return;
    if (o->no_requeue || !rt->plan->job->slurm.requeue) {
        runlog_line(rt->log, "not requeueing slurm job %s (%s)", s->id,
                    o->no_requeue ? "--no-requeue" : "slurm.requeue = false");
        return;
    }
    slurm_job_state(s, state, sizeof state, &requeueable);
    if (strcmp(state, "RUNNING") != 0)
        runlog_line(rt->log, "not requeueing slurm job %s: it is %s already", s->id,
                    *state ? state : "unknown to Slurm");
    else if (!requeueable)
        runlog_line(rt->log, "slurm job %s is not requeueable (submit it with --requeue); rerun "
                             "it to continue", s->id);
    else {
        /* said first: the requeue's TERM may end this rank before it returns */
        runlog_line(rt->log, "requeueing slurm job %s: it resumes from %s checkpoint", s->id,
                    saved ? "this" : "the newest committed");
        if (slurm_requeue(s)) runlog_line(rt->log, "warning: the requeue failed: %s", cairn_errmsg());
    }
}

/* Save where the job is (unless that was just tried), settle the
 * parameter traffic, requeue, and stop with CAIRN_EPREEMPTED.  A save that
 * failed with on_failure = "warn" is said so: the rerun then continues
 * from the newest committed checkpoint, older than this position. */
static int preempted(struct runtime *rt, const struct run_opts *o, const struct ckpt_meta *m,
                     int why, bool tried)
{
    int rc = 0;
    char what[64], at[64], outcome[4200];
    if (why > 0)
        snprintf(what, sizeof what, "signal %s", preempt_signal_name(why));
    else
        snprintf(what, sizeof what, "the time limit (margin %.0f s)", time_margin(rt));
    ckpt_position(m->epoch, m->step, at, sizeof at);
    if (is_root(rt)) runlog_line(rt->log, "preempted by %s %s: saving and stopping", what, at);
    /* a save of this position tried in the background ends first */
    CAIRN_CHECK(tried ? ckpt_wait(rt->ckpt) : save_settled(rt, m, true));
    /* with a node-local tier the save tried may have gone to the nodes
     * alone (or failed there): a stop saves to the shared directory, for
     * the rerun may have other nodes; if it went there too (a flush), no
     * stop save removes the node-local checkpoints it supersedes: done here */
    bool flushed = tried && ckpt_committed_at(rt->ckpt, m);
    if (tried && !flushed && ckpt_local_tier(rt->ckpt))
        CAIRN_CHECK(save_settled(rt, m, true));
    if (flushed) ckpt_drop_local(rt->ckpt, m);
    bool saved = ckpt_committed_at(rt->ckpt, m);
    if (saved)
        snprintf(outcome, sizeof outcome, "checkpoint saved in %s", ckpt_dir(rt->ckpt));
    else
        snprintf(outcome, sizeof outcome, "its checkpoint could not be written (see the log), so "
                 "a rerun repeats the work since the newest committed checkpoint in %s (or "
                 "starts over if there is none)",
                 ckpt_dir(rt->ckpt));
    char stop[4400];
    snprintf(stop, sizeof stop, "preempted by %s %s: %s; exit %d: rerun to continue", what, at, outcome,
             CAIRN_EXIT_PREEMPTED);
    if (is_root(rt)) {
        ckpt_run_ended(rt->ckpt); /* an orderly stop: the rerun is no crash retry */
        /* Slurm may end this process as soon as it requeues the job, so
         * how the run stopped is said before: on stderr and in exit_status */
        fprintf(stderr, "cairn: %s\n", stop);
        fflush(stderr);
        write_exit_status(o->run_dir, CAIRN_EPREEMPTED);
        requeue(rt, o, saved);
    }
    rc = cairn_err_set(CAIRN_EPREEMPTED, __FILE__, __LINE__, "%s", stop);
cleanup:
    return rc;
}

/* ---- epochs ------------------------------------------------------------------ */

/* Steps first .. steps_per_epoch of epoch e; a preemption between steps
 * checkpoints the position in the epoch (e - 1 epochs and s steps done). */
static int run_steps(struct runtime *rt, const struct run_opts *o, int64_t e, int64_t first,
                     struct ckpt_meta *m)
{
    int rc = 0, why = 0;
    double t0 = clock_run();
    rt->epoch = e;
    progress_epoch(&rt->progress, first, t0);
    for (int64_t s = first; s <= rt->steps_per_epoch; s++) {
        double ts = clock_run();
        rt->step = s;
        watchdog_progress(watchdog_main(rt->watchdog));
        run_tasks(rt, PHASE_EPOCH);
        if (clock_run() - ts > rt->longest_step) rt->longest_step = clock_run() - ts;
        fault_signal(&rt->fault, rt->layout->rank, e, s);
        if (s == rt->steps_per_epoch) break; /* the epoch's end is its own boundary */
        if (is_root(rt)) progress_step(&rt->progress, rt->log, e, s, clock_run(), time_left(rt));
        CAIRN_CHECK(must_stop(rt, &why));
        if (why) {
            *m = (struct ckpt_meta){.epoch = e - 1, .step = s};
            return preempted(rt, o, m, why, false);
        }
    }
    rt->steps_seconds = clock_run() - t0;
cleanup:
    return rc;
}

/* The automatic watchdog timeout follows the slowest step and checkpoint
 * seen: a rank that takes several times as long has lost a peer.  Of a
 * background save, only the copy held the main lane up: the writer's
 * lane has its allowance (the save's size at its last rate). */
static void watchdog_follow(struct runtime *rt)
{
    double step = 5 * rt->longest_step, save = 3 * ckpt_longest_stall(rt->ckpt);
    watchdog_limit(rt->watchdog, step > save ? step : save);
}

/* Rank 0, once: synchronous saves that hold training up for a tenth of an
 * epoch or more (and a second at least) could be written in the
 * background.  Not the default: the copy costs memory, which a job sized
 * to its nodes may not have. */
static void hint_async(struct runtime *rt, double epoch_seconds)
{
    double save = ckpt_longest_save(rt->ckpt);
    if (!is_root(rt) || rt->async_hinted || rt->plan->job->ckpt.async || save < 1 || save < 0.1 * epoch_seconds)
        return;
    rt->async_hinted = true;
    runlog_line(rt->log, "note: a checkpoint save held training up for %.1f s (epochs take %.1f s); with "
                         "checkpoint.async = true it is written in the background from a copy of each "
                         "rank's state, which costs that much memory more",
                save, epoch_seconds);
}

/* Epochs from the one after m->epoch (from step m->step + 1 of it) until a
 * stop condition holds, checkpointing every checkpoint.every epochs and
 * after the last.  A checkpoint records whether a stop blob held
 * (m->done); max_epochs is looked at afresh, so a resume with a larger
 * max_epochs trains on. */
static int run_epochs(struct runtime *rt, const struct run_opts *o, struct ckpt_meta *m)
{
    int rc = 0, why = 0;
    const struct job *j = rt->plan->job;
    bool none = rt->plan->phases[PHASE_EPOCH].n == 0 && rt->plan->phases[PHASE_EPOCH_END].n == 0;
    if (none || m->done || (j->stop.max_epochs && m->epoch >= j->stop.max_epochs)) return 0;
    if (m->step >= rt->steps_per_epoch)
        CAIRN_FAIL(CAIRN_EINPUT, "the checkpoint was taken after step %lld of epoch %lld, but "
                                 "epochs now have %lld step%s",
                   (long long)m->step, (long long)m->epoch + 1, (long long)rt->steps_per_epoch,
                   rt->steps_per_epoch == 1 ? "" : "s");
    for (int64_t first = m->step + 1;; first = 1) {
        int64_t e = m->epoch + 1;
        double t0 = clock_run();
        CAIRN_CHECK(run_steps(rt, o, e, first, m));
        watchdog_progress(watchdog_main(rt->watchdog));
        run_tasks(rt, PHASE_EPOCH_END);
        bool by_blob = false, by_max = false;
        CAIRN_CHECK(should_stop(rt, e, &by_blob, &by_max));
        *m = (struct ckpt_meta){.epoch = e, .step = 0, .done = by_blob};
        double took = clock_run() - t0;
        CAIRN_CHECK(log_epoch(rt, e, took));
        bool stop = by_blob || by_max, tried = false;
        if (ckpt_enabled(rt->ckpt) && (stop || e % ckpt_every(rt->ckpt) == 0)) {
            CAIRN_CHECK(save_settled(rt, m, stop)); /* the last one is committed before download */
            tried = true;
            hint_async(rt, took);
        }
        if (stop) break; /* the epochs are over: finish rather than stop */
        watchdog_follow(rt);
        if (is_root(rt)) refresh_end_time(rt);
        CAIRN_CHECK(must_stop(rt, &why));
        if (why) return preempted(rt, o, m, why, tried);
    }
cleanup:
    rt->step = 0;
    return rc;
}

/* Load the checkpoint to resume from, or run init and checkpoint epoch 0. */
static int start(struct runtime *rt, struct ckpt_meta *m)
{
    int rc = 0;
    bool resumed = false;
    *m = (struct ckpt_meta){0};
    CAIRN_CHECK(ckpt_resume(rt->ckpt, m, &resumed));
    if (resumed) {
        rt->epoch = m->epoch;
        char at[64];
        if (is_root(rt))
            runlog_line(rt->log, "resuming %s%s (init skipped)", ckpt_position(m->epoch, m->step, at, sizeof at),
                        m->done ? ", after which a stop blob held" : "");
        return ckpt_ready(rt->ckpt, true);
    }
    CAIRN_CHECK(run_phase(rt, PHASE_INIT));
    CAIRN_CHECK(ckpt_ready(rt->ckpt, false));
    CAIRN_CHECK(save_settled(rt, m, false));
cleanup:
    return rc;
}

/* A preemption signal that came after the last step (during the final
 * checkpoint, the download or exit) asked for nothing more: the job
 * finished.  Say so, rather than ignore it silently. */
static int log_late_signal(struct runtime *rt)
{
    int rc = 0, sig = preempt_signal();
    guard_all(rt, "agreeing whether a signal came late");
    CAIRN_CHECK(coll_allreduce(MPI_IN_PLACE, &sig, 1, MPI_INT, MPI_MAX, rt->layout->world));
    if (sig && is_root(rt))
        runlog_line(rt->log, "signal %s came after the last step: the job finished instead of "
                             "stopping, with nothing more to save",
                    preempt_signal_name(sig));
cleanup:
    return rc;
}

/* ---- entry ---------------------------------------------------------------- */

/* Collective: the largest peak resident memory of any rank (MiB), and
 * which rank, for rank 0 to log. */
static int peak_memory(struct runtime *rt, double *mb, int *rank)
{
    struct rusage ru;
    double mine = getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024 : 0; /* kB */
    double *all = is_root(rt) ? calloc((size_t)rt->layout->size, sizeof *all) : NULL;
    int rc = is_root(rt) && !all ? cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory") : 0;
    rc = coll_agree(rt->layout->world, rc);
    if (rc == 0) {
        guard_all(rt, "gathering the ranks' peak memory");
        rc = coll_gather_double(rt->layout->world, mine, all);
    }
    for (int r = 0; rc == 0 && all && r < rt->layout->size; r++)
        if (all[r] > *mb) {
            *mb = all[r];
            *rank = r;
        }
    free(all);
    return rc;
}

/* Collective: each extension's state on this rank; an extension that
 * counts its own steps (one pass over its data) sets the epoch's length. */
static int create_exts(struct runtime *rt)
{
    int rc = 0;
    const struct plan *p = rt->plan;
    int64_t samples = 0;
    rt->ext_state = calloc((size_t)p->n_exts + 1, sizeof *rt->ext_state);
    rc = rt->ext_state ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    CAIRN_CHECK(coll_agree(rt->layout->world, rc));
    rt->steps_per_epoch = p->steps_per_epoch;
    for (int i = 0; i < p->n_exts; i++) {
        const struct ext_def *def = p->exts[i].def;
        CAIRN_CHECK(def->create(rt, p->exts[i].part, rt->layout->exts[i].comms, &rt->ext_state[i]));
        int64_t n = def->steps_per_epoch ? def->steps_per_epoch(rt->ext_state[i]) : 0;
        if (n > 0) rt->steps_per_epoch = n;
        n = def->epoch_samples ? def->epoch_samples(rt->ext_state[i]) : 0;
        if (n > 0) samples = n;
    }
    if (rt->steps_per_epoch < 1) rt->steps_per_epoch = 1;
    progress_init(&rt->progress, p->job->progress, rt->steps_per_epoch, p->job->stop.max_epochs,
                  (double)samples / (double)rt->steps_per_epoch);
cleanup:
    return rc;
}

static int setup(MPI_Comm world, const struct plan *p, const struct run_opts *o,
                 struct runtime *rt)
{
    int rc = 0;
    rt->plan = p;
    rt->run_dir = o->run_dir;
    rt->phase = PHASE_INIT;
    CAIRN_CHECK(coll_agree(world, fault_parse(getenv("CAIRN_FAULT"), &rt->fault)));
    CAIRN_CHECK(layout_create(world, p, &rt->layout));
    CAIRN_CHECK(guard_start(rt));
    CAIRN_CHECK(make_run_dir(world, o->run_dir));
    rc = runlog_open(o->run_dir, rt->layout->rank, &rt->log);
    CAIRN_CHECK(coll_agree(world, rc));
    rc = workspace_create(rt->layout->gid >= 0 ? &p->groups[rt->layout->gid] : NULL, &rt->ws);
    if (rc == 0) rc = reader_cache_create(&rt->readers);
    CAIRN_CHECK(coll_agree(world, rc));
    CAIRN_CHECK(ckpt_open(rt, &p->job->ckpt, &o->resume, &rt->ckpt));
    slurm_job_read(&rt->slurm);
    bool saves = ckpt_enabled(rt->ckpt); /* without checkpoints, signals keep their usual effect */
    CAIRN_CHECK(coll_agree(world, preempt_install(p->job->slurm.signals, saves ? p->job->slurm.n_signals : 0)));
    if (rt->layout->rank == 0) refresh_end_time(rt);
    CAIRN_CHECK(create_exts(rt));
cleanup:
    return rc;
}

static void teardown(struct runtime *rt)
{
    guard_quiesce(rt); /* first: every rank beats until all are here */
    for (int i = 0; rt->ext_state && i < rt->plan->n_exts; i++)
        if (rt->ext_state[i]) rt->plan->exts[i].def->destroy(&rt->ext_state[i]);
    free(rt->ext_state);
    ckpt_close(&rt->ckpt);
    guard_end(rt); /* before the log it writes to goes */
    reader_cache_destroy(&rt->readers);
    workspace_destroy(&rt->ws);
    runlog_close(&rt->log);
    layout_destroy(&rt->layout);
}

int runner_run(MPI_Comm world, const struct plan *p, const struct run_opts *o, int64_t *epochs)
{
    int rc = 0;
    struct runtime rt = {0};
    struct ckpt_meta m = {0};
    double t0 = clock_run();
    bool started = false; /* past setup (see cleanup for a failure within it) */
    bool running = false;  /* past the resume */
    *epochs = 0;
    CAIRN_CHECK(setup(world, p, o, &rt));
    started = true;
    if (is_root(&rt)) forget_exit_status(o->run_dir);
    if (is_root(&rt)) log_start(&rt);
    if (is_root(&rt)) log_placement(&rt);
    if (is_root(&rt)) log_kernels(&rt);
    if (is_root(&rt) && rt.slurm.present) log_slurm(&rt);
    CAIRN_CHECK(prepare_ops(&rt));
    CAIRN_CHECK(start(&rt, &m));
    running = true;
    int64_t first = m.epoch;
    int why = 0;
    fault_signal(&rt.fault, rt.layout->rank, 0, 1);
    CAIRN_CHECK(must_stop(&rt, &why));
    if (why) CAIRN_CHECK(preempted(&rt, o, &m, why, true)); /* during start-up: its save was just tried */
    CAIRN_CHECK(run_epochs(&rt, o, &m));
    CAIRN_CHECK(ckpt_wait(rt.ckpt)); /* the init's save, when no epoch ran */
    CAIRN_CHECK(quiesce_exts(&rt));
    CAIRN_CHECK(ckpt_upload(rt.ckpt));
    CAIRN_CHECK(run_phase(&rt, PHASE_DOWNLOAD));
    CAIRN_CHECK(run_phase(&rt, PHASE_EXIT));
    CAIRN_CHECK(log_late_signal(&rt));
    *epochs = m.epoch;
    int peak_rank = 0;
    double peak = 0;
    CAIRN_CHECK(peak_memory(&rt, &peak, &peak_rank));
    if (is_root(&rt)) {
        ckpt_run_ended(rt.ckpt);
        char fields[192];
        runlog_line(rt.log, "job %s finished: %lld epoch%s run (%lld in this run) in %.3f s; "
                            "peak memory %.1f MiB (rank %d, the most of any)",
                    p->job->name, (long long)m.epoch, m.epoch == 1 ? "" : "s",
                    (long long)(m.epoch - first), clock_run() - t0, peak, peak_rank);
        snprintf(fields, sizeof fields, "\"epochs\":%lld,\"this_run\":%lld,\"seconds\":%.6f,"
                 "\"peak_mib\":%.1f,\"peak_rank\":%d",
                 (long long)m.epoch, (long long)(m.epoch - first), clock_run() - t0, peak, peak_rank);
        runlog_metric(rt.log, "done", m.epoch, 0, fields);
    }
cleanup:;
    /* once the run log is open (rank 0's log implies its layout), every
     * failure, a refusal at start-up included, ends in cairn.log and
     * exit_status like any other: the user looks there first */
    bool logging = started || rt.log;
    if (rc && rc != CAIRN_EPREEMPTED && logging && is_root(&rt)) /* a preemption is logged as it happens */
        runlog_line(rt.log, "error: %s", cairn_errmsg());
    /* before that, a refusal (bad input) leaves the run directory as it
     * was; any other failure says so, or a batch script would take the
     * run for one that died and run it again and again */
    bool say = logging ? is_root(&rt) : cairn_exit_code(rc) != CAIRN_EXIT_INPUT && world_rank(world) == 0;
    /* an error cairn reports, which no batch script reruns, is no crash
     * loop: the next run by hand gets the full checkpoint.max_resumes */
    if (running && rc && rc != CAIRN_EPREEMPTED && is_root(&rt) && strcmp(runtime_exit_kind(rc), "lost") != 0)
        ckpt_run_ended(rt.ckpt);
    teardown(&rt);
    if (say && !started) forget_exit_status(o->run_dir);
    if (say) write_exit_status(o->run_dir, rc);
    return rc;
}
