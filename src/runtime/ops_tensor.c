/* Element-wise and shape ops: fill/const, copy, add, scale, axpy, sum, cmp, range. */
#include "cairn/op.h"

#include "cairn/diag.h"
#include "cairn/error.h"
#include "cairn/exec.h"
#include "cairn/job.h"
#include "cairn/plan.h"
#include "cairn/runtime.h"
#include "op_impl.h"
#include "cairn/partition.h"
#include "cairn/workspace.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- fill ------------------------------------------------------------- */

enum { FILL_SHAPE, FILL_DTYPE, FILL_VALUE, FILL_DIST };
static const struct param_def fill_params[] = {
    {"shape", PT_INTS, "[]", NULL, "global shape; [] is a scalar"},
    {"dtype", PT_ENUM, "f32", CAIRN_DTYPE_CHOICES, "element type"},
    {"value", PT_FLOAT, "0", NULL, "value of every element"},
    {"dist", PT_ENUM, "replicated", CAIRN_DIST_CHOICES,
     "sharded splits dimension 0 over the group's ranks"},
    {NULL, 0, NULL, NULL, NULL},
};

/* Can `what` (a number from the job file) be held exactly by dtype t?
 * Integers must be whole and in range; f32 must not overflow to inf. */
static int fits_dtype(struct infer *ix, double v, enum dtype t, const char *what)
{
    double lo = t == DT_I32 ? -2147483648.0 : -9223372036854775808.0;
    double hi = t == DT_I32 ? 2147483648.0 : 9223372036854775808.0; /* exclusive */
    if (dtype_is_int(t) && v != floor(v))
        return infer_error(ix, "%s %g is not an integer but dtype is %s", what, v, dtype_name(t));
    if (dtype_is_int(t) && !(v >= lo && v < hi))
        return infer_error(ix, "%s %g does not fit dtype %s", what, v, dtype_name(t));
    if (t == DT_F32 && isfinite(v) && fabs(v) > FLT_MAX)
        return infer_error(ix, "%s %g does not fit dtype f32", what, v);
    return 0;
}

static int fill_infer(struct infer *ix)
{
    struct blob_type *o = &ix->out[0];
    const struct pval *sh = PI(ix, FILL_SHAPE);
    o->dtype = dtype_parse(PI(ix, FILL_DTYPE)->s);
    o->dist = (enum dist)PI(ix, FILL_DIST)->i;
    if (sh->n > CAIRN_MAX_DIMS) return infer_error(ix, "at most %d dimensions", CAIRN_MAX_DIMS);
    o->shape.ndim = sh->n;
    for (int i = 0; i < sh->n; i++) {
        if (sh->ints[i] < 0) return infer_error(ix, "shape entries must be >= 0");
        o->shape.d[i] = sh->ints[i];
    }
    int rc = fits_dtype(ix, PI(ix, FILL_VALUE)->f, o->dtype, "value");
    if (rc) return rc;
    if (o->dist == DIST_SHARDED && sh->n < 1)
        return infer_error(ix, "a sharded blob needs at least one dimension to split");
    return 0;
}

/* The shape this rank holds of a blob with global shape g. */
static struct shape local_shape(const struct exec_ctx *x, enum dist d, const struct shape *g)
{
    struct shape s = *g;
    if (d == DIST_SHARDED) {
        int64_t lo, hi;
        block_range(g->d[0], x->size, x->rank, &lo, &hi);
        s.d[0] = hi - lo;
    }
    return s;
}

static int fill_run(struct op_call *c)
{
    const struct pval *sh = P(c, FILL_SHAPE);
    struct shape g = {.ndim = sh->n};
    for (int i = 0; i < sh->n; i++) g.d[i] = sh->ints[i];
    struct shape s = local_shape(c->ctx, (enum dist)P(c, FILL_DIST)->i, &g);
    int rc = tensor_resize(&c->out[0]->t, dtype_parse(P(c, FILL_DTYPE)->s), &s);
    if (rc == 0) tensor_fill(&c->out[0]->t, P(c, FILL_VALUE)->f);
    return rc;
}


/* ---- copy, add, scale, axpy, sum, cmp ----------------------------------- */

static int copy_infer(struct infer *ix)
{
    ix->out[0] = ix->in[0];
    return 0;
}

static int copy_run(struct op_call *c) { return tensor_copy(&c->out[0]->t, &c->in[0]->t); }

/* Elementwise pair: same dtype; b has a's shape or is a scalar. */
static int pair_infer(struct infer *ix)
{
    const struct blob_type *a = &ix->in[0], *b = &ix->in[1];
    char sa[96], sb[96];
    if (a->dtype != b->dtype)
        return infer_error(ix, "inputs '%s' (%s) and '%s' (%s) have different dtypes",
                           ix->op->in[0], dtype_name(a->dtype), ix->op->in[1],
                           dtype_name(b->dtype));
    bool scalar_b = is_scalar_type(b) && b->dist == DIST_REPLICATED;
    if (!scalar_b && !shape_compatible(&a->shape, &b->shape))
        return infer_error(ix, "inputs '%s' %s and '%s' %s have different shapes",
                           ix->op->in[0], shape_format(&a->shape, sa, sizeof sa), ix->op->in[1],
                           shape_format(&b->shape, sb, sizeof sb));
    ix->out[0] = *a;
    if (!scalar_b && a->dist != b->dist) {
        if (a->dist == DIST_SHARDED || b->dist == DIST_SHARDED)
            return infer_error(ix, "cannot combine a sharded blob with a %s one",
                               dist_name(a->dist == DIST_SHARDED ? b->dist : a->dist));
        ix->out[0].dist = DIST_LOCAL;
    }
    return 0;
}

static int add_run(struct op_call *c)
{
    return tensor_add(&c->out[0]->t, &c->in[0]->t, &c->in[1]->t);
}

enum { SCALE_FACTOR };
static const struct param_def scale_params[] = {
    {"factor", PT_FLOAT, NULL, NULL, "multiplier"},
    {NULL, 0, NULL, NULL, NULL},
};

static int scale_infer(struct infer *ix)
{
    ix->out[0] = ix->in[0];
    return fits_dtype(ix, PI(ix, SCALE_FACTOR)->f, ix->in[0].dtype, "factor");
}

static int scale_run(struct op_call *c)
{
    return tensor_scale(&c->out[0]->t, &c->in[0]->t, P(c, SCALE_FACTOR)->f);
}

enum { AXPY_ALPHA };
static const struct param_def axpy_params[] = {
    {"alpha", PT_FLOAT, NULL, NULL, "out = alpha * in[0] + in[1]"},
    {NULL, 0, NULL, NULL, NULL},
};

static int axpy_infer(struct infer *ix)
{
    if (pair_infer(ix)) return CAIRN_EINPUT;
    return fits_dtype(ix, PI(ix, AXPY_ALPHA)->f, ix->in[0].dtype, "alpha");
}

static int axpy_run(struct op_call *c)
{
    return tensor_axpy(&c->out[0]->t, P(c, AXPY_ALPHA)->f, &c->in[0]->t, &c->in[1]->t);
}

static int sum_infer(struct infer *ix)
{
    ix->out[0] = (struct blob_type){.dtype = ix->in[0].dtype,
                                    .dist = ix->in[0].dist == DIST_REPLICATED ? DIST_REPLICATED
                                                                              : DIST_LOCAL};
    return 0;
}

static int sum_run(struct op_call *c) { return tensor_sum(&c->out[0]->t, &c->in[0]->t); }

enum { CMP_OP, CMP_VALUE };
static const struct param_def cmp_params[] = {
    {"cmp", PT_ENUM, NULL, "lt|le|gt|ge|eq|ne", "comparison"},
    {"value", PT_FLOAT, NULL, NULL, "right-hand side"},
    {NULL, 0, NULL, NULL, NULL},
};

static int cmp_infer(struct infer *ix)
{
    ix->out[0] = ix->in[0];
    ix->out[0].dtype = DT_I32;
    return 0;
}

static int cmp_run(struct op_call *c)
{
    return tensor_cmp(&c->out[0]->t, &c->in[0]->t, (enum cmp_op)P(c, CMP_OP)->i,
                      P(c, CMP_VALUE)->f);
}


/* ---- range ------------------------------------------------------------ */

enum { RANGE_SHAPE, RANGE_DTYPE, RANGE_START, RANGE_STEP, RANGE_DIST };
static const struct param_def range_params[] = {
    {"shape", PT_INTS, NULL, NULL, "global shape"},
    {"dtype", PT_ENUM, "f32", CAIRN_DTYPE_CHOICES, "element type"},
    {"start", PT_FLOAT, "0", NULL, "value of the first element"},
    {"step", PT_FLOAT, "1", NULL, "difference between consecutive elements"},
    {"dist", PT_ENUM, "replicated", CAIRN_DIST_CHOICES,
     "sharded splits dimension 0 over the group's ranks"},
    {NULL, 0, NULL, NULL, NULL},
};

static int range_infer(struct infer *ix)
{
    struct blob_type *o = &ix->out[0];
    const struct pval *sh = PI(ix, RANGE_SHAPE);
    o->dtype = dtype_parse(PI(ix, RANGE_DTYPE)->s);
    o->dist = (enum dist)PI(ix, RANGE_DIST)->i;
    if (sh->n < 1 || sh->n > CAIRN_MAX_DIMS)
        return infer_error(ix, "shape needs 1 to %d dimensions", CAIRN_MAX_DIMS);
    o->shape.ndim = sh->n;
    for (int i = 0; i < sh->n; i++) {
        if (sh->ints[i] < 0) return infer_error(ix, "shape entries must be >= 0");
        o->shape.d[i] = sh->ints[i];
    }
    double a = PI(ix, RANGE_START)->f, b = PI(ix, RANGE_STEP)->f;
    double n = (double)shape_numel(&o->shape);
    int rc = fits_dtype(ix, a, o->dtype, "start");
    if (rc == 0) rc = fits_dtype(ix, b, o->dtype, "step");
    if (rc == 0) rc = fits_dtype(ix, n > 0 ? a + (n - 1) * b : a, o->dtype, "the last value");
    return rc;
}

/* Element with global flat index i holds start + i * step, on any layout. */
static int range_run(struct op_call *c)
{
    const struct pval *sh = P(c, RANGE_SHAPE);
    struct shape g = {.ndim = sh->n};
    for (int i = 0; i < sh->n; i++) g.d[i] = sh->ints[i];
    enum dist d = (enum dist)P(c, RANGE_DIST)->i;
    struct shape s = local_shape(c->ctx, d, &g);
    struct tensor *t = &c->out[0]->t;
    int rc = tensor_resize(t, dtype_parse(P(c, RANGE_DTYPE)->s), &s);
    if (rc) return rc;
    int64_t row = shape_numel(&g) / (g.d[0] ? g.d[0] : 1), first = 0, hi;
    if (d == DIST_SHARDED) block_range(g.d[0], c->ctx->size, c->ctx->rank, &first, &hi);
    double a = P(c, RANGE_START)->f, b = P(c, RANGE_STEP)->f;
    for (int64_t i = 0, n = tensor_numel(t); i < n; i++) {
        int64_t k = first * row + i;
        if (dtype_is_int(t->dtype))
            tensor_set_i64(t, i, (int64_t)a + k * (int64_t)b);
        else
            tensor_set(t, i, a + (double)k * b);
    }
    return 0;
}


/* ---- definitions ---- */

const struct op_def op_fill = {
    .name = "fill",
    .summary = "a tensor of one value (alias: const)",
    .max_in = 0,
    .min_out = 1,
    .max_out = 1,
    .params = fill_params,
    .infer = fill_infer,
    .run = fill_run,
};

const struct op_def op_const = {
    .name = "const",
    .summary = "a tensor of one value (same as fill)",
    .max_in = 0,
    .min_out = 1,
    .max_out = 1,
    .params = fill_params,
    .infer = fill_infer,
    .run = fill_run,
};

const struct op_def op_copy = {
    .name = "copy",
    .summary = "out = in",
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = copy_infer,
    .run = copy_run,
};

const struct op_def op_add = {
    .name = "add",
    .summary = "out = in[0] + in[1] (in[1] may be a scalar)",
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .infer = pair_infer,
    .run = add_run,
};

const struct op_def op_scale = {
    .name = "scale",
    .summary = "out = factor * in",
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .params = scale_params,
    .infer = scale_infer,
    .run = scale_run,
};

const struct op_def op_axpy = {
    .name = "axpy",
    .summary = "out = alpha * in[0] + in[1]",
    .min_in = 2,
    .max_in = 2,
    .min_out = 1,
    .max_out = 1,
    .params = axpy_params,
    .infer = axpy_infer,
    .run = axpy_run,
};

const struct op_def op_sum = {
    .name = "sum",
    .summary = "out = sum of in's elements (a scalar)",
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .infer = sum_infer,
    .run = sum_run,
};

const struct op_def op_cmp = {
    .name = "cmp",
    .summary = "out = in CMP value, 1 or 0 per element (i32)",
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .params = cmp_params,
    .infer = cmp_infer,
    .run = cmp_run,
};

const struct op_def op_range = {
    .name = "range",
    .summary = "start, start + step, ... over the global element order",
    .max_in = 0,
    .min_out = 1,
    .max_out = 1,
    .params = range_params,
    .infer = range_infer,
    .run = range_run,
};
