/* A job file's text, checked before libconfig parses it (config_priv.h).
 *
 * libconfig 1.5 misbehaves on some input instead of reporting it: an
 * @include of a directory or of "" makes its scanner print "input in flex
 * scanner failed" and exit; an integer literal beyond 32 bits without an L
 * suffix is silently wrapped (4294967296 reads as 0); a very long line
 * takes time quadratic in its length.  So the text is scanned first, and
 * each such problem becomes a FILE:LINE diagnostic. */
#include "cairn/diag.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "config_priv.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool ident_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_' || ch == '-' || ch == '*';
}

/* An integer literal at p (digits or 0x...), ending at *end; false if it is
 * part of a float.  *v gets its value, *big whether it exceeds 64 bits. */
static bool int_literal(const char *p, const char **end, unsigned long long *v, bool *big)
{
    bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
    const char *q = p + (hex ? 2 : 0);
    *v = 0;
    *big = false;
    for (; hex ? isxdigit((unsigned char)*q) : isdigit((unsigned char)*q); q++) {
        unsigned d = isdigit((unsigned char)*q) ? (unsigned)(*q - '0') : (unsigned)(tolower(*q) - 'a' + 10);
        unsigned long long base = hex ? 16 : 10;
        if (*v > (~0ULL - d) / base) *big = true;
        *v = *v * base + d;
    }
    *end = q;
    return hex || (*q != '.' && *q != 'e' && *q != 'E');
}

/* Report an integer literal that libconfig would wrap or cannot hold. */
static int check_literal(struct diags *d, const char *file, int line, const char *p,
                         const char **end)
{
    unsigned long long v;
    bool big;
    if (!int_literal(p, end, &v, &big)) {
        while (isalnum((unsigned char)**end) || **end == '.' || **end == '+' || **end == '-') (*end)++;
        return 0; /* a float: libconfig reads it as a double */
    }
    int len = (int)(*end - p);
    bool suffix = **end == 'L';
    while (**end == 'L') (*end)++;
    if (big || (suffix && v > (unsigned long long)INT64_MAX)) {
        diags_add(d, file, line, "integer %.*s is out of range (at most %lld)", len, p,
                  (long long)INT64_MAX);
        return 1;
    }
    if (!suffix && v > (unsigned long long)INT32_MAX) {
        diags_add(d, file, line,
                  "integer %.*s needs an L suffix (%.*sL): libconfig reads integers without "
                  "one as 32 bits and would change its value", len, p, len, p);
        return 1;
    }
    return 0;
}

static int check_file(struct diags *d, const char *file, const char *dir, int depth);

/* `@include "NAME"` at p (a line's start): NAME must be a regular file,
 * itself checked. */
static int check_include(struct diags *d, const char *file, int line, const char *p,
                         const char *dir, int depth)
{
    char name[4096], path[8200];
    const char *q = p + strlen("@include");
    while (*q == ' ' || *q == '\t') q++;
    const char *close = *q == '"' ? strchr(q + 1, '"') : NULL;
    const char *nl = strchr(q, '\n');
    if (!close || (nl && close > nl) || (size_t)(close - q - 1) >= sizeof name) {
        diags_add(d, file, line, "@include needs a file name in double quotes");
        return 1;
    }
    snprintf(name, sizeof name, "%.*s", (int)(close - q - 1), q + 1);
    if (name[0] == '/' || !dir)
        snprintf(path, sizeof path, "%s", name);
    else
        snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!name[0] || !fsx_is_regular(path)) {
        diags_add(d, file, line, "@include \"%s\": not a readable regular file (%s)", name, path);
        return 1;
    }
    if (depth >= CFG_MAX_INCLUDE) {
        diags_add(d, file, line, "@include \"%s\": includes nest more than %d deep", name,
                  CFG_MAX_INCLUDE);
        return 1;
    }
    return check_file(d, path, dir, depth + 1);
}

int cfg_text_check(struct diags *d, const char *file, const char *text, const char *dir, int line,
                   int depth)
{
    int problems = 0, step = line > 0;
    size_t len = strlen(text);
    if (len > CFG_MAX_BYTES) {
        diags_add(d, file, 0, "job file of %zu bytes; job files are limited to %d", len, CFG_MAX_BYTES);
        return 1;
    }
    const char *line_start = text;
    for (const char *p = text; *p;) {
        if (*p == '\n') {
            if (p - line_start > CFG_MAX_LINE) {
                diags_add(d, file, line, "line of %ld bytes; job file lines are limited to %d",
                          (long)(p - line_start), CFG_MAX_LINE);
                return problems + 1;
            }
            line += step;
            line_start = ++p;
        } else if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
            p += strcspn(p, "\n");
        } else if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            for (const char *q = p; q < (e ? e : p + strlen(p)); q++)
                if (*q == '\n') line += step, line_start = q + 1;
            p = e ? e + 2 : p + strlen(p);
        } else if (*p == '"') {
            for (p++; *p && *p != '"' && *p != '\n'; p++)
                if (*p == '\\' && p[1]) p++;
            if (*p == '"') p++;
        } else if (*p == '@' && strncmp(p, "@include", 8) == 0) {
            problems += check_include(d, file, line, p, dir, depth);
            p += strcspn(p, "\n");
        } else if (isalpha((unsigned char)*p) || *p == '_' || *p == '*') { /* a name */
            while (ident_char(*p)) p++;
        } else if (isdigit((unsigned char)*p)) {
            const char *end;
            problems += check_literal(d, file, line, p, &end);
            p = end;
        } else {
            p++;
        }
    }
    if (strlen(line_start) > CFG_MAX_LINE) {
        diags_add(d, file, line, "line of %zu bytes; job file lines are limited to %d",
                  strlen(line_start), CFG_MAX_LINE);
        problems++;
    }
    return problems;
}

int config_read_text(const char *path, char **text, int *line)
{
    int rc = 0;
    size_t len = 0;
    int64_t size = fsx_file_size(path);
    *text = NULL;
    if (!fsx_is_regular(path)) CAIRN_FAIL(CAIRN_EINPUT, "cannot read job file: not a regular file");
    if (size > CFG_MAX_BYTES)
        CAIRN_FAIL(CAIRN_EINPUT, "job file of %lld bytes; job files are limited to %d",
                   (long long)size, CFG_MAX_BYTES);
    if (fsx_read_all(path, text, &len)) CAIRN_FAIL(CAIRN_EINPUT, "%s", cairn_errmsg());
    if (strlen(*text) != len) {
        int at = 1;
        for (const char *p = *text; *p; p++) at += *p == '\n';
        if (line) *line = at;
        CAIRN_FAIL(CAIRN_EINPUT, "a NUL byte (a job file is text)");
    }
cleanup:
    if (rc) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

char *cfg_read_text(struct diags *d, const char *path)
{
    char *text = NULL;
    int line = 0;
    if (config_read_text(path, &text, &line)) diags_add(d, path, line, "%s", cairn_errmsg());
    return text;
}

static int check_file(struct diags *d, const char *file, const char *dir, int depth)
{
    char *text = cfg_read_text(d, file);
    int problems = text ? cfg_text_check(d, file, text, dir, 1, depth) : 1;
    free(text);
    return problems;
}
