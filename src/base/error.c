/* The per-thread error record behind include/cairn/error.h. */
#include "cairn/error.h"

#include <errno.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

struct err_rec {
    int code;
    char msg[2048];
    char where[256];
};

/* Thread-local because parallel substeps and reporters run ops in threads. */
static _Thread_local struct err_rec last;

static const struct {
    int code;
    int exit_code;
    const char *text;
} table[] = {
#define CAIRN_ERR_ROW(name, value, exit_code, text) {value, exit_code, text},
    CAIRN_ERRORS(CAIRN_ERR_ROW)
#undef CAIRN_ERR_ROW
};

const char *cairn_strerror(int code)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].code == code) return table[i].text;
    return "unknown error";
}

int cairn_exit_code(int code)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].code == code) return table[i].exit_code;
    return CAIRN_EXIT_RUNTIME;
}

static int vset(int code, const char *file, int line, const char *fmt, va_list ap)
{
    char msg[sizeof last.msg]; /* the arguments may include cairn_errmsg() itself */
    vsnprintf(msg, sizeof msg, fmt, ap);
    last.code = code;
    memcpy(last.msg, msg, sizeof msg);
    snprintf(last.where, sizeof last.where, "%s:%d", file ? file : "?", line);
    return code;
}

int cairn_err_set(int code, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(code, file, line, fmt, ap);
    va_end(ap);
    return code;
}

int cairn_err_wrap(int code, const char *fmt, ...)
{
    char prefix[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    size_t p = strlen(prefix), o = strlen(last.msg);
    if (p + o >= sizeof last.msg) o = sizeof last.msg - 1 - p;
    memmove(last.msg + p, last.msg, o);
    memcpy(last.msg, prefix, p);
    last.msg[p + o] = '\0';
    if (last.code == 0) last.code = code;
    return code;
}

int cairn_err_mpi(int mpi_rc, const char *file, int line, const char *what)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(mpi_rc, text, &len);
    return cairn_err_set(CAIRN_EMPI, file, line, "%s: %s", what, text);
}

/* HDF5 pushes its deepest cause first; keep the first description seen.
 * A system call's failure comes as "what: time = ..., errno = N, error
 * message = '...', ..." (the time ends in a newline): keep what and why. */
static herr_t h5_first(unsigned n, const H5E_error2_t *e, void *data)
{
    char *out = data;
    if (n != 0 || !e->desc) return 0;
    const char *why = strstr(e->desc, "error message = '"), *colon = strchr(e->desc, ':');
    if (why && colon && colon < why) {
        why += strlen("error message = '");
        snprintf(out, 512, "%.*s: %.*s (%s)", (int)(colon - e->desc), e->desc,
                 (int)strcspn(why, "'"), why, e->func_name);
    } else {
        snprintf(out, 512, "%s (%s)", e->desc, e->func_name);
    }
    return 0;
}

int cairn_err_h5(const char *file, int line, const char *what)
{
    char cause[512] = "no details";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, h5_first, cause);
    H5Eclear2(H5E_DEFAULT);
    /* what may be the whole call as written (CAIRN_CHECK_H5): its name will do */
    return cairn_err_set(CAIRN_EHDF5, file, line, "%.*s failed: %s", (int)strcspn(what, "( "), what, cause);
}

int cairn_err_errno(int code, const char *file, int line, const char *fmt, ...)
{
    int saved = errno;
    char head[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    return cairn_err_set(code, file, line, "%s: %s", head, strerror(saved));
}

const char *cairn_errmsg(void) { return last.msg; }
int cairn_errcode(void) { return last.code; }
const char *cairn_errwhere(void) { return last.where; }

void cairn_err_clear(void)
{
    last.code = 0;
    last.msg[0] = '\0';
    last.where[0] = '\0';
}
