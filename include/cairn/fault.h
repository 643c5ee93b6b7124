/* Fault injection for the regression suite (documented in cairn(1) under
 * ENVIRONMENT; never set in production).  CAIRN_FAULT holds
 *   KIND:WHAT:RANK[:EPOCH]
 * op:NAME:R[:E]    op NAME fails on world rank R (in epoch E)
 * kill:POINT:R[:E] world rank R kills itself with SIGKILL at POINT
 *                  (checkpoint commit points, see ckpt.c)
 * signal:SIG:R[:E] world rank R sends itself SIG (USR1, TERM, ...) after
 *                  the first step of an epoch (epoch E), as a
 *                  preemption would
 * clock:S:R[:E]    after the first step of an epoch (epoch E), world rank
 *                  R's clock, as the time-limit check reads it, runs S
 *                  seconds ahead: a time limit that comes at a known step,
 *                  whatever the machine's speed
 * fill:POINT:R[:E] world rank R fills the checkpoint directory's file
 *                  system (a file "fill.ballast" there) at POINT
 * pause:POINT:R[:E] world rank R stops for good at POINT, after saying so
 *                  on stderr: a test then knows a save is in flight
 * slow:POINT[@S]:R[:E] world rank R waits S seconds (FAULT_SLOW_SECONDS
 *                  by default) at POINT: a save that is slow but healthy
 * freeze:POINT:R[:E] world rank R's whole process stops (SIGSTOP) at
 *                  POINT: there but silent, as behind a cut network
 * busy:NAME:R[:E]  op NAME never ends on world rank R, which still shows
 *                  progress: a late rank the others wait for, alive
 * await:NAME:R[:E] op NAME waits on world rank R, before it runs, until
 *                  a preemption signal has come (saying so on stderr): a
 *                  test then signals a run surely in the middle of an
 *                  epoch, whatever the machine's speed
 * hold:POINT:R[:E] world rank R's background save (checkpoint.async)
 *                  waits at POINT until the run waits for it: a save
 *                  surely in flight, whatever the machine's speed
 * nothread:NAME:R[:E] world rank R cannot start thread NAME (writer: the
 *                  background save's, and it does without it, as when
 *                  the system has no thread to give; liveness: the
 *                  heartbeat ring's, at start-up)
 * mdc:default:0   checkpoint files keep HDF5's default 256 KiB of dirty
 *                  metadata, not ckpt_write.c's 32 MiB (every rank alike),
 *                  so a model of many parameters writes metadata before
 *                  the file is allocated: the path past 32 MiB */
#ifndef CAIRN_FAULT_H
#define CAIRN_FAULT_H

#include <stdbool.h>
#include <stdint.h>

enum fault_kind { FAULT_OP, FAULT_KILL, FAULT_SIGNAL, FAULT_CLOCK, FAULT_FILL, FAULT_PAUSE, FAULT_SLOW,
                  FAULT_FREEZE, FAULT_BUSY, FAULT_HOLD, FAULT_NOTHREAD, FAULT_AWAIT, FAULT_MDC };
enum { FAULT_SLOW_SECONDS = 3 };

enum { FAULT_MAX = 4 }; /* faults in one CAIRN_FAULT, comma-separated */

struct fault_one {
    enum fault_kind kind;
    char what[64];
    int rank;
    int64_t epoch; /* -1: any */
    double seconds; /* slow: how long */
};

struct fault {
    int n;
    struct fault_one v[FAULT_MAX];
};

/* Parse the environment variable's value (NULL or "" means no fault): one
 * fault, or up to FAULT_MAX separated by commas (a save held in flight and
 * a preemption signal, say).  Returns 0 or CAIRN_EINPUT with a message. */
int fault_parse(const char *spec, struct fault *f);
/* True if op `name` should fail on this rank now. */
bool fault_op(const struct fault *f, int rank, const char *name, int64_t epoch);
/* True if op `name` should never end on this rank now (busy:). */
bool fault_busy(const struct fault *f, int rank, const char *name, int64_t epoch);
/* True if op `name` should wait for a preemption signal on this rank now
 * (await:). */
bool fault_await(const struct fault *f, int rank, const char *name, int64_t epoch);
/* At a named point of a checkpoint save in directory dir: SIGKILL this
 * process, fill dir's file system or stop for good, if the fault names
 * this point, rank and epoch. */
void fault_point(const struct fault *f, int rank, const char *point, int64_t epoch,
                 const char *dir);
/* True if a background save should wait at this point (hold:), which
 * the checkpoint layer does. */
bool fault_hold(const struct fault *f, int rank, const char *point, int64_t epoch);
/* True if thread `name` should not start on this rank now (nothread:). */
bool fault_nothread(const struct fault *f, int rank, const char *name, int64_t epoch);
bool fault_mdc(const struct fault *f); /* mdc:default:0 */
/* Seconds this rank's clock runs ahead after step `step` of epoch `epoch`
 * (0 if none). */
double fault_clock(const struct fault *f, int rank, int64_t epoch, int64_t step);
/* After step `step` of epoch `epoch`: raise the fault's signal if it names
 * this rank and epoch and this is the epoch's first step.  Epoch 0, step 1
 * is start-up, named only explicitly (signal:SIG:RANK:0). */
void fault_signal(const struct fault *f, int rank, int64_t epoch, int64_t step);

#endif
