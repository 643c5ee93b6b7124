/* The training kernels against finite differences (f64), and the RNG. */
#include "unit.h"

#include "cairn/nn.h"
#include "cairn/partition.h"
#include "cairn/rng.h"

#include <math.h>

/* loss of a 2-layer net on fixed data, as a function of all parameters */
struct net {
    int64_t n, d0, d1, d2;
    double *x, *W1, *b1, *W2, *b2;
    int32_t *labels;
    enum act a1;
    enum loss loss;
};

static double net_loss(struct net *m, double *dW1, double *db1, double *dW2, double *db2)
{
    double *h = calloc((size_t)(m->n * m->d1), sizeof *h), *z = calloc((size_t)(m->n * m->d2), sizeof *z);
    double *dz = calloc((size_t)(m->n * m->d2), sizeof *dz), *dh = calloc((size_t)(m->n * m->d1), sizeof *dh);
    int64_t correct;
    nn_forward(DT_F64, m->n, m->d0, m->d1, m->x, m->W1, m->b1, m->a1, h);
    nn_forward(DT_F64, m->n, m->d1, m->d2, h, m->W2, m->b2, ACT_IDENTITY, z);
    double *targets = NULL;
    if (m->loss == LOSS_MSE && !m->labels) {
        targets = calloc((size_t)(m->n * m->d2), sizeof *targets);
        for (int64_t i = 0; i < m->n * m->d2; i++) targets[i] = sin((double)i);
    }
    double l = nn_loss(DT_F64, m->loss, m->n, m->d2, z, m->labels, targets, m->n, dz, &correct) / (double)m->n;
    if (dW1) {
        nn_backward(DT_F64, m->n, m->d1, m->d2, h, m->W2, z, ACT_IDENTITY, dz, dW2, db2, dh, false);
        nn_backward(DT_F64, m->n, m->d0, m->d1, m->x, m->W1, h, m->a1, dh, dW1, db1, NULL, false);
    }
    free(h);
    free(z);
    free(dz);
    free(dh);
    free(targets);
    return l;
}

static void check_param(struct net *m, double *p, const double *grad, int64_t count)
{
    for (int64_t i = 0; i < count; i++) {
        double keep = p[i], e = 1e-6;
        p[i] = keep + e;
        double up = net_loss(m, NULL, NULL, NULL, NULL);
        p[i] = keep - e;
        double down = net_loss(m, NULL, NULL, NULL, NULL);
        p[i] = keep;
        double fd = (up - down) / (2 * e);
        if (fabs(fd - grad[i]) > 1e-6 * (1 + fabs(fd)))
            fail_msg("parameter %lld: backward %.10g, finite difference %.10g", (long long)i, grad[i], fd);
    }
}

static double *rnd(int64_t n, uint64_t stream)
{
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = rng_normal(5, stream, (uint64_t)i) * 0.7;
    return v;
}

static void gradients_match_finite_differences(void **state)
{
    (void)state;
    const enum act acts[] = {ACT_RELU, ACT_TANH, ACT_SIGMOID, ACT_IDENTITY};
    for (int li = 0; li < 2; li++) {
        for (int ai = 0; ai < 4; ai++) {
            struct net m = {.n = 7, .d0 = 5, .d1 = 6, .d2 = 4, .a1 = acts[ai], .loss = (enum loss)li};
            m.x = rnd(m.n * m.d0, 1);
            m.W1 = rnd(m.d0 * m.d1, 2);
            m.b1 = rnd(m.d1, 3);
            m.W2 = rnd(m.d1 * m.d2, 4);
            m.b2 = rnd(m.d2, 5);
            int32_t labels[7] = {0, 3, 1, 2, 2, 0, 3};
            m.labels = li == 0 || ai % 2 ? labels : NULL; /* mse: labels and targets both */
            double *g[4] = {calloc((size_t)(m.d0 * m.d1), 8), calloc((size_t)m.d1, 8),
                            calloc((size_t)(m.d1 * m.d2), 8), calloc((size_t)m.d2, 8)};
            net_loss(&m, g[0], g[1], g[2], g[3]);
            check_param(&m, m.W1, g[0], m.d0 * m.d1);
            check_param(&m, m.b1, g[1], m.d1);
            check_param(&m, m.W2, g[2], m.d1 * m.d2);
            check_param(&m, m.b2, g[3], m.d2);
            for (int i = 0; i < 4; i++) free(g[i]);
            free(m.x);
            free(m.W1);
            free(m.b1);
            free(m.W2);
            free(m.b2);
        }
    }
}

static void relu_keeps_nan(void **state)
{
    (void)state;
    double x[3] = {NAN, -1, 2}, W[1] = {1}, b[1] = {0}, y[3];
    nn_forward(DT_F64, 3, 1, 1, x, W, b, ACT_RELU, y);
    assert_true(isnan(y[0])); /* so on_nan = "abort" can see it */
    assert_true(y[1] == 0 && y[2] == 2);
}

static void rng_is_a_function_of_its_counters(void **state)
{
    (void)state;
    assert_true(rng_u64(1, 2, 3) == rng_u64(1, 2, 3));
    assert_true(rng_u64(1, 2, 3) != rng_u64(1, 2, 4));
    assert_true(rng_u64(1, 2, 3) != rng_u64(1, 3, 3));
    double mean = 0, sq = 0;
    for (int i = 0; i < 20000; i++) {
        double z = rng_normal(9, 1, (uint64_t)i);
        mean += z;
        sq += z * z;
    }
    mean /= 20000;
    assert_true(fabs(mean) < 0.05 && fabs(sq / 20000 - 1) < 0.05);
    int64_t perm[100], seen[100] = {0};
    rng_permutation(4, 0, 100, perm);
    for (int i = 0; i < 100; i++) seen[perm[i]]++;
    for (int i = 0; i < 100; i++) assert_int_equal(seen[i], 1);
    int64_t again[100];
    rng_permutation(4, 1, 100, again);
    assert_true(memcmp(perm, again, sizeof perm) != 0); /* another pass, another order */
}

/* Draws follow k^-s: the first ranks' frequencies within 3% of the law. */
static void zipf_follows_the_law(void **state)
{
    (void)state;
    const int64_t n = 1000, draws = 400000;
    const double s[] = {0.6, 1.0, 1.1, 2.0};
    for (size_t c = 0; c < sizeof s / sizeof *s; c++) {
        struct rng_zipf z;
        rng_zipf_init(&z, n, s[c]);
        int64_t count[6] = {0};
        for (int64_t i = 0; i < draws; i++) {
            int64_t k = rng_zipf(&z, 3, 7, (uint64_t)i);
            assert_true(k >= 1 && k <= n);
            if (k <= 5) count[k]++;
        }
        double norm = 0;
        for (int64_t k = 1; k <= n; k++) norm += pow((double)k, -s[c]);
        for (int k = 1; k <= 5; k++) {
            double want = draws * pow(k, -s[c]) / norm;
            assert_true(fabs(count[k] - want) < 0.03 * want);
        }
        assert_true(rng_zipf(&z, 3, 7, 11) == rng_zipf(&z, 3, 7, 11));
    }
    struct rng_zipf one;
    rng_zipf_init(&one, 1, 1.1);
    assert_true(rng_zipf(&one, 1, 1, 1) == 1);
}

/* The spread is a permutation, and hot ids (the smallest) fall evenly into
 * the blocks of any shard count. */
static void spread_balances_hot_rows(void **state)
{
    (void)state;
    for (int64_t n = 1; n <= 300; n++) {
        int64_t a = spread_step(n);
        char seen[300] = {0};
        for (int64_t i = 0; i < n; i++) seen[spread_pos(i, n, a)]++;
        for (int64_t i = 0; i < n; i++) assert_int_equal(seen[i], 1);
    }
    const int64_t n = 1000000, a = spread_step(n);
    for (int P = 2; P <= 64; P *= 2) {
        int64_t per[64] = {0}, lo, hi, hot = 20 * P;
        for (int64_t i = 0; i < hot; i++) {
            int64_t pos = spread_pos(i, n, a);
            for (int p = 0; p < P; p++) {
                block_range(n, P, p, &lo, &hi);
                if (pos >= lo && pos < hi) per[p]++;
            }
        }
        for (int p = 0; p < P; p++) assert_true(per[p] >= 18 && per[p] <= 22); /* mean 20 */
    }
    int64_t big = (INT64_C(1) << 40) + 15; /* no overflow on the product */
    assert_true(spread_pos(big - 1, big, spread_step(big)) < big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_match_finite_differences),
        cmocka_unit_test(relu_keeps_nan),
        cmocka_unit_test(rng_is_a_function_of_its_counters),
        cmocka_unit_test(zipf_follows_the_law),
        cmocka_unit_test(spread_balances_hot_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
