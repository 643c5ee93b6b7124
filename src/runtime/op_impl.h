/* Private to the op families in src/runtime (ops_*.c): parameter access. */
#ifndef CAIRN_OP_IMPL_H
#define CAIRN_OP_IMPL_H

#include "cairn/job.h"
#include "cairn/op.h"

/* Parameter k of the op being run or inferred (k: the family's enum). */
static inline const struct pval *P(const struct op_call *c, int k) { return &c->op->pv[k]; }
static inline const struct pval *PI(const struct infer *ix, int k) { return &ix->op->pv[k]; }

static inline bool is_scalar_type(const struct blob_type *t) { return shape_numel(&t->shape) == 1; }

#endif
