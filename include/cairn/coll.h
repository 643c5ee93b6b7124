/* Collective helpers for failing together. */
#ifndef CAIRN_COLL_H
#define CAIRN_COLL_H

#include "cairn/tensor.h"

#include <mpi.h>

/* The MPI type of one element of a dtype (MPI_DATATYPE_NULL for DT_NONE). */
MPI_Datatype coll_type(enum dtype t);

/* Collective on comm: every rank passes its own result.  Returns 0 if all
 * succeeded; otherwise the code of the lowest failing rank, whose error
 * message becomes every rank's current message, so that rank 0 can report
 * it and all ranks can stop alike.  If MPI itself fails, CAIRN_EMPI. */
int coll_agree(MPI_Comm comm, int rc);

/* Collective on comm: gather one double per rank to rank 0 (vals has
 * size entries there; may be NULL elsewhere). */
int coll_gather_double(MPI_Comm comm, double mine, double *vals);

/* Wait for requests without spinning a core: a short busy phase, then
 * sleeps of up to 0.2 ms.  Ranks often share cores (here, and on nodes
 * running more ranks than cores), and a rank that busy-polls starves the
 * ones it waits for. */
int coll_wait(int n, MPI_Request *reqs);
/* That policy for loops that poll requests themselves: call after each
 * poll that found nothing; spins counts such polls since the last progress. */
void coll_idle(long spins);
/* MPI_Barrier and MPI_Allreduce that wait that way (collective on comm). */
int coll_barrier(MPI_Comm comm);
int coll_allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm);

#endif
