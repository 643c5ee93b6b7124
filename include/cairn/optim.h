/* Optimizer updates, elementwise, shared by the dense parameters on the PS
 * shards and the rows of embedding tables.  Being elementwise, an update
 * gives the same bits however the elements are split over shards, and
 * whether a table's rows are updated one by one or in a block. */
#ifndef CAIRN_OPTIM_H
#define CAIRN_OPTIM_H

#include "cairn/tensor.h"

#include <stdint.h>

/* m and v are the optimizer's state: momentum's velocity; adam's first and
 * second moments; adagrad's sum of squared gradients (in m). */
enum optimizer { OPT_SGD, OPT_MOMENTUM, OPT_ADAM, OPT_ADAGRAD };

/* How many state arrays (m, v) the optimizer keeps beside each parameter. */
static inline int optim_states(enum optimizer o)
{
    return o == OPT_SGD ? 0 : o == OPT_ADAM ? 2 : 1;
}

struct optim_args {
    enum optimizer opt;
    double lr, wd, mu, b1, b2, eps, c1, c2; /* c1, c2: adam's bias corrections */
};

/* n elements of dtype dt (f32 or f64): w updated with gradient g (plus
 * wd w, weight decay), m and v as the optimizer keeps them (NULL where it
 * keeps none). */
void optim_update(enum dtype dt, const struct optim_args *a, int64_t n, void *w, const void *g,
                  void *m, void *v);

#endif
