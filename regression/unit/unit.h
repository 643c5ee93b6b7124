/* Shared includes and helpers for cmocka unit tests. */
#ifndef CAIRN_UNIT_H
#define CAIRN_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cairn/analyze.h"
#include "cairn/config.h"
#include "cairn/diag.h"
#include "cairn/error.h"
#include "cairn/job.h"
#include "cairn/plan.h"

/* Load, plan (for `ranks`, 0 = as needed) and analyze a job given as text;
 * returns the first failing stage's code.  Diagnostics land in d. */
static inline int load_text(const char *text, const char *const *sets, int n_sets, int ranks,
                            struct job **job, struct plan **plan, struct diags *d)
{
    int rc = config_load("t.cfg", text, sets, n_sets, job, d);
    if (rc == 0) rc = plan_build(*job, ranks, plan, d);
    if (rc == 0) rc = analyze(*plan, d);
    return rc;
}

/* Print diagnostics when a test is about to fail on them. */
static inline void show(struct diags *d) { diags_print(d, stderr); }

#endif
