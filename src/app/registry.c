/* What this build of cairn can run: every op, by family, and every
 * extension.  The one list to extend when adding either. */
#include "cairn/ext.h"
#include "cairn/op.h"
#include "cairn/train_spec.h"

/* ops_tensor.c */
extern const struct op_def op_fill, op_const, op_copy, op_add, op_scale, op_axpy, op_sum, op_cmp,
    op_range;
/* ops_comm.c */
extern const struct op_def op_allreduce_sum, op_broadcast;
/* ops_flow.c */
extern const struct op_def op_countdown, op_log, op_sleep;
/* ops_io.c */
extern const struct op_def op_read, op_ckpt_load;
/* train_ops.c (generated for model jobs) */
extern const struct op_def op_ps_init, op_ps_step, op_train_step, op_evaluate, op_download,
    op_save_model, op_embed_serve;

static const struct op_def *const ops[] = {
    &op_fill,     &op_const,      &op_copy,  &op_add,      &op_scale,         &op_axpy,
    &op_sum,      &op_cmp,        &op_allreduce_sum,       &op_broadcast,     &op_countdown,
    &op_log,      &op_read,       &op_sleep, &op_range,    &op_ckpt_load,     &op_ps_init,
    &op_ps_step,  &op_train_step, &op_evaluate,            &op_download,      &op_save_model,
    &op_embed_serve,
};

static const struct ext_def *const exts[] = {&train_ext};

const struct op_def *const *op_all(int *n)
{
    *n = (int)(sizeof ops / sizeof ops[0]);
    return ops;
}

const struct ext_def *const *ext_all(int *n)
{
    *n = (int)(sizeof exts / sizeof exts[0]);
    return exts;
}
