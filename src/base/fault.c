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

static int parse_one(const char *spec, const char *text, struct fault_one *f)
{
    static const char *const kinds[] = {[FAULT_OP] = "op", [FAULT_KILL] = "kill",
                                        [FAULT_SIGNAL] = "signal", [FAULT_CLOCK] = "clock",
                                        [FAULT_FILL] = "fill", [FAULT_PAUSE] = "pause",
                                        [FAULT_SLOW] = "slow", [FAULT_FREEZE] = "freeze",
                                        [FAULT_BUSY] = "busy", [FAULT_HOLD] = "hold",
                                        [FAULT_NOTHREAD] = "nothread", [FAULT_AWAIT] = "await",
                                        [FAULT_MDC] = "mdc"};
    char kind[16] = "", what[64] = "";
    int rank = -1, k = -1;
    long long epoch = -1;
    int n = sscanf(text, "%15[^:]:%63[^:]:%d:%lld", kind, what, &rank, &epoch);
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
        (k == FAULT_MDC && (strcmp(what, "default") != 0 || rank != 0 || n == 4)) ||
        (k == FAULT_SIGNAL && !preempt_signal_number(what)) ||
        ((k == FAULT_CLOCK || (k == FAULT_SLOW && at)) && (end == what || *end)))
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                             "CAIRN_FAULT='%s'%s%s%s is not op:NAME:RANK[:EPOCH], "
                             "kill:POINT:RANK[:EPOCH], signal:SIGNAL:RANK[:EPOCH], "
                             "clock:SECONDS:RANK[:EPOCH], fill:POINT:RANK[:EPOCH], "
                             "pause:POINT:RANK[:EPOCH], slow:POINT[@SECONDS]:RANK[:EPOCH], "
                             "freeze:POINT:RANK[:EPOCH], busy:NAME:RANK[:EPOCH], "
                             "hold:POINT:RANK[:EPOCH], nothread:NAME:RANK[:EPOCH], "
                             "await:NAME:RANK[:EPOCH] or mdc:default:0",
                             spec, strcmp(spec, text) ? ": '" : "", strcmp(spec, text) ? text : "",
                             strcmp(spec, text) ? "'" : "");
    *f = (struct fault_one){.kind = (enum fault_kind)k, .rank = rank, .epoch = n == 4 ? epoch : -1,
                            .seconds = seconds};
    snprintf(f->what, sizeof f->what, "%s", what);
    return 0;
}

int fault_parse(const char *spec, struct fault *f)
{
    char text[512];
    *f = (struct fault){0};
    if (!spec || !*spec) return 0;
    if (snprintf(text, sizeof text, "%s", spec) >= (int)sizeof text)
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "CAIRN_FAULT is longer than %zu bytes",
                             sizeof text - 1);
    char *rest = text;
    for (char *one; (one = strsep(&rest, ","));) { /* an empty one is refused below */
        if (f->n == FAULT_MAX)
            return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "CAIRN_FAULT='%s' names more than %d "
                                                                   "faults", spec, FAULT_MAX);
        int rc = parse_one(spec, one, &f->v[f->n]);
        if (rc) return rc;
        f->n++;
    }
    return 0;
}

/* The fault of this kind for this rank and epoch named `what` (NULL: any
 * name), if there is one. */
static const struct fault_one *matches(const struct fault *f, enum fault_kind kind, int rank,
                                       int64_t epoch, const char *what)
{
    for (int i = 0; i < f->n; i++) {
        const struct fault_one *o = &f->v[i];
        if (o->kind == kind && o->rank == rank && (o->epoch < 0 || o->epoch == epoch) &&
            (!what || strcmp(o->what, what) == 0))
            return o;
    }
    return NULL;
}

bool fault_op(const struct fault *f, int rank, const char *name, int64_t epoch)
{
    return matches(f, FAULT_OP, rank, epoch, name);
}

bool fault_busy(const struct fault *f, int rank, const char *name, int64_t epoch)
{
    return matches(f, FAULT_BUSY, rank, epoch, name);
}

bool fault_await(const struct fault *f, int rank, const char *name, int64_t epoch)
{
    return matches(f, FAULT_AWAIT, rank, epoch, name);
}

bool fault_hold(const struct fault *f, int rank, const char *point, int64_t epoch)
{
    return matches(f, FAULT_HOLD, rank, epoch, point);
}

bool fault_nothread(const struct fault *f, int rank, const char *name, int64_t epoch)
{
    return matches(f, FAULT_NOTHREAD, rank, epoch, name);
}

bool fault_mdc(const struct fault *f) { return matches(f, FAULT_MDC, 0, -1, "default"); }

/* Write zeros to dir/fill.ballast until the file system says it is full. */
static void fill(const char *dir)
{
    static const char zeros[65536];
    char path[4200];
    snprintf(path, sizeof path, "%s/fill.ballast", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) return;
    for (size_t chunk = sizeof zeros; chunk > 0;)
        if (write(fd, zeros, chunk) < 0) chunk /= 2; /* down to the last free byte */
    fsync(fd);
    close(fd);
}

void fault_point(const struct fault *f, int rank, const char *point, int64_t epoch,
                 const char *dir)
{
    const struct fault_one *slow = matches(f, FAULT_SLOW, rank, epoch, point);
    if (matches(f, FAULT_KILL, rank, epoch, point)) {
        fprintf(stderr, "cairn: rank %d: CAIRN_FAULT kills this rank at %s\n", rank, point);
        fflush(stderr);
        raise(SIGKILL);
    }
    if (dir && matches(f, FAULT_FILL, rank, epoch, point)) {
        fprintf(stderr, "cairn: rank %d: CAIRN_FAULT fills the file system of %s at %s\n", rank,
                dir, point);
        fill(dir);
    }
    if (matches(f, FAULT_PAUSE, rank, epoch, point)) {
        fprintf(stderr, "cairn: rank %d: CAIRN_FAULT pauses this rank at %s\n", rank, point);
        fflush(stderr);
        for (;;) pause(); /* until a signal's default action ends the process */
    }
    if (matches(f, FAULT_FREEZE, rank, epoch, point)) {
        /* the pid: a test can find the stopped process and continue it */
        fprintf(stderr, "cairn: rank %d (pid %d): CAIRN_FAULT freezes this rank at %s\n", rank, (int)getpid(),
                point);
        fflush(stderr);
        raise(SIGSTOP); /* every thread: no heartbeat either */
    }
    if (slow) {
        fprintf(stderr, "cairn: rank %d: CAIRN_FAULT holds this rank at %s for %g s\n", rank, point,
                slow->seconds);
        clock_sleep(slow->seconds);
    }
}

double fault_clock(const struct fault *f, int rank, int64_t epoch, int64_t step)
{
    const struct fault_one *c = step == 1 ? matches(f, FAULT_CLOCK, rank, epoch, NULL) : NULL;
    return c ? strtod(c->what, NULL) : 0;
}

void fault_signal(const struct fault *f, int rank, int64_t epoch, int64_t step)
{
    for (int i = 0; step == 1 && i < f->n; i++) { /* each: one for any epoch must not hide one for 0 */
        const struct fault_one *s = &f->v[i];
        if (s->kind == FAULT_SIGNAL && s->rank == rank && (s->epoch < 0 || s->epoch == epoch) &&
            (epoch > 0 || s->epoch == 0))
            raise(preempt_signal_number(s->what));
    }
}
