/* Optimizer updates; see include/cairn/optim.h. */
#include "cairn/optim.h"

#include <math.h>

/* Clones for the widest vectors the CPU has, chosen at load time by an
 * ifunc resolver; not under the sanitizers, whose instrumented resolvers
 * would run before they are set up.  The clones' bits are alike: each
 * lane's add, multiply, divide and square root is IEEE-rounded, and the
 * build fuses no multiply-add (-ffp-contract=off, GNUmakefile). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define CLONES
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define CLONES
#endif
#endif
#ifndef CLONES
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

/* One element type's update over n elements: one branch-free loop per
 * optimizer, so the compiler vectorizes it (the update is on the critical
 * path between two steps). */
#define UPDATE(T, SQRT)                                                                     \
    CLONES static void update_##T(const struct optim_args *a, int64_t n, T *restrict w,            \
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
