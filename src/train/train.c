/* A rank's training context and the train_step / evaluate ops
 * (include/cairn/train.h).
 *
 * Data: the training rows are the first n_train rows of data.file (all of
 * them with holdout_file, else all but the last holdout fraction); the
 * held-out rows are the rest, or all of holdout_file.  A pass over the
 * training rows visits them in the order of a permutation keyed by (seed,
 * pass) (rng.h).  The data cursor blob (pass, position) that each stage
 * keeps is the reader's state: it is checkpointed with the other blobs,
 * and a step's mini-batch is the next `batch` samples from it, split into
 * M micro-batches whatever the number of replicas R; replica r takes the
 * rows of micro-batches r M/R .. (r+1) M/R - 1.  Loss sums are added in
 * micro-batch (or evaluation batch) order, so the logged figures do not
 * depend on R either. */
#include "train_priv.h"

#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/exec.h"
#include "cairn/layout.h"
#include "cairn/model.h"
#include "cairn/op.h"
#include "cairn/partition.h"
#include "cairn/plan.h"
#include "cairn/reader.h"
#include "cairn/rng.h"
#include "cairn/runtime.h"
#include "cairn/workspace.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the data --------------------------------------------------------------------- */

/* An input error about the data, located at the job's data section. */
__attribute__((format(printf, 2, 3))) static int data_error(const struct trainer *t,
                                                            const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s:%d: data: %s", t->spec->file,
                         t->spec->data_line, msg);
}

static int shape_of(struct trainer *t, const char *file, const char *ds, struct shape *s,
                    enum dtype *dt)
{
    int rc = reader_shape(t->rt->readers, file, ds, s, dt);
    if (rc) cairn_err_wrap(rc, "%s:%d: data: ", t->spec->file, t->spec->data_line);
    return rc;
}

/* A language model's data: tokens [N, ctx] and their next tokens [N, ctx],
 * integers (cairn data text writes them). */
static int check_lm_file(struct trainer *t, const char *file, int64_t *rows)
{
    int rc = 0;
    const struct train_spec *sp = t->spec;
    const char *ds[2] = {sp->features, sp->labels};
    char sh[96];
    for (int i = 0; i < 2; i++) {
        struct shape s;
        enum dtype dt;
        CAIRN_CHECK(shape_of(t, file, ds[i], &s, &dt));
        if (s.ndim != 2 || s.d[1] != sp->lm.ctx || !dtype_is_int(dt))
            return data_error(t, "dataset '%s' in %s is %s %s; a language model of context %lld takes "
                                 "integer tokens [N, %lld]",
                              ds[i], file, dtype_name(dt), shape_format(&s, sh, sizeof sh),
                              (long long)sp->lm.ctx, (long long)sp->lm.ctx);
        if (i && s.d[0] != *rows)
            return data_error(t, "dataset '%s' in %s has %lld rows but '%s' has %lld", ds[1], file,
                              (long long)s.d[0], ds[0], (long long)*rows);
        *rows = s.d[0];
    }
    t->k_targets = 0;
cleanup:
    return rc;
}

/* The features and labels of one file agree with the model and each other. */
static int check_file(struct trainer *t, const char *file, int64_t *rows)
{
    if (t->spec->lm_on) return check_lm_file(t, file, rows);
    int rc = 0;
    const struct train_spec *sp = t->spec;
    struct shape fs, ls;
    enum dtype ft, lt;
    int64_t k = t->tp->dims[t->tp->n_layers];
    CAIRN_CHECK(shape_of(t, file, sp->features, &fs, &ft));
    CAIRN_CHECK(shape_of(t, file, sp->labels, &ls, &lt));
    char sh[96];
    (void)ft;
    if (fs.ndim != 2 || fs.d[1] != sp->inputs)
        return data_error(t, "dataset '%s' in %s is %s; the model takes [N, %lld] (model.inputs)",
                          sp->features, file, shape_format(&fs, sh, sizeof sh),
                          (long long)sp->inputs);
    if (ls.d[0] != fs.d[0])
        return data_error(t, "dataset '%s' in %s has %lld rows but '%s' has %lld", sp->labels,
                          file, (long long)ls.d[0], sp->features, (long long)fs.d[0]);
    if (ls.ndim == 1 && !dtype_is_int(lt))
        return data_error(t, "dataset '%s' in %s must hold integer classes [N] or targets [N, %lld]",
                          sp->labels, file, (long long)k);
    if (ls.ndim == 2 && (ls.d[1] != k || sp->loss != LOSS_MSE))
        return data_error(t, "dataset '%s' in %s is %s: targets need loss \"mse\" and %lld "
                             "columns (the model's outputs)",
                          sp->labels, file, shape_format(&ls, sh, sizeof sh), (long long)k);
    if (ls.ndim > 2)
        return data_error(t, "dataset '%s' in %s is %s, not [N] or [N, %lld]", sp->labels, file,
                          shape_format(&ls, sh, sizeof sh), (long long)k);
    t->k_targets = ls.ndim == 2 ? ls.d[1] : 0;
    *rows = fs.d[0];
cleanup:
    return rc;
}

/* Class labels must name an output; a language model's tokens (ds: its
 * inputs or its labels) must be in its vocabulary. */
static int check_labels(struct trainer *t, const char *file, const char *ds, int64_t first, int64_t n)
{
    int rc = 0;
    struct tensor y = {0};
    const struct train_spec *sp = t->spec;
    int64_t k = sp->lm_on ? sp->lm.vocab : t->tp->dims[t->tp->n_layers], per = sp->lm_on ? sp->lm.ctx : 1;
    int64_t rows = (INT64_C(1) << 20) / per + 1; /* read in pieces: memory does not follow the data */
    if (t->k_targets) return 0;
    for (int64_t at = first; at < first + n && rc == 0; at += rows) {
        int64_t r = first + n - at < rows ? first + n - at : rows;
        CAIRN_CHECK(reader_rows(t->rt->readers, file, ds, at, r, DT_I64, &y));
        for (int64_t i = 0, m = tensor_numel(&y); i < m; i++) {
            int64_t v = ((int64_t *)y.data)[i];
            if (v >= 0 && v < k) continue;
            if (sp->lm_on)
                rc = data_error(t, "dataset '%s' in %s holds token %lld (row %lld), outside the vocabulary "
                                   "[0, %lld) of model.lm",
                                ds, file, (long long)v, (long long)(at + i / per), (long long)k);
            else
                rc = data_error(t, "dataset '%s' in %s holds class %lld, but the model has %lld outputs", ds,
                                file, (long long)v, (long long)k);
            break;
        }
    }
cleanup:
    tensor_free(&y);
    return rc;
}

static int open_data(struct trainer *t)
{
    int rc = 0;
    const struct train_spec *sp = t->spec;
    int64_t eval_rows = 0;
    CAIRN_CHECK(check_file(t, sp->data_file, &t->n_rows));
    t->eval_file = sp->holdout_file ? sp->holdout_file : sp->data_file;
    if (sp->holdout_file) {
        int64_t k = t->k_targets;
        CAIRN_CHECK(check_file(t, sp->holdout_file, &eval_rows));
        if (k != t->k_targets)
            return data_error(t, "the labels of %s and %s differ in kind", sp->data_file,
                              sp->holdout_file);
        t->n_train = t->n_rows;
        t->n_eval = eval_rows;
        t->eval_first = 0;
    } else {
        t->n_train = model_train_rows(sp, t->n_rows);
        t->n_eval = t->n_rows - t->n_train;
        t->eval_first = t->n_train;
    }
    if (t->n_train < 1)
        return data_error(t, "%s leaves no training rows (%lld rows, %lld held out)", sp->data_file,
                          (long long)t->n_rows, (long long)t->n_eval);
    if (t->first && t->emb) { /* the tables' ids, every one of them */
        CAIRN_CHECK(emb_check_data(t, sp->data_file, t->n_rows, 0, t->n_rows));
        if (sp->holdout_file) CAIRN_CHECK(emb_check_data(t, sp->holdout_file, eval_rows, 0, eval_rows));
    }
    if (t->last) {
        CAIRN_CHECK(check_labels(t, sp->data_file, sp->labels, 0, t->n_train));
        CAIRN_CHECK(check_labels(t, t->eval_file, sp->labels, t->eval_first, t->n_eval));
    }
    if (t->first && sp->lm_on) { /* the tokens index the embedding */
        CAIRN_CHECK(check_labels(t, sp->data_file, sp->features, 0, t->n_train));
        CAIRN_CHECK(check_labels(t, t->eval_file, sp->features, t->eval_first, t->n_eval));
    }
cleanup:
    return rc;
}

/* Every rank learns the row counts from world rank 0 (a first stage). */
static int share_counts(struct trainer *t)
{
    int rc = 0;
    int64_t v[3] = {t->n_train, t->n_eval, t->k_targets};
    CAIRN_CHECK_MPI(MPI_Bcast(v, 3, MPI_INT64_T, 0, t->rt->layout->world));
    t->n_train = v[0];
    t->n_eval = v[1];
    t->k_targets = v[2];
    int64_t b = t->spec->batch, steps = t->rt->plan->steps_per_epoch;
    t->steps_per_epoch = steps ? steps : (t->n_train + b - 1) / b;
cleanup:
    return rc;
}

/* The rows of one step: the next `global` samples from the cursor. */
static int step_batch(struct trainer *t, const struct tensor *cursor, struct batch *b)
{
    int rc = 0;
    int64_t pass = tensor_get_i64(cursor, 0), pos = tensor_get_i64(cursor, 1), lo, hi;
    if (t->spec->shuffle && (!t->perm || t->perm_pass != pass)) {
        if (!t->perm) t->perm = malloc((size_t)t->n_train * sizeof *t->perm);
        CAIRN_CHECK_ALLOC(t->perm);
        rng_permutation((uint64_t)t->rt->plan->job->seed, (uint64_t)pass, t->n_train, t->perm);
        t->perm_pass = pass;
    }
    b->global = t->n_train - pos < t->spec->batch ? t->n_train - pos : t->spec->batch;
    b->seed = (uint64_t)t->rt->plan->job->seed;
    b->pass = pass;
    b->pos = pos;
    int64_t end;
    part_range(b->global, t->M, t->mb_lo, &lo, &end); /* the replica's micro-batches' rows */
    part_range(b->global, t->M, t->mb_hi - 1, &end, &hi);
    b->n = hi - lo;
    free(b->idx);
    b->idx = malloc((size_t)(b->n + 1) * sizeof *b->idx);
    CAIRN_CHECK_ALLOC(b->idx);
    for (int64_t i = 0; i < b->n; i++) b->idx[i] = t->perm ? t->perm[pos + lo + i] : pos + lo + i;
cleanup:
    return rc;
}

static void advance(const struct trainer *t, struct tensor *cursor, int64_t global)
{
    int64_t pass = tensor_get_i64(cursor, 0), pos = tensor_get_i64(cursor, 1) + global;
    if (pos >= t->n_train) {
        pass++;
        pos = 0;
    }
    tensor_set_i64(cursor, 0, pass);
    tensor_set_i64(cursor, 1, pos);
}

/* Features for the first stage, labels or targets for the last (on its
 * member 0). */
static int read_rows(struct trainer *t, const char *file, struct batch *b)
{
    int rc = 0;
    struct reader_cache *rd = t->rt->readers;
    if (t->member != 0) return 0; /* member 0 brings the stage's data */
    if (t->first)
        CAIRN_CHECK(reader_gather(rd, file, t->spec->features, b->idx, b->n, t->dt, &b->x));
    if (t->last)
        CAIRN_CHECK(reader_gather(rd, file, t->spec->labels, b->idx, b->n,
                                  t->k_targets ? t->dt : DT_I32, &b->y));
cleanup:
    return rc;
}

static void batch_free(struct batch *b)
{
    free(b->idx);
    tensor_free(&b->x);
    tensor_free(&b->y);
    *b = (struct batch){0};
}

/* ---- the context ------------------------------------------------------------------ */

static int alloc_params(struct trainer *t)
{
    int rc = 0, K = n_params(t);
    t->w = calloc((size_t)K + 1, sizeof *t->w);
    t->dw = calloc((size_t)K + 1, sizeof *t->dw);
    CAIRN_CHECK_ALLOC(t->w && t->dw ? t->w : NULL);
    for (int k = param_first(t, t->l0); k < param_first(t, t->l1); k++) { /* this member's part (model.h) */
        int64_t rows, cols;
        model_param_local(t->spec, k, t->T, t->member, &rows, &cols);
        struct shape s = {.ndim = 2, .d = {rows, cols}};
        if (model_param_ndim(t->spec, k) == 1) s = (struct shape){.ndim = 1, .d = {rows}};
        CAIRN_CHECK(tensor_resize(&t->w[k], t->dt, &s));
        CAIRN_CHECK(tensor_resize(&t->dw[k], t->dt, &s));
    }
cleanup:
    return rc;
}

static void assign_role(struct trainer *t)
{
    const struct layout *l = t->rt->layout;
    const struct train_plan *tp = t->tp;
    t->role = ROLE_NONE;
    t->M = (int)tp->spec->chunks;
    if (l->gid == tp->ps_group) {
        t->role = ROLE_PS;
        t->shard = l->grank;
    }
    for (int s = 0; s < tp->stages; s++) {
        if (l->gid != tp->stage_group[s]) continue;
        t->role = ROLE_STAGE;
        t->stage = s;
        t->replica = l->grank / t->T;
        t->member = l->grank % t->T;
        t->mb_lo = (int)(t->M / tp->replicas * t->replica); /* R divides M (config_train.c) */
        t->mb_hi = t->mb_lo + (int)(t->M / tp->replicas);
        t->l0 = tp->first_layer[s];
        t->l1 = tp->first_layer[s + 1];
        t->first = s == 0;
        t->last = s == tp->stages - 1;
    }
    t->group = l->gid >= 0 ? l->lanes[0] : MPI_COMM_NULL;
}

static int setup_role(struct trainer *t)
{
    int rc = 0;
    if (t->role != ROLE_NONE) CAIRN_CHECK(ps_create(t));
    if (t->role != ROLE_NONE) CAIRN_CHECK(emb_create(t, t->embc));
    if (t->role == ROLE_STAGE) {
        if ((t->first || t->last) && t->member == 0) CAIRN_CHECK(open_data(t));
        CAIRN_CHECK(alloc_params(t));
        CAIRN_CHECK(grid_create(t));
        CAIRN_CHECK(pipe_create(t));
    } else if (t->role == ROLE_PS) {
        t->grads = calloc((size_t)n_params(t) + 1, sizeof *t->grads);
        CAIRN_CHECK_ALLOC(t->grads);
    }
cleanup:
    return rc;
}

/* The largest tag cairn sends is within the bound this MPI library
 * reports (Open MPI's is 2^31 - 1; the standard promises only 32767). */
static int check_tags(const struct trainer *t)
{
    int *ub = NULL, flag = 0;
    int64_t need = 2 * (t->tp->spec->chunks / t->tp->replicas) + 1; /* a replica's micro-batches */
    if (need < TAG_PS_END) need = TAG_PS_END;
    MPI_Comm_get_attr(t->rt->layout->world, MPI_TAG_UB, &ub, &flag);
    if (!flag || !ub || need <= *ub) return 0;
    return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                         "pipeline.chunks = %lld needs MPI message tags up to %lld, but this MPI "
                         "library's MPI_TAG_UB is %d: use at most %d chunks",
                         (long long)t->tp->spec->chunks, (long long)need, *ub, (*ub - 1) / 2);
}

int trainer_create(struct runtime *rt, const struct train_plan *tp, const MPI_Comm *comms,
                   struct trainer **out)
{
    int rc = 0;
    struct trainer *t = calloc(1, sizeof *t);
    if (!t) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    t->rt = rt;
    t->tp = tp;
    t->pipe = comms[TRAIN_COMM_PIPE];
    t->members = comms[TRAIN_COMM_STAGE];
    t->T = tp->ranks_per_stage;
    t->train = comms[TRAIN_COMM_TRAIN];
    t->dl = comms[TRAIN_COMM_DL];
    t->embc = comms[TRAIN_COMM_EMBED];
    t->spec = t->tp->spec;
    t->dt = t->spec->dtype;
    t->esz = dtype_size(t->dt);
    t->blacs_stage = t->ctx_grid = t->ctx_lead = -1;
    assign_role(t);
    /* output paths are checked at the door, not after the first step */
    rc = rt->layout->rank == 0 && t->spec->debug_grads ? fsx_probe_create(t->spec->debug_grads) : 0;
    if (rc) cairn_err_wrap(rc, "debug.grads: ");
    char model[4200];
    if (rc == 0 && rt->layout->rank == 0 && rt->run_dir && (rc = fsx_join(model, sizeof model, rt->run_dir, "model.h5")) == 0)
        rc = fsx_check_target(model); /* model.h5 replaces only a regular file */
    if (rc == 0 && (t->M % tp->replicas || (tp->replicas & (tp->replicas - 1))))
        rc = cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "%d replicas cannot share %d micro-batches over the "
                           "gradient tree", tp->replicas, t->M); /* config_train.c refuses it first */
    rc = coll_agree(rt->layout->world, rc ? rc : check_tags(t));
    if (rc == 0) rc = coll_agree(rt->layout->world, setup_role(t));
    if (rc == 0) rc = share_counts(t);
    if (rc == 0) rc = coll_agree(rt->layout->world, dl_create(t));
    if (rc) {
        trainer_destroy(&t);
        return rc;
    }
    *out = t;
    return 0;
}

void trainer_destroy(struct trainer **tp)
{
    if (!tp || !*tp) return;
    struct trainer *t = *tp;
    grid_destroy(t);
    emb_destroy(t);
    pipe_destroy(t);
    ps_destroy(t);
    for (int k = 0; t->w && k < n_params(t); k++) {
        tensor_free(&t->w[k]);
        tensor_free(&t->dw[k]);
    }
    for (int k = 0; t->grads && k < n_params(t); k++) tensor_free(&t->grads[k]);
    free(t->w);
    free(t->dw);
    free(t->grads);
    free(t->perm);
    free(t);
    *tp = NULL;
}

int64_t trainer_steps_per_epoch(const struct trainer *t) { return t->steps_per_epoch; }
/* One pass over the training rows, or steps_per_epoch whole batches. */
int64_t trainer_epoch_samples(const struct trainer *t)
{
    return t->rt->plan->steps_per_epoch ? t->steps_per_epoch * t->spec->batch : t->n_train;
}

int trainer_epoch_stats(struct trainer *t, int64_t *samples, double *pipe_seconds, double *shard_bytes)
{
    int rc = 0;
    /* one collective, and a waiting one that sleeps (coll.c): the ranks
     * come to it as their epochs end, shards long before stages */
    int64_t v[3] = {t->role == ROLE_PS ? llround(ps_bytes(t)) : 0, llround(t->pipe_seconds * 1e6), t->samples};
    CAIRN_CHECK(coll_allreduce(MPI_IN_PLACE, v, 3, MPI_INT64_T, MPI_MAX, t->rt->layout->world));
    *shard_bytes = (double)v[0];
    *pipe_seconds = (double)v[1] / 1e6;
    *samples = v[2];
    t->pipe_seconds = 0;
    t->samples = 0;
cleanup:
    return rc;
}

/* ---- the ops ------------------------------------------------------------------------ */

/* On the last stage: every replica's member 0's n values (its pieces'
 * figures, in piece order), gathered in replica order, which is piece
 * order: *all gets the *total values (free it). */
static int gather_ordered(struct trainer *t, const double *v, int64_t n, double **all, int64_t *total)
{
    int rc = 0, size = 0, mine = t->member == 0 ? (int)n : 0, *count = NULL, *at = NULL;
    *all = NULL;
    *total = 0;
    if (n > INT_MAX) CAIRN_FAIL(CAIRN_ERUNTIME, "%lld figures are too many to gather", (long long)n);
    MPI_Comm_size(t->group, &size);
    count = malloc((size_t)size * sizeof *count);
    at = malloc((size_t)size * sizeof *at);
    CAIRN_CHECK_ALLOC(count && at ? count : NULL);
    CAIRN_CHECK_MPI(MPI_Allgather(&mine, 1, MPI_INT, count, 1, MPI_INT, t->group));
    for (int r = 0; r < size; r++) at[r] = (int)*total, *total += count[r];
    if (*total > INT_MAX) CAIRN_FAIL(CAIRN_ERUNTIME, "%lld figures are too many to gather", (long long)*total);
    *all = malloc((size_t)(*total + 1) * sizeof **all);
    CAIRN_CHECK_ALLOC(*all);
    CAIRN_CHECK_MPI(MPI_Allgatherv(v, mine, MPI_DOUBLE, *all, count, at, MPI_DOUBLE, t->group));
cleanup:
    free(count);
    free(at);
    return rc;
}

/* Sums of k figures per piece (micro-batch or evaluation batch), n pieces
 * per replica, added in piece order, so that the total does not depend on
 * how the pieces were dealt to replicas.  v holds this replica's n * k
 * values; out gets the k totals. */
static int ordered_sum(struct trainer *t, const double *v, int n, int k, double *out)
{
    double *all = NULL;
    int64_t total = 0;
    int rc = gather_ordered(t, v, (int64_t)n * k, &all, &total);
    for (int j = 0; j < k; j++) out[j] = 0;
    for (int64_t i = 0; rc == 0 && i < total; i++) out[i % k] += all[i];
    free(all);
    return rc;
}

/* On the last stage: the AUC of every replica's member 0's n (score,
 * label) pairs, computed on the group's rank 0 (the pairs of all held-out
 * rows, 16 bytes each, are sorted there only) and shared.  NaN beyond
 * AUC_MAX_ROWS rows, which one gather cannot carry. */
enum { AUC_MAX_ROWS = INT_MAX / 2 };
static int held_out_auc(struct trainer *t, const double *sl, int64_t n, double *out)
{
    int rc = 0, size = 0, me = 0, *count = NULL, *at = NULL;
    int mine = t->member != 0 ? 0 : n > AUC_MAX_ROWS ? -1 : (int)(2 * n);
    double *all = NULL;
    int64_t total = 0;
    *out = NAN;
    MPI_Comm_size(t->group, &size);
    MPI_Comm_rank(t->group, &me);
    count = malloc((size_t)size * sizeof *count);
    at = malloc((size_t)size * sizeof *at);
    CAIRN_CHECK_ALLOC(count && at ? count : NULL);
    CAIRN_CHECK_MPI(MPI_Allgather(&mine, 1, MPI_INT, count, 1, MPI_INT, t->group));
    for (int r = 0; r < size; r++) {
        if (count[r] < 0) total = (int64_t)INT_MAX + 1;
        at[r] = total > INT_MAX ? 0 : (int)total;
        total += count[r] < 0 ? 0 : count[r];
    }
    if (total > INT_MAX) goto cleanup; /* too many to gather: no AUC */
    if (me == 0) CAIRN_CHECK_ALLOC(all = malloc((size_t)(total + 1) * sizeof *all));
    CAIRN_CHECK_MPI(MPI_Gatherv(sl, mine, MPI_DOUBLE, all, count, at, MPI_DOUBLE, 0, t->group));
    if (me == 0) *out = nn_auc(all, total / 2);
    CAIRN_CHECK_MPI(MPI_Bcast(out, 1, MPI_DOUBLE, 0, t->group));
cleanup:
    free(count);
    free(at);
    free(all);
    return rc;
}

static int set_scalar(struct tensor *out, double v)
{
    struct shape scalar = {0};
    int rc = tensor_resize(out, DT_F64, &scalar);
    if (rc == 0) tensor_set(out, 0, v);
    return rc;
}

int train_op_step(struct op_call *c)
{
    struct trainer *t = c->state;
    struct tensor *cursor = &c->in[0]->t;
    struct batch b = {0};
    int rc = 0;
    /* the tables' ids first: the rest of the data is read while the shards serve them */
    CAIRN_CHECK(step_batch(t, cursor, &b));
    CAIRN_CHECK(ps_pull(t)); /* before the tables' pulls: the shards wait for it to serve them */
    if (emb_reader(t)) CAIRN_CHECK(emb_pull(t, t->spec->data_file, &b));
    CAIRN_CHECK(read_rows(t, t->spec->data_file, &b)); /* while the shards serve the pulls */
    if (emb_reader(t)) CAIRN_CHECK(emb_input(t, &b));
    CAIRN_CHECK(pipe_step(t, &b)); /* pushes the gradients as they are done */
    if (emb_reader(t)) CAIRN_CHECK(emb_push(t));
    CAIRN_CHECK(ps_push_finish(t));
    advance(t, cursor, b.global);
    t->samples += b.global;
    if (t->last) {
        double loss = 0;
        CAIRN_CHECK(ordered_sum(t, t->mb_loss, t->mb_hi - t->mb_lo, 1, &loss));
        loss /= (double)b.global;
        if (!isfinite(loss) && t->spec->abort_on_nan)
            CAIRN_FAIL(CAIRN_ERUNTIME, "the training loss is %s in pipeline stage %d (replica %d); "
                                       "on_nan = \"abort\"",
                       isnan(loss) ? "NaN" : "infinite", t->stage, t->replica);
        CAIRN_CHECK(set_scalar(&c->out[0]->t, loss));
    }
cleanup:
    batch_free(&b);
    return rc;
}

/* Evaluation batches go to the replicas in balanced shares; the shards
 * serve the tables' rows in as many rounds as the largest share. */
static int64_t eval_rounds(const struct trainer *t)
{
    int64_t E = t->spec->eval_batch, batches = (t->n_eval + E - 1) / E;
    return (batches + t->tp->replicas - 1) / t->tp->replicas;
}

/* The shards' side of evaluate: the tables' rows, a round per batch. */
int train_op_embed_serve(struct op_call *c)
{
    struct trainer *t = c->state;
    int rc = 0;
    struct tensor *w[EMBED_MAX_TABLES];
    if (!t->emb) return 0;
    for (int e = 0; e < t->spec->n_tables; e++) w[e] = &c->in[e]->t;
    for (int64_t i = 0; i < eval_rounds(t); i++) CAIRN_CHECK(emb_serve(t, w, false));
cleanup:
    return rc;
}

/* Loss and accuracy over the held-out rows, in batches of eval_batch
 * dealt to the replicas (balanced), each through its pipeline. */
int train_op_evaluate(struct op_call *c)
{
    struct trainer *t = c->state;
    struct batch b = {0};
    int rc = 0;
    int64_t E = t->spec->eval_batch, batches = (t->n_eval + E - 1) / E, lo, hi, n_sl = 0;
    double *v = NULL, sum[2], *sl = NULL, *score = NULL; /* (score, label) pairs: the AUC */
    bool two = t->last && c->op->n_out == 3;
    CAIRN_CHECK(ps_pull(t));
    part_range(batches, t->tp->replicas, t->replica, &lo, &hi);
    v = calloc((size_t)(2 * (hi - lo) + 1), sizeof *v);
    CAIRN_CHECK_ALLOC(v);
    for (int64_t i = lo; i < hi; i++) {
        int64_t at = i * E, correct = 0;
        b.n = t->n_eval - at < E ? t->n_eval - at : E;
        b.global = b.n;
        free(b.idx);
        b.idx = malloc((size_t)b.n * sizeof *b.idx);
        CAIRN_CHECK_ALLOC(b.idx);
        for (int64_t r = 0; r < b.n; r++) b.idx[r] = t->eval_first + at + r;
        if (emb_reader(t)) CAIRN_CHECK(emb_pull(t, t->eval_file, &b));
        CAIRN_CHECK(read_rows(t, t->eval_file, &b));
        if (emb_reader(t)) CAIRN_CHECK(emb_input(t, &b));
        if (two && t->member == 0) {
            double *g = realloc(sl, (size_t)(2 * (n_sl + b.n)) * sizeof *g);
            CAIRN_CHECK_ALLOC(g);
            sl = g;
            free(score);
            CAIRN_CHECK_ALLOC(score = malloc((size_t)b.n * sizeof *score));
        }
        CAIRN_CHECK(pipe_eval(t, &b, &v[2 * (i - lo)], &correct, two && t->member == 0 ? score : NULL));
        for (int64_t r = 0; two && t->member == 0 && r < b.n; r++, n_sl++) {
            sl[2 * n_sl] = score[r];
            sl[2 * n_sl + 1] = ((const int32_t *)b.y.data)[r];
        }
        v[2 * (i - lo) + 1] = (double)correct; /* counts are exact in a double */
    }
    for (int64_t i = hi - lo; emb_reader(t) && i < eval_rounds(t); i++) { /* the shards' rounds */
        b.n = 0;
        CAIRN_CHECK(emb_pull(t, t->eval_file, &b));
        CAIRN_CHECK(emb_input(t, &b));
    }
    if (t->last) {
        if (hi - lo > INT_MAX / 2) CAIRN_FAIL(CAIRN_ERUNTIME, "too many evaluation batches");
        CAIRN_CHECK(ordered_sum(t, v, (int)(hi - lo), 2, sum));
        if (!isfinite(sum[0]) && t->spec->abort_on_nan)
            CAIRN_FAIL(CAIRN_ERUNTIME, "the held-out loss is %s in pipeline stage %d; "
                                       "on_nan = \"abort\"",
                       isnan(sum[0]) ? "NaN" : "infinite", t->stage);
        CAIRN_CHECK(set_scalar(&c->out[0]->t, sum[0] / (double)t->n_eval));
        double per = t->spec->lm_on ? (double)t->spec->lm.ctx : 1; /* a language model's: tokens */
        CAIRN_CHECK(set_scalar(&c->out[1]->t, sum[1] / (double)t->n_eval / per));
    }
    if (two) {
        double a = NAN;
        CAIRN_CHECK(held_out_auc(t, sl, n_sl, &a));
        CAIRN_CHECK(set_scalar(&c->out[2]->t, a));
    }
cleanup:
    free(sl);
    free(score);
    free(v);
    batch_free(&b);
    return rc;
}
