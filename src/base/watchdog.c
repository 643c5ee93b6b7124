/* The watchdog; see include/cairn/watchdog.h. */
#include "cairn/watchdog.h"

#include "cairn/clock.h"
#include "cairn/error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct watchdog {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    double fixed, floor, limit; /* seconds */
    double allow;               /* watchdog_allow's, until the next progress */
    double last;                /* clock_now() of the last progress */
    char who[96];
    char doing[512];
};

double watchdog_timeout(const struct watchdog *w)
{
    if (w->fixed > 0) return w->fixed;
    double t = w->limit > w->floor ? w->limit : w->floor;
    return w->allow > t ? w->allow : t;
}

/* No progress for the timeout: say where, then end the process at once
 * (exit 3); the launcher sees a failed rank and ends the job. */
static _Noreturn void expire(struct watchdog *w, double idle)
{
    char line[1024];
    int n = snprintf(line, sizeof line,
                     "cairn: %s: watchdog: no progress for %.0f s (watchdog.timeout %.0f s) in %s; "
                     "a peer rank or its node is probably gone: ending the job\n",
                     w->who, idle, watchdog_timeout(w), *w->doing ? w->doing : "start-up");
    if (n > 0) {
        ssize_t ignored = write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)ignored;
    }
    _exit(cairn_exit_code(CAIRN_ERUNTIME));
}

static void *watch(void *arg)
{
    struct watchdog *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        double idle = clock_now() - w->last, left = watchdog_timeout(w) - idle;
        if (left <= 0) expire(w, idle);
        double nap = left < 1 ? left : 1;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)nap;
        until.tv_nsec += (long)((nap - (double)(time_t)nap) * 1e9);
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&w->cv, &w->mu, &until);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int watchdog_start(double timeout, double floor, const char *who, struct watchdog **out)
{
    struct watchdog *w = calloc(1, sizeof *w);
    *out = NULL;
    if (!w) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    w->fixed = timeout;
    w->floor = floor;
    w->last = clock_now();
    snprintf(w->who, sizeof w->who, "%s", who);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->thread, NULL, watch, w) != 0) {
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
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    *wp = NULL;
}

void watchdog_progress(struct watchdog *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->last = clock_now();
    w->allow = 0;
    pthread_mutex_unlock(&w->mu);
}

void watchdog_allow(struct watchdog *w, double seconds)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->allow = seconds;
    pthread_mutex_unlock(&w->mu);
}

void watchdog_doing(struct watchdog *w, const char *fmt, ...)
{
    if (!w) return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&w->mu);
    vsnprintf(w->doing, sizeof w->doing, fmt, ap);
    pthread_mutex_unlock(&w->mu);
    va_end(ap);
}

void watchdog_limit(struct watchdog *w, double seconds)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->limit = seconds;
    pthread_mutex_unlock(&w->mu);
}
