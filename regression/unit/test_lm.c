/* The decoder block (lm.h): its gradients against finite differences
 * (f64), causality, and a sequence's results independent of its batch. */
#include "unit.h"

#include "cairn/lm.h"
#include "cairn/rng.h"

#include <math.h>

static const struct lm_shape S = {.ctx = 5, .d = 8, .heads = 2, .mlp = 12};

static double *rnd(int64_t n, uint64_t stream, double scale)
{
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = rng_normal(9, stream, (uint64_t)i) * scale;
    return v;
}

static int64_t numel(int k)
{
    int64_t r, c;
    lm_param_shape(&S, k, &r, &c);
    return r * c;
}

/* a block's parameters: norms near 1 and 0, weights small */
static void params(double **p, uint64_t stream)
{
    for (int k = 0; k < LM_N_PARAMS; k++) {
        p[k] = rnd(numel(k), stream + (uint64_t)k, 0.3);
        if (k == LM_LN1_G || k == LM_LN2_G)
            for (int64_t i = 0; i < numel(k); i++) p[k][i] += 1;
    }
}

/* sum(y w) for the block on x (n sequences) */
static double objective(int64_t n, const double *x, double **p, const double *w)
{
    int64_t R = n * S.ctx;
    double *y = malloc((size_t)(R * S.d) * sizeof *y), *tape = malloc((size_t)lm_tape_numel(&S, n) * sizeof *tape);
    lm_block_forward(DT_F64, &S, n, x, (const void *const *)p, y, tape);
    double f = 0;
    for (int64_t e = 0; e < R * S.d; e++) f += y[e] * w[e];
    free(y);
    free(tape);
    return f;
}

static void check(const char *what, double *v, const double *grad, int64_t count, int64_t n,
                  const double *x, double **p, const double *w)
{
    for (int64_t i = 0; i < count; i++) {
        double keep = v[i], e = 1e-6;
        v[i] = keep + e;
        double up = objective(n, x, p, w);
        v[i] = keep - e;
        double down = objective(n, x, p, w);
        v[i] = keep;
        double fd = (up - down) / (2 * e);
        if (fabs(fd - grad[i]) > 1e-6 * (1 + fabs(fd)))
            fail_msg("%s[%lld]: backward %.10g, finite difference %.10g", what, (long long)i, grad[i], fd);
    }
}

static void gradients_match_finite_differences(void **state)
{
    (void)state;
    int64_t n = 2, R = n * S.ctx;
    double *p[LM_N_PARAMS], *dp[LM_N_PARAMS], *x = rnd(R * S.d, 100, 1), *w = rnd(R * S.d, 101, 1);
    params(p, 200);
    for (int k = 0; k < LM_N_PARAMS; k++) dp[k] = calloc((size_t)numel(k), sizeof(double));
    double *y = malloc((size_t)(R * S.d) * sizeof *y), *dx = malloc((size_t)(R * S.d) * sizeof *dx);
    double *tape = malloc((size_t)lm_tape_numel(&S, n) * sizeof *tape);
    double *scratch = malloc((size_t)lm_scratch_numel(&S, n) * sizeof *scratch);
    lm_block_forward(DT_F64, &S, n, x, (const void *const *)p, y, tape);
    lm_block_backward(DT_F64, &S, n, (const void *const *)p, tape, w, (void *const *)dp, false, dx, scratch);
    check("x", x, dx, R * S.d, n, x, p, w);
    for (int k = 0; k < LM_N_PARAMS; k++) check(lm_param_name(k), p[k], dp[k], numel(k), n, x, p, w);
    /* accumulate adds; no dx gives the same parameter gradients */
    double *again[LM_N_PARAMS];
    for (int k = 0; k < LM_N_PARAMS; k++) {
        again[k] = malloc((size_t)numel(k) * sizeof(double));
        memcpy(again[k], dp[k], (size_t)numel(k) * sizeof(double));
    }
    lm_block_backward(DT_F64, &S, n, (const void *const *)p, tape, w, (void *const *)again, true, NULL, scratch);
    for (int k = 0; k < LM_N_PARAMS; k++)
        for (int64_t i = 0; i < numel(k); i++)
            if (fabs(again[k][i] - 2 * dp[k][i]) > 1e-12 * (1 + fabs(dp[k][i])))
                fail_msg("%s[%lld]: accumulated %.17g, want twice %.17g", lm_param_name(k), (long long)i,
                         again[k][i], dp[k][i]);
    for (int k = 0; k < LM_N_PARAMS; k++) free(p[k]), free(dp[k]), free(again[k]);
    free(x), free(w), free(y), free(dx), free(tape), free(scratch);
}

/* Changing position j's input changes no earlier position's output. */
static void attention_is_causal(void **state)
{
    (void)state;
    int64_t R = S.ctx;
    double *p[LM_N_PARAMS], *x0 = rnd(R * S.d, 300, 1), *x = malloc((size_t)(R * S.d) * sizeof *x);
    double *y0 = malloc((size_t)(R * S.d) * sizeof *y0), *y1 = malloc((size_t)(R * S.d) * sizeof *y1);
    double *tape = malloc((size_t)lm_tape_numel(&S, 1) * sizeof *tape);
    params(p, 400);
    lm_block_forward(DT_F64, &S, 1, x0, (const void *const *)p, y0, tape);
    for (int64_t j = 0; j < S.ctx; j++) {
        memcpy(x, x0, (size_t)(R * S.d) * sizeof *x);
        for (int64_t c = 0; c < S.d; c++) x[j * S.d + c] += 0.5;
        lm_block_forward(DT_F64, &S, 1, x, (const void *const *)p, y1, tape);
        assert_memory_equal(y0, y1, (size_t)(j * S.d) * sizeof *y0); /* positions before j: the same bits */
        int changed = 0;
        for (int64_t c = 0; c < S.d; c++) changed |= y0[j * S.d + c] != y1[j * S.d + c];
        assert_true(changed); /* (else this could not fail) */
    }
    for (int k = 0; k < LM_N_PARAMS; k++) free(p[k]);
    free(x0), free(x), free(y0), free(y1), free(tape);
}

/* A sequence's outputs and input gradient alone and in a batch of three
 * agree to rounding (f32, f64): nothing leaks between sequences.  Not
 * bit for bit: BLAS may sum a product of other dimensions in another
 * order, which is why a step's micro-batches are the same in every layout. */
static double worst(const double *a, const double *b, int64_t n)
{
    double w = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        w = fabs(a[i] - b[i]) > w ? fabs(a[i] - b[i]) : w;
        m = fabs(a[i]) > m ? fabs(a[i]) : m;
    }
    return w / m;
}

static void sequences_are_independent(void **state)
{
    (void)state;
    for (int f = 0; f < 2; f++) {
        enum dtype dt = f ? DT_F64 : DT_F32;
        size_t es = f ? 8 : 4;
        int64_t n = 3, row = S.ctx * S.d;
        double *pd[LM_N_PARAMS], *xd = rnd(n * row, 500, 1), *wd = rnd(n * row, 501, 1);
        params(pd, 600);
        void *p[LM_N_PARAMS], *dp[LM_N_PARAMS], *x = malloc((size_t)(n * row) * es),
             *w = malloc((size_t)(n * row) * es);
        for (int64_t e = 0; e < n * row; e++) {
            if (f) ((double *)x)[e] = xd[e], ((double *)w)[e] = wd[e];
            else ((float *)x)[e] = (float)xd[e], ((float *)w)[e] = (float)wd[e];
        }
        for (int k = 0; k < LM_N_PARAMS; k++) {
            p[k] = malloc((size_t)numel(k) * es);
            dp[k] = malloc((size_t)numel(k) * es);
            for (int64_t i = 0; i < numel(k); i++) {
                if (f) ((double *)p[k])[i] = pd[k][i];
                else ((float *)p[k])[i] = (float)pd[k][i];
            }
        }
        void *y3 = malloc((size_t)(n * row) * es), *y1 = malloc((size_t)row * es);
        void *dx3 = malloc((size_t)(n * row) * es), *dx1 = malloc((size_t)row * es);
        void *t3 = malloc((size_t)lm_tape_numel(&S, n) * es), *t1 = malloc((size_t)lm_tape_numel(&S, 1) * es);
        void *s3 = malloc((size_t)lm_scratch_numel(&S, n) * es);
        lm_block_forward(dt, &S, n, x, (const void *const *)p, y3, t3);
        lm_block_backward(dt, &S, n, (const void *const *)p, t3, w, dp, false, dx3, s3);
        /* the middle sequence alone */
        lm_block_forward(dt, &S, 1, (char *)x + (size_t)row * es, (const void *const *)p, y1, t1);
        lm_block_backward(dt, &S, 1, (const void *const *)p, t1, (char *)w + (size_t)row * es, dp, false, dx1, s3);
        double a[4][40]; /* y alone, y batched, dx alone, dx batched */
        assert_true(row <= 40);
        for (int64_t e = 0; e < row; e++) {
            a[0][e] = f ? ((double *)y1)[e] : ((float *)y1)[e];
            a[1][e] = f ? ((double *)y3)[row + e] : ((float *)y3)[row + e];
            a[2][e] = f ? ((double *)dx1)[e] : ((float *)dx1)[e];
            a[3][e] = f ? ((double *)dx3)[row + e] : ((float *)dx3)[row + e];
        }
        double tol = f ? 1e-13 : 1e-5;
        assert_true(worst(a[0], a[1], row) <= tol);
        assert_true(worst(a[2], a[3], row) <= tol);
        for (int k = 0; k < LM_N_PARAMS; k++) free(p[k]), free(pd[k]), free(dp[k]);
        free(xd), free(wd), free(x), free(w), free(y3), free(y1), free(dx3), free(dx1), free(t3), free(t1), free(s3);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_match_finite_differences),
        cmocka_unit_test(attention_is_causal),
        cmocka_unit_test(sequences_are_independent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
