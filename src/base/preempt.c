/* Preemption signals; see include/cairn/preempt.h. */
#include "cairn/preempt.h"

#include "cairn/error.h"

#include <signal.h>
#include <stdbool.h>
#include <string.h>

/* Process-wide by necessity: a signal handler can only reach a global. */
static volatile sig_atomic_t received;

static void on_signal(int sig)
{
    if (!received) received = sig; /* the first one is the reason */
}

static const struct {
    const char *name;
    int sig;
} signals[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM},
               {"INT", SIGINT},   {"HUP", SIGHUP},   {"XCPU", SIGXCPU}};
const char preempt_signal_names[] = "USR1, USR2, TERM, INT, HUP, XCPU"; /* the table's, in order */

int preempt_signal_number(const char *name)
{
    if (name && strncmp(name, "SIG", 3) == 0) name += 3;
    for (size_t i = 0; name && i < sizeof signals / sizeof signals[0]; i++)
        if (strcmp(signals[i].name, name) == 0) return signals[i].sig;
    return 0;
}

const char *preempt_signal_name(int sig)
{
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (signals[i].sig == sig) return signals[i].name;
    return "?";
}

const char *const preempt_default_signals[PREEMPT_N_DEFAULT] = {"USR1", "TERM"};

int preempt_install(const char *const *names, int n)
{
    bool want[sizeof signals / sizeof signals[0]] = {false};
    for (int i = 0; i < n; i++) {
        int sig = preempt_signal_number(names[i]);
        if (!sig)
            return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__,
                                 "'%s' is not a signal cairn can catch (%s)", names[i],
                                 preempt_signal_names);
        for (size_t k = 0; k < sizeof signals / sizeof signals[0]; k++) want[k] |= signals[k].sig == sig;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* interrupted system calls carry on */
    for (size_t k = 0; k < sizeof signals / sizeof signals[0]; k++) {
        sa.sa_handler = want[k] ? on_signal : SIG_DFL;
        sigaction(signals[k].sig, &sa, NULL);
        if (!want[k] && received == signals[k].sig) { /* came early and is no longer ours */
            received = 0;
            raise(signals[k].sig);
        }
    }
    return 0;
}

int preempt_signal(void) { return received; }
