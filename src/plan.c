/* Planning: a job spec resolved for a number of ranks (include/cairn/plan.h). */
#include "cairn/plan.h"

#include "cairn/arena.h"
#include "cairn/diag.h"
#include "cairn/error.h"

#include <stdio.h>
#include <string.h>

int plan_find_group(const struct plan *p, const char *name)
{
    for (int i = 0; i < p->n_groups; i++)
        if (name && strcmp(p->groups[i].name, name) == 0) return i;
    return -1;
}

int plan_group_of_rank(const struct plan *p, int world_rank)
{
    for (int i = 0; i < p->n_groups; i++) {
        const struct group *g = &p->groups[i];
        if (world_rank >= g->first && world_rank < g->first + g->nranks) return i;
    }
    return -1;
}

int group_find_blob(const struct group *g, const char *name)
{
    for (int i = 0; i < g->n_blobs; i++)
        if (strcmp(g->blobs[i].name, name) == 0) return i;
    return -1;
}

static void place_groups(struct plan *p)
{
    const struct job *j = p->job;
    p->n_groups = j->n_groups;
    p->groups = arena_alloc(p->arena, (size_t)(p->n_groups + 1) * sizeof *p->groups);
    int next = 0;
    for (int i = 0; i < j->n_groups; i++) {
        struct group *g = &p->groups[i];
        g->name = j->groups[i].name;
        g->nranks = (int)j->groups[i].ranks;
        g->first = next;
        g->file = j->groups[i].file;
        g->line = j->groups[i].line;
        g->n_lanes = 1;
        next += g->nranks;
    }
    p->used_ranks = next;
}

/* "the job needs 5 ranks (main: 2, ps: 3) but has 4" */
static void too_few_ranks(struct plan *p, struct diags *d)
{
    char list[1024] = "";
    for (int i = 0; i < p->n_groups; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s: %d", i ? ", " : "",
                 p->groups[i].name, p->groups[i].nranks);
    diags_add(d, p->job->file, p->groups[0].line ? p->groups[0].line : 1,
              "the job needs %d ranks (%s) but was given %d", p->used_ranks, list, p->nranks);
}

static int bind_tasks(struct plan *p, struct diags *d)
{
    int errors = 0;
    for (int ph = 0; ph < N_PHASES; ph++) {
        const struct phase *src = &p->job->phases[ph];
        struct phase *dst = &p->phases[ph];
        dst->n = src->n;
        dst->line = src->line;
        dst->v = arena_alloc(p->arena, (size_t)(src->n + 1) * sizeof *dst->v);
        for (int i = 0; i < src->n; i++) {
            dst->v[i] = src->v[i];
            dst->v[i].group_id = plan_find_group(p, src->v[i].group);
            if (dst->v[i].group_id < 0 && src->v[i].group) {
                diags_add(d, src->v[i].file, src->v[i].line, "task '%s': unknown group '%s'",
                          src->v[i].name, src->v[i].group);
                errors++;
            }
        }
    }
    return errors;
}

int plan_build(const struct job *job, int nranks, struct plan **out, struct diags *d)
{
    int rc = 0;
    struct plan *p = NULL;
    struct arena *a = arena_create();
    p = arena_alloc(a, sizeof *p);
    p->arena = a;
    p->job = job;
    *out = NULL;
    place_groups(p);
    p->nranks = nranks > 0 ? nranks : p->used_ranks;
    if (p->n_groups == 0) {
        diags_add(d, job->file, 1, "the job declares no groups (give groups = ( ... ))");
        CAIRN_FAIL(CAIRN_EINPUT, "no groups");
    }
    if (p->nranks < p->used_ranks) {
        too_few_ranks(p, d);
        CAIRN_FAIL(CAIRN_EINPUT, "too few ranks");
    }
    if (bind_tasks(p, d)) CAIRN_FAIL(CAIRN_EINPUT, "tasks name unknown groups");
    *out = p;
    p = NULL;
cleanup:
    if (p) plan_destroy(&p);
    return rc;
}

void plan_destroy(struct plan **p)
{
    if (!p || !*p) return;
    struct arena *a = (*p)->arena;
    arena_destroy(&a);
    *p = NULL;
}
