/* Collective helpers; see include/cairn/coll.h. */
#include "cairn/coll.h"

#include "cairn/error.h"
#include "cairn/fsx.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stdbool.h>
#include <stdlib.h>
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

int coll_wait_sized(int n, MPI_Request *reqs, const int *bytes)
{
    MPI_Status *st = malloc((size_t)(n + 1) * sizeof *st);
    if (!st) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    int done = 0, rc = 0;
    for (long spins = 0; !done; spins++) {
        int e = MPI_Testall(n, reqs, &done, st);
        if (e != MPI_SUCCESS) {
            free(st);
            return cairn_err_mpi(e, __FILE__, __LINE__, "MPI_Testall");
        }
        if (!done) coll_idle(spins);
    }
    for (int i = 0; i < n && rc == 0; i++) {
        int got = 0;
        MPI_Get_count(&st[i], MPI_BYTE, &got);
        if (got != bytes[i])
            rc = cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                               "rank %d sent a message of %d bytes where %d were expected",
                               st[i].MPI_SOURCE, got, bytes[i]);
    }
    free(st);
    return rc;
}

int coll_probe(MPI_Comm comm, int from, int tag, MPI_Status *st)
{
    for (long spins = 0;; spins++) {
        int flag = 0, rc = MPI_Iprobe(from, tag, comm, &flag, st);
        if (rc != MPI_SUCCESS) return cairn_err_mpi(rc, __FILE__, __LINE__, "MPI_Iprobe");
        if (flag) return 0;
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

/* Receive every message waiting with tag; the first failure is kept. */
static int drain(MPI_Comm comm, int tag, coll_recv_fn *on_recv, void *arg, char **buf, int *cap,
                 int *first_rc, bool *got)
{
    for (;;) {
        int flag = 0, bytes = 0;
        MPI_Status st;
        int rc = MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &flag, &st);
        if (rc != MPI_SUCCESS) return cairn_err_mpi(rc, __FILE__, __LINE__, "MPI_Iprobe");
        if (!flag) return 0;
        *got = true;
        MPI_Get_count(&st, MPI_BYTE, &bytes);
        if (bytes + 1 > *cap) {
            char *b = realloc(*buf, (size_t)bytes + 1);
            if (!b) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
            *buf = b;
            *cap = bytes + 1;
        }
        rc = MPI_Recv(*buf, bytes, MPI_BYTE, st.MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return cairn_err_mpi(rc, __FILE__, __LINE__, "MPI_Recv");
        int r = on_recv(arg, st.MPI_SOURCE, *buf, bytes);
        if (r && !*first_rc) *first_rc = r;
    }
}

int coll_exchange(MPI_Comm comm, int tag, int n, const int *dest, void *const *buf,
                  const int *bytes, coll_recv_fn *on_recv, void *arg)
{
    int rc = 0, first_rc = 0, cap = 0, sent = 0, done = 0;
    char *rbuf = NULL;
    MPI_Request *req = malloc((size_t)(n + 1) * sizeof *req), barrier = MPI_REQUEST_NULL;
    if (!req) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (int i = 0; i < n; i++)
        CAIRN_CHECK_MPI(MPI_Issend(buf[i], bytes[i], MPI_BYTE, dest[i], tag, comm, &req[i]));
    for (long spins = 0; !done; spins++) {
        bool got = false;
        CAIRN_CHECK(drain(comm, tag, on_recv, arg, &rbuf, &cap, &first_rc, &got));
        if (barrier == MPI_REQUEST_NULL) {
            CAIRN_CHECK_MPI(MPI_Testall(n, req, &sent, MPI_STATUSES_IGNORE));
            if (sent) CAIRN_CHECK_MPI(MPI_Ibarrier(comm, &barrier)); /* mine are all matched */
        } else {
            CAIRN_CHECK_MPI(MPI_Test(&barrier, &done, MPI_STATUS_IGNORE));
        }
        if (got) spins = 0;
        else if (!done) coll_idle(spins);
    }
cleanup:
    free(req);
    free(rbuf);
    return rc ? rc : first_rc;
}

int coll_out_begin(MPI_Comm comm, const char *path, int flags, struct fsx_out *o)
{
    int rc = 0, me = 0;
    *o = (struct fsx_out){.dir = -1, .fd = -1};
    MPI_Comm_rank(comm, &me);
    if (me == 0) rc = fsx_out_begin(o, path, flags);
    CAIRN_CHECK(coll_agree(comm, rc));
    CAIRN_CHECK_MPI(MPI_Bcast(o->tmp, sizeof o->tmp, MPI_CHAR, 0, comm));
    /* an MPI-IO open that fails on some ranks only would split them */
    CAIRN_CHECK(coll_agree(comm, me == 0 ? 0 : fsx_open_write(o->tmp, false)));
cleanup:
    if (rc) fsx_out_abort(o);
    return rc;
}
