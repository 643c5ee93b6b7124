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

/* The length of the UTF-8 sequence at s that is valid and prints (no
 * overlong form, surrogate or code point above U+10FFFF; no C1 control),
 * or 0.  The second byte's range depends on the first (RFC 3629). */
static size_t utf8_len(const unsigned char *s)
{
    unsigned char b = s[0], lo = 0x80, hi = 0xbf;
    size_t n;
    if (b >= 0xc2 && b <= 0xdf) n = 2, lo = b == 0xc2 ? 0xa0 : 0x80;
    else if (b >= 0xe0 && b <= 0xef) n = 3, lo = b == 0xe0 ? 0xa0 : 0x80, hi = b == 0xed ? 0x9f : 0xbf;
    else if (b >= 0xf0 && b <= 0xf4) n = 4, lo = b == 0xf0 ? 0x90 : 0x80, hi = b == 0xf4 ? 0x8f : 0xbf;
    else return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf) return 0;
    return n;
}

size_t cairn_escape(char *dst, size_t size, const char *src)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0;
    while (*s) {
        size_t n = *s >= 0x80 ? utf8_len(s) : *s >= 0x20 && *s != 0x7f;
        char esc[5];
        const char *put = (const char *)s;
        if (n == 0) { /* one byte as \xNN; the next starts afresh */
            snprintf(esc, sizeof esc, "\\x%02x", *s);
            put = esc;
        }
        size_t len = n ? n : 4;
        if (o + len >= size) break;
        memcpy(dst + o, put, len);
        o += len;
        s += n ? n : 1;
    }
    dst[o] = '\0';
    return o;
}

static int vset(int code, const char *file, int line, const char *fmt, va_list ap)
{
    char msg[sizeof last.msg]; /* the arguments may include cairn_errmsg() itself */
    vsnprintf(msg, sizeof msg, fmt, ap);
    last.code = code;
    cairn_escape(last.msg, sizeof last.msg, msg);
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
    char raw[1024], prefix[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    cairn_escape(prefix, sizeof prefix, raw);
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
