/* The clock; see include/cairn/clock.h. */
#include "cairn/clock.h"

#include <errno.h>
#include <time.h>

double clock_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void clock_sleep(double seconds)
{
    if (seconds <= 0) return;
    struct timespec t = {.tv_sec = (time_t)seconds};
    t.tv_nsec = (long)((seconds - (double)t.tv_sec) * 1e9);
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}
