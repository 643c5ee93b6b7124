/* NumPy arrays (.npy, and the members of .npz archives, stored or
 * deflated) into a data file; see include/cairn/dataimport.h.  Rank 0
 * reads every header and checks it; each rank then reads its block of
 * every dataset's rows straight from the files (a deflated member is
 * inflated from its start up to the rank's rows). */
#include "import_priv.h"

#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/partition.h"

#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

enum { MAX_ARRAYS = 4096, RAW_CHUNK = 4 << 20 };

/* One array: where its bytes are and what they hold. */
struct arr {
    char name[64];
    int32_t file, deflated, swap, fortran, ndim, item;
    char kind; /* 'f', 'i', 'u', 'b' */
    int64_t at, csize, usize; /* the member: its (compressed) bytes in the file, its size */
    int64_t data;             /* the array's first byte within the member */
    int64_t shape[CAIRN_MAX_DIMS];
};

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* ---- the .npy header ---------------------------------------------------------- */

/* The value after 'key': in the header dict, or NULL. */
static const char *dict_value(const char *h, const char *key)
{
    char k[32];
    snprintf(k, sizeof k, "'%s'", key);
    const char *p = strstr(h, k);
    if (!p) return NULL;
    p += strlen(k);
    while (*p == ' ') p++;
    if (*p++ != ':') return NULL;
    while (*p == ' ') p++;
    return p;
}

/* What dtype cairn keeps for a NumPy one: f32, f64, i32 or i64. */
static enum dtype out_type(const struct arr *a)
{
    switch (a->kind) {
    case 'f': return a->item == 8 ? DT_F64 : DT_F32;
    case 'b': return DT_I32;
    case 'i': return a->item == 8 ? DT_I64 : DT_I32;
    default: return a->item >= 4 ? DT_I64 : DT_I32; /* 'u' */
    }
}

/* The header at h (len bytes, after the magic and length): a's dtype,
 * order and shape. */
static int npy_dict(const char *path, const char *h, struct arr *a)
{
    int rc = 0;
    const char *d = dict_value(h, "descr"), *f = dict_value(h, "fortran_order"), *s = dict_value(h, "shape");
    if (!d || !f || !s) CAIRN_FAIL(CAIRN_EINPUT, "%s: a .npy header without descr, fortran_order and shape", path);
    /* '<f4': a byte order, a kind, a size of one digit */
    if (d[0] != '\'' || !d[1] || !d[2] || d[3] < '1' || d[3] > '9' || d[4] != '\'')
        CAIRN_FAIL(CAIRN_EINPUT, "%s: dtype %.20s is not one cairn imports (a structured or text array?)", path, d);
    char order = d[1], kind = d[2];
    int item = d[3] - '0';
    bool ok = (kind == 'f' && (item == 2 || item == 4 || item == 8)) || (kind == 'b' && item == 1) ||
              ((kind == 'i' || kind == 'u') && (item == 1 || item == 2 || item == 4 || item == 8));
    if (!ok || (order != '<' && order != '>' && order != '|' && order != '='))
        CAIRN_FAIL(CAIRN_EINPUT, "%s: dtype '%c%c%d' is not imported (floats of 2, 4 or 8 bytes, integers, bool)", path,
                   order, kind, item);
    a->kind = kind, a->item = item, a->swap = order == '>' && item > 1;
    if (strncmp(f, "True", 4) != 0 && strncmp(f, "False", 5) != 0)
        CAIRN_FAIL(CAIRN_EINPUT, "%s: fortran_order is neither True nor False", path);
    a->fortran = f[0] == 'T';
    if (*s++ != '(') CAIRN_FAIL(CAIRN_EINPUT, "%s: a shape that is not a tuple", path);
    for (a->ndim = 0;;) {
        while (*s == ' ') s++;
        if (*s == ')') break;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0 || a->ndim == CAIRN_MAX_DIMS)
            CAIRN_FAIL(CAIRN_EINPUT, "%s: a shape cairn cannot hold (at most %d dimensions)", path, CAIRN_MAX_DIMS);
        a->shape[a->ndim++] = v;
        s = end;
        while (*s == ' ') s++;
        if (*s == ',') s++;
        else if (*s != ')') CAIRN_FAIL(CAIRN_EINPUT, "%s: a shape that is not a tuple of integers", path);
    }
    if (a->ndim == 0) CAIRN_FAIL(CAIRN_EINPUT, "%s: a 0-d array has no rows to import", path);
    int64_t n = 8; /* bytes, at the widest dtype kept: what memory the rows take, too */
    for (int i = 0; i < a->ndim; i++) {
        if (i > 0 && a->shape[i] == 0) CAIRN_FAIL(CAIRN_EINPUT, "%s: a dimension of 0 after axis 0", path);
        if (a->shape[i] && n > INT64_MAX / a->shape[i]) CAIRN_FAIL(CAIRN_EINPUT, "%s: a shape too large", path);
        n *= a->shape[i];
    }
    n = n / 8 * a->item;
    if (n > a->usize - a->data)
        CAIRN_FAIL(CAIRN_EINPUT, "%s: %lld bytes of data, but its shape needs %lld (truncated?)", path,
                   (long long)(a->usize - a->data), (long long)n);
cleanup:
    return rc;
}

/* ---- reading a member ---------------------------------------------------------- */

/* A reader of one member: stored bytes are read where they are; deflated
 * ones are inflated forward (a rank reads its parts in order). */
struct src {
    int fd;
    const char *path;
    const struct arr *a;
    z_stream z;
    bool z_on;
    int64_t pos, in_at; /* bytes inflated so far; compressed bytes consumed */
    unsigned char in[1 << 16];
};

static int src_read(struct src *r, int64_t off, void *dst, size_t n)
{
    int rc = 0;
    const struct arr *a = r->a;
    if (!a->deflated) return fsx_pread(r->fd, dst, n, a->at + off, r->path);
    if (!r->z_on || off < r->pos) { /* (re)start the stream */
        if (r->z_on) inflateEnd(&r->z);
        r->z = (z_stream){0};
        if (inflateInit2(&r->z, -MAX_WBITS) != Z_OK) CAIRN_FAIL(CAIRN_ENOMEM, "%s", "inflate: out of memory");
        r->z_on = true, r->pos = 0, r->in_at = 0;
    }
    unsigned char skip[1 << 14];
    while (n) {
        bool discard = r->pos < off;
        size_t want = discard ? (size_t)(off - r->pos < (int64_t)sizeof skip ? off - r->pos : (int64_t)sizeof skip) : n;
        if (r->z.avail_in == 0) {
            int64_t left = a->csize - r->in_at;
            size_t k = left < (int64_t)sizeof r->in ? (size_t)left : sizeof r->in;
            if (k == 0) CAIRN_FAIL(CAIRN_EINPUT, "%s: a deflated member shorter than it says", r->path);
            CAIRN_CHECK(fsx_pread(r->fd, r->in, k, a->at + r->in_at, r->path));
            r->in_at += (int64_t)k;
            r->z.next_in = r->in, r->z.avail_in = (uInt)k;
        }
        r->z.next_out = discard ? skip : dst, r->z.avail_out = (uInt)(want > (1u << 30) ? 1u << 30 : want);
        int z = inflate(&r->z, Z_NO_FLUSH);
        size_t got = (size_t)(r->z.next_out - (discard ? skip : (unsigned char *)dst));
        if (z != Z_OK && z != Z_STREAM_END)
            CAIRN_FAIL(CAIRN_EINPUT, "%s: a damaged deflated member ('%s')", r->path, r->z.msg ? r->z.msg : "?");
        if (z == Z_STREAM_END && got < want) CAIRN_FAIL(CAIRN_EINPUT, "%s: a deflated member shorter than it says", r->path);
        r->pos += (int64_t)got;
        if (!discard) dst = (char *)dst + got, n -= got;
    }
cleanup:
    return rc;
}

static void src_close(struct src *r)
{
    if (r->z_on) inflateEnd(&r->z);
    if (r->fd >= 0) close(r->fd);
    r->z_on = false, r->fd = -1;
}

/* The .npy header at the start of a's member. */
static int npy_header(struct src *r, struct arr *a)
{
    int rc = 0;
    unsigned char m[12];
    char *h = NULL;
    if (a->usize < 10) CAIRN_FAIL(CAIRN_EINPUT, "%s: not a .npy array (too short)", r->path);
    CAIRN_CHECK(src_read(r, 0, m, 10));
    if (memcmp(m, "\x93NUMPY", 6) != 0 || m[6] < 1 || m[6] > 3)
        CAIRN_FAIL(CAIRN_EINPUT, "%s: not a .npy array (no \\x93NUMPY version 1 to 3)", r->path);
    int64_t len = (int64_t)le(m + 8, 2), start = 10;
    if (m[6] > 1) {
        if (a->usize < 12) CAIRN_FAIL(CAIRN_EINPUT, "%s: a .npy header cut short", r->path);
        CAIRN_CHECK(src_read(r, 10, m + 10, 2));
        len = (int64_t)le(m + 8, 4), start = 12;
    }
    if (len > (1 << 20) || start + len > a->usize) CAIRN_FAIL(CAIRN_EINPUT, "%s: a .npy header cut short or too long", r->path);
    h = malloc((size_t)len + 1);
    CAIRN_CHECK_ALLOC(h);
    CAIRN_CHECK(src_read(r, start, h, (size_t)len));
    h[len] = 0;
    a->data = start + len;
    CAIRN_CHECK(npy_dict(r->path, h, a));
cleanup:
    free(h);
    return rc;
}

/* ---- .npz: the zip directory ---------------------------------------------------- */

/* The central directory: its offset and entries (zip64 as needed). */
static int zip_end(int fd, const char *path, int64_t size, int64_t *cd, int64_t *entries)
{
    int rc = 0;
    size_t tail = size < 65557 ? (size_t)size : 65557; /* the end record and the longest comment */
    unsigned char *t = malloc(tail), z[56];
    CAIRN_CHECK_ALLOC(t);
    CAIRN_CHECK(fsx_pread(fd, t, tail, size - (int64_t)tail, path));
    int64_t e = -1;
    for (int64_t i = (int64_t)tail - 22; i >= 0 && e < 0; i--)
        if (le(t + i, 4) == 0x06054b50) e = i;
    if (e < 0) CAIRN_FAIL(CAIRN_EINPUT, "%s: not a zip archive (.npz): no end record", path);
    *entries = (int64_t)le(t + e + 10, 2), *cd = (int64_t)le(t + e + 16, 4);
    if (*entries == 0xffff || *cd == 0xffffffffLL) { /* zip64: the locator just before */
        if (e < 20 || le(t + e - 20, 4) != 0x07064b50) CAIRN_FAIL(CAIRN_EINPUT, "%s: a zip64 archive without its locator", path);
        int64_t at = (int64_t)le(t + e - 12, 8);
        if (at < 0 || at > size - 56) CAIRN_FAIL(CAIRN_EINPUT, "%s: a zip64 end record out of the file", path);
        CAIRN_CHECK(fsx_pread(fd, z, 56, at, path));
        if (le(z, 4) != 0x06064b50) CAIRN_FAIL(CAIRN_EINPUT, "%s: a damaged zip64 end record", path);
        *entries = (int64_t)le(z + 32, 8), *cd = (int64_t)le(z + 48, 8);
    }
    if (*cd < 0 || *cd > size || *entries > MAX_ARRAYS)
        CAIRN_FAIL(CAIRN_EINPUT, "%s: a zip directory out of the file, or of more than %d members", path, MAX_ARRAYS);
cleanup:
    free(t);
    return rc;
}

/* A zip64 extra field's values for those of usize, csize, offset that are
 * 0xffffffff, in that order. */
static void zip64_extra(const unsigned char *x, size_t n, int64_t *v[3])
{
    for (size_t i = 0; i + 4 <= n;) {
        size_t id = le(x + i, 2), len = le(x + i + 2, 2), at = i + 4;
        if (id == 1)
            for (int k = 0; k < 3; k++)
                if (*v[k] == 0xffffffffLL && at + 8 <= i + 4 + len && at + 8 <= n) *v[k] = (int64_t)le(x + at, 8), at += 8;
        i += 4 + len;
    }
}

/* Member e of the directory at *at: its array (name, where its bytes are). */
static int zip_member(int fd, const char *path, int64_t size, int64_t *at, struct arr *a)
{
    int rc = 0;
    unsigned char h[46], l[30], x[1024];
    char name[256];
    if (*at > size - 46) CAIRN_FAIL(CAIRN_EINPUT, "%s: a zip directory cut short", path);
    CAIRN_CHECK(fsx_pread(fd, h, 46, *at, path));
    if (le(h, 4) != 0x02014b50) CAIRN_FAIL(CAIRN_EINPUT, "%s: a damaged zip directory", path);
    size_t nl = le(h + 28, 2), xl = le(h + 30, 2), cl = le(h + 32, 2);
    int method = (int)le(h + 10, 2);
    int64_t csize = (int64_t)le(h + 20, 4), usize = (int64_t)le(h + 24, 4), off = (int64_t)le(h + 42, 4);
    if (*at + 46 + (int64_t)(nl + xl) > size || nl >= sizeof name || xl > sizeof x)
        CAIRN_FAIL(CAIRN_EINPUT, "%s: a zip member's name or extra field out of bounds", path);
    CAIRN_CHECK(fsx_pread(fd, name, nl, *at + 46, path));
    CAIRN_CHECK(fsx_pread(fd, x, xl, *at + 46 + (int64_t)nl, path));
    name[nl] = 0;
    if (strlen(name) != nl) CAIRN_FAIL(CAIRN_EINPUT, "%s: a zip member's name holds a NUL byte", path);
    zip64_extra(x, xl, (int64_t *[3]){&usize, &csize, &off});
    *at += 46 + (int64_t)(nl + xl + cl);
    if (le(h + 8, 2) & 1) CAIRN_FAIL(CAIRN_EINPUT, "%s: member %s is encrypted", path, name);
    if (method != 0 && method != 8)
        CAIRN_FAIL(CAIRN_EINPUT, "%s: member %s is compressed by method %d (stored and deflated are read)", path, name, method);
    if (nl < 5 || strcmp(name + nl - 4, ".npy") != 0 || nl - 4 >= sizeof a->name || memchr(name, '/', nl))
        CAIRN_FAIL(CAIRN_EINPUT, "%s: member '%s' is not NAME.npy (a name of at most 63 bytes, without '/')", path, name);
    if (off < 0 || off > size - 30) CAIRN_FAIL(CAIRN_EINPUT, "%s: member %s out of the file", path, name);
    CAIRN_CHECK(fsx_pread(fd, l, 30, off, path));
    if (le(l, 4) != 0x04034b50) CAIRN_FAIL(CAIRN_EINPUT, "%s: member %s has no local header", path, name);
    a->at = off + 30 + (int64_t)(le(l + 26, 2) + le(l + 28, 2));
    a->deflated = method == 8, a->csize = csize, a->usize = usize;
    if (csize < 0 || a->at > size - csize || (method == 0 && csize != usize) || usize < 0 ||
        (method == 8 && usize / 1032 > csize + 1)) /* deflate expands 1032 times at most */
        CAIRN_FAIL(CAIRN_EINPUT, "%s: member %s's sizes do not fit the file", path, name);
    snprintf(a->name, sizeof a->name, "%.*s", (int)(nl - 4), name);
cleanup:
    return rc;
}

/* ---- the plan: every array, checked (rank 0) ------------------------------------ */

/* NAME=PATH, or PATH (named after its file). */
static const char *input_path(const char *arg, char *name, size_t size)
{
    const char *eq = strchr(arg, '=');
    if (eq && !memchr(arg, '/', (size_t)(eq - arg))) {
        snprintf(name, size, "%.*s", (int)(eq - arg), arg);
        return eq + 1;
    }
    const char *base = strrchr(arg, '/'), *dot;
    base = base ? base + 1 : arg;
    dot = strrchr(base, '.');
    snprintf(name, size, "%.*s", (int)(dot ? dot - base : (long)strlen(base)), base);
    return arg;
}

static bool is_npz(const char *path)
{
    size_t n = strlen(path);
    return n > 4 && strcmp(path + n - 4, ".npz") == 0;
}

/* Input i's arrays appended to a[*n]. */
static int plan_input(const struct import_spec *spec, int i, int64_t *size, struct arr *a, int *n)
{
    int rc = 0;
    char name[256];
    const char *path = input_path(spec->inputs[i], name, sizeof name);
    struct src r = {.fd = -1, .path = path};
    CAIRN_CHECK(data_sizes(&path, 1, size));
    r.fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    CAIRN_CHECK_ERRNO(r.fd >= 0, CAIRN_EINPUT, "cannot open %s", path);
    int64_t cd = 0, entries = 1;
    if (is_npz(path)) {
        if (path != spec->inputs[i]) CAIRN_FAIL(CAIRN_EINPUT, "%s: an .npz names its own arrays (no NAME=)", path);
        CAIRN_CHECK(zip_end(r.fd, path, *size, &cd, &entries));
    } else if (!name[0] || strlen(name) >= sizeof a->name || strchr(name, '/'))
        CAIRN_FAIL(CAIRN_EINPUT, "%s: dataset name '%s' is empty, longer than 63 bytes or holds '/'", path, name);
    for (int64_t e = 0; e < entries; e++) {
        if (*n == MAX_ARRAYS) CAIRN_FAIL(CAIRN_EINPUT, "more than %d arrays", MAX_ARRAYS);
        struct arr *x = &a[*n];
        *x = (struct arr){.file = i, .at = 0, .csize = *size, .usize = *size};
        if (is_npz(path)) CAIRN_CHECK(zip_member(r.fd, path, *size, &cd, x));
        else snprintf(x->name, sizeof x->name, "%.63s", name);
        src_close(&r);
        r = (struct src){.fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), .path = path, .a = x};
        CAIRN_CHECK_ERRNO(r.fd >= 0, CAIRN_EINPUT, "cannot open %s", path);
        CAIRN_CHECK(npy_header(&r, x));
        ++*n;
    }
cleanup:
    src_close(&r);
    return rc;
}

static int64_t row_elems(const struct arr *a)
{
    int64_t n = 1;
    for (int k = 1; k < a->ndim; k++) n *= a->shape[k];
    return n;
}

/* Arrays of one name must join: the same kept dtype and row shape. */
static int plan_check(const struct import_spec *spec, const struct arr *a, int n)
{
    int rc = 0;
    char name[256];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            if (strcmp(a[i].name, a[j].name) != 0) continue;
            bool same = out_type(&a[i]) == out_type(&a[j]) && a[i].ndim == a[j].ndim;
            for (int k = 1; same && k < a[i].ndim; k++) same = a[i].shape[k] == a[j].shape[k];
            if (!same)
                CAIRN_FAIL(CAIRN_EINPUT, "%s: array '%s' (%s, %d dimensions) does not join the one before it in %s "
                           "(the same dtype and the same shape after axis 0)",
                           input_path(spec->inputs[a[i].file], name, sizeof name), a[i].name,
                           dtype_name(out_type(&a[i])), a[i].ndim, spec->inputs[a[j].file]);
            break;
        }
    /* every dataset of the same rows (a data file's features, labels and
     * ids are row by row), and some */
    int64_t first = -1;
    for (int i = 0; i < n; i++) {
        int64_t N = 0;
        bool seen = false;
        for (int j = 0; j < i; j++) seen = seen || strcmp(a[i].name, a[j].name) == 0;
        if (seen) continue;
        for (int j = i; j < n; j++)
            if (strcmp(a[i].name, a[j].name) == 0) {
                if (a[j].shape[0] > INT64_MAX / 2 - N) CAIRN_FAIL(CAIRN_EINPUT, "array '%s': too many rows", a[i].name);
                N += a[j].shape[0];
            }
        if (N > INT64_MAX / 8 / row_elems(&a[i])) /* what a rank's rows take, at 8 bytes an element */
            CAIRN_FAIL(CAIRN_EINPUT, "array '%s': too many elements", a[i].name);
        if (first < 0) first = N;
        if (N != first)
            CAIRN_FAIL(CAIRN_EINPUT, "array '%s' has %lld rows, array '%s' %lld (a data file's datasets go row by row)",
                       a[i].name, (long long)N, a[0].name, (long long)first);
    }
    if (first <= 0) CAIRN_FAIL(CAIRN_EINPUT, "%s", n ? "the arrays have no rows" : "no arrays (an empty .npz?)");
cleanup:
    return rc;
}

/* Collective: rank 0 reads every header; all learn the arrays. */
static int plan(MPI_Comm comm, const struct import_spec *spec, int64_t *sizes, struct arr **a, int *n)
{
    int rc = 0, me = 0;
    MPI_Comm_rank(comm, &me);
    *n = 0;
    *a = calloc(MAX_ARRAYS, sizeof **a);
    rc = *a ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (int i = 0; rc == 0 && me == 0 && i < spec->n_inputs; i++) rc = plan_input(spec, i, &sizes[i], *a, n);
    if (rc == 0 && me == 0) rc = plan_check(spec, *a, *n);
    CAIRN_CHECK(coll_agree(comm, rc));
    CAIRN_CHECK_MPI(MPI_Bcast(n, 1, MPI_INT, 0, comm));
    CAIRN_CHECK_MPI(MPI_Bcast(sizes, spec->n_inputs, MPI_INT64_T, 0, comm));
    CAIRN_CHECK_MPI(MPI_Bcast(*a, (int)(*n * (int)sizeof **a), MPI_BYTE, 0, comm));
cleanup:
    return rc;
}

/* ---- values --------------------------------------------------------------------- */

static float half(uint16_t h)
{
    int e = h >> 10 & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 1024), e - 25);
    return h >> 15 ? -v : v;
}

/* n elements of a at raw into out (of the kept dtype t); the first is
 * element first of the array (for a message). */
static int convert(const struct arr *a, const unsigned char *raw, int64_t n, void *out, enum dtype t, int64_t first,
                   const char *path)
{
    for (int64_t i = 0; i < n; i++, raw += a->item) {
        uint64_t b = 0;
        for (int k = 0; k < a->item; k++) b |= (uint64_t)raw[a->swap ? a->item - 1 - k : k] << (8 * k);
        double f = 0;
        int64_t v = 0;
        if (a->kind == 'f') {
            if (a->item == 2) f = half((uint16_t)b);
            else if (a->item == 4) {
                float x;
                uint32_t w = (uint32_t)b;
                memcpy(&x, &w, 4);
                f = x;
            } else memcpy(&f, &b, 8);
        } else if (a->kind == 'i') {
            int sh = 64 - 8 * a->item;
            v = (int64_t)(b << sh) >> sh; /* sign-extend */
        } else if (a->kind == 'u' && a->item == 8 && b > INT64_MAX) {
            return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s: array '%s' element %lld is %llu, beyond i64",
                                 path, a->name, (long long)(first + i), (unsigned long long)b);
        } else v = a->kind == 'b' ? b != 0 : (int64_t)b;
        switch (t) {
        case DT_F32: ((float *)out)[i] = (float)f; break;
        case DT_F64: ((double *)out)[i] = f; break;
        case DT_I32: ((int32_t *)out)[i] = (int32_t)v; break;
        default: ((int64_t *)out)[i] = v; break;
        }
    }
    return 0;
}

/* Elements [e0, e0 + n) of the member's array, in file order, into out. */
static int read_run(struct src *r, int64_t e0, int64_t n, void *out, enum dtype t, unsigned char *raw)
{
    int rc = 0;
    const struct arr *a = r->a;
    size_t sz = dtype_size(t);
    bool same = !a->swap && (size_t)a->item == sz && (a->kind == 'f') == (t == DT_F32 || t == DT_F64) && a->kind != 'u';
    if (same) return src_read(r, a->data + e0 * a->item, out, (size_t)n * sz);
    for (int64_t done = 0; done < n;) {
        int64_t k = n - done < RAW_CHUNK / a->item ? n - done : RAW_CHUNK / a->item;
        CAIRN_CHECK(src_read(r, a->data + (e0 + done) * a->item, raw, (size_t)(k * a->item)));
        CAIRN_CHECK(convert(a, raw, k, (char *)out + done * (int64_t)sz, t, e0 + done, r->path));
        done += k;
    }
cleanup:
    return rc;
}

/* ---- the import ---------------------------------------------------------------- */


/* Rows [r0, r1) of array a into out (rows of cols elements of t). */
static int read_rows(const struct import_spec *spec, const struct arr *a, int64_t r0, int64_t r1, void *out,
                     enum dtype t, unsigned char *raw, int64_t *col)
{
    int rc = 0;
    char name[256];
    int64_t cols = row_elems(a), n = r1 - r0;
    size_t sz = dtype_size(t);
    struct src r = {.path = input_path(spec->inputs[a->file], name, sizeof name), .a = a};
    r.fd = open(r.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    CAIRN_CHECK_ERRNO(r.fd >= 0, CAIRN_EINPUT, "cannot open %s", r.path);
    if (!a->fortran) {
        CAIRN_CHECK(read_run(&r, r0 * cols, n * cols, out, t, raw));
        goto cleanup;
    }
    /* Fortran order: each element of a row lies a column of the array
     * apart; read those runs in file order, place them in C order */
    for (int64_t jf = 0; jf < cols; jf++) {
        int64_t jc = 0, rest = jf, stride = 1;
        for (int k = 1; k < a->ndim; k++) stride *= a->shape[k];
        for (int k = 1; k < a->ndim; k++) { /* axis 1 fastest in F order, last fastest in C */
            stride /= a->shape[k];
            jc += (rest % a->shape[k]) * stride;
            rest /= a->shape[k];
        }
        CAIRN_CHECK(read_run(&r, jf * a->shape[0] + r0, n, col, t, raw));
        for (int64_t i = 0; i < n; i++) memcpy((char *)out + ((size_t)(i * cols + jc)) * sz, (char *)col + (size_t)i * sz, sz);
    }
cleanup:
    src_close(&r);
    return rc;
}

/* This rank's block of the rows of the dataset that array `first` starts. */
static int read_dataset(MPI_Comm comm, const struct import_spec *spec, const struct arr *a, int n, int first,
                        struct rows_out *d)
{
    int rc = 0, me = 0, size = 1;
    int64_t N = 0, cols = row_elems(&a[first]), lo, hi, at = 0, col_max = 0;
    enum dtype t = out_type(&a[first]);
    unsigned char *raw = malloc(RAW_CHUNK);
    void *col = NULL;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    bool fortran = false;
    for (int i = first; i < n; i++)
        if (strcmp(a[i].name, a[first].name) == 0) N += a[i].shape[0], fortran = fortran || a[i].fortran;
    block_range(N, size, me, &lo, &hi);
    col_max = fortran ? hi - lo : 0; /* the elements of one column of this rank's rows */
    *d = (struct rows_out){a[first].name, t, {a[first].ndim, {N}}, lo, hi - lo, NULL};
    for (int k = 1; k < a[first].ndim; k++) d->s.d[k] = a[first].shape[k];
    void *out = malloc((size_t)((hi - lo) * cols + 1) * dtype_size(t));
    d->data = out;
    col = malloc((size_t)(col_max + 1) * dtype_size(t));
    if (!raw || !out || !col) CAIRN_FAIL(CAIRN_ENOMEM, "out of memory for %lld rows of '%s'", (long long)(hi - lo), a[first].name);
    for (int i = first; i < n; i++) {
        if (strcmp(a[i].name, a[first].name) != 0) continue;
        int64_t r0 = lo > at ? lo : at, r1 = hi < at + a[i].shape[0] ? hi : at + a[i].shape[0];
        if (r0 < r1)
            CAIRN_CHECK(read_rows(spec, &a[i], r0 - at, r1 - at, (char *)out + (size_t)((r0 - lo) * cols) * dtype_size(t),
                                  t, raw, col));
        at += a[i].shape[0];
    }
cleanup:
    free(raw);
    free(col);
    return rc;
}

int import_numpy(MPI_Comm comm, const struct import_spec *spec, struct import_result *res)
{
    int rc = 0, n = 0, nd = 0;
    struct arr *a = NULL;
    struct rows_out *d = NULL;
    int64_t *sizes = calloc((size_t)spec->n_inputs, sizeof *sizes);
    rc = sizes ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    CAIRN_CHECK(coll_agree(comm, rc));
    CAIRN_CHECK(plan(comm, spec, sizes, &a, &n));
    d = calloc((size_t)n + 1, sizeof *d);
    rc = d ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (int i = 0; rc == 0 && i < n; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++) seen = seen || strcmp(a[i].name, a[j].name) == 0;
        if (!seen) rc = read_dataset(comm, spec, a, n, i, &d[nd++]);
    }
    res->rows = nd ? d[0].s.d[0] : 0, res->skipped = 0, res->bytes = 0;
    for (int i = 0; i < spec->n_inputs; i++) res->bytes += sizes[i];
    rc = import_write(comm, spec, "npy", sizes, rc, d, nd, 0);
cleanup:
    for (int i = 0; d && i < nd; i++) free((void *)d[i].data);
    free(d);
    free(a);
    free(sizes);
    return rc;
}
