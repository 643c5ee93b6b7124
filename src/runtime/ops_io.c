/* File ops: read (records of a dataset) and ckpt_load (blobs of a committed checkpoint). */
#include "cairn/op.h"

#include "cairn/diag.h"
#include "cairn/error.h"
#include "cairn/exec.h"
#include "cairn/job.h"
#include "cairn/plan.h"
#include "cairn/runtime.h"
#include "op_impl.h"
#include "cairn/ckpt_file.h"
#include "cairn/workspace.h"
#include "cairn/ckpt_index.h"
#include "cairn/partition.h"
#include "cairn/reader.h"
#include "cairn/strbuf.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- read -------------------------------------------------------------- */

enum { READ_FILE, READ_DATASET, READ_LIMIT, READ_DTYPE, READ_RECORD };
static const struct param_def read_params[] = {
    {"file", PT_STR, NULL, NULL, "HDF5 file (relative to the working directory)"},
    {"dataset", PT_STR, NULL, NULL, "dataset path in the file"},
    {"limit", PT_INT, NULL, NULL, "records per call, over the whole group"},
    {"dtype", PT_ENUM, "f64", CAIRN_DTYPE_CHOICES, "element type of the batch"},
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


/* ---- ckpt_load --------------------------------------------------------- */

enum { LOAD_DIR, LOAD_EPOCH, LOAD_BLOBS, LOAD_DTYPE, LOAD_DIST };
static const struct param_def load_params[] = {
    {"dir", PT_STR, NULL, NULL, "checkpoint directory (with its index)"},
    {"epoch", PT_INT, "-1", NULL, "the epoch's checkpoint; -1 for the newest"},
    {"blobs", PT_STRS, NULL, NULL, "GROUP/BLOB names in the checkpoint, one per output"},
    {"dtype", PT_ENUM, "f32", CAIRN_DTYPE_CHOICES, "element type of every output"},
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


/* ---- definitions ---- */

const struct op_def op_read = {
    .name = "read",
    .summary = "batch, finished = the next limit records from cursor in[0]",
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 2,
    .flags = OPF_MUTATES_IN0,
    .params = read_params,
    .infer = read_infer,
    .run = read_run,
    .prepare = read_prepare,
};

const struct op_def op_ckpt_load = {
    .name = "ckpt_load",
    .summary = "outputs = blobs of a committed checkpoint",
    .max_in = 0,
    .min_out = 1,
    .max_out = 32,
    .flags = OPF_COLLECTIVE,
    .params = load_params,
    .infer = load_infer,
    .run = load_run,
    .prepare = load_prepare,
};
