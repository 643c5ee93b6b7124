/* Planning a model job: the model, data, pipeline, replicas and ps sections
 * become ordinary groups, tasks and ops (include/cairn/trainplan.h), so
 * `cairn print` shows them and `cairn check` analyzes them like any other.
 *
 *   groups   stage0 .. stage{S-1} (R*T ranks each: replica r of stage s
 *            is world ranks (s*R + r)*T .. + T-1, a T x 1 BLACS grid),
 *            then ps (P ranks)
 *   init     ps: the parameters and optimizer state, sharded by rows;
 *            each stage: a data cursor (pass, position)
 *   epoch    per step: each stage runs its part of the pipeline schedule
 *            for the step's mini-batch; ps applies the replicas' summed
 *            gradients and publishes the new parameters (ps.c streams both)
 *   epoch_end  the stages evaluate the held-out split; the last stage
 *            turns loss/accuracy into stop blobs and logs them
 *   download ps shards gather every dense parameter onto trainer 0
 *            (MPI_Gatherv), once
 *   exit     trainer 0 writes RUN_DIR/model.h5; ps (with tables) streams
 *            the tables to it as it writes them (download.c) */
#include "cairn/trainplan.h"

#include "layer.h"

#include "cairn/arena.h"
#include "cairn/diag.h"
#include "cairn/error.h"
#include "cairn/model.h"
#include "cairn/nn.h"
#include "cairn/partition.h"
#include "cairn/plan.h"
#include "cairn/strbuf.h"
#include "cairn/train_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tp {
    struct plan *p;
    struct arena *a;
    const struct train_spec *t;
    struct train_plan *tp;
    struct phase gen[N_PHASES]; /* generated tasks, put before the job's own */
    int ext;                    /* op_node.ext of the generated ops */
};

/* ---- building ops ---------------------------------------------------------- */

static struct task *add_task(struct tp *x, enum phase_id ph, const char *name, int group)
{
    struct phase *g = &x->gen[ph];
    g->v = arena_grow(x->a, g->v, (size_t)g->n, sizeof *g->v);
    struct task *t = &g->v[g->n++];
    *t = (struct task){.name = arena_strdup(x->a, name), .group = x->p->groups[group].name,
                       .file = x->t->file, .line = x->t->line, .group_id = group};
    return t;
}

static struct op_node *add_op(struct tp *x, struct task *t, const char *name)
{
    struct steplist *l = &t->steps;
    l->v = arena_grow(x->a, l->v, (size_t)l->n, sizeof *l->v);
    struct step *st = &l->v[l->n++];
    const struct op_def *def = op_find(name);
    int np = 0;
    while (def->params && def->params[np].key) np++;
    *st = (struct step){.kind = STEP_OP, .file = x->t->file, .line = x->t->line};
    st->op = (struct op_node){.def = def, .file = x->t->file, .line = x->t->line, .ext = x->ext};
    st->op.pv = arena_alloc(x->a, (size_t)(np + 1) * sizeof *st->op.pv);
    op_set_defaults(def, st->op.pv);
    return &st->op;
}

static void in(struct tp *x, struct op_node *op, const char *name)
{
    op->in = arena_grow(x->a, (void *)op->in, (size_t)op->n_in, sizeof *op->in);
    op->in[op->n_in++] = arena_strdup(x->a, name);
}

static void out(struct tp *x, struct op_node *op, const char *name)
{
    op->out = arena_grow(x->a, (void *)op->out, (size_t)op->n_out, sizeof *op->out);
    op->out[op->n_out++] = arena_strdup(x->a, name);
}

static struct pval *param(struct op_node *op, const char *key)
{
    struct pval *v = &op->pv[op_param_index(op->def, key)];
    v->given = true;
    return v;
}

/* ---- names ------------------------------------------------------------------ */

/* Parameter k (model.h), and its optimizer state. */
static const char *pname(struct tp *x, int k, const char *suffix)
{
    char name[64];
    model_param_name(x->t, k, suffix, name, sizeof name);
    return arena_strdup(x->a, name);
}

/* Table e's blob: E.<name> and its optimizer state. */
static const char *tname(struct tp *x, int e, const char *suffix)
{
    return arena_printf(x->a, "E.%s%s", x->t->tables[e].name, suffix);
}

/* ps_init's outputs and ps_step's operands, in the order ps.c expects:
 * every parameter and then every table, then (momentum) their velocities
 * .m, (adagrad) their sums of squares .sq, or (adam) their first moments, their
 * second moments and the step count. */
enum which { STATE_ALL, DENSE_PARAMS, TABLES };
static void state_operands(struct tp *x, struct op_node *op, bool as_in, bool as_out, enum which w)
{
    int n = x->t->n_params, k0 = w == TABLES ? n : 0, k1 = w == DENSE_PARAMS ? n : n + x->t->n_tables;
    bool params_only = w != STATE_ALL;
    /* adagrad's sums of squares are named apart from momentum's velocities,
     * so a resume under the other optimizer misses its state rather than
     * misreads it */
    const char *const suffixes[] = {"", x->t->opt == OPT_ADAGRAD ? ".sq" : ".m", ".v"};
    int groups = params_only ? 1 : 1 + optim_states(x->t->opt);
    for (int g = 0; g < groups; g++) {
        for (int k = k0; k < k1; k++) {
            const char *name = k < n ? pname(x, k, suffixes[g]) : tname(x, k - n, suffixes[g]);
            if (as_in) in(x, op, name);
            if (as_out) out(x, op, name);
        }
    }
    if (!params_only && x->t->opt == OPT_ADAM) {
        if (as_in) in(x, op, "adam.t");
        if (as_out) out(x, op, "adam.t");
    }
}

/* ---- groups ------------------------------------------------------------------ */

/* Replicas and shards given as [MIN, MAX] take the ranks the job is given
 * beyond its minimum: replicas first (each adds T ranks per stage), as
 * many as fit among the counts that keep the gradient tree (powers of two
 * that divide pipeline.chunks, config_train.c), then shards.  Ranks still
 * left stay spare. */
static void fit(const struct plan *p, const struct train_spec *t, int *R, int *P)
{
    int64_t ST = t->stages * t->ranks_per_stage, left = p->nranks - ST * t->replicas - t->shards;
    for (int i = 0; i < p->job->n_groups; i++) left -= p->job->groups[i].ranks;
    *R = (int)t->replicas;
    *P = (int)t->shards;
    if (p->nranks <= 0 || left <= 0) return;
    int64_t best = t->replicas;
    for (int64_t r = t->replicas; r <= t->replicas_max; r++)
        if ((r & (r - 1)) == 0 && t->chunks % r == 0 && (r - t->replicas) * ST <= left) best = r;
    *R = (int)best;
    left -= (best - t->replicas) * ST;
    *P += (int)(t->shards_max - t->shards < left ? t->shards_max - t->shards : left);
}

/* ---- the per-rank memory cap (model.rank_memory_mb) ---------------------------- */

/* Elements of the activations of a stage of layers l0 .. l1-1, if one
 * keeps a tape (a language model's: layer.h): each layer's tape and output
 * for every micro-batch the recomputation mode keeps, one more set to
 * recompute into, and the largest backward's scratch; every micro-batch's
 * input and output and their gradients (pipeline.c keeps them all); and an
 * evaluation batch's tapes and outputs, all at once.  (A dense model's
 * activations are not counted: they are small beside its weights.) */
static double stage_activations(const struct train_spec *t, int l0, int l1, int R, int64_t T)
{
    int64_t m = (t->batch + t->chunks - 1) / t->chunks, mbs = t->chunks / R, E = t->eval_batch;
    double per = 0, scratch = 0, eval = 0;
    bool taped = false;
    for (int l = l0; l < l1; l++) {
        double tape = (double)layer_tape_numel(t, l, m, (int)T), w = (double)layer_scratch_numel(t, l, m, (int)T);
        taped |= tape > 0;
        per += tape + (double)(m * t->layers[l].units);
        eval += (double)layer_tape_numel(t, l, E, (int)T) + (double)(E * t->layers[l].units);
        if (w > scratch) scratch = w;
    }
    if (!taped) return 0;
    if (T > 1) /* the partial sums of a block's members, gathered */
        scratch += (double)T * (double)(m > E ? m : E) * (double)(t->lm.ctx * t->lm.d);
    int64_t in = l0 ? t->layers[l0 - 1].units : t->width0, out = t->layers[l1 - 1].units;
    double kept = t->recompute == RECOMPUTE_NEVER ? (double)mbs : t->recompute == RECOMPUTE_EXCEPT_LAST ? 1 : 0;
    double edges = (double)mbs * (double)m * 2.0 * (double)(in + out);
    return (kept + 1) * per + scratch + edges + eval + (double)(E * in);
}

/* Bytes of the parameters and their gradients that the first (largest)
 * member of a stage of T ranks holds (its block-cyclic units of each),
 * with the partial sums of the gradient tree on a replica of R: up to
 * ceil(log2(M / R)) nodes besides the gradient, and log2(R) sums from
 * other replicas. */
static double stage_bytes(const struct train_spec *t, int s, int64_t T, int R)
{
    int l0 = 0, copies = 2;
    for (int64_t n = 1; n < t->chunks / R; n *= 2) copies++;
    for (int n = 1; n < R; n *= 2) copies++;
    for (int i = 0; i < s; i++) l0 += (int)t->balance[i];
    double n = 0;
    for (int k = t->param0[l0]; k < t->param0[l0 + t->balance[s]]; k++) {
        int64_t rows, cols; /* member 0's part, the largest */
        model_param_local(t, k, T, 0, &rows, &cols);
        n += copies * (double)(rows * cols);
    }
    return (n + stage_activations(t, l0, l0 + (int)t->balance[s], R, T)) * (double)dtype_size(t->dtype);
}

/* Bytes the first (largest) PS shard holds: its rows of every parameter,
 * the optimizer's state for them, and their gradient (the replicas' sum:
 * one, whatever R); its rows of every table and their state (a table's
 * gradient is only of the rows a step touches); with background saves
 * (copy), the copy of its parameters, tables and state. */
static double shard_bytes(const struct train_spec *t, int P, bool copy)
{
    int states = optim_states(t->opt);
    double n = 0, tables = 0;
    for (int k = 0; k < t->n_params; k++) {
        int64_t lo, hi;
        block_range(model_param_rows(t, k), P, 0, &lo, &hi);
        n += (double)((hi - lo) * model_param_cols(t, k));
    }
    for (int e = 0; e < t->n_tables; e++) {
        int64_t lo, hi;
        block_range(t->tables[e].rows, P, 0, &lo, &hi);
        tables += (double)((hi - lo) * t->tables[e].dim);
    }
    double saved = (n + tables) * (1.0 + states);
    return (n * (2.0 + states) + tables * (1.0 + states) + (copy ? saved : 0)) * (double)dtype_size(t->dtype);
}

static int check_memory(const struct train_spec *t, int R, int P, bool copy, struct diags *d)
{
    double cap = (double)t->rank_memory_mb * 1048576.0, mib = 1048576.0;
    int errors = 0;
    if (cap <= 0) return 0;
    for (int s = 0; s < t->stages; s++) {
        double need = stage_bytes(t, s, t->ranks_per_stage, R);
        if (need <= cap) continue;
        int64_t T = t->ranks_per_stage;
        /* an LM's T must divide its heads and MLP (config_train.c) */
        while (T < 1024 && ((t->lm_on && (t->lm.heads % T || t->lm.mlp % T)) || stage_bytes(t, s, T, R) > cap)) T++;
        char hint[96] = ": no stage size fits it";
        if ((!t->lm_on || (t->lm.heads % T == 0 && t->lm.mlp % T == 0)) && stage_bytes(t, s, T, R) <= cap)
            snprintf(hint, sizeof hint, ": it fits with pipeline.ranks_per_stage = %lld", (long long)T);
        diags_add(d, t->memory_file, t->memory_line,
                  "pipeline stage %d needs %.1f MiB per rank for its parameters and gradients (with the "
                  "gradient tree's partial sums)%s "
                  "with pipeline.ranks_per_stage = %lld, over model.rank_memory_mb = %lld%s",
                  s, need / mib, t->lm_on ? " and activations" : "", (long long)t->ranks_per_stage,
                  (long long)t->rank_memory_mb, hint);
        errors++;
    }
    double need = shard_bytes(t, P, copy);
    if (need > cap) {
        int64_t fits = P;
        while (fits < (1 << 16) && shard_bytes(t, (int)fits, copy) > cap) fits++;
        char hint[160] = ": no shard count fits it";
        if (shard_bytes(t, (int)fits, copy) <= cap)
            snprintf(hint, sizeof hint, ": it fits with ps.shards = %lld", (long long)fits);
        if (copy && shard_bytes(t, P, false) <= cap)
            snprintf(hint + strlen(hint), sizeof hint - strlen(hint), ", or with checkpoint.async = false");
        diags_add(d, t->memory_file, t->memory_line,
                  "each PS shard needs up to %.1f MiB (parameters, tables, optimizer state and "
                  "gradients%s) with ps.shards = %d, over model.rank_memory_mb = %lld%s",
                  need / mib, copy ? ", and their copy for checkpoint.async" : "", P,
                  (long long)t->rank_memory_mb, hint);
        errors++;
    }
    return errors;
}

int trainplan_describe(const void *spec, const void *part, struct strbuf *out)
{
    const struct train_spec *t = spec;
    const struct train_plan *tp = part;
    int64_t embedded = t->width0 - t->inputs;
    if (t->lm_on) {
        const struct lm_spec *x = &t->lm;
        double n = 0;
        for (int k = 0; k < t->n_params; k++) n += (double)(model_param_rows(t, k) * model_param_cols(t, k));
        strbuf_addf(out, "model: language model, vocabulary %lld, context %lld, width %lld, %lld head%s, "
                         "%lld block%s, mlp %lld; %.0f parameters; next-token cross-entropy, %s",
                    (long long)x->vocab, (long long)x->ctx, (long long)x->d, (long long)x->heads,
                    x->heads == 1 ? "" : "s", (long long)x->blocks, x->blocks == 1 ? "" : "s",
                    (long long)x->mlp, n, dtype_name(t->dtype));
        if (x->dropout > 0) strbuf_addf(out, "; dropout %g in training", x->dropout);
        strbuf_addf(out, "\n");
        for (int s = 0; s < tp->stages; s++) {
            int l0 = tp->first_layer[s], l1 = tp->first_layer[s + 1], b = l1 - l0 - (l0 == 0) - (l1 == t->n_layers);
            strbuf_addf(out, "  stage %d: %s%d block%s%s\n", s, l0 == 0 ? "embeddings, " : "", b, b == 1 ? "" : "s",
                        l1 == t->n_layers ? ", final norm and head" : "");
        }
    } else {
        strbuf_addf(out, "model: %lld inputs", (long long)t->inputs);
        if (embedded) strbuf_addf(out, " + %lld from tables", (long long)embedded);
        for (int l = 0; l < t->n_layers; l++)
            strbuf_addf(out, " -> %lld %s", (long long)t->layers[l].units, act_name(t->layers[l].act));
        strbuf_addf(out, "; %s, %s\n", loss_name(t->loss), dtype_name(t->dtype));
    }
    for (int e = 0; e < t->n_tables; e++) {
        const struct embed_spec *x = &t->tables[e];
        int64_t lo, hi;
        block_range(x->rows, tp->shards, 0, &lo, &hi);
        strbuf_addf(out, "  table %s: %lld x %lld, the %s of ids '%s'; up to %lld rows on each of %d "
                         "shard%s\n",
                    x->name, (long long)x->rows, (long long)x->dim, x->mean ? "mean" : "sum", x->ids,
                    (long long)(hi - lo), tp->shards, tp->shards == 1 ? "" : "s");
    }
    double most = 0, mib = 1048576.0;
    for (int s = 0; s < t->stages; s++) {
        double b = stage_bytes(t, s, t->ranks_per_stage, tp->replicas);
        if (b > most) most = b;
    }
    strbuf_addf(out, "  memory: up to %.1f MiB per stage rank, %.1f MiB per PS shard%s (model.rank_memory_mb "
                     "counts these)\n",
                most / mib, shard_bytes(t, tp->shards, tp->ckpt_copy) / mib,
                tp->ckpt_copy ? " with its copy for checkpoint.async" : "");
    return 0;
}

int trainplan_groups(const struct plan *p, const void *spec, struct group **gen, int *n_gen,
                     struct diags *d)
{
    const struct train_spec *t = spec;
    int S = (int)t->stages, n = S + 1, R = 0, P = 0, T = (int)t->ranks_per_stage;
    fit(p, t, &R, &P);
    struct group *g = arena_alloc(p->arena, (size_t)n * sizeof *g);
    for (int s = 0; s < S; s++) {
        /* every stage holds the same cursor: a checkpoint resumes on any
         * number of stages */
        g[s] = (struct group){.name = arena_printf(p->arena, "stage%d", s),
                              .nranks = R * T, .file = t->stages_file,
                              .line = t->stages_line, .family = "stage"};
        if (T > 1 && t->lm_on)
            g[s].note = arena_printf(p->arena, "%d ranks per replica, each with 1/%d of every block's heads "
                                               "and MLP", T, T);
        else if (T > 1)
            g[s].note = arena_printf(p->arena, "%d rank%s per replica on a %d x 1 BLACS grid, "
                                               "blocks of %lld", T, T == 1 ? "" : "s", T,
                                     (long long)t->block);
    }
    g[S] = (struct group){.name = "ps", .nranks = P, .file = t->shards_file,
                          .line = t->shards_line};
    const struct ckpt_spec *k = &p->job->ckpt;
    bool copy = k->async && k->every > 0;
    int errors = check_memory(t, R, P, copy, d);
    if (copy && t->debug_grads) {
        diags_add(d, t->debug_file, t->debug_line,
                  "debug.grads writes its file with collective HDF5 calls in the first step, which "
                  "cannot run beside a background save (this HDF5 is not thread-safe): set "
                  "checkpoint.async = false with it");
        errors++;
    }
    for (int i = 0; i < p->job->n_groups; i++) {
        const struct group_spec *u = &p->job->groups[i];
        for (int k = 0; k < n; k++) {
            if (u->name && strcmp(u->name, g[k].name) == 0) {
                diags_add(d, u->file, u->line, "group name '%s' is taken by the model's %s group",
                          u->name, k == S ? "parameter-server" : "pipeline stage");
                errors++;
            }
        }
    }
    *gen = g;
    *n_gen = n;
    return errors ? cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "the model's groups are refused") : 0;
}

static void geometry(struct tp *x)
{
    const struct train_spec *t = x->t;
    struct train_plan *tp = arena_alloc(x->a, sizeof *tp);
    tp->spec = t;
    tp->stages = (int)t->stages;
    /* as trainplan_groups fit them: the stages, then the ps group */
    tp->ranks_per_stage = (int)t->ranks_per_stage;
    tp->block = (int)t->block;
    tp->replicas = x->p->groups[0].nranks / tp->ranks_per_stage;
    tp->shards = x->p->groups[tp->stages].nranks;
    tp->ckpt_copy = x->p->job->ckpt.async && x->p->job->ckpt.every > 0;
    tp->n_layers = t->n_layers;
    tp->stage_group = arena_alloc(x->a, (size_t)tp->stages * sizeof *tp->stage_group);
    tp->first_layer = arena_alloc(x->a, (size_t)(tp->stages + 1) * sizeof *tp->first_layer);
    tp->dims = arena_alloc(x->a, (size_t)(t->n_layers + 1) * sizeof *tp->dims);
    for (int s = 0; s < tp->stages; s++) {
        tp->stage_group[s] = s;
        tp->first_layer[s + 1] = tp->first_layer[s] + (int)t->balance[s];
    }
    tp->ps_group = tp->stages;
    tp->dims[0] = t->width0;
    for (int l = 0; l < t->n_layers; l++) tp->dims[l + 1] = t->layers[l].units;
    x->tp = tp;
}

/* ---- tasks ---------------------------------------------------------------------- */

static void plan_init(struct tp *x)
{
    struct task *t = add_task(x, PHASE_INIT, "ps_init", x->tp->ps_group);
    state_operands(x, add_op(x, t, "ps_init"), false, true, STATE_ALL);
    for (int s = 0; s < x->tp->stages; s++) {
        struct task *r = add_task(x, PHASE_INIT, arena_printf(x->a, "cursor%d", s), s);
        struct op_node *op = add_op(x, r, "fill");
        out(x, op, "cursor");
        struct pval *sh = param(op, "shape");
        sh->n = 1;
        sh->ints = arena_alloc(x->a, sizeof *sh->ints);
        sh->ints[0] = 2;
        struct pval *dt = param(op, "dtype");
        dt->s = "i64";
        dt->i = op_choice_index("f32|f64|i32|i64", "i64");
    }
}

static void plan_epoch(struct tp *x)
{
    int last = x->tp->stages - 1;
    struct task *ps = add_task(x, PHASE_EPOCH, "ps_serve", x->tp->ps_group);
    state_operands(x, add_op(x, ps, "ps_step"), true, true, STATE_ALL);
    for (int s = 0; s <= last; s++) {
        struct op_node *op = add_op(x, add_task(x, PHASE_EPOCH, arena_printf(x->a, "train%d", s), s),
                                    "train_step");
        in(x, op, "cursor");
        if (s == last) out(x, op, "train_loss");
    }
}

static void add_stop(struct tp *x, struct task *t, const char *blob, const char *metric,
                     const char *cmp, double value)
{
    struct op_node *op = add_op(x, t, "cmp");
    in(x, op, metric);
    out(x, op, blob);
    struct pval *c = param(op, "cmp");
    c->s = cmp;
    c->i = op_choice_index("lt|le|gt|ge|eq|ne", cmp);
    param(op, "value")->f = value;
    struct plan *p = x->p;
    p->stop_blobs = arena_grow(x->a, p->stop_blobs, (size_t)p->n_stop_blobs, sizeof *p->stop_blobs);
    p->stop_blobs[p->n_stop_blobs++] = (struct stop_blob){
        .group = p->groups[x->tp->stage_group[x->tp->stages - 1]].name, .blob = blob,
        .file = x->t->file, .line = x->t->line};
}

/* Two classes: evaluate also gives the held-out AUC. */
static bool binary(const struct train_spec *t)
{
    return !t->lm_on && t->loss == LOSS_SOFTMAX_CE && t->layers[t->n_layers - 1].units == 2;
}

static void plan_epoch_end(struct tp *x)
{
    const struct train_spec *t = x->t;
    int last = x->tp->stages - 1;
    bool eval = t->holdout > 0 || t->holdout_file;
    for (int s = 0; eval && s <= last; s++) {
        struct op_node *op = add_op(x, add_task(x, PHASE_EPOCH_END, arena_printf(x->a, "eval%d", s), s),
                                    "evaluate");
        if (s == last) {
            out(x, op, "loss");
            out(x, op, "accuracy");
            if (binary(t)) out(x, op, "auc");
        }
    }
    if (eval && t->n_tables) { /* the shards serve the tables' rows to the evaluation */
        struct op_node *op = add_op(x, add_task(x, PHASE_EPOCH_END, "ps_eval", x->tp->ps_group), "embed_serve");
        for (int e = 0; e < t->n_tables; e++) in(x, op, tname(x, e, ""));
    }
    struct task *rep = add_task(x, PHASE_EPOCH_END, "report", x->tp->stage_group[last]);
    if (t->stop_on_accuracy) add_stop(x, rep, "stop_accuracy", "accuracy", "ge", t->stop_accuracy);
    if (t->stop_on_loss) add_stop(x, rep, "stop_loss", "loss", "le", t->stop_loss);
    struct op_node *log = add_op(x, rep, "log");
    in(x, log, "train_loss");
    if (eval) {
        in(x, log, "loss");
        in(x, log, "accuracy");
        if (binary(t)) in(x, log, "auc");
    }
}

/* The dense parameters are downloaded onto trainer 0; the tables stay on
 * the shards, which stream them to trainer 0 a block of ids at a time
 * while it writes model.h5 (download.c), so no rank holds a table whole. */
static void plan_download_exit(struct tp *x)
{
    struct task *ps = add_task(x, PHASE_DOWNLOAD, "ps_download", x->tp->ps_group);
    state_operands(x, add_op(x, ps, "download"), true, false, DENSE_PARAMS);
    struct task *t0 = add_task(x, PHASE_DOWNLOAD, "download", x->tp->stage_group[0]);
    state_operands(x, add_op(x, t0, "download"), false, true, DENSE_PARAMS);
    struct task *save = add_task(x, PHASE_EXIT, "save_model", x->tp->stage_group[0]);
    state_operands(x, add_op(x, save, "save_model"), true, false, DENSE_PARAMS);
    if (x->t->n_tables) {
        struct task *tables = add_task(x, PHASE_EXIT, "ps_save_tables", x->tp->ps_group);
        state_operands(x, add_op(x, tables, "save_model"), true, false, TABLES);
    }
}

int trainplan_tasks(struct plan *p, const void *spec, int ext, void **part)
{
    struct tp x = {.p = p, .a = p->arena, .t = spec, .ext = ext + 1};
    geometry(&x);
    plan_init(&x);
    plan_epoch(&x);
    plan_epoch_end(&x);
    plan_download_exit(&x);
    for (int ph = 0; ph < N_PHASES; ph++) { /* generated tasks first, then the job's */
        struct phase *dst = &p->phases[ph];
        int n = x.gen[ph].n + dst->n;
        struct task *v = arena_alloc(p->arena, (size_t)(n + 1) * sizeof *v);
        if (x.gen[ph].n) memcpy(v, x.gen[ph].v, (size_t)x.gen[ph].n * sizeof *v);
        if (dst->n) memcpy(v + x.gen[ph].n, dst->v, (size_t)dst->n * sizeof *v);
        dst->v = v;
        dst->n = n;
    }
    *part = x.tp;
    return 0;
}
