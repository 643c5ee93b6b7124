/* The shared tier: one HDF5 file per checkpoint in the shared checkpoint
 * directory, written by every rank at once (ckpt_file.h), committed by
 * rank 0 after SCR: sync, rename, then list it in the index.  A crash at
 * any instant leaves the previous committed checkpoint the newest
 * loadable one.  Fault points: before_rename, after_rename, index_tmp,
 * after_index (rank 0).  See include/cairn/ckpt_tier.h. */
#include "cairn/ckpt_tier.h"
#include "ckpt_priv.h"

#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fsx.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* "DIR/NAME.tmp" of m's position, the name it is written under. */
static int tmp_path(const struct ckpt_tier *t, const struct ckpt_meta *m, char *name, size_t nsize, char *tmp,
                    size_t tsize)
{
    ckpt_file_name(m->epoch, m->step, name, nsize);
    int rc = fsx_join(tmp, tsize - 4, t->dir, name);
    if (rc == 0) strcat(tmp, ".tmp");
    return rc;
}

/* Rank 0: make the directory and create the file (never through a
 * planted link or FIFO: see fsx_out), for MPI-IO reports a failed open
 * only as "MPI_ERR_OTHER" while errno says why. */
static int probe(const struct ckpt_tier *t, const char *name)
{
    struct fsx_out o;
    char path[4400];
    int rc = fsx_mkdir_p(t->dir);
    if (rc == 0) rc = fsx_join(path, sizeof path, t->dir, name);
    if (rc == 0) {
        rc = fsx_out_begin(&o, path, 0);
        o.made = false; /* left for every rank to write */
        fsx_out_abort(&o);
    }
    return rc;
}

static int shared_write(struct ckpt_tier *t, const struct ckpt_view *v, const struct ckpt_meta *m,
                        struct ckpt_io *io)
{
    char name[256], tmp[4400];
    int rc = tmp_path(t, m, name, sizeof name, tmp, sizeof tmp);
    if (rc == 0 && v->rank == 0) rc = probe(t, name);
    rc = coll_agree(v->comm, rc);
    if (rc == 0) rc = ckpt_file_write(v, tmp, m, io);
    if (v->rank == 0) t->unreserved = io->unreserved;
    if (rc && v->rank == 0) unlink(tmp); /* never listed, so never loaded; tidy up */
    return rc;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n > k && strcmp(s + n - k, tail) == 0;
}

/* Files of saves that a killed run left unfinished ("ckpt-*.h5.tmp", their
 * space reserves, and the lock files Open MPI's MPI-IO makes beside a file
 * opened on several nodes): never loadable, possibly large; a commit
 * clears them away. */
static void remove_unfinished(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[4400];
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, "ckpt-", 5) == 0 &&
            (ends_with(de->d_name, ".h5.tmp") || ends_with(de->d_name, ".h5.tmp.reserve") ||
             (strstr(de->d_name, ".h5.tmp-") && ends_with(de->d_name, ".lock"))) &&
            fsx_join(path, sizeof path, dir, de->d_name) == 0)
            unlink(path);
    }
    if (d) closedir(d);
}

/* A commit's index edit: list the new checkpoint, and drop those beyond
 * `keep` (never the one this run resumed) for deletion. */
struct listing {
    const struct ckpt_tier *t;
    struct ckpt_entry e;
};

static int list_and_retain(struct ckpt_index *idx, struct ckpt_index *gone, void *arg)
{
    const struct listing *l = arg;
    int64_t keep = l->t->keep, ok = 0;
    int rc = ckpt_index_put(idx, &l->e);
    for (int i = idx->n - 1; rc == 0 && keep > 0 && i >= 0; i--) {
        const struct ckpt_entry *e = &idx->v[i];
        bool protect = e->epoch == l->t->keep_epoch && e->step == l->t->keep_step;
        if (e->ok && ok < keep) {
            ok++;
            continue;
        }
        if (protect || ok < keep) continue;
        if (ckpt_index_put(gone, e) == 0) ckpt_index_remove(idx, i);
    }
    return rc;
}

/* The fault points of a commit, at m's epoch in dir. */
void ckf_tier_at(void *arg, const char *point)
{
    const struct tier_at *a = arg;
    if (a->v->fault) a->v->fault(a->v->fault_arg, point, a->epoch, a->dir);
}

static int shared_commit(struct ckpt_tier *t, const struct ckpt_view *v, const struct ckpt_meta *m)
{
    int rc = 0;
    char name[256], tmp[4400], path[4400];
    bool listed = false, renamed = false;
    struct tier_at at = {.v = v, .epoch = m->epoch, .dir = t->dir};
    struct ckpt_index_faults faults = {.at = ckf_tier_at, .arg = &at, .written = "index_tmp", .listed = "after_index"};
    CAIRN_CHECK(tmp_path(t, m, name, sizeof name, tmp, sizeof tmp));
    CAIRN_CHECK(fsx_join(path, sizeof path, t->dir, name));
    ckf_tier_at(&at, "before_rename");
    CAIRN_CHECK(fsx_fsync_path(tmp));
    char tmp_name[300];
    snprintf(tmp_name, sizeof tmp_name, "%s.tmp", name);
    CAIRN_CHECK(fsx_replace(t->dir, tmp_name, name, &renamed));
    ckf_tier_at(&at, "after_rename");
    struct listing l = {.t = t, .e = {.epoch = m->epoch, .step = m->step, .bytes = fsx_file_size(path), .ok = true}};
    snprintf(l.e.file, sizeof l.e.file, "%s", name);
    CAIRN_CHECK(ckpt_index_update(t->dir, list_and_retain, &l, &faults, &listed)); /* listed: never delete it now */
    remove_unfinished(t->dir);
cleanup:
    if (rc && renamed && !listed) unlink(path); /* never listed, so never loaded: give its space back */
    if (rc && !renamed) unlink(tmp);
    return rc;
}

static int shared_prune(struct ckpt_tier *t, const struct ckpt_view *v, const struct ckpt_meta *m)
{
    (void)t, (void)v, (void)m; /* its commit keeps checkpoint.keep of them */
    return 0;
}

static int shared_read(struct ckpt_tier *t, const struct ckpt_view *v, const struct ckpt_entry *e,
                       struct ckpt_meta *m, struct ckpt_io *io)
{
    char path[4400];
    int rc = coll_agree(v->comm, fsx_join(path, sizeof path, t->dir, e->file));
    return rc ? rc : ckpt_file_read(v, path, m, io);
}

const struct ckpt_tier_ops ckpt_tier_shared = {
    .name = "shared",
    .write = shared_write,
    .commit = shared_commit,
    .prune = shared_prune,
    .read = shared_read,
    .extract = ckpt_file_extract,
    .verify = ckpt_file_verify,
};

const struct ckpt_tier_ops *ckpt_tier_of(const char *path)
{
    char head[16] = "";
    FILE *f = fsx_is_regular(path) ? fopen(path, "r") : NULL; /* never a FIFO's open */
    if (f && !fgets(head, sizeof head, f)) head[0] = '\0';
    if (f) fclose(f);
    return strncmp(head, "# cairn node-l", 14) == 0 ? &ckpt_tier_local : &ckpt_tier_shared;
}
