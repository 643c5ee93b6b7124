/* Data sets for examples and tests (`cairn data ...`). */
#ifndef CAIRN_DATAGEN_H
#define CAIRN_DATAGEN_H

#include <mpi.h>
#include <stdint.h>

/* Write an i64 dataset [count] holding start, start+1, ... to file.
 * Not collective.  Errors: CAIRN_EHDF5, CAIRN_ENOMEM. */
int datagen_range(const char *file, const char *dataset, int64_t start, int64_t count);

/* A learnable classification set: features [samples, features] f32 drawn
 * from N(0, 1), and labels [samples] i32, the argmax of a random teacher
 * network (features -> hidden tanh units -> classes) with weights drawn
 * from the seed.  Every value is keyed by (seed, row, column), so the file
 * is the same for any number of ranks.  Collective on comm: each rank
 * computes and writes its block of rows (parallel HDF5). */
int datagen_synth(MPI_Comm comm, const char *file, int64_t samples, int64_t features,
                  int64_t classes, int64_t hidden, int64_t seed);

#endif
