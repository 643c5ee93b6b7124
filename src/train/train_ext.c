/* The training extension (include/cairn/ext.h): how a model job plugs into
 * the generic core.  Each hook forwards to the module that does the work:
 * config_train.c, trainplan.c, train.c. */
#include "cairn/train_spec.h"
#include "train_priv.h"

#include "cairn/error.h"
#include "cairn/runtime.h"
#include "cairn/strbuf.h"
#include "cairn/train.h"
#include "cairn/trainplan.h"

static const char *const keys[] = {"model", "data", "pipeline", "replicas", "ps", "on_nan",
                                   "debug", NULL};
static const char *const stop_keys[] = {"accuracy", "loss", NULL};

static bool has_stop(const void *spec)
{
    const struct train_spec *t = spec;
    return t->stop_on_accuracy || t->stop_on_loss;
}

/* Pipeline: a replica's stages, through their first ranks (colour: the
 * replica); stage: the T ranks of one stage of one replica (colour: the
 * first one's world rank); train: trainers and shards; download: trainer 0
 * and the shards. */
static void comm_split(const void *part, int group, int group_rank, int world_rank, int i,
                       int *color, int *key)
{
    const struct train_plan *tp = part;
    bool ps = group == tp->ps_group, trainer = group >= 0 && group < tp->stages;
    int T = tp->ranks_per_stage, member = trainer ? group_rank % T : 0;
    *color = -1;
    *key = world_rank;
    switch (i) {
    case TRAIN_COMM_PIPE:
        if (trainer && member == 0) *color = group_rank / T, *key = group;
        break;
    case TRAIN_COMM_STAGE:
        if (trainer) *color = world_rank - member, *key = member;
        break;
    case TRAIN_COMM_TRAIN:
        if (trainer || ps) *color = 0;
        break;
    case TRAIN_COMM_DL:
        if (ps || world_rank == 0) *color = 0;
        break;
    case TRAIN_COMM_EMBED: /* the readers: member 0 of each replica's first stage */
        if (tp->spec->n_tables && (ps || (group == tp->stage_group[0] && member == 0)))
            *color = 0, *key = ps ? tp->replicas + group_rank : group_rank / T;
        break;
    }
}

static int create(struct runtime *rt, const void *part, const MPI_Comm *comms, void **state)
{
    struct trainer *t = NULL;
    int rc = trainer_create(rt, part, comms, &t);
    *state = t;
    return rc;
}

static void destroy(void **state)
{
    struct trainer *t = *state;
    trainer_destroy(&t);
    *state = NULL;
}

static int64_t steps_per_epoch(const void *state) { return trainer_steps_per_epoch(state); }
static int64_t epoch_samples(const void *state) { return trainer_epoch_samples(state); }

static int epoch_stats(void *state, double steps_seconds, struct strbuf *fields,
                       struct strbuf *text)
{
    int64_t samples = 0;
    double pipe = 0, shard = 0;
    int rc = trainer_epoch_stats(state, &samples, &pipe, &shard);
    if (rc) return rc;
    strbuf_addf(fields, ",\"samples\":%lld,\"train_seconds\":%.6f,\"pipe_seconds\":%.6f,\"shard_bytes\":%.0f",
                (long long)samples, steps_seconds, pipe, shard);
    strbuf_addf(text, " (%lld samples, %.0f samples/s in the steps)", (long long)samples,
                steps_seconds > 0 ? (double)samples / steps_seconds : 0);
    return 0;
}

static int quiesce(void *state) { return trainer_quiesce(state); }

/* train_ops.c (generated for model jobs) */
extern const struct op_def op_ps_init, op_ps_step, op_train_step, op_evaluate, op_download,
    op_save_model, op_embed_serve;
static const struct op_def *const ops[] = {&op_ps_init,  &op_ps_step,  &op_train_step,  &op_evaluate,
                                           &op_download, &op_save_model, &op_embed_serve, NULL};

static const struct ext_command commands[] = {
    {"eval", "  eval MODEL.h5 DATA.h5     a trained model's loss and accuracy on data\n", NULL, train_cmd_eval},
    {"predict", "  predict MODEL.h5 DATA.h5 -o OUT.h5   its outputs for every row\n", NULL, train_cmd_predict},
    {"generate", "  generate MODEL.h5 --prompt TEXT --tokens N   text from a language model\n", NULL,
     train_cmd_generate},
    {"grads", "  grads JOB.cfg   a model job's first gradients, computed in one process\n", NULL, train_cmd_grads},
    {"data balance", train_balance_synopsis, train_balance_about, train_cmd_balance},
    {NULL, NULL, NULL, NULL},
};

const struct ext_def train_ext = {
    .name = "training",
    .ops = ops,
    .commands = commands,
    .keys = keys,
    .stop_keys = stop_keys,
    .configure = train_configure,
    .has_stop = has_stop,
    .plan_groups = trainplan_groups,
    .plan_tasks = trainplan_tasks,
    .describe = trainplan_describe,
    .n_comms = TRAIN_N_COMMS,
    .comm_split = comm_split,
    .create = create,
    .destroy = destroy,
    .steps_per_epoch = steps_per_epoch,
    .epoch_samples = epoch_samples,
    .epoch_stats = epoch_stats,
    .quiesce = quiesce,
};
