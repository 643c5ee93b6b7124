/* Step execution; see include/cairn/exec.h.
 *
 * Concurrency: parallel branches run in threads, each on its own
 * communicator lane, and the analyzer guarantees they touch disjoint blobs.
 * Report steps run in threads beside their siblings and may read what the
 * siblings write, so every op takes read locks on its inputs and write
 * locks on its outputs, in blob-id order (no lock-order deadlocks). */
#include "cairn/exec.h"

#include "cairn/clock.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/layout.h"
#include "cairn/plan.h"
#include "cairn/preempt.h"
#include "cairn/runlog.h"
#include "cairn/runtime.h"
#include "cairn/watchdog.h"
#include "cairn/workspace.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

/* analyze refuses ops with more than OP_MAX_ARITY inputs or outputs */
enum { MAX_LOCKS = 2 * OP_MAX_ARITY };

void runtime_where(const struct runtime *rt, char *buf, size_t size)
{
    if (rt->phase == PHASE_EPOCH || rt->phase == PHASE_EPOCH_END)
        snprintf(buf, size, "epoch %lld step %lld", (long long)rt->epoch, (long long)rt->step);
    else
        snprintf(buf, size, "%s", phase_name(rt->phase));
}

/* The last words may block (a hung file system, the log's lock held by a
 * thread stuck in a write): they get a few seconds, then the process ends
 * with its code all the same. */
#define LAST_WORDS_SECONDS 5
static volatile sig_atomic_t last_code = 3;
static void out_of_words(int sig)
{
    (void)sig;
    _exit(last_code);
}

void runtime_last_words(const struct runtime *rt, int code, const char *kind, const char *line)
{
    runtime_exit_words(rt, code, kind, line, true);
}

void runtime_exit_words(const struct runtime *rt, int code, const char *kind, const char *line, bool log)
{
    char path[4200], text[4200];
    struct sigaction sa = {.sa_handler = out_of_words};
    last_code = code;
    sigaction(SIGALRM, &sa, NULL);
    alarm(LAST_WORDS_SECONDS);
    if (log && rt->log) runlog_line(rt->log, "%s", line);
    if (!rt->run_dir || fsx_join(path, sizeof path, rt->run_dir, "exit_status")) return;
    int n = snprintf(text, sizeof text, "%d %s: %s", code, kind, line);
    if (n < 0) return;
    if ((size_t)n >= sizeof text - 1) n = (int)sizeof text - 2;
    for (int i = 0; i < n; i++)
        if (text[i] == '\n') text[i] = ' ';
    text[n++] = '\n';
    fsx_write_new(path, text, (size_t)n); /* the first rank's words stand */
}

const char *runtime_exit_kind(int rc)
{
    if (cairn_exit_code(rc) == CAIRN_EXIT_INPUT) return "input";
    return rc == CAIRN_EMPI ? "lost" : "fatal"; /* MPI failing: a peer or the network is gone */
}

_Noreturn void runtime_fatal(const struct runtime *rt, int rc, const char *fmt, ...)
{
    char raw[3072], msg[3072], at[64], line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    cairn_escape(msg, sizeof msg, raw); /* it goes to stderr as it is (error.h) */
    runtime_where(rt, at, sizeof at);
    const struct layout *l = rt->layout;
    int n = snprintf(line, sizeof line, "cairn: rank %d (%s): %s: %s\n", l->rank, l->host, at, msg);
    if (n > 0) {
        ssize_t ignored = write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)ignored;
        line[strcspn(line, "\n")] = 0;
        runtime_last_words(rt, cairn_exit_code(rc), runtime_exit_kind(rc), line + strlen("cairn: "));
    }
    MPI_Abort(l->world, cairn_exit_code(rc));
    _exit(cairn_exit_code(rc)); /* MPI_Abort does not return; this satisfies _Noreturn */
}

/* ---- ops -------------------------------------------------------------- */

struct lockset {
    int id[MAX_LOCKS];
    bool wr[MAX_LOCKS];
    int n;
};

static void lock_add(struct lockset *s, int id, bool wr)
{
    for (int i = 0; i < s->n; i++) {
        if (s->id[i] == id) {
            s->wr[i] = s->wr[i] || wr;
            return;
        }
    }
    int i = s->n++;
    while (i > 0 && s->id[i - 1] > id) { /* keep ids sorted */
        s->id[i] = s->id[i - 1];
        s->wr[i] = s->wr[i - 1];
        i--;
    }
    s->id[i] = id;
    s->wr[i] = wr;
}

static void lock_all(struct workspace *ws, const struct lockset *s)
{
    for (int i = 0; i < s->n; i++) {
        pthread_rwlock_t *l = &ws->v[s->id[i]].lock;
        if (s->wr[i])
            pthread_rwlock_wrlock(l);
        else
            pthread_rwlock_rdlock(l);
    }
}

static void unlock_all(struct workspace *ws, const struct lockset *s)
{
    for (int i = s->n - 1; i >= 0; i--) pthread_rwlock_unlock(&ws->v[s->id[i]].lock);
}

_Noreturn static void op_failed(struct exec_ctx *x, const struct op_node *op, int rc)
{
    runtime_fatal(x->rt, rc, "task '%s' (group %s): op '%s' (%s:%d): %s", x->task->name,
                  x->task->group, op->def->name, op->file, op->line, cairn_errmsg());
}

/* Tell the watchdog where this rank is, should it wait here for ever. */
static void doing(const struct exec_ctx *x, const struct op_node *op)
{
    char at[64];
    runtime_where(x->rt, at, sizeof at);
    watchdog_doing(x->lane, "%s: task '%s' (group %s): op '%s' (%s:%d)%s", at,
                   x->task->name, x->task->group, op->def->name, op->file, op->line,
                   op->def->flags & OPF_COLLECTIVE ? ", which waits for the group's other ranks" : "");
    if (!(op->def->flags & OPF_COLLECTIVE)) return;
    /* an extension's groups run different ops in one step and talk to each
     * other: its ranks meet in the step, whatever op each is in */
    const struct group *g = &x->rt->plan->groups[x->task->group_id];
    char key[160];
    snprintf(key, sizeof key, "%s: extension '%s'", at, op->ext > 0 ? x->rt->plan->exts[op->ext - 1].def->name : "");
    if (op->ext > 0)
        watchdog_peers(x->lane, 0, x->rt->layout->size, key);
    else
        watchdog_peers(x->lane, g->first, g->nranks, NULL);
}

/* CAIRN_FAULT busy: this op never ends, and the rank looks alive */
_Noreturn static void busy(struct exec_ctx *x, const struct op_node *op)
{
    fprintf(stderr, "cairn: rank %d: CAIRN_FAULT keeps this rank busy in op '%s'\n", x->rt->layout->rank,
            op->def->name);
    fflush(stderr);
    for (;;) {
        watchdog_progress(x->lane);
        doing(x, op); /* still in it */
        clock_sleep(0.5);
    }
}

/* CAIRN_FAULT await: this op starts once a preemption signal has come */
static void await_signal(struct exec_ctx *x, const struct op_node *op)
{
    fprintf(stderr, "cairn: rank %d: CAIRN_FAULT holds op '%s' until a preemption signal\n",
            x->rt->layout->rank, op->def->name);
    fflush(stderr);
    while (!preempt_signal()) {
        watchdog_progress(x->lane);
        doing(x, op); /* still before it, as the others see it */
        clock_sleep(0.05);
    }
}

static void run_op(struct exec_ctx *x, const struct op_node *op)
{
    struct workspace *ws = x->rt->ws;
    struct blob *in[OP_MAX_ARITY], *out[OP_MAX_ARITY];
    struct lockset locks = {.n = 0};
    bool mutates = op->def->flags & OPF_MUTATES_IN0;
    for (int i = 0; i < op->n_in; i++) {
        in[i] = &ws->v[op->in_id[i]];
        lock_add(&locks, op->in_id[i], i == 0 && mutates);
    }
    for (int i = 0; i < op->n_out; i++) {
        out[i] = &ws->v[op->out_id[i]];
        lock_add(&locks, op->out_id[i], true);
    }
    doing(x, op); /* waiting for the locks is part of the op */
    if (fault_busy(&x->rt->fault, x->rt->layout->rank, op->def->name, x->rt->epoch)) busy(x, op);
    if (fault_await(&x->rt->fault, x->rt->layout->rank, op->def->name, x->rt->epoch) && !preempt_signal())
        await_signal(x, op);
    lock_all(ws, &locks);
    int rc = 0;
    for (int i = 0; i < op->n_in && rc == 0; i++)
        if (!in[i]->defined)
            rc = cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "blob '%s' has no value",
                               op->in[i]);
    struct op_call call = {.ctx = x, .op = op, .in = in, .out = out};
    if (op->ext > 0) call.state = x->rt->ext_state[op->ext - 1];
    if (rc == 0 && fault_op(&x->rt->fault, x->rt->layout->rank, op->def->name, x->rt->epoch))
        rc = cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "injected fault (CAIRN_FAULT)");
    if (rc == 0) {
        cairn_err_clear();
        rc = op->def->run(&call);
    }
    watchdog_progress(x->lane); /* a peer that is gone stops the next op that needs it */
    if (rc) op_failed(x, op, rc);
    for (int i = 0; i < op->n_out; i++) out[i]->defined = true;
    unlock_all(ws, &locks);
}

/* ---- structure ---------------------------------------------------------- */

static void run_list(struct exec_ctx *x, const struct steplist *l);

static bool blob_true(struct workspace *ws, int id)
{
    pthread_rwlock_rdlock(&ws->v[id].lock);
    bool t = tensor_any(&ws->v[id].t);
    pthread_rwlock_unlock(&ws->v[id].lock);
    return t;
}

static void run_loop(struct exec_ctx *x, const struct step *st)
{
    for (int64_t i = 0; st->count < 0 || i < st->count; i++) {
        run_list(x, &st->body);
        if (st->until_id >= 0 && blob_true(x->rt->ws, st->until_id)) break;
    }
}

struct branch {
    struct exec_ctx ctx;
    const struct steplist *list;
    pthread_t th;
};

static void *branch_main(void *p)
{
    struct branch *b = p;
    run_list(&b->ctx, b->list);
    watchdog_lane_close(&b->ctx.lane);
    return NULL;
}

static void run_parallel(struct exec_ctx *x, const struct step *st)
{
    struct branch *b = calloc((size_t)st->n_branches, sizeof *b);
    if (!b) runtime_fatal(x->rt, CAIRN_ENOMEM, "out of memory starting parallel branches");
    for (int i = 1; i < st->n_branches; i++) {
        b[i].ctx = *x;
        b[i].ctx.comm = x->rt->layout->lanes[st->branch_lane[i]];
        b[i].ctx.lane = watchdog_lane_open(x->rt->watchdog, "a parallel branch's start");
        b[i].list = &st->branches[i];
        if (pthread_create(&b[i].th, NULL, branch_main, &b[i]))
            runtime_fatal(x->rt, CAIRN_ERUNTIME, "cannot start a thread for a parallel branch");
    }
    run_list(x, &st->branches[0]); /* branch 0 keeps this thread and lanes */
    watchdog_pause(x->lane); /* the other branches' lanes are watched meanwhile */
    for (int i = 1; i < st->n_branches; i++) pthread_join(b[i].th, NULL);
    watchdog_progress(x->lane);
    free(b);
}

struct reporter {
    struct exec_ctx ctx;
    const struct step *st;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    pthread_t th;
};

static void add_ms(struct timespec *t, int64_t ms)
{
    t->tv_sec += ms / 1000;
    t->tv_nsec += (ms % 1000) * 1000000;
    if (t->tv_nsec >= 1000000000) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000;
    }
}

/* One run of a report step's body, watched in a lane of its own. */
static void report_once(struct reporter *r)
{
    r->ctx.lane = watchdog_lane_open(r->ctx.rt->watchdog, "a report step's start");
    run_list(&r->ctx, &r->st->body);
    watchdog_lane_close(&r->ctx.lane);
}

/* Run the body every every_ms while the siblings run, then once more when
 * they are done, so every report step reports at least once. */
static void *reporter_main(void *p)
{
    struct reporter *r = p;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&r->mu);
    for (;;) {
        add_ms(&next, r->st->every_ms);
        int e = 0;
        while (!r->stop && e != ETIMEDOUT) e = pthread_cond_timedwait(&r->cv, &r->mu, &next);
        if (r->stop) break;
        pthread_mutex_unlock(&r->mu);
        report_once(r);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    report_once(r);
    return NULL;
}

static void start_reporter(struct exec_ctx *x, const struct step *st, struct reporter *r)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    r->ctx = *x;
    r->ctx.in_report = true;
    r->st = st;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&r->th, NULL, reporter_main, r))
        runtime_fatal(x->rt, CAIRN_ERUNTIME, "cannot start a thread for a report step");
}

static void stop_reporter(struct reporter *r)
{
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->th, NULL);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
}

static void run_step(struct exec_ctx *x, const struct step *st)
{
    switch (st->kind) {
    case STEP_OP: run_op(x, &st->op); break;
    case STEP_LOOP: run_loop(x, st); break;
    case STEP_PARALLEL: run_parallel(x, st); break;
    case STEP_REPORT: break; /* started by run_list */
    }
}

static void run_list(struct exec_ctx *x, const struct steplist *l)
{
    int n_rep = 0;
    for (int i = 0; i < l->n; i++) n_rep += l->v[i].kind == STEP_REPORT;
    struct reporter *reps = NULL;
    if (n_rep) {
        reps = calloc((size_t)n_rep, sizeof *reps);
        if (!reps) runtime_fatal(x->rt, CAIRN_ENOMEM, "out of memory starting report steps");
        for (int i = 0, k = 0; i < l->n; i++)
            if (l->v[i].kind == STEP_REPORT) start_reporter(x, &l->v[i], &reps[k++]);
    }
    for (int i = 0; i < l->n; i++) run_step(x, &l->v[i]);
    for (int k = 0; k < n_rep; k++) stop_reporter(&reps[k]);
    free(reps);
}

void exec_task(struct runtime *rt, const struct task *t)
{
    const struct layout *l = rt->layout;
    struct exec_ctx x = {.rt = rt, .task = t, .comm = l->lanes[0], .rank = l->grank,
                         .size = l->gsize, .lane = watchdog_main(rt->watchdog)};
    run_list(&x, &t->steps);
}
