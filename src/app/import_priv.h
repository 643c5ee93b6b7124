/* What the importers (import_text.c, import_numpy.c) share
 * (import_common.c). */
#ifndef CAIRN_IMPORT_PRIV_H
#define CAIRN_IMPORT_PRIV_H

#include "cairn/dataimport.h"

#include "data_priv.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The first bad records, in input order, how many there were, and the
 * first problem that ended a rank's parsing (a record that cannot be
 * skipped, a read error): each rank keeps its own, and an ordered
 * reduction joins them, so the import reports the first problem in the
 * input, whatever the number of ranks. */
struct import_bad {
    int64_t count;
    int32_t n, fatal; /* fatal: 0, or the error code that ended this part */
    char msg[IMPORT_MAX_SHOWN][240];
    char fatal_msg[240];
};
/* Note one more bad record (its "FILE:LINE:COLUMN: ..." message). */
void import_bad_add(struct import_bad *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Note what ended this rank's parsing: code, and the current message. */
void import_bad_fatal(struct import_bad *b, int code);
/* Collective on comm: every rank's lists joined in rank order into *all
 * (a part that ended fatally hides those after it). */
int import_bad_join(MPI_Comm comm, const struct import_bad *mine, struct import_bad *all);
/* After the join, the same on every rank: CAIRN_EINPUT with the first
 * message if more than skip_bad records were bad before the end, else the
 * fatal error, else 0. */
int import_bad_verdict(const struct import_bad *all, int64_t skip_bad);

/* Progress lines on rank 0 (stderr): bytes done of total, the rate and
 * the ETA, at most every interval seconds (0: none).  done: this rank's
 * bytes, scaled by the number of ranks (they read alike). */
struct import_progress {
    double interval, t0, last;
    int64_t total;
    int ranks;
};
void import_progress_init(struct import_progress *p, MPI_Comm comm, double interval, int64_t total);
void import_progress(struct import_progress *p, int64_t done);

/* Collective on comm: the datasets and the attributes every imported file
 * carries (its sources with their sizes, the command, the format, the
 * records skipped), written by data_write. */
int import_write(MPI_Comm comm, const struct import_spec *spec, const char *format, const int64_t *sizes,
                 int rc, const struct rows_out *d, int nd, int64_t skipped);

/* ---- the columns of delimited text (import_columns.c) ---- */

enum col_kind { C_SKIP, C_FEATURE, C_LABEL, C_TARGET, C_IDS, C_HASH };
struct col {
    uint8_t kind;
    uint8_t set;  /* its ids dataset */
    int32_t pos;  /* its place in the row of its dataset */
};
struct layout {
    int n; /* fields per record */
    struct col *col;
    char **name; /* n names, from the header or --columns; NULL: none */
    int features, targets, ids_k[IMPORT_MAX_IDS];
    bool labels;
    uint64_t salt[IMPORT_MAX_IDS];
};

/* L->n columns (and their names, if any) given: each column's kind and
 * place as spec says, in a fixed order: label, ids, features (given, or
 * every column left but --skip's).  Errors: CAIRN_EINPUT naming the
 * option, CAIRN_ENOMEM. */
int import_layout_resolve(struct layout *L, const struct import_spec *spec);
void import_layout_free(struct layout *L);
/* Column c's name for a message ('name', or its number). */
const char *import_col_name(const struct layout *L, int c, char *buf, size_t size);

/* A short quote of n bytes of a field for a message: at most 40 bytes,
 * "..." if cut. */
void import_quote(char *dst, size_t size, const char *s, size_t n);

#endif
