/* The decoder block (lm.h): its forward against a plain transcription of
 * the definition, its gradients against finite differences (f64), f32
 * against f64, causality, batching, and the shapes it refuses. */
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

/* The block as defined (lm.h), one sequence, in plain loops: no BLAS, no
 * tape, nothing shared with lm.c. */
static void layer_norm(const double *x, const double *g, const double *b, double *y)
{
    double mean = 0, var = 0;
    for (int64_t j = 0; j < S.d; j++) mean += x[j] / (double)S.d;
    for (int64_t j = 0; j < S.d; j++) var += (x[j] - mean) * (x[j] - mean) / (double)S.d;
    for (int64_t j = 0; j < S.d; j++) y[j] = (x[j] - mean) / sqrt(var + 1e-5) * g[j] + b[j];
}

static void reference(const double *x, double **p, double *y)
{
    enum { C = 5, D = 8, M = 12 };
    int64_t dh = S.d / S.heads;
    assert_true(S.ctx == C && S.d == D && S.mlp == M); /* the arrays' sizes */
    double xn[C][D], qkv[C][3 * D], a[C][D], h[C][D];
    for (int64_t i = 0; i < C; i++) {
        layer_norm(x + i * D, p[LM_LN1_G], p[LM_LN1_B], xn[i]);
        for (int64_t j = 0; j < 3 * D; j++) {
            qkv[i][j] = p[LM_QKV_B][j];
            for (int64_t k = 0; k < D; k++) qkv[i][j] += xn[i][k] * p[LM_QKV_W][k * 3 * D + j];
        }
    }
    for (int64_t hd = 0; hd < S.heads; hd++)
        for (int64_t i = 0; i < C; i++) {
            double sc[C], top = -INFINITY, sum = 0;
            for (int64_t j = 0; j <= i; j++) {
                sc[j] = 0;
                for (int64_t e = 0; e < dh; e++) sc[j] += qkv[i][hd * dh + e] * qkv[j][D + hd * dh + e];
                sc[j] /= sqrt((double)dh);
                top = fmax(top, sc[j]);
            }
            for (int64_t j = 0; j <= i; j++) sum += exp(sc[j] - top);
            for (int64_t e = 0; e < dh; e++) {
                a[i][hd * dh + e] = 0;
                for (int64_t j = 0; j <= i; j++) a[i][hd * dh + e] += exp(sc[j] - top) / sum * qkv[j][2 * D + hd * dh + e];
            }
        }
    for (int64_t i = 0; i < C; i++) {
        double u[M];
        for (int64_t j = 0; j < D; j++) {
            h[i][j] = x[i * D + j] + p[LM_PROJ_B][j];
            for (int64_t k = 0; k < D; k++) h[i][j] += a[i][k] * p[LM_PROJ_W][k * D + j];
        }
        layer_norm(h[i], p[LM_LN2_G], p[LM_LN2_B], xn[i]);
        for (int64_t j = 0; j < M; j++) {
            u[j] = p[LM_FC_B][j];
            for (int64_t k = 0; k < D; k++) u[j] += xn[i][k] * p[LM_FC_W][k * M + j];
            u[j] = 0.5 * u[j] * (1 + erf(u[j] / sqrt(2.0)));
        }
        for (int64_t j = 0; j < D; j++) {
            y[i * D + j] = h[i][j] + p[LM_OUT_B][j];
            for (int64_t k = 0; k < M; k++) y[i * D + j] += u[k] * p[LM_OUT_W][k * D + j];
        }
    }
}

/* the largest difference of n values, over the largest magnitude of a */
static double worst(const double *a, const double *b, int64_t n)
{
    double w = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        w = fabs(a[i] - b[i]) > w ? fabs(a[i] - b[i]) : w;
        m = fabs(a[i]) > m ? fabs(a[i]) : m;
    }
    return w / m;
}

static void forward_is_the_definition(void **state)
{
    (void)state;
    int64_t n = 2, R = n * S.ctx;
    double *p[LM_N_PARAMS], *x = rnd(R * S.d, 700, 1), *y = malloc((size_t)(R * S.d) * sizeof *y), want[40];
    double *tape = malloc((size_t)lm_tape_numel(&S, n) * sizeof *tape);
    params(p, 800);
    lm_block_forward(DT_F64, &S, n, x, (const void *const *)p, y, tape, NULL, NULL);
    for (int64_t i = 0; i < n; i++) {
        reference(x + i * S.ctx * S.d, p, want);
        double w = worst(want, y + i * S.ctx * S.d, S.ctx * S.d);
        if (w > 1e-12) fail_msg("sequence %lld: the block differs from the definition by %.3g", (long long)i, w);
    }
    /* in place (y = x) gives the same bits */
    lm_block_forward(DT_F64, &S, n, x, (const void *const *)p, x, tape, NULL, NULL);
    assert_memory_equal(x, y, (size_t)(R * S.d) * sizeof *x);
    for (int k = 0; k < LM_N_PARAMS; k++) free(p[k]);
    free(x), free(y), free(tape);
}

/* sum(y w) for the block of shape s on x (n sequences), dropout keyed by k */
static double objective(const struct lm_shape *s, const struct lm_drop *k, int64_t n, const double *x, double **p,
                        const double *w)
{
    int64_t R = n * s->ctx;
    double *y = malloc((size_t)(R * s->d) * sizeof *y), *tape = malloc((size_t)lm_tape_numel(s, n) * sizeof *tape);
    lm_block_forward(DT_F64, s, n, x, (const void *const *)p, y, tape, k, NULL);
    double f = 0;
    for (int64_t e = 0; e < R * s->d; e++) f += y[e] * w[e];
    free(y);
    free(tape);
    return f;
}

static void check(const struct lm_shape *s, const struct lm_drop *k, const char *what, double *v,
                  const double *grad, int64_t count, int64_t n, const double *x, double **p, const double *w)
{
    for (int64_t i = 0; i < count; i++) {
        double keep = v[i], e = 1e-6;
        v[i] = keep + e;
        double up = objective(s, k, n, x, p, w);
        v[i] = keep - e;
        double down = objective(s, k, n, x, p, w);
        v[i] = keep;
        double fd = (up - down) / (2 * e);
        if (fabs(fd - grad[i]) > 1e-6 * (1 + fabs(fd)))
            fail_msg("%s%s[%lld]: backward %.10g, finite difference %.10g", k ? "with dropout, " : "", what,
                     (long long)i, grad[i], fd);
    }
}

/* The block's gradients, without dropout or with a fixed key (which makes
 * the block a fixed function of x and p), against finite differences. */
static void gradients_of(const struct lm_shape *s, const struct lm_drop *k)
{
    int64_t n = 2, R = n * s->ctx;
    double *p[LM_N_PARAMS], *dp[LM_N_PARAMS], *x = rnd(R * s->d, 100, 1), *w = rnd(R * s->d, 101, 1);
    params(p, 200);
    for (int q = 0; q < LM_N_PARAMS; q++) dp[q] = calloc((size_t)numel(q), sizeof(double));
    double *y = malloc((size_t)(R * s->d) * sizeof *y), *dx = malloc((size_t)(R * s->d) * sizeof *dx);
    double *tape = malloc((size_t)lm_tape_numel(s, n) * sizeof *tape);
    double *scratch = malloc((size_t)lm_scratch_numel(s, n) * sizeof *scratch);
    lm_block_forward(DT_F64, s, n, x, (const void *const *)p, y, tape, k, NULL);
    lm_block_backward(DT_F64, s, n, (const void *const *)p, tape, w, (void *const *)dp, false, dx, scratch, k, NULL);
    check(s, k, "x", x, dx, R * s->d, n, x, p, w);
    for (int q = 0; q < LM_N_PARAMS; q++) check(s, k, lm_param_name(q), p[q], dp[q], numel(q), n, x, p, w);
    /* accumulate adds; no dx gives the same parameter gradients */
    double *again[LM_N_PARAMS];
    for (int q = 0; q < LM_N_PARAMS; q++) {
        again[q] = malloc((size_t)numel(q) * sizeof(double));
        memcpy(again[q], dp[q], (size_t)numel(q) * sizeof(double));
    }
    lm_block_backward(DT_F64, s, n, (const void *const *)p, tape, w, (void *const *)again, true, NULL, scratch, k, NULL);
    for (int q = 0; q < LM_N_PARAMS; q++)
        for (int64_t i = 0; i < numel(q); i++)
            if (fabs(again[q][i] - 2 * dp[q][i]) > 1e-12 * (1 + fabs(dp[q][i])))
                fail_msg("%s[%lld]: accumulated %.17g, want twice %.17g", lm_param_name(q), (long long)i,
                         again[q][i], dp[q][i]);
    /* no sequences: every gradient is zero, not left as it was */
    lm_block_backward(DT_F64, s, 0, (const void *const *)p, tape, w, (void *const *)again, false, NULL, scratch, k, NULL);
    for (int q = 0; q < LM_N_PARAMS; q++)
        for (int64_t i = 0; i < numel(q); i++)
            if (again[q][i] != 0) fail_msg("%s[%lld]: %g after no sequences", lm_param_name(q), (long long)i, again[q][i]);
    for (int q = 0; q < LM_N_PARAMS; q++) free(p[q]), free(dp[q]), free(again[q]);
    free(x), free(w), free(y), free(dx), free(tape), free(scratch);
}

static void gradients_match_finite_differences(void **state)
{
    (void)state;
    gradients_of(&S, NULL);
}

/* With dropout on: the gradients through the masks; a key NULL (as
 * evaluation passes) is no dropout, bit for bit; the same key gives the
 * same output; about the probability's share of a site's elements are
 * dropped; and another key or layer drops others. */
static void dropout_gradients_and_masks(void **state)
{
    (void)state;
    struct lm_shape s = S;
    s.drop = 0.3;
    struct lm_drop k = {.seed = 5, .pass = 2, .sample0 = 7, .layer = 1};
    gradients_of(&s, &k);
    int64_t n = 2, R = n * s.ctx;
    double *p[LM_N_PARAMS], *x = rnd(R * s.d, 900, 1), *y[4], *tape = malloc((size_t)lm_tape_numel(&s, n) * sizeof *tape);
    params(p, 901);
    struct lm_drop other = k;
    other.sample0 = 9;
    const struct lm_drop *keys[4] = {NULL, &k, &k, &other};
    for (int i = 0; i < 4; i++) {
        y[i] = malloc((size_t)(R * s.d) * sizeof(double));
        lm_block_forward(DT_F64, i ? &s : &S, n, x, (const void *const *)p, y[i], tape, keys[i], NULL);
    }
    double *y0 = malloc((size_t)(R * s.d) * sizeof *y0);
    lm_block_forward(DT_F64, &s, n, x, (const void *const *)p, y0, tape, NULL, NULL);
    assert_memory_equal(y0, y[0], (size_t)(R * s.d) * sizeof *y0); /* no key: no dropout */
    assert_memory_equal(y[1], y[2], (size_t)(R * s.d) * sizeof *y0); /* one key: one mask */
    assert_true(memcmp(y[1], y[0], (size_t)(R * s.d) * sizeof *y0) != 0);
    assert_true(memcmp(y[1], y[3], (size_t)(R * s.d) * sizeof *y0) != 0);
    int64_t dropped = 0, total = 100000;
    for (int64_t e = 0; e < total; e++) dropped += lm_drop_uniform(&k, 0, LM_DROP_MLP, e) < s.drop;
    if (fabs((double)dropped / (double)total - s.drop) > 0.01)
        fail_msg("%lld of %lld dropped at probability %g", (long long)dropped, (long long)total, s.drop);
    for (int i = 0; i < 4; i++) free(y[i]);
    for (int q = 0; q < LM_N_PARAMS; q++) free(p[q]);
    free(x), free(y0), free(tape);
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
    lm_block_forward(DT_F64, &S, 1, x0, (const void *const *)p, y0, tape, NULL, NULL);
    for (int64_t j = 0; j < S.ctx; j++) {
        memcpy(x, x0, (size_t)(R * S.d) * sizeof *x);
        for (int64_t c = 0; c < S.d; c++) x[j * S.d + c] += 0.5;
        lm_block_forward(DT_F64, &S, 1, x, (const void *const *)p, y1, tape, NULL, NULL);
        assert_memory_equal(y0, y1, (size_t)(j * S.d) * sizeof *y0); /* positions before j: the same bits */
        int changed = 0;
        for (int64_t c = 0; c < S.d; c++) changed |= y0[j * S.d + c] != y1[j * S.d + c];
        assert_true(changed); /* (else this could not fail) */
    }
    for (int k = 0; k < LM_N_PARAMS; k++) free(p[k]);
    free(x0), free(x), free(y0), free(y1), free(tape);
}

/* The block in dt on n sequences (x, dy = w, parameters pd, all f64):
 * y and dx (n ctx d each) and the parameters' gradients dp, as f64. */
static void run(enum dtype dt, int64_t n, const double *xd, const double *wd, double **pd, double *y,
                double *dx, double **dp)
{
    size_t es = dt == DT_F64 ? 8 : 4;
    int64_t R = n * S.ctx * S.d;
    void *x = malloc((size_t)R * es), *w = malloc((size_t)R * es), *yv = malloc((size_t)R * es),
         *dxv = malloc((size_t)R * es), *p[LM_N_PARAMS], *g[LM_N_PARAMS];
    void *tape = malloc((size_t)lm_tape_numel(&S, n) * es), *scratch = malloc((size_t)lm_scratch_numel(&S, n) * es);
#define PUT(v, i, val) (es == 8 ? (void)(((double *)(v))[i] = (val)) : (void)(((float *)(v))[i] = (float)(val)))
#define GET(v, i) (es == 8 ? ((double *)(v))[i] : (double)((float *)(v))[i])
    for (int64_t e = 0; e < R; e++) PUT(x, e, xd[e]), PUT(w, e, wd[e]);
    for (int k = 0; k < LM_N_PARAMS; k++) {
        p[k] = malloc((size_t)numel(k) * es);
        g[k] = malloc((size_t)numel(k) * es);
        for (int64_t i = 0; i < numel(k); i++) PUT(p[k], i, pd[k][i]);
    }
    lm_block_forward(dt, &S, n, x, (const void *const *)p, yv, tape, NULL, NULL);
    lm_block_backward(dt, &S, n, (const void *const *)p, tape, w, g, false, dxv, scratch, NULL, NULL);
    for (int64_t e = 0; e < R; e++) y[e] = GET(yv, e), dx[e] = GET(dxv, e);
    for (int k = 0; k < LM_N_PARAMS; k++) {
        for (int64_t i = 0; i < numel(k); i++) dp[k][i] = GET(g[k], i);
        free(p[k]), free(g[k]);
    }
#undef PUT
#undef GET
    free(x), free(w), free(yv), free(dxv), free(tape), free(scratch);
}

/* f32 follows f64 (an f32-only mistake, as a norm without its square
 * root, shows), and a sequence's outputs and input gradient alone and in
 * a batch of three agree to rounding in both: nothing leaks between
 * sequences.  Not bit for bit: BLAS may sum another shape in another
 * order, which is why a step's micro-batches are the same in every layout. */
static void f32_follows_f64_and_sequences_are_independent(void **state)
{
    (void)state;
    int64_t n = 3, row = S.ctx * S.d;
    double *pd[LM_N_PARAMS], *xd = rnd(n * row, 500, 1), *wd = rnd(n * row, 501, 1);
    double *y[2], *dx[2], *dp[2][LM_N_PARAMS], *y1 = malloc((size_t)row * sizeof *y1), *dx1 = malloc((size_t)row * sizeof *dx1);
    params(pd, 600);
    for (int f = 0; f < 2; f++) {
        y[f] = malloc((size_t)(n * row) * sizeof(double));
        dx[f] = malloc((size_t)(n * row) * sizeof(double));
        for (int k = 0; k < LM_N_PARAMS; k++) dp[f][k] = malloc((size_t)numel(k) * sizeof(double));
        run(f ? DT_F64 : DT_F32, n, xd, wd, pd, y[f], dx[f], dp[f]);
    }
    assert_true(worst(y[1], y[0], n * row) <= 1e-5);
    assert_true(worst(dx[1], dx[0], n * row) <= 1e-4);
    for (int k = 0; k < LM_N_PARAMS; k++)
        if (worst(dp[1][k], dp[0][k], numel(k)) > 1e-4)
            fail_msg("%s: f32 differs from f64 by %.3g", lm_param_name(k), worst(dp[1][k], dp[0][k], numel(k)));
    for (int f = 0; f < 2; f++) { /* the middle sequence alone */
        double *g[LM_N_PARAMS];
        for (int k = 0; k < LM_N_PARAMS; k++) g[k] = malloc((size_t)numel(k) * sizeof(double));
        run(f ? DT_F64 : DT_F32, 1, xd + row, wd + row, pd, y1, dx1, g);
        double tol = f ? 1e-13 : 1e-5;
        assert_true(worst(y1, y[f] + row, row) <= tol);
        assert_true(worst(dx1, dx[f] + row, row) <= tol);
        for (int k = 0; k < LM_N_PARAMS; k++) free(g[k]);
    }
    for (int f = 0; f < 2; f++) {
        for (int k = 0; k < LM_N_PARAMS; k++) free(dp[f][k]);
        free(y[f]), free(dx[f]);
    }
    for (int k = 0; k < LM_N_PARAMS; k++) free(pd[k]);
    free(xd), free(wd), free(y1), free(dx1);
}

static void shapes_checked(void **state)
{
    (void)state;
    assert_true(lm_shape_ok(&S));
    const struct lm_shape bad[] = {{0, 8, 2, 12, 0, 0, 0, 0}, {5, 0, 1, 12, 0, 0, 0, 0}, {5, 8, 0, 12, 0, 0, 0, 0}, {5, 8, 3, 12, 0, 0, 0, 0}, {5, 8, 2, 0, 0, 0, 0, 0},
                                   {1 << 16, 8, 2, 12, 0, 0, 0, 0}, {5, 1 << 15, 1, 12, 0, 0, 0, 0}, {5, 1 << 16, 1, 1 << 16, 0, 0, 0, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (lm_shape_ok(&bad[i])) fail_msg("shape %zu taken", i);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forward_is_the_definition),
        cmocka_unit_test(gradients_match_finite_differences),
        cmocka_unit_test(dropout_gradients_and_masks),
        cmocka_unit_test(f32_follows_f64_and_sequences_are_independent),
        cmocka_unit_test(attention_is_causal),
        cmocka_unit_test(shapes_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
