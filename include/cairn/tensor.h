/* Typed n-d tensors (f32, f64, i32, i64) and the element kernels the basic
 * ops need.  Row-major; a 0-d tensor is a scalar with one element. */
#ifndef CAIRN_TENSOR_H
#define CAIRN_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CAIRN_MAX_DIMS 8

/* X(enum, name, C type) for every element type; DT_NONE is 0 ("?"). */
#define CAIRN_DTYPES(X) X(DT_F32, "f32", float) X(DT_F64, "f64", double) \
    X(DT_I32, "i32", int32_t) X(DT_I64, "i64", int64_t)
#define CAIRN_DTYPE_ENUM(e, name, ctype) e,
#define CAIRN_DTYPE_COUNT(e, name, ctype) +1
enum dtype { DT_NONE = 0, CAIRN_DTYPES(CAIRN_DTYPE_ENUM) };
enum { N_DTYPES = 1 CAIRN_DTYPES(CAIRN_DTYPE_COUNT) }; /* DT_NONE included */
/* The dtype choices of an op parameter (PT_ENUM), in enum order. */
#define CAIRN_DTYPE_CHOICES "f32|f64|i32|i64"

const char *dtype_name(enum dtype t);               /* "f32" ... ; "?" for DT_NONE */
enum dtype dtype_parse(const char *s);              /* DT_NONE if unknown */
size_t dtype_size(enum dtype t);
bool dtype_is_int(enum dtype t);

/* A shape; in static analysis a dimension may be -1 (known only at run
 * time), and ndim may be -1 (even the number of dimensions is unknown). */
struct shape {
    int ndim;
    int64_t d[CAIRN_MAX_DIMS];
};

int64_t shape_numel(const struct shape *s); /* -1 if any dimension is unknown */
bool shape_known(const struct shape *s);
bool shape_eq(const struct shape *a, const struct shape *b);
/* Could two shapes be equal at run time (unknown dims match anything)? */
bool shape_compatible(const struct shape *a, const struct shape *b);
/* "[]", "[3, 4]", "[?, 4]" into buf; returns buf. */
char *shape_format(const struct shape *s, char *buf, size_t size);

struct tensor {
    enum dtype dtype;
    struct shape shape;
    void *data;
    size_t cap;  /* bytes allocated */
    bool mapped; /* large: its own huge-page mapping (see tensor.c) */
};

/* Give t this dtype and shape, reusing its storage when large enough.
 * New elements are zero.  Errors: CAIRN_ENOMEM, CAIRN_EINPUT (bad shape). */
int tensor_resize(struct tensor *t, enum dtype dtype, const struct shape *shape);
void tensor_free(struct tensor *t);
size_t tensor_bytes(const struct tensor *t);
int64_t tensor_numel(const struct tensor *t);
int tensor_copy(struct tensor *dst, const struct tensor *src);

double tensor_get(const struct tensor *t, int64_t i);
void tensor_set(struct tensor *t, int64_t i, double v);
int64_t tensor_get_i64(const struct tensor *t, int64_t i);
void tensor_set_i64(struct tensor *t, int64_t i, int64_t v);
/* True if any element is non-zero (the truth of a stop or loop blob). */
bool tensor_any(const struct tensor *t);
/* The index of the first NaN or infinity in t, or -1 (always for integers). */
int64_t tensor_first_nonfinite(const struct tensor *t);

/* Element kernels.  Output may alias an input.  b of add/axpy may be a
 * scalar broadcast over a.  Integer tensors use exact integer arithmetic
 * (callers ensure integral factors). */
void tensor_fill(struct tensor *t, double value);
int tensor_add(struct tensor *out, const struct tensor *a, const struct tensor *b);
int tensor_scale(struct tensor *out, const struct tensor *a, double factor);
int tensor_axpy(struct tensor *out, double alpha, const struct tensor *x, const struct tensor *y);
int tensor_sum(struct tensor *out, const struct tensor *a); /* scalar of a's dtype */

enum cmp_op { CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_EQ, CMP_NE };
enum cmp_op cmp_parse(const char *s, bool *ok);
const char *cmp_name(enum cmp_op op);
/* out (i32, a's shape) = a OP value, 1 or 0 per element. */
int tensor_cmp(struct tensor *out, const struct tensor *a, enum cmp_op op, double value);

/* A short human rendering: "103", "[1, 2, 3]", "[1, 2, ... 8 more]". */
char *tensor_format(const struct tensor *t, char *buf, size_t size);

#endif
