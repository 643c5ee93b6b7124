/* HDF5 helpers; see include/cairn/h5util.h. */
#include "cairn/h5util.h"

#include <pthread.h>

/* Process-wide by necessity: it guards a library that is itself global. */
static pthread_mutex_t h5_mutex = PTHREAD_MUTEX_INITIALIZER;

void h5_lock(void) { pthread_mutex_lock(&h5_mutex); }
void h5_unlock(void) { pthread_mutex_unlock(&h5_mutex); }

void h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

hid_t h5_native(enum dtype t)
{
    switch (t) {
    case DT_F32: return H5T_NATIVE_FLOAT;
    case DT_F64: return H5T_NATIVE_DOUBLE;
    case DT_I32: return H5T_NATIVE_INT32;
    case DT_I64: return H5T_NATIVE_INT64;
    default: return H5I_INVALID_HID;
    }
}

enum dtype h5_dtype(hid_t type)
{
    H5T_class_t c = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    if (c == H5T_FLOAT) return size == 4 ? DT_F32 : DT_F64;
    if (c == H5T_INTEGER) return size <= 4 ? DT_I32 : DT_I64;
    return DT_NONE;
}
