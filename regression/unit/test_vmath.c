/* vmath.h's f32 functions against libm in double over a dense grid (the
 * GELU, its derivative, exp), their special values, and the same bits for
 * an element alone (the scalar loop) and inside an array (the vector
 * body), which the layout-independent results rest on. */
#include "unit.h"

#include "train/vmath.h"

#include <math.h>

enum { N = 1 << 21 };

static double gelu(double u) { return 0.5 * u * erfc(-u * M_SQRT1_2); }
static double dgelu(double u) { return 0.5 * erfc(-u * M_SQRT1_2) + u * exp(-0.5 * u * u) / sqrt(2 * M_PI); }

static float *grid(float lo, float hi)
{
    float *u = malloc(N * sizeof *u);
    for (int i = 0; i < N; i++) u[i] = lo + (hi - lo) * (float)i / (float)(N - 1);
    return u;
}

/* within 2.5e-7 of the exact value times max(1, |u|): about libm's erff's
 * own error, carried by u */
static void gelu_and_derivative_follow_libm(void **state)
{
    (void)state;
    float *u = grid(-12, 12), *y = malloc(N * sizeof *y), *d = malloc(N * sizeof *d);
    vm_gelu_f32(N, u, y);
    for (int i = 0; i < N; i++) d[i] = 1;
    vm_dgelu_f32(N, u, y, d);
    double wy = 0, wd = 0;
    for (int i = 0; i < N; i++) {
        double s = fabs(u[i]) > 1 ? fabs(u[i]) : 1;
        wy = fmax(wy, fabs(y[i] - gelu(u[i])) / s);
        wd = fmax(wd, fabs(d[i] - dgelu(u[i])) / s);
    }
    if (wy > 2.5e-7 || wd > 2.5e-7) fail_msg("GELU off by %.3g, its derivative by %.3g", wy, wd);
    /* the tail keeps its relative accuracy (no 1 + erf cancelling) */
    float t = -5, yt;
    vm_gelu_f32(1, &t, &yt);
    assert_true(fabs(yt / gelu(-5) - 1) < 1e-4);
    free(u), free(y), free(d);
}

static void exp_follows_libm(void **state)
{
    (void)state;
    float *v = grid(-90, 0), *e = malloc(N * sizeof *e);
    memcpy(e, v, N * sizeof *e);
    vm_exp_shift_f32(N, e, 0);
    double w = 0;
    for (int i = 0; i < N; i++) {
        if (v[i] < -87) {
            if (e[i] != 0) fail_msg("exp(%g) = %g, not 0", v[i], e[i]);
            continue;
        }
        w = fmax(w, fabs(e[i] / exp((double)v[i]) - 1));
    }
    if (w > 3e-7) fail_msg("exp off by %.3g relative", w);
    float s[3] = {2.5f, 1.0f, -1.0f};
    vm_exp_shift_f32(3, s, 2.5f);
    assert_true(s[0] == 1.0f && fabs(s[1] - exp(-1.5)) < 1e-7 && fabs(s[2] - exp(-3.5)) < 1e-8);
    free(v), free(e);
}

static void special_values(void **state)
{
    (void)state;
    float u[5] = {0.0f, -0.0f, INFINITY, NAN, 1e30f}, y[5], d[5] = {1, 1, 1, 1, 1};
    vm_gelu_f32(5, u, y);
    vm_dgelu_f32(5, u, y, d);
    assert_true(y[0] == 0 && y[1] == 0 && isinf(y[2]) && y[2] > 0 && isnan(y[3]) && y[4] == 1e30f);
    assert_true(d[0] == 0.5f && d[1] == 0.5f && isnan(d[3]) && d[4] == 1.0f);
    float e[3] = {NAN, -INFINITY, -1e30f};
    vm_exp_shift_f32(3, e, 0);
    assert_true(isnan(e[0]) && e[1] == 0 && e[2] == 0);
}

/* an element's value does not depend on where it sits in the array */
static void alone_or_in_an_array(void **state)
{
    (void)state;
    enum { M = 1003 };
    float u[M], y[M], d[M], e[M];
    for (int i = 0; i < M; i++) u[i] = -9 + 18 * (float)((i * 7919) % M) / M, d[i] = 1, e[i] = -fabsf(u[i]) * 9;
    vm_gelu_f32(M, u, y);
    vm_dgelu_f32(M, u, y, d);
    float e0[M];
    memcpy(e0, e, sizeof e);
    vm_exp_shift_f32(M, e, 0);
    for (int i = 0; i < M; i++) {
        float y1, d1 = 1, e1 = e0[i];
        vm_gelu_f32(1, &u[i], &y1);
        vm_dgelu_f32(1, &u[i], &y1, &d1);
        vm_exp_shift_f32(1, &e1, 0);
        assert_memory_equal(&y1, &y[i], sizeof y1);
        assert_memory_equal(&d1, &d[i], sizeof d1);
        assert_memory_equal(&e1, &e[i], sizeof e1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gelu_and_derivative_follow_libm),
        cmocka_unit_test(exp_follows_libm),
        cmocka_unit_test(special_values),
        cmocka_unit_test(alone_or_in_an_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
