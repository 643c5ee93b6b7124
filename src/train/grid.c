/* A pipeline stage on T ranks (pipeline.ranks_per_stage): its T x 1 BLACS
 * grid, and its dense layers as ScaLAPACK p?gemm on block-cyclic operands.
 *
 * cairn's matrices are row-major, ScaLAPACK's column-major: a row-major
 * [r, c] matrix is ScaLAPACK's c x r, whose rows (cairn's columns) the
 * T x 1 grid deals out in blocks of B = pipeline.block, round-robin to the
 * T members (cyclic_owned).  Member j's piece is its local c_j x r array
 * (leading dimension c_j): row-major, every row's columns of its blocks,
 * [r, c_j].  So:
 *  - a layer's W [in, out] and dW: member j holds the columns (units) of
 *    its blocks, [in, out_j]; b and db likewise, [out_j];
 *  - activations and their gradients inside the stage, [n, d]: every
 *    sample, the features of its blocks, [n, d_j];
 *  - at the stage's edges activations and gradients are whole on member 0,
 *    the stage's rank in the pipeline; p?gemr2d moves them between a 1 x 1
 *    grid on member 0 and the stage's grid.
 * The products need to move only activation-sized panels between members
 * (not weights), and each member's products span the whole batch.  y = act(x W + b) is the
 * p?gemm Y' = W' X' (primes: the column-major views), then bias and
 * activation on the member's own units.  The sums over `in` (forward) and
 * `out` (dx) are split over the members, so results differ from T = 1 in
 * the last bits. */
#include "train_priv.h"

#include "cairn/error.h"
#include "cairn/nn.h"
#include "cairn/partition.h"
#include "cairn/scalapack.h"

#include <stdlib.h>
#include <string.h>

bool grid_split(const struct trainer *t) { return t->T > 1 && !t->spec->lm_on; } /* an LM's: pipeline.c */

int64_t grid_cols(const struct trainer *t, int64_t d)
{
    return grid_split(t) ? cyclic_owned(d, t->tp->block, t->T, t->member) : d;
}

int grid_create(struct trainer *t)
{
    if (!grid_split(t) || t->members == MPI_COMM_NULL) return 0;
    int lead = 0;
    t->blacs_stage = Csys2blacs_handle(t->members);
    t->ctx_grid = t->blacs_stage;
    Cblacs_gridinit(&t->ctx_grid, "Col", t->T, 1);
    t->ctx_lead = t->blacs_stage;
    Cblacs_gridmap(&t->ctx_lead, &lead, 1, 1, 1);
    int r, c, myr = -1, myc = -1;
    Cblacs_gridinfo(t->ctx_grid, &r, &c, &myr, &myc);
    if (myr != t->member || myc != 0)
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                             "stage %d: BLACS put member %d at (%d, %d) of a %d x %d grid", t->stage,
                             t->member, myr, myc, r, c);
    return 0;
}

void grid_destroy(struct trainer *t)
{
    if (t->ctx_lead >= 0 && t->member == 0) Cblacs_gridexit(t->ctx_lead);
    if (t->ctx_grid >= 0) Cblacs_gridexit(t->ctx_grid);
    if (t->blacs_stage >= 0) Cfree_blacs_system_handle(t->blacs_stage);
    t->ctx_lead = t->ctx_grid = t->blacs_stage = -1;
}

/* ---- descriptors ---------------------------------------------------------------- */

static int desc_check(int info)
{
    return info ? cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "descinit: argument %d is bad",
                                -info)
                : 0;
}

/* The row-major [rows, cols] matrix in blocks of B columns over the grid
 * (ScaLAPACK's cols x rows, B x B blocks). */
static int on_grid(const struct trainer *t, int *desc, int64_t rows, int64_t cols)
{
    int m = (int)cols, n = (int)rows, nb = t->tp->block, zero = 0, info = 0;
    int lld = grid_cols(t, cols) > 1 ? (int)grid_cols(t, cols) : 1, ctx = t->ctx_grid;
    descinit_(desc, &m, &n, &nb, &nb, &zero, &zero, &ctx, &lld, &info);
    return desc_check(info);
}

/* The whole row-major [rows, cols] matrix on member 0 (desc[1] = -1 elsewhere). */
static int on_lead(const struct trainer *t, int *desc, int64_t rows, int64_t cols)
{
    if (t->member != 0) {
        memset(desc, 0, 9 * sizeof *desc);
        desc[1] = -1;
        return 0;
    }
    int m = (int)cols, n = (int)rows, zero = 0, info = 0, ctx = t->ctx_lead;
    int mb = m > 1 ? m : 1, nb = n > 1 ? n : 1, lld = mb;
    descinit_(desc, &m, &n, &mb, &nb, &zero, &zero, &ctx, &lld, &info);
    return desc_check(info);
}

/* ---- the stage's edges ------------------------------------------------------------ */

static void gemr2d(const struct trainer *t, int m, int n, const void *a, const int *da, void *b,
                   const int *db)
{
    int one = 1, ctx = t->ctx_grid;
    double dummy[1];
    void *src = a ? (void *)a : dummy, *dst = b ? b : dummy;
    if (t->dt == DT_F64)
        pdgemr2d_(&m, &n, src, &one, &one, da, dst, &one, &one, db, &ctx);
    else
        psgemr2d_(&m, &n, src, &one, &one, da, dst, &one, &one, db, &ctx);
}

int grid_scatter(const struct trainer *t, int64_t n, int64_t d, const void *whole, void *local)
{
    int rc = 0, dl[9], dg[9];
    if (n == 0) return 0;
    CAIRN_CHECK(on_lead(t, dl, n, d));
    CAIRN_CHECK(on_grid(t, dg, n, d));
    gemr2d(t, (int)d, (int)n, whole, dl, local, dg);
cleanup:
    return rc;
}

int grid_gather(const struct trainer *t, int64_t n, int64_t d, const void *local, void *whole)
{
    int rc = 0, dl[9], dg[9];
    if (n == 0) return 0;
    CAIRN_CHECK(on_lead(t, dl, n, d));
    CAIRN_CHECK(on_grid(t, dg, n, d));
    gemr2d(t, (int)d, (int)n, local, dg, whole, dl);
cleanup:
    return rc;
}

/* ---- the layers ------------------------------------------------------------------ */

/* C' = op(A') op(B') in ScaLAPACK's terms, every operand on the grid. */
static void pgemm(const struct trainer *t, char ta, char tb, int m, int n, int k, const void *a,
                  const int *da, const void *b, const int *db, double beta, void *c, const int *dc)
{
    int one = 1;
    double dummy[1];
    const void *pa = a ? a : dummy, *pb = b ? b : dummy;
    void *pc = c ? c : dummy;
    if (t->dt == DT_F64) {
        double al = 1, be = beta;
        pdgemm_(&ta, &tb, &m, &n, &k, &al, pa, &one, &one, da, pb, &one, &one, db, &be, pc, &one,
                &one, dc);
    } else {
        float al = 1, be = (float)beta;
        psgemm_(&ta, &tb, &m, &n, &k, &al, pa, &one, &one, da, pb, &one, &one, db, &be, pc, &one,
                &one, dc);
    }
}

int grid_forward(const struct trainer *t, int64_t n, int64_t in, int64_t out, const void *x,
                 const void *W, const void *b, enum act a, void *y)
{
    int rc = 0, dx[9], dw[9], dy[9];
    CAIRN_CHECK(on_grid(t, dx, n, in));
    CAIRN_CHECK(on_grid(t, dw, in, out));
    CAIRN_CHECK(on_grid(t, dy, n, out));
    pgemm(t, 'N', 'N', (int)out, (int)n, (int)in, W, dw, x, dx, 0, y, dy); /* Y' = W' X' */
    nn_bias_act(t->dt, n, grid_cols(t, out), b, a, y);
cleanup:
    return rc;
}

int grid_backward_params(const struct trainer *t, int64_t n, int64_t in, int64_t out,
                         const void *x, const void *y, enum act a, void *dy, void *dW, void *db,
                         bool accumulate)
{
    int rc = 0, dx[9], dw[9], dd[9];
    nn_dact_bias(t->dt, n, grid_cols(t, out), y, a, dy, db, accumulate);
    CAIRN_CHECK(on_grid(t, dx, n, in));
    CAIRN_CHECK(on_grid(t, dw, in, out));
    CAIRN_CHECK(on_grid(t, dd, n, out));
    pgemm(t, 'N', 'T', (int)out, (int)in, (int)n, dy, dd, x, dx, accumulate ? 1 : 0, dW, dw);
cleanup:
    return rc;
}

int grid_backward_input(const struct trainer *t, int64_t n, int64_t in, int64_t out,
                        const void *W, const void *dy, void *dx)
{
    int rc = 0, ddx[9], dw[9], ddy[9];
    CAIRN_CHECK(on_grid(t, ddx, n, in));
    CAIRN_CHECK(on_grid(t, dw, in, out));
    CAIRN_CHECK(on_grid(t, ddy, n, out));
    pgemm(t, 'T', 'N', (int)in, (int)n, (int)out, W, dw, dy, ddy, 0, dx, ddx); /* X' = W'^T Y' */
cleanup:
    return rc;
}
