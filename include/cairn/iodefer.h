/* Deferred MPI-IO errors.
 *
 * HDF5 1.10's parallel writes cannot fail on some ranks only: a rank whose
 * write fails inside a collective HDF5 call (a metadata flush, the close)
 * leaves it early and the others wait for it for ever.  Between
 * iodefer_begin and iodefer_end, a failing MPI_File write, resize, sync
 * or close on this thread reports success to its caller (HDF5), as if the
 * bytes had been written, and the first failure is kept; every rank thus
 * takes the same path through HDF5, and the caller learns the failure at
 * iodefer_end, where the ranks agree on it (coll_agree).  A file written
 * with a deferred error is never used: the caller must discard it. */
#ifndef CAIRN_IODEFER_H
#define CAIRN_IODEFER_H

/* Start deferring on this thread; `path` names the file in messages. */
void iodefer_begin(const char *path);
/* Stop deferring.  Returns 0, or CAIRN_EIO with the first deferred error as
 * the current message ("cannot write PATH: MPI_File_write_at: ..."). */
int iodefer_end(void);

#endif
