/* Using a trained model: a model.h5 (download.c writes it; cairn-job(5)
 * documents it) read back, checked as untrusted input, and run forward
 * over rows of a data file with the kernels training uses, so that its
 * loss, accuracy and AUC are the figures the run logged for those rows,
 * bit for bit, on any number of ranks (unless its stages were
 * tensor-parallel: p?gemm adds the products in another order). */
#ifndef CAIRN_INFER_H
#define CAIRN_INFER_H

#include "cairn/tensor.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

struct infer_model;

/* Open and check path (each rank reads it; no collective).  Errors
 * (CAIRN_EINPUT) say what is wrong with the file. */
int infer_open(const char *path, struct infer_model **out);
void infer_close(struct infer_model **m); /* accepts NULL, NULLs *m */

/* What a model was trained with: its dataset names and evaluation batch
 * (the defaults of infer_opts), outputs per row, loss. */
const char *infer_features(const struct infer_model *m);
const char *infer_labels(const struct infer_model *m);
int64_t infer_eval_batch(const struct infer_model *m);
int64_t infer_outputs(const struct infer_model *m);
bool infer_softmax(const struct infer_model *m);
/* A language model's tokens per row (its context); 0 for a model of layers. */
int64_t infer_tokens(const struct infer_model *m);

struct infer_opts {
    const char *data;           /* the data file */
    const char *features, *labels; /* datasets; labels NULL: predict only */
    int64_t first, end;         /* rows [first, end) of the file; end < 0: to its end */
    int64_t batch;              /* rows per forward pass (and per term of the sums) */
    const char *out;            /* predictions file, or NULL */
};

struct infer_result {
    int64_t rows;
    double loss, accuracy, auc; /* auc: NaN unless two classes (softmax) */
    double seconds;             /* reading, forward and writing, slowest rank */
};

/* Collective on comm: rows [first, end) in batches of `batch`, dealt to
 * the ranks in balanced contiguous shares.  With labels, the loss and
 * accuracy (the per-row sums added batch by batch in row order) and the
 * AUC on every rank; with out, the file written in parallel (through a
 * temporary name, renamed once every rank has written its rows):
 * /outputs [rows, k] (class probabilities for softmax, values for mse)
 * and /predicted [rows] (the index of the largest output, as i32).
 * Every rank returns the same code. */
int infer_run(MPI_Comm comm, const struct infer_model *m, const struct infer_opts *o,
              struct infer_result *r);

/* A language model's text (cairn generate): the prompt's bytes, then
 * `tokens` more, each the largest logit's (temperature 0) or drawn from
 * the softmax of the logits over the temperature, among the top_k largest
 * (0: all), with a uniform number keyed by (seed, its place).  With the
 * cache of keys and values each token costs one position; no_cache runs
 * the whole window through the batch kernels instead.  Past the context,
 * the window keeps its last half and encodes it again.  *out (malloc'd)
 * holds the prompt and the new bytes, *n of them.  Errors: CAIRN_EINPUT
 * (not a language model of byte tokens, an empty prompt, a byte outside
 * the vocabulary). */
struct infer_gen {
    const char *prompt;
    int64_t prompt_len, tokens, top_k;
    double temperature;
    uint64_t seed;
    bool no_cache;
};
int infer_generate(const struct infer_model *m, const struct infer_gen *g, unsigned char **out, int64_t *n);

#endif
