/* Elementwise functions over arrays; see src/train/vmath.h. */
#include "vmath.h"

#include "cairn/clones.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- f32 -------------------------------------------------------------------------
 * erfc(x), x >= 0: below 1, 1 - x p0(2 x^2 - 1); on [1, 2), [2, 3) and
 * [3, 4), a polynomial of degree 9 in 2 (x - centre) (Chebyshev fits,
 * coefficients rounded to float); 0 from 4 on (erfc(4) < 2^-25).  Its
 * error is below 1e-7, about libm's erff's, and GELU's within 2.5e-7
 * times max(1, |u|) (test_vmath.c); Phi(u) = erfc(-u / sqrt 2) / 2 takes
 * the small side directly, where 1 + erf(x) would cancel, so the negative
 * tail keeps some relative accuracy (a few 1e-7 down to u = -4.5), and
 * below u = -5.66 GELU is 0 (exactly: -4e-8 or less). */
static const float P0[8] = {0.9654687643051147f,     -0.1405360847711563f,    0.019852498546242714f,
                            -0.0022854856215417385f, 0.00021751198801212013f, -1.75368240888929e-05f,
                            1.2316402262513293e-06f, -7.557493120202707e-08f};
static const float P1[10] = {0.0338948518037796f,     -0.05946514382958412f,    0.04459885507822037f,
                             -0.017344025894999504f,  0.002787465462461114f,    0.00046471384121105075f,
                             -0.00030208483804017305f, 3.672784077934921e-05f,  9.382540156366304e-06f,
                             -3.0086162041698117e-06f};
static const float P2[10] = {0.00040695187635719776f, -0.001089142169803381f,   0.0013614342315122485f,
                             -0.0010437603341415524f, 0.0005388449062593281f,   -0.00019117187184747308f,
                             4.387831359053962e-05f,  -4.227165391057497e-06f,  -1.1965308885919512e-06f,
                             4.792869958691881e-07f};
static const float P3[10] = {7.431065682794724e-07f,  -2.6997145141649526e-06f, 4.724086011265172e-06f,
                             -5.286914529278874e-06f, 4.235676897224039e-06f,   -2.5662766347522847e-06f,
                             1.2054017588525312e-06f, -4.542744989066705e-07f,  1.4467747178059653e-07f,
                             -3.035956197550149e-08f};

static inline float erfc_f32(float x)
{
    float z0 = (x * x - 0.5f) * 2.0f, r0 = P0[7];
#pragma GCC unroll 8
    for (int k = 6; k >= 0; k--) r0 = r0 * z0 + P0[k];
    /* selects of values loaded unconditionally: branch-free for every width */
    bool lo = x < 2.0f, mid = x < 3.0f;
    float c = lo ? 1.5f : mid ? 2.5f : 3.5f, z = (x - c) * 2.0f;
    float r = lo ? P1[9] : mid ? P2[9] : P3[9];
#pragma GCC unroll 10
    for (int k = 8; k >= 0; k--) {
        float a = P1[k], b = P2[k], d = P3[k];
        r = r * z + (lo ? a : mid ? b : d);
    }
    return x < 1.0f ? 1.0f - x * r0 : x < 4.0f ? r : 0.0f;
}

static inline float phi_cdf_f32(float u)
{
    float e = 0.5f * erfc_f32((u < 0 ? -u : u) * 0.70710678f);
    return u < 0 ? e : 1.0f - e;
}

/* exp(y) for y <= 0: y = k ln 2 + r, |r| <= ln 2 / 2 (k rounded by the
 * 1.5 2^23 shift, ln 2 in two parts), e^r by its Taylor polynomial of
 * degree 7 (relative error below 1e-8), 2^k from the exponent bits; below
 * -87 (near where 2^k turns subnormal) it is 0, which a softmax or a
 * density has no use for; NaN stays NaN (and never reaches the integer
 * conversion: yc is clamped whatever y is). */
static inline float exp_neg_f32(float y)
{
    float yc = y >= -87.0f ? y : -87.0f;
    float k = (yc * 1.44269504f + 12582912.0f) - 12582912.0f;
    float r = (yc - k * 0.693359375f) - k * -2.12194440e-4f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.6666667e-1f + r * (4.1666668e-2f +
              r * (8.3333338e-3f + r * (1.3888889e-3f + r * 1.9841270e-4f))))));
    uint32_t bits = (uint32_t)((int32_t)k + 127) << 23;
    float s;
    memcpy(&s, &bits, sizeof s);
    return y != y ? y : y < -87.0f ? 0.0f : p * s;
}

CAIRN_CLONES void vm_gelu_f32(int64_t n, const float *u, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = u[i] * phi_cdf_f32(u[i]);
}

CAIRN_CLONES void vm_dgelu_f32(int64_t n, const float *u, const float *gl, float *dy)
{
    (void)gl;
    for (int64_t i = 0; i < n; i++) {
        float v = u[i];
        dy[i] *= phi_cdf_f32(v) + v * exp_neg_f32(-0.5f * v * v) * 0.39894228f;
    }
}

CAIRN_CLONES void vm_exp_shift_f32(int64_t n, float *v, float shift)
{
    for (int64_t i = 0; i < n; i++) v[i] = exp_neg_f32(v[i] - shift);
}

/* ---- f64: libm ------------------------------------------------------------------- */

void vm_gelu_f64(int64_t n, const double *u, double *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = 0.5 * u[i] * (1 + erf(u[i] * M_SQRT1_2));
}

/* Phi(u) = gl / u saves an erf, except near 0, where the quotient would
 * lose digits. */
void vm_dgelu_f64(int64_t n, const double *u, const double *gl, double *dy)
{
    for (int64_t i = 0; i < n; i++) {
        double v = u[i], phi = v > 0.25 || v < -0.25 ? gl[i] / v : 0.5 * (1 + erf(v * M_SQRT1_2));
        dy[i] *= phi + v * exp(-0.5 * v * v) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
    }
}

void vm_exp_shift_f64(int64_t n, double *v, double shift)
{
    for (int64_t i = 0; i < n; i++) v[i] = exp(v[i] - shift);
}
