/* The analyzer: types along the flow, lanes, persistence, conflicts. */
#include "unit.h"

#include "cairn/print.h"

struct fixture {
    struct job *job;
    struct plan *plan;
    struct diags d;
};

static int teardown(void **state)
{
    struct fixture *f = *state;
    plan_destroy(&f->plan);
    job_destroy(&f->job);
    diags_free(&f->d);
    return 0;
}

static int setup(void **state)
{
    static struct fixture f;
    memset(&f, 0, sizeof f);
    *state = &f;
    return 0;
}

static const struct blob_info *blob(const struct plan *p, int g, const char *name)
{
    int id = group_find_blob(&p->groups[g], name);
    assert_true(id >= 0);
    return &p->groups[g].blobs[id];
}

static void allreduce_makes_replicated(void **state)
{
    struct fixture *f = *state;
    const char *text =
        "name = \"t\"; groups = ( { name = \"g\"; ranks = 2; } );\n"
        "init = ( { group = \"g\"; steps = ( { op = \"fill\"; out = \"total\"; },\n"
        "  { op = \"fill\"; out = \"v\"; shape = [4]; dist = \"sharded\"; } ); } );\n"
        "epoch = ( { group = \"g\"; steps = (\n"
        "  { op = \"sum\"; in = \"v\"; out = \"s\"; },\n"
        "  { op = \"allreduce_sum\"; in = \"s\"; out = \"s\"; },\n"
        "  { op = \"add\"; in = [\"total\", \"s\"]; out = \"total\"; } ); } );\n"
        "stop = { max_epochs = 1; };\n";
    int rc = load_text(text, NULL, 0, 0, &f->job, &f->plan, &f->d);
    if (rc) show(&f->d);
    assert_int_equal(rc, 0);
    assert_true(blob(f->plan, 0, "total")->persistent);
    assert_true(blob(f->plan, 0, "v")->persistent);
    assert_int_equal(blob(f->plan, 0, "v")->type.dist, DIST_SHARDED);
    assert_true(blob(f->plan, 0, "v")->type.shape.d[0] == 4);
    assert_false(blob(f->plan, 0, "s")->persistent);
}

/* The job is read-only once loaded: two plans of it (on different rank
 * counts) keep their own analysis, and the first outlives the second. */
static void one_job_planned_twice(void **state)
{
    struct fixture *f = *state;
    const char *text =
        "name = \"t\"; groups = ( { name = \"a\"; ranks = 1; }, { name = \"g\"; ranks = 2; } );\n"
        "init = ( { group = \"g\"; steps = ( { op = \"fill\"; out = \"total\"; } ); } );\n"
        "epoch = ( { group = \"g\"; steps = ( { op = \"fill\"; out = \"x\"; },\n"
        "  { op = \"add\"; in = [\"total\", \"x\"]; out = \"total\"; } ); } );\n"
        "stop = { max_epochs = 1; };\n";
    struct plan *second = NULL;
    int rc = load_text(text, NULL, 0, 3, &f->job, &f->plan, &f->d);
    assert_int_equal(rc, 0);
    const struct op_node *mine = &f->plan->phases[PHASE_EPOCH].v[0].steps.v[1].op;
    const struct op_node *job_op = &f->job->phases[PHASE_EPOCH].v[0].steps.v[1].op;
    assert_ptr_not_equal(mine, job_op);
    assert_null(job_op->in_id); /* analysis wrote into the plan, not the job */
    int want[2] = {mine->in_id[0], mine->in_id[1]};
    assert_int_equal(plan_build(f->job, 5, &second, &f->d), 0);
    assert_int_equal(analyze(second, &f->d), 0);
    assert_ptr_not_equal(second->phases[PHASE_EPOCH].v[0].steps.v[1].op.in_id, mine->in_id);
    plan_destroy(&second);
    assert_int_equal(mine->in_id[0], want[0]);
    assert_int_equal(mine->in_id[1], want[1]);
    assert_int_equal(f->plan->groups[1].first, 1);
}

static void lanes_for_parallel_branches(void **state)
{
    struct fixture *f = *state;
    const char *text =
        "name = \"t\"; groups = ( { name = \"g\"; ranks = 2; }, { name = \"h\"; ranks = 1; } );\n"
        "init = ( { group = \"g\"; steps = ( { parallel = (\n"
        "   ( { op = \"fill\"; out = \"a\"; } ),\n"
        "   ( { parallel = ( ( { op = \"fill\"; out = \"b\"; } ), ( { op = \"fill\"; out = \"c\"; } ) ); } ),\n"
        "   ( { op = \"fill\"; out = \"d\"; } ) ); } ); } );\n";
    assert_int_equal(load_text(text, NULL, 0, 4, &f->job, &f->plan, &f->d), 0);
    /* the task's own lane, two more outer branches, one more inner branch */
    assert_int_equal(f->plan->groups[0].n_lanes, 4);
    assert_int_equal(f->plan->groups[1].n_lanes, 1);
    assert_int_equal(f->plan->used_ranks, 3);
    assert_int_equal(plan_group_of_rank(f->plan, 2), 1);
    assert_int_equal(plan_group_of_rank(f->plan, 3), -1); /* spare */
    const struct step *par = &f->plan->phases[PHASE_INIT].v[0].steps.v[0];
    assert_int_equal(par->branch_lane[0], 0);
    assert_int_equal(par->branch_lane[1], 1);
    assert_int_equal(par->branch_lane[2], 3);
    assert_int_equal(par->branches[1].v[0].branch_lane[0], 1); /* inner branch 0 keeps lane */
    assert_int_equal(par->branches[1].v[0].branch_lane[1], 2);
}

static void blobs_are_per_group(void **state)
{
    struct fixture *f = *state;
    const char *text =
        "name = \"t\"; groups = ( { name = \"g\"; ranks = 1; }, { name = \"h\"; ranks = 1; } );\n"
        "init = ( { group = \"g\"; steps = ( { op = \"fill\"; out = \"x\"; } ); },\n"
        "         { group = \"h\"; steps = ( { op = \"copy\"; in = \"x\"; out = \"y\"; } ); } );\n";
    assert_int_equal(load_text(text, NULL, 0, 0, &f->job, &f->plan, &f->d), CAIRN_EINPUT);
    assert_int_equal(f->d.n, 1);
    assert_int_equal(f->d.v[0].line, 3);
    assert_true(diags_contains(&f->d, "blob 'x' is used before any step on group 'h' defines it"));
}

static void each_undefined_blob_once(void **state)
{
    struct fixture *f = *state;
    const char *text = "name = \"t\"; groups = ( { name = \"g\"; ranks = 1; } );\n"
                       "init = ( { group = \"g\"; steps = (\n"
                       "  { op = \"copy\"; in = \"x\"; out = \"y\"; },\n"
                       "  { op = \"copy\"; in = \"x\"; out = \"z\"; } ); } );\n";
    assert_int_equal(load_text(text, NULL, 0, 0, &f->job, &f->plan, &f->d), CAIRN_EINPUT);
    assert_int_equal(f->d.n, 1);
    assert_int_equal(f->d.v[0].line, 3);
}

static void prints_the_plan(void **state)
{
    struct fixture *f = *state;
    const char *text =
        "name = \"t\"; seed = 3; groups = ( { name = \"g\"; ranks = 2; } );\n"
        "init = ( { name = \"setup\"; group = \"g\"; steps = ( { op = \"fill\"; out = \"n\"; dtype = \"i64\"; value = 2; } ); } );\n"
        "epoch = ( { name = \"work\"; group = \"g\"; steps = (\n"
        "  { report = 500; steps = ( { op = \"log\"; in = \"n\"; } ); },\n"
        "  { op = \"fill\"; out = \"k\"; dtype = \"i64\"; value = 2; },\n"
        "  { until = \"done\"; steps = ( { op = \"countdown\"; in = \"k\"; out = \"done\"; } ); },\n"
        "  { loop = 3; steps = ( { op = \"axpy\"; in = [\"n\", \"n\"]; out = \"m\"; alpha = 2.0; } ); }\n"
        "); } );\n"
        "stop = { max_epochs = 2; };\n";
    assert_int_equal(load_text(text, NULL, 0, 3, &f->job, &f->plan, &f->d), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_int_equal(plan_print(f->plan, out), 0);
    fclose(out);
    const char *want =
        "job t (seed 3) on 3 ranks\n"
        "groups:\n"
        "  g: ranks 0-1\n"
        "  (spare: rank 2 idles)\n"
        "init:\n"
        "  task setup on g (ranks 0-1):\n"
        "    n = fill(dtype=i64, value=2)\n"
        "epoch (1 step per epoch):\n"
        "  task work on g (ranks 0-1):\n"
        "    with report(every_ms=500):\n"
        "      log(n)\n"
        "    k = fill(dtype=i64, value=2)\n"
        "    with loop(until=done):\n"
        "      done = countdown(k)\n"
        "    with loop(3):\n"
        "      m = axpy(n, n, alpha=2)\n"
        "stop:\n"
        "  max_epochs = 2\n"
        "download:\n"
        "  (none)\n"
        "exit:\n"
        "  (none)\n";
    assert_string_equal(buf, want);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(allreduce_makes_replicated, setup, teardown),
        cmocka_unit_test_setup_teardown(lanes_for_parallel_branches, setup, teardown),
        cmocka_unit_test_setup_teardown(one_job_planned_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(blobs_are_per_group, setup, teardown),
        cmocka_unit_test_setup_teardown(each_undefined_blob_once, setup, teardown),
        cmocka_unit_test_setup_teardown(prints_the_plan, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
