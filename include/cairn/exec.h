/* Running a task's steps on one rank: ops from the registry, loops,
 * parallel branches (threads, each on its own communicator lane) and report
 * steps (threads on a timer beside their siblings). */
#ifndef CAIRN_EXEC_H
#define CAIRN_EXEC_H

#include <mpi.h>
#include <stdbool.h>

struct runtime;
struct task;
struct op_node;

/* What an op's kernel sees of the job. */
struct exec_ctx {
    struct runtime *rt;
    const struct task *task;
    MPI_Comm comm;  /* the group's communicator for this lane */
    int rank, size; /* in the group */
    bool in_report;
    struct watchdog_lane *lane; /* this thread's progress (watchdog.h) */
};

/* Run t's steps.  Collective over t's group; call only on its ranks.  An op
 * that fails is fatal for the whole job (see runtime_fatal). */
void exec_task(struct runtime *rt, const struct task *t);

/* Abort every rank of the job: print one line naming this rank, its host,
 * where the job is, and the current error message, leave it as the last
 * words (below, of runtime_exit_kind(rc)), then MPI_Abort with the exit
 * code of rc.  Safe from any thread. */
_Noreturn void runtime_fatal(const struct runtime *rt, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Where the job is, for messages: "epoch E step S" or the phase. */
void runtime_where(const struct runtime *rt, char *buf, size_t size);

/* How an exit with error rc reads in exit_status: "input" (bad input),
 * "lost" (MPI failed: a peer or the network may be gone, a rerun may help)
 * or "fatal" (cairn found a cause a rerun cannot fix). */
const char *runtime_exit_kind(int rc);

/* An exit cairn chooses mid-run: `line` (one line, no newline) goes to
 * cairn.log and, unless a rank got there first, RUN_DIR/exit_status reads
 * "CODE KIND: line", so that a batch script and the user learn why.  KIND
 * is runtime_exit_kind's, or "stalled" (the watchdog: a peer or a node may
 * be gone, a rerun may help).  Bounded (a hung file system cannot hold the
 * exit up for more than a few seconds); safe from any thread. */
void runtime_last_words(const struct runtime *rt, int code, const char *kind, const char *line);
/* The same, the line to cairn.log only if log: a rank that ends for a
 * cause another rank found and logged leaves that rank's words. */
void runtime_exit_words(const struct runtime *rt, int code, const char *kind, const char *line, bool log);

#endif
