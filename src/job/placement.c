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

/* Append "a-b" runs of the sorted ranks v[0..n). */
static void add_ranges(struct strbuf *b, const int *v, int n)
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
    add_ranges(b, v, n);
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

int placement_text(const struct plan *p, const char (*hosts)[PLACEMENT_HOST_MAX], const char *sep,
                   struct strbuf *b)
{
    int n = p->nranks, rc = 0;
    struct slot *slot = malloc((size_t)n * sizeof *slot);
    int *rank = malloc((size_t)n * sizeof *rank), *node = malloc((size_t)n * 3 * sizeof *node);
    char *seen = malloc((size_t)p->n_groups + 1);
    if (!slot || !rank || !node || !seen) CAIRN_FAIL(CAIRN_ENOMEM, "out of memory");
    for (int r = 0; r < n; r++) slot[r] = (struct slot){hosts[r], r};
    qsort(slot, (size_t)n, sizeof *slot, host_then_rank);
    for (int i = 0; i < n; i++) rank[i] = slot[i].rank;
    int nodes = 0;
    for (int i = 0; i < n; i++) {
        if (i == 0 || strcmp(slot[i].host, slot[i - 1].host) != 0) {
            node[3 * nodes] = rank[i]; /* the lowest, as ranks sort within a host */
            node[3 * nodes + 1] = i;
            node[3 * nodes++ + 2] = 0;
        }
        node[3 * (nodes - 1) + 2]++;
    }
    qsort(node, (size_t)nodes, 3 * sizeof *node, by_first_rank);
    for (int k = 0; k < nodes; k++) {
        const int *v = rank + node[3 * k + 1];
        if (k) strbuf_add(b, sep);
        add_node(b, p, hosts[v[0]], v, node[3 * k + 2], seen);
    }
    rc = strbuf_finish(b);
cleanup:
    free(slot);
    free(rank);
    free(node);
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
