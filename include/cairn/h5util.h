/* Small HDF5 helpers shared by the reader, checkpoints and model files.
 * Every object cairn creates goes through h5_create_* so that it carries no
 * timestamps: identical runs then write byte-identical files.
 * Debian's parallel HDF5 is not thread-safe: code that may run while report
 * steps, parallel branches or a background checkpoint save run holds
 * h5_lock around HDF5 calls.  Whoever holds it may wait in a collective
 * only if every thread that takes it elsewhere releases it without waiting
 * for another rank (the data reader's calls are local). */
#ifndef CAIRN_H5UTIL_H
#define CAIRN_H5UTIL_H

#include "cairn/tensor.h"

#include <hdf5.h>
#include <mpi.h>

void h5_lock(void);
void h5_unlock(void);
/* Silence HDF5's own error printing once per process (errors come back
 * through cairn_err_h5 instead). */
void h5_quiet(void);
hid_t h5_native(enum dtype t);   /* H5T_NATIVE_* for a dtype */
/* For untrusted files: is every link on `path` (from loc) a hard link, so
 * that opening it cannot leave the file (an external link may name a FIFO
 * or another file; a soft link may point anywhere)?  1 yes, 0 no, -1 a
 * component is missing.  No link is followed before it is checked. */
int h5_path_local(hid_t loc, const char *path);
/* Does dataset dset keep its data in the file (no external storage)? */
int h5_data_local(hid_t dset);
enum dtype h5_dtype(hid_t type); /* DT_NONE for non-numeric types */
/* For untrusted files: is dset's stored element type exactly `want`, so
 * that reading it converts nothing but byte order?  (IEEE floats of that
 * size; two's complement integers of that size.)  Any error: false. */
bool h5_dset_is(hid_t dset, enum dtype want);

/* H5Fcreate (truncating) with fapl (H5P_DEFAULT or an MPI-IO list) into
 * *f.  Errors: CAIRN_EHDF5, "cannot create PATH: " and HDF5's cause. */
int h5_create_file(const char *path, hid_t fapl, hid_t *f);
/* Collective on comm, before an MPI-IO open of path (see h5util.c). */
void h5_mpio_before_open(MPI_Comm comm, const char *path);
hid_t h5_create_group(hid_t loc, const char *name);
/* A dataset of the given dtype and global shape; missing groups on the
 * way to name are created.  dcpl may be H5P_DEFAULT. */
hid_t h5_create_dataset(hid_t loc, const char *name, enum dtype t, const struct shape *s,
                        hid_t dcpl);
/* Write rows [lo, lo + n) of dim 0 of dset from data (collective on the
 * file's communicator if dxpl asks for it; n may be 0). */
int h5_write_rows(hid_t dset, enum dtype t, int64_t lo, int64_t n, const void *data, hid_t dxpl);
/* Create name under loc and write all of v into it. */
int h5_put_tensor(hid_t loc, const char *name, const struct tensor *v);

/* Scalar attributes. */
int h5_attr_put(hid_t obj, const char *name, hid_t type, const void *v);
int h5_attr_put_str(hid_t obj, const char *name, const char *s);
int h5_attr_put_i64(hid_t obj, const char *name, int64_t v);
/* Attributes of an untrusted file, each checked to hold exactly one value
 * of its class; errors carry `code` (CAIRN_ECORRUPT for a checkpoint,
 * CAIRN_EINPUT for a model file) and name the attribute.  An integer must
 * lie in [lo, hi]; a string is fixed-length, at most max bytes, returned
 * in a malloc'd buffer the caller frees. */
int h5_attr_get_i64(hid_t obj, const char *name, int64_t lo, int64_t hi, int code, int64_t *v);
int h5_attr_get_u64(hid_t obj, const char *name, int code, uint64_t *v);
int h5_attr_get_str(hid_t obj, const char *name, size_t max, int code, char **out);

#endif
