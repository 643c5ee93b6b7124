/* Rank layout: split the world once into group communicators and lanes. */
#include "cairn/layout.h"

#include "cairn/error.h"
#include "cairn/ext.h"
#include "cairn/plan.h"
#include "cairn/strbuf.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Every extension's communicators: collective on the world (every rank
 * takes part in each split, members or not). */
static int make_ext_comms(struct layout *l, const struct plan *p)
{
    int rc = 0;
    l->exts = calloc((size_t)p->n_exts + 1, sizeof *l->exts);
    CAIRN_CHECK_ALLOC(l->exts);
    l->n_exts = p->n_exts;
    for (int e = 0; e < p->n_exts; e++) {
        const struct ext_def *def = p->exts[e].def;
        struct layout_ext *x = &l->exts[e];
        x->comms = calloc((size_t)def->n_comms + 1, sizeof *x->comms);
        CAIRN_CHECK_ALLOC(x->comms);
        x->n = def->n_comms;
        for (int i = 0; i < x->n; i++) x->comms[i] = MPI_COMM_NULL;
        for (int i = 0; i < x->n; i++) {
            int color = -1, key = l->rank;
            def->comm_split(p->exts[e].part, l->gid, l->grank, l->rank, i, &color, &key);
            CAIRN_CHECK(split(l->world, color >= 0, color, key, &x->comms[i]));
        }
    }
cleanup:
    return rc;
}

/* Every rank's BLAS kernel, and their text (the same on every rank). */
static int gather_kernels(struct layout *l)
{
    int rc = 0;
    struct blas_kernel mine;
    struct strbuf b = {0};
    blas_kernel_get(&mine);
    l->kernels = calloc((size_t)l->size, sizeof *l->kernels);
    CAIRN_CHECK_ALLOC(l->kernels);
    CAIRN_CHECK_MPI(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, l->kernels, sizeof mine, MPI_BYTE, l->world));
    CAIRN_CHECK(blas_kernels_text(l->kernels, l->size, NULL, &b));
    CAIRN_CHECK_ALLOC(l->kernels_text = strdup(strbuf_str(&b)));
cleanup:
    strbuf_free(&b);
    return rc;
}

int layout_create(MPI_Comm world, const struct plan *p, struct layout **out)
{
    int rc = 0;
    struct layout *l = calloc(1, sizeof *l);
    CAIRN_CHECK_ALLOC(l);
    l->world = MPI_COMM_NULL;
    CAIRN_CHECK_MPI(MPI_Comm_dup(world, &l->world));
    CAIRN_CHECK_MPI(MPI_Comm_set_errhandler(l->world, MPI_ERRORS_RETURN));
    CAIRN_CHECK_MPI(MPI_Comm_rank(l->world, &l->rank));
    CAIRN_CHECK_MPI(MPI_Comm_size(l->world, &l->size));
    if (gethostname(l->host, sizeof l->host - 1)) snprintf(l->host, sizeof l->host, "?");
    l->hosts = calloc((size_t)l->size, sizeof *l->hosts);
    CAIRN_CHECK_ALLOC(l->hosts);
    CAIRN_CHECK_MPI(MPI_Allgather(l->host, sizeof l->host, MPI_CHAR, l->hosts, sizeof l->host,
                                  MPI_CHAR, l->world));
    CAIRN_CHECK(gather_kernels(l));
    l->gid = plan_group_of_rank(p, l->rank);
    if (l->gid >= 0) {
        CAIRN_CHECK(make_lanes(l, &p->groups[l->gid]));
    } else {
        MPI_Comm none = MPI_COMM_NULL; /* spare ranks still take part in the split */
        CAIRN_CHECK_MPI(MPI_Comm_split(l->world, MPI_UNDEFINED, l->rank, &none));
    }
    CAIRN_CHECK(make_ext_comms(l, p));
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
    for (int e = 0; l->exts && e < l->n_exts; e++) {
        for (int i = 0; l->exts[e].comms && i < l->exts[e].n; i++)
            if (l->exts[e].comms[i] != MPI_COMM_NULL) MPI_Comm_free(&l->exts[e].comms[i]);
        free(l->exts[e].comms);
    }
    free(l->exts);
    if (l->world != MPI_COMM_NULL) MPI_Comm_free(&l->world);
    free(l->hosts);
    free(l->kernels);
    free(l->kernels_text);
    free(l);
    *lp = NULL;
}
