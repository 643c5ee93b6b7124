/* What this build of cairn can run: the core's ops, by family, and every
 * extension (which brings its own ops).  The one list to extend when
 * adding either. */
#include "cairn/ext.h"
#include "cairn/op.h"
#include "cairn/train_spec.h"

#include <pthread.h>
#include <stdlib.h>

/* ops_tensor.c */
extern const struct op_def op_fill, op_const, op_copy, op_add, op_scale, op_axpy, op_sum, op_cmp,
    op_range;
/* ops_comm.c */
extern const struct op_def op_allreduce_sum, op_broadcast;
/* ops_flow.c */
extern const struct op_def op_countdown, op_log, op_sleep;
/* ops_io.c */
extern const struct op_def op_read, op_ckpt_load;

static const struct op_def *const core_ops[] = {
    &op_fill,  &op_const,    &op_copy,          &op_add,       &op_scale,     &op_axpy,
    &op_sum,   &op_cmp,      &op_allreduce_sum, &op_broadcast, &op_countdown, &op_log,
    &op_read,  &op_sleep,    &op_range,         &op_ckpt_load,
};

static const struct ext_def *const exts[] = {&train_ext};

enum { OPS_MAX = 256 };
static const struct op_def *ops[OPS_MAX];
static int n_ops;
static pthread_once_t ops_once = PTHREAD_ONCE_INIT;

static void list_ops(void)
{
    for (size_t i = 0; i < sizeof core_ops / sizeof core_ops[0]; i++) ops[n_ops++] = core_ops[i];
    for (size_t e = 0; e < sizeof exts / sizeof exts[0]; e++)
        for (int i = 0; exts[e]->ops && exts[e]->ops[i]; i++) {
            if (n_ops == OPS_MAX) abort(); /* a build with more ops raises OPS_MAX */
            ops[n_ops++] = exts[e]->ops[i];
        }
}

const struct op_def *const *op_all(int *n)
{
    pthread_once(&ops_once, list_ops);
    *n = n_ops;
    return ops;
}

const struct ext_def *const *ext_all(int *n)
{
    *n = (int)(sizeof exts / sizeof exts[0]);
    return exts;
}
