/* One checkpoint file: the job's persistent state in plain HDF5.
 *
 * Layout (documented in cairn-job(5)):
 *   /                      attributes format_version, job_name, digest,
 *                          settings, epoch, step, done, seed, world_size,
 *                          layout, cairn_version,
 *                          checksum_alg; blas_kernels when the
 *                          writer gave it (not checked, not in the
 *                          metadata checksum: older files lack it)
 *   /groups/GROUP          attributes ranks, first_rank
 *   /groups/GROUP/BLOB     one dataset per blob init created, with
 *                          attributes dist and checksum:
 *                            replicated  the value, written by group rank 0
 *                            sharded     the global tensor; each rank writes
 *                                        its block of rows
 *                            per-rank    [ranks, ...]: row r is rank r's
 *
 * Writes are collective over the job's world (MPI-IO, collective
 * transfers); reads are by hyperslab, each rank reading what it owns under
 * the current layout.  Every dataset carries a cairn-mix64 checksum that
 * is verified on every read. */
#ifndef CAIRN_CKPT_FILE_H
#define CAIRN_CKPT_FILE_H

#include "cairn/op.h"
#include "cairn/tensor.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#define CAIRN_CKPT_FORMAT 2

struct plan;
struct strbuf;

/* Who writes or reads a checkpoint, and what: the persistent blobs of a
 * plan's groups, and this rank's tensors of them.  The runner builds one
 * from its layout and workspace; a unit test builds one on MPI_COMM_SELF. */
struct ckpt_view {
    const struct plan *plan; /* groups, ranks, blobs (the persistent ones are saved) */
    MPI_Comm comm;           /* every rank of the plan, ranked as in it */
    int rank;
    int group;               /* this rank's group, -1 on a spare rank */
    MPI_Comm group_comm;     /* over the group (MPI_COMM_NULL on a spare) */
    int group_rank, group_size;
    struct tensor **tensors; /* this rank's tensor of each blob of its group, by blob id */
    /* a save's file layout (checkpoint.stripe_count, stripe_size, align;
     * job.h): MPI-IO striping hints, and where the datasets start */
    int64_t stripe_count, stripe_size, align;
    /* optional: the BLAS kernels the ranks run (blas_kernel.h), written as
     * attribute blas_kernels: the same text on every rank */
    const char *blas_kernels;
    /* fault.h's mdc: HDF5's default dirty-metadata threshold (the same on
     * every rank) */
    bool small_mdc;
    /* optional: called at the fault points of a save (fault.h) */
    void (*fault)(void *arg, const char *point, int64_t epoch, const char *dir);
    void *fault_arg;
};

/* The runner's own state. */
struct ckpt_meta {
    int64_t epoch; /* epochs completed */
    int64_t step;  /* steps completed in the next epoch (0 at an epoch boundary) */
    int done;      /* a stop blob held after this epoch: a resume goes to download */
};

/* This rank's part of one save or load. */
struct ckpt_io {
    double seconds;
    uint64_t bytes;
    char layout_change[256]; /* a read: "world 6 -> 4 ranks, ps 4 -> 2", "" if none */
    bool unreserved;         /* a write, rank 0: the file system could not reserve its space */
    char blas_kernels[1024]; /* a read: the file's blas_kernels (truncated), "" if it has none */
    int partners;            /* a node-local read: the parts taken from partner copies ... */
    char partner_ranks[1024]; /* ... and their ranks, "2, 5" */
};

/* The state-defining settings of a plan, one "key=value" per line: the
 * seed and every persistent blob's type, shape and distribution. */
int ckpt_settings(const struct plan *p, struct strbuf *out);

/* A settings text (a job's or a checkpoint's) as it is compared with the
 * job of plan p: of a family's groups (struct group.family) only the
 * job's first one is kept, the others' lines dropped where they say what
 * the first one's say.  Two texts fold alike when one checkpoint fits
 * both jobs: a job may have more or fewer groups of a family than the
 * checkpoint. */
int ckpt_settings_fold(const char *text, const struct plan *p, struct strbuf *out);
/* The group of p (by index) a checkpoint's group `name` stands for: the
 * group of that name, else the first group of the family it belongs to
 * (FAMILY<digits>), else -1. */
int ckpt_family_group(const struct plan *p, const char *name);

/* Write v's persistent blobs to path.  Collective on v->comm; returns
 * the same result on every rank.  Fault points "allocate" and "write"
 * (between datasets). */
int ckpt_file_write(const struct ckpt_view *v, const char *path, const struct ckpt_meta *m,
                    struct ckpt_io *io);

/* Load v's persistent blobs from path into v's tensors, verifying every
 * checksum.  Collective on v->comm; the same result on every rank:
 * CAIRN_EINPUT if the checkpoint is of other settings or cannot be laid out
 * on these ranks (the message says why), CAIRN_ECORRUPT if it is damaged. */
int ckpt_file_read(const struct ckpt_view *v, const char *path, struct ckpt_meta *m,
                   struct ckpt_io *io);

/* The "meta_checksum" root attribute of a checkpoint with this position,
 * seed, world size and settings text, whose groups have ranks(group, arg)
 * ranks, as 16 hex digits.  For tools that write checkpoints (the fuzz
 * target).  Errors: CAIRN_ECORRUPT if the settings do not parse. */
int ckpt_file_meta_checksum(const struct ckpt_meta *m, int64_t seed, int64_t world_size,
                            const char *settings, int64_t (*ranks)(const char *group, void *arg),
                            void *arg, char out[17]);

/* Serial: the loader's own validation of path (every attribute, the
 * metadata checksum, every dataset's type, shape and checksum), one line
 * per verified dataset to out (if not NULL).  With a job's plan, also
 * that the checkpoint fits that job (ckpt_settings_fold).  Returns 0,
 * CAIRN_ECORRUPT naming what is damaged, or CAIRN_EINPUT (another format,
 * or other settings). */
int ckpt_file_verify(const char *path, const struct plan *job, FILE *out);

/* Serial: copy blobs ("group/blob") of a checkpoint, verified, into a new
 * file out (datasets /group/blob with their attributes). */
int ckpt_file_extract(const char *path, const char *const *blobs, int n, const char *out);

/* Serial, thread-safe: rank `rank` of `size`'s part of one blob of a
 * checkpoint (its balanced block of rows if the blob is sharded, all of it
 * if replicated) into t, with the partial checksum of what was read and the
 * stored checksum of the whole, for the caller to verify.  *dist receives
 * the blob's distribution.  Errors: CAIRN_EINPUT (no such blob, or a
 * per-rank one), CAIRN_ECORRUPT. */
int ckpt_file_read_part(const char *path, const char *group, const char *blob, int rank,
                        int size, struct tensor *t, uint64_t *partial, uint64_t *stored,
                        enum dist *dist);

#endif
