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
/* Write data to path durably and atomically: path.tmp, fsync, rename,
 * fsync the directory.  A crash leaves the old or the new file, never a mix. */
int fsx_write_atomic(const char *path, const void *data, size_t len);
/* Create path with data unless it exists (O_EXCL: of several processes
 * racing, one wins and the others change nothing), and fsync it.  Errors:
 * CAIRN_EIO naming the path (EEXIST included). */
int fsx_write_new(const char *path, const void *data, size_t len);
/* Create or truncate path, write data and fsync it; on failure path is
 * removed.  Errors: CAIRN_EIO naming the path and the cause. */
int fsx_write_synced(const char *path, const void *data, size_t len);
/* Can this process open path (created if create and missing) for
 * writing?  CAIRN_EIO if not. */
int fsx_open_write(const char *path, bool create);
/* Write all of data to fd (path names it in the error).  Errors: CAIRN_EIO. */
int fsx_write_fd(int fd, const void *data, size_t len, const char *path);
/* Read a whole file into a NUL-terminated buffer the caller frees. */
int fsx_read_all(const char *path, char **data, size_t *len);
/* Copy src to dst durably (via dst.tmp + rename). */
int fsx_copy_atomic(const char *src, const char *dst);
int64_t fsx_file_size(const char *path); /* -1 if missing */
/* The bytes a file really holds: its size, or less if it is sparse (a
 * crafted size claims nothing); -1 if missing. */
int64_t fsx_file_stored(const char *path);
/* Is path a regular file (not missing, a directory, a FIFO or a device)? */
int fsx_is_regular(const char *path);
/* Can path be created (or overwritten)?  Creates it to find out, and
 * removes it again if it did not exist.  Errors: CAIRN_EINPUT naming the
 * path and the cause. */
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
/* dir + "/" + name into out; CAIRN_EINPUT if it does not fit. */
int fsx_join(char *out, size_t size, const char *dir, const char *name);

#endif
