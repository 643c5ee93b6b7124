/* Fault injection; see include/cairn/fault.h. */
#include "cairn/fault.h"

#include "cairn/clock.h"
#include "cairn/error.h"
#include "cairn/preempt.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int fault_parse(const char *spec, struct fault *f)
{
    static const char *const kinds[] = {[FAULT_OP] = "op", [FAULT_KILL] = "kill",
                                        [FAULT_SIGNAL] = "signal", [FAULT_CLOCK] = "clock",
                                        [FAULT_FILL] = "fill", [FAULT_PAUSE] = "pause",
                                        [FAULT_SLOW] = "slow", [FAULT_FREEZE] = "freeze",
                                        [FAULT_BUSY] = "busy"};
    *f = (struct fault){.epoch = -1};
    if (!spec || !*spec) return 0;
    char kind[16] = "", what[64] = "";
    int rank = -1, k = -1;
    long long epoch = -1;
    int n = sscanf(spec, "%15[^:]:%63[^:]:%d:%lld", kind, what, &rank, &epoch);
    for (int i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++)
        if (strcmp(kind, kinds[i]) == 0) k = i;
    char *end = what, *at = strchr(what, '@');
    double seconds = FAULT_SLOW_SECONDS;
    if (k == FAULT_CLOCK) strtod(what, &end);
    if (k == FAULT_SLOW && at) {
        *at++ = 0;
        seconds = strtod(at, &end);
        if (end == at || *end || !(seconds > 0 && seconds <= 3600)) end = what; /* refused below */
    }
    if (n < 3 || rank < 0 || k < 0 || !*what || (at && k != FAULT_SLOW) ||
        (k == FAULT_SIGNAL && !preempt_signal_number(what)) ||
        ((k == FAULT_CLOCK || (k == FAULT_SLOW && at)) && (end == what || *end)))
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                             "CAIRN_FAULT='%s' is not op:NAME:RANK[:EPOCH], "
                             "kill:POINT:RANK[:EPOCH], signal:SIGNAL:RANK[:EPOCH], "
                             "clock:SECONDS:RANK[:EPOCH], fill:POINT:RANK[:EPOCH], "
                             "pause:POINT:RANK[:EPOCH], slow:POINT[@SECONDS]:RANK[:EPOCH], "
                             "freeze:POINT:RANK[:EPOCH] or busy:NAME:RANK[:EPOCH]",
                             spec);
    f->set = true;
    f->kind = (enum fault_kind)k;
    snprintf(f->what, sizeof f->what, "%s", what);
    f->rank = rank;
    f->epoch = n == 4 ? epoch : -1;
    f->seconds = seconds;
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

bool fault_busy(const struct fault *f, int rank, const char *name, int64_t epoch)
{
    return matches(f, FAULT_BUSY, rank, epoch) && strcmp(f->what, name) == 0;
}

/* Write zeros to dir/fill.ballast until the file system says it is full. */
static void fill(const char *dir)
{
    static const char zeros[65536];
    char path[4200];
    snprintf(path, sizeof path, "%s/fill.ballast", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    for (size_t chunk = sizeof zeros; chunk > 0;)
        if (write(fd, zeros, chunk) < 0) chunk /= 2; /* down to the last free byte */
    fsync(fd);
    close(fd);
}

void fault_point(const struct fault *f, int rank, const char *point, int64_t epoch,
                 const char *dir)
{
    if (matches(f, FAULT_KILL, rank, epoch) && strcmp(f->what, point) == 0) {
        fprintf(stderr, "cairn: rank %d: CAIRN_FAULT kills this rank at %s\n", rank, point);
        fflush(stderr);
        raise(SIGKILL);
    }
    if (dir && matches(f, FAULT_FILL, rank, epoch) && strcmp(f->what, point) == 0) {
        fprintf(stderr, "cairn: rank %d: CAIRN_FAULT fills the file system of %s at %s\n", rank,
                dir, point);
        fill(dir);
    }
    if (matches(f, FAULT_PAUSE, rank, epoch) && strcmp(f->what, point) == 0) {
        fprintf(stderr, "cairn: rank %d: CAIRN_FAULT pauses this rank at %s\n", rank, point);
        fflush(stderr);
        for (;;) pause(); /* until a signal's default action ends the process */
    }
    if (matches(f, FAULT_FREEZE, rank, epoch) && strcmp(f->what, point) == 0) {
        /* the pid: a test can find the stopped process and continue it */
        fprintf(stderr, "cairn: rank %d (pid %d): CAIRN_FAULT freezes this rank at %s\n", rank, (int)getpid(),
                point);
        fflush(stderr);
        raise(SIGSTOP); /* every thread: no heartbeat either */
    }
    if (matches(f, FAULT_SLOW, rank, epoch) && strcmp(f->what, point) == 0) {
        fprintf(stderr, "cairn: rank %d: CAIRN_FAULT holds this rank at %s for %g s\n", rank, point,
                f->seconds);
        clock_sleep(f->seconds);
    }
}

double fault_clock(const struct fault *f, int rank, int64_t epoch, int64_t step)
{
    return step == 1 && matches(f, FAULT_CLOCK, rank, epoch) ? strtod(f->what, NULL) : 0;
}

void fault_signal(const struct fault *f, int rank, int64_t epoch, int64_t step)
{
    if (step == 1 && matches(f, FAULT_SIGNAL, rank, epoch) && (epoch > 0 || f->epoch == 0))
        raise(preempt_signal_number(f->what));
}
