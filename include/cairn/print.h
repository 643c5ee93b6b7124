/* The job printer behind `cairn print`: the plan as readable text, one op
 * per line as `out = op(in1, in2, key=value)`, loops, parallel branches and
 * reports as indented `with ...:` blocks.  Not collective; needs no MPI. */
#ifndef CAIRN_PRINT_H
#define CAIRN_PRINT_H

#include <stdio.h>

struct plan;

int plan_print(const struct plan *p, FILE *out);

#endif
