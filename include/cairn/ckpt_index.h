/* The checkpoint index: DIR/index, the list of committed checkpoints.
 * Only checkpoints listed here with status ok are ever loaded.  It is
 * replaced atomically (index.tmp, fsync, rename, fsync of DIR), so a crash
 * leaves the old list or the new one.  Text, one checkpoint per line:
 *
 *   # cairn checkpoint index v1
 *   EPOCH <TAB> STEP <TAB> FILE <TAB> BYTES <TAB> ok|bad
 *
 * sorted by (epoch, step), newest last.  FILE is relative to DIR.
 * Not collective: rank 0 (or a serial tool) reads and writes it, and
 * every change goes through ckpt_index_update. */
#ifndef CAIRN_CKPT_INDEX_H
#define CAIRN_CKPT_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ckpt_entry {
    int64_t epoch, step;
    char file[256];
    int64_t bytes;
    bool ok;
};

struct ckpt_index {
    struct ckpt_entry *v;
    int n;
};

/* A missing index is an empty one.  Errors: CAIRN_EINPUT (malformed line,
 * named by DIR/index:LINE), CAIRN_EIO, CAIRN_ENOMEM. */
int ckpt_index_read(const char *dir, struct ckpt_index *idx);
/* The commit in two halves, so crash tests can stop between them:
 * write and fsync DIR/index.tmp; then rename it over DIR/index and fsync DIR.
 * *replaced (may be NULL) says whether the rename happened: after it, the
 * new index is what readers see even if the fsync then fails. */
int ckpt_index_write_tmp(const char *dir, const struct ckpt_index *idx);
int ckpt_index_commit_tmp(const char *dir, bool *replaced);
/* An edit of an index: change idx, and put in gone the entries whose
 * files are to be deleted once the new index is in place.  Returns 0 to
 * write the index, CKPT_INDEX_KEEP to leave it as it was, or an error. */
#define CKPT_INDEX_KEEP 1
typedef int ckpt_index_edit(struct ckpt_index *idx, struct ckpt_index *gone, void *arg);

/* The fault points of an update (fault.h): at(arg, point) once index.tmp
 * is written (`written`) and once it replaced the index (`listed`), each
 * NULL for none. */
struct ckpt_index_faults {
    void (*at)(void *arg, const char *point);
    void *arg;
    const char *written, *listed;
};

/* The index's one read-modify-write: read DIR/index, edit it, write and
 * sync index.tmp, rename it over the index, then delete the files the
 * edit put in gone.  *listed (may be NULL): the new index replaced the
 * old, even if a later step failed.  f may be NULL.  Errors: those of
 * ckpt_index_read, of the edit, CAIRN_EIO. */
int ckpt_index_update(const char *dir, ckpt_index_edit *edit, void *arg, const struct ckpt_index_faults *f,
                      bool *listed);
/* Insert e, replacing an entry with the same epoch and step. */
int ckpt_index_put(struct ckpt_index *idx, const struct ckpt_entry *e);
void ckpt_index_remove(struct ckpt_index *idx, int i);
/* Index of the entry (epoch, step), or -1. */
int ckpt_index_find(const struct ckpt_index *idx, int64_t epoch, int64_t step);
/* Index of the newest ok entry before position `before` (n: all), or -1. */
int ckpt_index_newest_ok(const struct ckpt_index *idx, int before);
void ckpt_index_free(struct ckpt_index *idx);
/* The committed checkpoint of `epoch` (at its end, step 0) in dir, or the
 * newest committed one if epoch < 0: its entry and path.
 * Errors: CAIRN_ENOCKPT ("no such checkpoint: ...", listing what there is). */
int ckpt_index_locate(const char *dir, int64_t epoch, struct ckpt_entry *e, char *path,
                      size_t size);
/* "ckpt-e000003.h5", or "ckpt-e000003-s000012.h5" for a mid-epoch one. */
void ckpt_file_name(int64_t epoch, int64_t step, char *out, size_t size);
/* The same position in words: "after epoch 3", or "in epoch 4 after step
 * 17" for a mid-epoch one (3 epochs and 17 steps done).  Returns out. */
const char *ckpt_position(int64_t epoch, int64_t step, char *out, size_t size);

#endif
