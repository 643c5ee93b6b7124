/* Deferred MPI-IO errors; see include/cairn/iodefer.h.  The MPI_File_*
 * functions HDF5 writes with are defined here and call the PMPI_ ones
 * (MPI's profiling interface), so HDF5 reaches them through cairn. */
#include "cairn/iodefer.h"

#include "cairn/error.h"

#include <mpi.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static _Thread_local struct {
    bool on;
    const char *path;
    char first[MPI_MAX_ERROR_STRING + 64]; /* empty: nothing failed yet */
} d;

void iodefer_begin(const char *path)
{
    d.on = true;
    d.path = path;
    d.first[0] = '\0';
}

int iodefer_end(void)
{
    d.on = false;
    if (!d.first[0]) return 0;
    return cairn_err_set(CAIRN_EIO, __FILE__, __LINE__, "cannot write %s: %s", d.path, d.first);
}

/* The first failure is the one to report. */
static void keep(const char *fmt, ...)
{
    if (d.first[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d.first, sizeof d.first, fmt, ap);
    va_end(ap);
}

/* A failed call: kept and hidden while deferring, else passed on. */
static int defer(int rc, const char *call)
{
    if (!d.on) return rc;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (errno) /* the system's word, if the MPI library left it (ompio does) */
        snprintf(msg, sizeof msg, "%s", strerror(errno));
    else if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "error %d", rc);
    keep("%s: %s", call, msg);
    return MPI_SUCCESS;
}

/* A write.  Open MPI's ompio reports a failed pwrite as a success with
 * fewer bytes done (printing the errno), and HDF5 then fails on the count.
 * While deferring, a failed or short write is kept and reported complete
 * (HDF5 also tracks the end of the file from the count), so every rank
 * goes on as if it had succeeded. */
static int wrote(int rc, const char *call, MPI_Status *mine, MPI_Status *st, MPI_Datatype type,
                 int count)
{
    int size = 0;
    MPI_Count done = 0, want = 0;
    if (MPI_Type_size(type, &size) == MPI_SUCCESS) want = (MPI_Count)size * count;
    if (d.on && rc == MPI_SUCCESS && MPI_Get_elements_x(mine, MPI_BYTE, &done) == MPI_SUCCESS &&
        done != MPI_UNDEFINED && done < want) {
        keep("%s wrote %lld of %lld bytes%s%s", call, (long long)done, (long long)want,
             errno ? ": " : "", errno ? strerror(errno) : "");
        MPI_Status_set_elements_x(mine, MPI_BYTE, want);
    } else if (rc != MPI_SUCCESS && (rc = defer(rc, call)) == MPI_SUCCESS) {
        MPI_Status_set_elements_x(mine, MPI_BYTE, want);
    }
    if (st != MPI_STATUS_IGNORE) *st = *mine;
    return rc;
}

int MPI_File_write_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype type,
                      MPI_Status *st)
{
    MPI_Status mine;
    errno = 0; /* to tell the system's word from an old one */
    int rc = PMPI_File_write_at(fh, off, buf, count, type, &mine);
    return wrote(rc, "MPI_File_write_at", &mine, st, type, count);
}

int MPI_File_write_at_all(MPI_File fh, MPI_Offset off, const void *buf, int count,
                          MPI_Datatype type, MPI_Status *st)
{
    MPI_Status mine;
    errno = 0;
    int rc = PMPI_File_write_at_all(fh, off, buf, count, type, &mine);
    return wrote(rc, "MPI_File_write_at_all", &mine, st, type, count);
}

int MPI_File_set_size(MPI_File fh, MPI_Offset size)
{
    errno = 0;
    int rc = PMPI_File_set_size(fh, size);
    return rc == MPI_SUCCESS ? rc : defer(rc, "MPI_File_set_size");
}

int MPI_File_sync(MPI_File fh)
{
    errno = 0;
    int rc = PMPI_File_sync(fh);
    return rc == MPI_SUCCESS ? rc : defer(rc, "MPI_File_sync");
}

int MPI_File_close(MPI_File *fh)
{
    errno = 0;
    int rc = PMPI_File_close(fh);
    return rc == MPI_SUCCESS ? rc : defer(rc, "MPI_File_close");
}
