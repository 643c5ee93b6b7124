/* Private to the training modules (train.c, pipeline.c, grid.c, ps.c,
 * download.c): one rank's training context.  A rank is a member of a
 * pipeline stage of one replica (T members each), a PS shard, or neither. */
#ifndef CAIRN_TRAIN_PRIV_H
#define CAIRN_TRAIN_PRIV_H

#include "cairn/job.h"
#include "cairn/model.h"
#include "cairn/nn.h"
#include "cairn/tensor.h"
#include "cairn/train.h"
#include "cairn/train_spec.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

struct runtime;
struct train_plan;
struct optim_args;
struct emb;

/* The extension's commands (cmd_infer.c, cmd_train.c; train_ext.c lists them). */
int train_cmd_eval(int argc, char **argv);
int train_cmd_predict(int argc, char **argv);
int train_cmd_generate(int argc, char **argv);
int train_cmd_grads(int argc, char **argv);
int train_cmd_balance(int argc, char **argv);
extern const char train_balance_synopsis[], train_balance_about[];

enum role { ROLE_NONE, ROLE_STAGE, ROLE_PS };

/* The samples one step (or one evaluation batch) works on, for this rank. */
struct batch {
    int64_t global; /* samples in the whole mini-batch (every replica) */
    int64_t n;      /* this replica's share */
    int64_t *idx;   /* its sample rows (n) */
    /* a training step's dropout key: the job's seed, the pass over the
     * data, the mini-batch's first sample's place in it */
    uint64_t seed;
    int64_t pass, pos;
    struct tensor x; /* features of those rows (first stage only) */
    struct tensor y; /* labels (i32) or targets (last stage only) */
};

struct trainer {
    struct runtime *rt;
    const struct train_plan *tp;
    const struct train_spec *spec;
    enum role role;
    int stage, replica, shard; /* whichever the role has */
    int M;                     /* micro-batches of a mini-batch (pipeline.chunks) */
    int mb_lo, mb_hi;          /* a stage's replica runs micro-batches mb_lo .. mb_hi-1 */
    int member, T;             /* a stage's rank among its T (member 0 talks to the pipeline) */
    int l0, l1;                /* a stage's layers l0 .. l1-1 */
    bool first, last;          /* first / last stage */
    /* pipe: member 0 of each stage of the replica (MPI_COMM_NULL on other
     * members); members: the stage's T ranks; group: this rank's plan group */
    MPI_Comm pipe, members, train, dl, group;
    struct emb *emb; /* embedding tables: each replica's reader and the shards (embed.c) */
    MPI_Comm embc;   /* their communicator (TRAIN_COMM_EMBED) */
    enum dtype dt;
    size_t esz; /* bytes per element */
    /* data (first and last stages) */
    const char *eval_file;
    int64_t n_rows, n_train, n_eval, eval_first; /* eval rows: eval_first .. + n_eval */
    int64_t k_targets;                           /* 0: class labels, else target columns */
    int64_t steps_per_epoch;
    int64_t *perm, perm_pass; /* the current pass's sample order */
    /* a stage's parameters and their gradients, by parameter k (model.h;
     * the other stages' are empty); with T > 1, this member's block-cyclic
     * units of each (grid.c) */
    struct tensor *w, *dw;
    /* pipeline work buffers */
    struct pipe_bufs *bufs;
    /* PS: each parameter's gradient, summed by the replicas */
    struct tensor *grads; /* [k] */
    bool grads_dumped;
    /* the PS protocol's state (ps.c) */
    bool pending;             /* stage: a publication of the parameters awaits receipt */
    bool *pushed;             /* stage: layers whose gradients went out this step */
    struct reduction *red;    /* stage: each parameter's sum over the replicas (ps.c) */
    MPI_Request *push_req;    /* stage: this step's gradient sends */
    MPI_Request *pull_req;    /* stage: the publication's receives, [k * P + p] */
    int n_push;
    bool published;           /* shard: the current parameters went out */
    MPI_Request *pub_req;     /* shard: the last publication's sends, completed lazily */
    int n_pub;
    /* the stage's grids (T > 1): T x 1, and 1 x 1 on member 0 */
    int blacs_stage, ctx_grid, ctx_lead;
    /* statistics */
    double pipe_seconds; /* time in the pipeline schedule this epoch */
    int64_t samples;     /* trained on this epoch (world rank 0 counts) */
    double *mb_loss;     /* last stage: this step's loss summed over each micro-batch's samples */
};

/* ---- parameter geometry (ps.c) ---- */
int n_params(const struct trainer *t); /* the dense parameters, model.h's k */
int64_t param_rows(const struct trainer *t, int k); /* W: inputs of the layer; b: units */
int64_t param_cols(const struct trainer *t, int k); /* W: units; b: 1 */
/* Layer l's parameters: k = param_first(t, l) .. param_first(t, l + 1) - 1. */
int param_first(const struct trainer *t, int l);
/* Shard p's rows of parameter k: [lo, hi) (ScaLAPACK block layout). */
void param_block(const struct trainer *t, int k, int p, int64_t *lo, int64_t *hi);
int ps_rank_of_shard(const struct trainer *t, int p); /* in the train comm */
/* A stage member's rank in the train comm. */
int stage_rank(const struct trainer *t, int replica, int stage, int member);

/* ---- message tags ---- */
/* Parameter k's publication, gradients and replica sums on the train comm; micro-batch
 * i's activations (2 i) and their gradients (2 i + 1) on the pipe comm.
 * MPI promises tags up to 32767 only: trainer_create checks MPI_TAG_UB. */
enum { TAG_PARAM = 0, TAG_GRAD = MODEL_MAX_PARAMS, TAG_SUM = 2 * MODEL_MAX_PARAMS, TAG_PS_END = 3 * MODEL_MAX_PARAMS };
_Static_assert(TAG_PS_END <= 32767, "PS tags beyond what every MPI library allows");

/* ---- the PS protocol (ps.c) ---- */
int ps_create(struct trainer *t);
void ps_destroy(struct trainer *t);
/* Stage: complete the last step's gradient sends, then post the receives
 * of the parameters' latest publication, if one is pending. */
int ps_pull(struct trainer *t);
/* Stage: wait for layer l's parameters (before its forward). */
int ps_pull_layer(struct trainer *t, int l);
/* Stage: wait for all of them. */
int ps_pull_all(struct trainer *t);
/* Stage: layer l's gradients are final for this step on this replica:
 * add them with the other replicas' over the gradient tree's top, and
 * send the sum to every shard (ps.c). */
int ps_push_layer(struct trainer *t, int l);
/* Stage: push what the schedule did not (a step with no samples here),
 * and see every reduction through; a new publication is now pending.  The
 * shards' sends complete in the next ps_pull, so the next step's reading
 * overlaps the shards' update; dW and db stay untouched until then. */
int ps_push_finish(struct trainer *t);
/* Shard: the bytes it holds for the model (parameters, optimizer state,
 * gradients), which do not grow with the number of replicas. */
double ps_bytes(const struct trainer *t);

/* ---- the pipeline (pipeline.c) ---- */
int pipe_create(struct trainer *t);
void pipe_destroy(struct trainer *t);
/* One step's schedule for this stage: forward and backward over the
 * micro-batches of b, exchanging activations and gradients with the
 * neighbouring stages; sums dW and db over the gradient tree; the last
 * stage sums each micro-batch's losses into t->mb_loss. */
int pipe_step(struct trainer *t, struct batch *b);
/* Layer l's gradients summed over this replica's micro-batches (the
 * gradient tree), into dW and db, when the schedule did not finish it. */
int pipe_grads_close(struct trainer *t, int l);
/* Forward only over an evaluation batch; the last stage adds the losses
 * and the correct predictions, and (score not NULL, two classes) puts
 * each sample's logit margin z1 - z0 in score. */
int pipe_eval(struct trainer *t, struct batch *b, double *loss, int64_t *correct, double *score);

/* ---- a stage on T ranks (grid.c; with T = 1 no grid is made) ---- */
bool grid_split(const struct trainer *t); /* T > 1, dense layers (a language model: pipeline.c) */
/* This member's share of d columns (features, or a W's units): all with T = 1. */
int64_t grid_cols(const struct trainer *t, int64_t d);
int grid_create(struct trainer *t); /* collective on the members */
void grid_destroy(struct trainer *t);
/* Whole [n, d] on member 0 <-> this member's columns (collective on the members). */
int grid_scatter(const struct trainer *t, int64_t n, int64_t d, const void *whole, void *local);
int grid_gather(const struct trainer *t, int64_t n, int64_t d, const void *local, void *whole);
/* nn.h's layer kernels on the grid: n is the global sample count, and every
 * operand is this member's part. */
int grid_forward(const struct trainer *t, int64_t n, int64_t in, int64_t out, const void *x,
                 const void *W, const void *b, enum act a, void *y);
int grid_backward_params(const struct trainer *t, int64_t n, int64_t in, int64_t out,
                         const void *x, const void *y, enum act a, void *dy, void *dW, void *db,
                         bool accumulate);
int grid_backward_input(const struct trainer *t, int64_t n, int64_t in, int64_t out,
                        const void *W, const void *dy, void *dx);

/* ---- embedding tables (embed.c) ----
 * Each replica's reader (member 0 of its first stage) pulls the rows its
 * batch touches from the shards, adds each sample's into the first
 * layer's input, and turns the input's gradient into the rows' gradients,
 * summed over the gradient tree; replica 0 pushes each shard the sum of
 * the rows it served, and the shard updates exactly those rows. */
/* Collective on the world; comm: TRAIN_COMM_EMBED. */
int emb_create(struct trainer *t, MPI_Comm comm);
void emb_destroy(struct trainer *t);
bool emb_reader(const struct trainer *t);
/* Reader: file's ids datasets are integer [N] or [N, k] with N = rows (the
 * features'), and replica 0's reader checks every id of rows [first,
 * first + n) (CAIRN_EINPUT naming the dataset and the first bad row). */
int emb_check_data(struct trainer *t, const char *file, int64_t rows, int64_t first, int64_t n);
/* Reader: one round of pulls (every reader and shard takes part, so a
 * reader with no samples passes b->n = 0).  emb_pull reads the batch's
 * ids and asks the shards for their rows; then emb_input waits for them:
 * b->x [n, inputs], read in between, becomes [n, inputs + the tables'
 * dims], each sample's bags combined. */
int emb_pull(struct trainer *t, const char *file, const struct batch *b);
int emb_input(struct trainer *t, struct batch *b);
/* Reader: the rows' gradients of global micro-batch i (rows off .. off+n-1
 * of the batch) from its input gradient g [n, inputs + dims]. */
int emb_backward(struct trainer *t, int64_t i, int64_t off, int64_t n, const void *g);
/* Reader, after a step's schedule: the replicas add their sums over the
 * tree's top, and replica 0 pushes each shard the sum of its rows. */
int emb_push(struct trainer *t);
/* Shard: serve one round of pulls from the tables w (its rows of each),
 * applying the pending push (emb_take_push) on the way: first to the rows
 * asked for, then, after the replies are sent, to the rest.  In a
 * training round (push), the receive of the sum of the rows served is
 * posted before the rest is updated; emb_take_push then waits for it and
 * keeps it as the pending update of those rows of w (m, v: the
 * optimizer's state, or NULL), with the step's arguments a. */
int emb_serve(struct trainer *t, struct tensor *const *w, bool push);
int emb_take_push(struct trainer *t, struct tensor *const *w, struct tensor *const *m,
                  struct tensor *const *v, const struct optim_args *a);
/* Shard: apply the pending update now (before the tables are read whole:
 * checkpoints, model.h5). */
void emb_settle(struct trainer *t);
/* Shard, after emb_take_push: this step's gradient of its rows served,
 * into the debug.grads file f (open on the shards' group; collective
 * there): grads/embeddings/<name>/ids and .../rows, in position order. */
int emb_dump_grads(struct trainer *t, int64_t f);

/* ---- download (download.c) ---- */
/* Collective on the world: ready the download's transfers (a no-op off
 * the download communicator). */
int dl_create(struct trainer *t);


#endif
