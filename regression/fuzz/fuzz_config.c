/* libFuzzer target: the job-file front end (config, plan, analyze, print)
 * on arbitrary text.  Any crash, hang, sanitizer finding or exit is a bug:
 * every input must end as a job or as FILE:LINE diagnostics.
 * Seed corpus: jobs/ and regression/bad/ (see `make fuzz`). */
#include "cairn/analyze.h"
#include "cairn/config.h"
#include "cairn/diag.h"
#include "cairn/job.h"
#include "cairn/plan.h"
#include "cairn/print.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink) sink = fopen("/dev/null", "w");
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    struct diags d = {0};
    struct job *job = NULL;
    struct plan *plan = NULL;
    /* a few rank counts: layouts differ with them (0: the job's own) */
    int ranks = size ? data[0] % 5 : 0;
    if (config_load("fuzz.cfg", text, NULL, 0, &job, &d) == 0 && plan_build(job, ranks, &plan, &d) == 0 &&
        analyze(plan, &d) == 0)
        plan_print(plan, sink);
    diags_print(&d, sink);
    diags_free(&d);
    plan_destroy(&plan);
    job_destroy(&job);
    free(text);
    return 0;
}
