/* Rank layout: split the world once into group communicators and lanes. */
#include "cairn/layout.h"

#include "cairn/error.h"
#include "cairn/plan.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int make_lanes(struct layout *l, const struct group *g)
{
    int rc = 0;
    l->n_lanes = g->n_lanes > 0 ? g->n_lanes : 1;
    l->lanes = calloc((size_t)l->n_lanes, sizeof *l->lanes);
    CAIRN_CHECK_ALLOC(l->lanes);
    for (int i = 0; i < l->n_lanes; i++) l->lanes[i] = MPI_COMM_NULL;
    CAIRN_CHECK_MPI(MPI_Comm_split(l->world, l->gid, l->rank, &l->lanes[0]));
    CAIRN_CHECK_MPI(MPI_Comm_set_errhandler(l->lanes[0], MPI_ERRORS_RETURN));
    for (int i = 1; i < l->n_lanes; i++) {
        /* parallel branches each talk on their own lane, so their
         * collectives cannot cross */
        CAIRN_CHECK_MPI(MPI_Comm_dup(l->lanes[0], &l->lanes[i]));
    }
    CAIRN_CHECK_MPI(MPI_Comm_rank(l->lanes[0], &l->grank));
    CAIRN_CHECK_MPI(MPI_Comm_size(l->lanes[0], &l->gsize));
cleanup:
    return rc;
}

static int split(MPI_Comm world, bool member, int color, int key, MPI_Comm *out)
{
    int rc = 0;
    CAIRN_CHECK_MPI(MPI_Comm_split(world, member ? color : MPI_UNDEFINED, key, out));
    if (*out != MPI_COMM_NULL) CAIRN_CHECK_MPI(MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN));
cleanup:
    return rc;
}

/* A model job's communicators: collective on the world (every rank takes
 * part in each split, members or not). */
static int make_training(struct layout *l, const struct train_plan *tp)
{
    int rc = 0;
    bool ps = l->gid == tp->ps_group, trainer = l->gid >= 0 && l->gid < tp->stages;
    CAIRN_CHECK(split(l->world, trainer, trainer ? l->grank : 0, l->gid, &l->pipe));
    CAIRN_CHECK(split(l->world, trainer || ps, 0, l->rank, &l->train));
    CAIRN_CHECK(split(l->world, ps || l->rank == 0, 0, l->rank, &l->dl));
cleanup:
    return rc;
}

int layout_create(MPI_Comm world, const struct plan *p, struct layout **out)
{
    int rc = 0;
    struct layout *l = calloc(1, sizeof *l);
    CAIRN_CHECK_ALLOC(l);
    l->world = l->pipe = l->train = l->dl = MPI_COMM_NULL;
    CAIRN_CHECK_MPI(MPI_Comm_dup(world, &l->world));
    CAIRN_CHECK_MPI(MPI_Comm_set_errhandler(l->world, MPI_ERRORS_RETURN));
    CAIRN_CHECK_MPI(MPI_Comm_rank(l->world, &l->rank));
    CAIRN_CHECK_MPI(MPI_Comm_size(l->world, &l->size));
    if (gethostname(l->host, sizeof l->host - 1)) snprintf(l->host, sizeof l->host, "?");
    l->gid = plan_group_of_rank(p, l->rank);
    if (l->gid >= 0) {
        CAIRN_CHECK(make_lanes(l, &p->groups[l->gid]));
    } else {
        MPI_Comm none = MPI_COMM_NULL; /* spare ranks still take part in the split */
        CAIRN_CHECK_MPI(MPI_Comm_split(l->world, MPI_UNDEFINED, l->rank, &none));
    }
    if (p->train) CAIRN_CHECK(make_training(l, p->train));
    *out = l;
    l = NULL;
cleanup:
    if (l) layout_destroy(&l);
    return rc;
}

void layout_destroy(struct layout **lp)
{
    if (!lp || !*lp) return;
    struct layout *l = *lp;
    for (int i = 0; l->lanes && i < l->n_lanes; i++)
        if (l->lanes[i] != MPI_COMM_NULL) MPI_Comm_free(&l->lanes[i]);
    free(l->lanes);
    MPI_Comm *extra[] = {&l->pipe, &l->train, &l->dl, &l->world};
    for (int i = 0; i < 4; i++)
        if (*extra[i] != MPI_COMM_NULL) MPI_Comm_free(extra[i]);
    free(l);
    *lp = NULL;
}
