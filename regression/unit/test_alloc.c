/* Constructors whose allocations fail part way: each returns
 * CAIRN_ENOMEM and leaves what it made for its destroy, which releases
 * all of it (and touches nothing that is not there).  The build links
 * this test with -Wl,--wrap=calloc,--wrap=free, so the library's own
 * calls come here: the n-th calloc fails, and the blocks handed out are
 * counted until they are freed; MPI's (a shared library) are not. */
#include "unit.h"

#include "train/train_priv.h"

#include <mpi.h>

/* Open MPI's own allocations at exit cannot be told from cairn's; the
 * test counts the constructor's blocks itself. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return 1; }

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void __real_free(void *p);
void __wrap_free(void *p);

enum { LIVE_MAX = 64 };
static int fail_at; /* the call that fails, counting from 1; 0: none */
static int calls;
static bool counting;
static void *live[LIVE_MAX]; /* blocks handed out while counting, not yet freed */
static int n_live;

void *__wrap_calloc(size_t n, size_t size)
{
    if (fail_at && ++calls == fail_at) return NULL;
    void *p = __real_calloc(n, size);
    if (p && counting && n_live < LIVE_MAX) live[n_live++] = p;
    return p;
}

void __wrap_free(void *p)
{
    for (int i = 0; p && i < n_live; i++)
        if (live[i] == p) live[i] = live[--n_live];
    __real_free(p);
}

static void arm(int n)
{
    fail_at = n;
    calls = 0;
}

/* emb_create on a reader and on a shard, its n-th calloc failing for
 * every n up to the first run with no failure: ENOMEM, then emb_destroy
 * frees the rest (issue 36: it read the reply list when only the request
 * list was there). */
static void emb_partial(void **state)
{
    (void)state;
    struct embed_spec tab[2] = {{.name = "user", .rows = 50, .dim = 4}, {.name = "item", .rows = 7, .dim = 3}};
    struct train_spec spec = {.inputs = 5, .tables = tab, .n_tables = 2, .dtype = DT_F32};
    struct train_plan tp = {.spec = &spec, .stages = 1, .replicas = 1, .shards = 3, .ranks_per_stage = 1};
    for (enum role role = ROLE_STAGE; role <= ROLE_PS; role++) {
        int n = 1, failures = 0;
        for (;; n++) {
            struct trainer t = {.tp = &tp, .spec = &spec, .role = role, .shard = 1, .dt = DT_F32, .esz = 4};
            arm(n);
            counting = true;
            n_live = 0;
            int rc = emb_create(&t, MPI_COMM_SELF);
            bool failed = calls >= n;
            arm(0);
            assert_int_equal(rc, failed ? CAIRN_ENOMEM : 0);
            assert_true(failed || t.emb);
            emb_destroy(&t);
            counting = false;
            assert_null(t.emb);
            assert_int_equal(n_live, 0); /* every block it got, freed */
            if (!failed) break;
            failures++;
        }
        assert_true(failures >= 8); /* the struct and its seven lists */
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(emb_partial),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Finalize();
    return rc;
}
