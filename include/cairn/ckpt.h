/* The checkpoint manager, the runtime's half of checkpointing: when to
 * checkpoint and to which tier, the ranks' agreement, the watchdog's
 * allowances, resume with fallback, and upload.  The tiers themselves
 * (how a checkpoint is written, committed, read) are the storage layer's
 * (ckpt_tier.h).  All functions are collective on the job's world and
 * return the same result on every rank.
 *
 * Commit protocol (after SCR): every rank writes its part of DIR/NAME.tmp;
 * the ranks agree that all succeeded; only then rank 0 fsyncs the file,
 * renames it to DIR/NAME, fsyncs DIR, and adds NAME to DIR/index (itself
 * replaced atomically).  Only checkpoints in the index are ever loaded, so
 * a crash at any instant leaves the previous committed checkpoint as the
 * newest loadable one.  A checkpoint that fails to load is marked bad in
 * the index and the resume falls back to the newest older one that loads.
 * Fault points (CAIRN_FAULT=kill:POINT:RANK[:EPOCH]): write (between
 * datasets, any rank), before_rename, after_rename, index_tmp, after_index
 * (rank 0), and local (every rank's node-local part written, before the
 * partner copies) and local_index (rank 0) of a node-local save;
 * hold:POINT keeps a background save there until the run waits for it.
 *
 * With checkpoint.local, saves go to the node-local tier (ckpt_local.h),
 * and also to the shared directory at a run's first save and then every
 * flush_every epochs; a stop (now) saves there alone.  A resume takes the
 * newest of the two tiers and falls back to the shared one if the
 * node-local one cannot be loaded. */
#ifndef CAIRN_CKPT_H
#define CAIRN_CKPT_H

#include "cairn/ckpt_file.h"

#include <stdbool.h>
#include <stdint.h>

struct runtime;
struct ckpt_spec;

enum resume_mode {
    RESUME_AUTO,   /* the newest committed checkpoint if there is one, else fresh */
    RESUME_LATEST, /* the newest committed checkpoint; none is an error */
    RESUME_NONE,   /* fresh; refuse a directory holding checkpoints unless forced */
    RESUME_EPOCH   /* the checkpoint of one epoch */
};

struct resume_opts {
    enum resume_mode mode;
    int64_t epoch; /* RESUME_EPOCH */
    bool force;    /* RESUME_NONE: delete existing checkpoints */
};

struct ckpt_mgr;

/* Resolve the directory (spec->dir, else RUN_DIR/ckpt) and apply
 * RESUME_NONE's rule.  Errors: CAIRN_EINPUT (refused), CAIRN_EIO. */
int ckpt_open(struct runtime *rt, const struct ckpt_spec *spec, const struct resume_opts *ro,
              struct ckpt_mgr **out);
void ckpt_close(struct ckpt_mgr **c);

/* Load the checkpoint the resume mode asks for into rt's blobs.
 * *resumed is false when the job starts fresh.  Errors: CAIRN_ENOCKPT (no
 * such checkpoint), CAIRN_EINPUT (of other settings or layout: refused,
 * nothing changed), CAIRN_ECORRUPT (the requested epoch is damaged). */
int ckpt_resume(struct ckpt_mgr *c, struct ckpt_meta *m, bool *resumed);

/* Checkpoint m's position if checkpointing is on, after the save in
 * flight (if any) is over (ckpt_wait).  With checkpoint.async and !now,
 * this rank's persistent state is copied and written by a thread of its
 * own while the caller goes on; otherwise it is written and committed
 * before the return.  A failure is a warning and 0 (on_failure = "warn")
 * or an error (on_failure = "abort"); either way no committed checkpoint
 * is touched.  A background save's failure is reported so by the
 * ckpt_wait that ends it. */
int ckpt_save(struct ckpt_mgr *c, const struct ckpt_meta *m, bool now);
/* End the background save in flight, if any: wait for it, log the wait,
 * and take its outcome as ckpt_save would have.  Collective in effect
 * (every rank's writer takes part in the save): call it at the same point
 * on every rank. */
int ckpt_wait(struct ckpt_mgr *c);
/* Collective, once the state is there (after init or a resume) and
 * before training: measure it (ckpt_stop_seconds' estimate before a save
 * is measured) and, with checkpoint.local in memory (tmpfs), refuse when
 * a node cannot hold what the tier will keep there: CAIRN_EINPUT, the
 * same on every rank (ckpt_local_check_room).  A run that resumed a
 * checkpoint is not refused: it warns and saves to the shared directory
 * only. */
int ckpt_ready(struct ckpt_mgr *c, bool resumed);
/* A background save is still being written on this rank (local: the
 * ranks agree on it before they call ckpt_wait without waiting). */
bool ckpt_writing(const struct ckpt_mgr *c);
/* Saves go to the background (checkpoint.async, with MPI_THREAD_MULTIPLE). */
bool ckpt_async(const struct ckpt_mgr *c);

/* Copy the newest committed checkpoint to upload.to, if set. */
int ckpt_upload(struct ckpt_mgr *c);
/* Rank 0, when the run ends in order (it finished, or a preemption stopped
 * it): resuming its checkpoint again is no restart loop (see
 * checkpoint.max_resumes), which counts only runs that died. */
void ckpt_run_ended(struct ckpt_mgr *c);

bool ckpt_enabled(const struct ckpt_mgr *c);
int64_t ckpt_every(const struct ckpt_mgr *c);
double ckpt_longest_save(const struct ckpt_mgr *c); /* seconds, 0 before the first */
/* Seconds a stop needs for its checkpoint (0 before anything is known):
 * the save it writes, the shared file (as measured, or before a shared
 * save was measured, its bytes at a slow file system's pace), after a
 * background save that may be in flight (checkpoint.async: the longest
 * save of any kind). */
double ckpt_stop_seconds(const struct ckpt_mgr *c);
/* The longest time a save held the calling (main) thread: a whole save
 * written there, only the copy of one written in the background (whose
 * writer is watched on a lane of its own); seconds, 0 before the first. */
double ckpt_longest_stall(const struct ckpt_mgr *c);
/* Whether m's position is the one this run last committed or resumed
 * from (false after a save of it failed with on_failure = "warn"). */
bool ckpt_committed_at(const struct ckpt_mgr *c, const struct ckpt_meta *m);
/* Collective: when m's position is committed to the shared directory
 * (ckpt_committed_at), remove every node-local checkpoint, which it
 * supersedes, from the nodes of this run and from the list, as a stop's
 * save does; for a stop whose position was saved there already (a flush),
 * so that no stop save follows.  Best effort; nothing without a node-local
 * tier. */
void ckpt_drop_local(struct ckpt_mgr *c, const struct ckpt_meta *m);
/* Saves go to a node-local tier (checkpoint.local) first. */
bool ckpt_local_tier(const struct ckpt_mgr *c);
const char *ckpt_dir(const struct ckpt_mgr *c);

#endif
