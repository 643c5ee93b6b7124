/* Placement text, and a model layout that fits the ranks it is given. */
#include "unit.h"

#include "cairn/placement.h"
#include "cairn/strbuf.h"

struct fixture {
    struct job *job;
    struct plan *plan;
    struct diags d;
    struct strbuf b;
};

static int setup(void **state)
{
    static struct fixture f;
    memset(&f, 0, sizeof f);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    plan_destroy(&f->plan);
    job_destroy(&f->job);
    diags_free(&f->d);
    strbuf_free(&f->b);
    return 0;
}

/* 2 stages of R replicas (R ranks each), then P shards */
static const char model[] =
    "name = \"m\"; model = { inputs = 4; layers = ( { units = 3; }, { units = 2; } ); };\n"
    "data = { file = \"d.h5\"; batch = 8; };\n"
    "pipeline = { stages = 2; };\n"
    "stop = { max_epochs = 1; };\n";

static void plan_for(struct fixture *f, const char *set1, const char *set2, int ranks)
{
    const char *sets[] = {set1, set2};
    int rc = config_load("t.cfg", model, sets, set2 ? 2 : set1 ? 1 : 0, &f->job, &f->d);
    if (rc == 0) rc = plan_build(f->job, ranks, &f->plan, &f->d);
    if (rc) show(&f->d);
    assert_int_equal(rc, 0);
}

static void block_placement(void **state)
{
    struct fixture *f = *state;
    plan_for(f, "ps.shards=2", NULL, 7);
    char(*hosts)[PLACEMENT_HOST_MAX] = placement_block(f->plan, 2);
    assert_non_null(hosts);
    assert_int_equal(placement_text(f->plan, (const char(*)[PLACEMENT_HOST_MAX])hosts, "; ", &f->b), 0);
    free(hosts);
    assert_string_equal(strbuf_str(&f->b), "node1: ranks 0,1 (stage0, stage1); node2: ranks 2,3 (ps); "
                                           "node3: ranks 4,5 (spare); node4: rank 6 (spare)");
}

/* hosts in the order of their lowest rank, whatever their names; runs of
 * ranks as ranges */
static void cyclic_placement(void **state)
{
    struct fixture *f = *state;
    plan_for(f, "ps.shards=4", NULL, 6);
    const char hosts[6][PLACEMENT_HOST_MAX] = {"zeta", "alpha", "zeta", "zeta", "zeta", "alpha"};
    assert_int_equal(placement_text(f->plan, hosts, "; ", &f->b), 0);
    assert_string_equal(strbuf_str(&f->b), "zeta: ranks 0,2-4 (stage0, ps); alpha: ranks 1,5 (stage1, ps)");
}

static int group_size(const struct plan *p, const char *name)
{
    int g = plan_find_group(p, name);
    assert_true(g >= 0);
    return p->groups[g].nranks;
}

/* [MIN, MAX]: replicas take what is left first (one rank per stage each;
 * a count that keeps the gradient tree: 1, 2 or 4 here, pipeline.chunks
 * defaulting to 4), then shards; the rest stays spare; without a rank
 * count, the minimums */
static void ranges_fit_the_ranks(void **state)
{
    struct fixture *f = *state;
    static const struct {
        int ranks, replicas, shards, used;
    } cases[] = {{0, 1, 2, 4},  {4, 1, 2, 4},  {5, 1, 3, 5},  {6, 2, 2, 6},   {7, 2, 3, 7},
                 {8, 2, 4, 8},  {9, 2, 4, 8},  {10, 4, 2, 10}, {12, 4, 4, 12}, {14, 4, 4, 12}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        plan_for(f, "replicas=[1, 4]", "ps.shards=[2, 4]", cases[i].ranks);
        assert_int_equal(group_size(f->plan, "stage0"), cases[i].replicas);
        assert_int_equal(group_size(f->plan, "ps"), cases[i].shards);
        assert_int_equal(f->plan->used_ranks, cases[i].used);
        teardown(state);
    }
}

static void too_few_for_the_minimums(void **state)
{
    struct fixture *f = *state;
    const char *sets[] = {"ps.shards=[2, 4]"};
    assert_int_equal(config_load("t.cfg", model, sets, 1, &f->job, &f->d), 0);
    assert_int_equal(plan_build(f->job, 3, &f->plan, &f->d), CAIRN_EINPUT);
    assert_int_equal(f->d.n, 1);
    assert_non_null(strstr(f->d.v[0].msg, "the job needs 4 ranks (stage0: 1, stage1: 1, ps: 2) but was given 3"));
}

static void bad_ranges(void **state)
{
    struct fixture *f = *state;
    static const struct {
        const char *set, *msg;
    } cases[] = {
        {"ps.shards=[4, 2]", "'shards' = [4, 2] must have 1 <= MIN <= MAX <= 65536"},
        {"ps.shards=[0, 2]", "'shards' = [0, 2] must have 1 <= MIN <= MAX <= 65536"},
        {"ps.shards=[1, 2, 3]", "'shards' must be an integer or a range [MIN, MAX], not an array"},
        {"replicas=\"all\"", "'replicas' must be an integer or a range [MIN, MAX], not a string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *sets[] = {cases[i].set};
        assert_int_equal(config_load("t.cfg", model, sets, 1, &f->job, &f->d), CAIRN_EINPUT);
        assert_int_equal(f->d.n, 1);
        if (!strstr(f->d.v[0].msg, cases[i].msg)) show(&f->d);
        assert_non_null(strstr(f->d.v[0].msg, cases[i].msg));
        teardown(state);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(block_placement, setup, teardown),
        cmocka_unit_test_setup_teardown(cyclic_placement, setup, teardown),
        cmocka_unit_test_setup_teardown(ranges_fit_the_ranks, setup, teardown),
        cmocka_unit_test_setup_teardown(too_few_for_the_minimums, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_ranges, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
