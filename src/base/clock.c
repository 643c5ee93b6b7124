/* The clock; see include/cairn/clock.h. */
#include "cairn/clock.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* Process-wide, as a stop is: integers, so that a signal handler can add
 * to them without a lock. */
static _Atomic int64_t stopped_ns;
static atomic_long stops;

double clock_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

double clock_run(void) { return clock_now() - (double)atomic_load(&stopped_ns) / 1e9; }

void clock_stopped(double seconds)
{
    if (seconds > 0) atomic_fetch_add(&stopped_ns, (int64_t)(seconds * 1e9));
}

void clock_continued(void) { atomic_fetch_add(&stops, 1); }

long clock_stops(void) { return atomic_load(&stops); }

void clock_sleep(double seconds)
{
    if (seconds <= 0) return;
    struct timespec t = {.tv_sec = (time_t)seconds};
    t.tv_nsec = (long)((seconds - (double)t.tv_sec) * 1e9);
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}
