/* Collective ops over a task's group: allreduce_sum, broadcast. */
#include "cairn/op.h"

#include "cairn/diag.h"
#include "cairn/error.h"
#include "cairn/exec.h"
#include "cairn/job.h"
#include "cairn/plan.h"
#include "cairn/runtime.h"
#include "op_impl.h"
#include "cairn/coll.h"
#include "cairn/workspace.h"

#include <limits.h>
#include <mpi.h>
#include <string.h>

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

/* MPI counts are ints: a larger blob is an error, never a wrapped count.
 * Every rank of the group sees the same count here, so all fail alike. */
static int fits_mpi(const struct op_call *c, int64_t n)
{
    if (n <= INT_MAX) return 0;
    return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                         "blob '%s' has %lld elements, more than the %d one MPI call carries",
                         c->op->in[0], (long long)n, INT_MAX);
}

static int allreduce_run(struct op_call *c)
{
    int rc = 0;
    struct tensor *in = &c->in[0]->t, *out = &c->out[0]->t;
    CAIRN_CHECK(same_count(c, in));
    CAIRN_CHECK(fits_mpi(c, tensor_numel(in)));
    if (out != in) CAIRN_CHECK(tensor_resize(out, in->dtype, &in->shape));
    CAIRN_CHECK_MPI(MPI_Allreduce(out == in ? MPI_IN_PLACE : in->data, out->data,
                                  (int)tensor_numel(in), coll_type(in->dtype), MPI_SUM,
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
    CAIRN_CHECK(fits_mpi(c, shape_numel(&s)));
    if (c->ctx->rank == root)
        CAIRN_CHECK(tensor_copy(out, in));
    else
        CAIRN_CHECK(tensor_resize(out, in->dtype, &s));
    CAIRN_CHECK_MPI(MPI_Bcast(out->data, (int)tensor_numel(out), coll_type(out->dtype), root,
                              c->ctx->comm));
cleanup:
    return rc;
}


/* ---- definitions ---- */

const struct op_def op_allreduce_sum = {
    .name = "allreduce_sum",
    .summary = "out = sum of in over the group's ranks",
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .flags = OPF_COLLECTIVE,
    .infer = allreduce_infer,
    .run = allreduce_run,
};

const struct op_def op_broadcast = {
    .name = "broadcast",
    .summary = "out = in of the group's rank root",
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .flags = OPF_COLLECTIVE,
    .params = bcast_params,
    .infer = bcast_infer,
    .run = bcast_run,
};
