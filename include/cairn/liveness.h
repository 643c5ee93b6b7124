/* A liveness check beside the watchdog: the ranks form a ring, each sends
 * its successor a heartbeat every second from a thread of its own (a rank
 * busy in an op or waiting in a collective still beats), and each listens
 * for its predecessor.  When a predecessor has been silent for `silence`
 * seconds (its process, its node or the network to it is gone), the rank
 * says so and ends its process with exit 3, and the launcher ends the
 * rest: a lost node is noticed by cairn within about `silence`, whatever
 * Slurm's node timeout.  One message each way per rank and second, on a
 * communicator of its own; nothing grows with the number of ranks. */
#ifndef CAIRN_LIVENESS_H
#define CAIRN_LIVENESS_H

#include <mpi.h>

struct liveness;

/* Called once, from the liveness thread, with the message (one line, no
 * newline), before the process ends with exit 3. */
typedef void liveness_lost_fn(void *arg, const char *line);

/* Collective on world: start the ring (*out NULL, and no thread, if
 * silence <= 0, world has one rank, or MPI lacks MPI_THREAD_MULTIPLE).
 * who names this rank, hosts[r] world rank r's host.  Errors:
 * CAIRN_EMPI, CAIRN_ENOMEM, CAIRN_ERUNTIME (no thread). */
int liveness_start(MPI_Comm world, double silence, const char *who, const char *const *hosts,
                   liveness_lost_fn *lost, void *arg, struct liveness **out);
/* Collective on world: the ranks keep beating until all have arrived,
 * then stop (accepts NULL, NULLs *l). */
void liveness_stop(struct liveness **l);
/* This rank's ring alone, at once (not collective): when starting failed
 * on some rank, so that no barrier waits for it (accepts NULL). */
void liveness_drop(struct liveness **l);

#endif
