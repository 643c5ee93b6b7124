/* Optimizer updates; see include/cairn/optim.h. */
#include "cairn/optim.h"

#include "cairn/clones.h"

#include <math.h>

/* One element type's update over n elements: one branch-free loop per
 * optimizer, so the compiler vectorizes it (the update is on the critical
 * path between two steps).  The clones' bits are alike: each lane's add,
 * multiply, divide and square root is IEEE-rounded, and nothing is fused
 * (clones.h). */
#define UPDATE(T, SQRT)                                                                     \
    CAIRN_CLONES static void update_##T(const struct optim_args *a, int64_t n, T *restrict w,      \
                           const T *restrict g, T *restrict m, T *restrict v)               \
    {                                                                                       \
        const T lr = (T)a->lr, wd = (T)a->wd, mu = (T)a->mu, b1 = (T)a->b1, b2 = (T)a->b2;  \
        const T eps = (T)a->eps, c1 = (T)a->c1, c2 = (T)a->c2;                              \
        if (a->opt == OPT_SGD) {                                                            \
            for (int64_t i = 0; i < n; i++) w[i] -= lr * (g[i] + wd * w[i]);                 \
        } else if (a->opt == OPT_MOMENTUM) {                                                \
            for (int64_t i = 0; i < n; i++) {                                               \
                m[i] = mu * m[i] + (g[i] + wd * w[i]);                                      \
                w[i] -= lr * m[i];                                                          \
            }                                                                               \
        } else if (a->opt == OPT_ADAGRAD) {                                                 \
            for (int64_t i = 0; i < n; i++) {                                               \
                T gi = g[i] + wd * w[i];                                                    \
                m[i] += gi * gi;                                                            \
                w[i] -= lr * gi / (SQRT(m[i]) + eps);                                       \
            }                                                                               \
        } else {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                               \
                T gi = g[i] + wd * w[i];                                                    \
                m[i] = b1 * m[i] + ((T)1 - b1) * gi;                                        \
                v[i] = b2 * v[i] + ((T)1 - b2) * gi * gi;                                   \
                w[i] -= lr * (m[i] / c1) / (SQRT(v[i] / c2) + eps);                         \
            }                                                                               \
        }                                                                                   \
    }
UPDATE(float, sqrtf)
UPDATE(double, sqrt)
#undef UPDATE

void optim_update(enum dtype dt, const struct optim_args *a, int64_t n, void *w, const void *g,
                  void *m, void *v)
{
    if (dt == DT_F64)
        update_double(a, n, w, g, m, v);
    else
        update_float(a, n, w, g, m, v);
}
