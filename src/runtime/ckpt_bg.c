/* A checkpoint save on a thread of its own; see include/cairn/ckpt_bg.h. */
#include "cairn/ckpt_bg.h"

#include "cairn/clock.h"
#include "cairn/error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ckpt_bg {
    MPI_Comm world, group; /* the writer's own */
    int n;
    struct tensor *copy;  /* by blob id */
    struct tensor **view; /* &copy[i] where copied, else NULL */
    pthread_t th;
    bool busy;
    bool inline_done; /* no thread: fn ran in ckpt_bg_start */
    atomic_bool finished;
    ckpt_bg_fn *fn;
    void *arg;
    /* the writer's result, read after the join */
    int rc;
    char msg[2048];
    /* ckpt_bg_hold: the writer waits until the main thread joins */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool joining;
};

int ckpt_bg_create(MPI_Comm world, MPI_Comm group, int n, struct ckpt_bg **out)
{
    int rc = 0;
    struct ckpt_bg *b = calloc(1, sizeof *b);
    *out = NULL;
    if (b) {
        b->world = b->group = MPI_COMM_NULL;
        b->n = n;
        b->copy = calloc((size_t)n + 1, sizeof *b->copy);
        b->view = calloc((size_t)n + 1, sizeof *b->view);
        pthread_mutex_init(&b->mu, NULL);
        pthread_cond_init(&b->cv, NULL);
    }
    if (!b || !b->copy || !b->view) rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    /* both collective whatever happened above: no rank is left in one */
    MPI_Comm w = MPI_COMM_NULL, g = MPI_COMM_NULL;
    int e = MPI_Comm_dup(world, &w), eg = group != MPI_COMM_NULL ? MPI_Comm_dup(group, &g) : MPI_SUCCESS;
    if (e == MPI_SUCCESS) e = eg;
    if (e != MPI_SUCCESS && rc == 0) rc = cairn_err_mpi(e, __FILE__, __LINE__, "MPI_Comm_dup");
    if (b) {
        b->world = w;
        b->group = g;
    } else {
        if (w != MPI_COMM_NULL) MPI_Comm_free(&w);
        if (g != MPI_COMM_NULL) MPI_Comm_free(&g);
    }
    if (rc) {
        ckpt_bg_destroy(&b);
        return rc;
    }
    *out = b;
    return 0;
}

/* Release a held writer and join it (if a save is in flight). */
static void end_thread(struct ckpt_bg *b)
{
    if (!b->busy) return;
    pthread_mutex_lock(&b->mu);
    b->joining = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (!b->inline_done) pthread_join(b->th, NULL);
    b->busy = b->inline_done = false;
}

void ckpt_bg_destroy(struct ckpt_bg **pb)
{
    struct ckpt_bg *b = pb ? *pb : NULL;
    if (!b) return;
    end_thread(b); /* its result, and this thread's error record, left as they are */
    for (int i = 0; b->copy && i < b->n; i++) tensor_free(&b->copy[i]);
    free(b->copy);
    free(b->view);
    if (b->world != MPI_COMM_NULL) MPI_Comm_free(&b->world);
    if (b->group != MPI_COMM_NULL) MPI_Comm_free(&b->group);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b);
    *pb = NULL;
}

/* dst becomes a copy of src, storage reused when it fits: unlike
 * tensor_copy, no zeroing first (the copy is the save's stall). */
static int copy_one(struct tensor *dst, const struct tensor *src)
{
    size_t bytes = tensor_bytes(src);
    if (bytes > dst->cap || (dst->mapped && bytes < dst->cap / 4)) {
        int rc = tensor_resize(dst, src->dtype, &src->shape);
        if (rc) return rc;
    }
    dst->dtype = src->dtype;
    dst->shape = src->shape;
    if (bytes) memcpy(dst->data, src->data, bytes);
    return 0;
}

int ckpt_bg_copy(struct ckpt_bg *b, struct tensor *const *src, const enum ckpt_bg_take *take)
{
    for (int i = 0; i < b->n; i++) {
        b->view[i] = NULL;
        if (take[i] == CKPT_BG_NONE) continue;
        if (take[i] == CKPT_BG_SHAPE) { /* what a save asks of a part it does not write */
            b->copy[i].dtype = src[i]->dtype;
            b->copy[i].shape = src[i]->shape;
        } else {
            int rc = copy_one(&b->copy[i], src[i]);
            if (rc) return rc;
        }
        b->view[i] = &b->copy[i];
    }
    return 0;
}

static void *writer_main(void *arg)
{
    struct ckpt_bg *b = arg;
    b->rc = b->fn(b->arg, b->world, b->group, b->view);
    if (b->rc) snprintf(b->msg, sizeof b->msg, "%s", cairn_errmsg());
    atomic_store(&b->finished, true);
    return NULL;
}

void ckpt_bg_start(struct ckpt_bg *b, ckpt_bg_fn *fn, void *arg, bool thread)
{
    b->fn = fn;
    b->arg = arg;
    b->rc = 0;
    b->msg[0] = '\0';
    b->joining = false;
    b->inline_done = false;
    atomic_store(&b->finished, false);
    b->busy = true; /* before the thread reads it (ckpt_bg_running) */
    if (thread && pthread_create(&b->th, NULL, writer_main, b) == 0) return;
    b->busy = false; /* no thread to be had: the save is written now (and never held) */
    writer_main(b);
    b->inline_done = true;
    b->busy = true;
}

bool ckpt_bg_busy(const struct ckpt_bg *b) { return b && b->busy; }
bool ckpt_bg_running(const struct ckpt_bg *b) { return b && b->busy && !atomic_load(&b->finished); }

int ckpt_bg_join(struct ckpt_bg *b, double *waited)
{
    *waited = 0;
    if (!ckpt_bg_busy(b)) return 0;
    double t0 = clock_now();
    bool running = ckpt_bg_running(b);
    end_thread(b);
    if (running) *waited = clock_now() - t0;
    if (b->rc) return cairn_err_set(b->rc, __FILE__, __LINE__, "%s", b->msg);
    return 0;
}

void ckpt_bg_hold(struct ckpt_bg *b)
{
    pthread_mutex_lock(&b->mu);
    while (!b->joining) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}
