/* Private to src/ckpt: what the checkpoint-file modules share. */
#ifndef CAIRN_CKPT_PRIV_H
#define CAIRN_CKPT_PRIV_H

#include "cairn/ckpt_file.h"

#include <hdf5.h>
#include <stdbool.h>
#include <stdint.h>

/* Limits on what a checkpoint file may claim (it is untrusted input). */
#define CKPT_MAX_TEXT (64 << 20)        /* bytes of a string attribute */
#define CKPT_MAX_DIM (INT64_C(1) << 50) /* one dimension */
#define CKPT_MAX_COUNT (INT64_C(1) << 50) /* epochs, steps */
#define CKPT_MAX_RANKS (1 << 24)

/* A persistent blob as the file holds it, and this rank's part of it. */
struct desc {
    int group, blob;
    enum dtype dtype;
    enum dist dist;
    struct shape file; /* the dataset's shape */
    int64_t row0, rows; /* my rows of file.d[0] (all of a scalar: rows 1) */
    int mine;           /* do I write (or count) a part? */
    uint64_t partial;   /* my part's checksum */
};

/* One persistent blob as a settings text describes it, and once checked,
 * its dataset. */
struct entry {
    char group[128], blob[128];
    enum dtype dtype;
    enum dist dist;
    struct shape shape; /* the blob's global shape (ndim -1 or dims -1: any) */
    int64_t ranks;      /* its group's ranks */
    struct shape file;  /* the dataset's shape */
    uint64_t stored;    /* the dataset's data checksum (its name's share removed) */
};

/* A checkpoint's metadata, validated. */
struct contents {
    struct ckpt_meta meta;
    int64_t format, seed, world_size;
    char *settings;
    int n;
    struct entry *v;
};

/* Reads go a slab of this many bytes at a time (a part's checksum runs
 * beside the next slab's read). */
#define READ_SLAB ((size_t)64 << 20)

/* ckpt_meta.c */
int64_t ckf_row_elems(const struct shape *s);
/* ", stage groups 2 -> 1" onto b for each family of p whose number of
 * groups differs among the checkpoint's groups (names, n of them). */
void ckf_family_change(const struct plan *p, const char *const *names, int n, struct strbuf *b);
/* The first group of family `family` in p, or -1. */
int ckf_family_first(const struct plan *p, const char *family);
int ckf_count_persistent(const struct plan *p);
/* Name up to three settings that differ into why. */
void ckf_explain_settings(const char *theirs, const char *ours, struct strbuf *why);
int ckf_attr_get_i64(hid_t obj, const char *name, int64_t lo, int64_t hi, int64_t *v);
int ckf_attr_get_u64(hid_t obj, const char *name, uint64_t *v);
int ckf_attr_get_str(hid_t obj, const char *name, char **out);
/* Select d's part of fspace and make the matching memory space. */
int ckf_select_part(hid_t fspace, const struct desc *d, hid_t *mspace);
void ckf_contents_free(struct contents *c);
/* The blobs a settings text lists, in its order (CAIRN_ECORRUPT if bad). */
int ckf_parse_settings(const char *text, struct contents *c);
int ckf_meta_sum(const struct contents *c, char out[17]);
uint64_t ckf_name_share(const struct entry *e);
int ckf_stripe_info(const struct ckpt_view *v, MPI_Info *info);
hid_t ckf_mpio_fapl(const struct ckpt_view *v, bool create, int64_t align);

/* ckpt_check.c */
const struct entry *ckf_contents_find(const struct contents *c, const char *group, const char *blob);
/* An extracted blob, whole, as dataset name of out with attributes dist
 * and checksum (of the data alone). */
int ckf_put_extracted(hid_t out, const char *name, const struct tensor *t, enum dist dist, uint64_t sum);
/* Open a checkpoint file and validate its metadata and datasets. */
int ckf_open_checked(const char *path, hid_t fapl, hid_t *f, struct contents *c);

/* tier_shared.c: a tier's fault points (ckpt_index_faults.at), at epoch
 * in dir, through the view's hook */
struct tier_at {
    const struct ckpt_view *v;
    int64_t epoch;
    const char *dir;
};
void ckf_tier_at(void *arg, const char *point);

/* ckpt_read.c */
/* CAIRN_EINPUT unless the checkpoint fits plan p (ckpt_settings_fold). */
int ckf_check_settings(const struct contents *c, const char *path, const struct plan *p);

#endif
