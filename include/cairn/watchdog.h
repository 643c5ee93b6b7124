/* A per-rank watchdog: a thread that ends the process when the rank makes
 * no progress for too long, so a job whose peer died (a node lost, a
 * network cut) fails at once instead of waiting in MPI until Slurm's node
 * timeout.
 *
 * Progress is tracked per lane: the rank's main thread has one, and each
 * thread that runs steps beside it (a parallel branch, a report step) opens
 * its own.  Every lane that is not paused must make progress within the
 * timeout, whatever the others do: a report step that ticks beside a
 * collective hung on a dead peer does not hide it.  Nothing here is a
 * collective.
 *
 * A stopped process is not an idle one: a job suspended by Slurm (SIGSTOP
 * to every process, for any time) goes on when continued.  Lanes are timed
 * on clock_run, from which the watchdog leaves out the stops it sees (a
 * SIGCONT, or its own thread waking a second or more late), and after a
 * SIGCONT every lane starts afresh (peers are continued a little apart).
 * From watchdog_start to watchdog_stop the process has a SIGCONT handler
 * (SA_RESTART). */
#ifndef CAIRN_WATCHDOG_H
#define CAIRN_WATCHDOG_H

#include <stdbool.h>
#include <stddef.h>

struct watchdog;
struct watchdog_lane;

/* Called once on expiry, from the watchdog's thread, with the message (one
 * line, no newline), before the process ends. */
typedef void watchdog_last_words_fn(void *arg, const char *line);
/* Called once on expiry, before the message is formed, with the stuck
 * work's key and the world ranks it waits for (first .. first + n - 1),
 * from the watchdog's thread: writes what those ranks are doing into out
 * (one line, no newline) and returns true, or returns false to leave the
 * usual hint.  It should be bounded (a lost rank cannot answer); should it
 * block all the same, an alarm ends the process after 15 s with the
 * message formed without it. */
typedef bool watchdog_ask_fn(void *arg, const char *key, int first, int n, char *out, size_t size);

/* Start the thread, with its main lane.  timeout > 0: fixed, in seconds;
 * 0: automatic, the larger of floor and the limit watchdog_limit last set.
 * who names the rank in the message ("rank 3 (node2)"); last_words (may be
 * NULL) gets the message on expiry.  Errors: CAIRN_ENOMEM, CAIRN_ERUNTIME
 * (no thread). */
int watchdog_start(double timeout, double floor, const char *who, watchdog_last_words_fn *last_words,
                   void *arg, struct watchdog **out);
/* Stop and free the thread and every lane (accepts NULL, NULLs *w). */
void watchdog_stop(struct watchdog **w);
/* The automatic timeout's current value (ignored with a fixed timeout). */
void watchdog_limit(struct watchdog *w, double seconds);
/* What a stall probably means, for the message (by default "a peer rank
 * or its node is probably gone"). */
void watchdog_hint(struct watchdog *w, const char *why);
/* Who asks the ranks a stuck lane waits for (NULL: nobody; the hint
 * stands).  Waits while an expiry is asking (the process then ends). */
void watchdog_asker(struct watchdog *w, watchdog_ask_fn *ask, void *arg);
/* What this rank's watched lanes do now, for a peer that asks: one line
 * per lane, the main lane first, each "KEY<tab>in DOING" or "KEY<tab>after
 * DOING" (KEY empty when the lane waits for no peer), or "<tab>between
 * steps" when no lane is watched. */
void watchdog_where(struct watchdog *w, char *out, size_t size);

/* The main thread's lane (NULL for a NULL watchdog; every lane function
 * accepts NULL and then does nothing). */
struct watchdog_lane *watchdog_main(struct watchdog *w);
/* A new lane, watched from now on, doing `doing` until told otherwise;
 * NULL if w is NULL or memory is short (the lane is then not watched).
 * Close it (accepts NULL, NULLs *l) before its thread ends. */
struct watchdog_lane *watchdog_lane_open(struct watchdog *w, const char *doing);
void watchdog_lane_close(struct watchdog_lane **l);
/* Progress on the lane: its clock starts again (and a paused lane is
 * watched again); its work has ended: a stop now is "after" it, and
 * waits for no peer until the next watchdog_doing. */
void watchdog_progress(struct watchdog_lane *l);
/* The lane waits for other lanes (a join): not watched until its next
 * progress. */
void watchdog_pause(struct watchdog_lane *l);
/* The lane begins new work (shown if it stops there); printf-style.  It
 * waits for no peer until watchdog_peers says otherwise. */
void watchdog_doing(struct watchdog_lane *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The world ranks the lane's current work waits for: first .. first + n -
 * 1 (n = 0: none, the work is local).  A peer is in the same work when
 * one of its lanes has the same key (NULL: the doing text; extensions
 * whose groups run different ops in one step pass a coarser key). */
void watchdog_peers(struct watchdog_lane *l, int first, int n, const char *key);
/* The lane may take this much longer than the timeout until its next
 * progress: for work whose length is known not from earlier steps but
 * from its size (a checkpoint).  Added to a fixed timeout too. */
void watchdog_allow(struct watchdog_lane *l, double seconds);

#endif
