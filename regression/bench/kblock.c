/* What bitwise independence of pipeline.ranks_per_stage (T) would cost.
 *
 * A stage on T ranks splits each layer's sum over `in` (forward) or `out`
 * (the input gradient) over its members; ScaLAPACK adds the members'
 * partial sums in an order that depends on T.  The only order that T
 * cannot change is one fixed by the model: partial sums over fixed blocks
 * of B units, folded in a fixed tree, computed that way for T = 1 too.
 * This program times that product against one sgemm on the demo's hidden
 * layer (batch 512, 1024 x 1024), for several B, and checks the premise:
 * that a member computing only its own output columns gets the same bits.
 *
 * Usage: kblock [N IN OUT [REPS]]; prints one line per B. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Y[n, cols) = X[n, k] W[k, cols) as B-wide blocks of k folded in a
 * fixed pairwise tree; part holds k / B buffers of n x ld. */
static void tree(int n, int k, int lo, int cols, int ld, int B, const float *X, const float *W,
                 float *part)
{
    int nb = k / B;
    for (int b = 0; b < nb; b++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, cols, B, 1, X + b * B, k,
                    W + (size_t)b * B * ld + lo, ld, 0, part + (size_t)b * n * cols, cols);
    for (int s = 1; s < nb; s *= 2)
        for (int b = 0; b + s < nb; b += 2 * s) {
            float *a = part + (size_t)b * n * cols, *c = part + (size_t)(b + s) * n * cols;
            for (size_t i = 0; i < (size_t)n * cols; i++)
                a[i] += c[i];
        }
}

static double best(int reps, void (*fn)(void *), void *arg)
{
    double t = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        fn(arg);
        double d = now() - t0;
        if (d < t) t = d;
    }
    return t;
}

struct job {
    int n, k, m, B;
    float *X, *W, *Y, *part;
};

static void one(void *p)
{
    struct job *j = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->n, j->m, j->k, 1, j->X, j->k, j->W,
                j->m, 0, j->Y, j->m);
}

static void blocked(void *p)
{
    struct job *j = p;
    tree(j->n, j->k, 0, j->m, j->m, j->B, j->X, j->W, j->part);
}

int main(int argc, char **argv)
{
    int n = argc > 3 ? atoi(argv[1]) : 512, k = argc > 3 ? atoi(argv[2]) : 1024;
    int m = argc > 3 ? atoi(argv[3]) : 1024, reps = argc > 4 ? atoi(argv[4]) : 20;
    if (n < 1 || k < 64 || m < 2 || reps < 1 || k % 64) {
        fprintf(stderr, "usage: kblock [N IN OUT [REPS]] (IN a multiple of 64)\n");
        return 2;
    }
    struct job j = {.n = n, .k = k, .m = m};
    j.X = malloc(sizeof(float) * n * k);
    j.W = malloc(sizeof(float) * k * m);
    j.Y = malloc(sizeof(float) * n * m);
    j.part = malloc(sizeof(float) * n * m * (k / 64));
    float *half = malloc(sizeof(float) * n * m * (k / 64));
    if (!j.X || !j.W || !j.Y || !j.part || !half) return 3;
    srand(7);
    for (size_t i = 0; i < (size_t)n * k; i++)
        j.X[i] = rand() / (float)RAND_MAX - 0.5f;
    for (size_t i = 0; i < (size_t)k * m; i++)
        j.W[i] = rand() / (float)RAND_MAX - 0.5f;
    double t1 = best(reps, one, &j);
    printf("one sgemm %d x %d x %d: %.3f ms, %.1f GFLOP/s\n", n, k, m, t1 * 1e3,
           2.0 * n * k * m / t1 / 1e9);
    for (int B = 64; B <= k; B *= 2) {
        if (k % B) continue;
        j.B = B;
        double tb = best(reps, blocked, &j);
        /* the premise: a member computing columns [m/2, m) alone gets the
         * same bits as the whole product's columns there */
        int lo = m / 2, cols = m - lo, same = 1;
        tree(n, k, lo, cols, m, B, j.X, j.W, half);
        for (int r = 0; r < n && same; r++)
            same = memcmp(half + (size_t)r * cols, j.part + (size_t)r * m + lo,
                          sizeof(float) * cols) == 0;
        printf("B = %4d: %.3f ms, %.2f x one sgemm, half the columns %s\n", B, tb * 1e3, tb / t1,
               same ? "bitwise equal" : "DIFFER");
    }
    return 0;
}
