/* Placement text; see include/cairn/placement.h. */
#include "cairn/placement.h"

#include "cairn/error.h"
#include "cairn/plan.h"
#include "cairn/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slot {
    const char *host;
    int rank;
};

static int host_then_rank(const void *a, const void *b)
{
    const struct slot *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

void placement_ranges(struct strbuf *b, const int *v, int n)
{
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1) j++;
        strbuf_addf(b, "%s%d", i ? "," : "", v[i]);
        if (j > i) strbuf_addf(b, "%s%d", j == i + 1 ? "," : "-", v[j]);
        i = j + 1;
    }
}

/* One node's entry: its ranks v[0..n) and the groups they belong to. */
static void add_node(struct strbuf *b, const struct plan *p, const char *host, const int *v, int n,
                     char *seen)
{
    strbuf_addf(b, "%s: rank%s ", host, n > 1 ? "s" : "");
    placement_ranges(b, v, n);
    memset(seen, 0, (size_t)p->n_groups + 1);
    for (int i = 0; i < n; i++) seen[plan_group_of_rank(p, v[i]) + 1] = 1;
    strbuf_add(b, " (");
    for (int g = 0, k = 0; g <= p->n_groups; g++) /* the groups in plan order, spare last */
        if (seen[(g + 1) % (p->n_groups + 1)])
            strbuf_addf(b, "%s%s", k++ ? ", " : "", g < p->n_groups ? p->groups[g].name : "spare");
    strbuf_add(b, ")");
}

static int by_first_rank(const void *a, const void *b)
{
    const int *x = a, *y = b; /* {first rank, offset in the sorted ranks, count} */
    return (x[0] > y[0]) - (x[0] < y[0]);
}

void placement_nodes_free(struct placement_nodes *pn)
{
    free(pn->rank);
    free(pn->start);
    free(pn->node_of);
    free(pn->local);
    *pn = (struct placement_nodes){0};
}

int placement_nodes(const char (*hosts)[PLACEMENT_HOST_MAX], int size, struct placement_nodes *out)
{
    int rc = 0, nodes = 0;
    struct placement_nodes pn = {0};
    struct slot *slot = malloc((size_t)size * sizeof *slot + 1);
    int *node = malloc((size_t)size * 3 * sizeof *node + 1); /* {first rank, offset, count} */
    pn.rank = malloc((size_t)size * sizeof *pn.rank + 1);
    pn.start = malloc(((size_t)size + 1) * sizeof *pn.start);
    pn.node_of = malloc((size_t)size * sizeof *pn.node_of + 1);
    pn.local = malloc((size_t)size * sizeof *pn.local + 1);
    if (!slot || !node || !pn.rank || !pn.start || !pn.node_of || !pn.local)
        CAIRN_FAIL(CAIRN_ENOMEM, "out of memory");
    for (int r = 0; r < size; r++) slot[r] = (struct slot){hosts[r], r};
    qsort(slot, (size_t)size, sizeof *slot, host_then_rank);
    for (int i = 0; i < size; i++) {
        if (i == 0 || strcmp(slot[i].host, slot[i - 1].host) != 0) {
            node[3 * nodes] = slot[i].rank; /* the lowest, as ranks sort within a host */
            node[3 * nodes + 1] = i;
            node[3 * nodes++ + 2] = 0;
        }
        node[3 * (nodes - 1) + 2]++;
    }
    qsort(node, (size_t)nodes, 3 * sizeof *node, by_first_rank);
    pn.n = nodes;
    for (int k = 0, at = 0; k < nodes; k++) {
        pn.start[k] = at;
        for (int i = 0; i < node[3 * k + 2]; i++, at++) {
            int r = slot[node[3 * k + 1] + i].rank;
            pn.rank[at] = r;
            pn.node_of[r] = k;
            pn.local[r] = i;
        }
    }
    pn.start[nodes] = size;
    *out = pn;
    pn = (struct placement_nodes){0};
cleanup:
    placement_nodes_free(&pn);
    free(slot);
    free(node);
    return rc;
}

int placement_text(const struct plan *p, const char (*hosts)[PLACEMENT_HOST_MAX], const char *sep,
                   struct strbuf *b)
{
    int rc = 0;
    struct placement_nodes pn = {0};
    char *seen = malloc((size_t)p->n_groups + 1);
    if (!seen) CAIRN_FAIL(CAIRN_ENOMEM, "out of memory");
    CAIRN_CHECK(placement_nodes(hosts, p->nranks, &pn));
    for (int k = 0; k < pn.n; k++) {
        const int *v = pn.rank + pn.start[k];
        if (k) strbuf_add(b, sep);
        add_node(b, p, hosts[v[0]], v, pn.start[k + 1] - pn.start[k], seen);
    }
    rc = strbuf_finish(b);
cleanup:
    placement_nodes_free(&pn);
    free(seen);
    return rc;
}

char (*placement_block(const struct plan *p, int per_node))[PLACEMENT_HOST_MAX]
{
    char(*hosts)[PLACEMENT_HOST_MAX] = calloc((size_t)p->nranks, sizeof *hosts);
    for (int r = 0; hosts && r < p->nranks; r++)
        snprintf(hosts[r], sizeof hosts[r], "node%d", r / per_node + 1);
    return hosts;
}
