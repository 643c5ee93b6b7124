/* What a running rank knows: its plan, communicators, blobs, log, and where
 * the job is.  Owned by the runner; ops see it through their exec context. */
#ifndef CAIRN_RUNTIME_H
#define CAIRN_RUNTIME_H

#include "cairn/fault.h"
#include "cairn/progress.h"
#include "cairn/job.h"
#include "cairn/slurm.h"

#include <stdint.h>

struct plan;
struct layout;
struct workspace;
struct runlog;
struct reader_cache;
struct ckpt_mgr;
struct watchdog;

struct runtime {
    const struct plan *plan;
    struct layout *layout;
    struct workspace *ws;
    struct runlog *log;
    struct reader_cache *readers;
    struct ckpt_mgr *ckpt;
    struct watchdog *watchdog; /* ends this rank if it makes no progress */
    struct liveness *liveness; /* ends it if a peer falls silent */
    double kill_wait;          /* rank 0 under Slurm: its KillWait, seconds (0: unknown) */
    void **ext_state;      /* each plan extension's state on this rank (ext.h) */
    const char *run_dir;
    int64_t steps_per_epoch;
    double steps_seconds; /* the last epoch's steps, without epoch_end */
    struct slurm_job slurm;
    double end_time;      /* the Slurm job's end (Unix seconds; rank 0), 0: none */
    double end_asked;     /* when rank 0 last asked Slurm for it (monotonic s), 0: never */
    long end_stops;       /* clock_stops() then: a suspension since moves the end */
    double longest_step;  /* seconds, for the time-limit margin */
    bool async_hinted;    /* rank 0 suggested checkpoint.async */
    enum phase_id phase;
    int64_t epoch; /* the epoch running (1-based), or the last one run */
    int64_t step;  /* the step running in it (1-based), 0 outside epochs */
    struct fault fault; /* CAIRN_FAULT, for the regression suite */
    struct progress progress; /* rank 0's progress lines */
};

#endif
