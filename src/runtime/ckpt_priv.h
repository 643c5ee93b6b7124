/* Private to src/runtime: the checkpoint manager's state and what its
 * two halves share (ckpt.c: saving, statistics, upload; ckpt_resume.c:
 * opening and resuming). */
#ifndef CAIRN_RUNTIME_CKPT_PRIV_H
#define CAIRN_RUNTIME_CKPT_PRIV_H

#include "cairn/ckpt.h"
#include "cairn/ckpt_tier.h"
#include "cairn/layout.h"
#include "cairn/runtime.h"
#include "cairn/watchdog.h"

#include <mpi.h>
#include <stdbool.h>

struct ckpt_bg;

/* Who does a save: the main thread over the job's communicators and
 * tensors, or the writer thread (ckpt_bg.h) over its own and the copy. */
struct saver {
    MPI_Comm world, group;
    struct tensor **tensors; /* by blob id */
    struct watchdog_lane *lane;
};

/* The tiers a save goes to (checkpoint.local). */
enum { TIER_SHARED = 1, TIER_LOCAL = 2 };

/* What a save did, for the main thread to take in. */
struct saved {
    double seconds;        /* from its start to its commit */
    double shared_seconds; /* of its shared file alone (0: none written) */
    double bytes;          /* the state's, every rank's together (0: unknown) */
    double rate;           /* bytes per second, 0 if it failed */
    int committed;         /* the tiers it committed */
    int failed;            /* the tiers it tried and did not commit */
};

struct ckpt_mgr {
    struct runtime *rt;
    const struct ckpt_spec *spec;
    struct resume_opts ro;
    char dir[4096];
    struct ckpt_meta last;         /* the position this run last committed or resumed ... */
    bool committed;                /* ... if there is one */
    double longest;
    double longest_shared; /* of saves that wrote the shared file (what a stop writes) */
    double longest_stall;  /* the main thread's part of a save: all of it, or the copy */
    double rate; /* bytes per second of this run's last save (every rank), 0: none yet */
    bool kill_wait_said;
    bool unreserved_said;
    /* checkpoint.async: the writer, and the save it has in flight */
    struct ckpt_bg *bg;
    struct ckpt_meta pending;
    struct saved pending_out;
    struct watchdog_lane *writer_lane; /* the writer's, while it writes */
    int pending_tiers;
    /* the tiers: the shared directory, and with checkpoint.local, this
     * job's directory on every node (local.root: "" without) */
    struct ckpt_tier shared, local;
    bool local_committed; /* this run committed or resumed a node-local checkpoint */
    bool skip_local;   /* a resume found the node-local tier unusable */
    bool flushed;      /* this run committed a shared checkpoint */
    bool local_failed; /* the last node-local save failed: the next one flushes */
    bool local_off;    /* a resumed run whose nodes lack room: shared saves only */
    bool fallback_said;
    double state_bytes; /* every rank's together: at the start, then as each save found it */
};


/* bytes per second of a slow parallel file system (see mgr_watch_io) */
#define CKPT_SLOW_RATE 50e6

static inline bool is_root(const struct ckpt_mgr *c) { return c->rt->layout->rank == 0; }
static inline MPI_Comm world(const struct ckpt_mgr *c) { return c->rt->layout->world; }
static inline const char (*hosts(const struct ckpt_mgr *c))[PLACEMENT_HOST_MAX]
{
    return (const char(*)[PLACEMENT_HOST_MAX])c->rt->layout->hosts;
}

/* The checkpoint files' view of this rank (*tensors: the caller frees). */
int mgr_view(const struct ckpt_mgr *c, struct ckpt_view *v, struct tensor ***tensors);
/* The watchdog's allowance for a save or load of `bytes`, on lane. */
void mgr_watch_io(const struct ckpt_mgr *c, struct watchdog_lane *lane, double bytes);
/* What every rank does now, for the watchdog. */
void mgr_doing(const struct ckpt_mgr *c, struct watchdog_lane *lane, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A load defines every persistent blob of this rank's group. */
void mgr_loaded(const struct ckpt_mgr *c);
/* Collective on world: bytes, time and spread of one save or load, logged. */
int mgr_report_io(struct ckpt_mgr *c, MPI_Comm world, const char *what, const char *metric, const char *file,
                  const struct ckpt_meta *m, const struct ckpt_io *io, double seconds);

#endif
