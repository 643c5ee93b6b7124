/* Progress within a run, for its log (rank 0 writes it): during an epoch,
 * a line at most every `interval` seconds with the step, the rates and the
 * ETA of the epoch and (under stop.max_epochs) of the job; the ETA for the
 * epoch's own line; and under Slurm the time left before the job's limit,
 * with one warning if the job cannot end before it at the measured rate.
 * Rates are measured on this run's steps only (a resumed run starts
 * afresh).  No collective: the lines cost rank 0 a clock read per step. */
#ifndef CAIRN_PROGRESS_H
#define CAIRN_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct runlog;

struct progress {
    double interval;         /* seconds between lines; 0: none */
    int64_t steps;           /* per epoch */
    int64_t max_epochs;      /* 0: no limit known */
    double samples_per_step; /* 0: not known */
    double t0, last;         /* the epoch's start and the last line (monotonic s) */
    int64_t first;           /* the epoch's first step in this run */
    double epoch_seconds;    /* the last whole epoch, steps to its line; 0: none yet */
    bool warned;
};

void progress_init(struct progress *p, double interval, int64_t steps, int64_t max_epochs,
                   double samples_per_step);
/* Epoch e starts at step first (later than 1 after a resume). */
void progress_epoch(struct progress *p, int64_t first, double now);
/* After step s of epoch e: a line if the interval has passed.  left: the
 * seconds until Slurm ends the job, or < 0 for no limit. */
void progress_step(struct progress *p, struct runlog *log, int64_t e, int64_t s, double now, double left);
/* Epoch e has ended: into text, "; job ETA ..." for its line ("" without
 * max_epochs), and the warning about the time limit if it is due. */
void progress_epoch_end(struct progress *p, struct runlog *log, int64_t e, double now, double left,
                        char *text, size_t size);

#endif
