/* Progress lines and ETAs; see include/cairn/progress.h. */
#include "cairn/progress.h"

#include "cairn/runlog.h"

#include <math.h>
#include <stdio.h>

void progress_init(struct progress *p, double interval, int64_t steps, int64_t max_epochs,
                   double samples_per_step)
{
    *p = (struct progress){.interval = interval, .steps = steps, .max_epochs = max_epochs,
                           .samples_per_step = samples_per_step};
}

void progress_epoch(struct progress *p, int64_t first, double now)
{
    p->t0 = p->last = now;
    p->first = first;
}

/* H:MM:SS ("?" beyond any sensible time) */
static const char *hms(double s, char *buf, size_t size)
{
    if (!(s < 1e12)) {
        snprintf(buf, size, "?");
        return buf;
    }
    long long t = s > 0 ? (long long)(s + 0.5) : 0;
    snprintf(buf, size, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
    return buf;
}

/* Seconds until the job ends, after step s of epoch e at `rate` steps/s:
 * the epoch's rest, then each epoch left as long as the last whole one
 * (or its steps at this rate, before there is one).  < 0: unknown. */
static double job_left(const struct progress *p, int64_t e, int64_t s, double rate)
{
    if (!p->max_epochs || rate <= 0) return -1;
    double epoch = p->epoch_seconds > 0 ? p->epoch_seconds : (double)p->steps / rate;
    return (double)(p->steps - s) / rate + (double)(p->max_epochs - e) * epoch;
}

static void warn_limit(struct progress *p, struct runlog *log, double need, double left)
{
    char a[32], b[32];
    if (p->warned || left < 0 || need < 0 || need <= left) return;
    p->warned = true;
    runlog_line(log, "warning: at the measured rate the job needs about %s more, but Slurm's time limit "
                     "comes in %s: it will be stopped there (checkpointed, and requeued if it may be); "
                     "ask for a longer --time to finish in one go",
                hms(need, a, sizeof a), hms(left, b, sizeof b));
}

void progress_step(struct progress *p, struct runlog *log, int64_t e, int64_t s, double now, double left)
{
    if (p->interval <= 0 || now - p->last < p->interval || s >= p->steps) return;
    p->last = now;
    double rate = now > p->t0 ? (double)(s - p->first + 1) / (now - p->t0) : 0;
    double need = job_left(p, e, s, rate);
    char samples[48] = "", job[80] = "", limit[48] = "", t1[32], t2[32];
    if (p->samples_per_step > 0) snprintf(samples, sizeof samples, ", %.0f samples/s", rate * p->samples_per_step);
    if (need >= 0)
        snprintf(job, sizeof job, ", job ETA %s (epoch %lld of %lld)", hms(need, t1, sizeof t1), (long long)e,
                 (long long)p->max_epochs);
    if (left >= 0) snprintf(limit, sizeof limit, ", time limit in %s", hms(left, t2, sizeof t2));
    runlog_line(log, "epoch %lld step %lld/%lld (%.0f%%): %.2f steps/s%s; epoch ETA %s%s%s", (long long)e,
                (long long)s, (long long)p->steps, 100.0 * (double)s / (double)p->steps, rate, samples,
                hms(rate > 0 ? (double)(p->steps - s) / rate : 0, t1, sizeof t1), job, limit);
    warn_limit(p, log, need, left);
}

void progress_epoch_end(struct progress *p, struct runlog *log, int64_t e, double now, double left,
                        char *text, size_t size)
{
    char t[32];
    text[0] = '\0';
    if (p->first == 1) p->epoch_seconds = now - p->t0; /* a whole epoch: the yardstick */
    if (!p->max_epochs || e >= p->max_epochs) return;
    /* before a whole epoch (a resume mid-epoch): this part, scaled to all steps */
    double per = p->epoch_seconds > 0 ? p->epoch_seconds
                                      : (now - p->t0) * (double)p->steps / (double)(p->steps - p->first + 1);
    double need = (double)(p->max_epochs - e) * per;
    snprintf(text, size, "; job ETA %s (%lld epoch%s left)", hms(need, t, sizeof t), (long long)(p->max_epochs - e),
             p->max_epochs - e == 1 ? "" : "s");
    warn_limit(p, log, need, left);
}
