/* Training arithmetic; see include/cairn/nn.h. */
#include "cairn/nn.h"

#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "cairn/clock.h"
#include "cairn/error.h"

#define REAL float
#define SUFFIX _f32
#define GEMM cblas_sgemm
#define TANH tanhf
#define EXP expf
#include "nn_impl.h"
#undef REAL
#undef SUFFIX
#undef GEMM
#undef TANH
#undef EXP

#define REAL double
#define SUFFIX _f64
#define GEMM cblas_dgemm
#define TANH tanh
#define EXP exp
#include "nn_impl.h"
#undef REAL
#undef SUFFIX
#undef GEMM
#undef TANH
#undef EXP

#define NAME_ITEM(e, name) name,
const char *const act_names[] = {CAIRN_ACTS(NAME_ITEM) NULL};
const char *const loss_names[] = {CAIRN_LOSSES(NAME_ITEM) NULL};

const char *act_name(enum act a) { return (unsigned)a < N_ACTS ? act_names[a] : "?"; }
const char *loss_name(enum loss l) { return (unsigned)l < N_LOSSES ? loss_names[l] : "?"; }

void nn_forward(enum dtype dt, int64_t n, int64_t in, int64_t out, const void *x, const void *W,
                const void *b, enum act a, void *y)
{
    if (dt == DT_F64)
        forward_f64(n, in, out, x, W, b, a, y);
    else
        forward_f32(n, in, out, x, W, b, a, y);
}

void nn_backward_params(enum dtype dt, int64_t n, int64_t in, int64_t out, const void *x,
                        const void *y, enum act a, void *dy, void *dW, void *db, bool accumulate)
{
    if (dt == DT_F64)
        backward_params_f64(n, in, out, x, y, a, dy, dW, db, accumulate);
    else
        backward_params_f32(n, in, out, x, y, a, dy, dW, db, accumulate);
}

void nn_backward_input(enum dtype dt, int64_t n, int64_t in, int64_t out, const void *W,
                       const void *dy, void *dx)
{
    if (dt == DT_F64)
        backward_input_f64(n, in, out, W, dy, dx);
    else
        backward_input_f32(n, in, out, W, dy, dx);
}

void nn_backward(enum dtype dt, int64_t n, int64_t in, int64_t out, const void *x, const void *W,
                 const void *y, enum act a, void *dy, void *dW, void *db, void *dx,
                 bool accumulate)
{
    nn_backward_params(dt, n, in, out, x, y, a, dy, dW, db, accumulate);
    if (dx) nn_backward_input(dt, n, in, out, W, dy, dx);
}

void nn_bias_act(enum dtype dt, int64_t n, int64_t out, const void *b, enum act a, void *y)
{
    if (dt == DT_F64)
        bias_act_f64(n, out, b, a, y);
    else
        bias_act_f32(n, out, b, a, y);
}

void nn_dact_bias(enum dtype dt, int64_t n, int64_t out, const void *y, enum act a, void *dy,
                  void *db, bool accumulate)
{
    if (dt == DT_F64)
        dact_bias_f64(n, out, y, a, dy, db, accumulate);
    else
        dact_bias_f32(n, out, y, a, dy, db, accumulate);
}

double nn_loss(enum dtype dt, enum loss l, int64_t n, int64_t k, const void *z,
               const int32_t *labels, const void *targets, int64_t batch, void *dz,
               int64_t *correct)
{
    if (dt == DT_F64) return loss_f64(l, n, k, z, labels, targets, batch, dz, correct);
    return loss_f32(l, n, k, z, labels, targets, batch, dz, correct);
}

double nn_macs(int n_layers, const int64_t *dims)
{
    double m = 0;
    for (int i = 0; i < n_layers; i++) m += (double)dims[i] * (double)dims[i + 1];
    return m;
}

int nn_sgemm_gflops(int n, int reps, double *gflops)
{
    size_t sz = (size_t)n * (size_t)n;
    float *a = malloc(sz * sizeof *a), *b = malloc(sz * sizeof *b), *c = calloc(sz, sizeof *c);
    if (!a || !b || !c) {
        free(a);
        free(b);
        free(c);
        return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    }
    for (size_t i = 0; i < sz; i++) {
        a[i] = (float)((i * 7) % 13) / 13.0f;
        b[i] = (float)((i * 5) % 11) / 11.0f;
    }
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = clock_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        double s = clock_now() - t0;
        double g = 2.0 * n * (double)n * n / s / 1e9;
        if (g > best) best = g;
    }
    free(a);
    free(b);
    free(c);
    *gflops = best;
    return 0;
}

static int by_score(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The Mann-Whitney statistic over the ranks, ties given their mean rank. */
double nn_auc(double *sl, int64_t n)
{
    double pos = 0, rank_sum = 0;
    for (int64_t i = 0; i < n; i++)
        if (isnan(sl[2 * i])) return NAN;
    qsort(sl, (size_t)n, 2 * sizeof *sl, by_score);
    for (int64_t i = 0; i < n;) {
        int64_t j = i, p = 0;
        while (j < n && sl[2 * j] == sl[2 * i]) p += sl[2 * j++ + 1] != 0;
        rank_sum += (double)p * (double)(i + 1 + j) / 2; /* ranks i+1 .. j: their mean */
        pos += (double)p;
        i = j;
    }
    double neg = (double)n - pos;
    return pos && neg ? (rank_sum - pos * (pos + 1) / 2) / (pos * neg) : NAN;
}
