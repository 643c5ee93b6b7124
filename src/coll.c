/* Collective helpers; see include/cairn/coll.h. */
#include "cairn/coll.h"

#include "cairn/error.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

struct verdict {
    int code;
    char msg[2048];
};

int coll_agree(MPI_Comm comm, int rc)
{
    int me = 0, first = INT_MAX;
    if (MPI_Comm_rank(comm, &me) != MPI_SUCCESS) return CAIRN_EMPI;
    int mine = rc ? me : INT_MAX;
    if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return cairn_err_set(CAIRN_EMPI, __FILE__, __LINE__, "ranks could not agree on an error");
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
