/* File-system helpers; see include/cairn/fsx.h. */
#include "cairn/fsx.h"

#include "cairn/error.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

int fsx_join(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= size)
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "path too long: %s/%s", dir, name);
    return 0;
}

int fsx_mkdir_p(const char *path)
{
    int rc = 0;
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        CAIRN_FAIL(CAIRN_EINPUT, "path too long: %s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) && errno != EEXIST)
            CAIRN_FAIL(CAIRN_EIO, "cannot create directory %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) && errno != EEXIST)
        CAIRN_FAIL(CAIRN_EIO, "cannot create directory %s: %s", buf, strerror(errno));
    struct stat st;
    if (stat(buf, &st) || !S_ISDIR(st.st_mode))
        CAIRN_FAIL(CAIRN_EIO, "%s is not a directory", buf);
cleanup:
    return rc;
}

/* fsync and close *fd (path names it), each checked; *fd is -1 after,
 * whatever happened. */
static int sync_close(int *fd, const char *path)
{
    int rc = 0;
    CAIRN_CHECK_ERRNO(fsync(*fd) == 0, CAIRN_EIO, "cannot fsync %s", path);
    int c = close(*fd);
    *fd = -1;
    CAIRN_CHECK_ERRNO(c == 0, CAIRN_EIO, "cannot close %s", path);
cleanup:
    if (*fd >= 0) close(*fd);
    *fd = -1;
    return rc;
}

int fsx_fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cairn_err_errno(CAIRN_EIO, __FILE__, __LINE__, "cannot open %s", path);
    return sync_close(&fd, path);
}

int fsx_fsync_parent(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    return fsx_fsync_path(dirname(buf));
}

int fsx_write_fd(int fd, const void *data, size_t len, const char *path)
{
    int rc = 0;
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        CAIRN_CHECK_ERRNO(w > 0, CAIRN_EIO, "cannot write %s", path);
        p += w;
        len -= (size_t)w;
    }
cleanup:
    return rc;
}

/* ---- output files ------------------------------------------------------------ */

static int split_path(struct fsx_out *o, const char *path, char *dir, size_t dir_size)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "the output path '%s' names no file", path);
    if (snprintf(o->path, sizeof o->path, "%s", path) >= (int)sizeof o->path || dlen >= dir_size ||
        snprintf(o->name, sizeof o->name, "%s", name) >= (int)sizeof o->name)
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "path too long: %s", path);
    if (slash) {
        memcpy(dir, path, dlen ? dlen : 1); /* "/x": the root */
        dir[dlen ? dlen : 1] = '\0';
    } else {
        strcpy(dir, ".");
    }
    return 0;
}

/* 0 if name is absent in dir or a regular file, else CAIRN_EINPUT. */
static int target_ok(int dir, const char *name, const char *path)
{
    struct stat st;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : cairn_err_errno(CAIRN_EIO, __FILE__, __LINE__, "cannot stat %s", path);
    if (S_ISREG(st.st_mode)) return 0;
    return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                         "%s exists and is not a regular file (%s): refusing to replace it", path,
                         S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory"
                         : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "a device");
}

int fsx_check_target(const char *path)
{
    return target_ok(AT_FDCWD, path, path);
}

int fsx_out_begin(struct fsx_out *o, const char *path, int flags)
{
    int rc = 0;
    char dir[4096];
    *o = (struct fsx_out){.dir = -1, .fd = -1};
    CAIRN_CHECK(split_path(o, path, dir, sizeof dir));
    int n = snprintf(o->tmp_name, sizeof o->tmp_name, "%s.tmp", o->name);
    if (n < 0 || n >= (int)sizeof o->tmp_name || snprintf(o->tmp, sizeof o->tmp, "%s/%s", dir, o->tmp_name) >= (int)sizeof o->tmp)
        CAIRN_FAIL(CAIRN_EINPUT, "path too long: %s", path);
    o->dir = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o->dir < 0 && (errno == ENOENT || errno == ENOTDIR)) /* a path the user gave */
        CAIRN_FAIL(CAIRN_EINPUT, "cannot write %s: no directory %s", path, dir);
    CAIRN_CHECK_ERRNO(o->dir >= 0, CAIRN_EIO, "cannot open directory %s", dir);
    CAIRN_CHECK(target_ok(o->dir, o->name, path));
    /* a temporary left by a killed writer, or planted: its name is freed
     * (unlink removes a link, not what it points at); O_EXCL then fails
     * rather than follow anything that reappears */
    if (unlinkat(o->dir, o->tmp_name, 0) != 0 && errno != ENOENT)
        CAIRN_FAIL(CAIRN_EIO, "cannot remove %s: %s", o->tmp, strerror(errno));
    o->fd = openat(o->dir, o->tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   flags & FSX_PRIVATE ? 0600 : 0666);
    CAIRN_CHECK_ERRNO(o->fd >= 0, CAIRN_EIO, "cannot create %s", o->tmp);
    o->made = true;
    struct stat st;
    CAIRN_CHECK_ERRNO(fstat(o->fd, &st) == 0, CAIRN_EIO, "cannot stat %s", o->tmp);
    o->dev = st.st_dev;
    o->ino = st.st_ino;
cleanup:
    if (rc) fsx_out_abort(o);
    return rc;
}

int fsx_out_write(struct fsx_out *o, const void *data, size_t len)
{
    return fsx_write_fd(o->fd, data, len, o->tmp);
}

int fsx_out_sync(struct fsx_out *o)
{
    return o->fd < 0 ? 0 : sync_close(&o->fd, o->tmp);
}

/* Rename tmp_name over name in dir, both checked first, and fsync dir.
 * ino: the inode tmp_name must still be (0: any regular file). */
static int replace_in(int dir, const char *tmp_name, const char *name, unsigned long long dev,
                      unsigned long long ino, const char *tmp, const char *path, bool *renamed)
{
    int rc = 0;
    struct stat st;
    *renamed = false;
    CAIRN_CHECK(target_ok(dir, name, path));
    CAIRN_CHECK_ERRNO(fstatat(dir, tmp_name, &st, AT_SYMLINK_NOFOLLOW) == 0, CAIRN_EIO, "cannot stat %s", tmp);
    if (!S_ISREG(st.st_mode) || (ino && (st.st_ino != ino || st.st_dev != dev)))
        CAIRN_FAIL(CAIRN_EIO, "%s was replaced while it was written: %s not renamed", tmp, path);
    CAIRN_CHECK_ERRNO(renameat(dir, tmp_name, dir, name) == 0, CAIRN_EIO, "cannot rename %s", tmp);
    *renamed = true;
    CAIRN_CHECK_ERRNO(fsync(dir) == 0, CAIRN_EIO, "cannot fsync the directory of %s", path);
cleanup:
    return rc;
}

int fsx_out_commit(struct fsx_out *o)
{
    bool renamed = false;
    int rc = fsx_out_sync(o);
    if (rc == 0) rc = replace_in(o->dir, o->tmp_name, o->name, o->dev, o->ino, o->tmp, o->path, &renamed);
    if (renamed) o->made = false; /* nothing to remove */
    o->renamed = renamed;
    fsx_out_abort(o);
    return rc;
}

void fsx_out_abort(struct fsx_out *o)
{
    struct stat st;
    if (o->fd >= 0) close(o->fd);
    /* only the file this o made: another writer of the same output may
     * have taken the name since (its commit then fails, not this one's) */
    if (o->made && o->dir >= 0 && fstatat(o->dir, o->tmp_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_ino == o->ino && st.st_dev == o->dev)
        unlinkat(o->dir, o->tmp_name, 0);
    if (o->dir >= 0) close(o->dir);
    o->fd = o->dir = -1;
    o->made = false;
}

int fsx_replace(const char *dir, const char *tmp_name, const char *name, bool *renamed)
{
    int rc = 0, d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char path[4400], tmp[4400];
    *renamed = false;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s/%s", dir, tmp_name);
    CAIRN_CHECK_ERRNO(d >= 0, CAIRN_EIO, "cannot open directory %s", dir);
    rc = replace_in(d, tmp_name, name, 0, 0, tmp, path, renamed);
cleanup:
    if (d >= 0) close(d);
    return rc;
}

int fsx_write_atomic(const char *path, const void *data, size_t len, int flags)
{
    struct fsx_out o;
    int rc = fsx_out_begin(&o, path, flags);
    if (rc == 0) rc = fsx_out_write(&o, data, len);
    if (rc == 0) return fsx_out_commit(&o);
    fsx_out_abort(&o);
    return rc;
}

int fsx_write_new(const char *path, const void *data, size_t len)
{
    int rc = 0, fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    CAIRN_CHECK_ERRNO(fd >= 0, CAIRN_EIO, "cannot create %s", path);
    CAIRN_CHECK(fsx_write_fd(fd, data, len, path));
    rc = sync_close(&fd, path);
cleanup:
    if (fd >= 0) close(fd);
    return rc;
}

int fsx_open_write(const char *path, bool create)
{
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0666);
    if (fd < 0) return cairn_err_errno(CAIRN_EIO, __FILE__, __LINE__, "cannot open %s", path);
    if (close(fd) != 0) return cairn_err_errno(CAIRN_EIO, __FILE__, __LINE__, "cannot close %s", path);
    return 0;
}

/* Read the regular file open on fd whole (path for messages). */
static int read_fd(int fd, const char *path, char **data, size_t *len)
{
    int rc = 0;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    struct stat st;
    CAIRN_CHECK_ERRNO(fstat(fd, &st) == 0, CAIRN_EIO, "cannot stat %s", path);
    if (!S_ISREG(st.st_mode)) CAIRN_FAIL(CAIRN_EIO, "cannot read %s: not a regular file", path);
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 8192;
            char *b = realloc(buf, cap);
            CAIRN_CHECK_ALLOC(b);
            buf = b;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR) continue;
        CAIRN_CHECK_ERRNO(r >= 0, CAIRN_EIO, "cannot read %s", path);
        if (r == 0) break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    buf = NULL;
cleanup:
    free(buf);
    return rc;
}

static int read_path(const char *path, int flags, char **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | flags);
    if (fd < 0) return cairn_err_errno(CAIRN_EIO, __FILE__, __LINE__, "cannot open %s", path);
    int rc = read_fd(fd, path, data, len);
    close(fd);
    return rc;
}

int fsx_read_all(const char *path, char **data, size_t *len) { return read_path(path, 0, data, len); }

int fsx_read_private(const char *path, char **data, size_t *len)
{
    return read_path(path, O_NOFOLLOW, data, len);
}

int fsx_pread(int fd, void *buf, size_t len, int64_t off, const char *path)
{
    for (size_t got = 0; got < len;) {
        ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + (int64_t)got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return cairn_err_errno(CAIRN_EIO, __FILE__, __LINE__, "cannot read %s", path);
        if (r == 0)
            return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s: shorter than when it was measured (changed while read?)",
                                 path);
        got += (size_t)r;
    }
    return 0;
}

int fsx_copy_atomic(const char *src, const char *dst)
{
    int rc = 0, in = -1;
    char buf[1 << 16];
    struct fsx_out o = {.dir = -1, .fd = -1};
    in = open(src, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    CAIRN_CHECK_ERRNO(in >= 0, CAIRN_EIO, "cannot open %s", src);
    CAIRN_CHECK(fsx_out_begin(&o, dst, 0));
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        CAIRN_CHECK_ERRNO(r >= 0, CAIRN_EIO, "cannot read %s", src);
        if (r == 0) break;
        CAIRN_CHECK(fsx_out_write(&o, buf, (size_t)r));
    }
    rc = fsx_out_commit(&o);
cleanup:
    if (in >= 0) close(in);
    fsx_out_abort(&o);
    return rc;
}

int64_t fsx_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) ? -1 : (int64_t)st.st_size;
}

int64_t fsx_file_stored(const char *path)
{
    struct stat st;
    if (stat(path, &st)) return -1;
    int64_t blocks = (int64_t)st.st_blocks * 512;
    return blocks < (int64_t)st.st_size ? blocks : (int64_t)st.st_size;
}

int fsx_is_regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int fsx_allocate(const char *path, int64_t bytes, bool *unsupported)
{
    int rc = 0, fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    *unsupported = false;
    CAIRN_CHECK_ERRNO(fd >= 0, CAIRN_EIO, "cannot create %s", path);
    if (bytes > 0 && fallocate(fd, 0, 0, (off_t)bytes) != 0) {
        *unsupported = errno == EOPNOTSUPP || errno == ENOSYS;
        CAIRN_CHECK_ERRNO(*unsupported, CAIRN_EIO, "cannot reserve %lld bytes for %s", (long long)bytes, path);
    }
cleanup:
    if (fd >= 0) close(fd);
    return rc;
}

bool fsx_striped(const char *dir)
{
    /* the file systems' magic numbers, as statfs(2) reports them */
    static const unsigned long striped[] = {0x0bd00bd0 /* Lustre */, 0x47504653 /* GPFS */,
                                            0x19830326 /* BeeGFS */};
    struct statfs s;
    if (statfs(dir, &s) != 0) return false;
    for (size_t i = 0; i < sizeof striped / sizeof striped[0]; i++)
        if ((unsigned long)s.f_type == striped[i]) return true;
    return false;
}

/* The kernel's estimate of the memory free for new use (MemAvailable), in
 * bytes; HUGE_VAL when it cannot be read (no limit known). */
static double mem_available(void)
{
    char line[256];
    unsigned long long kb = 0;
    bool got = false;
    FILE *f = fopen("/proc/meminfo", "re");
    while (f && !got && fgets(line, sizeof line, f)) got = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
    if (f) fclose(f);
    return got ? (double)kb * 1024 : HUGE_VAL;
}

bool fsx_in_memory(const char *dir, double *avail)
{
    struct statfs s;
    struct statvfs v;
    bool got = statvfs(dir, &v) == 0;
    *avail = got ? (double)v.f_bavail * (double)v.f_frsize : 0;
    /* ramfs, and tmpfs with size=0, have no size (0 blocks, 0 free): what
     * their files can take is the memory there is */
    if (got && v.f_blocks == 0) *avail = mem_available();
    if (statfs(dir, &s) != 0) return false;
    return (unsigned long)s.f_type == 0x01021994 /* tmpfs */ || (unsigned long)s.f_type == 0x858458f6 /* ramfs */;
}

int fsx_probe_create(const char *path)
{
    int rc = 0;
    struct stat st;
    bool existed = lstat(path, &st) == 0;
    CAIRN_CHECK(fsx_check_target(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    CAIRN_CHECK_ERRNO(fd >= 0, CAIRN_EINPUT, "cannot create %s", path);
    close(fd);
    if (!existed) unlink(path);
cleanup:
    return rc;
}

int fsx_private_dir(const char *path, bool create)
{
    int rc = 0;
    struct stat st;
    if (create && mkdir(path, 0700) != 0 && errno != EEXIST)
        CAIRN_FAIL(CAIRN_EIO, "cannot create directory %s: %s", path, strerror(errno));
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT && !create) return 1;
        CAIRN_FAIL(CAIRN_EIO, "cannot stat %s: %s", path, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        CAIRN_FAIL(CAIRN_EINPUT, "%s is not a directory (%s): refusing to use it for private state", path,
                   S_ISLNK(st.st_mode) ? "a symbolic link" : "another kind of file");
    if (st.st_uid != geteuid())
        CAIRN_FAIL(CAIRN_EINPUT, "%s is owned by uid %u, not by this user (uid %u): refusing to read or write "
                   "private state there (remove it, or choose another checkpoint.local)",
                   path, (unsigned)st.st_uid, (unsigned)geteuid());
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        CAIRN_FAIL(CAIRN_EINPUT, "%s is writable by %s (mode %04o): refusing to read or write private state "
                   "there (chmod 700 it, or remove it)", path, st.st_mode & S_IWOTH ? "others" : "its group",
                   (unsigned)(st.st_mode & 07777));
    /* readable by others (a tree from before this rule): made private */
    if ((st.st_mode & 077) && chmod(path, 0700) != 0)
        CAIRN_FAIL(CAIRN_EIO, "cannot make %s private (chmod 700): %s", path, strerror(errno));
cleanup:
    return rc;
}

int fsx_open_nofollow(const char *path, int flags)
{
    return open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
}

int fsx_open_append(const char *path, int *fd)
{
    int rc = 0;
    struct stat st;
    *fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    if (*fd < 0 && (errno == ELOOP || errno == ENXIO || errno == EISDIR)) /* a link, a FIFO, a directory */
        CAIRN_CHECK(fsx_check_target(path));
    CAIRN_CHECK_ERRNO(*fd >= 0, CAIRN_EIO, "cannot open %s", path);
    CAIRN_CHECK_ERRNO(fstat(*fd, &st) == 0, CAIRN_EIO, "cannot stat %s", path);
    if (!S_ISREG(st.st_mode)) CAIRN_FAIL(CAIRN_EINPUT, "%s exists and is not a regular file: refusing to write to it", path);
cleanup:
    if (rc && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}
