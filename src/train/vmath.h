/* Private to the training modules: the elementwise functions of the
 * language model's kernels (lm.c) over arrays, in a form the compiler
 * vectorizes.  f32: the exact GELU's normal CDF by piecewise polynomials
 * (GELU within 2.5e-7 times max(1, |u|)) and exp by range reduction
 * (within 3e-7 relative), branch-free and from IEEE additions, multiplies
 * and selects only, so every vector width and the scalar loop give the
 * same bits (clones.h).  f64: libm's, element by element. */
#ifndef CAIRN_VMATH_H
#define CAIRN_VMATH_H

#include <stdint.h>

/* y = GELU(u) = u Phi(u) (y may be u). */
void vm_gelu_f32(int64_t n, const float *u, float *y);
void vm_gelu_f64(int64_t n, const double *u, double *y);
/* dy *= GELU'(u) = Phi(u) + u phi(u); gl = GELU(u) as the forward made it
 * (f64 takes Phi = gl / u from it, away from 0, which saves an erf). */
void vm_dgelu_f32(int64_t n, const float *u, const float *gl, float *dy);
void vm_dgelu_f64(int64_t n, const double *u, const double *gl, double *dy);
/* v = exp(v - shift), v <= shift (a softmax's row less its largest). */
void vm_exp_shift_f32(int64_t n, float *v, float shift);
void vm_exp_shift_f64(int64_t n, double *v, double shift);

#endif
