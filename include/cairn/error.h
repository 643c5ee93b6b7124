/* cairn's one error mechanism.
 *
 * A function that can fail returns int: 0 on success or a negative code from
 * CAIRN_ERRORS.  The first failure records a message (with file:line of the
 * check) in a per-thread record; callers may add context with cairn_err_wrap.
 * Check macros set the local `rc` and jump to the function's `cleanup:` label,
 * so one label releases exactly what was acquired.
 */
#ifndef CAIRN_ERROR_H
#define CAIRN_ERROR_H

#include <stdarg.h>
#include <stddef.h>

/* name, value, process exit code, short text */
#define CAIRN_ERRORS(X)                                                        \
    X(CAIRN_OK, 0, 0, "success")                                               \
    X(CAIRN_EINPUT, -1, 2, "bad input")                                        \
    X(CAIRN_ENOCKPT, -2, 2, "no such checkpoint")                              \
    X(CAIRN_ERUNTIME, -3, 3, "runtime failure")                                \
    X(CAIRN_ENOMEM, -4, 3, "out of memory")                                    \
    X(CAIRN_EMPI, -5, 3, "MPI error")                                          \
    X(CAIRN_EHDF5, -6, 3, "HDF5 error")                                        \
    X(CAIRN_EIO, -7, 3, "I/O error")                                           \
    X(CAIRN_ECORRUPT, -8, 3, "checkpoint corrupt")                             \
    X(CAIRN_EPREEMPTED, -9, 75, "preempted, checkpoint saved")

enum cairn_err {
#define CAIRN_ERR_ENUM(name, value, exit_code, text) name = value,
    CAIRN_ERRORS(CAIRN_ERR_ENUM)
#undef CAIRN_ERR_ENUM
};

/* Exit code documented in cairn(1): 0 ok, 2 bad input, 3 runtime, 75 preempted. */
enum { CAIRN_EXIT_OK = 0, CAIRN_EXIT_INPUT = 2, CAIRN_EXIT_RUNTIME = 3, CAIRN_EXIT_PREEMPTED = 75 };

const char *cairn_strerror(int code);
int cairn_exit_code(int code);

/* Record a failure (replacing any earlier record of this thread); returns code. */
int cairn_err_set(int code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Prefix the current message with context, e.g. "loading ckpt-3.h5: "; returns code. */
int cairn_err_wrap(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record an MPI failure with MPI's own error string. */
int cairn_err_mpi(int mpi_rc, const char *file, int line, const char *what);
/* Record an HDF5 failure with the innermost message of HDF5's error stack. */
int cairn_err_h5(const char *file, int line, const char *what);
/* Record an errno failure with strerror(errno). */
int cairn_err_errno(int code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The current thread's last message ("" if none) and the code it was set with. */
const char *cairn_errmsg(void);
int cairn_errcode(void);
/* Where the last error was raised, for debugging ("src/x.c:42"). */
const char *cairn_errwhere(void);
void cairn_err_clear(void);

/* src into dst (size > 0 bytes, always terminated) made safe for a
 * terminal: control bytes (below 0x20, 0x7f), C1 controls (U+0080 to
 * U+009F) and bytes that are not valid UTF-8 become \xNN; valid UTF-8
 * otherwise passes.  Messages carry strings from job and data files, and an
 * escape sequence in one must not reach the user's terminal.  Idempotent
 * (a backslash is kept as it is), so a message that quotes an earlier one
 * is not escaped twice.  Truncates at a whole character.  Returns the
 * length written.  Every message cairn_err_set and friends record, every
 * run-log line and every job-file diagnostic passes through it. */
size_t cairn_escape(char *dst, size_t size, const char *src);

#define CAIRN_FAIL(code, ...)                                                  \
    do {                                                                       \
        rc = cairn_err_set((code), __FILE__, __LINE__, __VA_ARGS__);           \
        goto cleanup;                                                          \
    } while (0)

#define CAIRN_CHECK(call)                                                      \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ < 0) {                                                         \
            rc = rc_;                                                          \
            goto cleanup;                                                      \
        }                                                                      \
    } while (0)

#define CAIRN_CHECK_MPI(call)                                                  \
    do {                                                                       \
        int mrc_ = (call);                                                     \
        if (mrc_ != MPI_SUCCESS) {                                             \
            rc = cairn_err_mpi(mrc_, __FILE__, __LINE__, #call);               \
            goto cleanup;                                                      \
        }                                                                      \
    } while (0)

#define CAIRN_CHECK_H5(call)                                                   \
    do {                                                                       \
        if ((call) < 0) {                                                      \
            rc = cairn_err_h5(__FILE__, __LINE__, #call);                      \
            goto cleanup;                                                      \
        }                                                                      \
    } while (0)

#define CAIRN_CHECK_ERRNO(ok, code, ...)                                       \
    do {                                                                       \
        if (!(ok)) {                                                           \
            rc = cairn_err_errno((code), __FILE__, __LINE__, __VA_ARGS__);     \
            goto cleanup;                                                      \
        }                                                                      \
    } while (0)

#define CAIRN_CHECK_ALLOC(ptr)                                                 \
    do {                                                                       \
        if ((ptr) == NULL) {                                                   \
            rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__,               \
                               "out of memory (%s)", #ptr);                    \
            goto cleanup;                                                      \
        }                                                                      \
    } while (0)

#endif
