/* The watchdog and a stopped process: a rank stopped (SIGSTOP, as
 * scontrol suspend does) for longer than its timeout is not ended when
 * continued, and is still ended when it then makes no progress; the stop
 * is left out of clock_run.  Each case runs in a child process, which the
 * watchdog may end, stopped and continued by the test. */
#include "unit.h"

#include "cairn/clock.h"
#include "cairn/watchdog.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* The watchdog's timeout, and the stop: longer.  The child has the
 * timeout less 0.2 s to run after each continue or progress, so a loaded
 * machine (the sanitized build beside three other tests) does not end it. */
enum { TIMEOUT_S = 2, STOPPED_MS = 3500 };

/* The child: a watchdog of TIMEOUT_S, a stop, then (if progress) a second
 * of progress every 0.2 s and exit 0, else no progress for ever.  It
 * reports on fd out: how far clock_run and clock_now moved across the
 * stop (ms). */
static _Noreturn void child(int out, bool progress)
{
    struct watchdog *w = NULL;
    if (watchdog_start(TIMEOUT_S, 60, "unit", NULL, NULL, &w)) _exit(10);
    long stops = clock_stops();
    double run = clock_run(), now = clock_now();
    raise(SIGSTOP);
    clock_sleep(0.1); /* the watchdog thread has looked */
    int moved[3] = {(int)((clock_run() - run) * 1000), (int)((clock_now() - now) * 1000),
                    (int)(clock_stops() - stops)};
    if (write(out, moved, sizeof moved) != sizeof moved) _exit(11);
    for (int i = 0; progress && i < 5; i++) {
        clock_sleep(0.2);
        watchdog_progress(watchdog_main(w));
    }
    if (progress) {
        watchdog_stop(&w);
        _exit(0);
    }
    for (;;) pause();
}

/* Fork the child, wait for its stop, continue it after STOPPED_MS; its
 * exit status, what it reported (required with progress: without, the
 * watchdog may end it first), and the seconds from the continue to its
 * end. */
static int stop_and_continue(bool progress, int moved[3], double *after)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        child(fd[1], progress);
    }
    close(fd[1]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
    assert_true(WIFSTOPPED(st));
    clock_sleep(STOPPED_MS / 1000.0);
    double t = clock_now();
    kill(pid, SIGCONT);
    ssize_t got = read(fd[0], moved, 3 * sizeof *moved);
    if (progress) assert_int_equal(got, (ssize_t)(3 * sizeof *moved));
    assert_int_equal(waitpid(pid, &st, 0), pid);
    *after = clock_now() - t;
    close(fd[0]);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Stopped for longer than its timeout, the watchdog lets the child go on. */
static void stop_is_no_idleness(void **state)
{
    (void)state;
    int moved[3];
    double after = 0;
    assert_int_equal(stop_and_continue(true, moved, &after), 0);
    assert_true(moved[1] >= STOPPED_MS);                  /* the monotonic clock ran on */
    assert_true(moved[0] <= moved[1] - STOPPED_MS + 100); /* clock_run stood still */
    assert_true(moved[2] >= 1);                           /* one SIGCONT (or more) seen */
}

/* ... and still ends it (exit 3) when it makes no progress after: a
 * timeout after the continue, not at once. */
static void still_watched_after(void **state)
{
    (void)state;
    int moved[3];
    double after = 0;
    assert_int_equal(stop_and_continue(false, moved, &after), 3);
    assert_true(after >= TIMEOUT_S - 0.1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stop_is_no_idleness),
        cmocka_unit_test(still_watched_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
