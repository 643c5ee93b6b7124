/* Preemption: the signals that ask cairn to save and stop (SIGUSR1 and
 * SIGTERM by default; Slurm's --signal and scontrol requeue send them),
 * and the job's time limit.  A handler only records the signal; the
 * runner acts on it at the next step boundary, where all ranks agree. */
#ifndef CAIRN_PREEMPT_H
#define CAIRN_PREEMPT_H

/* Catch exactly these signals ("USR1", "TERM", "INT", "HUP", "USR2",
 * "XCPU"); the others of that list get their default action back.  The
 * command line installs the defaults before MPI starts, so a signal that
 * comes during start-up is not fatal; the runner then installs the job's
 * own list.  Errors: CAIRN_EINPUT for an unknown name. */
enum { PREEMPT_N_DEFAULT = 2 };
extern const char *const preempt_default_signals[PREEMPT_N_DEFAULT]; /* USR1, TERM */
int preempt_install(const char *const *names, int n);
/* The last preemption signal received, or 0. */
int preempt_signal(void);
/* "USR1" for SIGUSR1, ... */
const char *preempt_signal_name(int sig);
int preempt_signal_number(const char *name); /* 0 if unknown */
/* The names preempt_signal_number knows, for messages: "USR1, USR2, ...". */
extern const char preempt_signal_names[];

#endif
