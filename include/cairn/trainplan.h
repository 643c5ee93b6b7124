/* The training extension's front end: reading its job-file sections
 * (src/train/config_train.c) and planning a model job (src/train/trainplan.c). */
#ifndef CAIRN_TRAINPLAN_H
#define CAIRN_TRAINPLAN_H

#include <libconfig.h>

struct cfg;
struct plan;
struct strbuf;
struct group;
struct diags;

/* The model, data, pipeline, replicas, ps, on_nan and debug sections and
 * stop.accuracy / stop.loss; *spec stays NULL without a model section. */
void train_configure(struct cfg *c, const config_setting_t *root, void **spec);

/* The pipeline-stage and parameter-server groups, placed before the job's
 * own groups so that trainer 0 is world rank 0.  Errors: CAIRN_EINPUT (a
 * job group uses one of their names). */
int trainplan_groups(const struct plan *p, const void *spec, struct group **gen, int *n_gen,
                     struct diags *d);
/* Put the generated tasks before the job's in each phase; *part receives
 * the struct train_plan. */
int trainplan_tasks(struct plan *p, const void *spec, int ext, void **part);
/* `cairn print`'s lines on the model: layers, tables and their shards,
 * the most memory a stage rank and a shard hold. */
int trainplan_describe(const void *spec, const void *part, struct strbuf *out);

#endif
