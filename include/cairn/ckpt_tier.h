/* Checkpoint tiers: the places a job's checkpoints are kept, behind one
 * interface (an ops table, as the op families have).  Two of them:
 *
 *   ckpt_tier_shared  one HDF5 file per checkpoint in the shared
 *                     checkpoint directory DIR, written by every rank at
 *                     once (ckpt_file.h);
 *   ckpt_tier_local   every rank's part on its own node and a partner
 *                     copy on the next, listed by a manifest in DIR/local
 *                     (ckpt_local.h).
 *
 * Each tier lists what it committed in the index of its directory
 * (ckpt_index.h), takes the same view of the state (struct ckpt_view) and
 * loads it on any layout.  The runtime (runtime/ckpt.c) decides when to
 * save and to which tier, has the ranks agree, chooses what to load and
 * falls back; a tier writes, commits, prunes, reads and verifies:
 *
 *   save     write (collective) -> commit (rank 0) -> prune (collective)
 *   resume   the index (rank 0) -> read (collective)
 *   tools    verify, extract (serial)
 *
 * Errors are the same on every rank where the call is collective. */
#ifndef CAIRN_CKPT_TIER_H
#define CAIRN_CKPT_TIER_H

#include "cairn/ckpt_file.h"
#include "cairn/ckpt_index.h"
#include "cairn/placement.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ckpt_local_part;

/* A tier of one job, set up by the runtime. */
struct ckpt_tier {
    const struct ckpt_tier_ops *ops;
    char dir[4400];  /* its index and what it lists: DIR, or DIR/local */
    char root[4400]; /* node-local: this job's directory on every node */
    const char (*hosts)[PLACEMENT_HOST_MAX]; /* every rank's host */
    int64_t keep;                  /* shared: committed checkpoints kept (0: all) */
    int64_t keep_epoch, keep_step; /* never pruned: the one this run resumed */
    const char *kernels;           /* the ranks' BLAS kernels, for a manifest */
    struct ckpt_local_part *parts; /* node-local, rank 0: the parts written, until the commit */
    bool unreserved;               /* shared, rank 0: the last write could not reserve space */
};

struct ckpt_tier_ops {
    const char *name; /* "shared", "node-local" */
    /* Collective on v->comm: write m's position, not yet loadable. */
    int (*write)(struct ckpt_tier *t, const struct ckpt_view *v, const struct ckpt_meta *m,
                 struct ckpt_io *io);
    /* Rank 0, once every rank wrote: make it durable, then list it in the
     * index (fault points: v->fault). */
    int (*commit)(struct ckpt_tier *t, const struct ckpt_view *v, const struct ckpt_meta *m);
    /* Collective, best effort, after a commit: drop what the tier keeps
     * no longer (m NULL: everything it holds).  Returns (rank 0) how many
     * checkpoints it took off the index. */
    int (*prune)(struct ckpt_tier *t, const struct ckpt_view *v, const struct ckpt_meta *m);
    /* Collective: load e (an entry of the tier's index) into v's tensors,
     * on any layout.  Errors: CAIRN_EINPUT (another job, or a layout it
     * cannot be loaded on: nothing changed), CAIRN_ENOCKPT (a part on no
     * node left), CAIRN_ECORRUPT (damaged). */
    int (*read)(struct ckpt_tier *t, const struct ckpt_view *v, const struct ckpt_entry *e,
                struct ckpt_meta *m, struct ckpt_io *io);
    /* Serial: check the checkpoint at path (a file, or a manifest) as its
     * loader would, for job if not NULL; a line per verified piece to out.
     * 0, CAIRN_ECORRUPT or CAIRN_EINPUT, as ckpt_file_verify. */
    int (*verify)(const char *path, const struct plan *job, FILE *out);
    /* Serial: blobs ("group/blob") of the checkpoint at path, verified,
     * whole, into a new HDF5 file out (datasets /group/blob). */
    int (*extract)(const char *path, const char *const *blobs, int n, const char *out);
};

extern const struct ckpt_tier_ops ckpt_tier_shared, ckpt_tier_local;

/* Serial: the tier of the checkpoint at path, by its first bytes: a
 * node-local manifest's, else (a checkpoint file, or anything else) the
 * shared tier's. */
const struct ckpt_tier_ops *ckpt_tier_of(const char *path);

#endif
