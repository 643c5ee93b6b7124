/* What cairn needs from Slurm: who this job is, whether and how it was
 * launched, its end time, and a way to requeue it.  Queries run Slurm's
 * client commands (squeue, scontrol) from rank 0; nothing here is
 * collective. */
#ifndef CAIRN_SLURM_H
#define CAIRN_SLURM_H

#include <stdbool.h>
#include <stddef.h>

struct slurm_job {
    bool present;       /* SLURM_JOB_ID is set */
    char id[96];        /* the id scontrol takes: JOB, or ARRAYJOB_TASK for array tasks */
    char array_job[32], array_task[16];
    int restarts;       /* SLURM_RESTART_COUNT, 0 on the first run */
    char nodes[256];    /* SLURM_JOB_NODELIST */
    int n_nodes;        /* SLURM_JOB_NUM_NODES, 0 if unset */
    const char *launcher; /* "srun", "mpirun" or "none" */
};

void slurm_job_read(struct slurm_job *s);

/* Before MPI_Init: an srun that gives Open MPI no PMIx (srun --mpi=pmi2,
 * which Debian's Open MPI cannot use, or srun without an MPI plugin,
 * which would start every rank alone) is refused with one clear line,
 * printed by task 0 only.  Returns 0 or CAIRN_EINPUT. */
int slurm_launch_check(void);

/* Slurm's KillWait (seconds from a job's TERM to its KILL), or 0 if Slurm
 * cannot say. */
double slurm_kill_wait(const struct slurm_job *s);
/* The job's end time (Unix seconds), or 0 if it has none or Slurm cannot say. */
double slurm_end_time(const struct slurm_job *s);
/* The job's state as Slurm sees it ("RUNNING", "PENDING", "CANCELLED",
 * ...; "" if Slurm cannot say) and whether it may be requeued (--requeue,
 * or JobRequeue=1 in slurm.conf). */
void slurm_job_state(const struct slurm_job *s, char *state, size_t size, bool *requeueable);
/* scontrol requeue this job.  Errors: CAIRN_ERUNTIME with scontrol's words. */
int slurm_requeue(const struct slurm_job *s);

#endif
