/* Users' own data into the layout cairn-job(5) documents (`cairn data
 * import`): delimited text (CSV, TSV, the Criteo click-log layout) and
 * NumPy arrays (.npy, .npz), parsed in parallel, written by every rank into
 * one HDF5 file that appears whole or not at all. */
#ifndef CAIRN_DATAIMPORT_H
#define CAIRN_DATAIMPORT_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

enum { IMPORT_MAX_IDS = 32, IMPORT_MAX_COLUMNS = 65536, IMPORT_MAX_SHOWN = 5 };

/* An ids dataset [N] or [N, k] (i64) from k columns: integers (-1 or
 * more; an empty field is -1), or with rows > 0 any text hashed into rows
 * buckets (an empty field is empty_id). */
struct import_ids {
    char name[64];
    const char *columns; /* as given: "COL,COL,..." */
    int64_t rows;
};

/* What to import: the inputs, and for delimited text which column goes
 * where.  Column lists ("a,b,3,5-9") name header fields, or count from 1. */
struct import_spec {
    const char *out;
    const char *const *inputs;
    int n_inputs;
    char delim;               /* ',' or '\t' */
    bool header;              /* each file's first record names the columns */
    const char *names;        /* --columns: the names, with no header line */
    const char *label;        /* the label column(s), or NULL: no labels */
    bool target;              /* labels are f32 targets [N, T], not i32 classes [N] */
    const char *features;     /* NULL: every column not otherwise used */
    const char *skip;         /* columns left out of the default features */
    int n_ids;
    struct import_ids ids[IMPORT_MAX_IDS];
    bool fill_set;            /* a missing feature is fill; else refused */
    double fill;
    bool log1p;               /* each feature x becomes log(1 + max(x, 0)) */
    uint64_t seed;            /* of the hash */
    int64_t empty_id;         /* a hashed column's empty field */
    int64_t skip_bad;         /* bad records skipped before the import fails */
    double progress;          /* seconds between progress lines; 0: none */
    const char *command;      /* the command line, recorded in the file */
};

/* What an import did (the same on every rank). */
struct import_result {
    int64_t rows, skipped, bytes;
};

/* Collective on comm: delimited text into spec->out.  Errors:
 * CAIRN_EINPUT "FILE:LINE:COLUMN: ..." for the first bad record (or the
 * first beyond skip_bad), a missing or unreadable input, a bad column
 * list; CAIRN_EIO, CAIRN_EHDF5, CAIRN_ENOMEM.  The same file for any
 * number of ranks. */
int import_text(MPI_Comm comm, const struct import_spec *spec, struct import_result *res);

/* Collective on comm: NumPy arrays into spec->out, one dataset per array
 * name (NAME=FILE.npy, FILE.npy named after the file, or each member of
 * FILE.npz); several arrays of one name are joined along axis 0 in order. */
int import_numpy(MPI_Comm comm, const struct import_spec *spec, struct import_result *res);

#endif
