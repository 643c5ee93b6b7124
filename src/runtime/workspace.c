/* Rank workspaces; see include/cairn/workspace.h. */
#include "cairn/workspace.h"

#include "cairn/error.h"
#include "cairn/plan.h"

#include <stdlib.h>
#include <string.h>

int workspace_create(const struct group *g, struct workspace **out)
{
    int rc = 0;
    struct workspace *w = calloc(1, sizeof *w);
    CAIRN_CHECK_ALLOC(w);
    w->g = g;
    w->n = g ? g->n_blobs : 0;
    w->v = calloc((size_t)w->n + 1, sizeof *w->v);
    CAIRN_CHECK_ALLOC(w->v);
    for (int i = 0; i < w->n; i++) {
        w->v[i].info = &g->blobs[i];
        pthread_rwlock_init(&w->v[i].lock, NULL);
    }
    *out = w;
    w = NULL;
cleanup:
    if (w) workspace_destroy(&w);
    return rc;
}

void workspace_destroy(struct workspace **wp)
{
    if (!wp || !*wp) return;
    struct workspace *w = *wp;
    for (int i = 0; w->v && i < w->n; i++) {
        tensor_free(&w->v[i].t);
        pthread_rwlock_destroy(&w->v[i].lock);
    }
    free(w->v);
    free(w);
    *wp = NULL;
}

struct blob *workspace_find(struct workspace *w, const char *name)
{
    for (int i = 0; w && i < w->n; i++)
        if (strcmp(w->v[i].info->name, name) == 0) return &w->v[i];
    return NULL;
}
