/* The one clock cairn times things with. */
#ifndef CAIRN_CLOCK_H
#define CAIRN_CLOCK_H

/* Seconds on the monotonic clock (for intervals; not wall time).  It runs
 * while the process is stopped (SIGSTOP: a job suspended by Slurm). */
double clock_now(void);
/* Seconds on a clock that stands still while the process is stopped, as
 * far as clock_stopped was told (the watchdog tells it): for how long
 * work took and how long a rank was idle, which a suspension must not
 * change. */
double clock_run(void);
/* The process did not run for `seconds` (async-signal-safe: a SIGCONT
 * handler calls it). */
void clock_stopped(double seconds);
/* A SIGCONT came: the process was stopped, whether or not its time was
 * told (async-signal-safe). */
void clock_continued(void);
/* How many SIGCONTs came: a caller that remembers it learns that the
 * process was stopped since (and that peers may be continued later). */
long clock_stops(void);
/* Sleep the whole interval, resuming after signal handlers. */
void clock_sleep(double seconds);

#endif
