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
    void *arg;
};

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
    if (l->lost) l->lost(l->arg, line);
    _exit(cairn_exit_code(CAIRN_ERUNTIME));
}

/* One beat: send the next one when the last has left, take in every
 * heartbeat that arrived (the listener may have slept through several).
 * A receive that fails counts as silence; nothing here can spin. */
static void beat(struct liveness *l)
{
    int done = 0;
    if (l->send != MPI_REQUEST_NULL && MPI_Test(&l->send, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        l->send = MPI_REQUEST_NULL;
    if (l->send == MPI_REQUEST_NULL &&
        MPI_Isend(&l->beat_out, 1, MPI_INT, l->next, 0, l->comm, &l->send) != MPI_SUCCESS)
        l->send = MPI_REQUEST_NULL;
    while (l->recv != MPI_REQUEST_NULL) {
        done = 0;
        if (MPI_Test(&l->recv, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            l->recv = MPI_REQUEST_NULL; /* failed: silence from now on */
            break;
        }
        if (!done) break;
        l->heard = clock_now();
        if (MPI_Irecv(&l->beat_in, 1, MPI_INT, l->prev, 0, l->comm, &l->recv) != MPI_SUCCESS)
            l->recv = MPI_REQUEST_NULL;
    }
}

static void *run(void *arg)
{
    struct liveness *l = arg;
    double last = clock_now();
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        beat(l);
        double now = clock_now(), quiet = now - l->heard;
        /* this thread itself did not run for a while (the job suspended,
         * the node starved): the silence it sees is its own, not the
         * predecessor's; listen again from now */
        if (now - last > 3 * BEAT_SECONDS) l->heard = now, quiet = 0;
        last = now;
        if (quiet > l->silence) silent(l, quiet);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t)BEAT_SECONDS;
        pthread_cond_timedwait(&l->cv, &l->mu, &until);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* Each rank learns its predecessor's host, for the message. */
static int ring(struct liveness *l, MPI_Comm world, const char *const *hosts)
{
    int size = 1;
    MPI_Comm_rank(world, &l->me);
    MPI_Comm_size(world, &size);
    l->prev = (l->me + size - 1) % size;
    l->next = (l->me + 1) % size;
    snprintf(l->prev_host, sizeof l->prev_host, "%s", hosts ? hosts[l->prev] : "?");
    if (MPI_Comm_dup(world, &l->comm) != MPI_SUCCESS)
        return cairn_err_set(CAIRN_EMPI, __FILE__, __LINE__, "MPI_Comm_dup failed");
    l->beat_out = l->me;
    l->heard = clock_now();
    l->send = MPI_REQUEST_NULL;
    return MPI_Irecv(&l->beat_in, 1, MPI_INT, l->prev, 0, l->comm, &l->recv) == MPI_SUCCESS
               ? 0
               : cairn_err_set(CAIRN_EMPI, __FILE__, __LINE__, "MPI_Irecv failed");
}

int liveness_start(MPI_Comm world, double silence, const char *who, const char *const *hosts,
                   liveness_lost_fn *lost, void *arg, struct liveness **out)
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
        MPI_Cancel(&l->recv);
        MPI_Wait(&l->recv, MPI_STATUS_IGNORE);
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
    if (l->recv != MPI_REQUEST_NULL) {
        MPI_Cancel(&l->recv);
        MPI_Wait(&l->recv, MPI_STATUS_IGNORE);
    }
    if (l->send != MPI_REQUEST_NULL) MPI_Request_free(&l->send); /* an eager int: it completes */
    MPI_Comm_free(&l->comm);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
    *lp = NULL;
}
