/* The collective download and model.h5.
 *
 * Download: every dense parameter moves from the PS shards to trainer 0 (world
 * rank 0), once, after the last epoch.  Shard p holds rows [lo, hi) of a
 * row-major parameter, which are bytes [lo * cols, hi * cols) of it on
 * trainer 0: no block-cyclic redistribution is needed, so each parameter
 * is one MPI_Gatherv straight into its place, on the layout's download
 * communicator (trainer 0 as rank 0, shard p as rank p + 1).
 *
 * model.h5 (written by trainer 0 in the exit phase; a contract for users'
 * tools, see cairn-job(5)): /layers/<i>/W [inputs, units] and
 * /layers/<i>/b [units] with y = act(x W + b); attribute activation on
 * /layers/<i>; loss, dtype, inputs, layers, job_name, cairn_version,
 * epochs, features, labels, eval_batch on /; /embeddings/<name>/table
 * [rows, dim] in id order, with attributes ids, combine and column (where
 * its vectors start in the first layer's input).  Tables are not
 * downloaded: while trainer 0 writes model.h5, the shards stream each
 * table to it a block of ids (8 MiB of rows) at a time (one MPI_Gatherv
 * per block on the download communicator), so no rank holds a table
 * whole. */
#include "train_priv.h"

#include "cairn/clock.h"
#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/exec.h"
#include "cairn/fsx.h"
#include "cairn/h5util.h"
#include "cairn/layout.h"
#include "cairn/op.h"
#include "cairn/partition.h"
#include "cairn/plan.h"
#include "cairn/runlog.h"
#include "cairn/runtime.h"
#include "cairn/version.h"
#include "cairn/watchdog.h"
#include "cairn/workspace.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

/* Parameter k from the shards (src: this shard's rows) to trainer 0 (dst);
 * counts and displs: scratch of P + 1 entries. */
static int gather_param(struct trainer *t, int k, const void *src, void *dst, int *counts,
                        int *displs)
{
    int rc = 0, P = t->tp->shards, mine = 0;
    int64_t cols = param_cols(t, k);
    counts[0] = displs[0] = 0;
    for (int p = 0; p < P; p++) {
        int64_t lo, hi;
        param_block(t, k, p, &lo, &hi);
        counts[p + 1] = (int)((hi - lo) * cols);
        displs[p + 1] = (int)(lo * cols);
        if (t->role == ROLE_PS && p == t->shard) mine = counts[p + 1];
    }
    MPI_Datatype real = coll_type(t->dt);
    CAIRN_CHECK_MPI(MPI_Gatherv(src, mine, real, dst, counts, displs, real, 0, t->dl));
cleanup:
    return rc;
}

/* MPI's first transfers between two ranks set up their paths and buffers
 * and are several times slower than later ones; one gather of the largest
 * parameter's shape when the communicator is made leaves the download
 * only the parameters to move.  Its time is logged at start-up.
 * Collective on the download communicator (a no-op elsewhere). */
int dl_create(struct trainer *t)
{
    if (t->dl == MPI_COMM_NULL) return 0;
    int rc = 0, big = 0, P = t->tp->shards;
    for (int k = 0; k < n_params(t); k++)
        if (param_rows(t, k) * param_cols(t, k) > param_rows(t, big) * param_cols(t, big)) big = k;
    int64_t lo = 0, hi = 0, rows = param_rows(t, big), cols = param_cols(t, big);
    bool root = t->rt->layout->rank == 0;
    if (t->role == ROLE_PS) param_block(t, big, t->shard, &lo, &hi);
    size_t n = root ? (size_t)(rows * cols) : (size_t)((hi - lo) * cols);
    void *buf = calloc(n + 1, t->esz);
    int *counts = malloc((size_t)(P + 1) * sizeof *counts), *displs = malloc((size_t)(P + 1) * sizeof *displs);
    CAIRN_CHECK_ALLOC(buf && counts && displs ? buf : NULL);
    double t0 = clock_now();
    CAIRN_CHECK(gather_param(t, big, root ? NULL : buf, root ? buf : NULL, counts, displs));
    if (root)
        runlog_line(t->rt->log, "download: MPI_Gatherv from %d shard%s to trainer 0, set up in %.4f s",
                    P, P == 1 ? "" : "s", clock_now() - t0);
cleanup:
    free(buf);
    free(counts);
    free(displs);
    return rc;
}

/* The yardstick (debug.compare_gatherv): the same bytes, every shard's
 * blocks of every parameter, gathered to trainer 0 with one MPI_Gatherv.
 * It runs before and after the download and the faster counts: whichever
 * transfer runs second finds the shards' data in cache. */
static int gatherv_same_bytes(struct trainer *t, struct op_call *c, double *seconds)
{
    int rc = 0, size = 0, me = 0, K = n_params(t);
    int *counts = NULL, *displs = NULL, mine = 0;
    int64_t all = 0;
    char *send = NULL, *recv = NULL;
    MPI_Comm_size(t->dl, &size);
    MPI_Comm_rank(t->dl, &me);
    for (int k = 0; t->role == ROLE_PS && k < K; k++) all += tensor_numel(&c->in[k]->t);
    CAIRN_CHECK(coll_agree(t->dl, all <= INT_MAX / size ? 0 : cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
        "debug.compare_gatherv: the model is too large for one MPI_Gatherv (int counts)")));
    mine = (int)all;
    send = malloc((size_t)mine * t->esz + 1);
    counts = calloc((size_t)size, sizeof *counts);
    displs = calloc((size_t)size, sizeof *displs);
    CAIRN_CHECK_ALLOC(send && counts && displs ? send : NULL);
    for (size_t k = 0, at = 0; t->role == ROLE_PS && k < (size_t)K; k++) {
        size_t n = (size_t)tensor_numel(&c->in[k]->t) * t->esz;
        if (n) memcpy(send + at, c->in[k]->t.data, n);
        at += n;
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
    int rc = 0, K = n_params(t); /* the dense parameters: tables stream at the exit */
    bool ps = t->role == ROLE_PS, root = c->ctx->rt->layout->rank == 0;
    double t0 = 0, bytes = 0, gatherv = 0;
    int *counts = NULL, *displs = NULL;
    for (int k = 0; !ps && k < K; k++) { /* the results, in memory before the clock starts */
        struct tensor *out = &c->out[k]->t;
        bool vec = model_param_ndim(t->spec, k) == 1;
        struct shape s = {.ndim = vec ? 1 : 2, .d = {root ? param_rows(t, k) : 0, param_cols(t, k)}};
        CAIRN_CHECK(tensor_resize(out, t->dt, &s));
        if (tensor_bytes(out)) memset(out->data, 0, tensor_bytes(out)); /* empty off trainer 0 */
    }
    for (int k = 0; k < K; k++) bytes += (double)(param_rows(t, k) * param_cols(t, k)) * (double)t->esz;
    if (!ps && !root) return 0;
    counts = malloc((size_t)(t->tp->shards + 1) * sizeof *counts);
    displs = malloc((size_t)(t->tp->shards + 1) * sizeof *displs);
    CAIRN_CHECK_ALLOC(counts && displs ? counts : NULL);
    if (t->spec->debug_gatherv) CAIRN_CHECK(gatherv_same_bytes(t, c, &gatherv));
    CAIRN_CHECK_MPI(MPI_Barrier(t->dl));
    t0 = clock_now();
    for (int k = 0; k < K; k++)
        CAIRN_CHECK(gather_param(t, k, ps ? c->in[k]->t.data : NULL, ps ? NULL : c->out[k]->t.data,
                                 counts, displs));
    double dt = clock_now() - t0, again = 0;
    if (t->spec->debug_gatherv) { /* the yardstick at its best: its data hot in cache too */
        CAIRN_CHECK(gatherv_same_bytes(t, c, &again));
        gatherv = again < gatherv ? again : gatherv;
    }
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
    free(counts);
    free(displs);
    return rc;
}

/* ---- model.h5 ------------------------------------------------------------------ */

/* ---- tables, streamed from the shards ---- */

/* Ids go to trainer 0 in blocks of at most this many bytes of rows. */
enum { TABLE_BLOCK_BYTES = 8 << 20 };

static int64_t block_ids(const struct trainer *t, const struct embed_spec *x)
{
    int64_t n = TABLE_BLOCK_BYTES / (x->dim * (int64_t)t->esz);
    return n < 1 ? 1 : n > x->rows ? x->rows : n;
}

/* Ids [first, first + n) of table x: the values each shard holds of them
 * (counts[p + 1]; counts[0] = 0, trainer 0's) and each id's shard (row i
 * is at position spread_pos(i), in the shards' blocks of positions). */
static void block_owners(const struct trainer *t, const struct embed_spec *x, int64_t first, int64_t n,
                         int *counts, int *owner)
{
    int P = t->tp->shards;
    int64_t a = spread_step(x->rows), lo, b;
    block_range(x->rows, P, 0, &lo, &b); /* every shard's block but the last has b positions */
    for (int p = 0; p <= P; p++) counts[p] = 0;
    for (int64_t i = 0; i < n; i++) {
        owner[i] = (int)(spread_pos(first + i, x->rows, a) / b);
        counts[owner[i] + 1] += (int)x->dim;
    }
}

/* Both sides, block by block: the shards send their rows of the block's
 * ids in id order, trainer 0 interleaves them back into id order and
 * writes them (d >= 0).  v: a shard's rows of the table, in position
 * order.  (An error ends the run, MPI_Abort included, so the other side
 * does not wait.) */
static int stream_table(struct trainer *t, int e, const struct tensor *v, hid_t d)
{
    const struct embed_spec *x = &t->spec->tables[e];
    bool shard = t->role == ROLE_PS;
    int rc = 0, P = t->tp->shards;
    size_t row = (size_t)x->dim * t->esz;
    int64_t B = block_ids(t, x), lo = 0, hi = 0, mine = B, a = spread_step(x->rows);
    if (shard) block_range(x->rows, P, t->shard, &lo, &hi);
    if (shard && hi - lo < mine) mine = hi - lo; /* a shard sends at most its rows */
    char *buf = malloc((size_t)mine * row + 1), *got = shard ? NULL : malloc((size_t)B * row + 1);
    int *owner = malloc((size_t)B * sizeof *owner), *counts = malloc((size_t)(P + 1) * sizeof *counts);
    int *displs = malloc((size_t)(P + 1) * sizeof *displs), *next = malloc((size_t)(P + 1) * sizeof *next);
    CAIRN_CHECK_ALLOC(buf && (shard || got) && owner && counts && displs && next ? buf : NULL);
    MPI_Datatype real = coll_type(t->dt);
    for (int64_t first = 0; first < x->rows; first += B) {
        int64_t n = x->rows - first < B ? x->rows - first : B, m = 0;
        block_owners(t, x, first, n, counts, owner);
        for (int64_t i = 0; shard && i < n; i++)
            if (owner[i] == t->shard) {
                int64_t pos = spread_pos(first + i, x->rows, a);
                memcpy(buf + (size_t)m++ * row, (const char *)v->data + (size_t)(pos - lo) * row, row);
            }
        for (int p = 0, at = 0; p <= P; at += counts[p++]) displs[p] = at;
        CAIRN_CHECK_MPI(MPI_Gatherv(buf, (int)(m * x->dim), real, shard ? NULL : got, counts, displs, real, 0,
                                    t->dl));
        watchdog_progress(watchdog_main(t->rt->watchdog)); /* a table may take long to write */
        if (shard) continue;
        for (int p = 0; p < P; p++) next[p] = displs[p + 1];
        for (int64_t i = 0; i < n; i++) { /* the shards' runs, interleaved back into id order */
            memcpy(buf + (size_t)i * row, got + (size_t)next[owner[i]] * t->esz, row);
            next[owner[i]] += (int)x->dim;
        }
        CAIRN_CHECK(h5_write_rows(d, t->dt, first, n, buf, H5P_DEFAULT));
    }
cleanup:
    free(buf);
    free(got);
    free(owner);
    free(counts);
    free(displs);
    free(next);
    return rc;
}

/* Trainer 0: /embeddings/<name>/table under parent, in id order, with the
 * ids dataset and the combine rule as attributes. */
static int recv_table(struct trainer *t, hid_t parent, int e, int64_t column)
{
    const struct embed_spec *x = &t->spec->tables[e];
    int rc = 0;
    hid_t g = H5I_INVALID_HID, d = H5I_INVALID_HID;
    struct shape s = {.ndim = 2, .d = {x->rows, x->dim}};
    CAIRN_CHECK_H5(g = h5_create_group(parent, x->name));
    CAIRN_CHECK_H5(d = h5_create_dataset(g, "table", t->dt, &s, H5P_DEFAULT));
    CAIRN_CHECK(stream_table(t, e, NULL, d));
    CAIRN_CHECK(h5_attr_put_str(g, "ids", x->ids));
    CAIRN_CHECK(h5_attr_put_str(g, "combine", x->mean ? "mean" : "sum"));
    CAIRN_CHECK(h5_attr_put_i64(g, "column", column));
cleanup:
    if (d >= 0 && H5Dclose(d) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Dclose");
    if (g >= 0 && H5Gclose(g) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Gclose");
    return rc;
}

static int write_layers(struct trainer *t, struct op_call *c, hid_t f)
{
    int rc = 0;
    const struct train_spec *sp = t->spec;
    hid_t layers = H5I_INVALID_HID, g = H5I_INVALID_HID;
    CAIRN_CHECK(h5_attr_put_str(f, "loss", loss_name(sp->loss)));
    CAIRN_CHECK(h5_attr_put_str(f, "dtype", dtype_name(sp->dtype)));
    CAIRN_CHECK(h5_attr_put_str(f, "job_name", c->ctx->rt->plan->job->name));
    CAIRN_CHECK(h5_attr_put_str(f, "cairn_version", CAIRN_VERSION));
    CAIRN_CHECK(h5_attr_put_i64(f, "inputs", sp->inputs));
    CAIRN_CHECK(h5_attr_put_i64(f, "layers", sp->n_layers));
    CAIRN_CHECK(h5_attr_put_i64(f, "epochs", c->ctx->rt->epoch));
    CAIRN_CHECK(h5_attr_put_str(f, "features", sp->features));
    CAIRN_CHECK(h5_attr_put_str(f, "labels", sp->labels));
    CAIRN_CHECK(h5_attr_put_i64(f, "eval_batch", sp->eval_batch));
    layers = h5_create_group(f, "layers");
    CAIRN_CHECK_H5(layers);
    for (int l = 0; l < sp->n_layers; l++) {
        char name[32];
        snprintf(name, sizeof name, "%d", l);
        g = h5_create_group(layers, name);
        CAIRN_CHECK_H5(g);
        CAIRN_CHECK(h5_attr_put_str(g, "activation", act_name(sp->layers[l].act)));
        CAIRN_CHECK(h5_put_tensor(g, "W", &c->in[sp->param0[l]]->t));
        CAIRN_CHECK(h5_put_tensor(g, "b", &c->in[sp->param0[l] + 1]->t));
        herr_t closed = H5Gclose(g);
        g = H5I_INVALID_HID;
        CAIRN_CHECK_H5(closed);
    }
cleanup:
    if (g >= 0) H5Gclose(g);
    if (layers >= 0 && H5Gclose(layers) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Gclose");
    return rc;
}

/* A language model's model.h5 (cairn-job(5), MODEL FILE): attribute
 * kind = "lm" and the shape's attributes; /embed/tok [vocab, width],
 * /embed/pos [context, width]; /blocks/<i>/<lm.h's names>; /head/lnf.g,
 * /head/lnf.b, /head/W [width, vocab]. */
static int write_lm(struct trainer *t, struct op_call *c, hid_t f)
{
    int rc = 0;
    const struct train_spec *sp = t->spec;
    const struct lm_spec *x = &sp->lm;
    hid_t g = H5I_INVALID_HID;
    const char *attrs[] = {"vocab", "context", "width", "heads", "blocks", "mlp"};
    int64_t vals[] = {x->vocab, x->ctx, x->d, x->heads, x->blocks, x->mlp};
    CAIRN_CHECK(h5_attr_put_str(f, "kind", "lm"));
    CAIRN_CHECK(h5_attr_put_str(f, "dtype", dtype_name(sp->dtype)));
    CAIRN_CHECK(h5_attr_put_str(f, "job_name", c->ctx->rt->plan->job->name));
    CAIRN_CHECK(h5_attr_put_str(f, "cairn_version", CAIRN_VERSION));
    CAIRN_CHECK(h5_attr_put_i64(f, "epochs", c->ctx->rt->epoch));
    CAIRN_CHECK(h5_attr_put_str(f, "features", sp->features));
    CAIRN_CHECK(h5_attr_put_str(f, "labels", sp->labels));
    CAIRN_CHECK(h5_attr_put_i64(f, "eval_batch", sp->eval_batch));
    for (int i = 0; i < 6; i++) CAIRN_CHECK(h5_attr_put_i64(f, attrs[i], vals[i]));
    for (int l = 0; l < sp->n_layers; l++) {
        char name[64];
        if (l == 0) snprintf(name, sizeof name, "embed");
        else if (l == sp->n_layers - 1) snprintf(name, sizeof name, "head");
        else snprintf(name, sizeof name, "blocks/%d", l - 1);
        hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
        CAIRN_CHECK_H5(lcpl);
        H5Pset_create_intermediate_group(lcpl, 1);
        g = H5Gcreate2(f, name, lcpl, H5P_DEFAULT, H5P_DEFAULT);
        H5Pclose(lcpl);
        CAIRN_CHECK_H5(g);
        for (int k = sp->param0[l]; k < sp->param0[l + 1]; k++) {
            char full[96];
            model_param_name(sp, k, "", full, sizeof full);
            CAIRN_CHECK(h5_put_tensor(g, strchr(full, '.') + 1, &c->in[k]->t)); /* "L<l>." dropped */
        }
        herr_t closed = H5Gclose(g);
        g = H5I_INVALID_HID;
        CAIRN_CHECK_H5(closed);
    }
cleanup:
    if (g >= 0) H5Gclose(g);
    return rc;
}

static int write_model(struct trainer *t, struct op_call *c, const char *path)
{
    int rc = 0;
    hid_t f = H5I_INVALID_HID, emb = H5I_INVALID_HID;
    h5_quiet();
    CAIRN_CHECK(h5_create_file(path, H5P_DEFAULT, &f));
    CAIRN_CHECK(t->spec->lm_on ? write_lm(t, c, f) : write_layers(t, c, f));
    if (t->spec->n_tables) {
        double t0 = clock_now();
        CAIRN_CHECK_H5(emb = h5_create_group(f, "embeddings"));
        for (int e = 0, col = (int)t->spec->inputs; e < t->spec->n_tables; col += (int)t->spec->tables[e++].dim)
            CAIRN_CHECK(recv_table(t, emb, e, col));
        runlog_line(t->rt->log, "model.h5: %d table%s streamed from %d shard%s and written in %.3f s",
                    t->spec->n_tables, t->spec->n_tables == 1 ? "" : "s", t->tp->shards,
                    t->tp->shards == 1 ? "" : "s", clock_now() - t0);
    }
cleanup:
    if (emb >= 0 && H5Gclose(emb) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Gclose");
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Fclose");
    return rc;
}

/* Trainer 0 writes RUN_DIR/model.h5 through an fsx_out (whole or absent);
 * on the PS group (inputs: the tables) the shards stream the tables to it. */
int train_op_save_model(struct op_call *c)
{
    struct trainer *t = c->state;
    int rc = 0;
    for (int e = 0; t->role == ROLE_PS && e < t->spec->n_tables && rc == 0; e++)
        rc = stream_table(t, e, &c->in[e]->t, H5I_INVALID_HID);
    if (t->role == ROLE_PS) return rc;
    if (c->ctx->rt->layout->rank != 0) return 0;
    struct fsx_out o = {.dir = -1, .fd = -1};
    char path[4200];
    CAIRN_CHECK(fsx_join(path, sizeof path, c->ctx->rt->run_dir, "model.h5"));
    CAIRN_CHECK(fsx_out_begin(&o, path, 0));
    CAIRN_CHECK(write_model(t, c, o.tmp));
    CAIRN_CHECK(fsx_out_commit(&o));
cleanup:
    fsx_out_abort(&o);
    if (rc && o.renamed) { /* whole, but its directory entry may not survive a crash */
        unlink(path);
        cairn_err_wrap(rc, "model.h5 removed (the last checkpoint holds the trained state, and "
                           "running the job again writes it): ");
    } else if (rc) {
        cairn_err_wrap(rc, "model.h5 not written (the last checkpoint holds the trained state, and "
                           "running the job again writes it): ");
    }
    return rc;
}
