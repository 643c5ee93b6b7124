/* Private to infer.c and infer_lm.c: a model read back from model.h5, and
 * the checks every object of an untrusted model file passes. */
#ifndef CAIRN_INFER_PRIV_H
#define CAIRN_INFER_PRIV_H

#include "cairn/infer.h"
#include "cairn/nn.h"
#include "cairn/reader.h"
#include "cairn/tensor.h"
#include "cairn/train_spec.h"

#include <hdf5.h>

/* Bounds on what an untrusted model file may claim (a string attribute:
 * at most MAX_NAME - 1 bytes). */
enum { MAX_TABLES = 64, MAX_WIDTH = 1 << 24, MAX_NAME = 256 };

struct infer_table {
    char name[MAX_NAME], ids[MAX_NAME], path[MAX_NAME + 32];
    int64_t rows, dim, column;
    bool mean;
};

struct infer_model {
    char path[4096], features[MAX_NAME], labels[MAX_NAME];
    enum dtype dt;
    enum loss loss;
    int64_t inputs, width0, eval_batch;
    int L, n_tables;
    struct tensor *W, *b;
    enum act *act;
    struct infer_table *tab;
    struct reader_cache *rd; /* the model's datasets and the data's */
    /* a language model (kind "lm"): its spec as training's (layer.h runs
     * it) and its parameters in model.h's order */
    bool lm;
    struct train_spec spec;
    struct layer_spec layers[NN_MAX_LAYERS];
    int param0[NN_MAX_LAYERS + 1];
    struct tensor *p;
};

/* infer.c's checks: an optional string attribute (dflt if missing); a
 * hard-linked group; a dataset of the model's dtype and ndim dimensions,
 * its data in the file (*s: its shape); a dataset's rows x cols read whole,
 * its bytes in the file and every value finite. */
int infer_attr_str(hid_t obj, const char *name, const char *dflt, char *buf, size_t size);
int infer_open_group(hid_t f, const char *path, hid_t *g);
int infer_check_dataset(const struct infer_model *m, hid_t f, const char *path, int ndim, struct shape *s);
int infer_read_param(struct infer_model *m, hid_t f, const char *path, int64_t rows, int64_t cols,
                     struct tensor *t);

/* ---- a language model (infer_lm.c) ---- */
/* Read a model.h5 of kind "lm" (cairn-job(5), MODEL FILE), every attribute
 * and dataset checked. */
int infer_lm_read(struct infer_model *m, hid_t f);
void infer_lm_free(struct infer_model *m);
/* The data's features and labels: integer [N, context]; *rows: N. */
int infer_lm_check_data(const struct infer_model *m, const struct infer_opts *o, int64_t *rows);
/* Rows [first, first + n): the tokens (checked against the vocabulary)
 * through the model, as training's evaluation runs them; *z: the logits
 * [n, context vocab].  work: two activations and a tape. */
int infer_lm_forward(const struct infer_model *m, const struct infer_opts *o, int64_t first, int64_t n,
                     struct tensor *work, struct tensor **z);
/* The summed loss (each row's: the mean over its positions) and the
 * tokens predicted right, of logits z against labels [n, context]. */
int infer_lm_loss(const struct infer_model *m, const struct infer_opts *o, int64_t first, int64_t n,
                  const void *z, struct tensor *y, double *loss, int64_t *correct);

#endif
