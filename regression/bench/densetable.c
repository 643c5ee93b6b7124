/* What a step of an embedding table costs a parameter server without
 * row-sparse pull and push (embed.py's yardstick): rank 1, the shard,
 * sends the whole table to rank 0, the trainer, which sends a gradient of
 * the whole table back, and the shard applies Adam to every row (cairn's
 * own optim_update).  The trainer's compute is left out, so this is the
 * least a dense step costs.
 *
 * usage: mpirun -np 2 densetable ROWS DIM STEPS
 * Prints "dense table step: S s" (the best of STEPS, after one warm-up: the
 * sparse step it is set against is a best too). */
#include "cairn/optim.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    long long rows = argc > 1 ? atoll(argv[1]) : 1000000, dim = argc > 2 ? atoll(argv[2]) : 16;
    int steps = argc > 3 ? atoi(argv[3]) : 5, n = (int)(rows * dim);
    float *w = calloc((size_t)n, sizeof *w), *g = calloc((size_t)n, sizeof *g);
    float *m = me ? calloc((size_t)n, sizeof *m) : NULL, *v = me ? calloc((size_t)n, sizeof *v) : NULL;
    double *t = calloc((size_t)steps + 1, sizeof *t);
    if (!w || !g || !t || (me && (!m || !v))) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int i = 0; i < n; i++) g[i] = 1e-3f * (float)(i % 7);
    struct optim_args a = {.opt = OPT_ADAM, .lr = 0.003, .b1 = 0.9, .b2 = 0.999, .eps = 1e-8, .c1 = 0.1, .c2 = 0.001};
    for (int s = -1; s < steps; s++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (me == 1) { /* the shard: publish, take the gradient, update every row */
            MPI_Send(w, n, MPI_FLOAT, 0, 1, MPI_COMM_WORLD);
            MPI_Recv(g, n, MPI_FLOAT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            optim_update(DT_F32, &a, n, w, g, m, v);
        } else {
            MPI_Recv(w, n, MPI_FLOAT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(g, n, MPI_FLOAT, 1, 2, MPI_COMM_WORLD);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (s >= 0) t[s] = MPI_Wtime() - t0;
    }
    qsort(t, (size_t)steps, sizeof *t, by_value);
    if (me == 0) printf("dense table step: %.6f s\n", t[0]);
    MPI_Finalize();
    return 0;
}
