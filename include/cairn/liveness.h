/* A liveness check beside the watchdog: the ranks form a ring, each sends
 * its successor a heartbeat every second from a thread of its own (a rank
 * busy in an op or waiting in a collective still beats), and each listens
 * for its predecessor.  When a predecessor has been silent for `silence`
 * seconds (its process, its node or the network to it is gone), the rank
 * says so and ends its process with exit 3, and the launcher ends the
 * rest: a lost node is noticed by cairn within about `silence`, whatever
 * Slurm's node timeout.  The heartbeats are UDP datagrams (to the up,
 * non-loopback IPv4 addresses of the successor's host, at most 8), sent
 * and heard by a thread that calls MPI only once a loss is found: a rank
 * whose MPI is held up by a connection to a lost node still beats, so
 * only the lost are named.  The ring thus checks the IP path between the
 * hosts, not MPI's own network.  At start-up every rank waits for its
 * predecessor's first heartbeat, so datagrams that never get through fail
 * the start on every rank with one clear error instead of looking like
 * lost nodes later.  Questions go over MPI, on a communicator of its own;
 * nothing grows with the number of ranks.
 *
 * A loss is reported once: the rank that finds it sends its line to every
 * other rank over MPI, and to its successor with the heartbeats, which
 * passes it on round the ring; each ends at once (exit 3) without a word
 * of its own, its RUN_DIR/exit_status left to that line.  Otherwise its
 * successor would take it, ended for a lost peer, for a lost one itself, and so on round
 * the ring.  O(ranks) messages, once, from the one rank. */
#ifndef CAIRN_LIVENESS_H
#define CAIRN_LIVENESS_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

struct liveness;

/* Called once, from one of the liveness threads, with the message (one line, no
 * newline), before the process ends with exit 3: found, this rank found
 * the loss; else another rank did and sent its line. */
typedef void liveness_lost_fn(void *arg, const char *line, bool found);
/* What this rank does now, for a peer that asks (see liveness_ask). */
typedef void liveness_where_fn(void *arg, char *out, size_t size);

/* Collective on world: start the ring (*out NULL, and no thread, if
 * silence <= 0, world has one rank, or MPI lacks MPI_THREAD_MULTIPLE).
 * who names this rank, hosts[r] world rank r's host; the thread answers
 * peers that ask with where's text (where may be NULL: no answers);
 * threads false: this rank acts as if it could start none (a fault).
 * Waits for the predecessor's first heartbeat, min(silence - 1, 30) s at
 * most; every rank gets the same outcome.  Errors: CAIRN_EMPI,
 * CAIRN_ENOMEM, CAIRN_ERUNTIME (a rank without a UDP socket or its
 * threads, or one that heard no first heartbeat). */
int liveness_start(MPI_Comm world, double silence, const char *who, const char *const *hosts,
                   liveness_lost_fn *lost, liveness_where_fn *where, void *arg, bool threads,
                   struct liveness **out);
/* A roll call (not collective; any thread): ask world ranks first .. first
 * + n - 1, this one aside, what they do now, and wait `wait` seconds
 * (all of it: ranks that ask each other at the same moment all stay to
 * answer), plus at most a second to cancel what did not come.  answers[i] gets rank first + i's text (malloc'ed) or NULL if
 * none came in time: that rank, its node or the network to it is gone.
 * The messages go on the ring's communicator, never on one a collective
 * may be stuck on.  Returns the number of ranks asked (0 for a NULL l). */
int liveness_ask(struct liveness *l, int first, int n, double wait, char **answers);
/* This rank ends for `line` (the ring's finding): every other rank ends
 * too, quietly, as told, rather than take this one for lost (not
 * collective; any thread; bounded; accepts NULL).  The process must end
 * next. */
void liveness_tell(struct liveness *l, const char *line);
/* Collective on world: the ranks keep beating until all have arrived,
 * then stop (accepts NULL, NULLs *l). */
void liveness_stop(struct liveness **l);
/* This rank's ring alone, at once (not collective): when starting failed
 * on some rank, so that no barrier waits for it (accepts NULL). */
void liveness_drop(struct liveness **l);

#endif
