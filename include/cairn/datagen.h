/* Data sets for examples and tests (`cairn data ...`). */
#ifndef CAIRN_DATAGEN_H
#define CAIRN_DATAGEN_H

#include <mpi.h>
#include <stdint.h>

/* Write an i64 dataset [count] holding start, start+1, ... to file.
 * Not collective.  Errors: CAIRN_EHDF5, CAIRN_ENOMEM. */
int datagen_range(const char *file, const char *dataset, int64_t start, int64_t count);

/* A learnable classification set: features [samples, features] f32 drawn
 * from N(0, 1), labels [samples] i32, and for each table a categorical
 * column: ids [samples, k] i64, a bag of 1..k ids per sample (drawn
 * uniformly; the rest of the row is -1) from Zipf's law with exponent zipf
 * over 0..rows-1, id 0 the most frequent.  Each id has a latent vector of
 * DATAGEN_LATENT N(0, 1) values; the label is the argmax of a random
 * teacher network (hidden tanh units -> classes) given the features and
 * the mean latent vector of each bag.  Every value is keyed by (seed, row,
 * column), so the file is the same for any number of ranks; a bag's length
 * and its ids come from streams of their own, the ids keyed by (row, place
 * in the bag) whatever k, so k changes the lengths but no id.  Collective on
 * comm: each rank computes and writes its block of rows (parallel HDF5). */
enum { DATAGEN_MAX_TABLES = 8, DATAGEN_LATENT = 4, DATAGEN_MAX_BAG = 64 };
struct datagen_table {
    char name[64]; /* its dataset */
    int64_t rows, k;
};
struct datagen_spec {
    int64_t samples, features, classes, hidden, seed;
    double zipf;
    int n_tables;
    struct datagen_table tables[DATAGEN_MAX_TABLES];
};
int datagen_synth(MPI_Comm comm, const char *file, const struct datagen_spec *g);

/* A language model's data from text files (concatenated, one token per
 * byte: vocabulary 256): features [N, ctx] i32, windows of ctx tokens one
 * after the other, and labels [N, ctx], each window's next tokens.  The
 * last window ends before the last byte; *windows receives N.  Collective
 * on comm: each rank reads and writes a block of the windows (parallel
 * HDF5), and the file is the same for any number of ranks; it appears
 * whole or not at all.  Errors: CAIRN_EINPUT (a file missing or not
 * regular, too little or too much text), CAIRN_EIO (a read), CAIRN_EHDF5,
 * CAIRN_ENOMEM. */
int datagen_text(MPI_Comm comm, const char *out, const char *const *files, int n_files, int64_t ctx,
                 int64_t *windows);

#endif
