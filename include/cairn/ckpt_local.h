/* The node-local checkpoint tier (checkpoint.local): each rank's part of a
 * checkpoint as one raw file on its node's own storage, and a partner copy
 * on another node, after SCR's partner scheme.
 *
 * On every node, under ROOT (checkpoint.local/cairn-KEY, KEY naming the
 * job by its shared checkpoint directory):
 *   ROOT/NAME/rankRRRRRR      rank R's part, written by R
 *   ROOT/NAME/partnerRRRRRR   rank R's part, received from R (R on the
 *                             node before this one, in the order of nodes
 *                             by their first rank)
 * A part: a header (magic, position, identity, rank, per-blob dtype and
 * shape, the checksum of the data), then the blobs' bytes.  A rank's part
 * holds its persistent tensors; a replicated blob is in its group rank 0's
 * part alone, and a load broadcasts it over the group.
 *
 * A part alone commits nothing: the shared directory's manifest
 * (DIR/local/NAME, written by rank 0 once every rank's part and partner
 * copy are durable) lists every part's size and checksum, and DIR/local's
 * index (ckpt_index.h) lists the manifest.  A load takes each part from a
 * copy on the owner's node if there is one, else from any node, verifies
 * it against the manifest (a copy that fails is set aside and the part's
 * other copy tried), and uses the tier only if every part has a copy that
 * verifies. */
#ifndef CAIRN_CKPT_LOCAL_H
#define CAIRN_CKPT_LOCAL_H

#include "cairn/ckpt_file.h"
#include "cairn/placement.h"

#include <mpi.h>
#include <stdint.h>

/* One rank's part as the manifest records it. */
struct ckpt_local_part {
    uint64_t bytes; /* the part file's size */
    uint64_t sum;   /* the checksum of its data */
};

/* A group of the run that wrote a node-local checkpoint. */
struct ckpt_local_group {
    char name[128];
    int first, nranks;
};

/* A node-local checkpoint's manifest. */
struct ckpt_local_manifest {
    struct ckpt_meta meta;
    char identity[17]; /* ckpt_local_identity of the run that wrote it */
    int world;
    struct ckpt_local_part *parts; /* world entries */
    char blas_kernels[1024]; /* the writer's BLAS kernels (blas_kernel.h); "" if it named none */
    /* written since the parts re-split ("" / NULL / 0 in older manifests):
     * the writer's node-local directory, settings and groups */
    char root[4400];
    char *settings;
    struct ckpt_local_group *groups;
    int n_groups;
};

/* The state a part must match: settings, group layout and world size,
 * as 16 hex digits. */
int ckpt_local_identity(const struct plan *p, char out[17]);
/* What a manifest says of plan p: its identity, settings and groups. */
int ckpt_local_describe(const struct plan *p, struct ckpt_local_manifest *man);

/* Collective on v->comm: write this rank's part of m's position to
 * root/name and send it to its partner, which writes it beside its own.
 * hosts: every rank's host (one node: no partner copies).  *mine: what
 * the manifest is to say of this rank's part.  The same result on every
 * rank.  io: this rank's bytes and seconds.  Fault point "local" (every
 * part written, before the partner copies). */
int ckpt_local_write(const struct ckpt_view *v, const char (*hosts)[PLACEMENT_HOST_MAX],
                     const char *root, const char *name, const struct ckpt_meta *m,
                     struct ckpt_local_part *mine, struct ckpt_io *io);

/* Collective on v->comm: load the checkpoint root/name that man describes
 * (every rank passes the same manifest) into v's tensors, on the ranks
 * that wrote it or, re-split, on another layout of the same settings
 * (ckpt_settings_fold).  io: this rank's bytes and seconds, the layout
 * change, and the parts that came from partner copies.  Nothing is
 * changed unless every part is found and verifies; a copy that does not
 * is set aside for the part's other copy.  Errors (the same on every
 * rank): CAIRN_EINPUT (of another layout or settings), CAIRN_ENOCKPT (a
 * part on no node left), CAIRN_ECORRUPT (a part's every copy disagrees
 * with the manifest or fails its checksum: the last one's reason). */
int ckpt_local_read(const struct ckpt_view *v, const char (*hosts)[PLACEMENT_HOST_MAX],
                    const char *root, const char *name, const struct ckpt_local_manifest *man,
                    struct ckpt_io *io);

/* Collective on v->comm: refuse a node-local directory in memory (tmpfs:
 * /dev/shm) that cannot hold what its node will: its ranks' parts of v's
 * state and the partner copies it keeps, twice (a checkpoint and the one
 * before, until the new one commits); this job's tree there counts as
 * room.  setting names the directory for the message.  The same result on
 * every rank: 0, or CAIRN_EINPUT naming the node, what it needs and has
 * (then *short_of_room is true: not some other failure). */
int ckpt_local_check_room(const struct ckpt_view *v, const char (*hosts)[PLACEMENT_HOST_MAX],
                          const char *root, const char *setting, bool *short_of_room);

/* Collective: every node keeps only root/keep (the lowest rank of each
 * node deletes the rest; keep NULL: every checkpoint).  Best effort. */
void ckpt_local_prune(const struct ckpt_view *v, const char (*hosts)[PLACEMENT_HOST_MAX],
                      const char *root, const char *keep);

/* Rank 0: write the manifest at path (atomically).  Errors: CAIRN_EIO. */
int ckpt_local_manifest_write(const char *path, const struct ckpt_local_manifest *man);
/* Read and check a manifest (untrusted).  Errors: CAIRN_EIO, CAIRN_ENOMEM,
 * CAIRN_ECORRUPT naming PATH:LINE. */
int ckpt_local_manifest_read(const char *path, struct ckpt_local_manifest *man);
void ckpt_local_manifest_free(struct ckpt_local_manifest *man);
/* Collective on comm: rank 0's manifest to every rank.  Errors: CAIRN_ENOMEM, CAIRN_EMPI. */
int ckpt_local_manifest_bcast(struct ckpt_local_manifest *man, MPI_Comm comm);

/* Serial: check the node-local checkpoint whose manifest is at path as a
 * load would (each part's copy found under the manifest's directory on
 * this node, header, size and checksum), for job if not NULL; a line per
 * verified part to out.  A part whose copies are all on other nodes is
 * named, not checked ("elsewhere").  0, CAIRN_ECORRUPT or CAIRN_EINPUT. */
int ckpt_local_verify(const char *path, const struct plan *job, FILE *out);
/* Serial: blobs ("group/blob") of the node-local checkpoint whose
 * manifest is at path, each joined whole from the parts found on this
 * node and checked, into a new file out, as ckpt_file_extract writes
 * (attributes epoch, step and seed).  Errors: CAIRN_EINPUT (no such blob,
 * an older manifest), CAIRN_ENOCKPT (a part not on this node),
 * CAIRN_ECORRUPT. */
int ckpt_local_extract(const char *path, const char *const *blobs, int n, const char *out);

#endif
