/* The liveness ring; see include/cairn/liveness.h. */
#include "cairn/liveness.h"

#include "cairn/clock.h"
#include "cairn/coll.h"
#include "cairn/error.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BEAT_SECONDS 1.0
#define LISTEN_SECONDS 0.1 /* how often the thread looks for heartbeats and questions */
enum { TAG_ASK = 1, TAG_TELL, TAG_LOST };
enum { ADDR_MAX = 8 }; /* a host's IPv4 addresses a heartbeat goes to */
enum { TELL_MAX = 1024, TELL_SLOTS = 32 }; /* an answer's bytes; answers in flight */
enum { LOST_MAX = 768 };                    /* a finding's bytes */
enum { PASS_TIMES = 3 };                    /* an ending datagram's copies */
enum { LISTEN_MAX = 64 };                   /* datagrams read in one pass */

/* Where a rank's heartbeats go: its host's addresses (network order) and
 * its socket's port. */
struct beat_addr {
    uint32_t ip[ADDR_MAX];
    uint32_t n, port;
};
struct beat_msg {
    uint64_t key; /* this run's: another job's heartbeats do not count */
    int32_t rank, ending; /* ending: the sender ends for a finding, line holds it */
    char line[LOST_MAX];
};
#define BEAT_BYTES offsetof(struct beat_msg, line) /* a plain heartbeat's */

struct liveness {
    MPI_Comm comm; /* a dup of world: questions and findings never meet cairn's messages */
    int me, prev, next;
    double silence, heard; /* heard: when prev's last heartbeat arrived */
    int sock;              /* UDP: the heartbeats do not depend on MPI's progress */
    uint64_t key;
    struct beat_addr to; /* the successor's */
    pthread_t thread, pulse;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_bool stop, ending; /* ending: a finding (own or told) ends this process */
    atomic_bool heard_once;   /* a first heartbeat came: datagrams get through */
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
static void end_told(struct liveness *l, const char *line);

/* A finding goes to every other rank, the next ones first, so that they
 * end at once, quietly, with this cause: a ring that went on would take
 * the ranks that end for a lost peer for lost ones, and name live ranks.
 * r: room for size requests.  Bounded (a send to a lost
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

static void silent(struct liveness *l, double quiet)
{
    if (atomic_exchange(&l->ending, true)) return; /* told of a loss meanwhile: that thread ends it */
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
    end_told(l, l->lost_in);
}

/* Send a heartbeat to every address of the successor's host (one of them
 * reaches it; a datagram lost now and then is what `silence` allows). */
static void send_to_next(struct liveness *l, const struct beat_msg *m, size_t bytes)
{
    for (uint32_t i = 0; i < l->to.n; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = (in_port_t)l->to.port};
        a.sin_addr.s_addr = l->to.ip[i];
        ssize_t ignored = sendto(l->sock, m, bytes, MSG_DONTWAIT, (struct sockaddr *)&a, sizeof a);
        (void)ignored;
    }
}

static void beat(struct liveness *l)
{
    struct beat_msg m = {.key = l->key, .rank = l->me};
    send_to_next(l, &m, BEAT_BYTES);
}

/* This rank ends for a finding: the successor hears it with the beats
 * (and passes it on), also when MPI cannot carry it (held up, or the
 * successor's MPI is). */
static void pass_on(struct liveness *l, const char *line)
{
    struct beat_msg m = {.key = l->key, .rank = l->me, .ending = 1};
    snprintf(m.line, sizeof m.line, "%s", line);
    for (int i = 0; i < PASS_TIMES; i++) send_to_next(l, &m, BEAT_BYTES + strlen(m.line) + 1);
}

/* A finding from elsewhere: this rank ends too, with that cause and no
 * word of its own, and passes it on; nothing if this rank ends already. */
static void end_told(struct liveness *l, const char *line)
{
    if (atomic_exchange(&l->ending, true)) return; /* this rank's own finding goes first */
    pass_on(l, line); /* first: the callback writes, and a hung file system's alarm may end it */
    if (l->lost) l->lost(l->arg, line, false);
    _exit(cairn_exit_code(CAIRN_ERUNTIME));
}

/* Take in the heartbeats that arrived; anything else is dropped.  At most
 * LISTEN_MAX a pass: a flood of datagrams to this port must not keep the
 * thread from beating. */
static void listen_beats(struct liveness *l)
{
    struct beat_msg m;
    ssize_t n;
    for (int k = 0; k < LISTEN_MAX && (n = recv(l->sock, &m, sizeof m, MSG_DONTWAIT)) >= 0; k++) {
        if (n < (ssize_t)BEAT_BYTES || m.key != l->key || m.rank != l->prev) continue;
        l->heard = clock_now();
        atomic_store(&l->heard_once, true);
        if (m.ending && n > (ssize_t)BEAT_BYTES) {
            m.line[n - (ssize_t)BEAT_BYTES - 1] = 0;
            end_told(l, m.line);
        }
    }
}

/* The heartbeats, on a thread that calls MPI only once it finds a loss
 * (silent): a rank whose MPI is held up (a connection to a lost node)
 * still beats, so that only the lost are named. */
static void *pulse(void *arg)
{
    struct liveness *l = arg;
    double last = clock_now(), due = 0;
    long stops = clock_stops();
    while (!atomic_load(&l->stop) && !atomic_load(&l->ending)) {
        double now = clock_now();
        if (now >= due) beat(l), due = now + BEAT_SECONDS;
        listen_beats(l);
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
        if (quiet > l->silence && atomic_load(&l->heard_once)) silent(l, quiet); /* else first_beats says */
        clock_sleep(LISTEN_SECONDS);
    }
    return NULL;
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

/* Questions and findings, over MPI. */
static void *run(void *arg)
{
    struct liveness *l = arg;
    pthread_mutex_lock(&l->mu);
    while (!atomic_load(&l->stop)) {
        answer(l);
        told(l); /* a rank that knows of a loss reports none of its own */
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

/* This rank's heartbeat socket (UDP, any address, a free port) and where
 * it is reached: its host's IPv4 addresses but loopback (the loopback
 * alone on a host that has no other).  -1 if it cannot have one. */
static int beat_socket(struct beat_addr *a)
{
    *a = (struct beat_addr){0};
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    a->port = sa.sin_port;
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all) == 0)
        for (struct ifaddrs *i = all; i && a->n < ADDR_MAX; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
                !(i->ifa_flags & IFF_LOOPBACK))
                a->ip[a->n++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
    freeifaddrs(all);
    if (a->n == 0) a->ip[a->n++] = htonl(INADDR_LOOPBACK);
    return fd;
}

/* Collective: each rank learns its predecessor's host (for the message)
 * and its successor's heartbeat address; all ranks share a key. */
static int ring(struct liveness *l, MPI_Comm world, const char *const *hosts)
{
    MPI_Comm_rank(world, &l->me);
    MPI_Comm_size(world, &l->size);
    int size = l->size;
    l->prev = (l->me + size - 1) % size;
    l->next = (l->me + 1) % size;
    snprintf(l->prev_host, sizeof l->prev_host, "%s", hosts ? hosts[l->prev] : "?");
    struct beat_addr mine;
    l->sock = beat_socket(&mine);
    struct beat_addr *all = malloc((size_t)size * sizeof *all);
    if (l->me == 0 && getrandom(&l->key, sizeof l->key, GRND_NONBLOCK) != (ssize_t)sizeof l->key)
        l->key = ((uint64_t)getpid() << 32) ^ (uint64_t)(clock_now() * 1e9);
    int ok = all != NULL, every = 0;
    /* every rank makes the same calls, whatever failed where */
    int e1 = MPI_Bcast(&l->key, 1, MPI_UINT64_T, 0, world);
    int e2 = MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, world);
    if (e1 != MPI_SUCCESS || e2 != MPI_SUCCESS || !every ||
        MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, world) != MPI_SUCCESS) {
        free(all);
        if (l->sock >= 0) close(l->sock);
        return cairn_err_set(CAIRN_EMPI, __FILE__, __LINE__, "cannot set up the liveness ring");
    }
    int missing = -1;
    for (int r = 0; r < size; r++)
        if (all[r].port == 0 || all[r].n == 0 || all[r].n > ADDR_MAX) missing = r;
    l->to = all[l->next];
    free(all);
    if (hosts && strcmp(hosts[l->next], hosts[l->me]) != 0) { /* another host: not to addresses this one has too */
        struct beat_addr to = l->to;
        to.n = 0;
        for (uint32_t i = 0; i < l->to.n && i < ADDR_MAX; i++) {
            bool own = false;
            for (uint32_t k = 0; k < mine.n; k++) own = own || mine.ip[k] == l->to.ip[i];
            if (!own) to.ip[to.n++] = l->to.ip[i];
        }
        if (to.n > 0) l->to = to;
    }
    if (missing >= 0) { /* the same on every rank */
        if (l->sock >= 0) close(l->sock);
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                             "rank %d (%s) cannot open a UDP socket for its heartbeats; "
                             "watchdog.liveness = 0 turns the liveness ring off",
                             missing, hosts ? hosts[missing] : "?");
    }
    if (MPI_Comm_dup(world, &l->comm) != MPI_SUCCESS) {
        close(l->sock);
        return cairn_err_set(CAIRN_EMPI, __FILE__, __LINE__, "MPI_Comm_dup failed");
    }
    l->heard = clock_now();
    return 0;
}

/* This rank's receives for questions and findings (local: false if one
 * cannot be posted, and none is left). */
static bool post_receives(struct liveness *l)
{
    l->ask = l->lost_req = MPI_REQUEST_NULL;
    for (int i = 0; i < TELL_SLOTS; i++) l->tell[i] = MPI_REQUEST_NULL;
    if ((l->where && MPI_Irecv(&l->ask_in, 1, MPI_CHAR, MPI_ANY_SOURCE, TAG_ASK, l->comm, &l->ask) != MPI_SUCCESS) ||
        MPI_Irecv(l->lost_in, LOST_MAX, MPI_CHAR, MPI_ANY_SOURCE, TAG_LOST, l->comm, &l->lost_req) != MPI_SUCCESS) {
        cancel(&l->ask);
        return false;
    }
    return true;
}

/* Collective, on every rank whatever failed on it: every rank started its
 * threads (up: false where they did not) and heard its predecessor once,
 * or all fail alike, at start-up: datagrams that never get through (a
 * firewall) would otherwise look like lost nodes.  Waited for until a
 * second before the ring itself would call the predecessor silent, 30 s
 * at most, on the clock that leaves out a stop (a job suspended now). */
static int first_beats(struct liveness *l, MPI_Comm world, const char *const *hosts, bool up)
{
    double wait = l->silence - 1 < 30 ? l->silence - 1 : 30, t0 = clock_run();
    while (up && !atomic_load(&l->heard_once) && clock_run() - t0 < wait) clock_sleep(0.01);
    int mine[2] = {up ? INT_MAX : l->me, up && !atomic_load(&l->heard_once) ? l->me : INT_MAX};
    int first[2] = {INT_MAX, INT_MAX};
    if (MPI_Allreduce(mine, first, 2, MPI_INT, MPI_MIN, world) != MPI_SUCCESS)
        return cairn_err_set(CAIRN_EMPI, __FILE__, __LINE__, "cannot set up the liveness ring");
    if (first[0] != INT_MAX)
        return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                             "rank %d (%s) cannot start its liveness threads; watchdog.liveness = 0 turns the "
                             "liveness ring off",
                             first[0], hosts ? hosts[first[0]] : "?");
    if (first[1] == INT_MAX) return 0;
    int prev = (first[1] + l->size - 1) % l->size;
    return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__,
                         "rank %d (%s) heard no heartbeat from rank %d (%s) in %.0f s: UDP datagrams between "
                         "them do not get through (a firewall?); let them through, or set "
                         "watchdog.liveness = 0 to run without the liveness ring",
                         first[1], hosts ? hosts[first[1]] : "?", prev, hosts ? hosts[prev] : "?", wait);
}

int liveness_start(MPI_Comm world, double silence, const char *who, const char *const *hosts,
                   liveness_lost_fn *lost, liveness_where_fn *where, void *arg, bool threads,
                   struct liveness **out)
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
    bool posted = post_receives(l);
    bool talk = posted && threads && pthread_create(&l->thread, NULL, run, l) == 0;
    bool up = talk && pthread_create(&l->pulse, NULL, pulse, l) == 0;
    rc = first_beats(l, world, hosts, up); /* every rank, so that none waits there alone */
    if (!up) {
        if (talk) {
            atomic_store(&l->stop, true);
            pthread_join(l->thread, NULL);
        }
        if (posted) cancel(&l->ask), cancel(&l->lost_req);
        MPI_Comm_free(&l->comm);
        close(l->sock);
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        free(l);
        return rc;
    }
    if (rc) {
        liveness_drop(&l);
        return rc;
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
    atomic_store(&l->stop, true);
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    pthread_join(l->pulse, NULL);
    close(l->sock);
    /* answers leave at once unless the peer is gone; then their buffers
     * are left to MPI rather than freed */
    bool over = cancel(&l->ask);
    over = cancel(&l->lost_req) && over;
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

struct telling {
    struct liveness *l;
    MPI_Request *r;
    char *line;
    atomic_bool done;
};

static void *tell_thread(void *arg)
{
    struct telling *t = arg;
    tell_all(t->l, t->line, t->r);
    atomic_store(&t->done, true);
    return NULL;
}

void liveness_tell(struct liveness *l, const char *line)
{
    if (!l) return;
    atomic_store(&l->ending, true); /* its own datagram, back round the ring, ends nothing here */
    pass_on(l, line);
    struct telling *t = malloc(sizeof *t);
    MPI_Request *r = t ? malloc((size_t)l->size * sizeof *r) : NULL;
    char *copy = r ? malloc(LOST_MAX) : NULL;
    if (!copy) {
        free(r);
        free(t);
        return;
    }
    snprintf(copy, LOST_MAX, "%s", line);
    *t = (struct telling){.l = l, .r = r, .line = copy};
    /* on a thread of its own, and waited for a second at most: MPI may be
     * held up here, and the process ends next (the datagrams went) */
    pthread_t th;
    if (pthread_create(&th, NULL, tell_thread, t) != 0) return;
    pthread_detach(th);
    for (double until = clock_now() + 1.0; !atomic_load(&t->done) && clock_now() < until;) clock_sleep(0.01);
    /* nothing is freed: a send that did not end may still read them */
}
