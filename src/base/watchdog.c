/* The watchdog; see include/cairn/watchdog.h. */
#include "cairn/watchdog.h"

#include "cairn/clock.h"
#include "cairn/error.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct watchdog_lane {
    struct watchdog *w;
    struct watchdog_lane *next; /* in w->lanes */
    bool paused;
    double allow; /* watchdog_allow's, until the lane's next progress */
    double last;  /* clock_run() of the lane's last progress */
    bool ended;   /* its work (doing) ended; the next has not begun */
    int first, n; /* the world ranks its work waits for */
    char doing[512];
    char key[512]; /* what a peer's lane must show to be in the same work */
};

struct watchdog {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    double fixed, floor, limit; /* seconds */
    struct watchdog_lane *lanes, main;
    char who[96];
    char hint[256]; /* what a stall probably means */
    watchdog_last_words_fn *last_words;
    void *arg;
    watchdog_ask_fn *ask;
    void *ask_arg;
    bool asking;         /* expire() is in ask: the asker's state must stay */
    long long tick, due; /* the thread's last tick, and when it planned the next (monotonic ns) */
    long seen;           /* the SIGCONTs it has seen (clock_stops) */
};

static double base_timeout(const struct watchdog *w)
{
    if (w->fixed > 0) return w->fixed;
    return w->limit > w->floor ? w->limit : w->floor;
}

/* What a lane does, for a message: "in X", or "after X" once X ended. */
static void describe(const struct watchdog_lane *l, char *out, size_t size)
{
    snprintf(out, size, "%s %s", l->ended ? "after" : "in", *l->doing ? l->doing : "start-up");
}

/* The roll call runs MPI on this thread: should it block all the same,
 * the alarm ends the process with the message formed without it. */
enum { ASK_BOUND_SECONDS = 15 };
static char plain[4096];
static size_t plain_len;
static void out_of_time(int sig)
{
    (void)sig;
    ssize_t ignored = write(STDERR_FILENO, plain, plain_len);
    (void)ignored;
    _exit(cairn_exit_code(CAIRN_ERUNTIME));
}

static int format(char *line, size_t size, const struct watchdog *w, double idle, double timeout,
                  const char *allow, const char *doing, const char *why)
{
    int len = snprintf(line, size,
                       "cairn: %s: watchdog: no progress for %.0f s (watchdog.timeout %.0f s%s) %s; "
                       "%s: ending the job\n",
                       w->who, idle, timeout, allow, doing, why);
    if (len < 0) return 0;
    if ((size_t)len >= size) len = (int)size - 1, line[len - 1] = '\n';
    return len;
}

/* A lane made no progress for its bound: say where and, if the ranks it
 * waits for can be asked, what they do; then end the process at once (exit
 * 3): the launcher sees a failed rank and ends the job.  Called with w->mu
 * held; the asking runs without it, so that this rank's own answers to
 * peers (watchdog_where) are not held up. */
static _Noreturn void expire(struct watchdog *w, const struct watchdog_lane *l, double idle)
{
    char line[4096], allow[64] = "", doing[sizeof l->doing + 16], key[sizeof l->key], why[2048];
    if (l->allow >= 0.5) snprintf(allow, sizeof allow, ", plus %.0f s for the checkpoint's size", l->allow);
    describe(l, doing, sizeof doing);
    snprintf(key, sizeof key, "%s", l->key);
    snprintf(why, sizeof why, "%s", w->hint);
    int first = l->first, n = l->n;
    watchdog_ask_fn *ask = n > 0 && *key ? w->ask : NULL;
    void *ask_arg = w->ask_arg;
    double timeout = base_timeout(w);
    w->asking = ask != NULL;
    pthread_mutex_unlock(&w->mu);
    if (ask) {
        char told[sizeof why];
        plain_len = (size_t)format(plain, sizeof plain, w, idle, timeout, allow, doing, why);
        struct sigaction sa = {.sa_handler = out_of_time};
        sigaction(SIGALRM, &sa, NULL);
        alarm(ASK_BOUND_SECONDS);
        if (ask(ask_arg, key, first, n, told, sizeof told)) snprintf(why, sizeof why, "%s", told);
        alarm(0);
    }
    int len = format(line, sizeof line, w, idle, timeout, allow, doing, why);
    if (len > 0) {
        ssize_t ignored = write(STDERR_FILENO, line, (size_t)len);
        (void)ignored;
        line[strcspn(line, "\n")] = 0;
        if (w->last_words) w->last_words(w->arg, line + strlen("cairn: "));
    }
    _exit(cairn_exit_code(CAIRN_ERUNTIME));
}

/* ---- a stopped process ----------------------------------------------------
 * scontrol suspend, gang scheduling and PreemptMode=SUSPEND stop every
 * process of a job (SIGSTOP), for as long as Slurm likes; CLOCK_MONOTONIC
 * runs on meanwhile.  The lanes are timed on clock_run, which stands still
 * for the stops this module sees, by two signs: SIGCONT, whose handler
 * counts the time since the watchdog thread's last tick (a second at most
 * before the stop) as stopped; and a tick that comes much later than that
 * thread planned (a stop whose SIGCONT has not been handled yet, or a
 * process that did not run for another reason).  After a SIGCONT every
 * lane starts again: the ranks of a job are not all continued at the same
 * moment, and those resumed first wait for the others. */
#define LATE_SECONDS 1.0 /* a tick this late: the thread did not run */
static atomic_llong tick_ns; /* the watchdog thread's last tick (monotonic), 0: none */

static long long mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void on_continue(int sig)
{
    (void)sig;
    int saved = errno;
    long long now = mono_ns(), last = atomic_load(&tick_ns);
    /* from the last tick (none: no watchdog runs); should the thread tick
     * at this moment, its lateness counts the stop instead */
    if (last > 0 && now > last && atomic_compare_exchange_strong(&tick_ns, &last, now))
        clock_stopped((double)(now - last) / 1e9);
    clock_continued();
    errno = saved;
}

/* The thread's tick: was the process stopped since the last one?  Returns
 * the tick's time: a fresh one when the handler took the tick (the stop
 * may have fallen after `now` was read: that stale time would make the
 * next tick late by the stop, counting it twice). */
static long long tick(struct watchdog *w, long long now)
{
    long cont = clock_stops();
    long long expect = w->tick;
    /* the handler took the tick since: it counted the stop (no second time) */
    bool handled = !atomic_compare_exchange_strong(&tick_ns, &expect, now);
    if (handled) {
        now = mono_ns();
        atomic_store(&tick_ns, now);
    } else if (now - w->due > (long long)(LATE_SECONDS * 1e9)) {
        clock_stopped((double)(now - w->due) / 1e9);
    }
    w->tick = now;
    if (cont == w->seen) return now;
    w->seen = cont;
    double run = clock_run();
    for (struct watchdog_lane *l = w->lanes; l; l = l->next) l->last = run;
    return now;
}

/* Every lane is watched on its own: one lane's progress never vouches for
 * another's (a report step that ticks beside a hung collective, a busy
 * parallel branch beside a stuck one). */
static void *watch(void *arg)
{
    struct watchdog *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        long long at = tick(w, mono_ns());
        double now = clock_run(), nap = 1;
        for (const struct watchdog_lane *l = w->lanes; l; l = l->next) {
            if (l->paused) continue;
            double idle = now - l->last, left = base_timeout(w) + l->allow - idle;
            if (left <= 0) expire(w, l, idle);
            if (left < nap) nap = left;
        }
        w->due = at + (long long)(nap * 1e9);
        struct timespec until = {.tv_sec = (time_t)(w->due / 1000000000LL),
                                 .tv_nsec = (long)(w->due % 1000000000LL)};
        pthread_cond_timedwait(&w->cv, &w->mu, &until);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int watchdog_start(double timeout, double floor, const char *who, watchdog_last_words_fn *last_words,
                   void *arg, struct watchdog **out)
{
    struct watchdog *w = calloc(1, sizeof *w);
    *out = NULL;
    if (!w) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    w->fixed = timeout;
    w->floor = floor;
    w->last_words = last_words;
    w->arg = arg;
    w->main = (struct watchdog_lane){.w = w, .last = clock_run()};
    w->lanes = &w->main;
    snprintf(w->who, sizeof w->who, "%s", who);
    snprintf(w->hint, sizeof w->hint, "a peer rank or its node is probably gone");
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the ticks' clock; a clock step changes nothing */
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* the first tick now, the handler next, the thread last: a stop at
     * any moment from here on is seen */
    w->tick = w->due = mono_ns();
    w->seen = clock_stops();
    atomic_store(&tick_ns, w->tick);
    struct sigaction sa = {.sa_handler = on_continue, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCONT, &sa, NULL);
    if (pthread_create(&w->thread, NULL, watch, w) != 0) {
        signal(SIGCONT, SIG_DFL);
        atomic_store(&tick_ns, 0);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "cannot start the watchdog thread");
    }
    *out = w;
    return 0;
}

void watchdog_stop(struct watchdog **wp)
{
    if (!wp || !*wp) return;
    struct watchdog *w = *wp;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    signal(SIGCONT, SIG_DFL);
    atomic_store(&tick_ns, 0); /* no tick to count a later stop from */
    while (w->lanes != &w->main) { /* lanes a caller left open */
        struct watchdog_lane *l = w->lanes;
        w->lanes = l->next;
        free(l);
    }
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    *wp = NULL;
}

struct watchdog_lane *watchdog_main(struct watchdog *w) { return w ? &w->main : NULL; }

struct watchdog_lane *watchdog_lane_open(struct watchdog *w, const char *doing)
{
    if (!w) return NULL;
    struct watchdog_lane *l = calloc(1, sizeof *l);
    if (!l) return NULL; /* unwatched rather than failed: the main lane still is */
    l->w = w;
    l->last = clock_run();
    snprintf(l->doing, sizeof l->doing, "%s", doing);
    pthread_mutex_lock(&w->mu);
    l->next = w->lanes;
    w->lanes = l;
    pthread_mutex_unlock(&w->mu);
    return l;
}

void watchdog_lane_close(struct watchdog_lane **lp)
{
    if (!lp || !*lp) return;
    struct watchdog_lane *l = *lp;
    struct watchdog *w = l->w;
    pthread_mutex_lock(&w->mu);
    struct watchdog_lane **p = &w->lanes;
    while (*p && *p != l) p = &(*p)->next;
    if (*p) *p = l->next;
    pthread_mutex_unlock(&w->mu);
    if (l != &w->main) free(l);
    *lp = NULL;
}

void watchdog_progress(struct watchdog_lane *l)
{
    if (!l) return;
    pthread_mutex_lock(&l->w->mu);
    l->last = clock_run();
    l->allow = 0;
    l->paused = false;
    l->ended = true;
    l->n = 0;
    l->key[0] = 0;
    pthread_mutex_unlock(&l->w->mu);
}

void watchdog_pause(struct watchdog_lane *l)
{
    if (!l) return;
    pthread_mutex_lock(&l->w->mu);
    l->paused = true;
    pthread_mutex_unlock(&l->w->mu);
}

void watchdog_peers(struct watchdog_lane *l, int first, int n, const char *key)
{
    if (!l) return;
    pthread_mutex_lock(&l->w->mu);
    l->first = first;
    l->n = n;
    snprintf(l->key, sizeof l->key, "%s", key ? key : l->doing);
    pthread_mutex_unlock(&l->w->mu);
}

void watchdog_allow(struct watchdog_lane *l, double seconds)
{
    if (!l) return;
    pthread_mutex_lock(&l->w->mu);
    l->allow = seconds;
    pthread_mutex_unlock(&l->w->mu);
}

void watchdog_doing(struct watchdog_lane *l, const char *fmt, ...)
{
    if (!l) return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&l->w->mu);
    vsnprintf(l->doing, sizeof l->doing, fmt, ap);
    l->ended = false;
    l->n = 0;
    l->key[0] = 0;
    pthread_mutex_unlock(&l->w->mu);
    va_end(ap);
}

void watchdog_hint(struct watchdog *w, const char *why)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    snprintf(w->hint, sizeof w->hint, "%s", why);
    pthread_mutex_unlock(&w->mu);
}

void watchdog_limit(struct watchdog *w, double seconds)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->limit = seconds;
    pthread_mutex_unlock(&w->mu);
}

void watchdog_asker(struct watchdog *w, watchdog_ask_fn *ask, void *arg)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    while (w->asking) pthread_cond_wait(&w->cv, &w->mu); /* the process ends soon */
    w->ask = ask;
    w->ask_arg = arg;
    pthread_mutex_unlock(&w->mu);
}

/* One lane's line for a peer: its key, a tab, then what it does; a text
 * holds no tab or newline. */
static size_t where_line(const struct watchdog_lane *l, char *out, size_t size)
{
    char doing[sizeof l->doing + 16];
    describe(l, doing, sizeof doing);
    int k = snprintf(out, size, "%s\t%s\n", l->key, doing);
    size_t n = k < 0 ? 0 : (size_t)k < size ? (size_t)k : size - 1;
    for (size_t i = 0; i + 1 < n; i++)
        if (out[i] == '\n' || (out[i] == '\t' && i != strlen(l->key))) out[i] = ' ';
    return n;
}

void watchdog_where(struct watchdog *w, char *out, size_t size)
{
    size_t used = 0;
    if (!w || size < 2) return;
    *out = 0;
    pthread_mutex_lock(&w->mu);
    if (!w->main.paused) used += where_line(&w->main, out, size); /* the main lane first */
    for (const struct watchdog_lane *l = w->lanes; l; l = l->next)
        if (l != &w->main && !l->paused && used + 1 < size) used += where_line(l, out + used, size - used);
    pthread_mutex_unlock(&w->mu);
    if (used == 0) snprintf(out, size, "\tbetween steps\n");
}
