/* Fault injection; see include/cairn/fault.h. */
#include "cairn/fault.h"

#include "cairn/error.h"
#include "cairn/preempt.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fault_parse(const char *spec, struct fault *f)
{
    static const char *const kinds[] = {[FAULT_OP] = "op", [FAULT_KILL] = "kill", [FAULT_SIGNAL] = "signal"};
    *f = (struct fault){.epoch = -1};
    if (!spec || !*spec) return 0;
    char kind[16] = "", what[64] = "";
    int rank = -1, k = -1;
    long long epoch = -1;
    int n = sscanf(spec, "%15[^:]:%63[^:]:%d:%lld", kind, what, &rank, &epoch);
    for (int i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++)
        if (strcmp(kind, kinds[i]) == 0) k = i;
    if (n < 3 || rank < 0 || k < 0 || (k == FAULT_SIGNAL && !preempt_signal_number(what)))
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                             "CAIRN_FAULT='%s' is not op:NAME:RANK[:EPOCH], "
                             "kill:POINT:RANK[:EPOCH] or signal:SIGNAL:RANK[:EPOCH]",
                             spec);
    f->set = true;
    f->kind = (enum fault_kind)k;
    snprintf(f->what, sizeof f->what, "%s", what);
    f->rank = rank;
    f->epoch = n == 4 ? epoch : -1;
    return 0;
}

static bool matches(const struct fault *f, enum fault_kind kind, int rank, int64_t epoch)
{
    return f->set && f->kind == kind && f->rank == rank && (f->epoch < 0 || f->epoch == epoch);
}

bool fault_op(const struct fault *f, int rank, const char *name, int64_t epoch)
{
    return matches(f, FAULT_OP, rank, epoch) && strcmp(f->what, name) == 0;
}

void fault_point(const struct fault *f, int rank, const char *point, int64_t epoch)
{
    if (matches(f, FAULT_KILL, rank, epoch) && strcmp(f->what, point) == 0) {
        fprintf(stderr, "cairn: rank %d: CAIRN_FAULT kills this rank at %s\n", rank, point);
        fflush(stderr);
        raise(SIGKILL);
    }
}

void fault_signal(const struct fault *f, int rank, int64_t epoch, int64_t step)
{
    if (step == 1 && matches(f, FAULT_SIGNAL, rank, epoch) && (epoch > 0 || f->epoch == 0))
        raise(preempt_signal_number(f->what));
}
