/* A rank's place in the job: the communicators it works with.  The world
 * is split once; nothing else in cairn creates communicators from
 * MPI_COMM_WORLD, and nothing keeps communicators in globals. */
#ifndef CAIRN_LAYOUT_H
#define CAIRN_LAYOUT_H

#include "cairn/blas_kernel.h"
#include "cairn/placement.h"

#include <mpi.h>

struct plan;

struct layout {
    MPI_Comm world; /* a duplicate of the communicator given */
    int rank, size;
    int gid;        /* this rank's group, -1 on a spare rank */
    int grank, gsize;
    MPI_Comm *lanes; /* n_lanes communicators over the group; lanes[0] is the group's */
    int n_lanes;
    char host[PLACEMENT_HOST_MAX];
    char (*hosts)[PLACEMENT_HOST_MAX]; /* every rank's host, by world rank */
    struct blas_kernel *kernels; /* every rank's BLAS kernel, by world rank */
    char *kernels_text;          /* blas_kernels_text of them, without hosts */
    /* the communicators each plan extension asked for (ext.h): exts[e].comms[i],
     * MPI_COMM_NULL where this rank is no member */
    struct layout_ext {
        MPI_Comm *comms;
        int n;
    } *exts;
    int n_exts;
};

/* Collective on world.  Every communicator made here has MPI_ERRORS_RETURN.
 * Errors: CAIRN_EMPI, CAIRN_ENOMEM. */
int layout_create(MPI_Comm world, const struct plan *p, struct layout **out);
/* Collective on the layout's world. Accepts NULL, NULLs *l. */
void layout_destroy(struct layout **l);

#endif
