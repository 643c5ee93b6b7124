/* The roll call's finding (guard_roll_text): what it says about the ranks
 * it asked, and that it concludes nothing about those it did not. */
#include "unit.h"

#include "cairn/guard.h"

enum { BIG = 5000, ASKED = 1024 };

static char hosts[BIG][PLACEMENT_HOST_MAX];
static char *answers[BIG];

static int setup(void **state)
{
    (void)state;
    for (int r = 0; r < BIG; r++) snprintf(hosts[r], sizeof hosts[r], "node%d", r / 4 + 1);
    for (int r = 0; r < BIG; r++) answers[r] = "epoch 2 step 3: task\tin epoch 2 step 3: task";
    return 0;
}

static void all_here_all_asked(void **state)
{
    (void)state;
    char out[1024];
    guard_roll_text(hosts, 0, "epoch 2 step 3: task", 0, 8, 8, answers, out, sizeof out);
    assert_string_equal(out, "the 7 other ranks it waits for are all in this work too, so none is late or lost: "
                             "the work itself is stuck or slower than the timeout");
}

/* 5000 ranks waited for, 1024 asked, all of those here: no word that
 * none is late or lost, and the ones not asked are named. */
static void not_asked_are_said(void **state)
{
    (void)state;
    char out[1024];
    guard_roll_text(hosts, 0, "epoch 2 step 3: task", 0, BIG, ASKED, answers, out, sizeof out);
    assert_null(strstr(out, "none is late or lost"));
    assert_non_null(strstr(out, "the 1023 other ranks asked of the 4999 it waits for are all in this work too"));
    assert_non_null(strstr(out, "ranks 1024..4999 were not asked (a roll call asks at most 1024)"));
    assert_non_null(strstr(out, "whether one of those is late or lost is not known"));
}

/* A range that starts elsewhere, one rank left out, and one asked rank
 * elsewhere: named, and the one not asked said. */
static void not_asked_with_one_named(void **state)
{
    (void)state;
    char out[1024];
    char *some[ASKED];
    for (int i = 0; i < ASKED; i++) some[i] = answers[i];
    some[5] = "epoch 2 step 4: task\tin epoch 2 step 4: task";
    guard_roll_text(hosts, 3, "epoch 2 step 3: task", 2, ASKED + 1, ASKED, some, out, sizeof out);
    assert_string_equal(out, "it waits for rank 7 (node2) [in epoch 2 step 4: task]; rank 1026 was not asked "
                             "(a roll call asks at most 1024); every rank asked answers, so none of those is "
                             "lost: those named are elsewhere, late or stuck there");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(all_here_all_asked, setup),
        cmocka_unit_test_setup(not_asked_are_said, setup),
        cmocka_unit_test_setup(not_asked_with_one_named, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
