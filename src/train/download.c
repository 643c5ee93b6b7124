/* The collective download and model.h5.
 *
 * Download: every parameter moves from the PS shards to trainer 0 (world
 * rank 0) with ScaLAPACK's p?gemr2d, once, after the last epoch.  A
 * parameter is stored row-major [rows, cols]; ScaLAPACK (column-major)
 * sees that as its transpose, a cols x rows matrix, and the shards' row
 * blocks are its column blocks: a 1 x P process grid with blocks of
 * ceil(rows / P) columns.  The target is a 1 x 1 grid on trainer 0, whose
 * column-major cols x rows result is the row-major [rows, cols] parameter.
 * The grids live on the layout's download communicator (trainer 0 as rank
 * 0, shard p as rank p + 1).
 *
 * model.h5 (written by trainer 0 in the exit phase; a contract for users'
 * tools, see cairn-job(5)): /layers/<i>/W [inputs, units] and
 * /layers/<i>/b [units] with y = act(x W + b); attribute activation on
 * /layers/<i>; loss, dtype, inputs, layers, job_name, cairn_version on /. */
#include "train_priv.h"

#include "cairn/clock.h"
#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/exec.h"
#include "cairn/fsx.h"
#include "cairn/h5util.h"
#include "cairn/layout.h"
#include "cairn/op.h"
#include "cairn/plan.h"
#include "cairn/runlog.h"
#include "cairn/runtime.h"
#include "cairn/scalapack.h"
#include "cairn/version.h"
#include "cairn/workspace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int redistribute(struct trainer *t, int k, const void *src, void *dst);

/* ScaLAPACK's first redistributions of a shape are 3-4 times slower than
 * later ones (its buffers and MPI's transfer paths are set up on first
 * use); exercise the grids once with the largest parameter's shape while
 * they are made, so the download moves only parameters.  Its time is
 * logged at start-up. */
static int warm_up(struct trainer *t, double *seconds)
{
    int rc = 0, big = 0;
    for (int k = 0; k < 2 * t->tp->n_layers; k++)
        if (param_rows(t, k) * param_cols(t, k) > param_rows(t, big) * param_cols(t, big)) big = k;
    int64_t lo, hi, rows = param_rows(t, big), cols = param_cols(t, big);
    bool ps = t->role == ROLE_PS, root = t->rt->layout->rank == 0;
    if (ps) param_block(t, big, t->shard, &lo, &hi);
    size_t n = ps ? (size_t)((hi - lo) * cols) : root ? (size_t)(rows * cols) : 0;
    void *buf = calloc(n + 1, t->esz);
    if (!buf) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    double t0 = MPI_Wtime();
    rc = redistribute(t, big, ps ? buf : NULL, root ? buf : NULL);
    *seconds = MPI_Wtime() - t0;
    free(buf);
    return rc;
}

/* Collective on the download communicator (a no-op elsewhere). */
int dl_create(struct trainer *t)
{
    if (t->dl == MPI_COMM_NULL) return 0;
    int P = t->tp->shards, rc = 0;
    int *map = malloc((size_t)P * sizeof *map);
    if (!map) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (int p = 0; p < P; p++) map[p] = p + 1;
    t->blacs_sys = Csys2blacs_handle(t->dl);
    t->ctx_all = t->blacs_sys;
    Cblacs_gridinit(&t->ctx_all, "Row", 1, P + 1);
    t->ctx_ps = t->blacs_sys;
    Cblacs_gridmap(&t->ctx_ps, map, 1, 1, P);
    int root = 0;
    t->ctx_root = t->blacs_sys;
    Cblacs_gridmap(&t->ctx_root, &root, 1, 1, 1);
    free(map);
    double warm = 0;
    rc = warm_up(t, &warm);
    if (rc == 0 && t->rt->layout->rank == 0)
        runlog_line(t->rt->log, "download grids: 1 x %d (PS) to 1 x 1 (trainer 0), set up in %.4f s", P,
                    warm);
    return rc;
}

void dl_destroy(struct trainer *t)
{
    int *ctx[] = {&t->ctx_ps, &t->ctx_root, &t->ctx_all};
    for (int i = 0; i < 3; i++) {
        if (*ctx[i] >= 0) {
            int r, c, myr, myc;
            Cblacs_gridinfo(*ctx[i], &r, &c, &myr, &myc);
            if (myr >= 0) Cblacs_gridexit(*ctx[i]);
        }
        *ctx[i] = -1;
    }
    if (t->blacs_sys >= 0) Cfree_blacs_system_handle(t->blacs_sys);
    t->blacs_sys = -1;
}

static bool in_grid(int ctx)
{
    int r, c, myr = -1, myc = -1;
    if (ctx < 0) return false;
    Cblacs_gridinfo(ctx, &r, &c, &myr, &myc);
    return myr >= 0;
}

/* A descriptor of an m x n matrix in blocks mb x nb, or "not in this grid". */
static int describe(int *desc, int ctx, int m, int n, int mb, int nb)
{
    if (!in_grid(ctx)) {
        memset(desc, 0, 9 * sizeof *desc);
        desc[1] = -1;
        return 0;
    }
    int zero = 0, info = 0, lld = m > 1 ? m : 1;
    descinit_(desc, &m, &n, &mb, &nb, &zero, &zero, &ctx, &lld, &info);
    return info ? cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "descinit: argument %d is bad", -info)
                : 0;
}

/* Parameter k from the shards (src: this shard's rows) to trainer 0 (dst). */
static int redistribute(struct trainer *t, int k, const void *src, void *dst)
{
    int rc = 0, P = t->tp->shards;
    int m = (int)param_cols(t, k), n = (int)param_rows(t, k), nb = (n + P - 1) / P, one = 1;
    int da[9], db[9];
    double dummy[1];
    CAIRN_CHECK(describe(da, t->ctx_ps, m, n, m, nb > 0 ? nb : 1));
    CAIRN_CHECK(describe(db, t->ctx_root, m, n, m, n > 0 ? n : 1));
    if (m == 0 || n == 0) goto cleanup;
    if (t->dt == DT_F64)
        pdgemr2d_(&m, &n, src ? src : dummy, &one, &one, da, dst ? dst : dummy, &one, &one, db,
                  &t->ctx_all);
    else
        psgemr2d_(&m, &n, src ? src : (void *)dummy, &one, &one, da, dst ? dst : (void *)dummy,
                  &one, &one, db, &t->ctx_all);
cleanup:
    return rc;
}

/* The yardstick (debug.compare_gatherv): the same bytes, every shard's
 * blocks of every parameter, gathered to trainer 0 with one MPI_Gatherv. */
static int gatherv_same_bytes(struct trainer *t, struct op_call *c, double *seconds)
{
    int rc = 0, size = 0, me = 0, K = 2 * t->tp->n_layers;
    int *counts = NULL, *displs = NULL, mine = 0;
    char *send = NULL, *recv = NULL;
    MPI_Comm_size(t->dl, &size);
    MPI_Comm_rank(t->dl, &me);
    for (int k = 0; t->role == ROLE_PS && k < K; k++) mine += (int)tensor_numel(&c->in[k]->t);
    send = malloc((size_t)mine * t->esz + 1);
    counts = calloc((size_t)size, sizeof *counts);
    displs = calloc((size_t)size, sizeof *displs);
    CAIRN_CHECK_ALLOC(send && counts && displs ? send : NULL);
    for (int k = 0, at = 0; t->role == ROLE_PS && k < K; k++) {
        size_t n = (size_t)tensor_numel(&c->in[k]->t) * t->esz;
        if (n) memcpy(send + at, c->in[k]->t.data, n);
        at += (int)n;
    }
    MPI_Datatype real = coll_type(t->dt);
    CAIRN_CHECK_MPI(MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, t->dl));
    int total = 0;
    for (int i = 0; me == 0 && i < size; i++) {
        displs[i] = total;
        total += counts[i];
    }
    if (me == 0) {
        CAIRN_CHECK_ALLOC(recv = malloc((size_t)total * t->esz + 1));
        memset(recv, 0, (size_t)total * t->esz); /* in memory before the clock, as the download's */
    }
    CAIRN_CHECK_MPI(MPI_Barrier(t->dl));
    double t0 = clock_now();
    CAIRN_CHECK_MPI(MPI_Gatherv(send, mine, real, recv, counts, displs, real, 0, t->dl));
    *seconds = clock_now() - t0;
cleanup:
    free(send);
    free(recv);
    free(counts);
    free(displs);
    return rc;
}

/* On the PS group the inputs are the shards' parameters; on the first
 * stage the outputs are the whole parameters, held by trainer 0 only. */
int train_op_download(struct op_call *c)
{
    struct trainer *t = c->state;
    int rc = 0, K = 2 * t->tp->n_layers;
    bool ps = t->role == ROLE_PS, root = c->ctx->rt->layout->rank == 0;
    double t0 = 0, bytes = 0, gatherv = 0;
    for (int k = 0; !ps && k < K; k++) { /* the results, in memory before the clock starts */
        struct tensor *out = &c->out[k]->t;
        struct shape s = {.ndim = k % 2 ? 1 : 2, .d = {root ? param_rows(t, k) : 0, param_cols(t, k)}};
        CAIRN_CHECK(tensor_resize(out, t->dt, &s));
        if (tensor_bytes(out)) memset(out->data, 0, tensor_bytes(out)); /* empty off trainer 0 */
    }
    if (ps || root) {
        CAIRN_CHECK_MPI(MPI_Barrier(t->dl));
        t0 = clock_now();
    }
    for (int k = 0; k < K; k++) {
        if (ps || root)
            CAIRN_CHECK(redistribute(t, k, ps ? c->in[k]->t.data : NULL, ps ? NULL : c->out[k]->t.data));
        bytes += (double)(param_rows(t, k) * param_cols(t, k)) * (double)t->esz;
    }
    if (!ps && !root) return 0;
    double dt = clock_now() - t0;
    if (t->spec->debug_gatherv) CAIRN_CHECK(gatherv_same_bytes(t, c, &gatherv));
    if (root) {
        char fields[160];
        runlog_line(c->ctx->rt->log, "download: %.2f MB of parameters onto trainer 0 in %.4f s",
                    bytes / 1e6, dt);
        if (t->spec->debug_gatherv)
            runlog_line(c->ctx->rt->log, "download: MPI_Gatherv of the same bytes: %.4f s "
                                         "(download / gatherv = %.2f)",
                        gatherv, gatherv > 0 ? dt / gatherv : 0);
        snprintf(fields, sizeof fields, "\"bytes\":%.0f,\"seconds\":%.6f,\"gatherv_seconds\":%.6f",
                 bytes, dt, gatherv);
        runlog_metric(c->ctx->rt->log, "download", c->ctx->rt->epoch, 0, fields);
    }
cleanup:
    return rc;
}

/* ---- model.h5 ------------------------------------------------------------------ */

static int write_model(struct trainer *t, struct op_call *c, const char *path)
{
    int rc = 0;
    const struct train_spec *sp = t->spec;
    hid_t f = H5I_INVALID_HID, layers = H5I_INVALID_HID, g = H5I_INVALID_HID;
    h5_quiet();
    f = h5_create_file(path, H5P_DEFAULT);
    if (f < 0) CAIRN_FAIL(CAIRN_EIO, "cannot create %s", path);
    CAIRN_CHECK(h5_attr_put_str(f, "loss", loss_name(sp->loss)));
    CAIRN_CHECK(h5_attr_put_str(f, "dtype", dtype_name(sp->dtype)));
    CAIRN_CHECK(h5_attr_put_str(f, "job_name", c->ctx->rt->plan->job->name));
    CAIRN_CHECK(h5_attr_put_str(f, "cairn_version", CAIRN_VERSION));
    CAIRN_CHECK(h5_attr_put_i64(f, "inputs", sp->inputs));
    CAIRN_CHECK(h5_attr_put_i64(f, "layers", sp->n_layers));
    CAIRN_CHECK(h5_attr_put_i64(f, "epochs", c->ctx->rt->epoch));
    layers = h5_create_group(f, "layers");
    CAIRN_CHECK_H5(layers);
    for (int l = 0; l < sp->n_layers; l++) {
        char name[32];
        snprintf(name, sizeof name, "%d", l);
        g = h5_create_group(layers, name);
        CAIRN_CHECK_H5(g);
        CAIRN_CHECK(h5_attr_put_str(g, "activation", act_name(sp->layers[l].act)));
        CAIRN_CHECK(h5_put_tensor(g, "W", &c->in[2 * l]->t));
        CAIRN_CHECK(h5_put_tensor(g, "b", &c->in[2 * l + 1]->t));
        H5Gclose(g);
        g = H5I_INVALID_HID;
    }
cleanup:
    if (g >= 0) H5Gclose(g);
    if (layers >= 0) H5Gclose(layers);
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Fclose");
    return rc;
}

/* Trainer 0 writes RUN_DIR/model.h5, atomically (a .tmp, fsync, rename). */
int train_op_save_model(struct op_call *c)
{
    struct trainer *t = c->state;
    if (c->ctx->rt->layout->rank != 0) return 0;
    int rc = 0;
    char path[4200], tmp[4300];
    CAIRN_CHECK(fsx_join(path, sizeof path, c->ctx->rt->run_dir, "model.h5"));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CAIRN_CHECK(write_model(t, c, tmp));
    CAIRN_CHECK(fsx_fsync_path(tmp));
    CAIRN_CHECK_ERRNO(rename(tmp, path) == 0, CAIRN_EIO, "cannot rename %s", tmp);
    CAIRN_CHECK(fsx_fsync_parent(path));
cleanup:
    return rc;
}
