/* File-system helpers with cairn errors: directories, durable writes and
 * atomic replacement.  Not collective. */
#ifndef CAIRN_FSX_H
#define CAIRN_FSX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* mkdir -p.  Errors: CAIRN_EIO naming the path. */
int fsx_mkdir_p(const char *path);
/* fsync a file or directory by path. */
int fsx_fsync_path(const char *path);
/* fsync the directory holding path (makes a rename in it durable). */
int fsx_fsync_parent(const char *path);
/* Every output file cairn writes goes through an fsx_out, which is safe on
 * a machine shared with other users and with root: the directory is opened
 * once and used through its descriptor; the target, if it exists, must be a
 * regular file (a device, FIFO, socket, directory or symbolic link there is
 * refused with CAIRN_EINPUT, never replaced or written through); the
 * temporary NAME.tmp is created with O_EXCL|O_NOFOLLOW after whatever had
 * its name is unlinked (unlink never follows a link), so no planted link
 * is followed; commit fsyncs it, checks that the temporary's name still
 * holds the file it created (of two writers of one output, the one whose
 * temporary was taken over fails, and removes nothing of the other's) and
 * that the target is still regular or absent, renames, and fsyncs the
 * directory.  A crash leaves the old file or the new one, never a mix.
 * Not collective. */
enum {
    FSX_PRIVATE = 1, /* mode 0600; else 0666 less the umask */
};
struct fsx_out {
    int dir, fd;       /* -1 when closed */
    bool made;         /* the temporary exists and is ours */
    bool renamed;      /* commit renamed it (even if the directory's fsync then failed) */
    unsigned long long dev, ino; /* the temporary's inode */
    char name[256], tmp_name[300];
    char path[4096];   /* the target, for messages */
    char tmp[4400];    /* the temporary's path, for writers that need one (HDF5, gnuplot) */
};
/* Check path's directory and target and create the temporary.  Errors:
 * CAIRN_EINPUT (the target is not a regular file, no such directory, a
 * name too long), CAIRN_EIO (the temporary cannot be made). */
int fsx_out_begin(struct fsx_out *o, const char *path, int flags);
int fsx_out_write(struct fsx_out *o, const void *data, size_t len);
/* fsync and close the temporary (commit does it if not done). */
int fsx_out_sync(struct fsx_out *o);
/* Replace the target with the temporary (see above).  On failure the
 * temporary is removed.  Either way o is closed. */
int fsx_out_commit(struct fsx_out *o);
/* Remove the temporary (if this o made it) and close o; accepts a closed o. */
void fsx_out_abort(struct fsx_out *o);
/* Rename dir/tmp_name over dir/name, which must be regular or absent while
 * tmp_name must be a regular file, and fsync dir: the commit of a file that
 * an fsx_out (or a collective writer) left synced under tmp_name.
 * *renamed: whether the rename happened (a failed fsync comes after it).
 * Errors: CAIRN_EINPUT (a non-regular target), CAIRN_EIO. */
int fsx_replace(const char *dir, const char *tmp_name, const char *name, bool *renamed);
/* Whether path may be replaced by an output: 0 if it is absent or a
 * regular file (lstat: a link is not), else CAIRN_EINPUT naming it. */
int fsx_check_target(const char *path);

/* Write data to path through an fsx_out (flags as there). */
int fsx_write_atomic(const char *path, const void *data, size_t len, int flags);
/* Create path with data unless it exists (O_EXCL: of several processes
 * racing, one wins and the others change nothing), and fsync it.  Errors:
 * CAIRN_EIO naming the path (EEXIST included). */
int fsx_write_new(const char *path, const void *data, size_t len);
/* Can this process open path (created if create and missing) for
 * writing?  CAIRN_EIO if not. */
int fsx_open_write(const char *path, bool create);
/* Write all of data to fd (path names it in the error).  Errors: CAIRN_EIO. */
int fsx_write_fd(int fd, const void *data, size_t len, const char *path);
/* Read a whole regular file (a FIFO or device is refused, never waited
 * on) into a NUL-terminated buffer the caller frees.  Errors: CAIRN_EIO. */
int fsx_read_all(const char *path, char **data, size_t *len);
/* Read len bytes of fd at offset off into buf (path names it in the
 * error), retrying short reads.  Errors: CAIRN_EIO, and CAIRN_EINPUT if
 * the file ends first (it changed while read). */
int fsx_pread(int fd, void *buf, size_t len, int64_t off, const char *path);
/* fsx_read_all, but a link in path's last component is refused. */
int fsx_read_private(const char *path, char **data, size_t *len);
/* Copy src to dst durably (through an fsx_out). */
int fsx_copy_atomic(const char *src, const char *dst);
int64_t fsx_file_size(const char *path); /* -1 if missing */
/* The bytes a file really holds: its size, or less if it is sparse (a
 * crafted size claims nothing); -1 if missing. */
int64_t fsx_file_stored(const char *path);
/* Is path a regular file (not missing, a directory, a FIFO or a device)? */
int fsx_is_regular(const char *path);
/* Can path be created (or overwritten)?  Creates it to find out (never
 * through a link), and removes it again if it did not exist.  Errors:
 * CAIRN_EINPUT naming the path and the cause. */
int fsx_probe_create(const char *path);
/* Give path (created if missing) at least `bytes` of allocated disk space,
 * so that writes below that size cannot fail for want of space.  A file
 * system that cannot allocate ahead (no fallocate: NFS 3, some parallel
 * ones) is no error: *unsupported is set and nothing is written, for the
 * alternative, writing every block (posix_fallocate's emulation), would
 * cost a whole write of the bytes.  Errors: CAIRN_EIO naming the path and
 * the cause (ENOSPC, EDQUOT, ...). */
int fsx_allocate(const char *path, int64_t bytes, bool *unsupported);
/* Whether dir is on a file system that stripes files over servers
 * (Lustre, GPFS, BeeGFS), where aligned writes pay. */
bool fsx_striped(const char *dir);
/* Whether dir is on a file system in memory (tmpfs, ramfs: /dev/shm),
 * whose files take RAM; *avail: the bytes an unprivileged writer may
 * still put there (statvfs), or where the file system has no size (ramfs,
 * tmpfs with size=0: statvfs says 0 blocks) the memory available
 * (MemAvailable in /proc/meminfo; HUGE_VAL if that cannot be read). */
bool fsx_in_memory(const char *dir, double *avail);
/* A directory for private state (the node-local tier's): created 0700 if
 * create and missing; it must be a directory, not a link, owned by this
 * user and writable by no one else (a mode readable by others is made
 * 0700).  Returns 1 if it is missing and !create.  Errors: CAIRN_EINPUT
 * naming the path and the rule, CAIRN_EIO. */
int fsx_private_dir(const char *path, bool create);
/* open(2) that follows no link in the last component and never blocks on
 * a FIFO (O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC added to flags). */
int fsx_open_nofollow(const char *path, int flags);
/* Open path to append to (a log), created if missing: a link, FIFO,
 * device or directory there is refused with CAIRN_EINPUT naming it. */
int fsx_open_append(const char *path, int *fd);
/* dir + "/" + name into out; CAIRN_EINPUT if it does not fit. */
int fsx_join(char *out, size_t size, const char *dir, const char *name);

#endif
