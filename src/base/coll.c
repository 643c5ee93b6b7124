/* Collective helpers; see include/cairn/coll.h. */
#include "cairn/coll.h"

#include "cairn/error.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

MPI_Datatype coll_type(enum dtype t)
{
    switch (t) {
    case DT_F32: return MPI_FLOAT;
    case DT_F64: return MPI_DOUBLE;
    case DT_I32: return MPI_INT32_T;
    case DT_I64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;
    }
}

/* 200 polls at full speed, then sleeps growing by 1 us to 0.2 ms. */
void coll_idle(long spins)
{
    if (spins <= 200) return;
    long us = spins - 200 < 200 ? spins - 200 + 1 : 200;
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

int coll_wait(int n, MPI_Request *reqs)
{
    int done = 0;
    for (long spins = 0;; spins++) {
        int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) return cairn_err_mpi(rc, __FILE__, __LINE__, "MPI_Testall");
        if (done) return 0;
        coll_idle(spins);
    }
}

int coll_barrier(MPI_Comm comm)
{
    int rc = 0;
    MPI_Request r;
    CAIRN_CHECK_MPI(MPI_Ibarrier(comm, &r));
    rc = coll_wait(1, &r);
cleanup:
    return rc;
}

int coll_allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm)
{
    int rc = 0;
    MPI_Request r;
    CAIRN_CHECK_MPI(MPI_Iallreduce(send, recv, count, type, op, comm, &r));
    rc = coll_wait(1, &r);
cleanup:
    return rc;
}

struct verdict {
    int code;
    char msg[2048];
};

int coll_agree(MPI_Comm comm, int rc)
{
    int me = 0, first = INT_MAX;
    if (MPI_Comm_rank(comm, &me) != MPI_SUCCESS) return CAIRN_EMPI;
    int mine = rc ? me : INT_MAX;
    int saved = rc;
    if (coll_allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm))
        return cairn_err_set(CAIRN_EMPI, __FILE__, __LINE__, "ranks could not agree on an error");
    rc = saved;
    if (first == INT_MAX) return 0;
    struct verdict v = {.code = rc};
    if (me == first) snprintf(v.msg, sizeof v.msg, "%s", cairn_errmsg());
    if (MPI_Bcast(&v, (int)sizeof v, MPI_BYTE, first, comm) != MPI_SUCCESS)
        return cairn_err_set(CAIRN_EMPI, __FILE__, __LINE__, "ranks could not share an error");
    if (me != first) cairn_err_set(v.code, __FILE__, __LINE__, "%s", v.msg);
    return v.code;
}

int coll_gather_double(MPI_Comm comm, double mine, double *vals)
{
    int rc = 0;
    CAIRN_CHECK_MPI(MPI_Gather(&mine, 1, MPI_DOUBLE, vals, 1, MPI_DOUBLE, 0, comm));
cleanup:
    return rc;
}
