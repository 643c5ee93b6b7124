/* The plan: a job resolved for a number of ranks.  Groups get their world
 * ranks, tasks their group, and (after analyze) every blob an id and a type.
 * Needs no MPI: `cairn print` and `cairn check` work from a plan alone. */
#ifndef CAIRN_PLAN_H
#define CAIRN_PLAN_H

#include "cairn/job.h"

struct diags;

struct blob_info {
    const char *name;
    struct blob_type type;
    bool persistent; /* created by init: part of every checkpoint */
    const char *file; /* first definition */
    int line;
};

struct group {
    const char *name;
    int nranks;
    int first; /* world ranks first .. first + nranks - 1 */
    const char *file;
    int line;
    struct blob_info *blobs; /* set by analyze */
    int n_blobs;
    int n_lanes; /* communicators its tasks need: 1 + parallel branches beyond the first */
    const char *note; /* what an extension says of its group in `cairn print`, or NULL */
    /* Groups of one family (FAMILY0, FAMILY1, ...: the pipeline's stages)
     * hold the same persistent state, so a checkpoint fits a job with
     * more or fewer of them (ckpt_settings_fold), or NULL. */
    const char *family;
};

struct stop_ref {
    int group;
    int blob;
};

struct plan {
    struct arena *arena;
    const struct job *job;
    int nranks;     /* world size the plan is for */
    int used_ranks; /* ranks the groups take; the rest are spare */
    struct group *groups;
    int n_groups;
    struct phase phases[N_PHASES];
    struct stop_blob *stop_blobs; /* the job's and the planner's, by name */
    int n_stop_blobs;
    struct stop_ref *stops; /* resolved by analyze */
    int n_stops;
    int64_t steps_per_epoch; /* 0: an extension's count, known at run time */
    struct plan_ext *exts;   /* the job's extensions, in ext_all order */
    int n_exts;
};

/* Resolve `job` for `nranks` ranks: place groups in declaration order, bind
 * tasks to groups.  nranks < 1 means "as many as the groups need".
 * Layout problems go to `d`; returns 0 or CAIRN_EINPUT.  Not collective. */
int plan_build(const struct job *job, int nranks, struct plan **out, struct diags *d);
void plan_destroy(struct plan **p);

int plan_find_group(const struct plan *p, const char *name); /* -1 if none */
int plan_group_of_rank(const struct plan *p, int world_rank); /* -1: spare */
int group_find_blob(const struct group *g, const char *name); /* -1 if none */
/* The plan part of the extension that generated op (NULL: none). */
const void *plan_op_part(const struct plan *p, const struct op_node *op);

#endif
