/* Extensions: kinds of model state that plug into the generic core.
 *
 * Training (src/train/: models, their pipeline, replicas, PS shards and
 * embedding tables) is the one linked in today.  An extension owns some
 * top-level job-file keys, adds
 * groups and generated tasks to the plan, asks the layout for the
 * communicators it needs, keeps per-rank state at run time, and brings its
 * own ops (ext_def.ops), whose kernels get that state as op_call.state, and
 * commands (ext_def.commands).  The core (config, plan, layout, runner,
 * exec, the command line) calls only the hooks below and never names an
 * extension; src/app/registry.c lists the ones linked in.  What an
 * extension needs of the core comes through this header: cfg.h to read its
 * job-file keys, cmdline.h for its commands.
 *
 * Collective hooks are collective on the world (every rank calls them, in
 * or out of the extension's groups). */
#ifndef CAIRN_EXT_H
#define CAIRN_EXT_H

#include "cairn/cfg.h"
#include "cairn/cmdline.h"

#include <libconfig.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

struct diags;
struct group;
struct plan;
struct runtime;
struct strbuf;

struct op_def;

/* A command of an extension's own: `cairn NAME ...`, or `cairn data KIND
 * ...` for a data set tool (NAME "data KIND"). */
struct ext_command {
    const char *name;
    const char *synopsis; /* its lines in `cairn --help` (or `cairn data --help`) */
    const char *about;    /* a data tool's explanation in `cairn data --help`, or NULL */
    /* argv[0] is the command's last word; returns the process exit code
     * (cmdline.h has what the core's commands use). */
    int (*run)(int argc, char **argv);
};

struct ext_def {
    const char *name;
    /* Its ops, NULL-terminated: listed after the core's (op_all). */
    const struct op_def *const *ops;
    /* Its commands, ended by one without a name; NULL for none. */
    const struct ext_command *commands;
    /* ---- the job file (config.c) ---- */
    const char *const *keys;      /* top-level keys it owns, NULL-terminated */
    const char *const *stop_keys; /* keys of the stop section it owns, NULL-terminated */
    /* Read its keys into *spec (allocated in cfg_arena); leave *spec NULL
     * when the job does not use the extension.  Keys are read with the
     * getters of cfg.h; problems: cfg_err. */
    void (*configure)(struct cfg *c, const config_setting_t *root, void **spec);
    /* Does the job stop by the extension's own condition (accuracy, say)? */
    bool (*has_stop)(const void *spec);
    /* ---- the plan (plan.c; not collective) ---- */
    /* Groups placed before the job's own (its first rank is world rank 0).
     * p->nranks is the ranks given, or 0 for "as many as the groups need";
     * the job's own groups are in p->job. */
    int (*plan_groups)(const struct plan *p, const void *spec, struct group **gen, int *n_gen,
                       struct diags *d);
    /* Generated tasks, put before the job's in each phase; what the runtime
     * needs of the plan goes into *part (plan arena).  Ops it generates
     * carry op_node.ext = ext + 1, the plan extension's index + 1. */
    int (*plan_tasks)(struct plan *p, const void *spec, int ext, void **part);
    /* Optional: what `cairn print` shows of it after the groups (the model
     * and where its state goes, say), whole lines; part is what
     * plan_tasks made (NULL without plan_tasks). */
    int (*describe)(const void *spec, const void *part, struct strbuf *out);
    /* ---- run time ---- */
    /* The communicators it needs: for communicator i, this rank's
     * MPI_Comm_split color (-1: not a member) and key.  The layout makes
     * them (collectively, in order) and hands them to create. */
    int n_comms;
    void (*comm_split)(const void *part, int group, int group_rank, int world_rank, int i,
                       int *color, int *key);
    /* Collective: this rank's state. */
    int (*create)(struct runtime *rt, const void *part, const MPI_Comm *comms, void **state);
    void (*destroy)(void **state);
    /* Steps in one epoch, the same on every rank; 0: the job's own count. */
    int64_t (*steps_per_epoch)(const void *state);
    /* Samples one epoch's steps take, the same on every rank (for the
     * progress lines' samples/s); NULL or 0: not counted. */
    int64_t (*epoch_samples)(const void *state);
    /* Collective, after each epoch (steps_seconds: the epoch's steps without
     * epoch_end): metrics fields (",\"k\":v..." JSON) and a text for the
     * epoch's log line, both meaningful on world rank 0. */
    int (*epoch_stats)(void *state, double steps_seconds, struct strbuf *fields,
                       struct strbuf *text);
    /* Collective: leave no message in flight and the state whole, so that
     * a checkpoint saves what a restart needs (before every checkpoint,
     * and after the last epoch).  It may be called again with nothing
     * new in between. */
    int (*quiesce)(void *state);
};

/* The extensions linked in (src/app/registry.c), in a fixed order. */
const struct ext_def *const *ext_all(int *n);

/* A job's use of an extension (job.h) and a plan's (plan.h). */
struct job_ext {
    const struct ext_def *def;
    const void *spec;
};

struct plan_ext {
    const struct ext_def *def;
    const void *spec;
    const void *part;
};

#endif
