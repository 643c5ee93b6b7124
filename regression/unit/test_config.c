/* Job files: typed values, every problem at once, --set overrides. */
#include "cairn/op.h"
#include "unit.h"

static const char *const base =
    "name = \"t\";\n"                                              /* 1 */
    "seed = 5;\n"                                                  /* 2 */
    "groups = ( { name = \"g\"; ranks = 2; } );\n"                 /* 3 */
    "init = ( { group = \"g\"; steps = (\n"                        /* 4 */
    "  { op = \"fill\"; out = \"x\"; shape = [3]; value = 2.0; }\n" /* 5 */
    "); } );\n"                                                    /* 6 */
    "stop = { max_epochs = 4; };\n";                               /* 7 */

static void reads_a_job(void **state)
{
    (void)state;
    struct job *job = NULL;
    struct diags d = {0};
    assert_int_equal(config_load("t.cfg", base, NULL, 0, &job, &d), 0);
    assert_string_equal(job->name, "t");
    assert_true(job->seed == 5);
    assert_int_equal(job->n_groups, 1);
    assert_true(job->groups[0].ranks == 2);
    const struct step *st = &job->phases[PHASE_INIT].v[0].steps.v[0];
    assert_int_equal(st->kind, STEP_OP);
    assert_int_equal(st->line, 5);
    assert_string_equal(st->op.def->name, "fill");
    assert_int_equal(st->op.pv[0].n, 1);                      /* shape */
    assert_true(st->op.pv[2].f == 2.0 && st->op.pv[2].given); /* value */
    assert_false(st->op.pv[1].given);                         /* dtype: default */
    assert_string_equal(st->op.pv[1].s, "f32");
    assert_true(job->stop.max_epochs == 4);
    job_destroy(&job);
    assert_null(job);
    diags_free(&d);
}

static void overrides(void **state)
{
    (void)state;
    const char *sets[] = {"stop.max_epochs=9", "groups.0.ranks=3", "name=bare",
                          "init.[0].steps.[0].value=7", "seed=11"};
    struct job *job = NULL;
    struct diags d = {0};
    assert_int_equal(config_load("t.cfg", base, sets, 5, &job, &d), 0);
    assert_true(job->stop.max_epochs == 9);
    assert_true(job->groups[0].ranks == 3);
    assert_string_equal(job->name, "bare"); /* a bare word is a string */
    assert_true(job->phases[PHASE_INIT].v[0].steps.v[0].op.pv[2].f == 7.0);
    assert_true(job->seed == 11);
    job_destroy(&job);
    diags_free(&d);
}

static void bad_overrides_name_the_override(void **state)
{
    (void)state;
    const char *sets[] = {"stop.max_epochs=0", "groups.5.ranks=1", "novalue"};
    struct job *job = NULL;
    struct diags d = {0};
    assert_int_equal(config_load("t.cfg", base, sets, 3, &job, &d), CAIRN_EINPUT);
    assert_null(job);
    assert_int_equal(d.n, 3);
    int found = 0;
    for (int i = 0; i < d.n; i++) {
        if (strcmp(d.v[i].file, "--set stop.max_epochs=0") == 0 &&
            strstr(d.v[i].msg, "'max_epochs' must be >= 1"))
            found++;
        if (strcmp(d.v[i].file, "--set") == 0 && strstr(d.v[i].msg, "groups.5.ranks")) found++;
        if (strcmp(d.v[i].file, "--set") == 0 && strstr(d.v[i].msg, "key=value")) found++;
    }
    assert_int_equal(found, 3);
    diags_free(&d);
}

static void reports_every_problem(void **state)
{
    (void)state;
    const char *text = "name = \"t\";\n"
                       "groups = ( { name = \"g\"; ranks = -1; } );\n"
                       "init = ( { group = \"g\"; steps = (\n"
                       "  { op = \"nope\"; },\n"
                       "  { op = \"fill\"; out = \"x\"; dtype = 3; }\n"
                       "); } );\n"
                       "colour = \"blue\";\n";
    struct job *job = NULL;
    struct diags d = {0};
    assert_int_equal(config_load("t.cfg", text, NULL, 0, &job, &d), CAIRN_EINPUT);
    assert_int_equal(d.n, 4);
    int lines[4] = {0};
    for (int i = 0; i < d.n; i++) lines[i] = d.v[i].line;
    /* ranks (2), unknown op (4), dtype type (5), unknown key (7): any order */
    int seen = 0;
    for (int i = 0; i < 4; i++) seen |= 1 << (lines[i] == 2 ? 0 : lines[i] == 4 ? 1 : lines[i] == 5 ? 2 : lines[i] == 7 ? 3 : 4);
    assert_int_equal(seen, 15);
    assert_true(diags_contains(&d, "unknown key 'colour' in the job"));
    diags_free(&d);
}

/* The core's ops and every extension's (ext_def.ops) form one list in
 * which each name appears once, extensions' ops included. */
static void ops_have_distinct_names(void **state)
{
    (void)state;
    int n = 0;
    const struct op_def *const *all = op_all(&n);
    assert_true(n > 16);
    assert_non_null(op_find("train_step")); /* the training extension's */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) assert_string_not_equal(all[i]->name, all[j]->name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_a_job),
        cmocka_unit_test(overrides),
        cmocka_unit_test(bad_overrides_name_the_override),
        cmocka_unit_test(reports_every_problem),
        cmocka_unit_test(ops_have_distinct_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
