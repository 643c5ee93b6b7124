/* The job spec: a job file, read and checked by config.c, in typed form.
 * Everything lives in the job's arena.  The planner (plan.c) turns a job
 * into a plan for a number of ranks. */
#ifndef CAIRN_JOB_H
#define CAIRN_JOB_H

#include "cairn/nn.h"
#include "cairn/op.h"

#include <stdbool.h>
#include <stdint.h>

struct arena;

/* One op application: out... = op(in..., params). */
struct op_node {
    const struct op_def *def;
    const char *file;
    int line;
    const char **in;
    int n_in;
    const char **out;
    int n_out;
    struct pval *pv; /* one per def->params entry */
    int *in_id;      /* blob ids in the task's group, set by analyze */
    int *out_id;
};

enum step_kind { STEP_OP, STEP_LOOP, STEP_PARALLEL, STEP_REPORT };

struct steplist {
    struct step *v;
    int n;
};

struct step {
    enum step_kind kind;
    const char *file;
    int line;
    struct op_node op;      /* STEP_OP */
    int64_t count;          /* STEP_LOOP: iterations, -1 = until only */
    const char *until;      /* STEP_LOOP: stop after an iteration leaving this blob true */
    int until_id;           /* set by analyze */
    int64_t every_ms;       /* STEP_REPORT */
    struct steplist body;   /* STEP_LOOP, STEP_REPORT */
    struct steplist *branches; /* STEP_PARALLEL */
    int n_branches;
    int *branch_lane; /* STEP_PARALLEL: communicator lane of each branch, set by analyze */
};

struct task {
    const char *name;
    const char *group;
    const char *file;
    int line;
    struct steplist steps;
    int group_id; /* set by the planner */
};

enum phase_id { PHASE_INIT, PHASE_EPOCH, PHASE_EPOCH_END, PHASE_DOWNLOAD, PHASE_EXIT, N_PHASES };
const char *phase_name(enum phase_id p); /* the job-file key */

struct phase {
    struct task *v;
    int n;
    int line; /* where the phase is declared (0 if absent) */
};

struct group_spec {
    const char *name;
    int64_t ranks;
    const char *file;
    int line;
};

struct stop_blob {
    const char *group;
    const char *blob;
    const char *file;
    int line;
};

struct stop_spec {
    struct stop_blob *blobs;
    int n_blobs;
    int64_t max_epochs; /* 0: no limit */
    const char *file;
    int line;
};

struct ckpt_spec {
    const char *dir;       /* NULL: RUN_DIR/ckpt */
    int64_t every;         /* epochs between checkpoints; 0: never */
    int64_t keep;          /* newest committed checkpoints kept; 0: all */
    bool abort_on_failure; /* on_failure = "abort" */
    const char *upload_to; /* NULL: no upload */
    int64_t max_resumes;   /* the same checkpoint resumed more often in a row stops the job */
};

struct slurm_spec {
    const char **signals; /* the signals that mean "save and stop" */
    int n_signals;
    bool requeue;         /* ask Slurm to requeue the job after a preemption checkpoint */
    double time_margin;   /* stop this long before the job's end time; 0: automatic */
};

/* ---- distributed training (the model, data, pipeline, replicas and ps
 * sections; see cairn-job(5)) ---- */

enum recompute { RECOMPUTE_ALWAYS, RECOMPUTE_EXCEPT_LAST, RECOMPUTE_NEVER };
enum schedule { SCHEDULE_GPIPE, SCHEDULE_1F1B };
enum optimizer { OPT_SGD, OPT_MOMENTUM, OPT_ADAM };

struct layer_spec {
    int64_t units;
    enum act act;
};

struct train_spec {
    const char *file; /* where the model section is, for messages */
    int line;
    /* the settings that size the groups, for messages about rank counts:
     * replicas or pipeline.stages (stage groups), ps.shards (ps group) */
    const char *stages_file, *shards_file;
    int stages_line, shards_line;
    /* model */
    int64_t inputs;
    struct layer_spec *layers;
    int n_layers;
    enum loss loss;
    enum dtype dtype;
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
    int64_t replicas;
    /* ps */
    int64_t shards;
    enum optimizer opt;
    double lr, weight_decay, momentum, beta1, beta2, eps;
    /* behaviour */
    bool abort_on_nan;
    const char *debug_grads; /* write the first step's gradients here */
    bool debug_gatherv;      /* time an MPI_Gatherv of the download's bytes too */
    bool stop_on_accuracy, stop_on_loss;
    double stop_accuracy, stop_loss;
};

struct job {
    struct arena *arena;
    const char *file; /* the job file as given */
    const char *name;
    int64_t seed;
    struct group_spec *groups;
    int n_groups;
    struct phase phases[N_PHASES];
    int64_t steps_per_epoch; /* 0: one pass over the training data (model jobs) */
    struct stop_spec stop;
    struct ckpt_spec ckpt;
    struct slurm_spec slurm;
    struct train_spec *train; /* NULL without a model section */
};

void job_destroy(struct job **job);

#endif
