/* The training sections of a job file: model, data, pipeline, replicas,
 * ps, on_nan, debug, and stop.accuracy / stop.loss (cairn-job(5)).  Part
 * of the config module: every key is read and checked here once. */
#include "cairn/arena.h"
#include "cairn/ext.h"
#include "cairn/job.h"
#include "cairn/lm.h"
#include "cairn/model.h"
#include "cairn/train_spec.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* One of a fixed set of words; returns its index. */
static int cfg_choice(struct cfg *c, const config_setting_t *g, const char *key,
                      const char *const *words, int dflt, const char *what)
{
    const char *v = cfg_str(c, g, key, false, NULL);
    if (!v) return dflt;
    for (int i = 0; words[i]; i++)
        if (strcmp(v, words[i]) == 0) return i;
    char list[256] = "";
    for (int i = 0; words[i]; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "",
                 words[i]);
    cfg_err(c, config_setting_get_member(g, key), "%s must be one of %s, not \"%s\"", what, list, v);
    return dflt;
}

_Static_assert(2 * (int)NN_MAX_LAYERS <= (int)MODEL_MAX_PARAMS, "a model's parameters beyond the PS's tags");
_Static_assert((int)LM_N_PARAMS * ((int)NN_MAX_LAYERS - 2) + 5 <= (int)MODEL_MAX_PARAMS, "a language model's parameters beyond the PS's tags");
_Static_assert((int)LM_N_PARAMS <= (int)MODEL_LAYER_MAX_PARAMS, "a block's parameters beyond a layer's");

static void parse_layers(struct cfg *c, const config_setting_t *m, struct train_spec *t)
{
    const config_setting_t *ls = config_setting_get_member(m, "layers");
    if (!ls) {
        cfg_err(c, m, "model needs 'layers' ( { units = N; activation = \"relu\"; }, ... )");
        return;
    }
    if (config_setting_type(ls) != CONFIG_TYPE_LIST || config_setting_length(ls) < 1) {
        cfg_err(c, ls, "'layers' must be a non-empty list of { units = N; activation = ...; }");
        return;
    }
    if (config_setting_length(ls) > NN_MAX_LAYERS) {
        cfg_err(c, ls, "the model has %d layers; cairn supports up to %d", config_setting_length(ls),
                (int)NN_MAX_LAYERS);
        return;
    }
    static const char *const keys[] = {"units", "activation", NULL};
    t->n_layers = config_setting_length(ls);
    t->layers = arena_alloc(cfg_arena(c), (size_t)t->n_layers * sizeof *t->layers);
    t->param0 = arena_alloc(cfg_arena(c), (size_t)(t->n_layers + 1) * sizeof *t->param0);
    for (int i = 0; i < t->n_layers; i++) {
        const config_setting_t *l = config_setting_get_elem(ls, (unsigned)i);
        if (config_setting_type(l) != CONFIG_TYPE_GROUP) {
            cfg_err(c, l, "a layer must be { units = N; activation = \"relu\"; }");
            continue;
        }
        cfg_keys(c, l, "a layer", keys);
        t->layers[i].kind = LAYER_DENSE;
        t->layers[i].units = cfg_int(c, l, "units", true, 1, 1, 1 << 24);
        t->layers[i].act = (enum act)cfg_choice(c, l, "activation", act_names, ACT_IDENTITY, "activation");
        int64_t in = i ? t->layers[i - 1].units : t->width0, w = in * t->layers[i].units;
        if (w > INT_MAX)
            cfg_err(c, l, "layer %d's weights have %lld x %lld = %lld elements, more than the "
                          "%d that one MPI call carries (cairn moves a parameter with one call); "
                          "use narrower layers",
                    i, (long long)in, (long long)t->layers[i].units, (long long)w, INT_MAX);
    }
    for (int i = 0; i < t->n_layers; i++) t->param0[i + 1] = t->param0[i] + model_layer_params(t->layers[i].kind);
    t->n_params = t->param0[t->n_layers];
}

/* Activations cross between stages as one message per micro-batch and
 * evaluation batch: rows x width elements, an int in MPI. */
static void check_messages(struct cfg *c, const config_setting_t *root, const struct train_spec *t)
{
    int64_t width = t->width0, per = (t->batch + t->chunks - 1) / t->chunks;
    for (int l = 0; l < t->n_layers; l++)
        if (t->layers[l].units > width) width = t->layers[l].units;
    const config_setting_t *d = config_setting_get_member(root, "data");
    if (per * width > INT_MAX) {
        int64_t chunks = (t->batch + INT_MAX / width - 1) / (INT_MAX / width);
        cfg_err(c, d, "micro-batches of %lld samples of up to %lld features make messages of %lld "
                      "elements, more than the %d one MPI call carries: use pipeline.chunks >= %lld "
                      "or a smaller data.batch",
                (long long)per, (long long)width, (long long)(per * width), INT_MAX, (long long)chunks);
    }
    if (t->eval_batch * width > INT_MAX)
        cfg_err(c, d, "evaluation batches of %lld samples of up to %lld features make messages of "
                      "%lld elements, more than the %d one MPI call carries: use data.eval_batch <= %lld",
                (long long)t->eval_batch, (long long)width, (long long)(t->eval_batch * width), INT_MAX,
                (long long)(INT_MAX / width));
}

static bool name_ok(const char *s)
{
    if (!*s || strlen(s) > 32) return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

static void parse_table(struct cfg *c, const config_setting_t *e, struct train_spec *t, int i)
{
    static const char *const keys[] = {"name", "rows", "dim", "ids", "combine", NULL};
    static const char *const combines[] = {"sum", "mean", NULL};
    struct embed_spec *x = &t->tables[i];
    cfg_keys(c, e, "an embedding table", keys);
    cfg_locate(c, e, &x->file, &x->line);
    x->name = cfg_str(c, e, "name", true, "");
    x->ids = cfg_str(c, e, "ids", true, "");
    x->rows = cfg_int(c, e, "rows", true, 1, 1, INT64_C(1) << 40);
    x->dim = cfg_int(c, e, "dim", true, 1, 1, 4096);
    x->mean = cfg_choice(c, e, "combine", combines, 0, "combine") == 1;
    /* (a missing key has its error: these judge a value that is there) */
    if (x->name && config_setting_get_member(e, "name") && !name_ok(x->name))
        cfg_err(c, config_setting_get_member(e, "name"),
                "table name \"%s\" must be 1 to 32 letters, digits or '_'", x->name);
    if (x->ids && !*x->ids && config_setting_get_member(e, "ids"))
        cfg_err(c, config_setting_get_member(e, "ids"), "'ids' names no dataset");
    for (int j = 0; j < i && x->name; j++)
        if (t->tables[j].name && strcmp(t->tables[j].name, x->name) == 0)
            cfg_err(c, e, "table '%s' is declared twice (first at line %d)", x->name, t->tables[j].line);
    /* the bound the rest of the state keeps (a layer's W, model.inputs);
     * tables are not yet tested beyond it */
    if (x->rows * x->dim > INT_MAX)
        cfg_err(c, e, "table '%s' has %lld x %lld = %lld values, more than the %d that cairn "
                      "takes in one table",
                x->name ? x->name : "?", (long long)x->rows, (long long)x->dim,
                (long long)(x->rows * x->dim), INT_MAX);
    t->width0 += x->dim;
}

/* model.embeddings: ( { name = ...; rows = R; dim = D; ids = "dataset"; combine = "sum"; }, ... ) */
static void parse_tables(struct cfg *c, const config_setting_t *m, struct train_spec *t)
{
    const config_setting_t *es = config_setting_get_member(m, "embeddings");
    t->width0 = t->inputs;
    if (!es) return;
    if (config_setting_type(es) != CONFIG_TYPE_LIST || config_setting_length(es) < 1 ||
        config_setting_length(es) > EMBED_MAX_TABLES) {
        cfg_err(c, es, "'embeddings' must be a list of 1 to %d { name = ...; rows = R; dim = D; ids = "
                       "\"dataset\"; }", (int)EMBED_MAX_TABLES);
        return;
    }
    t->n_tables = config_setting_length(es);
    t->tables = arena_alloc(cfg_arena(c), (size_t)t->n_tables * sizeof *t->tables);
    for (int i = 0; i < t->n_tables; i++) {
        const config_setting_t *e = config_setting_get_elem(es, (unsigned)i);
        if (config_setting_type(e) != CONFIG_TYPE_GROUP)
            cfg_err(c, e, "an embedding table must be { name = ...; rows = R; dim = D; ids = \"dataset\"; }");
        else
            parse_table(c, e, t, i);
    }
    if (t->width0 > 1 << 24)
        cfg_err(c, es, "the first layer would take %lld inputs; cairn takes up to %d", (long long)t->width0, 1 << 24);
}

/* The layers of model.lm (train_spec.h). */
static void lm_layers(struct cfg *c, struct train_spec *t)
{
    const struct lm_spec *x = &t->lm;
    t->n_layers = (int)x->blocks + 2;
    t->layers = arena_alloc(cfg_arena(c), (size_t)t->n_layers * sizeof *t->layers);
    t->param0 = arena_alloc(cfg_arena(c), (size_t)(t->n_layers + 1) * sizeof *t->param0);
    for (int l = 0; l < t->n_layers; l++) {
        enum layer_kind k = l == 0 ? LAYER_LM_EMBED : l == t->n_layers - 1 ? LAYER_LM_HEAD : LAYER_LM_BLOCK;
        t->layers[l] = (struct layer_spec){.kind = k, .units = x->ctx * (k == LAYER_LM_HEAD ? x->vocab : x->d),
                                           .act = ACT_IDENTITY};
        t->param0[l + 1] = t->param0[l] + model_layer_params(k);
    }
    t->n_params = t->param0[t->n_layers];
}

/* model.lm = { vocab = V; context = C; width = D; heads = H; blocks = B; mlp = M; } */
static void parse_lm(struct cfg *c, const config_setting_t *m, const config_setting_t *g, struct train_spec *t)
{
    static const char *const keys[] = {"vocab", "context", "width", "heads", "blocks", "mlp", "dropout", NULL};
    static const char *const not_with[] = {"inputs", "embeddings", "layers", "loss", NULL};
    if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
        cfg_err(c, g, "model.lm must be { vocab = V; context = C; width = D; heads = H; blocks = B; }");
        return;
    }
    for (int i = 0; not_with[i]; i++)
        if (config_setting_get_member(m, not_with[i]))
            cfg_err(c, config_setting_get_member(m, not_with[i]),
                    "model.%s does not go with model.lm (a language model has its own layers, inputs "
                    "and loss)", not_with[i]);
    cfg_keys(c, g, "model.lm", keys);
    struct lm_spec *x = &t->lm;
    x->vocab = cfg_int(c, g, "vocab", true, 256, 2, 1 << 24);
    x->ctx = cfg_int(c, g, "context", true, 64, 1, 1 << 16);
    x->d = cfg_int(c, g, "width", true, 64, 1, 1 << 16);
    x->heads = cfg_int(c, g, "heads", false, 1, 1, 1 << 12);
    x->blocks = cfg_int(c, g, "blocks", true, 1, 1, NN_MAX_LAYERS - 2);
    x->mlp = cfg_int(c, g, "mlp", false, 4 * x->d, 1, 1 << 20);
    x->dropout = cfg_num(c, g, "dropout", 0, 0, 0.9, NULL);
    if (x->d % x->heads)
        cfg_err(c, config_setting_get_member(g, "heads"), "model.lm: heads = %lld does not divide width = %lld",
                (long long)x->heads, (long long)x->d);
    struct lm_shape s = {.ctx = x->ctx, .d = x->d, .heads = x->heads, .mlp = x->mlp};
    if (x->d % x->heads == 0 && !lm_shape_ok(&s))
        cfg_err(c, g, "model.lm: context %lld, width %lld and mlp %lld make products beyond what one "
                      "BLAS call takes", (long long)x->ctx, (long long)x->d, (long long)x->mlp);
    if (x->vocab * x->d > INT_MAX || x->ctx * x->vocab > INT_MAX)
        cfg_err(c, g, "model.lm: vocab %lld is too large for one MPI call per parameter (vocab x width "
                      "and context x vocab must be at most %d)", (long long)x->vocab, INT_MAX);
    t->lm_on = true;
    t->inputs = t->width0 = x->ctx;
    t->loss = LOSS_SOFTMAX_CE;
    lm_layers(c, t);
}

static void parse_model(struct cfg *c, const config_setting_t *m, struct train_spec *t)
{
    static const char *const keys[] = {"inputs", "embeddings", "layers", "loss", "dtype", "rank_memory_mb", "lm", NULL};
    static const char *const dtypes[] = {"f32", "f64", NULL};
    cfg_keys(c, m, "model", keys);
    cfg_locate(c, m, &t->file, &t->line);
    const config_setting_t *lm = config_setting_get_member(m, "lm");
    if (lm) {
        parse_lm(c, m, lm, t);
    } else {
        t->inputs = cfg_int(c, m, "inputs", true, 1, 1, 1 << 24);
        parse_tables(c, m, t);
        parse_layers(c, m, t);
        t->loss = (enum loss)cfg_choice(c, m, "loss", loss_names, LOSS_SOFTMAX_CE, "model.loss");
    }
    t->dtype = cfg_choice(c, m, "dtype", dtypes, 0, "model.dtype") == 1 ? DT_F64 : DT_F32;
    t->rank_memory_mb = cfg_int(c, m, "rank_memory_mb", false, 0, 0, 1 << 30);
    t->memory_file = t->file;
    t->memory_line = t->line;
    if (config_setting_get_member(m, "rank_memory_mb"))
        cfg_locate(c, config_setting_get_member(m, "rank_memory_mb"), &t->memory_file,
                   &t->memory_line);
}

static void parse_data(struct cfg *c, const config_setting_t *root, struct train_spec *t)
{
    const config_setting_t *d = cfg_section(c, root, "data", "{ file = ...; features = ...; }");
    if (!d) {
        if (!config_setting_get_member(root, "data"))
            cfg_err(c, config_setting_get_member(root, "model"),
                    "a model needs a 'data' section { file = ...; features = ...; labels = ...; }");
        return;
    }
    static const char *const keys[] = {"file",  "features",   "labels",  "holdout", "holdout_file",
                                       "batch", "eval_batch", "shuffle", NULL};
    cfg_keys(c, d, "data", keys);
    int dummy;
    cfg_locate(c, d, &(const char *){NULL}, &dummy);
    t->data_line = dummy;
    t->data_file = cfg_str(c, d, "file", true, NULL);
    t->features = cfg_str(c, d, "features", false, "features");
    t->labels = cfg_str(c, d, "labels", false, "labels");
    t->holdout_file = cfg_str(c, d, "holdout_file", false, NULL);
    t->holdout = cfg_num(c, d, "holdout", 0, 0, 0.99, NULL);
    if (t->holdout_file && t->holdout > 0)
        cfg_err(c, config_setting_get_member(d, "holdout"),
                "give 'holdout' (a fraction of the rows) or 'holdout_file', not both");
    t->batch = cfg_int(c, d, "batch", false, 64, 1, 1 << 24);
    t->eval_batch = cfg_int(c, d, "eval_batch", false, t->batch, 1, 1 << 24);
    t->shuffle = cfg_bool(c, d, "shuffle", true);
}

/* What pipeline.balance counts: a language model's blocks (its
 * embeddings go with the first stage, its head with the last), or layers. */
static int balance_units(const struct train_spec *t) { return t->lm_on ? (int)t->lm.blocks : t->n_layers; }
static const char *unit_word(const struct train_spec *t, int64_t n)
{
    return t->lm_on ? (n == 1 ? "block" : "blocks") : (n == 1 ? "layer" : "layers");
}

/* Layers per stage: given, or as even as possible (earlier stages one more).
 * After a reported problem with pipeline.stages, the balance is not held
 * against the stand-in count: each problem is reported once. */
static void balance_units_given(struct cfg *c, const config_setting_t *p, struct train_spec *t,
                                bool stages_bad)
{
    int units = balance_units(t);
    const config_setting_t *b = p ? config_setting_get_member(p, "balance") : NULL;
    if (!b || stages_bad) {
        for (int64_t s = 0; s < t->stages; s++)
            t->balance[s] = units / t->stages + (s < units % t->stages);
        return;
    }
    int type = config_setting_type(b), n = config_setting_length(b);
    if (type != CONFIG_TYPE_ARRAY && type != CONFIG_TYPE_LIST) {
        cfg_err(c, b, "'balance' must be an array of %s counts like [2, 1], not %s",
                t->lm_on ? "block" : "layer", cfg_type_name(b));
        return;
    }
    if (n != t->stages) {
        cfg_err(c, b, "balance has %d entr%s but pipeline.stages is %lld", n, n == 1 ? "y" : "ies",
                (long long)t->stages);
        return;
    }
    int64_t sum = 0;
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(b, (unsigned)i);
        int64_t v = cfg_is_int(e) ? config_setting_get_int64(e) : 0;
        if (!cfg_is_int(e) || v < 1) {
            cfg_err(c, b, "balance entry %d must be a %s count >= 1, got %s", i, t->lm_on ? "block" : "layer",
                    cfg_is_int(e) ? (snprintf(list, sizeof list, "%lld", (long long)v), list)
                                  : cfg_type_name(e));
            return;
        }
        t->balance[i] = v;
        sum += v;
    }
    if (sum != units) {
        for (int i = 0; i < n; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%lld", i ? ", " : "",
                     (long long)t->balance[i]);
        cfg_err(c, b, "balance [%s] sums to %lld but the model has %d %s", list,
                (long long)sum, units, unit_word(t, 2));
    }
}

static void parse_balance(struct cfg *c, const config_setting_t *p, struct train_spec *t,
                          bool stages_bad)
{
    t->balance = arena_alloc(cfg_arena(c), (size_t)(t->stages + 1) * sizeof *t->balance);
    balance_units_given(c, p, t, stages_bad);
    if (t->lm_on) { /* the layers: the embeddings and the head join the end stages */
        t->balance[0]++;
        t->balance[t->stages - 1]++;
    }
}

static void parse_pipeline(struct cfg *c, const config_setting_t *root, struct train_spec *t)
{
    static const char *const keys[] = {"stages",   "balance",        "chunks", "checkpoint",
                                       "schedule", "ranks_per_stage", "block",  NULL};
    static const char *const modes[] = {"always", "except_last", "never", NULL};
    static const char *const scheds[] = {"gpipe", "1f1b", NULL};
    const config_setting_t *p = cfg_section(c, root, "pipeline", "{ stages = N; chunks = M; }");
    bool stages_bad = false;
    t->stages = 1;
    t->chunks = 1;
    t->recompute = RECOMPUTE_EXCEPT_LAST;
    t->schedule = SCHEDULE_GPIPE;
    t->ranks_per_stage = 1;
    t->block = 64;
    if (p) {
        cfg_keys(c, p, "pipeline", keys);
        int before = cfg_errors(c);
        t->stages = cfg_int(c, p, "stages", false, 1, 1, 1 << 16);
        stages_bad = cfg_errors(c) > before;
        t->chunks = cfg_int(c, p, "chunks", false, 1, 1, 1 << 20);
        t->recompute = (enum recompute)cfg_choice(c, p, "checkpoint", modes, RECOMPUTE_EXCEPT_LAST,
                                                  "pipeline.checkpoint");
        t->schedule = (enum schedule)cfg_choice(c, p, "schedule", scheds, SCHEDULE_GPIPE,
                                                "pipeline.schedule");
        t->ranks_per_stage = cfg_int(c, p, "ranks_per_stage", false, 1, 1, 1 << 10);
        t->block = cfg_int(c, p, "block", false, 64, 1, 1 << 16);
    }
    int units = balance_units(t);
    if (units && t->stages > units) {
        cfg_err(c, config_setting_get_member(p, "stages"),
                "pipeline.stages = %lld but the model has %d %s: every stage needs at least one",
                (long long)t->stages, units, unit_word(t, units));
        t->stages = units;
        stages_bad = true;
    }
    /* a language model's stage splits each block's heads and MLP over its ranks */
    if (t->lm_on && t->ranks_per_stage > 1 &&
        (t->lm.heads % t->ranks_per_stage || t->lm.mlp % t->ranks_per_stage))
        cfg_err(c, config_setting_get_member(p, "ranks_per_stage"),
                "pipeline.ranks_per_stage = %lld must divide model.lm's heads (%lld) and mlp (%lld): a "
                "language model's stage splits them over its ranks", (long long)t->ranks_per_stage,
                (long long)t->lm.heads, (long long)t->lm.mlp);
    parse_balance(c, p, t, stages_bad);
}

static void parse_ps(struct cfg *c, const config_setting_t *root, struct train_spec *t)
{
    static const char *const keys[] = {"shards",   "optimizer", "lr",  "weight_decay",
                                       "momentum", "beta1",     "beta2", "eps", NULL};
    static const char *const opts[] = {"sgd", "momentum", "adam", "adagrad", NULL}; /* enum optimizer */
    const config_setting_t *p = cfg_section(c, root, "ps", "{ shards = N; optimizer = ...; }");
    t->shards = t->shards_max = 1;
    t->opt = OPT_SGD;
    t->lr = 0.01;
    t->momentum = 0.9;
    t->beta1 = 0.9;
    t->beta2 = 0.999;
    t->eps = 1e-8;
    if (!p) return;
    cfg_keys(c, p, "ps", keys);
    cfg_int_range(c, p, "shards", 1, 1, 1 << 16, &t->shards, &t->shards_max);
    t->opt = (enum optimizer)cfg_choice(c, p, "optimizer", opts, OPT_SGD, "ps.optimizer");
    t->lr = cfg_num(c, p, "lr", 0.01, 0, 1e6, NULL);
    t->weight_decay = cfg_num(c, p, "weight_decay", 0, 0, 1e6, NULL);
    t->momentum = cfg_num(c, p, "momentum", 0.9, 0, 0.999999, NULL);
    t->beta1 = cfg_num(c, p, "beta1", 0.9, 0, 0.999999, NULL);
    t->beta2 = cfg_num(c, p, "beta2", 0.999, 0, 0.999999999, NULL);
    t->eps = cfg_num(c, p, "eps", 1e-8, 1e-300, 1, NULL);
}

/* The micro-batches' gradients are added over one tree whose top the
 * replicas share (pipeline.c, ps.c): so that the model is the same bits
 * for any number of replicas, a replica count is a power of two that
 * divides pipeline.chunks.  chunks defaults to the largest power of two
 * up to the most replicas the job allows and data.batch; a range keeps
 * the counts that qualify. */
static bool replicas_fit(int64_t r, int64_t chunks) { return (r & (r - 1)) == 0 && chunks % r == 0; }

static void check_replicas(struct cfg *c, const config_setting_t *root, struct train_spec *t)
{
    const config_setting_t *p = config_setting_get_member(root, "pipeline");
    const config_setting_t *r = config_setting_get_member(root, "replicas");
    bool given = p && config_setting_is_group(p) && config_setting_get_member(p, "chunks");
    if (!given) { /* no more micro-batches than samples */
        t->chunks = 1;
        while (t->chunks * 2 <= t->replicas_max && t->chunks * 2 <= t->batch) t->chunks *= 2;
    }
    int64_t lo = t->replicas, hi = t->replicas_max;
    while (lo <= hi && !replicas_fit(lo, t->chunks)) lo++;
    while (hi >= lo && !replicas_fit(hi, t->chunks)) hi--;
    if (lo <= hi) {
        t->replicas = lo;
        t->replicas_max = hi;
        return;
    }
    char ok[128] = "";
    for (int64_t n = 1; n <= t->chunks && strlen(ok) < 100; n *= 2)
        if (t->chunks % n == 0) snprintf(ok + strlen(ok), sizeof ok - strlen(ok), "%s%lld", *ok ? ", " : "", (long long)n);
    char what[96];
    if (t->replicas == t->replicas_max)
        snprintf(what, sizeof what, "replicas = %lld is not a", (long long)t->replicas);
    else
        snprintf(what, sizeof what, "replicas = [%lld, %lld] holds no", (long long)t->replicas,
                 (long long)t->replicas_max);
    cfg_err(c, r ? r : root,
            "%s power of two that divides pipeline.chunks = %lld%s: the micro-batches' gradients are "
            "added over one fixed tree, so that the model is the same bits for any number of "
            "replicas; use %s%s",
            what, (long long)t->chunks,
            given ? "" : " (its default: the largest power of two up to replicas and data.batch)", ok,
            given || (t->replicas_max & (t->replicas_max - 1)) ? "" : ", or set pipeline.chunks");
}

/* stop.accuracy / stop.loss need a model and a held-out split. */
static void parse_stop_metrics(struct cfg *c, const config_setting_t *root, struct train_spec *t)
{
    const config_setting_t *s = config_setting_get_member(root, "stop");
    if (!s || config_setting_type(s) != CONFIG_TYPE_GROUP) return;
    t->stop_accuracy = cfg_num(c, s, "accuracy", 0, 0, 1, &t->stop_on_accuracy);
    t->stop_loss = cfg_num(c, s, "loss", 0, 0, 1e300, &t->stop_on_loss);
    bool held = t->holdout > 0 || t->holdout_file;
    if ((t->stop_on_accuracy || t->stop_on_loss) && !held)
        cfg_err(c, s, "stop.%s needs a held-out split: give data.holdout or data.holdout_file",
                t->stop_on_accuracy ? "accuracy" : "loss");
}

/* Sections that mean nothing without a model. */
static void reject_orphans(struct cfg *c, const config_setting_t *root)
{
    static const char *const keys[] = {"data", "pipeline", "replicas", "ps", "on_nan", "debug", NULL};
    for (const char *const *k = keys; *k; k++)
        if (config_setting_get_member(root, *k))
            cfg_err(c, config_setting_get_member(root, *k), "'%s' needs a 'model' section", *k);
    const config_setting_t *s = config_setting_get_member(root, "stop");
    if (s && config_setting_type(s) == CONFIG_TYPE_GROUP)
        for (const char *const *k = (const char *const[]){"accuracy", "loss", NULL}; *k; k++)
            if (config_setting_get_member(s, *k))
                cfg_err(c, config_setting_get_member(s, *k), "stop.%s needs a 'model' section", *k);
}

/* Where `key` of section `sec` is set, or else the section, or else the
 * model section. */
static void locate_key(struct cfg *c, const struct train_spec *t, const config_setting_t *root,
                       const char *sec, const char *key, const char **file, int *line)
{
    const config_setting_t *g = sec ? config_setting_get_member(root, sec) : root;
    const config_setting_t *k = g && config_setting_is_group(g) ? config_setting_get_member(g, key) : NULL;
    *file = t->file;
    *line = t->line;
    if (k || g != root) cfg_locate(c, k ? k : g, file, line);
}

static void locate_sizes(struct cfg *c, const config_setting_t *root, struct train_spec *t)
{
    if (t->replicas_max > 1 && config_setting_get_member(root, "replicas"))
        locate_key(c, t, root, NULL, "replicas", &t->stages_file, &t->stages_line);
    else if (config_setting_get_member(root, "pipeline"))
        locate_key(c, t, root, "pipeline", "stages", &t->stages_file, &t->stages_line);
    else
        locate_key(c, t, root, NULL, "model", &t->stages_file, &t->stages_line);
    if (config_setting_get_member(root, "ps"))
        locate_key(c, t, root, "ps", "shards", &t->shards_file, &t->shards_line);
    else
        locate_key(c, t, root, NULL, "model", &t->shards_file, &t->shards_line);
}

void train_configure(struct cfg *c, const config_setting_t *root, void **spec)
{
    const config_setting_t *m = cfg_section(c, root, "model", "{ inputs = N; layers = (...); }");
    if (!m) {
        if (!config_setting_get_member(root, "model")) reject_orphans(c, root);
        return;
    }
    struct train_spec *t = arena_alloc(cfg_arena(c), sizeof *t);
    *spec = t;
    parse_model(c, m, t);
    parse_data(c, root, t);
    parse_pipeline(c, root, t);
    parse_ps(c, root, t);
    cfg_int_range(c, root, "replicas", 1, 1, 1 << 16, &t->replicas, &t->replicas_max);
    check_replicas(c, root, t);
    locate_sizes(c, root, t);
    if (t->layers && t->batch > 0 && t->chunks > 0 && config_setting_get_member(root, "data"))
        check_messages(c, root, t);
    static const char *const nan[] = {"abort", "ignore", NULL};
    t->abort_on_nan = cfg_choice(c, root, "on_nan", nan, 0, "on_nan") == 0;
    const config_setting_t *dbg = cfg_section(c, root, "debug", "{ grads = \"FILE.h5\"; }");
    if (dbg) {
        static const char *const keys[] = {"grads", "compare_gatherv", NULL};
        cfg_keys(c, dbg, "debug", keys);
        t->debug_grads = cfg_str(c, dbg, "grads", false, NULL);
        if (t->debug_grads && !*t->debug_grads)
            cfg_err(c, config_setting_get_member(dbg, "grads"), "debug.grads must name a file");
        if (t->debug_grads)
            cfg_locate(c, config_setting_get_member(dbg, "grads"), &t->debug_file, &t->debug_line);
        t->debug_gatherv = cfg_bool(c, dbg, "compare_gatherv", false);
    }
    parse_stop_metrics(c, root, t);
}
