/* A rank's guards, owned by the runner: its watchdog (watchdog.h) and the
 * liveness ring beside it (liveness.h).  When both run, a rank whose
 * watchdog fires asks the ranks its stuck work waits for what they do, over
 * the ring's communicator and for a few seconds at most, and its message
 * names those that are elsewhere or silent, with their hosts. */
#ifndef CAIRN_GUARD_H
#define CAIRN_GUARD_H

#include "cairn/placement.h"

#include <stddef.h>

struct runtime;

/* Collective on the layout's world: start the watchdog, then the ring
 * (per the job's watchdog settings).  Returns 0 or an agreed error. */
int guard_start(struct runtime *rt);
/* Collective: the main lane is no longer watched, the ring stops once
 * every rank is here; the watchdog stays until guard_end. */
void guard_quiesce(struct runtime *rt);
/* Before a collective over the world outside any op (a barrier, an
 * agreement): what the main lane waits in, and that every rank is in it. */
void guard_all(struct runtime *rt, const char *what);
/* Not collective: stop whatever still runs (accepts a half-started
 * runtime). */
void guard_end(struct runtime *rt);

/* The roll call's finding (not collective; pure): a stuck work (key) on
 * rank me waits for ranks first .. first + all - 1, of which the first n
 * were asked; answers[i] is rank first + i's answer (watchdog_where's
 * text) or NULL (silent); hosts[r] names rank r's host.  Writes one line
 * into out: the ranks not in this work, and, when all > n, the ranks
 * that were not asked, about which it concludes nothing. */
void guard_roll_text(const char (*hosts)[PLACEMENT_HOST_MAX], int me, const char *key, int first, int all,
                     int n, char *const *answers, char *out, size_t size);

#endif
