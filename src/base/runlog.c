/* Run log and metrics files; see include/cairn/runlog.h. */
#include "cairn/runlog.h"

#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/strbuf.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct runlog {
    int rank;
    int log_fd, metrics_fd;
    pthread_mutex_t lock;
};

int runlog_open(const char *dir, int world_rank, struct runlog **out)
{
    int rc = 0;
    char path[4096];
    struct runlog *l = calloc(1, sizeof *l);
    CAIRN_CHECK_ALLOC(l);
    l->rank = world_rank;
    l->log_fd = l->metrics_fd = -1;
    pthread_mutex_init(&l->lock, NULL);
    snprintf(path, sizeof path, "%s/cairn.log", dir);
    CAIRN_CHECK(fsx_open_append(path, &l->log_fd));
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    CAIRN_CHECK(fsx_open_append(path, &l->metrics_fd));
    *out = l;
    l = NULL;
cleanup:
    if (l) runlog_close(&l);
    return rc;
}

void runlog_close(struct runlog **lp)
{
    if (!lp || !*lp) return;
    struct runlog *l = *lp;
    if (l->log_fd >= 0) close(l->log_fd);
    if (l->metrics_fd >= 0) close(l->metrics_fd);
    pthread_mutex_destroy(&l->lock);
    free(l);
    *lp = NULL;
}

/* One write() per line: O_APPEND keeps lines from different ranks whole. */
static void put(int fd, const char *s, size_t n)
{
    while (fd >= 0 && n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0) return; /* logging must never take the job down */
        s += w;
        n -= (size_t)w;
    }
}

void runlog_line(struct runlog *l, const char *fmt, ...)
{
    char raw[4096], msg[4096], line[4400], stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    cairn_escape(msg, sizeof msg, raw); /* names from job and data files reach a terminal */
    int n = l && l->rank != 0 ? snprintf(line, sizeof line, "%s cairn[%d]: %s\n", stamp, l->rank, msg)
                              : snprintf(line, sizeof line, "%s cairn: %s\n", stamp, msg);
    if (n < 0) return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (l) pthread_mutex_lock(&l->lock);
    if (l) put(l->log_fd, line, len); /* the file first: it is the record */
    put(STDOUT_FILENO, line, len);
    if (l) pthread_mutex_unlock(&l->lock);
}

void runlog_metric(struct runlog *l, const char *kind, int64_t epoch, int64_t step,
                   const char *fields)
{
    if (!l) return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct strbuf b = {0};
    strbuf_addf(&b, "{\"time\":%.3f,\"kind\":", (double)tv.tv_sec + tv.tv_usec / 1e6);
    strbuf_json_str(&b, kind);
    strbuf_addf(&b, ",\"epoch\":%" PRId64 ",\"step\":%" PRId64 "%s%s}\n", epoch, step,
                fields && *fields ? "," : "", fields ? fields : "");
    if (!b.failed) {
        pthread_mutex_lock(&l->lock);
        put(l->metrics_fd, strbuf_str(&b), b.len);
        pthread_mutex_unlock(&l->lock);
    }
    strbuf_free(&b);
}
