/* A model's parameters and data split, shared by the PS shards and the
 * single-process reference so both start from the same numbers. */
#ifndef CAIRN_MODEL_H
#define CAIRN_MODEL_H

#include "cairn/tensor.h"
#include "cairn/train_spec.h"

#include <stddef.h>
#include <stdint.h>


/* The model's parameters are one flat list: layer l holds parameters
 * t->param0[l] .. t->param0[l+1]-1 (a dense layer: W [inputs, units], then
 * b [units]), and the embedding tables follow, k = t->n_params + e. */
/* Bounds config_train.c asserts every model within (PS message tags). */
enum { MODEL_MAX_PARAMS = 1024, MODEL_LAYER_MAX_PARAMS = 16 };
int model_layer_params(enum layer_kind kind); /* how many a layer of this kind has */
int model_param_layer(const struct train_spec *t, int k);
int model_param_ndim(const struct train_spec *t, int k); /* 1: a vector, 2: a matrix */
int64_t model_param_rows(const struct train_spec *t, int k);
int64_t model_param_cols(const struct train_spec *t, int k); /* 1 for a vector */
/* How the T members of a stage (pipeline.ranks_per_stage) would share
 * parameter k: each all of it (WHOLE, and every parameter when T = 1), or the
 * blocks of *nb columns (COLS; a vector's entries) or rows (ROWS) that
 * member j owns block-cyclically (partition.h's cyclic_owned).  Dense
 * layers split their units by pipeline.block; a language model's block
 * splits its heads (qkv's columns, proj's rows) and its MLP (fc's columns,
 * out's rows) into T equal parts and keeps the rest whole. */
enum model_split { MODEL_SPLIT_WHOLE, MODEL_SPLIT_COLS, MODEL_SPLIT_ROWS };
enum model_split model_param_split(const struct train_spec *t, int k, int64_t T, int64_t *nb);
/* Member j's rows and columns of parameter k (a vector: [entries, 1]). */
void model_param_local(const struct train_spec *t, int k, int64_t T, int64_t j, int64_t *rows, int64_t *cols);
/* Parameter k's blob, "L<l>.W" or "L<l>.b", with suffix appended (".m",
 * ".v": optimizer state), and its dataset in a gradients file,
 * "grads/L<l>/W". */
void model_param_name(const struct train_spec *t, int k, const char *suffix, char *out, size_t size);
void model_grad_name(const struct train_spec *t, int k, char *out, size_t size);
/* grads/embeddings/<table>/<what>: a table's touched rows' gradient. */
void model_table_grad_name(const char *table, const char *what, char *out, size_t size);
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
