/* The run's log and metrics.
 *
 * Log lines go to stdout and RUN_DIR/cairn.log as
 *   2026-11-21T12:00:01 cairn: message        (world rank 0)
 *   2026-11-21T12:00:01 cairn[3]: message     (any other rank)
 * Metrics go to RUN_DIR/metrics.jsonl, one JSON object per line with at
 * least "time", "kind", "epoch" and "step".  Any rank may write; each line
 * is one append-mode write(), so lines from different ranks never mix.
 * Thread-safe: report steps log from their own threads. */
#ifndef CAIRN_RUNLOG_H
#define CAIRN_RUNLOG_H

#include <stdint.h>

struct runlog;

/* Open (append) the log files under dir, which must exist.  Not collective.
 * Errors: CAIRN_EIO. */
int runlog_open(const char *dir, int world_rank, struct runlog **out);
void runlog_close(struct runlog **l); /* accepts NULL, NULLs *l */

void runlog_line(struct runlog *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append {"time":...,"kind":kind,"epoch":e,"step":s,<fields>}; fields is a
 * JSON member list such as "\"loss\":0.5" or "". */
void runlog_metric(struct runlog *l, const char *kind, int64_t epoch, int64_t step,
                   const char *fields);

#endif
