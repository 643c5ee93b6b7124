/* The ScaLAPACK and BLACS entry points cairn uses.  Debian's
 * libscalapack-openmpi has no C header: these are the Fortran symbols and
 * the C BLACS interface, declared once here. */
#ifndef CAIRN_SCALAPACK_H
#define CAIRN_SCALAPACK_H

#include <mpi.h>

int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int *context, const char *order, int nprow, int npcol);
void Cblacs_gridmap(int *context, int *usermap, int ldumap, int nprow, int npcol);
void Cblacs_gridinfo(int context, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int context);

void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld, int *info);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc, const int *nprocs);
void psgemr2d_(const int *m, const int *n, const float *a, const int *ia, const int *ja,
               const int *desca, float *b, const int *ib, const int *jb, const int *descb,
               const int *ictxt);
void pdgemr2d_(const int *m, const int *n, const double *a, const int *ia, const int *ja,
               const int *desca, double *b, const int *ib, const int *jb, const int *descb,
               const int *ictxt);

void psgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
             const float *alpha, const float *a, const int *ia, const int *ja, const int *desca,
             const float *b, const int *ib, const int *jb, const int *descb, const float *beta,
             float *c, const int *ic, const int *jc, const int *descc);
void pdgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
             const double *alpha, const double *a, const int *ia, const int *ja, const int *desca,
             const double *b, const int *ib, const int *jb, const int *descb, const double *beta,
             double *c, const int *ic, const int *jc, const int *descc);

#endif
