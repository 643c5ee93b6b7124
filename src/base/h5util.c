/* HDF5 helpers; see include/cairn/h5util.h. */
#include "cairn/h5util.h"

#include "cairn/coll.h"
#include "cairn/error.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Process-wide by necessity: it guards a library that is itself global.
 * A ticket lock, first come first served: a background checkpoint save
 * that lets go between slabs (h5_unlock, h5_lock) lets a waiting data
 * reader in, which a plain mutex need not do. */
static pthread_mutex_t h5_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t h5_turn = PTHREAD_COND_INITIALIZER;
static unsigned long h5_next, h5_serving;

void h5_lock(void)
{
    pthread_mutex_lock(&h5_mutex);
    unsigned long mine = h5_next++;
    while (mine != h5_serving) pthread_cond_wait(&h5_turn, &h5_mutex);
    pthread_mutex_unlock(&h5_mutex);
}

void h5_unlock(void)
{
    pthread_mutex_lock(&h5_mutex);
    h5_serving++;
    pthread_cond_broadcast(&h5_turn);
    pthread_mutex_unlock(&h5_mutex);
}

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

int h5_path_local(hid_t loc, const char *path)
{
    char part[1024];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof part) return 0;
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        memcpy(part, path, i);
        part[i] = '\0';
        if (i == 1 && part[0] == '/') continue; /* the root group itself */
        H5L_info_t li;
        if (H5Lexists(loc, part, H5P_DEFAULT) <= 0) return -1; /* its parents were checked */
        if (H5Lget_info(loc, part, &li, H5P_DEFAULT) < 0 || li.type != H5L_TYPE_HARD) return 0;
    }
    return 1;
}

int h5_data_local(hid_t dset)
{
    hid_t dcpl = H5Dget_create_plist(dset);
    if (dcpl < 0) return 0;
    int external = H5Pget_external_count(dcpl);
    H5D_layout_t layout = H5Pget_layout(dcpl);
    H5Pclose(dcpl);
    return external == 0 && layout != H5D_VIRTUAL;
}

/* Floats must be IEEE binary32/binary64 (a custom float of the same size
 * would be converted by HDF5, silently); byte order is a lossless swap. */
static bool float_is(hid_t t, hid_t le, hid_t be) { return H5Tequal(t, le) > 0 || H5Tequal(t, be) > 0; }

bool h5_dset_is(hid_t dset, enum dtype want)
{
    hid_t t = H5Dget_type(dset);
    if (t < 0) return false;
    H5T_class_t c = H5Tget_class(t);
    size_t size = H5Tget_size(t);
    bool sign = c == H5T_INTEGER && H5Tget_sign(t) == H5T_SGN_2, ok = false;
    switch (want) {
    case DT_F32: ok = c == H5T_FLOAT && float_is(t, H5T_IEEE_F32LE, H5T_IEEE_F32BE); break;
    case DT_F64: ok = c == H5T_FLOAT && float_is(t, H5T_IEEE_F64LE, H5T_IEEE_F64BE); break;
    case DT_I32: ok = sign && size == 4; break;
    case DT_I64: ok = sign && size == 8; break;
    default: break;
    }
    H5Tclose(t);
    return ok;
}

enum dtype h5_dtype(hid_t type)
{
    H5T_class_t c = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    if (c == H5T_FLOAT) return size == 4 ? DT_F32 : DT_F64;
    if (c == H5T_INTEGER) return size <= 4 ? DT_I32 : DT_I64;
    return DT_NONE;
}

/* A copy of base (or a new list of class cls) without object timestamps. */
static hid_t untimed(hid_t base, hid_t cls)
{
    hid_t p = base == H5P_DEFAULT ? H5Pcreate(cls) : H5Pcopy(base);
    if (p >= 0 && H5Pset_obj_track_times(p, 0) < 0) {
        H5Pclose(p);
        return H5I_INVALID_HID;
    }
    return p;
}

/* Every HDF5 call clears the error stack: a failure's cause must survive
 * the closes after it, for cairn_err_h5 to report. */
static hid_t save_cause(hid_t id) { return id < 0 ? H5Eget_current_stack() : H5I_INVALID_HID; }
static void restore_cause(hid_t stack)
{
    if (stack >= 0) H5Eset_current_stack(stack);
}

int h5_create_file(const char *path, hid_t fapl, hid_t *f)
{
    hid_t fcpl = untimed(H5P_DEFAULT, H5P_FILE_CREATE);
    *f = fcpl >= 0 ? H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl) : H5I_INVALID_HID;
    hid_t cause = save_cause(*f);
    if (fcpl >= 0) H5Pclose(fcpl);
    restore_cause(cause);
    if (*f >= 0) return 0;
    return cairn_err_wrap(cairn_err_h5(__FILE__, __LINE__, "H5Fcreate"), "cannot create %s: ", path);
}

static hid_t link_list(void)
{
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    if (lcpl >= 0 && H5Pset_create_intermediate_group(lcpl, 1) < 0) {
        H5Pclose(lcpl);
        return H5I_INVALID_HID;
    }
    return lcpl;
}

hid_t h5_create_group(hid_t loc, const char *name)
{
    hid_t gcpl = untimed(H5P_DEFAULT, H5P_GROUP_CREATE), lcpl = link_list(), g = H5I_INVALID_HID;
    if (gcpl >= 0 && lcpl >= 0) g = H5Gcreate2(loc, name, lcpl, gcpl, H5P_DEFAULT);
    if (gcpl >= 0) H5Pclose(gcpl);
    if (lcpl >= 0) H5Pclose(lcpl);
    return g;
}

static hid_t file_space(const struct shape *s)
{
    hsize_t dims[CAIRN_MAX_DIMS];
    for (int i = 0; i < s->ndim; i++) dims[i] = (hsize_t)s->d[i];
    return s->ndim == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(s->ndim, dims, NULL);
}

hid_t h5_create_dataset(hid_t loc, const char *name, enum dtype t, const struct shape *s,
                        hid_t dcpl)
{
    hid_t p = untimed(dcpl, H5P_DATASET_CREATE), lcpl = link_list(), sp = file_space(s);
    hid_t d = H5I_INVALID_HID;
    if (p >= 0 && lcpl >= 0 && sp >= 0) d = H5Dcreate2(loc, name, h5_native(t), sp, lcpl, p, H5P_DEFAULT);
    hid_t cause = save_cause(d);
    if (sp >= 0) H5Sclose(sp);
    if (lcpl >= 0) H5Pclose(lcpl);
    if (p >= 0) H5Pclose(p);
    restore_cause(cause);
    return d;
}

int h5_write_rows(hid_t dset, enum dtype t, int64_t lo, int64_t n, const void *data, hid_t dxpl)
{
    int rc = 0, nd;
    hsize_t dims[CAIRN_MAX_DIMS], start[CAIRN_MAX_DIMS] = {0}, count[CAIRN_MAX_DIMS];
    hid_t fs = H5Dget_space(dset), ms = H5I_INVALID_HID;
    CAIRN_CHECK_H5(fs);
    nd = H5Sget_simple_extent_dims(fs, dims, NULL);
    CAIRN_CHECK_H5(nd);
    if (nd == 0) {
        CAIRN_CHECK_H5(H5Dwrite(dset, h5_native(t), H5S_ALL, H5S_ALL, dxpl, data));
        goto cleanup;
    }
    memcpy(count, dims, sizeof count);
    start[0] = (hsize_t)lo;
    count[0] = (hsize_t)n;
    ms = H5Screate_simple(nd, count, NULL);
    CAIRN_CHECK_H5(ms);
    if (n > 0)
        CAIRN_CHECK_H5(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
    else
        CAIRN_CHECK_H5(H5Sselect_none(fs) < 0 || H5Sselect_none(ms) < 0 ? -1 : 0);
    CAIRN_CHECK_H5(H5Dwrite(dset, h5_native(t), ms, fs, dxpl, data));
cleanup:
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

int h5_put_tensor(hid_t loc, const char *name, const struct tensor *v)
{
    int rc = 0;
    hid_t d = h5_create_dataset(loc, name, v->dtype, &v->shape, H5P_DEFAULT);
    CAIRN_CHECK_H5(d);
    CAIRN_CHECK_H5(H5Dwrite(d, h5_native(v->dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, v->data));
cleanup:
    /* the close writes what HDF5 buffered: a small dataset's data */
    if (d >= 0 && H5Dclose(d) < 0 && rc == 0) rc = cairn_err_h5(__FILE__, __LINE__, "H5Dclose");
    return rc;
}

int h5_attr_put(hid_t obj, const char *name, hid_t type, const void *v)
{
    int rc = 0;
    hid_t space = H5Screate(H5S_SCALAR), a = H5I_INVALID_HID;
    CAIRN_CHECK_H5(space);
    a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    CAIRN_CHECK_H5(a);
    CAIRN_CHECK_H5(H5Awrite(a, type, v));
cleanup:
    if (a >= 0) H5Aclose(a);
    if (space >= 0) H5Sclose(space);
    return rc;
}

int h5_attr_put_str(hid_t obj, const char *name, const char *s)
{
    int rc = 0;
    hid_t t = H5Tcopy(H5T_C_S1);
    CAIRN_CHECK_H5(t);
    CAIRN_CHECK_H5(H5Tset_size(t, strlen(s) + 1));
    CAIRN_CHECK(h5_attr_put(obj, name, t, s));
cleanup:
    if (t >= 0) H5Tclose(t);
    return rc;
}

int h5_attr_put_i64(hid_t obj, const char *name, int64_t v)
{
    return h5_attr_put(obj, name, H5T_NATIVE_INT64, &v);
}

/* Open MPI's MPI-IO (ompio), when all ranks share a node, keeps a
 * semaphore named after the file's base name in /dev/shm, and reuses one
 * that exists.  A rank killed while holding it (the watchdog, a
 * preemption, a crash inside the open) leaves it taken, and every later
 * open of that name on the node then waits for ever: every rerun would
 * hang at the same point.  So rank 0 (on that node whenever one is used)
 * removes the name first; a process that has the old one open keeps it. */
void h5_mpio_before_open(MPI_Comm comm, const char *path)
{
    int rank = 0;
    char name[300];
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0 && snprintf(name, sizeof name, "/OMPIO_%s", base) < (int)sizeof name)
        sem_unlink(name);
    coll_barrier(comm);
}

/* Open attribute `name` of obj, which must hold one value of class cls:
 * a file is untrusted input, and an array read into one value would
 * overflow it. */
static int attr_open(hid_t obj, const char *name, H5T_class_t cls, int code, hid_t *a, hid_t *t)
{
    int rc = 0;
    hid_t space = H5I_INVALID_HID;
    if (H5Aexists(obj, name) <= 0) CAIRN_FAIL(code, "attribute '%s' is missing", name);
    *a = H5Aopen(obj, name, H5P_DEFAULT);
    CAIRN_CHECK_H5(*a);
    *t = H5Aget_type(*a);
    space = H5Aget_space(*a);
    CAIRN_CHECK_H5(*t);
    CAIRN_CHECK_H5(space);
    H5S_class_t sc = H5Sget_simple_extent_type(space);
    hssize_t npoints = H5Sget_simple_extent_npoints(space);
    if ((sc != H5S_SCALAR && sc != H5S_SIMPLE) || npoints != 1)
        CAIRN_FAIL(code, "attribute '%s' does not hold exactly one value", name);
    if (H5Tget_class(*t) != cls)
        CAIRN_FAIL(code, "attribute '%s' is not %s", name,
                   cls == H5T_STRING ? "a string" : cls == H5T_INTEGER ? "an integer" : "a number");
cleanup:
    if (space >= 0) H5Sclose(space);
    return rc;
}

int h5_attr_get_i64(hid_t obj, const char *name, int64_t lo, int64_t hi, int code, int64_t *v)
{
    int rc = 0;
    hid_t a = H5I_INVALID_HID, t = H5I_INVALID_HID;
    CAIRN_CHECK(attr_open(obj, name, H5T_INTEGER, code, &a, &t));
    if (H5Tget_size(t) > 8) /* HDF5 clamps what does not fit; the range check catches it */
        CAIRN_FAIL(code, "attribute '%s' is not a 64-bit signed integer", name);
    if (H5Tget_sign(t) == H5T_SGN_NONE && H5Tget_size(t) == 8) { /* named as stored, not clamped */
        uint64_t u = 0;
        CAIRN_CHECK_H5(H5Aread(a, H5T_NATIVE_UINT64, &u));
        if (u > (uint64_t)INT64_MAX)
            CAIRN_FAIL(code, "attribute '%s' is %llu, outside [%lld, %lld]", name, (unsigned long long)u,
                       (long long)lo, (long long)hi);
    }
    CAIRN_CHECK_H5(H5Aread(a, H5T_NATIVE_INT64, v));
    if (*v < lo || *v > hi)
        CAIRN_FAIL(code, "attribute '%s' is %lld, outside [%lld, %lld]", name,
                   (long long)*v, (long long)lo, (long long)hi);
cleanup:
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return rc;
}

int h5_attr_get_u64(hid_t obj, const char *name, int code, uint64_t *v)
{
    int rc = 0;
    hid_t a = H5I_INVALID_HID, t = H5I_INVALID_HID;
    CAIRN_CHECK(attr_open(obj, name, H5T_INTEGER, code, &a, &t));
    if (H5Tget_size(t) != 8 || H5Tget_sign(t) != H5T_SGN_NONE)
        CAIRN_FAIL(code, "attribute '%s' is not a 64-bit unsigned integer", name);
    CAIRN_CHECK_H5(H5Aread(a, H5T_NATIVE_UINT64, v));
cleanup:
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return rc;
}

/* Read null-padded, so a string stored without a terminator keeps its
 * last character. */
int h5_attr_get_str(hid_t obj, const char *name, size_t max, int code, char **out)
{
    int rc = 0;
    hid_t a = H5I_INVALID_HID, t = H5I_INVALID_HID, mt = H5I_INVALID_HID;
    char *buf = NULL;
    CAIRN_CHECK(attr_open(obj, name, H5T_STRING, code, &a, &t));
    if (H5Tis_variable_str(t) != 0)
        CAIRN_FAIL(code, "attribute '%s' is not a fixed-length string", name);
    size_t n = H5Tget_size(t);
    if (n == 0 || n > max)
        CAIRN_FAIL(code, "attribute '%s' has a bad length (%zu bytes)", name, n);
    buf = calloc(n + 1, 1);
    CAIRN_CHECK_ALLOC(buf);
    mt = H5Tcopy(H5T_C_S1);
    CAIRN_CHECK_H5(mt);
    CAIRN_CHECK_H5(H5Tset_size(mt, n));
    CAIRN_CHECK_H5(H5Tset_strpad(mt, H5T_STR_NULLPAD));
    CAIRN_CHECK_H5(H5Aread(a, mt, buf));
    *out = buf;
    buf = NULL;
cleanup:
    free(buf);
    if (mt >= 0) H5Tclose(mt);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return rc;
}
