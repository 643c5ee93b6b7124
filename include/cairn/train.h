/* Distributed training at run time: the context of one rank of a model
 * job, and the kernels of the ops the planner generates for it
 * (src/train/trainplan.c): ps_init, ps_step, train_step, evaluate, download,
 * save_model. */
#ifndef CAIRN_TRAIN_H
#define CAIRN_TRAIN_H

#include <mpi.h>
#include <stdint.h>

struct runtime;
struct trainer;
struct train_plan;
struct op_call;

/* The communicators the training extension asks the layout for. */
enum {
    TRAIN_COMM_PIPE,  /* this replica's pipeline stages' first ranks, rank = stage */
    TRAIN_COMM_STAGE, /* the T ranks of this stage of this replica, rank = member */
    TRAIN_COMM_TRAIN, /* every trainer and PS shard, ranked as in the world */
    TRAIN_COMM_DL,    /* trainer 0 (rank 0) and the PS shards (1..P), for the download */
    TRAIN_COMM_EMBED, /* each replica's reader (rank = replica) and the shards (R + shard),
                       * with embedding tables */
    TRAIN_N_COMMS
};

/* Collective on the world: this rank's role, its data (checked: shapes,
 * types, label range; errors name the dataset, CAIRN_EINPUT), buffers and
 * the download's process grids.  comms: TRAIN_N_COMMS communicators (or
 * MPI_COMM_NULL where this rank is no member), owned by the layout. */
int trainer_create(struct runtime *rt, const struct train_plan *tp, const MPI_Comm *comms,
                   struct trainer **out);
void trainer_destroy(struct trainer **t);
/* Steps in one pass over the training data, the same on every rank. */
int64_t trainer_steps_per_epoch(const struct trainer *t);
int64_t trainer_epoch_samples(const struct trainer *t);
/* Collective on the world, after an epoch: the samples trained on, the
 * longest time any stage spent in its pipeline schedules during the epoch
 * (the counters then restart), and the most bytes a PS shard holds for
 * the model (parameters, optimizer state, gradients). */
int trainer_epoch_stats(struct trainer *t, int64_t *samples, double *pipe_seconds, double *shard_bytes);
/* Collective on the world: complete the parameters' last publication
 * (trainers receive it, shards finish sending), so no message is left in
 * flight when the epochs end or the job stops. */
int trainer_quiesce(struct trainer *t);

int train_op_ps_init(struct op_call *c);
int train_op_ps_step(struct op_call *c);
int train_op_step(struct op_call *c);
int train_op_evaluate(struct op_call *c);
int train_op_download(struct op_call *c);
int train_op_embed_serve(struct op_call *c);
int train_op_save_model(struct op_call *c);

#endif
