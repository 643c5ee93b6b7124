/* Dense layers, activations and losses: the arithmetic of training, one
 * set of kernels for the pipeline stages and the single-process reference
 * alike, so both compute every number the same way.  Row-major; BLAS
 * (OpenBLAS, one thread per rank) for the products.  f32 or f64. */
#ifndef CAIRN_NN_H
#define CAIRN_NN_H

#include "cairn/tensor.h"

#include <stdint.h>

/* X(enum, job-file name): the enums and their name tables come from these. */
#define CAIRN_ACTS(X) X(ACT_IDENTITY, "identity") X(ACT_RELU, "relu") X(ACT_TANH, "tanh") \
    X(ACT_SIGMOID, "sigmoid")
#define CAIRN_LOSSES(X) X(LOSS_SOFTMAX_CE, "softmax_cross_entropy") X(LOSS_MSE, "mse")
#define CAIRN_ENUM_ITEM(e, name) e,
#define CAIRN_COUNT_ITEM(e, name) +1
enum act { CAIRN_ACTS(CAIRN_ENUM_ITEM) };
enum loss { CAIRN_LOSSES(CAIRN_ENUM_ITEM) };
enum { N_ACTS = CAIRN_ACTS(CAIRN_COUNT_ITEM), N_LOSSES = CAIRN_LOSSES(CAIRN_COUNT_ITEM) };
/* The names, in enum order, NULL-terminated. */
extern const char *const act_names[];
extern const char *const loss_names[];
/* The most layers a model may have (config checks it). */
enum { NN_MAX_LAYERS = 64 };

const char *act_name(enum act a);   /* "?" out of range */
const char *loss_name(enum loss l);

/* y[n, out] = act(x[n, in] W[in, out] + b[out]). */
void nn_forward(enum dtype dt, int64_t n, int64_t in, int64_t out, const void *x, const void *W,
                const void *b, enum act a, void *y);

/* Backward through one layer whose input was x and output y.  dy (the
 * gradient with respect to y) is turned into the gradient with respect to
 * the pre-activation in place; then dW += x^T dy and db += the column sums
 * of dy (rows in order) -- or, unless `accumulate`, dW = and db = (the
 * first micro-batch of a step: no buffer clearing) -- and, unless dx is
 * NULL, dx = dy W^T. */
void nn_backward(enum dtype dt, int64_t n, int64_t in, int64_t out, const void *x, const void *W,
                 const void *y, enum act a, void *dy, void *dW, void *db, void *dx,
                 bool accumulate);
/* nn_backward in two halves, so a layer's parameter gradients can leave
 * while its input gradient is computed: the first half turns dy into the
 * pre-activation gradient and sets (or adds to) dW and db; the second
 * computes dx = dy W^T from that dy. */
void nn_backward_params(enum dtype dt, int64_t n, int64_t in, int64_t out, const void *x,
                        const void *y, enum act a, void *dy, void *dW, void *db, bool accumulate);
void nn_backward_input(enum dtype dt, int64_t n, int64_t in, int64_t out, const void *W,
                       const void *dy, void *dx);

/* The elementwise halves of a layer whose product is done elsewhere
 * (p?gemm on a stage's grid): y[n, out] = act(y + b); and dy *= act'
 * (from the output y), then db = (or +=, if accumulate) the column sums
 * of dy. */
void nn_bias_act(enum dtype dt, int64_t n, int64_t out, const void *b, enum act a, void *y);
void nn_dact_bias(enum dtype dt, int64_t n, int64_t out, const void *y, enum act a, void *dy,
                  void *db, bool accumulate);

/* The loss of outputs z[n, k] against class labels (labels, n entries) or
 * targets (targets, [n, k]); one of the two is NULL.  Softmax cross-entropy
 * needs labels; mean squared error takes either (labels as one-hot).
 * Returns the sum of the per-sample losses; *correct counts the rows whose
 * largest output is the label (or the targets' largest).  If dz is not
 * NULL it receives dLoss/dz with the loss averaged over `batch` samples
 * (the whole mini-batch this part belongs to). */
double nn_loss(enum dtype dt, enum loss l, int64_t n, int64_t k, const void *z,
               const int32_t *labels, const void *targets, int64_t batch, void *dz,
               int64_t *correct);

/* The area under the ROC curve of n (score, label) pairs (sl: 2n values;
 * sorted in place), exactly.  NaN if either class is missing or a score is
 * NaN (which has no rank). */
double nn_auc(double *sl, int64_t n);

/* Multiply-adds of one sample through the layers (for FLOP counts). */
double nn_macs(int n_layers, const int64_t *dims);

/* The best GFLOP/s of `reps` single-precision n x n x n products. */
int nn_sgemm_gflops(int n, int reps, double *gflops);

#endif
