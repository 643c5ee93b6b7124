/* The BLAS kernel of each rank; see include/cairn/blas_kernel.h. */
#include "cairn/blas_kernel.h"

#include "cairn/error.h"
#include "cairn/strbuf.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HOSTS_SHOWN = 8 };

void blas_kernel_get(struct blas_kernel *k)
{
    const char *core = openblas_get_corename(), *config = openblas_get_config();
    memset(k, 0, sizeof *k);
    snprintf(k->core, sizeof k->core, "%s", core ? core : "?");
    snprintf(k->config, sizeof k->config, "%s", config ? config : "?");
}

bool blas_kernel_same(const struct blas_kernel *a, const struct blas_kernel *b)
{
    return strcmp(a->core, b->core) == 0 && strcmp(a->config, b->config) == 0;
}

void blas_kernel_name(const struct blas_kernel *k, struct strbuf *b)
{
    strbuf_addf(b, "%s (%s)", k->core, k->config);
}

/* The first rank before i with i's kernel, or i. */
static int first_of(const struct blas_kernel *k, int i)
{
    int j = 0;
    while (!blas_kernel_same(&k[j], &k[i])) j++;
    return j;
}

int blas_kernels_distinct(const struct blas_kernel *k, int n)
{
    int d = 0;
    for (int i = 0; i < n; i++) d += first_of(k, i) == i;
    return d;
}

/* " (host, host, ...)": the distinct hosts of ranks v[0..m), in rank order. */
static void add_hosts(struct strbuf *b, const char (*hosts)[PLACEMENT_HOST_MAX], const int *v, int m)
{
    int shown = 0, more = 0;
    strbuf_add(b, " (");
    for (int i = 0; i < m; i++) {
        int j = 0;
        while (j < i && strcmp(hosts[v[j]], hosts[v[i]]) != 0) j++;
        if (j < i) continue; /* a host seen already */
        if (shown == HOSTS_SHOWN) {
            more++;
            continue;
        }
        strbuf_addf(b, "%s%s", shown++ ? ", " : "", hosts[v[i]]);
    }
    if (more) strbuf_addf(b, " and %d more", more);
    strbuf_add(b, ")");
}

int blas_kernels_text(const struct blas_kernel *k, int n, const char (*hosts)[PLACEMENT_HOST_MAX],
                      struct strbuf *b)
{
    if (n > 0 && blas_kernels_distinct(k, n) == 1) {
        blas_kernel_name(&k[0], b);
        return strbuf_finish(b);
    }
    int *v = malloc((size_t)(n + 1) * sizeof *v);
    if (!v) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (int i = 0, d = 0; i < n; i++) {
        if (first_of(k, i) != i) continue; /* listed with its kernel's first rank */
        int m = 0;
        for (int r = i; r < n; r++)
            if (blas_kernel_same(&k[r], &k[i])) v[m++] = r;
        strbuf_add(b, d++ ? "; " : "");
        blas_kernel_name(&k[i], b);
        strbuf_addf(b, " on rank%s ", m > 1 ? "s" : "");
        placement_ranges(b, v, m);
        if (hosts) add_hosts(b, hosts, v, m);
    }
    free(v);
    return strbuf_finish(b);
}

void blas_kernels_core(const char *text, char *out)
{
    const char *end = strstr(text, " (");
    out[0] = '\0';
    if (!end || strstr(text, " on rank") || (size_t)(end - text) >= BLAS_CORE_MAX) return;
    memcpy(out, text, (size_t)(end - text));
    out[end - text] = '\0';
}
