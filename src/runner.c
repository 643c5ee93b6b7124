/* The job runner; see include/cairn/runner.h. */
#include "cairn/runner.h"

#include "cairn/ckpt.h"
#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/exec.h"
#include "cairn/fsx.h"
#include "cairn/layout.h"
#include "cairn/plan.h"
#include "cairn/reader.h"
#include "cairn/runlog.h"
#include "cairn/runtime.h"
#include "cairn/strbuf.h"
#include "cairn/train.h"
#include "cairn/version.h"
#include "cairn/workspace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static bool is_root(const struct runtime *rt) { return rt->layout->rank == 0; }

/* ---- set-up ------------------------------------------------------------- */

/* Rank 0 makes the run directory; everyone learns whether that worked. */
static int make_run_dir(MPI_Comm world, const char *dir)
{
    int me = 0, rc = 0;
    MPI_Comm_rank(world, &me);
    if (me == 0) rc = fsx_mkdir_p(dir);
    return coll_agree(world, rc);
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
    double t0 = now();
    run_tasks(rt, ph);
    CAIRN_CHECK(coll_barrier(rt->layout->world));
    double dt = now() - t0;
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

static int run_epoch(struct runtime *rt, int64_t e)
{
    rt->epoch = e;
    double t0 = now();
    for (int64_t s = 1; s <= rt->steps_per_epoch; s++) {
        rt->step = s;
        run_tasks(rt, PHASE_EPOCH);
    }
    rt->train_seconds = now() - t0;
    run_tasks(rt, PHASE_EPOCH_END);
    return 0;
}

/* Rank 0 logs the epoch; model jobs add their throughput. */
static int log_epoch(struct runtime *rt, int64_t e, double dt)
{
    int rc = 0;
    int64_t samples = 0;
    double pipe = 0;
    char fields[256], extra[128] = "";
    if (rt->train) CAIRN_CHECK(trainer_epoch_stats(rt->train, &samples, &pipe));
    if (!is_root(rt)) return 0;
    int n = snprintf(fields, sizeof fields, "\"seconds\":%.6f", dt);
    if (rt->train) {
        snprintf(fields + n, sizeof fields - (size_t)n,
                 ",\"samples\":%lld,\"train_seconds\":%.6f,\"pipe_seconds\":%.6f",
                 (long long)samples, rt->train_seconds, pipe);
        snprintf(extra, sizeof extra, " (%lld samples, %.0f samples/s in the steps)",
                 (long long)samples, rt->train_seconds > 0 ? (double)samples / rt->train_seconds : 0);
    }
    runlog_line(rt->log, "epoch %lld done in %.3f s%s", (long long)e, dt, extra);
    runlog_metric(rt->log, "epoch", e, rt->step, fields);
cleanup:
    return rc;
}

/* Epochs from the one after m->epoch until a stop condition holds,
 * checkpointing every checkpoint.every epochs and after the last.  A
 * checkpoint records whether a stop blob held (m->done); max_epochs is
 * looked at afresh, so a resume with a larger max_epochs trains on. */
static int run_epochs(struct runtime *rt, struct ckpt_meta *m)
{
    int rc = 0;
    const struct job *j = rt->plan->job;
    bool none = rt->plan->phases[PHASE_EPOCH].n == 0 && rt->plan->phases[PHASE_EPOCH_END].n == 0;
    if (none || m->done || (j->stop.max_epochs && m->epoch >= j->stop.max_epochs)) return 0;
    for (bool stop = false; !stop;) {
        int64_t e = m->epoch + 1;
        double t0 = now();
        CAIRN_CHECK(run_epoch(rt, e));
        bool by_blob = false, by_max = false;
        CAIRN_CHECK(should_stop(rt, e, &by_blob, &by_max));
        stop = by_blob || by_max;
        *m = (struct ckpt_meta){.epoch = e, .step = 0, .done = by_blob};
        CAIRN_CHECK(log_epoch(rt, e, now() - t0));
        if (ckpt_enabled(rt->ckpt) && (stop || e % ckpt_every(rt->ckpt) == 0))
            CAIRN_CHECK(ckpt_save(rt->ckpt, m));
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
        if (is_root(rt))
            runlog_line(rt->log, "resuming after epoch %lld%s (init skipped)", (long long)m->epoch,
                        m->done ? ", after which a stop blob held" : "");
        return 0;
    }
    CAIRN_CHECK(run_phase(rt, PHASE_INIT));
    CAIRN_CHECK(ckpt_save(rt->ckpt, m));
cleanup:
    return rc;
}

/* ---- entry ---------------------------------------------------------------- */

static int setup(MPI_Comm world, const struct plan *p, const struct run_opts *o,
                 struct runtime *rt)
{
    int rc = 0;
    rt->plan = p;
    rt->run_dir = o->run_dir;
    rt->phase = PHASE_INIT;
    CAIRN_CHECK(coll_agree(world, fault_parse(getenv("CAIRN_FAULT"), &rt->fault)));
    CAIRN_CHECK(layout_create(world, p, &rt->layout));
    CAIRN_CHECK(make_run_dir(world, o->run_dir));
    rc = runlog_open(o->run_dir, rt->layout->rank, &rt->log);
    CAIRN_CHECK(coll_agree(world, rc));
    rc = workspace_create(rt->layout->gid >= 0 ? &p->groups[rt->layout->gid] : NULL, &rt->ws);
    if (rc == 0) rc = reader_cache_create(&rt->readers);
    CAIRN_CHECK(coll_agree(world, rc));
    CAIRN_CHECK(ckpt_open(rt, &p->job->ckpt, &o->resume, &rt->ckpt));
    rt->steps_per_epoch = p->steps_per_epoch;
    if (p->train) {
        CAIRN_CHECK(trainer_create(rt, &rt->train));
        rt->steps_per_epoch = trainer_steps_per_epoch(rt->train);
    }
cleanup:
    return rc;
}

static void teardown(struct runtime *rt)
{
    trainer_destroy(&rt->train);
    ckpt_close(&rt->ckpt);
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
    double t0 = now();
    *epochs = 0;
    CAIRN_CHECK(setup(world, p, o, &rt));
    if (is_root(&rt)) log_start(&rt);
    CAIRN_CHECK(prepare_ops(&rt));
    CAIRN_CHECK(start(&rt, &m));
    int64_t first = m.epoch;
    CAIRN_CHECK(run_epochs(&rt, &m));
    if (rt.train) CAIRN_CHECK(trainer_quiesce(rt.train));
    CAIRN_CHECK(ckpt_upload(rt.ckpt));
    CAIRN_CHECK(run_phase(&rt, PHASE_DOWNLOAD));
    CAIRN_CHECK(run_phase(&rt, PHASE_EXIT));
    *epochs = m.epoch;
    if (is_root(&rt)) {
        char fields[128];
        runlog_line(rt.log, "job %s finished: %lld epoch%s run (%lld in this run) in %.3f s",
                    p->job->name, (long long)m.epoch, m.epoch == 1 ? "" : "s",
                    (long long)(m.epoch - first), now() - t0);
        snprintf(fields, sizeof fields, "\"epochs\":%lld,\"this_run\":%lld,\"seconds\":%.6f",
                 (long long)m.epoch, (long long)(m.epoch - first), now() - t0);
        runlog_metric(rt.log, "done", m.epoch, 0, fields);
    }
cleanup:
    teardown(&rt);
    return rc;
}
