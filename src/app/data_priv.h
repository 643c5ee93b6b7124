/* What the data commands of the app layer share (datagen.c writes). */
#ifndef CAIRN_DATA_PRIV_H
#define CAIRN_DATA_PRIV_H

#include "cairn/tensor.h"

#include <mpi.h>

/* One dataset of a data file, of shape s: rows [lo, lo + n) are this
 * rank's, at data. */
struct rows_out {
    const char *name;
    enum dtype type;
    struct shape s;
    int64_t lo, n;
    const void *data;
};
/* A text attribute of the file's root group. */
struct attr_out {
    const char *name, *value;
};

/* Collective on comm: FILE with the nd datasets, each rank writing its
 * rows of every one (parallel HDF5), and the na attributes (the same on
 * every rank); FILE appears whole, or stays as it was.  rc: this rank's
 * state so far, agreed first.  Returns the same on every rank. */
int data_write(MPI_Comm comm, const char *file, int rc, const struct rows_out *d, int nd,
               const struct attr_out *a, int na);

/* Each input file's size: a regular file (a FIFO or device is refused,
 * never waited on).  Errors: CAIRN_EINPUT naming it. */
int data_sizes(const char *const *files, int n, int64_t *size);

#endif
