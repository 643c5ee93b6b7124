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

const void *plan_op_part(const struct plan *p, const struct op_node *op)
{
    return op->ext > 0 && op->ext <= p->n_exts ? p->exts[op->ext - 1].part : NULL;
}

int group_find_blob(const struct group *g, const char *name)
{
    for (int i = 0; i < g->n_blobs; i++)
        if (strcmp(g->blobs[i].name, name) == 0) return i;
    return -1;
}

/* The extensions' groups in extension order, then the job's; ranks follow. */
static int place_groups(struct plan *p, struct diags *d)
{
    const struct job *j = p->job;
    struct group *gen = NULL;
    int n_gen = 0, rc = 0;
    p->n_exts = j->n_exts;
    p->exts = arena_alloc(p->arena, (size_t)(j->n_exts + 1) * sizeof *p->exts);
    for (int e = 0; e < j->n_exts; e++) {
        struct group *g = NULL;
        int n = 0;
        p->exts[e] = (struct plan_ext){.def = j->exts[e].def, .spec = j->exts[e].spec};
        if (!p->exts[e].def->plan_groups) continue;
        CAIRN_CHECK(p->exts[e].def->plan_groups(p, p->exts[e].spec, &g, &n, d));
        for (int i = 0; i < n; i++) {
            gen = arena_grow(p->arena, gen, (size_t)n_gen, sizeof *gen);
            gen[n_gen++] = g[i];
        }
    }
    p->n_groups = n_gen + j->n_groups;
    p->groups = arena_alloc(p->arena, (size_t)(p->n_groups + 1) * sizeof *p->groups);
    for (int i = 0; i < n_gen; i++) p->groups[i] = gen[i];
    for (int i = 0; i < j->n_groups; i++)
        p->groups[n_gen + i] = (struct group){.name = j->groups[i].name,
                                              .nranks = (int)j->groups[i].ranks,
                                              .file = j->groups[i].file,
                                              .line = j->groups[i].line};
    int next = 0;
    for (int i = 0; i < p->n_groups; i++) {
        p->groups[i].first = next;
        p->groups[i].n_lanes = 1;
        next += p->groups[i].nranks;
    }
    p->used_ranks = next;
cleanup:
    return rc;
}

/* "the job needs 5 ranks (main: 2, ps: 3) but has 4" */
static void too_few_ranks(struct plan *p, struct diags *d)
{
    char list[1024] = "";
    for (int i = 0; i < p->n_groups; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s: %d", i ? ", " : "",
                 p->groups[i].name, p->groups[i].nranks);
    /* at the setting that sizes the first group (a model job's replicas or
     * pipeline.stages, which may be a --set) */
    const struct group *g = &p->groups[0];
    diags_add(d, g->file ? g->file : p->job->file, g->file && !g->line ? 0 : g->line ? g->line : 1,
              "the job needs %d ranks (%s) but was given %d", p->used_ranks, list, p->nranks);
}

/* The plan's own copy of a step tree: analysis writes its results (blob
 * ids, lanes) into the copy, so the job stays as config_load made it and
 * one job can be planned any number of times. */
static void copy_steps(struct arena *a, struct steplist *dst, const struct steplist *src)
{
    dst->n = src->n;
    dst->v = arena_alloc(a, (size_t)(src->n + 1) * sizeof *dst->v);
    for (int i = 0; i < src->n; i++) {
        const struct step *s = &src->v[i];
        struct step *t = &dst->v[i];
        *t = *s;
        copy_steps(a, &t->body, &s->body);
        t->branches = arena_alloc(a, (size_t)(s->n_branches + 1) * sizeof *t->branches);
        for (int b = 0; b < s->n_branches; b++) copy_steps(a, &t->branches[b], &s->branches[b]);
    }
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
            copy_steps(p->arena, &dst->v[i].steps, &src->v[i].steps);
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
    p->nranks = nranks > 0 ? nranks : 0; /* 0 while the groups are placed: as they need */
    CAIRN_CHECK(place_groups(p, d));
    if (p->nranks == 0) p->nranks = p->used_ranks;
    p->steps_per_epoch = job->steps_per_epoch;
    p->n_stop_blobs = job->stop.n_blobs;
    p->stop_blobs = arena_alloc(a, (size_t)(p->n_stop_blobs + 1) * sizeof *p->stop_blobs);
    if (p->n_stop_blobs)
        memcpy(p->stop_blobs, job->stop.blobs, (size_t)p->n_stop_blobs * sizeof *p->stop_blobs);
    if (p->n_groups == 0) {
        diags_add(d, job->file, 1, "the job declares no groups (give groups = ( ... ))");
        CAIRN_FAIL(CAIRN_EINPUT, "no groups");
    }
    if (p->nranks < p->used_ranks) {
        too_few_ranks(p, d);
        CAIRN_FAIL(CAIRN_EINPUT, "too few ranks");
    }
    if (bind_tasks(p, d)) CAIRN_FAIL(CAIRN_EINPUT, "tasks name unknown groups");
    for (int e = 0; e < p->n_exts; e++) {
        void *part = NULL;
        if (p->exts[e].def->plan_tasks)
            CAIRN_CHECK(p->exts[e].def->plan_tasks(p, p->exts[e].spec, e, &part));
        p->exts[e].part = part;
    }
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
