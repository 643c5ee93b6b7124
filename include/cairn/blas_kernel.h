/* The BLAS kernel each rank runs.  OpenBLAS picks its kernels at start-up
 * for the CPU it finds (or as OPENBLAS_CORETYPE says), and a GEMM's bits
 * depend on them: the same micro-batch computed on two kinds of CPU may
 * differ in its last bits.  Bitwise equality across layouts and restarts
 * therefore holds only among runs whose ranks run the same kernel; the
 * runtime gathers every rank's (layout.h), warns when they disagree, and
 * keeps them in each checkpoint to compare at resume.  Not collective. */
#ifndef CAIRN_BLAS_KERNEL_H
#define CAIRN_BLAS_KERNEL_H

#include "cairn/placement.h"

#include <stdbool.h>

struct strbuf;

enum { BLAS_CORE_MAX = 32, BLAS_CONFIG_MAX = 128 };

struct blas_kernel {
    char core[BLAS_CORE_MAX];     /* openblas_get_corename(): "Haswell" */
    char config[BLAS_CONFIG_MAX]; /* openblas_get_config(): version, build and core */
};

/* This process's kernel. */
void blas_kernel_get(struct blas_kernel *k);
bool blas_kernel_same(const struct blas_kernel *a, const struct blas_kernel *b);
/* "Haswell (OpenBLAS 0.3.21 ... Haswell MAX_THREADS=64)" */
void blas_kernel_name(const struct blas_kernel *k, struct strbuf *b);

/* How many different kernels the n ranks' k[0..n) run. */
int blas_kernels_distinct(const struct blas_kernel *k, int n);
/* The ranks' kernels as text: one kernel's name alone when they agree
 * (the same text for any number of ranks); else, in the order of their
 * first rank, "NAME on ranks 0-1,3" for each, with the ranks' hosts
 * ("(node1, node2)") if hosts is not NULL, separated by "; ".  Returns 0
 * or CAIRN_ENOMEM. */
int blas_kernels_text(const struct blas_kernel *k, int n, const char (*hosts)[PLACEMENT_HOST_MAX],
                      struct strbuf *b);
/* The core named by text from blas_kernels_text when it names one kernel,
 * else "" (out has BLAS_CORE_MAX bytes). */
void blas_kernels_core(const char *text, char *out);

#endif
