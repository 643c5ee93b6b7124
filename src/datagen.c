/* Example and test data sets; see include/cairn/datagen.h. */
#include "cairn/datagen.h"

#include "cairn/error.h"
#include "cairn/h5util.h"

#include <stdlib.h>

int datagen_range(const char *file, const char *dataset, int64_t start, int64_t count)
{
    int rc = 0;
    hid_t f = H5I_INVALID_HID, space = H5I_INVALID_HID, d = H5I_INVALID_HID;
    int64_t *v = malloc((size_t)(count ? count : 1) * sizeof *v);
    CAIRN_CHECK_ALLOC(v);
    for (int64_t i = 0; i < count; i++) v[i] = start + i;
    h5_quiet();
    hsize_t dims[1] = {(hsize_t)count};
    f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    CAIRN_CHECK_H5(f);
    space = H5Screate_simple(1, dims, NULL);
    CAIRN_CHECK_H5(space);
    d = H5Dcreate2(f, dataset, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CAIRN_CHECK_H5(d);
    CAIRN_CHECK_H5(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v));
cleanup:
    if (d >= 0) H5Dclose(d);
    if (space >= 0) H5Sclose(space);
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Fclose");
    free(v);
    return rc;
}
