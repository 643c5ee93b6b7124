/* coll_exchange run back to back, as the embedding pulls run it: every
 * round each rank sends its two next ranks a message that carries the
 * round, and every message must arrive in its own round.  A slow rank
 * (rank 1 sleeps in its receive callback) keeps draining a round while
 * the others start the next, which is when a round would take the next
 * one's message if both used one tag.
 *
 * usage: mpirun -np N mpi_exchange ROUNDS [--one-tag]
 * --one-tag uses a single tag for every round (the defect this guards
 * against), to show that the check can fail.  Exit 0 when every rank got
 * exactly its messages in every round. */
#include "cairn/coll.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ctx {
    int me;
    int64_t round, got, wrong;
};

static int on_recv(void *arg, int source, void *data, int bytes)
{
    struct ctx *c = arg;
    int64_t r;
    (void)source;
    if (bytes != (int)sizeof r) {
        c->wrong++;
        return 0;
    }
    memcpy(&r, data, sizeof r);
    if (r != c->round) c->wrong++;
    c->got++;
    if (c->me == 1) nanosleep(&(struct timespec){0, 200000}, NULL); /* the slow one */
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n = 0, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int64_t rounds = argc > 1 ? atoll(argv[1]) : 500;
    int one_tag = argc > 2 && strcmp(argv[2], "--one-tag") == 0;
    struct ctx c = {.me = me};
    int64_t bad = 0, msg;
    int dest[2] = {(me + 1) % n, (me + 2) % n}, bytes[2] = {sizeof msg, sizeof msg};
    void *buf[2] = {&msg, &msg};
    for (c.round = 0; c.round < rounds; c.round++) {
        int64_t before = c.got;
        msg = c.round;
        int tag = one_tag ? 7 : 7 + (int)(c.round & 1);
        if (coll_exchange(MPI_COMM_WORLD, tag, n > 2 ? 2 : 1, dest, buf, bytes, on_recv, &c)) bad++;
        if (c.got - before != (n > 2 ? 2 : 1)) bad++;
    }
    bad += c.wrong;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) printf(bad ? "FAILED: %lld misdelivered or missing messages\n" : "ok: %lld rounds\n",
                        bad ? (long long)bad : (long long)rounds);
    MPI_Finalize();
    return bad ? 1 : 0;
}
