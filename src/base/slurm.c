/* Slurm: job identity, launch checks, end time, requeue (include/cairn/slurm.h). */
#include "cairn/slurm.h"

#include "cairn/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *env(const char *name) { return getenv(name) ? getenv(name) : ""; }

void slurm_job_read(struct slurm_job *s)
{
    *s = (struct slurm_job){.present = *env("SLURM_JOB_ID") != '\0'};
    snprintf(s->array_job, sizeof s->array_job, "%s", env("SLURM_ARRAY_JOB_ID"));
    snprintf(s->array_task, sizeof s->array_task, "%s", env("SLURM_ARRAY_TASK_ID"));
    if (*s->array_job && *s->array_task)
        snprintf(s->id, sizeof s->id, "%s_%s", s->array_job, s->array_task);
    else
        snprintf(s->id, sizeof s->id, "%s", env("SLURM_JOB_ID"));
    s->restarts = atoi(env("SLURM_RESTART_COUNT"));
    snprintf(s->nodes, sizeof s->nodes, "%s", env("SLURM_JOB_NODELIST"));
    s->n_nodes = atoi(env("SLURM_JOB_NUM_NODES"));
    s->launcher = *env("OMPI_COMM_WORLD_SIZE") ? "mpirun" : *env("SLURM_STEP_ID") ? "srun" : "none";
}

int slurm_launch_check(void)
{
    if (!*env("SLURM_STEP_ID") || *env("OMPI_COMM_WORLD_SIZE") || *env("PMIX_RANK")) return 0;
    const char *why = NULL;
    if (*env("PMI_FD") || *env("PMI_RANK"))
        why = "cairn was started by srun --mpi=pmi2, which this Open MPI cannot use (it has no "
              "Slurm PMI2 support); launch it with srun --mpi=pmix, or with mpirun inside the "
              "allocation";
    else if (atoi(env("SLURM_STEP_NUM_TASKS")) > 1)
        why = "cairn was started by srun without an MPI plugin, so every rank would run alone; "
              "launch it with srun --mpi=pmix, or with mpirun inside the allocation";
    if (!why) return 0;
    if (atoi(env("SLURM_PROCID")) == 0) fprintf(stderr, "cairn: %s\n", why);
    return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s", why);
}

/* One line of a Slurm client command's output ("" if it fails). */
static void query(const char *cmd, char *out, size_t size)
{
    out[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (!p) return;
    if (!fgets(out, (int)size, p)) out[0] = '\0';
    pclose(p);
    out[strcspn(out, "\n")] = '\0';
}

double slurm_kill_wait(const struct slurm_job *s)
{
    char out[128];
    if (!s->present) return 0;
    query("timeout 20 scontrol show config 2>/dev/null | sed -n 's/^KillWait *= *\\([0-9]*\\).*/\\1/p'",
          out, sizeof out);
    return atof(out);
}

double slurm_end_time(const struct slurm_job *s)
{
    char cmd[256], out[128];
    struct tm tm = {0};
    if (!s->present) return 0;
    snprintf(cmd, sizeof cmd, "timeout 20 squeue -h -j %s -o %%e 2>/dev/null", s->id);
    query(cmd, out, sizeof out);
    if (!strptime(out, "%Y-%m-%dT%H:%M:%S", &tm)) return 0; /* "N/A", "Unknown", or no answer */
    tm.tm_isdst = -1;
    return (double)mktime(&tm);
}

void slurm_job_state(const struct slurm_job *s, char *state, size_t size, bool *requeueable)
{
    char cmd[256], out[512] = "";
    const char *p;
    state[0] = '\0';
    *requeueable = false;
    if (!s->present) return;
    snprintf(cmd, sizeof cmd,
             "timeout 20 scontrol -o show job %s 2>/dev/null | grep -o -e 'JobState=[A-Z_]*' "
             "-e 'Requeue=[01]' | tr '\\n' ' '", s->id);
    query(cmd, out, sizeof out);
    if ((p = strstr(out, "JobState="))) snprintf(state, size, "%.*s", (int)strcspn(p + 9, " "), p + 9);
    *requeueable = strstr(out, "Requeue=1") != NULL;
}

int slurm_requeue(const struct slurm_job *s)
{
    char cmd[256], out[512];
    /* Slurm answers a requeue by sending TERM to every process of the job,
     * this command too: it ignores TERM so that its answer gets back
     * (scontrol gives up by itself after Slurm's MessageTimeout). */
    snprintf(cmd, sizeof cmd, "trap '' TERM; scontrol requeue %s 2>&1; echo \"exit $?\"", s->id);
    FILE *p = popen(cmd, "r");
    if (!p) return cairn_err_errno(CAIRN_ERUNTIME, __FILE__, __LINE__, "cannot run scontrol");
    size_t n = fread(out, 1, sizeof out - 1, p);
    pclose(p);
    out[n] = '\0';
    if (strstr(out, "exit 0")) return 0;
    out[strcspn(out, "\n")] = '\0';
    return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "scontrol requeue %s: %s", s->id, out);
}
