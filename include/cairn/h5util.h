/* Small HDF5 helpers shared by the reader, checkpoints and model files.
 * Debian's parallel HDF5 is not thread-safe: code that may run while report
 * steps or parallel branches run holds h5_lock around HDF5 calls. */
#ifndef CAIRN_H5UTIL_H
#define CAIRN_H5UTIL_H

#include "cairn/tensor.h"

#include <hdf5.h>

void h5_lock(void);
void h5_unlock(void);
/* Silence HDF5's own error printing once per process (errors come back
 * through cairn_err_h5 instead). */
void h5_quiet(void);
hid_t h5_native(enum dtype t);   /* H5T_NATIVE_* for a dtype */
enum dtype h5_dtype(hid_t type); /* DT_NONE for non-numeric types */

#endif
