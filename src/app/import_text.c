/* Delimited text (CSV, TSV) into a data file, every rank parsing a byte
 * range of the inputs; see include/cairn/dataimport.h.
 *
 * Where records start.  A newline ends a record unless it is inside a
 * quoted field, and RFC 4180 quoting writes a quote in a field as two, so
 * a newline is inside quotes exactly when an odd number of quotes precede
 * it in its file.  That is the definition used, for any input: a record
 * starts at its file's start and after every newline with an even number
 * of quotes before it.  Each rank counts the quotes and newlines of its
 * range, an ordered scan (restarting at each file) gives every rank those
 * before its range, and the rank then owns the records that start in its
 * range, reading on past its end to finish the last.  The records, their
 * line numbers and so the output are the same for any number of ranks; a
 * stray quote makes its record run on to the next quote, which the
 * tokenizer then refuses. */
#include "import_priv.h"

#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/numtext.h"
#include "cairn/partition.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { CHUNK = 4 << 20, MAX_RECORD = 16 << 20 };

/* ---- records ---------------------------------------------------------------- */

struct field {
    const char *s;
    size_t n;
    int line;      /* newlines in its record before it */
    int64_t col;   /* its byte column on its line, from 1 */
    bool escaped;  /* quoted, with "" inside */
};
enum { T_OK, T_MORE, T_BAD };
static const char too_many[] = "more fields than the columns";
struct tok {
    size_t end;   /* the record's bytes (its newline included) */
    int lines;    /* the newlines in them */
    int nf;
    int bad_line; /* where a T_BAD is, and what */
    int64_t bad_col;
    int end_line; /* where the record's last line ends */
    int64_t end_col;
    const char *why;
};

/* Newlines in [p, p + n): lines, and *last the offset after the last one. */
static int newlines(const char *p, size_t n, size_t *last)
{
    int k = 0;
    for (const char *q = p, *e = p + n; (q = memchr(q, '\n', (size_t)(e - q))); q++) {
        k++;
        *last = (size_t)(q - p) + 1;
    }
    return k;
}

/* One quoted field from p[i] (the opening quote); *i past the closing one. */
static int tok_quoted(const char *p, size_t len, bool eof, size_t *i, struct field *x, int *lines, size_t *line0)
{
    size_t s = ++*i;
    for (;;) {
        const char *q = memchr(p + *i, '"', len - *i);
        size_t at = q ? (size_t)(q - p) : len, last = 0;
        int k = newlines(p + *i, at - *i, &last);
        if (k) *lines += k, *line0 = *i + last;
        if (!q) return eof ? T_BAD : T_MORE;
        if (at + 1 == len && !eof) return T_MORE; /* a quote, or the first of two? */
        if (at + 1 < len && p[at + 1] == '"') {
            x->escaped = true;
            *i = at + 2;
            continue;
        }
        x->s = p + s;
        x->n = at - s;
        *i = at + 1;
        return T_OK;
    }
}

/* The first separator, newline or quote in p[i, len), or len: an
 * unquoted field's end, 16 bytes at a time where SSE2 is (every x86-64). */
static size_t field_end(const char *p, size_t i, size_t len, char delim)
{
#ifdef __SSE2__
    const __m128i d = _mm_set1_epi8(delim), nl = _mm_set1_epi8('\n'), q = _mm_set1_epi8('"');
    for (; i + 16 <= len; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, d), _mm_cmpeq_epi8(x, nl)), _mm_cmpeq_epi8(x, q));
        int m = _mm_movemask_epi8(hit);
        if (m) return i + (size_t)__builtin_ctz((unsigned)m);
    }
#endif
    while (i < len && p[i] != delim && p[i] != '\n' && p[i] != '"') i++;
    return i;
}

/* The record at p (len bytes there; eof: the file ends at p + len) split
 * into at most max fields. */
static int tokenize(const char *p, size_t len, bool eof, char delim, int max, struct field *f, struct tok *t)
{
    size_t i = 0, line0 = 0;
    int lines = 0;
    t->nf = 0;
    for (;;) {
        struct field *x = &f[t->nf];
        if (t->nf == max) {
            t->why = too_many;
            goto bad;
        }
        *x = (struct field){.line = lines, .col = (int64_t)(i - line0) + 1};
        t->nf++;
        if (i < len && p[i] == '"') {
            int r = tok_quoted(p, len, eof, &i, x, &lines, &line0);
            if (r == T_MORE) return T_MORE;
            if (r == T_BAD) { /* named at its opening quote */
                t->why = "a quoted field without its closing quote";
                t->bad_line = x->line, t->bad_col = x->col;
                return T_BAD;
            }
        } else {
            size_t s = i;
            i = field_end(p, i, len, delim);
            if (i < len && p[i] == '"') {
                t->why = "a quote inside a field that does not start with one";
                goto bad;
            }
            x->s = p + s;
            x->n = i - s;
        }
        if (i == len && !eof) return T_MORE;
        t->end_line = lines, t->end_col = (int64_t)(i - line0) + 1;
        if (i == len) { /* the file's last record, without its newline */
            t->end = len, t->lines = lines;
            return T_OK;
        }
        if (p[i] == delim) {
            i++;
            continue;
        }
        if (p[i] == '\r' && i + 1 == len && !eof) return T_MORE;
        if (p[i] == '\r' && i + 1 < len && p[i + 1] == '\n') i++;
        if (p[i] != '\n') {
            t->why = "text after a closing quote";
            goto bad;
        }
        if (x->n && x->s[x->n - 1] == '\r' && x->s + x->n == p + i) x->n--; /* CRLF */
        t->end = i + 1, t->lines = lines + 1;
        return T_OK;
    }
bad:
    t->bad_line = lines, t->bad_col = (int64_t)(i - line0) + 1;
    return T_BAD;
}

/* The end of the record at p by the quote rule alone (a bad record's). */
static int record_end(const char *p, size_t len, bool eof, struct tok *t)
{
    int q = 0, lines = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '"') q ^= 1;
        else if (p[i] == '\n') {
            lines++;
            if (!q) {
                t->end = i + 1, t->lines = lines;
                return T_OK;
            }
        }
    }
    if (!eof) return T_MORE;
    t->end = len, t->lines = lines;
    return T_OK;
}

/* A field's value into dst (room for x->n bytes): each "" of an escaped
 * field is one quote (the tokenizer let no other quote in).  Returns its
 * length. */
static size_t unquote(const struct field *x, char *dst)
{
    size_t n = 0;
    for (size_t j = 0; j < x->n; j++) {
        dst[n++] = x->s[j];
        if (x->escaped && x->s[j] == '"') j++;
    }
    return n;
}

/* ---- this rank's rows ------------------------------------------------------- */

struct rows {
    int64_t n, cap;
    float *x, *t;
    int32_t *y;
    int64_t *ids[IMPORT_MAX_IDS];
};

/* *p to room for cap rows of per elements (none if per is 0). */
static bool grow(void *p, int64_t cap, int64_t per, size_t size)
{
    if (per == 0) return true;
    void *q = realloc(*(void **)p, (size_t)(cap * per) * size);
    if (q) *(void **)p = q;
    return q != NULL;
}

static int rows_room(struct rows *r, const struct layout *L, int n_ids)
{
    if (r->n < r->cap) return 0;
    int64_t cap = r->cap ? 2 * r->cap : 4096;
    bool ok = grow(&r->x, cap, L->features, sizeof *r->x) && grow(&r->t, cap, L->targets, sizeof *r->t) &&
              grow(&r->y, cap, L->labels && !L->targets, sizeof *r->y);
    for (int i = 0; ok && i < n_ids; i++) ok = grow(&r->ids[i], cap, L->ids_k[i], sizeof **r->ids);
    if (!ok) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory for %lld rows", (long long)cap);
    r->cap = cap;
    return 0;
}

static void rows_free(struct rows *r, int n_ids)
{
    free(r->x);
    free(r->t);
    free(r->y);
    for (int i = 0; i < n_ids; i++) free(r->ids[i]);
}

/* ---- values ----------------------------------------------------------------- */

struct ctx {
    const struct import_spec *spec;
    const struct layout *L;
    struct rows rows;
    struct import_bad bad;
    struct field *f;
    char *unq; /* an escaped field without its doubled quotes */
};

/* A field's value into row r, or a message in why. */
static const char *value(struct ctx *c, int k, const struct field *x, int64_t r, char *why, size_t size)
{
    const struct col *cl = &c->L->col[k];
    const struct import_spec *spec = c->spec;
    double v;
    int64_t i;
    char q[64];
    switch (cl->kind) {
    case C_FEATURE:
    case C_TARGET:
        if (x->n == 0 && cl->kind == C_FEATURE && spec->fill_set) v = spec->fill;
        else if (x->n == 0) return cl->kind == C_TARGET ? "a missing target" : "a missing value (--fill sets one)";
        else {
            int e = num_f64(x->s, x->n, &v);
            if (e != NUM_OK) import_quote(q, sizeof q, x->s, x->n);
            if (e == NUM_SYNTAX) return snprintf(why, size, "'%s' is not a number", q), why;
            if (e == NUM_RANGE) return snprintf(why, size, "%s is out of range", q), why;
        }
        if (spec->log1p && cl->kind == C_FEATURE) v = log1p(v > 0 ? v : 0); /* the fill value too */
        float f = (float)v;
        if (!isfinite(f)) {
            import_quote(q, sizeof q, x->s, x->n);
            return snprintf(why, size, "%s is beyond f32's range", x->n ? q : "the fill value"), why;
        }
        if (cl->kind == C_FEATURE) c->rows.x[r * c->L->features + cl->pos] = f;
        else c->rows.t[r * c->L->targets + cl->pos] = f;
        return NULL;
    case C_LABEL:
        if (x->n == 0) return "a missing label";
        int e = num_i64(x->s, x->n, &i);
        if (e != NUM_OK || i < 0 || i > INT32_MAX) import_quote(q, sizeof q, x->s, x->n);
        if (e == NUM_SYNTAX) return snprintf(why, size, "class label '%s' is not an integer", q), why;
        if (e == NUM_RANGE || i < 0 || i > INT32_MAX)
            return snprintf(why, size, "class label %s is out of range (0 to 2^31 - 1)", q), why;
        c->rows.y[r] = (int32_t)i;
        return NULL;
    case C_IDS:
        if (x->n == 0) i = -1;
        else {
            e = num_i64(x->s, x->n, &i);
            if (e != NUM_OK || i < -1) import_quote(q, sizeof q, x->s, x->n);
            if (e == NUM_SYNTAX) return snprintf(why, size, "id '%s' is not an integer", q), why;
            if (e == NUM_RANGE || i < -1) return snprintf(why, size, "id %s is out of range (-1 or more)", q), why;
        }
        c->rows.ids[cl->set][r * c->L->ids_k[cl->set] + cl->pos] = i;
        return NULL;
    case C_HASH: {
        const char *s = x->s;
        size_t n = x->n;
        if (x->escaped) s = c->unq, n = unquote(x, c->unq); /* hash the value, not its quoting */
        i = n == 0 ? spec->empty_id
                   : (int64_t)(num_mix(num_fnv1a(NUM_FNV_BASIS, s, n) ^ c->L->salt[cl->set]) %
                               (uint64_t)spec->ids[cl->set].rows);
        c->rows.ids[cl->set][r * c->L->ids_k[cl->set] + cl->pos] = i;
        return NULL;
    }
    default: return NULL;
    }
}

/* The tokenized record into the next row; false if it is bad (noted). */
static bool record_row(struct ctx *c, const struct tok *t, const char *file, int64_t line)
{
    const struct layout *L = c->L;
    char why[160], nm[96];
    if (t->nf < L->n) { /* named where the record ends */
        import_bad_add(&c->bad, "%s:%lld:%lld: %d fields, expected %d", file, (long long)(line + t->end_line),
                       (long long)t->end_col, t->nf, L->n);
        return false;
    }
    for (int k = 0; k < L->n; k++) {
        const struct field *x = &c->f[k];
        const char *w = value(c, k, x, c->rows.n, why, sizeof why);
        if (w) {
            import_bad_add(&c->bad, "%s:%lld:%lld: column %s: %s", file, (long long)(line + x->line), (long long)x->col,
                           import_col_name(L, k, nm, sizeof nm), w);
            return false;
        }
    }
    c->rows.n++;
    return true;
}

/* ---- reading ---------------------------------------------------------------- */

/* A window on one input file: bytes [off, off + len) at p. */
struct rbuf {
    int fd;
    const char *path;
    int64_t size, off;
    char *p;
    size_t len, cap;
};

/* Make the window start at from and hold at least want bytes of the file
 * from there (fewer at its end). */
static int rb_need(struct rbuf *b, int64_t from, size_t want)
{
    int rc = 0;
    if (from + (int64_t)want > b->size) want = (size_t)(b->size - from);
    if (from >= b->off && from + (int64_t)want <= b->off + (int64_t)b->len) return 0;
    if (from >= b->off && from < b->off + (int64_t)b->len) { /* keep what is there */
        size_t keep = (size_t)(b->off + (int64_t)b->len - from);
        memmove(b->p, b->p + (from - b->off), keep);
        b->len = keep;
    } else b->len = 0;
    b->off = from;
    size_t need = want > CHUNK ? want : CHUNK;
    if (need > b->cap) {
        char *p = realloc(b->p, need);
        CAIRN_CHECK_ALLOC(p);
        b->p = p, b->cap = need;
    }
    size_t more = b->cap - b->len;
    if (b->off + (int64_t)(b->len + more) > b->size) more = (size_t)(b->size - b->off) - b->len;
    CAIRN_CHECK(fsx_pread(b->fd, b->p + b->len, more, b->off + (int64_t)b->len, b->path));
    b->len += more;
cleanup:
    return rc;
}

/* Quotes and newlines in [a, b) of the file. */
static int count_range(struct rbuf *rb, int64_t a, int64_t b, int64_t *quotes, int64_t *lines,
                       struct import_progress *pg, int64_t *done)
{
    int rc = 0;
    for (int64_t at = a; at < b;) {
        size_t n = (size_t)(b - at > CHUNK ? CHUNK : b - at);
        CAIRN_CHECK(rb_need(rb, at, n));
        const unsigned char *p = (const unsigned char *)rb->p + (at - rb->off);
        int64_t q = 0, l = 0;
        for (size_t i = 0; i < n; i++) {
            q += p[i] == '"';
            l += p[i] == '\n';
        }
        *quotes += q, *lines += l;
        at += (int64_t)n;
        *done += (int64_t)n / 4; /* counting is a quarter of the work, roughly */
        import_progress(pg, *done);
    }
cleanup:
    return rc;
}

/* The first record start in [a, b) of the file (parity: the quotes before
 * a, mod 2), or b; *lines gains the newlines passed. */
static int first_start(struct rbuf *rb, int64_t a, int64_t b, int parity, int64_t *s, int64_t *lines)
{
    int rc = 0;
    *s = b;
    if (a == 0) {
        *s = 0;
        return 0;
    }
    CAIRN_CHECK(rb_need(rb, a - 1, 1));
    if (rb->p[a - 1 - rb->off] == '\n' && !parity) {
        *s = a;
        return 0;
    }
    for (int64_t at = a; at + 1 < b;) { /* a newline at b - 1 starts a record at b: not ours */
        size_t n = (size_t)(b - 1 - at > CHUNK ? CHUNK : b - 1 - at);
        CAIRN_CHECK(rb_need(rb, at, n));
        const char *p = rb->p + (at - rb->off);
        for (size_t i = 0; i < n; i++) {
            if (p[i] == '"') parity ^= 1;
            else if (p[i] == '\n') {
                ++*lines;
                if (!parity) {
                    *s = at + (int64_t)i + 1;
                    return 0;
                }
            }
        }
        at += (int64_t)n;
    }
cleanup:
    return rc;
}

/* ---- a piece: this rank's part of one file ---------------------------------- */

struct piece {
    int file;
    int64_t a, b;          /* bytes of the file */
    int64_t quotes, lines; /* in [0, a), then in [a, b) */
    int64_t qin, lin;
};

/* Tokenize the record at s, reading on as needed; a bad record gets its
 * end by the quote rule.  *how: T_OK, T_BAD, or T_MORE for a record longer
 * than MAX_RECORD. */
static int next_record(struct ctx *c, struct rbuf *rb, int64_t s, struct tok *t, int *how)
{
    int rc = 0;
    size_t want = 1 << 16;
    for (;;) {
        CAIRN_CHECK(rb_need(rb, s, want));
        const char *p = rb->p + (s - rb->off);
        size_t len = (size_t)(rb->off + (int64_t)rb->len - s);
        bool eof = s + (int64_t)len == rb->size;
        *how = tokenize(p, len, eof, c->spec->delim, c->L->n, c->f, t);
        if (*how == T_BAD) {
            struct tok e;
            if (record_end(p, len, eof, &e) == T_OK) {
                t->end = e.end, t->lines = e.lines;
                return 0;
            }
        } else if (*how == T_OK) return 0;
        if (len >= MAX_RECORD) {
            *how = T_MORE; /* a bad record's end not found either */
            return 0;
        }
        want = len * 2 > MAX_RECORD ? MAX_RECORD : len * 2;
    }
cleanup:
    return rc;
}

/* A record that cannot be skipped: it ends the parse (reported unless
 * too many bad records come before it). */
static void unskippable(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void unskippable(struct ctx *c, const char *fmt, ...)
{
    char m[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s", m);
    import_bad_fatal(&c->bad, CAIRN_EINPUT);
}

/* The newlines in [a, b) of the file. */
static int count_lines(struct rbuf *rb, int64_t a, int64_t b, int64_t *lines)
{
    int rc = 0;
    for (int64_t at = a; at < b;) {
        size_t n = (size_t)(b - at > CHUNK ? CHUNK : b - at), last;
        CAIRN_CHECK(rb_need(rb, at, n));
        *lines += newlines(rb->p + (at - rb->off), n, &last);
        at += (int64_t)n;
    }
cleanup:
    return rc;
}

/* The records that start in the piece into c->rows, from data (the
 * file's first byte after a BOM and the header) on. */
static int parse_piece(struct ctx *c, struct rbuf *rb, const struct piece *pc, int64_t data,
                       struct import_progress *pg, int64_t *done)
{
    int rc = 0, how;
    int64_t s, line = pc->lines + 1;
    if (pc->a <= data) { /* before it: a BOM, blank lines, the header (rank 0 checked it) */
        s = data < pc->b ? data : pc->b;
        CAIRN_CHECK(count_lines(rb, pc->a, s, &line));
    } else CAIRN_CHECK(first_start(rb, pc->a, pc->b, (int)(pc->quotes & 1), &s, &line));
    *done += s - pc->a;
    while (s < pc->b && s < rb->size && s >= data) {
        struct tok t = {0};
        CAIRN_CHECK(rows_room(&c->rows, c->L, c->spec->n_ids));
        CAIRN_CHECK(next_record(c, rb, s, &t, &how));
        const char *p = rb->p + (s - rb->off);
        if (how == T_MORE || t.end == 0) {
            unskippable(c, "%s:%lld: a record of more than %d MiB (a quote without its pair?)", rb->path,
                        (long long)line, MAX_RECORD >> 20);
            break;
        }
        if (how == T_BAD && t.lines > 1) {
            unskippable(c, "%s:%lld:%lld: %s; by the quotes its record runs on to line %lld, so it cannot be "
                        "skipped", rb->path, (long long)(line + t.bad_line), (long long)t.bad_col, t.why,
                        (long long)(line + t.lines - 1));
            break;
        }
        bool blank = (t.end == 1 && p[0] == '\n') || (t.end == 2 && p[0] == '\r' && p[1] == '\n');
        if (blank) {
        } else if (how == T_BAD)
            import_bad_add(&c->bad, "%s:%lld:%lld: %s", rb->path, (long long)(line + t.bad_line),
                           (long long)t.bad_col, t.why);
        else record_row(c, &t, rb->path, line);
        if (c->bad.count > c->spec->skip_bad) break; /* the import fails: no need to read on */
        s += (int64_t)t.end;
        line += t.lines;
        *done += (int64_t)t.end * 3 / 4;
        import_progress(pg, *done);
    }
cleanup:
    return rc;
}

/* ---- the header ------------------------------------------------------------- */

static bool utf8_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
        if (k == 9 || (k == 1 && c < 0xc2) || i + k >= n + (k == 0)) return false;
        for (size_t j = 1; j <= k; j++)
            if ((s[i + j] & 0xc0) != 0x80) return false;
        if (k == 2 && ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0))) return false;
        if (k == 3 && ((c == 0xf0 && s[i + 1] < 0x90) || c > 0xf4 || (c == 0xf4 && s[i + 1] >= 0x90))) return false;
        i += k + 1;
    }
    return true;
}

/* A UTF-8 byte order mark's length at the start of file (0 or 3). */
static int bom(struct rbuf *rb)
{
    if (rb->size < 3 || rb_need(rb, 0, 3) != 0) return 0;
    return memcmp(rb->p, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

/* File i's first record that is not blank, after a BOM: *rec (len bytes,
 * the caller frees; NULL if there is none), where it ends (*end) and on
 * which line it starts (*line). */
static int first_record(const struct import_spec *spec, int i, int64_t size, struct field *f, char **rec, size_t *len,
                        int64_t *end, int64_t *line)
{
    int rc = 0, how;
    struct rbuf rb = {.fd = -1, .path = spec->inputs[i], .size = size};
    struct ctx c = {.spec = spec, .L = &(struct layout){.n = IMPORT_MAX_COLUMNS}, .f = f};
    struct tok t = {0};
    rb.fd = open(rb.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    CAIRN_CHECK_ERRNO(rb.fd >= 0, CAIRN_EINPUT, "cannot open %s", rb.path);
    *rec = NULL, *line = 1;
    for (int64_t s = bom(&rb); s < size; s += (int64_t)t.end, *line += t.lines) {
        CAIRN_CHECK(next_record(&c, &rb, s, &t, &how));
        const char *p = rb.p + (s - rb.off);
        if (how == T_MORE)
            CAIRN_FAIL(CAIRN_EINPUT, "%s:%lld: a record of more than %d MiB (a quote without its pair?)", rb.path,
                       (long long)*line, MAX_RECORD >> 20);
        if (how == T_BAD && t.why == too_many)
            CAIRN_FAIL(CAIRN_EINPUT, "%s:%lld: more than %d columns", rb.path, (long long)*line, IMPORT_MAX_COLUMNS);
        if (how == T_BAD)
            CAIRN_FAIL(CAIRN_EINPUT, "%s:%lld:%lld: %s", rb.path, (long long)(*line + t.bad_line), (long long)t.bad_col,
                       t.why);
        if ((t.end == 1 && p[0] == '\n') || (t.end == 2 && p[0] == '\r' && p[1] == '\n')) continue; /* blank */
        *rec = malloc(t.end + 1);
        CAIRN_CHECK_ALLOC(*rec);
        memcpy(*rec, p, t.end);
        *len = t.end, *end = s + (int64_t)t.end;
        break;
    }
cleanup:
    if (rb.fd >= 0) close(rb.fd);
    free(rb.p);
    return rc;
}

/* File i's first byte after a BOM (a file without a header). */
static int data_start(const char *path, int64_t size, int64_t *data)
{
    struct rbuf rb = {.fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), .path = path, .size = size};
    if (rb.fd < 0) return cairn_err_errno(CAIRN_EINPUT, __FILE__, __LINE__, "cannot open %s", path);
    *data = bom(&rb);
    close(rb.fd);
    free(rb.p);
    return 0;
}

/* Rank 0: the inputs' sizes, where each one's data start (after a BOM and
 * the header), and the first record of the first (the header, which every
 * other file must repeat, or the record that counts the columns). */
static int probe(const struct import_spec *spec, int64_t *sizes, int64_t *data, char **head, size_t *head_len,
                 int64_t *head_line)
{
    int rc = 0;
    char *other = NULL;
    size_t olen;
    int64_t oline;
    struct field *f = malloc((IMPORT_MAX_COLUMNS + 1) * sizeof *f);
    CAIRN_CHECK_ALLOC(f);
    CAIRN_CHECK(data_sizes(spec->inputs, spec->n_inputs, sizes));
    for (int i = 0; i < spec->n_inputs; i++) {
        data[i] = 0;
        if (!spec->header && (*head || spec->names)) { /* the columns are known */
            CAIRN_CHECK(data_start(spec->inputs[i], sizes[i], &data[i]));
            continue;
        }
        CAIRN_CHECK(first_record(spec, i, sizes[i], f, *head ? &other : head, *head ? &olen : head_len, &data[i],
                                 *head ? &oline : head_line));
        if (!spec->header) { /* it counts the columns, and is data */
            CAIRN_CHECK(data_start(spec->inputs[i], sizes[i], &data[i]));
            continue;
        }
        if (!*head || (!other && i > 0)) CAIRN_FAIL(CAIRN_EINPUT, "%s: no header line (the file is empty or blank)", spec->inputs[i]);
        if (other && (olen != *head_len || memcmp(other, *head, olen) != 0))
            CAIRN_FAIL(CAIRN_EINPUT, "%s:%lld: a header other than %s's (the files are joined by column)",
                       spec->inputs[i], (long long)oline, spec->inputs[0]);
        free(other);
        other = NULL;
    }
    if (!*head && !spec->names) CAIRN_FAIL(CAIRN_EINPUT, "%s", "the inputs hold no record");
cleanup:
    free(other);
    free(f);
    return rc;
}

/* The columns: their number and names, from the header (head) or from
 * --columns, else the first record's count. */
static int layout_names(struct layout *L, const struct import_spec *spec, const char *head, size_t len,
                        int64_t line)
{
    int rc = 0;
    struct tok t = {0};
    struct field *f = malloc((IMPORT_MAX_COLUMNS + 1) * sizeof *f);
    CAIRN_CHECK_ALLOC(f);
    if (spec->names) { /* NAME,NAME,... */
        L->n = 1;
        for (const char *s = spec->names; *s; s++) L->n += *s == ',';
        L->name = calloc((size_t)L->n, sizeof *L->name);
        CAIRN_CHECK_ALLOC(L->name);
        const char *s = spec->names;
        for (int c = 0; c < L->n; c++) {
            size_t n = strcspn(s, ",");
            L->name[c] = strndup(s, n);
            CAIRN_CHECK_ALLOC(L->name[c]);
            s += n + (s[n] == ',');
        }
        goto cleanup;
    }
    if (tokenize(head, len, true, spec->delim, IMPORT_MAX_COLUMNS, f, &t) != T_OK)
        CAIRN_FAIL(CAIRN_EINPUT, "%s:1: more than %d columns", spec->inputs[0], IMPORT_MAX_COLUMNS);
    L->n = t.nf;
    if (!spec->header) goto cleanup;
    L->name = calloc((size_t)L->n, sizeof *L->name);
    CAIRN_CHECK_ALLOC(L->name);
    for (int c = 0; c < L->n; c++) {
        if (!utf8_valid((const unsigned char *)f[c].s, f[c].n))
            CAIRN_FAIL(CAIRN_EINPUT, "%s:%lld:%lld: column %d's name is not UTF-8", spec->inputs[0],
                       (long long)(line + f[c].line), (long long)f[c].col, c + 1);
        L->name[c] = malloc(f[c].n + 1);
        CAIRN_CHECK_ALLOC(L->name[c]);
        L->name[c][unquote(&f[c], L->name[c])] = 0;
    }
cleanup:
    free(f);
    return rc;
}

/* ---- where each rank's pieces start ------------------------------------------ */

/* A rank's last piece's counts, for the scan: flags 1, the piece starts at
 * its file's start (the counts are the file's so far); 2, no piece. */
struct seg {
    int64_t file, quotes, lines, flags;
};

static void seg_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const struct seg *a = in;
    struct seg *b = inout;
    for (int i = 0; i < *len; i++, a++, b++) {
        if (a->flags & 2) continue;
        if ((b->flags & 2) || (!(b->flags & 1) && b->file == a->file))
            *b = (struct seg){a->file, a->quotes + (b->flags & 2 ? 0 : b->quotes),
                              a->lines + (b->flags & 2 ? 0 : b->lines), a->flags};
    }
}

/* Collective: each piece's counts before its start. */
static int seg_scan(MPI_Comm comm, struct piece *pc, int np)
{
    int rc = 0, me = 0;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    struct seg mine = {.flags = 2}, before = {.flags = 2};
    if (np) mine = (struct seg){pc[np - 1].file, pc[np - 1].qin, pc[np - 1].lin, pc[np - 1].a == 0};
    MPI_Comm_rank(comm, &me);
    CAIRN_CHECK_MPI(MPI_Type_contiguous(4, MPI_INT64_T, &t));
    CAIRN_CHECK_MPI(MPI_Type_commit(&t));
    CAIRN_CHECK_MPI(MPI_Op_create(seg_op, 0, &op));
    CAIRN_CHECK_MPI(MPI_Exscan(&mine, &before, 1, t, op, comm));
    if (me == 0) before = (struct seg){.flags = 2};
    if (np && pc[0].a > 0) {
        if ((before.flags & 2) || before.file != pc[0].file)
            CAIRN_FAIL(CAIRN_ERUNTIME, "%s", "the ranks' byte ranges do not join (a bug)");
        pc[0].quotes = before.quotes, pc[0].lines = before.lines;
    }
cleanup:
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    return rc;
}

/* This rank's pieces: its block of the inputs' bytes, cut at files. */
static int pieces_of(MPI_Comm comm, const int64_t *sizes, int n_files, struct piece **out, int *np, int64_t *total)
{
    int me = 0, size = 1;
    int64_t A, B, at = 0;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    *total = 0;
    for (int i = 0; i < n_files; i++) *total += sizes[i];
    block_range(*total, size, me, &A, &B);
    *out = calloc((size_t)n_files + 1, sizeof **out);
    if (!*out) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    *np = 0;
    for (int i = 0; i < n_files; at += sizes[i++]) {
        int64_t a = A > at ? A : at, b = B < at + sizes[i] ? B : at + sizes[i];
        if (a < b) (*out)[(*np)++] = (struct piece){.file = i, .a = a - at, .b = b - at};
    }
    return 0;
}

/* ---- the import -------------------------------------------------------------- */

/* Rank 0 finds the header; every rank learns it, the sizes and where each
 * file's data start. */
static int share_header(MPI_Comm comm, const struct import_spec *spec, int64_t *sizes, int64_t *data,
                        struct layout *L)
{
    int rc = 0, me = 0;
    char *head = NULL;
    size_t len = 0;
    int64_t at[2] = {0, 1}; /* the header's bytes and line */
    MPI_Comm_rank(comm, &me);
    if (me == 0) rc = probe(spec, sizes, data, &head, &len, &at[1]);
    CAIRN_CHECK(coll_agree(comm, rc));
    at[0] = (int64_t)len;
    CAIRN_CHECK_MPI(MPI_Bcast(sizes, spec->n_inputs, MPI_INT64_T, 0, comm));
    CAIRN_CHECK_MPI(MPI_Bcast(data, spec->n_inputs, MPI_INT64_T, 0, comm));
    CAIRN_CHECK_MPI(MPI_Bcast(at, 2, MPI_INT64_T, 0, comm));
    if (!head) head = malloc((size_t)at[0] + 1);
    CAIRN_CHECK(coll_agree(comm, head ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory")));
    CAIRN_CHECK_MPI(MPI_Bcast(head, (int)at[0], MPI_BYTE, 0, comm)); /* at most MAX_RECORD */
    rc = layout_names(L, spec, head, (size_t)at[0], at[1]);
    if (rc == 0) rc = import_layout_resolve(L, spec);
    rc = coll_agree(comm, rc); /* the same on every rank, but for memory */
cleanup:
    free(head);
    return rc;
}

static int open_piece(struct rbuf *rb, const struct import_spec *spec, const int64_t *sizes, const struct piece *pc)
{
    rb->path = spec->inputs[pc->file], rb->size = sizes[pc->file], rb->off = 0, rb->len = 0;
    rb->fd = open(rb->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    return rb->fd >= 0 ? 0 : cairn_err_errno(CAIRN_EINPUT, __FILE__, __LINE__, "cannot open %s", rb->path);
}

/* This rank's rows: count its pieces, scan, parse.  A failure while
 * parsing ends this rank's part in c->bad (the join orders it); one
 * before is agreed here. */
static int parse_mine(MPI_Comm comm, struct ctx *c, const int64_t *sizes, const int64_t *data, int64_t *total)
{
    int rc = 0, np = 0;
    struct piece *pc = NULL;
    struct rbuf rb = {.fd = -1};
    struct import_progress pg;
    int64_t done = 0;
    rc = pieces_of(comm, sizes, c->spec->n_inputs, &pc, &np, total);
    import_progress_init(&pg, comm, c->spec->progress, *total);
    for (int i = 0; rc == 0 && i < np; i++) {
        rc = open_piece(&rb, c->spec, sizes, &pc[i]);
        if (rc == 0) rc = count_range(&rb, pc[i].a, pc[i].b, &pc[i].qin, &pc[i].lin, &pg, &done);
        if (rb.fd >= 0) close(rb.fd);
        rb.fd = -1;
    }
    CAIRN_CHECK(coll_agree(comm, rc));
    CAIRN_CHECK(coll_agree(comm, seg_scan(comm, pc, np)));
    for (int i = 0; rc == 0 && i < np && c->bad.count <= c->spec->skip_bad && !c->bad.fatal; i++) {
        rc = open_piece(&rb, c->spec, sizes, &pc[i]);
        if (rc == 0) rc = parse_piece(c, &rb, &pc[i], data[pc[i].file], &pg, &done);
        if (rb.fd >= 0) close(rb.fd);
        rb.fd = -1;
    }
    if (rc) import_bad_fatal(&c->bad, rc);
    rc = 0;
cleanup:
    free(rb.p);
    free(pc);
    return rc;
}

int import_text(MPI_Comm comm, const struct import_spec *spec, struct import_result *res)
{
    int rc = 0, nd = 0;
    struct layout L = {0};
    struct ctx c = {.spec = spec, .L = &L};
    struct import_bad all = {0};
    int64_t *sizes = calloc((size_t)spec->n_inputs * 2, sizeof *sizes), *data = sizes + spec->n_inputs;
    int64_t lo = 0, n = 0, total = 0;
    struct rows_out d[2 + IMPORT_MAX_IDS];
    rc = sizes ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    CAIRN_CHECK(coll_agree(comm, rc));
    CAIRN_CHECK(share_header(comm, spec, sizes, data, &L));
    c.f = malloc(((size_t)L.n + 1) * sizeof *c.f);
    bool hashed = false;
    for (int i = 0; i < spec->n_ids; i++) hashed = hashed || spec->ids[i].rows;
    c.unq = hashed ? malloc(MAX_RECORD) : NULL;
    rc = c.f && (c.unq || !hashed) ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    CAIRN_CHECK(coll_agree(comm, rc));
    CAIRN_CHECK(parse_mine(comm, &c, sizes, data, &total));
    CAIRN_CHECK(import_bad_join(comm, &c.bad, &all));
    CAIRN_CHECK(import_bad_verdict(&all, spec->skip_bad));
    CAIRN_CHECK_MPI(MPI_Exscan(&c.rows.n, &lo, 1, MPI_INT64_T, MPI_SUM, comm));
    CAIRN_CHECK_MPI(MPI_Allreduce(&c.rows.n, &n, 1, MPI_INT64_T, MPI_SUM, comm));
    int me = 0;
    MPI_Comm_rank(comm, &me);
    if (me == 0) lo = 0;
    if (n == 0 && all.count) CAIRN_FAIL(CAIRN_EINPUT, "no records left: all %lld were bad, the first %s", (long long)all.count, all.msg[0]);
    if (n == 0) CAIRN_FAIL(CAIRN_EINPUT, "%s: no records (only a header or blank lines)", spec->inputs[0]);
    d[nd++] = (struct rows_out){"features", DT_F32, {2, {n, L.features}}, lo, c.rows.n, c.rows.x};
    if (L.targets) d[nd++] = (struct rows_out){"labels", DT_F32, {2, {n, L.targets}}, lo, c.rows.n, c.rows.t};
    else if (L.labels) d[nd++] = (struct rows_out){"labels", DT_I32, {1, {n}}, lo, c.rows.n, c.rows.y};
    for (int i = 0; i < spec->n_ids; i++)
        d[nd++] = (struct rows_out){spec->ids[i].name, DT_I64,
                                    L.ids_k[i] == 1 ? (struct shape){1, {n}} : (struct shape){2, {n, L.ids_k[i]}},
                                    lo, c.rows.n, c.rows.ids[i]};
    rc = import_write(comm, spec, spec->delim == '\t' ? "tsv" : "csv", sizes, 0, d, nd, all.count);
    res->rows = n, res->skipped = all.count, res->bytes = total;
    if (rc == 0 && all.count) {
        for (int i = 0; me == 0 && i < all.n; i++) fprintf(stderr, "cairn: data import: skipped %s\n", all.msg[i]);
    }
cleanup:
    rows_free(&c.rows, spec->n_ids);
    import_layout_free(&L);
    free(c.f);
    free(c.unq);
    free(sizes);
    return rc;
}
