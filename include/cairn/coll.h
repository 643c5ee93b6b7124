/* Collective helpers for failing together. */
#ifndef CAIRN_COLL_H
#define CAIRN_COLL_H

#include <mpi.h>

/* Collective on comm: every rank passes its own result.  Returns 0 if all
 * succeeded; otherwise the code of the lowest failing rank, whose error
 * message becomes every rank's current message, so that rank 0 can report
 * it and all ranks can stop alike.  If MPI itself fails, CAIRN_EMPI. */
int coll_agree(MPI_Comm comm, int rc);

/* Collective on comm: gather one double per rank to rank 0 (vals has
 * size entries there; may be NULL elsewhere). */
int coll_gather_double(MPI_Comm comm, double mine, double *vals);

#endif
