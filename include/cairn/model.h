/* A model's parameters and data split, shared by the PS shards and the
 * single-process reference so both start from the same numbers. */
#ifndef CAIRN_MODEL_H
#define CAIRN_MODEL_H

#include "cairn/tensor.h"

#include <stddef.h>
#include <stdint.h>

struct train_spec;

/* Parameter k: layer k/2's W [inputs, units] (even k) or b [units] (odd). */
/* The names of parameter k (2l: layer l's W, 2l+1: its b): its blob,
 * "L<l>.W" or "L<l>.b", with suffix appended (".m", ".v": optimizer
 * state), and its dataset in a gradients file, "grads/L<l>/W". */
void model_param_name(int k, const char *suffix, char *out, size_t size);
void model_grad_name(int k, char *out, size_t size);
/* grads/embeddings/<table>/<what>: a table's touched rows' gradient. */
void model_table_grad_name(const char *table, const char *what, char *out, size_t size);
int64_t model_param_rows(const struct train_spec *t, int k);
int64_t model_param_cols(const struct train_spec *t, int k);
/* Rows [lo, lo + v's rows) of parameter k's initial value into v (already
 * shaped): Glorot-uniform weights keyed by (seed, k, element), zero biases. */
void model_init_param(const struct train_spec *t, uint64_t seed, int k, int64_t lo,
                      struct tensor *v);
/* Rows used for training out of a data file's n rows (the rest, if
 * data.holdout, are held out). */
int64_t model_train_rows(const struct train_spec *t, int64_t n);

/* The single-process reference: the gradients of the first mini-batch
 * (all replicas' samples, split into the job's micro-batches as one
 * replica would), computed with the same kernels but no pipeline, PS or
 * MPI, written as /grads/L<i>/W and /grads/L<i>/b to out, and for each
 * embedding table the rows the batch touched, in position order
 * (partition.h's spread), as /grads/embeddings/<name>/ids [n] and .../rows
 * [n, dim] (the reference holds every table whole).  For the
 * gradient-transparency test (cairn grads). */
int model_reference_grads(const struct train_spec *t, uint64_t seed, const char *out);

#endif
