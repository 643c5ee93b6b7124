/* Which ranks and groups live on which node, as text: for the run's log
 * (the hosts the ranks report) and for `cairn print --ranks-per-node` (a
 * block placement, as Slurm and mpirun give by default).  Not collective;
 * needs no MPI. */
#ifndef CAIRN_PLACEMENT_H
#define CAIRN_PLACEMENT_H

struct plan;
struct strbuf;

#define PLACEMENT_HOST_MAX 64

/* The nodes of a run, in the order of their lowest rank: node k's ranks,
 * ascending, are rank[start[k]] .. rank[start[k + 1] - 1]; node_of[r] is
 * rank r's node and local[r] its index among that node's ranks.  hosts[r]
 * is rank r's host, for r < size. */
struct placement_nodes {
    int n;
    int *rank, *start, *node_of, *local;
};
/* Returns 0 or CAIRN_ENOMEM; placement_nodes_free accepts a zeroed one. */
int placement_nodes(const char (*hosts)[PLACEMENT_HOST_MAX], int size, struct placement_nodes *out);
void placement_nodes_free(struct placement_nodes *pn);

/* Append one entry per node, "HOST: ranks 0-3,8 (stage0, ps)", nodes in the
 * order of their lowest rank, entries separated by `sep`.  hosts[r] is
 * world rank r's host, for r < p->nranks.  Returns 0 or CAIRN_ENOMEM. */
int placement_text(const struct plan *p, const char (*hosts)[PLACEMENT_HOST_MAX], const char *sep,
                   struct strbuf *b);
/* Append the sorted ranks v[0..n) as runs: "0-3,5,7-8" ("1,2" for a run
 * of two). */
void placement_ranges(struct strbuf *b, const int *v, int n);
/* hosts[r] = "node<r / per_node + 1>" for r < p->nranks: a block placement.
 * Returns a calloc'd array or NULL. */
char (*placement_block(const struct plan *p, int per_node))[PLACEMENT_HOST_MAX];

#endif
