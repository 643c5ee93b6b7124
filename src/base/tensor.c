/* Typed tensors and element kernels; see include/cairn/tensor.h. */
#include "cairn/tensor.h"

#include "cairn/error.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Kernels are written once, as X(enum, name, C type) for CAIRN_DTYPES. */

#define NAME_ITEM(e, name, ctype) name,
static const char *const names[] = {"?", CAIRN_DTYPES(NAME_ITEM)};

const char *dtype_name(enum dtype t) { return (unsigned)t < N_DTYPES ? names[t] : "?"; }

enum dtype dtype_parse(const char *s)
{
    for (int i = 1; i < N_DTYPES; i++)
        if (s && strcmp(s, names[i]) == 0) return (enum dtype)i;
    return DT_NONE;
}

size_t dtype_size(enum dtype t)
{
#define SIZE_CASE(e, name, ctype) case e: return sizeof(ctype);
    switch (t) {
    CAIRN_DTYPES(SIZE_CASE)
    default: return 0;
    }
}

bool dtype_is_int(enum dtype t) { return t == DT_I32 || t == DT_I64; }

int64_t shape_numel(const struct shape *s)
{
    int64_t n = 1;
    if (s->ndim < 0) return -1;
    for (int i = 0; i < s->ndim; i++) {
        if (s->d[i] < 0) return -1;
        n *= s->d[i];
    }
    return n;
}

bool shape_known(const struct shape *s) { return shape_numel(s) >= 0; }

bool shape_eq(const struct shape *a, const struct shape *b)
{
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->d[i] != b->d[i]) return false;
    return true;
}

bool shape_compatible(const struct shape *a, const struct shape *b)
{
    if (a->ndim < 0 || b->ndim < 0) return true;
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->d[i] >= 0 && b->d[i] >= 0 && a->d[i] != b->d[i]) return false;
    return true;
}

char *shape_format(const struct shape *s, char *buf, size_t size)
{
    if (s->ndim < 0) {
        snprintf(buf, size, "[...]");
        return buf;
    }
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < s->ndim && used < size; i++) {
        const char *sep = i ? ", " : "";
        if (s->d[i] < 0)
            used += (size_t)snprintf(buf + used, size - used, "%s?", sep);
        else
            used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, sep, s->d[i]);
    }
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

int64_t tensor_numel(const struct tensor *t) { return t->dtype ? shape_numel(&t->shape) : 0; }

size_t tensor_bytes(const struct tensor *t)
{
    return (size_t)tensor_numel(t) * dtype_size(t->dtype);
}

/* Large tensors (model weights, checkpointed state) get their own anonymous
 * mapping: it comes zeroed from the kernel, and transparent huge pages make
 * first touch 512 times fewer page faults, which matters when a restart
 * loads a gigabyte into fresh tensors on every rank at once. */
#define HUGE_BYTES ((size_t)2 << 20)

static void release(struct tensor *t)
{
    if (t->mapped)
        munmap(t->data, t->cap);
    else
        free(t->data);
    t->data = NULL;
    t->cap = 0;
    t->mapped = false;
}

/* Fresh zeroed storage of at least `bytes`. */
static int acquire(struct tensor *t, size_t bytes)
{
    release(t);
    if (bytes >= HUGE_BYTES) {
        size_t cap = (bytes + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
        void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "cannot map %zu bytes", cap);
        madvise(p, cap, MADV_HUGEPAGE); /* a hint: fine if refused */
        t->data = p;
        t->cap = cap;
        t->mapped = true;
        return 0;
    }
    t->data = calloc(1, bytes ? bytes : 1);
    if (!t->data) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory (%zu bytes)", bytes);
    t->cap = bytes;
    return 0;
}

int tensor_resize(struct tensor *t, enum dtype dtype, const struct shape *shape)
{
    int rc = 0;
    int64_t n = shape_numel(shape);
    if (n < 0 || shape->ndim > CAIRN_MAX_DIMS || dtype == DT_NONE)
        CAIRN_FAIL(CAIRN_EINPUT, "tensor shape must be fully known");
    size_t bytes = (size_t)n * dtype_size(dtype);
    if (bytes > t->cap || (t->mapped && bytes < t->cap / 4)) {
        CAIRN_CHECK(acquire(t, bytes)); /* zeroed */
    } else if (bytes) {
        memset(t->data, 0, bytes);
    }
    t->dtype = dtype;
    t->shape = *shape;
cleanup:
    return rc;
}

void tensor_free(struct tensor *t)
{
    release(t);
    *t = (struct tensor){0};
}

int tensor_copy(struct tensor *dst, const struct tensor *src)
{
    if (dst == src) return 0;
    int rc = tensor_resize(dst, src->dtype, &src->shape);
    if (rc == 0 && tensor_bytes(src)) memcpy(dst->data, src->data, tensor_bytes(src));
    return rc;
}

double tensor_get(const struct tensor *t, int64_t i)
{
    switch (t->dtype) {
#define GET(E, N, T) case E: return (double)((const T *)t->data)[i];
        CAIRN_DTYPES(GET)
#undef GET
    default: return 0;
    }
}

void tensor_set(struct tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
#define SET(E, N, T) case E: ((T *)t->data)[i] = (T)v; break;
        CAIRN_DTYPES(SET)
#undef SET
    default: break;
    }
}

int64_t tensor_get_i64(const struct tensor *t, int64_t i)
{
    switch (t->dtype) {
    case DT_I64: return ((const int64_t *)t->data)[i];
    case DT_I32: return ((const int32_t *)t->data)[i];
    default: return (int64_t)tensor_get(t, i);
    }
}

void tensor_set_i64(struct tensor *t, int64_t i, int64_t v)
{
    switch (t->dtype) {
    case DT_I64: ((int64_t *)t->data)[i] = v; break;
    case DT_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    default: tensor_set(t, i, (double)v); break;
    }
}

bool tensor_any(const struct tensor *t)
{
    int64_t n = tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        if (tensor_get(t, i) != 0) return true;
    return false;
}

int64_t tensor_first_nonfinite(const struct tensor *t)
{
    int64_t n = tensor_numel(t);
    if (t->dtype != DT_F32 && t->dtype != DT_F64) return -1; /* integers are always finite */
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(tensor_get(t, i))) return i;
    return -1;
}

void tensor_fill(struct tensor *t, double value)
{
    int64_t n = tensor_numel(t);
    switch (t->dtype) {
#define FILL(E, N, T)                                                             \
    case E:                                                                    \
        for (int64_t i = 0; i < n; i++) ((T *)t->data)[i] = (T)value;          \
        break;
        CAIRN_DTYPES(FILL)
#undef FILL
    default: break;
    }
}

/* b is either a's shape or a scalar (broadcast). */
static int check_pair(const struct tensor *a, const struct tensor *b, const char *op)
{
    if (a->dtype != b->dtype)
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "%s: dtypes %s and %s differ",
                             op, dtype_name(a->dtype), dtype_name(b->dtype));
    if (!shape_eq(&a->shape, &b->shape) && tensor_numel(b) != 1) {
        char sa[96], sb[96];
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "%s: shapes %s and %s differ",
                             op, shape_format(&a->shape, sa, sizeof sa),
                             shape_format(&b->shape, sb, sizeof sb));
    }
    return 0;
}

/* Resize out to like's dtype/shape unless it aliases an input already shaped so. */
static int shape_like(struct tensor *out, const struct tensor *like)
{
    if (out->dtype == like->dtype && shape_eq(&out->shape, &like->shape)) return 0;
    return tensor_resize(out, like->dtype, &like->shape);
}

/* Integer blobs wrap around on overflow (two's complement), as documented
 * in cairn-job(5), rather than leaving the result undefined. */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

int tensor_axpy(struct tensor *out, double alpha, const struct tensor *x, const struct tensor *y)
{
    int rc = check_pair(x, y, "axpy");
    if (rc) return rc;
    /* Copy inputs' scalar views first: out may alias x or y. */
    int64_t n = tensor_numel(x), ystep = tensor_numel(y) == n ? 1 : 0;
    struct tensor tmp = {0};
    const struct tensor *yy = y;
    if (out == y && ystep == 0) { /* y is a broadcast scalar that resizing would clobber */
        if ((rc = tensor_copy(&tmp, y))) return rc;
        yy = &tmp;
    }
    if ((rc = shape_like(out, x))) goto cleanup;
    switch (x->dtype) {
#define AXPY(E, N, T)                                                             \
    case E: {                                                                  \
        const T *xp = x->data, *yp = yy->data;                                 \
        T *op = out->data;                                                     \
        if (dtype_is_int(E)) {                                                 \
            int64_t ia = (int64_t)alpha;                                       \
            for (int64_t i = 0; i < n; i++)                                    \
                op[i] = (T)wrap_add(wrap_mul(ia, (int64_t)xp[i]), (int64_t)yp[i * ystep]); \
        } else {                                                               \
            for (int64_t i = 0; i < n; i++)                                    \
                op[i] = (T)((T)alpha * xp[i] + yp[i * ystep]);                 \
        }                                                                      \
        break;                                                                 \
    }
        CAIRN_DTYPES(AXPY)
#undef AXPY
    default: break;
    }
cleanup:
    tensor_free(&tmp);
    return rc;
}

int tensor_add(struct tensor *out, const struct tensor *a, const struct tensor *b)
{
    return tensor_axpy(out, 1.0, a, b); /* 1 * a is exact, so this is a + b */
}

int tensor_scale(struct tensor *out, const struct tensor *a, double factor)
{
    int rc = shape_like(out, a);
    if (rc) return rc;
    int64_t n = tensor_numel(a);
    switch (a->dtype) {
#define SCALE(E, N, T)                                                            \
    case E: {                                                                  \
        const T *ap = a->data;                                                 \
        T *op = out->data;                                                     \
        if (dtype_is_int(E))                                                   \
            for (int64_t i = 0; i < n; i++) op[i] = (T)wrap_mul((int64_t)factor, (int64_t)ap[i]); \
        else                                                                   \
            for (int64_t i = 0; i < n; i++) op[i] = (T)((T)factor * ap[i]);    \
        break;                                                                 \
    }
        CAIRN_DTYPES(SCALE)
#undef SCALE
    default: break;
    }
    return 0;
}

int tensor_sum(struct tensor *out, const struct tensor *a)
{
    int64_t n = tensor_numel(a);
    double fs = 0;
    int64_t is = 0;
    /* Sequential order keeps the result independent of anything but the data. */
    for (int64_t i = 0; i < n; i++) {
        if (dtype_is_int(a->dtype))
            is = wrap_add(is, tensor_get_i64(a, i));
        else
            fs += tensor_get(a, i);
    }
    enum dtype dt = a->dtype;
    struct shape scalar = {0};
    int rc = tensor_resize(out, dt, &scalar);
    if (rc) return rc;
    if (dtype_is_int(dt))
        tensor_set_i64(out, 0, is);
    else
        tensor_set(out, 0, fs);
    return 0;
}

enum cmp_op cmp_parse(const char *s, bool *ok)
{
    static const char *const ops[] = {"lt", "le", "gt", "ge", "eq", "ne"};
    static const char *const syms[] = {"<", "<=", ">", ">=", "==", "!="};
    for (int i = 0; i < 6; i++) {
        if (s && (strcmp(s, ops[i]) == 0 || strcmp(s, syms[i]) == 0)) {
            *ok = true;
            return (enum cmp_op)i;
        }
    }
    *ok = false;
    return CMP_EQ;
}

const char *cmp_name(enum cmp_op op)
{
    static const char *const ops[] = {"lt", "le", "gt", "ge", "eq", "ne"};
    return (unsigned)op < 6 ? ops[op] : "?";
}

static bool compare(double x, enum cmp_op op, double v)
{
    switch (op) {
    case CMP_LT: return x < v;
    case CMP_LE: return x <= v;
    case CMP_GT: return x > v;
    case CMP_GE: return x >= v;
    case CMP_EQ: return x == v;
    case CMP_NE: return x != v;
    }
    return false;
}

int tensor_cmp(struct tensor *out, const struct tensor *a, enum cmp_op op, double value)
{
    struct tensor src = {0};
    int rc = 0;
    if (out == a) { /* out changes dtype: read from a copy */
        CAIRN_CHECK(tensor_copy(&src, a));
        a = &src;
    }
    CAIRN_CHECK(tensor_resize(out, DT_I32, &a->shape));
    for (int64_t i = 0, n = tensor_numel(a); i < n; i++)
        ((int32_t *)out->data)[i] = compare(tensor_get(a, i), op, value);
cleanup:
    tensor_free(&src);
    return rc;
}

char *tensor_format(const struct tensor *t, char *buf, size_t size)
{
    int64_t n = tensor_numel(t);
    size_t used = 0;
    bool scalar = t->shape.ndim == 0;
    if (!scalar) used += (size_t)snprintf(buf, size, "[");
    int64_t shown = n < 8 ? n : 6;
    for (int64_t i = 0; i < shown && used < size; i++) {
        const char *sep = i ? ", " : "";
        if (dtype_is_int(t->dtype))
            used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, sep,
                                     tensor_get_i64(t, i));
        else
            used += (size_t)snprintf(buf + used, size - used, "%s%.9g", sep, tensor_get(t, i));
    }
    if (shown < n && used < size)
        used += (size_t)snprintf(buf + used, size - used, ", ... %" PRId64 " more", n - shown);
    if (!scalar && used < size) snprintf(buf + used, size - used, "]");
    if (n == 0 && scalar) snprintf(buf, size, "(empty)");
    return buf;
}
