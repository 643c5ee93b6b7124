/* The liveness ring; see include/cairn/liveness.h. */
#include "cairn/liveness.h"

#include "cairn/clock.h"
#include "cairn/coll.h"
#include "cairn/error.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BEAT_SECONDS 1.0
#define LISTEN_SECONDS 0.1 /* how often the thread looks for heartbeats and questions */
enum { TAG_BEAT, TAG_ASK, TAG_TELL, TAG_LOST };
enum { TELL_MAX = 1024, TELL_SLOTS = 32 }; /* an answer's bytes; answers in flight */
enum { LOST_MAX = 768 };                    /* a finding's bytes */

struct liveness {
    MPI_Comm comm; /* a dup of world: the heartbeats never meet cairn's messages */
    int me, prev, next;
    double silence, heard; /* heard: when prev's last heartbeat arrived */
    int beat_out, beat_in;
    MPI_Request send, recv;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    char who[96], prev_host[128];
    liveness_lost_fn *lost;
    liveness_where_fn *where;
    void *arg;
    char ask_in; /* a peer's question: what do you do? */
    MPI_Request ask;
    MPI_Request tell[TELL_SLOTS]; /* answers in flight */
    char told[TELL_SLOTS][TELL_MAX];
    int size;
    char lost_in[LOST_MAX]; /* a loss another rank found: its line */
    MPI_Request lost_req;
};

static bool settle(MPI_Request *r, int n, double wait);

/* A finding goes to every other rank, the next ones first, so that they
 * end at once, quietly, with this cause: a ring that went on would take
 * the ranks that end for a lost peer for lost ones, and name live ranks.
 * A stopped rank that is continued reads it before it looks at its own
 * predecessor.  r: room for size requests.  Bounded (a send to a lost
 * rank never ends, and may also end this process, which ends next). */
static void tell_all(struct liveness *l, const char *line, MPI_Request *r)
{
    int n = 0;
    for (int k = 1; k < l->size; k++)
        if (MPI_Isend(line, (int)strlen(line) + 1, MPI_CHAR, (l->me + k) % l->size, TAG_LOST, l->comm, &r[n]) ==
            MPI_SUCCESS)
            n++;
    settle(r, n, 0.25); /* eager and small: the live ranks' leave at once */
}

static _Noreturn void silent(struct liveness *l, double quiet)
{
    char line[512];
    snprintf(line, sizeof line,
             "%s: rank %d (%s) has not been heard from for %.0f s (watchdog.liveness %.0f s): "
             "that rank, its node or the network to it is gone; ending the job",
             l->who, l->prev, l->prev_host, quiet, l->silence);
    ssize_t ignored = write(STDERR_FILENO, "cairn: ", 7);
    ignored = write(STDERR_FILENO, line, strlen(line));
    ignored = write(STDERR_FILENO, "\n", 1);
    (void)ignored;
    if (l->lost) l->lost(l->arg, line, true); /* the words first: telling may end this process */
    liveness_tell(l, line);
    _exit(cairn_exit_code(CAIRN_ERUNTIME));
}

/* Another rank found a loss (or its watchdog fired): this one ends too,
 * with that cause and no word of its own. */
static void told(struct liveness *l)
{
    int done = 0;
    if (l->lost_req == MPI_REQUEST_NULL || MPI_Test(&l->lost_req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done)
        return;
    l->lost_in[LOST_MAX - 1] = 0;
    if (l->lost) l->lost(l->arg, l->lost_in, false);
    _exit(cairn_exit_code(CAIRN_ERUNTIME));
}

/* Send the next heartbeat when the last has left. */
static void beat(struct liveness *l)
{
    int done = 0;
    if (l->send != MPI_REQUEST_NULL && MPI_Test(&l->send, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        l->send = MPI_REQUEST_NULL;
    if (l->send == MPI_REQUEST_NULL &&
        MPI_Isend(&l->beat_out, 1, MPI_INT, l->next, TAG_BEAT, l->comm, &l->send) != MPI_SUCCESS)
        l->send = MPI_REQUEST_NULL;
}

/* Take in every heartbeat that arrived.  A receive that fails counts as
 * silence; nothing here can spin. */
static void listen_beats(struct liveness *l)
{
    int done = 0;
    while (l->recv != MPI_REQUEST_NULL) {
        done = 0;
        if (MPI_Test(&l->recv, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            l->recv = MPI_REQUEST_NULL; /* failed: silence from now on */
            break;
        }
        if (!done) break;
        l->heard = clock_now();
        if (MPI_Irecv(&l->beat_in, 1, MPI_INT, l->prev, TAG_BEAT, l->comm, &l->recv) != MPI_SUCCESS)
            l->recv = MPI_REQUEST_NULL;
    }
}

/* A free answer slot (its last send done), or -1: then the question
 * waits in MPI until a slot is free. */
static int free_slot(struct liveness *l)
{
    for (int i = 0; i < TELL_SLOTS; i++) {
        int done = 1;
        if (l->tell[i] != MPI_REQUEST_NULL && MPI_Test(&l->tell[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            l->tell[i] = MPI_REQUEST_NULL, done = 1;
        if (done) return i;
    }
    return -1;
}

/* Answer every question that came in with what this rank does now. */
static void answer(struct liveness *l)
{
    int s;
    while (l->ask != MPI_REQUEST_NULL && (s = free_slot(l)) >= 0) {
        int done = 0;
        MPI_Status st;
        if (MPI_Test(&l->ask, &done, &st) != MPI_SUCCESS) {
            l->ask = MPI_REQUEST_NULL; /* no more answers; the beat goes on */
            break;
        }
        if (!done) break;
        l->where(l->arg, l->told[s], TELL_MAX);
        if (MPI_Isend(l->told[s], (int)strlen(l->told[s]) + 1, MPI_CHAR, st.MPI_SOURCE, TAG_TELL, l->comm,
                      &l->tell[s]) != MPI_SUCCESS)
            l->tell[s] = MPI_REQUEST_NULL;
        if (MPI_Irecv(&l->ask_in, 1, MPI_CHAR, MPI_ANY_SOURCE, TAG_ASK, l->comm, &l->ask) != MPI_SUCCESS)
            l->ask = MPI_REQUEST_NULL;
    }
}

static void *run(void *arg)
{
    struct liveness *l = arg;
    double last = clock_now(), due = 0;
    long stops = clock_stops();
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        double now = clock_now();
        if (now >= due) beat(l), due = now + BEAT_SECONDS;
        listen_beats(l);
        answer(l);
        told(l); /* first: a rank that knows of a loss reports none of its own */
        now = clock_now();
        double quiet = now - l->heard;
        /* this thread itself did not run for a while (the job suspended,
         * the node starved), seen here or by a SIGCONT (also a stop too
         * short for this test, or one that ended a moment ago): the
         * silence it sees is its own, not the predecessor's; listen again
         * from now */
        if (now - last > 3 * BEAT_SECONDS || clock_stops() != stops) l->heard = now, quiet = 0;
        stops = clock_stops();
        last = now;
        if (quiet > l->silence) silent(l, quiet);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)(LISTEN_SECONDS * 1e9);
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&l->cv, &l->mu, &until);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* Wait at most `wait` seconds for n requests to end; true if all did.
 * Bounded: a request that waits on a lost peer may never end. */
static bool settle(MPI_Request *r, int n, double wait)
{
    for (double until = clock_now() + wait;; clock_sleep(0.01)) {
        int left = 0;
        for (int i = 0; i < n; i++) {
            int done = 0;
            if (r[i] != MPI_REQUEST_NULL && MPI_Test(&r[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                r[i] = MPI_REQUEST_NULL; /* failed: over */
            left += r[i] != MPI_REQUEST_NULL;
        }
        if (left == 0) return true;
        if (clock_now() >= until) return false;
    }
}

/* Cancel a receive, at most a second; false if it did not end (its
 * buffer must then stay). */
static bool cancel(MPI_Request *r)
{
    if (*r == MPI_REQUEST_NULL) return true;
    MPI_Cancel(r);
    return settle(r, 1, 1.0);
}

/* Each rank learns its predecessor's host, for the message. */
static int ring(struct liveness *l, MPI_Comm world, const char *const *hosts)
{
    MPI_Comm_rank(world, &l->me);
    MPI_Comm_size(world, &l->size);
    int size = l->size;
    l->prev = (l->me + size - 1) % size;
    l->next = (l->me + 1) % size;
    snprintf(l->prev_host, sizeof l->prev_host, "%s", hosts ? hosts[l->prev] : "?");
    if (MPI_Comm_dup(world, &l->comm) != MPI_SUCCESS)
        return cairn_err_set(CAIRN_EMPI, __FILE__, __LINE__, "MPI_Comm_dup failed");
    l->beat_out = l->me;
    l->heard = clock_now();
    l->send = l->recv = l->ask = l->lost_req = MPI_REQUEST_NULL;
    for (int i = 0; i < TELL_SLOTS; i++) l->tell[i] = MPI_REQUEST_NULL;
    if (MPI_Irecv(&l->beat_in, 1, MPI_INT, l->prev, TAG_BEAT, l->comm, &l->recv) != MPI_SUCCESS ||
        (l->where && MPI_Irecv(&l->ask_in, 1, MPI_CHAR, MPI_ANY_SOURCE, TAG_ASK, l->comm, &l->ask) != MPI_SUCCESS) ||
        MPI_Irecv(l->lost_in, LOST_MAX, MPI_CHAR, MPI_ANY_SOURCE, TAG_LOST, l->comm, &l->lost_req) != MPI_SUCCESS) {
        cancel(&l->recv);
        cancel(&l->ask);
        MPI_Comm_free(&l->comm);
        return cairn_err_set(CAIRN_EMPI, __FILE__, __LINE__, "MPI_Irecv failed");
    }
    return 0;
}

int liveness_start(MPI_Comm world, double silence, const char *who, const char *const *hosts,
                   liveness_lost_fn *lost, liveness_where_fn *where, void *arg, struct liveness **out)
{
    int size = 1, level = MPI_THREAD_SINGLE;
    *out = NULL;
    MPI_Comm_size(world, &size);
    MPI_Query_thread(&level);
    if (silence <= 0 || size < 2 || level < MPI_THREAD_MULTIPLE) return 0; /* the same on every rank */
    struct liveness *l = calloc(1, sizeof *l);
    if (!l) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    l->silence = silence;
    l->lost = lost;
    l->where = where;
    l->arg = arg;
    snprintf(l->who, sizeof l->who, "%s", who);
    int rc = ring(l, world, hosts);
    if (rc) {
        free(l);
        return rc;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* a clock step changes nothing */
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&l->thread, NULL, run, l) != 0) {
        cancel(&l->recv);
        cancel(&l->ask);
        cancel(&l->lost_req);
        MPI_Comm_free(&l->comm);
        free(l);
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "cannot start the liveness thread");
    }
    *out = l;
    return 0;
}

void liveness_stop(struct liveness **lp)
{
    struct liveness *l = lp ? *lp : NULL;
    if (!l) return;
    /* beat on until every rank is here, so that none takes a rank that
     * stopped first for a lost one */
    MPI_Request all;
    if (MPI_Ibarrier(l->comm, &all) == MPI_SUCCESS) coll_wait(1, &all);
    liveness_drop(lp);
}

void liveness_drop(struct liveness **lp)
{
    struct liveness *l = lp ? *lp : NULL;
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    /* an eager int and answers: they leave at once unless the peer is
     * gone; then their buffers are left to MPI rather than freed */
    bool over = cancel(&l->recv);
    over = cancel(&l->ask) && over;
    over = cancel(&l->lost_req) && over;
    over = settle(&l->send, 1, 1.0) && over;
    over = settle(l->tell, TELL_SLOTS, 1.0) && over;
    MPI_Comm_free(&l->comm);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    if (over) free(l); /* else MPI may still use its buffers */
    *lp = NULL;
}

/* Post the questions and the receives for their answers; rank i's
 * requests are NULL where it is this rank or the send failed. */
static void post_asks(struct liveness *l, int first, int n, char *buf, MPI_Request *recv, MPI_Request *send)
{
    static const char question = '?';
    for (int i = 0; i < n; i++) {
        recv[i] = send[i] = MPI_REQUEST_NULL;
        int r = first + i;
        if (r == l->me) continue;
        if (MPI_Irecv(buf + (size_t)i * TELL_MAX, TELL_MAX, MPI_CHAR, r, TAG_TELL, l->comm, &recv[i]) != MPI_SUCCESS)
            recv[i] = MPI_REQUEST_NULL;
        else if (MPI_Isend(&question, 1, MPI_CHAR, r, TAG_ASK, l->comm, &send[i]) != MPI_SUCCESS)
            send[i] = MPI_REQUEST_NULL, cancel(&recv[i]);
    }
}

int liveness_ask(struct liveness *l, int first, int n, double wait, char **answers)
{
    for (int i = 0; i < n; i++) answers[i] = NULL;
    if (!l || n <= 0) return 0;
    int me = l->me;
    MPI_Request *req = malloc(2 * (size_t)n * sizeof *req);
    char *buf = malloc((size_t)n * TELL_MAX);
    if (!req || !buf) {
        free(req);
        free(buf);
        return 0;
    }
    post_asks(l, first, n, buf, req, req + n);
    int left = 0;
    for (int i = 0; i < n; i++) left += req[i] != MPI_REQUEST_NULL;
    /* the whole wait, even when all have answered: this process (whose
     * ring thread answers) stays for peers that ask at the same moment */
    for (double until = clock_now() + wait; clock_now() < until; clock_sleep(0.01))
        for (int i = 0; left > 0 && i < n; i++) {
            int done = 0, len = 0;
            MPI_Status st;
            if (req[i] == MPI_REQUEST_NULL) continue;
            if (MPI_Test(&req[i], &done, &st) != MPI_SUCCESS) req[i] = MPI_REQUEST_NULL, done = 0, left--;
            if (!done) continue;
            left--;
            MPI_Get_count(&st, MPI_CHAR, &len);
            if (len > 0 && len <= TELL_MAX && (answers[i] = malloc((size_t)len + 1))) {
                memcpy(answers[i], buf + (size_t)i * TELL_MAX, (size_t)len);
                answers[i][len] = 0;
            }
        }
    for (int i = 0; i < n; i++) /* the silent ones */
        if (req[i] != MPI_REQUEST_NULL) MPI_Cancel(&req[i]);
    bool over = settle(req, n, 1.0);
    for (int i = n; i < 2 * n; i++)
        if (req[i] != MPI_REQUEST_NULL) MPI_Request_free(&req[i]);
    if (over) free(buf); /* else a receive that did not end may still write there */
    free(req);
    return n - (first <= me && me < first + n);
}

void liveness_tell(struct liveness *l, const char *line)
{
    MPI_Request *r = l ? malloc((size_t)l->size * sizeof *r) : NULL;
    char *copy = r ? malloc(LOST_MAX) : NULL;
    if (!copy) {
        free(r);
        return;
    }
    snprintf(copy, LOST_MAX, "%s", line);
    tell_all(l, copy, r);
    /* neither is freed: a send that did not end may still read them, and
     * the process ends next */
}
