/* A per-rank watchdog: a thread that ends the process when the rank makes
 * no progress for too long, so a job whose peer died (a node lost, a
 * network cut) fails at once instead of waiting in MPI until Slurm's node
 * timeout.  The rank reports progress (a step, a phase, a checkpoint) and
 * what it is doing (phase, task, op, group); neither is a collective. */
#ifndef CAIRN_WATCHDOG_H
#define CAIRN_WATCHDOG_H

struct watchdog;

/* Start the thread.  timeout > 0: fixed, in seconds; 0: automatic, the
 * larger of floor and the limit watchdog_limit last set.  who names the
 * rank in the message ("rank 3 (node2)").  Errors: CAIRN_ENOMEM,
 * CAIRN_ERUNTIME (no thread). */
int watchdog_start(double timeout, double floor, const char *who, struct watchdog **out);
/* Stop and free the thread (accepts NULL, NULLs *w). */
void watchdog_stop(struct watchdog **w);
/* Progress: the clock starts again. */
void watchdog_progress(struct watchdog *w);
/* What the rank does now (shown if it stops there); printf-style. */
void watchdog_doing(struct watchdog *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The automatic timeout's current value (ignored with a fixed timeout). */
void watchdog_limit(struct watchdog *w, double seconds);
/* The automatic timeout is at least this until the next progress: for
 * work whose length is known not from earlier steps but from its size. */
void watchdog_allow(struct watchdog *w, double seconds);
/* The timeout now in force, in seconds. */
double watchdog_timeout(const struct watchdog *w);

#endif
