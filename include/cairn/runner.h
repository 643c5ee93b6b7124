/* The job runner: init, the epoch loop with its stop conditions, download
 * and exit, on every rank of the job. */
#ifndef CAIRN_RUNNER_H
#define CAIRN_RUNNER_H

#include "cairn/ckpt.h"

#include <mpi.h>
#include <stdint.h>

struct plan;

struct run_opts {
    const char *run_dir; /* created if missing; holds the log, metrics and checkpoints */
    struct resume_opts resume;
    bool no_requeue; /* never ask Slurm to requeue after a preemption */
};

/* Run the analyzed plan: resume from a checkpoint or run init, then the
 * epochs (checkpointing as the job says), upload, download and exit.
 * Collective on world, whose size must be the plan's nranks.  Returns 0
 * with *epochs = the number of epochs the job has run in all, or an
 * error every rank agrees on (its message is the current error message;
 * the caller's rank 0 reports it).  CAIRN_EPREEMPTED: a preemption signal
 * or the time limit stopped the job at a step boundary after a committed
 * checkpoint (and, under Slurm, a requeue request); rerunning continues.
 * Rank 0 has said so on stderr already, before the requeue, which may end
 * the process.
 * Failures of single ops abort the job (see exec.h).  Once the run has
 * started (a refusal at start-up changes nothing in the run directory),
 * rank 0 leaves how it ended in RUN_DIR/exit_status (see cairn(1)). */
int runner_run(MPI_Comm world, const struct plan *p, const struct run_opts *o, int64_t *epochs);

#endif
