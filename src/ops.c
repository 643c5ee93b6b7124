/* The op registry (include/cairn/op.h): the table at the end of this file
 * lists every op.  Adding an op means writing its infer/run functions here
 * and one table entry; heavier machinery lives in its own module and is
 * called from here. */
#include "cairn/op.h"

#include "cairn/ckpt_file.h"
#include "cairn/ckpt_index.h"
#include "cairn/diag.h"
#include "cairn/error.h"
#include "cairn/exec.h"
#include "cairn/job.h"
#include "cairn/partition.h"
#include "cairn/reader.h"
#include "cairn/runlog.h"
#include "cairn/runtime.h"
#include "cairn/plan.h"
#include "cairn/strbuf.h"
#include "cairn/train.h"
#include "cairn/workspace.h"

#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *dist_name(enum dist d)
{
    switch (d) {
    case DIST_REPLICATED: return "replicated";
    case DIST_SHARDED: return "sharded";
    case DIST_LOCAL: return "per-rank";
    }
    return "?";
}

int infer_error(struct infer *ix, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diags_add(ix->diags, ix->op->file, ix->op->line, "op '%s': %s", ix->op->def->name, msg);
    ix->errors++;
    return CAIRN_EINPUT;
}

static MPI_Datatype mpi_type(enum dtype t)
{
    switch (t) {
    case DT_F32: return MPI_FLOAT;
    case DT_F64: return MPI_DOUBLE;
    case DT_I32: return MPI_INT32_T;
    case DT_I64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;
    }
}

static const struct pval *P(const struct op_call *c, int k) { return &c->op->pv[k]; }
static const struct pval *PI(const struct infer *ix, int k) { return &ix->op->pv[k]; }

static bool is_scalar_type(const struct blob_type *t) { return shape_numel(&t->shape) == 1; }

/* ---- fill ------------------------------------------------------------- */

enum { FILL_SHAPE, FILL_DTYPE, FILL_VALUE, FILL_DIST };
static const struct param_def fill_params[] = {
    {"shape", PT_INTS, "[]", NULL, "global shape; [] is a scalar"},
    {"dtype", PT_ENUM, "f32", "f32|f64|i32|i64", "element type"},
    {"value", PT_FLOAT, "0", NULL, "value of every element"},
    {"dist", PT_ENUM, "replicated", "replicated|sharded|per-rank",
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

/* ---- collectives ------------------------------------------------------- */

/* Every rank must hold the same number of elements, or MPI would read past
 * a buffer: check first, collectively, and fail on every rank alike. */
static int same_count(struct op_call *c, const struct tensor *t)
{
    int rc = 0;
    int64_t mine[2] = {tensor_numel(t), -tensor_numel(t)}, ext[2];
    CAIRN_CHECK_MPI(MPI_Allreduce(mine, ext, 2, MPI_INT64_T, MPI_MAX, c->ctx->comm));
    if (ext[0] != -ext[1])
        CAIRN_FAIL(CAIRN_ERUNTIME, "blob '%s' has %lld to %lld elements across the group's ranks",
                   c->op->in[0], (long long)-ext[1], (long long)ext[0]);
cleanup:
    return rc;
}

static int allreduce_infer(struct infer *ix)
{
    if (ix->in[0].dist == DIST_SHARDED && ix->group_size > 1)
        return infer_error(ix, "input '%s' is sharded: its ranks hold blocks of different "
                               "sizes; reduce it with sum first",
                           ix->op->in[0]);
    ix->out[0] = ix->in[0];
    ix->out[0].dist = DIST_REPLICATED;
    return 0;
}

static int allreduce_run(struct op_call *c)
{
    int rc = 0;
    struct tensor *in = &c->in[0]->t, *out = &c->out[0]->t;
    CAIRN_CHECK(same_count(c, in));
    if (out != in) CAIRN_CHECK(tensor_resize(out, in->dtype, &in->shape));
    CAIRN_CHECK_MPI(MPI_Allreduce(out == in ? MPI_IN_PLACE : in->data, out->data,
                                  (int)tensor_numel(in), mpi_type(in->dtype), MPI_SUM,
                                  c->ctx->comm));
cleanup:
    return rc;
}

enum { BCAST_ROOT };
static const struct param_def bcast_params[] = {
    {"root", PT_INT, "0", NULL, "rank in the group whose value everyone gets"},
    {NULL, 0, NULL, NULL, NULL},
};

static int bcast_infer(struct infer *ix)
{
    int64_t root = PI(ix, BCAST_ROOT)->i;
    if (root < 0 || root >= ix->group_size)
        return infer_error(ix, "root %lld is not a rank of the group (0..%d)", (long long)root,
                           ix->group_size - 1);
    ix->out[0] = ix->in[0];
    ix->out[0].dist = DIST_REPLICATED;
    return 0;
}

static int bcast_run(struct op_call *c)
{
    int rc = 0;
    int root = (int)P(c, BCAST_ROOT)->i;
    struct tensor *in = &c->in[0]->t, *out = &c->out[0]->t;
    struct shape s = in->shape; /* the root's shape wins */
    CAIRN_CHECK_MPI(MPI_Bcast(&s, (int)sizeof s, MPI_BYTE, root, c->ctx->comm));
    if (c->ctx->rank == root)
        CAIRN_CHECK(tensor_copy(out, in));
    else
        CAIRN_CHECK(tensor_resize(out, in->dtype, &s));
    CAIRN_CHECK_MPI(MPI_Bcast(out->data, (int)tensor_numel(out), mpi_type(out->dtype), root,
                              c->ctx->comm));
cleanup:
    return rc;
}

/* ---- countdown ---------------------------------------------------------- */

static int countdown_infer(struct infer *ix)
{
    if (!dtype_is_int(ix->in[0].dtype) || !is_scalar_type(&ix->in[0]))
        return infer_error(ix, "counter '%s' must be an integer scalar", ix->op->in[0]);
    ix->out[0] = (struct blob_type){.dtype = DT_I32, .dist = ix->in[0].dist};
    return 0;
}

/* Decrement the counter (not below 0); done once it reaches 0, so a
 * counter set to n makes `loop until done` run n times. */
static int countdown_run(struct op_call *c)
{
    struct tensor *cnt = &c->in[0]->t;
    int64_t v = tensor_get_i64(cnt, 0);
    if (v > 0) tensor_set_i64(cnt, 0, --v);
    struct shape scalar = {0};
    int rc = tensor_resize(&c->out[0]->t, DT_I32, &scalar);
    if (rc == 0) tensor_set_i64(&c->out[0]->t, 0, v == 0);
    return rc;
}

/* ---- log ------------------------------------------------------------- */

enum { LOG_RANK };
static const struct param_def log_params[] = {
    {"rank", PT_INT, "0", NULL, "group rank that logs; -1 for every rank"},
    {NULL, 0, NULL, NULL, NULL},
};

static int log_infer(struct infer *ix)
{
    int64_t r = PI(ix, LOG_RANK)->i;
    if (r < -1 || r >= ix->group_size)
        return infer_error(ix, "rank %lld is not -1 or a rank of the group (0..%d)",
                           (long long)r, ix->group_size - 1);
    return 0;
}

static void json_value(struct strbuf *b, const struct tensor *t)
{
    int64_t n = tensor_numel(t);
    if (t->shape.ndim > 0) strbuf_add(b, "[");
    for (int64_t i = 0; i < n && i < 64; i++) {
        double v = tensor_get(t, i);
        if (i) strbuf_add(b, ",");
        if (dtype_is_int(t->dtype))
            strbuf_addf(b, "%lld", (long long)tensor_get_i64(t, i));
        else if (isfinite(v))
            strbuf_addf(b, "%.9g", v);
        else
            strbuf_add(b, "null");
    }
    if (t->shape.ndim > 0) strbuf_add(b, "]");
}

static void where_text(const struct runtime *rt, bool report, char *buf, size_t size)
{
    if (rt->phase == PHASE_EPOCH || rt->phase == PHASE_EPOCH_END)
        snprintf(buf, size, "%sepoch %lld step %lld", report ? "report " : "",
                 (long long)rt->epoch, (long long)rt->step);
    else
        snprintf(buf, size, "%s%s", report ? "report " : "", phase_name(rt->phase));
}

static int log_run(struct op_call *c)
{
    const struct exec_ctx *x = c->ctx;
    int64_t who = P(c, LOG_RANK)->i;
    if (who >= 0 && who != x->rank) return 0;
    const char *group = x->task->group;
    struct strbuf line = {0}, json = {0};
    char val[512], where[96];
    where_text(x->rt, x->in_report, where, sizeof where);
    strbuf_add(&json, "\"group\":");
    strbuf_json_str(&json, group);
    if (who < 0) strbuf_addf(&json, ",\"rank\":%d", x->rank);
    for (int i = 0; i < c->op->n_in; i++) {
        const struct tensor *t = &c->in[i]->t;
        strbuf_addf(&line, "%s%s/%s = %s", i ? ", " : "", group, c->op->in[i],
                    tensor_format(t, val, sizeof val));
        strbuf_add(&json, ",");
        strbuf_json_str(&json, c->op->in[i]);
        strbuf_add(&json, ":");
        json_value(&json, t);
    }
    if (who < 0)
        runlog_line(x->rt->log, "%s: %s (rank %d)", where, strbuf_str(&line), x->rank);
    else
        runlog_line(x->rt->log, "%s: %s", where, strbuf_str(&line));
    runlog_metric(x->rt->log, x->in_report ? "report" : "log", x->rt->epoch, x->rt->step,
                  strbuf_str(&json));
    int rc = strbuf_finish(&line);
    if (rc == 0) rc = strbuf_finish(&json);
    strbuf_free(&line);
    strbuf_free(&json);
    return rc;
}

/* ---- read -------------------------------------------------------------- */

enum { READ_FILE, READ_DATASET, READ_LIMIT, READ_DTYPE, READ_RECORD };
static const struct param_def read_params[] = {
    {"file", PT_STR, NULL, NULL, "HDF5 file (relative to the working directory)"},
    {"dataset", PT_STR, NULL, NULL, "dataset path in the file"},
    {"limit", PT_INT, NULL, NULL, "records per call, over the whole group"},
    {"dtype", PT_ENUM, "f64", "f32|f64|i32|i64", "element type of the batch"},
    {"record_shape", PT_INTS, "[]", NULL, "shape of one record: the dataset is [N] + this"},
    {NULL, 0, NULL, NULL, NULL},
};

static int read_infer(struct infer *ix)
{
    const struct blob_type *cur = &ix->in[0];
    if (cur->dtype != DT_I64 || !is_scalar_type(cur))
        return infer_error(ix, "cursor '%s' must be an i64 scalar (e.g. fill dtype=\"i64\")",
                           ix->op->in[0]);
    if (PI(ix, READ_LIMIT)->i < 1) return infer_error(ix, "limit must be >= 1");
    const struct pval *rs = PI(ix, READ_RECORD);
    if (rs->n + 1 > CAIRN_MAX_DIMS) return infer_error(ix, "record_shape has too many dimensions");
    struct blob_type *batch = &ix->out[0];
    batch->dtype = dtype_parse(PI(ix, READ_DTYPE)->s);
    batch->dist = ix->group_size > 1 ? DIST_LOCAL : DIST_REPLICATED;
    batch->shape.ndim = rs->n + 1;
    batch->shape.d[0] = -1;
    for (int i = 0; i < rs->n; i++) batch->shape.d[i + 1] = rs->ints[i];
    if (ix->op->n_out > 1) ix->out[1] = (struct blob_type){.dtype = DT_I32, .dist = cur->dist};
    return 0;
}

static int read_check_shape(struct op_call *c, const struct shape *s)
{
    const struct pval *rs = P(c, READ_RECORD);
    bool ok = s->ndim == rs->n + 1;
    for (int i = 0; ok && i < rs->n; i++) ok = s->d[i + 1] == rs->ints[i];
    if (ok) return 0;
    char sh[128];
    return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                         "dataset '%s' in '%s' has shape %s, but record_shape says [N]+[...%d "
                         "dims]",
                         P(c, READ_DATASET)->s, P(c, READ_FILE)->s,
                         shape_format(s, sh, sizeof sh), rs->n);
}

static int read_prepare(struct op_call *c)
{
    struct shape s;
    enum dtype t;
    int rc = reader_shape(c->ctx->rt->readers, P(c, READ_FILE)->s, P(c, READ_DATASET)->s, &s, &t);
    return rc ? rc : read_check_shape(c, &s);
}

/* The group's next `limit` records from the cursor, split in balanced
 * blocks over its ranks; the cursor is the same on every rank, so a
 * restart with another rank count continues at the same record. */
static int read_run(struct op_call *c)
{
    const struct exec_ctx *x = c->ctx;
    struct tensor *cursor = &c->in[0]->t;
    struct shape s;
    enum dtype t;
    const char *file = P(c, READ_FILE)->s, *ds = P(c, READ_DATASET)->s;
    int rc = reader_shape(x->rt->readers, file, ds, &s, &t);
    if (rc) return rc;
    int64_t at = tensor_get_i64(cursor, 0), n = s.d[0];
    int64_t take = at < n ? (n - at < P(c, READ_LIMIT)->i ? n - at : P(c, READ_LIMIT)->i) : 0;
    int64_t lo, hi;
    part_range(take, x->size, x->rank, &lo, &hi);
    rc = reader_rows(x->rt->readers, file, ds, at + lo, hi - lo,
                     dtype_parse(P(c, READ_DTYPE)->s), &c->out[0]->t);
    if (rc) return rc;
    tensor_set_i64(cursor, 0, at + take);
    if (c->op->n_out > 1) {
        struct shape scalar = {0};
        if ((rc = tensor_resize(&c->out[1]->t, DT_I32, &scalar))) return rc;
        tensor_set_i64(&c->out[1]->t, 0, at + take >= n);
    }
    return 0;
}

/* ---- range ------------------------------------------------------------ */

enum { RANGE_SHAPE, RANGE_DTYPE, RANGE_START, RANGE_STEP, RANGE_DIST };
static const struct param_def range_params[] = {
    {"shape", PT_INTS, NULL, NULL, "global shape"},
    {"dtype", PT_ENUM, "f32", "f32|f64|i32|i64", "element type"},
    {"start", PT_FLOAT, "0", NULL, "value of the first element"},
    {"step", PT_FLOAT, "1", NULL, "difference between consecutive elements"},
    {"dist", PT_ENUM, "replicated", "replicated|sharded|per-rank",
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

/* ---- ckpt_load --------------------------------------------------------- */

enum { LOAD_DIR, LOAD_EPOCH, LOAD_BLOBS, LOAD_DTYPE, LOAD_DIST };
static const struct param_def load_params[] = {
    {"dir", PT_STR, NULL, NULL, "checkpoint directory (with its index)"},
    {"epoch", PT_INT, "-1", NULL, "the epoch's checkpoint; -1 for the newest"},
    {"blobs", PT_STRS, NULL, NULL, "GROUP/BLOB names in the checkpoint, one per output"},
    {"dtype", PT_ENUM, "f32", "f32|f64|i32|i64", "element type of every output"},
    {"dist", PT_ENUM, "replicated", "replicated|sharded", "how the outputs are held"},
    {NULL, 0, NULL, NULL, NULL},
};

static int load_infer(struct infer *ix)
{
    const struct pval *b = PI(ix, LOAD_BLOBS);
    if (b->n != ix->op->n_out)
        return infer_error(ix, "%d blobs named for %d outputs", b->n, ix->op->n_out);
    for (int i = 0; i < b->n; i++) {
        const char *slash = strchr(b->strs[i], '/');
        if (!slash || slash == b->strs[i] || !slash[1])
            return infer_error(ix, "blob '%s' must be written GROUP/BLOB", b->strs[i]);
        ix->out[i] = (struct blob_type){.dtype = dtype_parse(PI(ix, LOAD_DTYPE)->s),
                                        .shape = {.ndim = -1},
                                        .dist = (enum dist)PI(ix, LOAD_DIST)->i};
    }
    return 0;
}

static int load_locate(struct op_call *c, char *path, size_t size)
{
    struct ckpt_entry e;
    return ckpt_index_locate(P(c, LOAD_DIR)->s, P(c, LOAD_EPOCH)->i, &e, path, size);
}

static int load_one(struct op_call *c, const char *path, const char *name, struct tensor *t,
                    uint64_t *mine, uint64_t *stored)
{
    char group[256];
    const char *slash = strchr(name, '/');
    snprintf(group, sizeof group, "%.*s", (int)(slash - name), name);
    enum dist d;
    int rc = ckpt_file_read_part(path, group, slash + 1, c->ctx->rank, c->ctx->size, t, mine,
                                 stored, &d);
    if (rc) return rc;
    if (d != (enum dist)P(c, LOAD_DIST)->i)
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "blob %s is %s in %s, not %s",
                             name, dist_name(d), path, P(c, LOAD_DIST)->s);
    if (t->dtype != dtype_parse(P(c, LOAD_DTYPE)->s))
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "blob %s is %s in %s, not %s",
                             name, dtype_name(t->dtype), path, P(c, LOAD_DTYPE)->s);
    if (d == DIST_REPLICATED && c->ctx->rank != 0) *mine = 0; /* counted once */
    return 0;
}

/* Check at start-up that the checkpoint and its blobs are there. */
static int load_prepare(struct op_call *c)
{
    char path[4400];
    int rc = load_locate(c, path, sizeof path);
    for (int i = 0; rc == 0 && i < c->op->n_out; i++) {
        struct tensor t = {0};
        uint64_t a, b;
        rc = load_one(c, path, P(c, LOAD_BLOBS)->strs[i], &t, &a, &b);
        tensor_free(&t);
    }
    return rc;
}

static int load_run(struct op_call *c)
{
    int rc = 0, n = c->op->n_out;
    char path[4400];
    uint64_t sums[2 * 32] = {0};
    CAIRN_CHECK(load_locate(c, path, sizeof path));
    for (int i = 0; i < n; i++)
        CAIRN_CHECK(load_one(c, path, P(c, LOAD_BLOBS)->strs[i], &c->out[i]->t, &sums[i],
                             &sums[n + i]));
    CAIRN_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, sums, n, MPI_UINT64_T, MPI_SUM, c->ctx->comm));
    for (int i = 0; i < n; i++)
        if (sums[i] != sums[n + i])
            CAIRN_FAIL(CAIRN_ECORRUPT, "blob %s in %s: checksum mismatch",
                       P(c, LOAD_BLOBS)->strs[i], path);
cleanup:
    return rc;
}

/* ---- training (generated by trainplan.c; kernels in train.c, ps.c, download.c) ---- */

/* Parameter k's global type: layer k/2's W [inputs, units] or b [units]. */
static struct blob_type param_type(const struct train_plan *tp, int k, enum dist d)
{
    struct blob_type t = {.dtype = tp->spec->dtype, .dist = d};
    int l = k / 2;
    t.shape.ndim = k % 2 ? 1 : 2;
    t.shape.d[0] = k % 2 ? tp->dims[l + 1] : tp->dims[l];
    t.shape.d[1] = tp->dims[l + 1];
    return t;
}

/* ps_init's outputs: parameters and optimizer state (sharded), then adam's
 * step count (replicated), in the order trainplan.c names them. */
static int ps_init_infer(struct infer *ix)
{
    const struct train_plan *tp = ix->plan->train;
    int K = 2 * tp->n_layers;
    for (int i = 0; i < ix->op->n_out; i++) {
        if (i == 3 * K) {
            ix->out[i] = (struct blob_type){.dtype = DT_I64, .dist = DIST_REPLICATED};
            continue;
        }
        ix->out[i] = param_type(tp, i % K, DIST_SHARDED);
    }
    return 0;
}

static int same_as_inputs(struct infer *ix)
{
    for (int i = 0; i < ix->op->n_out; i++) ix->out[i] = ix->in[i];
    return 0;
}

static int train_step_infer(struct infer *ix)
{
    const struct blob_type *cur = &ix->in[0];
    if (cur->dtype != DT_I64 || cur->shape.ndim != 1 || cur->shape.d[0] != 2)
        return infer_error(ix, "cursor '%s' must be i64[2] (pass, position)", ix->op->in[0]);
    if (ix->op->n_out) ix->out[0] = (struct blob_type){.dtype = DT_F64, .dist = DIST_REPLICATED};
    return 0;
}

static int evaluate_infer(struct infer *ix)
{
    for (int i = 0; i < ix->op->n_out; i++)
        ix->out[i] = (struct blob_type){.dtype = DT_F64, .dist = DIST_REPLICATED};
    return 0;
}

/* On the first stage: whole parameters, held by trainer 0 alone. */
static int download_infer(struct infer *ix)
{
    for (int i = 0; i < ix->op->n_out; i++) ix->out[i] = param_type(ix->plan->train, i, DIST_LOCAL);
    return 0;
}

/* ---- sleep ------------------------------------------------------------- */

enum { SLEEP_MS };
static const struct param_def sleep_params[] = {
    {"ms", PT_INT, NULL, NULL, "milliseconds to wait (stands in for work in examples)"},
    {NULL, 0, NULL, NULL, NULL},
};

static int sleep_infer(struct infer *ix)
{
    if (PI(ix, SLEEP_MS)->i < 0) return infer_error(ix, "ms must be >= 0");
    return 0;
}

static int sleep_run(struct op_call *c)
{
    int64_t ms = P(c, SLEEP_MS)->i;
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&t, &t) != 0) {
    }
    return 0;
}

/* ---- the table ------------------------------------------------------------ */

static const struct op_def op_fill = {
    "fill", "a tensor of one value (alias: const)", 0, 0, 1, 1, 0, fill_params,
    fill_infer, fill_run, NULL};
static const struct op_def op_const = {
    "const", "a tensor of one value (same as fill)", 0, 0, 1, 1, 0, fill_params,
    fill_infer, fill_run, NULL};
static const struct op_def op_copy = {
    "copy", "out = in", 1, 1, 1, 1, 0, NULL, copy_infer, copy_run, NULL};
static const struct op_def op_add = {
    "add", "out = in[0] + in[1] (in[1] may be a scalar)", 2, 2, 1, 1, 0, NULL,
    pair_infer, add_run, NULL};
static const struct op_def op_scale = {
    "scale", "out = factor * in", 1, 1, 1, 1, 0, scale_params, scale_infer, scale_run, NULL};
static const struct op_def op_axpy = {
    "axpy", "out = alpha * in[0] + in[1]", 2, 2, 1, 1, 0, axpy_params, axpy_infer,
    axpy_run, NULL};
static const struct op_def op_sum = {
    "sum", "out = sum of in's elements (a scalar)", 1, 1, 1, 1, 0, NULL, sum_infer,
    sum_run, NULL};
static const struct op_def op_cmp = {
    "cmp", "out = in CMP value, 1 or 0 per element (i32)", 1, 1, 1, 1, 0, cmp_params,
    cmp_infer, cmp_run, NULL};
static const struct op_def op_allreduce_sum = {
    "allreduce_sum", "out = sum of in over the group's ranks", 1, 1, 1, 1, OPF_COLLECTIVE,
    NULL, allreduce_infer, allreduce_run, NULL};
static const struct op_def op_broadcast = {
    "broadcast", "out = in of the group's rank root", 1, 1, 1, 1, OPF_COLLECTIVE,
    bcast_params, bcast_infer, bcast_run, NULL};
static const struct op_def op_countdown = {
    "countdown", "decrement counter in[0]; out = 1 once it reaches 0", 1, 1, 1, 1,
    OPF_MUTATES_IN0, NULL, countdown_infer, countdown_run, NULL};
static const struct op_def op_log = {
    "log", "write the inputs' values to the log and metrics", 1, 32, 0, 0, 0, log_params,
    log_infer, log_run, NULL};
static const struct op_def op_read = {
    "read", "batch, finished = the next limit records from cursor in[0]", 1, 1, 1, 2,
    OPF_MUTATES_IN0, read_params, read_infer, read_run, read_prepare};

static const struct op_def op_sleep = {
    "sleep", "wait ms milliseconds", 0, 0, 0, 0, 0, sleep_params, sleep_infer, sleep_run, NULL};

static const struct op_def op_range = {
    "range", "start, start + step, ... over the global element order", 0, 0, 1, 1, 0,
    range_params, range_infer, range_run, NULL};
static const struct op_def op_ckpt_load = {
    "ckpt_load", "outputs = blobs of a committed checkpoint", 0, 0, 1, 32, OPF_COLLECTIVE,
    load_params, load_infer, load_run, load_prepare};

#define TRAIN_OP(var, name, summary, in_max, out_max, infer, run)                            \
    static const struct op_def var = {name,    summary, 0, in_max, 0, out_max,               \
                                      OPF_COLLECTIVE | OPF_INTERNAL, NULL, infer, run, NULL}
TRAIN_OP(op_ps_init, "ps_init", "parameters and optimizer state, sharded over the PS", 0, 4096,
         ps_init_infer, train_op_ps_init);
TRAIN_OP(op_ps_step, "ps_step",
         "sum the replicas' gradients in order, apply the optimizer, publish the parameters",
         4096, 4096, same_as_inputs, train_op_ps_step);
TRAIN_OP(op_train_step, "train_step", "one pipeline step of the mini-batch at the cursor", 1, 1,
         train_step_infer, train_op_step);
TRAIN_OP(op_evaluate, "evaluate", "loss and accuracy on the held-out rows", 0, 2, evaluate_infer,
         train_op_evaluate);
TRAIN_OP(op_download, "download", "every parameter onto trainer 0 (ScaLAPACK p?gemr2d)", 4096,
         4096, download_infer, train_op_download);
TRAIN_OP(op_save_model, "save_model", "trainer 0 writes RUN_DIR/model.h5", 4096, 0, NULL,
         train_op_save_model);

static const struct op_def *const registry[] = {
    &op_fill, &op_const, &op_copy, &op_add, &op_scale, &op_axpy, &op_sum, &op_cmp,
    &op_allreduce_sum, &op_broadcast, &op_countdown, &op_log, &op_read, &op_sleep, &op_range, &op_ckpt_load, &op_ps_init, &op_ps_step, &op_train_step,
    &op_evaluate, &op_download, &op_save_model,
};

const struct op_def *const *op_all(int *n)
{
    *n = (int)(sizeof registry / sizeof registry[0]);
    return registry;
}

const struct op_def *op_find(const char *name)
{
    int n;
    const struct op_def *const *all = op_all(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    return NULL;
}

int op_choice_index(const char *choices, const char *s)
{
    int idx = 0;
    size_t n = strlen(s);
    for (const char *p = choices; *p; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, s, n) == 0) return idx;
        if (!bar) break;
        p = bar + 1;
    }
    return -1;
}

/* Defaults are job-file text in the op table (static, so no copies). */
void op_set_defaults(const struct op_def *def, struct pval *pv)
{
    for (int i = 0; def->params && def->params[i].key; i++) {
        const struct param_def *pd = &def->params[i];
        struct pval *v = &pv[i];
        if (!pd->dflt) continue;
        switch (pd->type) {
        case PT_INT: v->i = strtoll(pd->dflt, NULL, 10); v->f = (double)v->i; break;
        case PT_FLOAT: v->f = strtod(pd->dflt, NULL); break;
        case PT_STR: v->s = pd->dflt; break;
        case PT_BOOL: v->i = strcmp(pd->dflt, "true") == 0; break;
        case PT_ENUM: v->i = op_choice_index(pd->choices, pd->dflt); v->s = pd->dflt; break;
        case PT_INTS: case PT_STRS: v->n = 0; break; /* defaults are empty lists */
        }
    }
}

int op_param_index(const struct op_def *def, const char *key)
{
    for (int i = 0; def->params && def->params[i].key; i++)
        if (strcmp(def->params[i].key, key) == 0) return i;
    return -1;
}
