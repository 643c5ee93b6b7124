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
struct fsx_out;
/* Collective on comm: rank 0 begins an fsx_out for path (see fsx.h), and
 * every rank learns its temporary's path (o->tmp) and that it can open it
 * for writing, for a collective writer (MPI-IO, parallel HDF5).  Rank 0
 * commits it (fsx_out_commit) once every rank has written, or aborts it;
 * on the other ranks both do nothing. */
int coll_out_begin(MPI_Comm comm, const char *path, int flags, struct fsx_out *o);

/* Collective on comm: gather one double per rank to rank 0 (vals has
 * size entries there; may be NULL elsewhere). */
int coll_gather_double(MPI_Comm comm, double mine, double *vals);

/* Wait for requests without spinning a core: a short busy phase, then
 * sleeps of up to 0.2 ms.  Ranks often share cores (here, and on nodes
 * running more ranks than cores), and a rank that busy-polls starves the
 * ones it waits for. */
int coll_wait(int n, MPI_Request *reqs);
/* coll_wait for receives, each of which must bring exactly bytes[i]
 * bytes (post them with room for one more, so a longer message is an
 * error too).  Errors: CAIRN_EMPI, CAIRN_ERUNTIME naming the sender. */
int coll_wait_sized(int n, MPI_Request *reqs, const int *bytes);
/* MPI_Probe that waits that way. */
int coll_probe(MPI_Comm comm, int from, int tag, MPI_Status *st);
/* That policy for loops that poll requests themselves: call after each
 * poll that found nothing; spins counts such polls since the last progress. */
void coll_idle(long spins);
/* MPI_Barrier and MPI_Allreduce that wait that way (collective on comm). */
int coll_barrier(MPI_Comm comm);
int coll_allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm);

/* A sparse exchange, collective on comm: each rank sends n messages (to
 * dest[i], bytes[i] bytes at buf[i], tag) and receives however many come
 * to it with that tag, without anyone knowing beforehand who sends to
 * whom (Hoefler's NBX: synchronous sends, then a non-blocking barrier once
 * they are all matched, receiving until the barrier completes).  Each
 * message is handed to on_recv(arg, source, data, bytes) as it arrives (the
 * data is valid during the call).  No rank's work grows with the size of
 * comm beyond the barrier's log.  A rank may start its next exchange while
 * a slower one still receives this one's messages, so consecutive
 * exchanges on one comm must alternate between two tags (two suffice: an
 * exchange's barrier holds every rank until all have left the one before).  Errors: CAIRN_EMPI, CAIRN_ENOMEM, or the
 * first nonzero on_recv result (the exchange still completes). */
typedef int coll_recv_fn(void *arg, int source, void *data, int bytes);
int coll_exchange(MPI_Comm comm, int tag, int n, const int *dest, void *const *buf,
                  const int *bytes, coll_recv_fn *on_recv, void *arg);

#endif
