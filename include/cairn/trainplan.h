/* Planning a model job (see src/trainplan.c for the plan it makes). */
#ifndef CAIRN_TRAINPLAN_H
#define CAIRN_TRAINPLAN_H

struct plan;
struct group;
struct diags;

/* The pipeline-stage and parameter-server groups, placed before the job's
 * own groups so that trainer 0 is world rank 0.  Errors: CAIRN_EINPUT (a
 * job group uses one of their names). */
int trainplan_groups(struct plan *p, struct group **gen, int *n_gen, struct diags *d);
/* Fill p->train and put the generated tasks before the job's in each phase. */
int trainplan_tasks(struct plan *p);

#endif
