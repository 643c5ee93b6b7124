/* File-system helpers; see include/cairn/fsx.h. */
#include "cairn/fsx.h"

#include "cairn/error.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
        if (mkdir(buf, 0755) && errno != EEXIST)
            CAIRN_FAIL(CAIRN_EIO, "cannot create directory %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) && errno != EEXIST)
        CAIRN_FAIL(CAIRN_EIO, "cannot create directory %s: %s", buf, strerror(errno));
    struct stat st;
    if (stat(buf, &st) || !S_ISDIR(st.st_mode))
        CAIRN_FAIL(CAIRN_EIO, "%s is not a directory", buf);
cleanup:
    return rc;
}

int fsx_fsync_path(const char *path)
{
    int rc = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CAIRN_CHECK_ERRNO(fd >= 0, CAIRN_EIO, "cannot open %s", path);
    CAIRN_CHECK_ERRNO(fsync(fd) == 0, CAIRN_EIO, "cannot fsync %s", path);
    int c = close(fd);
    fd = -1;
    CAIRN_CHECK_ERRNO(c == 0, CAIRN_EIO, "cannot close %s", path);
cleanup:
    if (fd >= 0) close(fd);
    return rc;
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

static int finish_atomic(int fd, const char *tmp, const char *path)
{
    int rc = 0;
    CAIRN_CHECK_ERRNO(fsync(fd) == 0, CAIRN_EIO, "cannot fsync %s", tmp);
    CAIRN_CHECK_ERRNO(close(fd) == 0, CAIRN_EIO, "cannot close %s", tmp);
    fd = -1;
    CAIRN_CHECK_ERRNO(rename(tmp, path) == 0, CAIRN_EIO, "cannot rename %s to %s", tmp, path);
    CAIRN_CHECK(fsx_fsync_parent(path));
cleanup:
    if (fd >= 0) close(fd);
    return rc;
}

int fsx_write_atomic(const char *path, const void *data, size_t len)
{
    int rc = 0, fd = -1;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CAIRN_CHECK_ERRNO(fd >= 0, CAIRN_EIO, "cannot create %s", tmp);
    CAIRN_CHECK(fsx_write_fd(fd, data, len, tmp));
    rc = finish_atomic(fd, tmp, path);
    fd = -1;
cleanup:
    if (fd >= 0) close(fd);
    if (rc) unlink(tmp);
    return rc;
}

/* open with `flags`, write, fsync and close, each checked. */
static int write_file(const char *path, int flags, const void *data, size_t len)
{
    int rc = 0, fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
    CAIRN_CHECK_ERRNO(fd >= 0, CAIRN_EIO, "cannot create %s", path);
    CAIRN_CHECK(fsx_write_fd(fd, data, len, path));
    CAIRN_CHECK_ERRNO(fsync(fd) == 0, CAIRN_EIO, "cannot fsync %s", path);
    int c = close(fd);
    fd = -1;
    CAIRN_CHECK_ERRNO(c == 0, CAIRN_EIO, "cannot close %s", path);
cleanup:
    if (fd >= 0) close(fd);
    return rc;
}

int fsx_write_new(const char *path, const void *data, size_t len)
{
    return write_file(path, O_EXCL, data, len);
}

int fsx_write_synced(const char *path, const void *data, size_t len)
{
    int rc = write_file(path, O_TRUNC, data, len);
    if (rc) unlink(path); /* a full disk must not leave it behind */
    return rc;
}

int fsx_open_write(const char *path, bool create)
{
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    if (fd < 0) return cairn_err_errno(CAIRN_EIO, __FILE__, __LINE__, "cannot open %s", path);
    if (close(fd) != 0) return cairn_err_errno(CAIRN_EIO, __FILE__, __LINE__, "cannot close %s", path);
    return 0;
}

int fsx_read_all(const char *path, char **data, size_t *len)
{
    int rc = 0;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    FILE *f = fopen(path, "rb");
    CAIRN_CHECK_ERRNO(f != NULL, CAIRN_EIO, "cannot open %s", path);
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 8192;
            char *b = realloc(buf, cap);
            CAIRN_CHECK_ALLOC(b);
            buf = b;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
    }
    CAIRN_CHECK_ERRNO(!ferror(f), CAIRN_EIO, "cannot read %s", path);
    buf[n] = '\0';
    *data = buf;
    *len = n;
    buf = NULL;
cleanup:
    if (f) fclose(f);
    free(buf);
    return rc;
}

int fsx_copy_atomic(const char *src, const char *dst)
{
    int rc = 0, in = -1, out = -1;
    char tmp[4200], buf[1 << 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", dst);
    in = open(src, O_RDONLY | O_CLOEXEC);
    CAIRN_CHECK_ERRNO(in >= 0, CAIRN_EIO, "cannot open %s", src);
    out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CAIRN_CHECK_ERRNO(out >= 0, CAIRN_EIO, "cannot create %s", tmp);
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        CAIRN_CHECK_ERRNO(r >= 0, CAIRN_EIO, "cannot read %s", src);
        if (r == 0) break;
        CAIRN_CHECK(fsx_write_fd(out, buf, (size_t)r, tmp));
    }
    rc = finish_atomic(out, tmp, dst);
    out = -1;
cleanup:
    if (in >= 0) close(in);
    if (out >= 0) close(out);
    if (rc) unlink(tmp);
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
    int rc = 0, fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
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

int fsx_probe_create(const char *path)
{
    int rc = 0;
    bool existed = access(path, F_OK) == 0;
    if (existed && !fsx_is_regular(path))
        CAIRN_FAIL(CAIRN_EINPUT, "%s exists and is not a regular file", path);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    CAIRN_CHECK_ERRNO(fd >= 0, CAIRN_EINPUT, "cannot create %s", path);
    close(fd);
    if (!existed) unlink(path);
cleanup:
    return rc;
}
