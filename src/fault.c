/* Fault injection; see include/cairn/fault.h. */
#include "cairn/fault.h"

#include "cairn/error.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fault_parse(const char *spec, struct fault *f)
{
    *f = (struct fault){.epoch = -1};
    if (!spec || !*spec) return 0;
    char kind[16] = "", what[64] = "";
    int rank = -1;
    long long epoch = -1;
    int n = sscanf(spec, "%15[^:]:%63[^:]:%d:%lld", kind, what, &rank, &epoch);
    bool kill = strcmp(kind, "kill") == 0;
    if (n < 3 || rank < 0 || (!kill && strcmp(kind, "op") != 0))
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                             "CAIRN_FAULT='%s' is not op:NAME:RANK[:EPOCH] or "
                             "kill:POINT:RANK[:EPOCH]",
                             spec);
    f->set = true;
    f->kill = kill;
    snprintf(f->what, sizeof f->what, "%s", what);
    f->rank = rank;
    f->epoch = n == 4 ? epoch : -1;
    return 0;
}

static bool matches(const struct fault *f, int rank, const char *what, int64_t epoch)
{
    return f->set && f->rank == rank && strcmp(f->what, what) == 0 &&
           (f->epoch < 0 || f->epoch == epoch);
}

bool fault_op(const struct fault *f, int rank, const char *name, int64_t epoch)
{
    return !f->kill && matches(f, rank, name, epoch);
}

void fault_point(const struct fault *f, int rank, const char *point, int64_t epoch)
{
    if (f->kill && matches(f, rank, point, epoch)) {
        fprintf(stderr, "cairn: rank %d: CAIRN_FAULT kills this rank at %s\n", rank, point);
        fflush(stderr);
        raise(SIGKILL);
    }
}
