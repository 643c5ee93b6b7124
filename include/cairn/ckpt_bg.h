/* A checkpoint save on a thread of its own (checkpoint.async): a copy of
 * this rank's persistent tensors, written while training goes on.
 *
 * The copy lives here, kept from one save to the next (so a rank holds at
 * most its state once more), and the writer gets communicators of its own,
 * duplicated from the job's at creation: its collectives never meet the
 * main thread's.  At most one save is in flight.  The main thread starts
 * it, may ask whether it has finished, and joins it; the writer's error,
 * a per-thread record (error.h), comes back with the join. */
#ifndef CAIRN_CKPT_BG_H
#define CAIRN_CKPT_BG_H

#include "cairn/tensor.h"

#include <mpi.h>
#include <stdbool.h>

struct ckpt_bg;

/* The writer's work: what the save does with the copy (tensors by blob
 * id, NULL where a blob is not copied) over the duplicated communicators. */
typedef int ckpt_bg_fn(void *arg, MPI_Comm world, MPI_Comm group, struct tensor **tensors);

/* Collective on world (and on group, over the ranks of each group;
 * MPI_COMM_NULL on a rank in none): n blob slots.  Errors: CAIRN_ENOMEM,
 * CAIRN_EMPI. */
int ckpt_bg_create(MPI_Comm world, MPI_Comm group, int n, struct ckpt_bg **out);
/* Joins a save still in flight (its result is dropped, and this thread's
 * error record kept: only for a run that is failing anyway), frees the
 * copy and the communicators.  Accepts NULL, NULLs *b. */
void ckpt_bg_destroy(struct ckpt_bg **b);

/* What a save takes of a blob: nothing, its dtype and shape alone (a part
 * this rank does not write), or a copy. */
enum ckpt_bg_take { CKPT_BG_NONE, CKPT_BG_SHAPE, CKPT_BG_DATA };

/* Take take[i] of src[i] for every blob i (no save may be in flight).
 * Errors: CAIRN_ENOMEM. */
int ckpt_bg_copy(struct ckpt_bg *b, struct tensor *const *src, const enum ckpt_bg_take *take);
/* Run fn(arg, ...) on a new thread; if none can be had, or `thread` is
 * false (a test's fault), now, in this one: the other ranks' writers meet
 * it all the same. */
void ckpt_bg_start(struct ckpt_bg *b, ckpt_bg_fn *fn, void *arg, bool thread);
/* A save was started and has not been joined. */
bool ckpt_bg_busy(const struct ckpt_bg *b);
/* ... and its thread has not finished yet. */
bool ckpt_bg_running(const struct ckpt_bg *b);
/* Wait for the save in flight (if any) and return its result, with its
 * message as this thread's error.  *waited: seconds spent waiting (0 when
 * it had finished). */
int ckpt_bg_join(struct ckpt_bg *b, double *waited);
/* The writer: wait here until the main thread joins (a test's fault
 * point, CAIRN_FAULT=hold: the save is surely in flight meanwhile). */
void ckpt_bg_hold(struct ckpt_bg *b);

#endif
