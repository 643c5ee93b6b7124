/* The training extension's job spec and plan: what the model, data,
 * pipeline, replicas and ps sections of a job file say (config_train.c),
 * and the groups and layers they become (trainplan.c).  The extension
 * itself is train_ext (src/train/train_ext.c). */
#ifndef CAIRN_TRAIN_SPEC_H
#define CAIRN_TRAIN_SPEC_H

#include "cairn/ext.h"
#include "cairn/nn.h"
#include "cairn/optim.h"
#include "cairn/tensor.h"

#include <stdbool.h>
#include <stdint.h>

extern const struct ext_def train_ext;

/* ---- distributed training (the model, data, pipeline, replicas and ps
 * sections; see cairn-job(5)) ---- */

enum recompute { RECOMPUTE_ALWAYS, RECOMPUTE_EXCEPT_LAST, RECOMPUTE_NEVER };
enum schedule { SCHEDULE_GPIPE, SCHEDULE_1F1B };

/* An embedding table on the PS shards (model.embeddings): rows of dim
 * values, looked up by the ids in dataset ids, a sample's vectors added
 * (or averaged: mean) into dim columns of the first layer's input. */
enum { EMBED_MAX_TABLES = 32 };
struct embed_spec {
    const char *name, *ids;
    int64_t rows, dim;
    bool mean;
    const char *file;
    int line;
};

/* A layer is a pipeline unit: stages hold whole layers, and its
 * parameters are a run of the model's flat parameter list (model.h).  A
 * language model (model.lm) is the layers LM_EMBED (token and position
 * tables), `blocks` LM_BLOCK (lm.h) and LM_HEAD (final norm and the
 * projection to the vocabulary); a sample is a sequence of ctx tokens,
 * and units counts one sample's outputs (ctx d, or ctx vocab). */
enum layer_kind { LAYER_DENSE, LAYER_LM_EMBED, LAYER_LM_BLOCK, LAYER_LM_HEAD };
struct layer_spec {
    enum layer_kind kind;
    int64_t units;
    enum act act;
};

/* model.lm: a decoder-only transformer (cairn-job(5)). */
struct lm_spec {
    int64_t vocab, ctx, d, heads, mlp, blocks;
    double dropout; /* in training (lm.h); 0: none */
};

struct train_spec {
    const char *file; /* where the model section is, for messages */
    int line;
    /* the settings that size the groups, for messages about rank counts:
     * replicas or pipeline.stages (stage groups), ps.shards (ps group) */
    const char *stages_file, *shards_file;
    int stages_line, shards_line;
    /* model */
    int64_t inputs; /* dense features */
    struct embed_spec *tables;
    int n_tables;
    int64_t width0; /* the first layer's inputs: dense features, then each table's dim */
    struct layer_spec *layers;
    int n_layers;
    /* the dense parameters, k = 0 .. n_params-1 (tables are numbered after
     * them): layer l holds k = param0[l] .. param0[l+1]-1 */
    int n_params;
    int *param0;
    bool lm_on; /* the model is model.lm's */
    struct lm_spec lm;
    enum loss loss;
    enum dtype dtype;
    int64_t rank_memory_mb; /* the most model state one rank may hold; 0: no cap */
    const char *memory_file;
    int memory_line;
    /* data */
    const char *data_file, *features, *labels, *holdout_file;
    double holdout; /* fraction of the rows, taken from the end */
    int64_t batch, eval_batch;
    bool shuffle;
    int data_line;
    /* pipeline */
    int64_t stages, chunks;
    int64_t *balance; /* layers per stage */
    enum recompute recompute;
    enum schedule schedule;
    int64_t ranks_per_stage; /* T: the ranks of one stage of one replica (a BLACS grid) */
    int64_t block;           /* its block-cyclic block size */
    int64_t replicas, replicas_max; /* [MIN, MAX]: take the ranks given (trainplan.c) */
    /* ps */
    int64_t shards, shards_max;
    enum optimizer opt;
    double lr, weight_decay, momentum, beta1, beta2, eps;
    /* behaviour */
    bool abort_on_nan;
    const char *debug_grads; /* write the first step's gradients here */
    const char *debug_file;  /* where debug.grads is set */
    int debug_line;
    bool debug_gatherv;      /* time an MPI_Gatherv of the download's bytes too */
    bool stop_on_accuracy, stop_on_loss;
    double stop_accuracy, stop_loss;
};

/* A model job's shape: which groups are pipeline stages and PS shards, and
 * which layers each stage holds (planned by trainplan.c). */
struct train_plan {
    const struct train_spec *spec;
    int stages, replicas, shards;
    bool ckpt_copy;      /* background saves: the shards hold a copy of their state too */
    int ranks_per_stage; /* T: stage s of replica r is world ranks first(s) + r*T .. + T-1 */
    int block;           /* the stage grid's (1 x T) block size */
    int *stage_group;   /* plan group of each stage */
    int ps_group;
    int *first_layer;   /* stage s holds layers first_layer[s] .. first_layer[s+1]-1 */
    int64_t *dims;      /* dims[0] = inputs, dims[l+1] = units of layer l */
    int n_layers;
};

#endif
