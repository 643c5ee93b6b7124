/* Kernels of nn.c for one element type: included with REAL and SUFFIX set. */

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define F(name) CAT(name, SUFFIX)
#ifndef LOSS_KEEP
#define LOSS_KEEP 64 /* classes whose exp the softmax keeps for its gradient */
#endif

static void F(gemm)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, REAL alpha, const REAL *a,
                    int64_t lda, const REAL *b, int64_t ldb, REAL beta, REAL *c, int64_t ldc)
{
    if (m == 0 || n == 0) return;
    GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m,
         (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

static void F(activate)(enum act a, REAL *y, int64_t n)
{
    switch (a) {
    case ACT_IDENTITY: break;
    case ACT_RELU: /* NaN stays NaN, so on_nan sees it */
        for (int64_t i = 0; i < n; i++) y[i] = !(y[i] <= 0) ? y[i] : 0;
        break;
    case ACT_TANH:
        for (int64_t i = 0; i < n; i++) y[i] = TANH(y[i]);
        break;
    case ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++) y[i] = (REAL)1 / ((REAL)1 + EXP(-y[i]));
        break;
    }
}

static void F(forward)(int64_t n, int64_t in, int64_t out, const REAL *x, const REAL *W,
                       const REAL *b, enum act a, REAL *y)
{
    for (int64_t i = 0; i < n; i++) memcpy(y + i * out, b, (size_t)out * sizeof(REAL));
    if (in > 0) F(gemm)(false, false, n, out, in, 1, x, in, W, out, 1, y, out);
    F(activate)(a, y, n * out);
}

/* dy *= act'(pre-activation), from the activation's output y. */
static void F(dact)(enum act a, const REAL *y, REAL *dy, int64_t n)
{
    switch (a) {
    case ACT_IDENTITY: break;
    case ACT_RELU:
        for (int64_t i = 0; i < n; i++) dy[i] = y[i] > 0 ? dy[i] : 0;
        break;
    case ACT_TANH:
        for (int64_t i = 0; i < n; i++) dy[i] *= (REAL)1 - y[i] * y[i];
        break;
    case ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++) dy[i] *= y[i] * ((REAL)1 - y[i]);
        break;
    }
}

static void F(backward_params)(int64_t n, int64_t in, int64_t out, const REAL *x, const REAL *y,
                               enum act a, REAL *dy, REAL *dW, REAL *db, bool accumulate)
{
    F(dact)(a, y, dy, n * out);
    if (!accumulate && out > 0) { /* none: dW and db may be NULL */
        memset(db, 0, (size_t)out * sizeof(REAL));
        if (n == 0) memset(dW, 0, (size_t)(in * out) * sizeof(REAL));
    }
    if (n > 0) F(gemm)(true, false, in, out, n, 1, x, in, dy, out, accumulate ? 1 : 0, dW, out);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < out; j++) db[j] += dy[i * out + j];
}

static void F(bias_act)(int64_t n, int64_t out, const REAL *b, enum act a, REAL *y)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < out; j++) y[i * out + j] += b[j];
    F(activate)(a, y, n * out);
}

static void F(dact_bias)(int64_t n, int64_t out, const REAL *y, enum act a, REAL *dy, REAL *db,
                         bool accumulate)
{
    F(dact)(a, y, dy, n * out);
    if (!accumulate && out > 0) memset(db, 0, (size_t)out * sizeof(REAL)); /* none: db may be NULL */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < out; j++) db[j] += dy[i * out + j];
}

static void F(backward_input)(int64_t n, int64_t in, int64_t out, const REAL *W, const REAL *dy,
                              REAL *dx)
{
    if (out > 0)
        F(gemm)(false, true, n, in, out, 1, dy, out, W, out, 0, dx, in);
    else
        memset(dx, 0, (size_t)(n * in) * sizeof(REAL));
}

static int64_t F(argmax)(const REAL *v, int64_t k)
{
    int64_t best = 0;
    for (int64_t j = 1; j < k; j++)
        if (v[j] > v[best]) best = j;
    return best;
}

static double F(loss)(enum loss l, int64_t n, int64_t k, const REAL *z, const int32_t *labels,
                      const REAL *t, int64_t batch, REAL *dz, int64_t *correct)
{
    double total = 0;
    *correct = 0;
    for (int64_t i = 0; i < n; i++) {
        const REAL *zi = z + i * k;
        int64_t want = labels ? labels[i] : F(argmax)(t + i * k, k);
        *correct += F(argmax)(zi, k) == want;
        if (l == LOSS_SOFTMAX_CE) {
            double m = zi[0], s = 0, e[LOSS_KEEP];
            for (int64_t j = 1; j < k; j++) m = zi[j] > m ? zi[j] : m;
            for (int64_t j = 0; j < k; j++) {
                /* exp(0) is exactly 1; each value is kept, not computed twice */
                double x = (double)zi[j] == m && isfinite(m) ? 1.0 : exp((double)zi[j] - m);
                if (j < LOSS_KEEP) e[j] = x;
                s += x;
            }
            total += log(s) + m - (double)zi[want];
            for (int64_t j = 0; dz && j < k; j++) {
                double p = (j < LOSS_KEEP ? e[j] : exp((double)zi[j] - m)) / s;
                dz[i * k + j] = (REAL)((p - (j == want)) / (double)batch);
            }
        } else {
            for (int64_t j = 0; j < k; j++) {
                double target = labels ? (double)(j == want) : (double)t[i * k + j];
                double d = (double)zi[j] - target;
                total += d * d / (double)k;
                if (dz) dz[i * k + j] = (REAL)(2 * d / ((double)k * (double)batch));
            }
        }
    }
    return total;
}

#undef F
#undef CAT
#undef CAT2
