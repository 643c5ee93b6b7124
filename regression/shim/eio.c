/* eio.so: makes chosen file-system calls of an MPI rank fail, for the
 * I/O-error scenarios (regression/scenarios/ckpt_eio.sh).  Preload it into
 * the ranks (mpirun -x LD_PRELOAD=build/eio.so) and set
 *
 *   CAIRN_EIO=CALL:MATCH:N[:ERRNO]   CAIRN_EIO_RANK=R|all (default all)
 *
 * CALL is open, write, fsync, close, rename, truncate or allocate; MATCH the
 * end of the file's path; N the call to fail, counted per process
 * over calls of that kind on matching files ("3": the third only, "3+":
 * the third and every later one); ERRNO is EIO (default), ENOSPC or
 * EOPNOTSUPP (a file system without fallocate, for allocate).  A
 * failed close still closes (as Linux does).  Every injected failure is
 * reported on stderr, so a test can tell that it happened.  Processes
 * without an MPI rank in their environment (mpirun itself) are left
 * alone. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum call { OPEN, WRITE, FSYNC, CLOSE, RENAME, TRUNCATE, ALLOCATE, N_CALLS };
static const char *const call_names[N_CALLS] = {"open", "write", "fsync", "close",
                                                "rename", "truncate", "allocate"};

#define MAX_FD 4096
static struct {
    bool init, on;
    enum call call;
    char match[256];
    long nth;
    bool onwards;
    int err, rank;
    long count;
    char *paths[MAX_FD]; /* matching files' paths by descriptor */
} s;

static bool matches(const char *path)
{
    size_t n = path ? strlen(path) : 0, m = strlen(s.match);
    return n >= m && strcmp(path + n - m, s.match) == 0;
}

static void setup(void)
{
    if (s.init) return;
    s.init = true;
    const char *spec = getenv("CAIRN_EIO"), *who = getenv("CAIRN_EIO_RANK");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank) rank = getenv("PMIX_RANK");
    if (!spec || !rank) return;
    char call[16] = "", err[16] = "EIO", nth[32] = "";
    if (sscanf(spec, "%15[^:]:%255[^:]:%31[^:]:%15s", call, s.match, nth, err) < 3) goto bad;
    int c = 0;
    while (c < N_CALLS && strcmp(call, call_names[c]) != 0) c++;
    char *end;
    s.nth = strtol(nth, &end, 10);
    s.onwards = *end == '+';
    if (c == N_CALLS || s.nth < 1 || (*end && strcmp(end, "+") != 0)) goto bad;
    s.err = strcmp(err, "ENOSPC") == 0 ? ENOSPC : strcmp(err, "EIO") == 0 ? EIO
          : strcmp(err, "EOPNOTSUPP") == 0 ? EOPNOTSUPP : 0;
    if (!s.err) goto bad;
    s.call = (enum call)c;
    s.rank = atoi(rank);
    s.on = !who || strcmp(who, "all") == 0 || atoi(who) == s.rank;
    return;
bad:
    fprintf(stderr, "eio.so: CAIRN_EIO='%s' is not CALL:MATCH:N[+][:EIO|ENOSPC|EOPNOTSUPP]\n", spec);
    _exit(99);
}

/* Whether this call, on `path`, is the one to fail (then errno is set). */
static bool hit(enum call call, const char *path)
{
    setup();
    if (!s.on || call != s.call || !matches(path)) return false;
    long k = ++s.count;
    if (k != s.nth && !(s.onwards && k > s.nth)) return false;
    fprintf(stderr, "eio.so: rank %d: %s #%ld of %s fails with %s\n", s.rank, call_names[call], k,
            path, s.err == EIO ? "EIO" : s.err == ENOSPC ? "ENOSPC" : "EOPNOTSUPP");
    errno = s.err;
    return true;
}

static const char *fd_path(int fd) { return fd >= 0 && fd < MAX_FD ? s.paths[fd] : NULL; }

static void track(int fd, const char *path)
{
    setup();
    if (fd < 0 || fd >= MAX_FD) return;
    free(s.paths[fd]);
    s.paths[fd] = s.on && matches(path) ? strdup(path) : NULL;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

#define OPEN_LIKE(name, ...)                                                                       \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        mode_t mode = mode_arg(flags, ap);                                                         \
        va_end(ap);                                                                                \
        if (hit(OPEN, path)) return -1;                                                            \
        int fd = REAL(name)(__VA_ARGS__, flags, mode);                                             \
        track(fd, path);                                                                           \
        return fd;                                                                                 \
    }

int open(const char *path, int flags, ...) OPEN_LIKE(open, path)
int open64(const char *path, int flags, ...) OPEN_LIKE(open64, path)
int openat(int dir, const char *path, int flags, ...) OPEN_LIKE(openat, dir, path)
int openat64(int dir, const char *path, int flags, ...) OPEN_LIKE(openat64, dir, path)

int creat(const char *path, mode_t mode) { return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode); }

ssize_t write(int fd, const void *b, size_t n)
{
    return hit(WRITE, fd_path(fd)) ? -1 : REAL(write)(fd, b, n);
}
ssize_t pwrite(int fd, const void *b, size_t n, off_t o)
{
    return hit(WRITE, fd_path(fd)) ? -1 : REAL(pwrite)(fd, b, n, o);
}
ssize_t pwrite64(int fd, const void *b, size_t n, off_t o)
{
    return hit(WRITE, fd_path(fd)) ? -1 : REAL(pwrite64)(fd, b, n, o);
}
ssize_t writev(int fd, const struct iovec *v, int n)
{
    return hit(WRITE, fd_path(fd)) ? -1 : REAL(writev)(fd, v, n);
}
ssize_t pwritev(int fd, const struct iovec *v, int n, off_t o)
{
    return hit(WRITE, fd_path(fd)) ? -1 : REAL(pwritev)(fd, v, n, o);
}
ssize_t pwritev64(int fd, const struct iovec *v, int n, off_t o)
{
    return hit(WRITE, fd_path(fd)) ? -1 : REAL(pwritev64)(fd, v, n, o);
}
int fsync(int fd) { return hit(FSYNC, fd_path(fd)) ? -1 : REAL(fsync)(fd); }
int fdatasync(int fd) { return hit(FSYNC, fd_path(fd)) ? -1 : REAL(fdatasync)(fd); }

int close(int fd)
{
    bool fail = hit(CLOSE, fd_path(fd));
    if (fd >= 0 && fd < MAX_FD) {
        free(s.paths[fd]);
        s.paths[fd] = NULL;
    }
    int rc = REAL(close)(fd);
    if (fail) errno = s.err;
    return fail ? -1 : rc;
}

int rename(const char *from, const char *to)
{
    return hit(RENAME, from) ? -1 : REAL(rename)(from, to);
}
int renameat(int fd, const char *from, int tofd, const char *to)
{
    return hit(RENAME, from) ? -1 : REAL(renameat)(fd, from, tofd, to);
}
int ftruncate(int fd, off_t n) { return hit(TRUNCATE, fd_path(fd)) ? -1 : REAL(ftruncate)(fd, n); }
int ftruncate64(int fd, off_t n)
{
    return hit(TRUNCATE, fd_path(fd)) ? -1 : REAL(ftruncate64)(fd, n);
}
int truncate(const char *path, off_t n) { return hit(TRUNCATE, path) ? -1 : REAL(truncate)(path, n); }
int posix_fallocate(int fd, off_t o, off_t n)
{
    return hit(ALLOCATE, fd_path(fd)) ? s.err : REAL(posix_fallocate)(fd, o, n);
}
int posix_fallocate64(int fd, off_t o, off_t n)
{
    return hit(ALLOCATE, fd_path(fd)) ? s.err : REAL(posix_fallocate64)(fd, o, n);
}
int fallocate(int fd, int mode, off_t o, off_t n)
{
    return hit(ALLOCATE, fd_path(fd)) ? -1 : REAL(fallocate)(fd, mode, o, n);
}
