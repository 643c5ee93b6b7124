/* The node-local tier as a ckpt_tier (include/cairn/ckpt_tier.h): the
 * parts and partner copies (ckpt_local.c) committed by a manifest in the
 * shared directory's local/ folder, which its index lists; node-local
 * storage is small, so each commit drops the checkpoint before.  Fault
 * points: local (ckpt_local_write) and local_index (rank 0). */
#include "cairn/ckpt_local.h"
#include "cairn/ckpt_tier.h"
#include "ckpt_priv.h"

#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "ckpt-e000003": the node-local name of m's position (its file's, less
 * ".h5"). */
static void local_name(const struct ckpt_meta *m, char *out, size_t size)
{
    ckpt_file_name(m->epoch, m->step, out, size);
    char *dot = strrchr(out, '.');
    if (dot) *dot = '\0';
}

/* Every rank's part on its node and the partner copies; rank 0 keeps
 * what the manifest is to say of each part. */
static int local_write(struct ckpt_tier *t, const struct ckpt_view *v, const struct ckpt_meta *m,
                       struct ckpt_io *io)
{
    int rc = 0, size = v->plan->nranks;
    char name[256];
    struct ckpt_local_part mine = {0};
    local_name(m, name, sizeof name);
    CAIRN_CHECK(ckpt_local_write(v, t->hosts, t->root, name, m, &mine, io));
    free(t->parts);
    t->parts = v->rank == 0 ? calloc((size_t)size, sizeof *t->parts) : NULL;
    CAIRN_CHECK(coll_agree(v->comm, v->rank == 0 && !t->parts ? cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__,
                                                                                "out of memory") : 0));
    CAIRN_CHECK_MPI(MPI_Gather(&mine, 2, MPI_UINT64_T, t->parts, 2, MPI_UINT64_T, 0, v->comm));
cleanup:
    return rc;
}

/* The commit's index edit: the new manifest is the one node-local
 * checkpoint listed; the others' manifests go. */
static int list_alone(struct ckpt_index *idx, struct ckpt_index *gone, void *arg)
{
    const struct ckpt_entry *e = arg;
    for (int i = idx->n - 1; i >= 0; i--)
        if ((idx->v[i].epoch != e->epoch || idx->v[i].step != e->step) && ckpt_index_put(gone, &idx->v[i]) == 0)
            ckpt_index_remove(idx, i);
    return ckpt_index_put(idx, e);
}


/* Rank 0, once every part and partner copy is durable: the manifest,
 * then the index lists it. */
static int local_commit(struct ckpt_tier *t, const struct ckpt_view *v, const struct ckpt_meta *m)
{
    int rc = 0;
    char name[256], path[4400] = "";
    bool listed = false, wrote = false;
    struct ckpt_local_manifest man = {.meta = *m, .world = v->plan->nranks, .parts = t->parts};
    struct ckpt_entry e = {.epoch = m->epoch, .step = m->step, .ok = true};
    char shared[4400]; /* the fault point names the shared directory, as the shared tier's do */
    snprintf(shared, sizeof shared, "%s", t->dir);
    if (strrchr(shared, '/')) *strrchr(shared, '/') = '\0';
    struct tier_at at = {.v = v, .epoch = m->epoch, .dir = shared};
    struct ckpt_index_faults faults = {.at = ckf_tier_at, .arg = &at, .written = "local_index"};
    local_name(m, name, sizeof name);
    snprintf(man.blas_kernels, sizeof man.blas_kernels, "%s", t->kernels ? t->kernels : "");
    snprintf(man.root, sizeof man.root, "%s", t->root);
    snprintf(e.file, sizeof e.file, "%s", name);
    for (int r = 0; r < man.world; r++) e.bytes += (int64_t)t->parts[r].bytes;
    CAIRN_CHECK(ckpt_local_describe(v->plan, &man));
    CAIRN_CHECK(fsx_mkdir_p(t->dir));
    CAIRN_CHECK(fsx_join(path, sizeof path, t->dir, name));
    CAIRN_CHECK(ckpt_local_manifest_write(path, &man));
    wrote = true;
    CAIRN_CHECK(ckpt_index_update(t->dir, list_alone, &e, &faults, &listed));
cleanup:
    if (rc && wrote && !listed) unlink(path);
    ckpt_local_manifest_free(&man); /* frees t->parts */
    t->parts = NULL;
    return rc;
}

/* *arg: how many it unlisted. */
static int unlist_all(struct ckpt_index *idx, struct ckpt_index *gone, void *arg)
{
    *(int *)arg = idx->n;
    if (!idx->n) return CKPT_INDEX_KEEP;
    *gone = *idx;
    *idx = (struct ckpt_index){0};
    return 0;
}

/* After a commit, every node keeps m's parts alone; without m (a shared
 * checkpoint at a stop supersedes them all), rank 0 unlists every
 * node-local checkpoint (the index first, then the manifests) and every
 * node of this run removes its tree. */
static int local_prune(struct ckpt_tier *t, const struct ckpt_view *v, const struct ckpt_meta *m)
{
    char name[256];
    int gone = 0;
    if (m) local_name(m, name, sizeof name);
    if (!m && v->rank == 0 && ckpt_index_update(t->dir, unlist_all, &gone, NULL, NULL)) gone = 0;
    ckpt_local_prune(v, t->hosts, t->root, m ? name : NULL);
    return gone;
}

/* Rank 0 reads the manifest, every rank gets it, and the parts go where
 * they belong: to the same ranks, or re-split onto another layout. */
static int local_read(struct ckpt_tier *t, const struct ckpt_view *v, const struct ckpt_entry *e,
                      struct ckpt_meta *m, struct ckpt_io *io)
{
    int rc = 0;
    char path[4400];
    struct ckpt_local_manifest man = {0};
    bool root = v->rank == 0;
    int rc0 = fsx_join(path, sizeof path, t->dir, e->file);
    if (rc0 == 0 && root) rc0 = ckpt_local_manifest_read(path, &man);
    CAIRN_CHECK(coll_agree(v->comm, rc0));
    CAIRN_CHECK(ckpt_local_manifest_bcast(&man, v->comm));
    CAIRN_CHECK(ckpt_local_read(v, t->hosts, t->root, e->file, &man, io));
    *m = man.meta;
    snprintf(io->blas_kernels, sizeof io->blas_kernels, "%s", man.blas_kernels);
cleanup:
    ckpt_local_manifest_free(&man);
    return rc;
}

const struct ckpt_tier_ops ckpt_tier_local = {
    .name = "node-local",
    .write = local_write,
    .commit = local_commit,
    .prune = local_prune,
    .read = local_read,
    .extract = ckpt_local_extract,
    .verify = ckpt_local_verify,
};
