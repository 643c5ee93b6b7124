/* A rank's guards: the watchdog, the liveness ring beside it, and the roll
 * call that lets a stuck rank name the ranks it waits for. */
#include "cairn/guard.h"

#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/exec.h"
#include "cairn/layout.h"
#include "cairn/liveness.h"
#include "cairn/plan.h"
#include "cairn/runtime.h"
#include "cairn/strbuf.h"
#include "cairn/watchdog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A roll call asks at most this many ranks (the first of the range), and
 * waits this long for their answers: a live rank answers within a beat. */
enum { ASK_MAX = 1024, NAMED_MAX = 3 };
#define ASK_SECONDS 3.0

/* The watchdog ends this rank.  It does not tell the others as the ring
 * does (liveness_tell): their watchdogs, stuck in the same work, may be
 * asking their own roll call, and each rank's line says what it waited
 * for; the launcher, or cairn.sbatch after LAUNCH_GRACE, ends them. */
static void watchdog_words(void *rt, const char *line)
{
    runtime_last_words(rt, cairn_exit_code(CAIRN_ERUNTIME), "stalled", line);
}

/* A loss another rank found ends this one too, with that rank's words
 * (exit_status keeps the first) and none in cairn.log. */
static void liveness_words(void *rt, const char *line, bool found)
{
    runtime_exit_words(rt, cairn_exit_code(CAIRN_ERUNTIME), "lost", line, found);
}

static void where_now(void *rt, char *out, size_t size)
{
    watchdog_where(((struct runtime *)rt)->watchdog, out, size);
}

/* A peer's answer (watchdog_where's lines "KEY<tab>DOING") shows this
 * very work on one of its lanes: it has arrived and waits too. */
static bool here_too(const char *answer, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = answer; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, key, n) == 0 && p[n] == '\t') return true;
    return false;
}

/* One rank that is not here: where it is (its main lane), or silent. */
static void name_rank(struct strbuf *b, const char (*hosts)[PLACEMENT_HOST_MAX], int r, const char *answer)
{
    strbuf_addf(b, "%srank %d (%s) ", b->len ? ", " : "", r, hosts[r]);
    const char *doing = answer ? strchr(answer, '\t') : NULL;
    if (!doing) {
        strbuf_addf(b, "[no answer within %.0f s]", ASK_SECONDS);
        return;
    }
    doing++;
    int n = (int)strcspn(doing, "\n");
    strbuf_addf(b, "[%.*s]", n > 300 ? 300 : n, doing);
}

/* The ranks not in this work, silent ones first (they matter most). */
static void name_absent(struct strbuf *b, const char (*hosts)[PLACEMENT_HOST_MAX], int me, int first, int n,
                        char *const *answers, const char *key, int *silent, int *named)
{
    *silent = *named = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            bool quiet = !answers[i] || !strchr(answers[i], '\t');
            if (first + i == me || quiet != (pass == 0) || (!quiet && here_too(answers[i], key)))
                continue;
            *silent += quiet;
            if ((*named)++ < NAMED_MAX) name_rank(b, hosts, first + i, answers[i]);
        }
    if (*named > NAMED_MAX) strbuf_addf(b, " and %d more", *named - NAMED_MAX);
}

void guard_roll_text(const char (*hosts)[PLACEMENT_HOST_MAX], int me, const char *key, int first, int all, int n,
                     char *const *answers, char *out, size_t size)
{
    struct strbuf b = {0};
    char unasked[160] = "";
    int asked = n - (first <= me && me < first + n), silent, named;
    name_absent(&b, hosts, me, first, n, answers, key, &silent, &named);
    if (all > n) /* too many to ask: what the rest do is not known */
        snprintf(unasked, sizeof unasked, "; rank%s %d%s%.0d %s not asked (a roll call asks at most %d)",
                 all - n == 1 ? "" : "s", first + n, all - n == 1 ? "" : "..",
                 all - n == 1 ? 0 : first + all - 1, all - n == 1 ? "was" : "were", ASK_MAX);
    if (named == 0 && !*unasked)
        snprintf(out, size, "the %d other rank%s it waits for %s in this work too, so none is late or lost: "
                 "the work itself is stuck or slower than the timeout",
                 asked, asked == 1 ? "" : "s", asked == 1 ? "is" : "are all");
    else if (named == 0)
        snprintf(out, size, "the %d other rank%s asked of the %d it waits for %s in this work too%s, so "
                 "whether one of those is late or lost is not known",
                 asked, asked == 1 ? "" : "s", all - (first <= me && me < first + all),
                 asked == 1 ? "is" : "are all", unasked);
    else
        snprintf(out, size, "it waits for %s%s; %s", strbuf_str(&b), unasked,
                 silent ? "a rank that gives no answer is stopped, or it, its node or the network to it "
                          "is gone"
                 : *unasked ? "every rank asked answers, so none of those is lost: those named are "
                              "elsewhere, late or stuck there"
                            : "every rank it waits for answers, so none is lost: those named are elsewhere, "
                              "late or stuck there");
    strbuf_free(&b);
}

/* The watchdog's question on expiry: what do the ranks this work waits
 * for do?  Those whose answer shows the same work (key) have arrived; the
 * others are named, with their hosts: where they are, or that they are
 * silent. */
static bool ask_peers(void *arg, const char *key, int first, int n, char *out, size_t size)
{
    struct runtime *rt = arg;
    const struct layout *l = rt->layout;
    if (first < 0 || n <= 0 || n > l->size - first) return false;
    int all = n;
    if (n > ASK_MAX) n = ASK_MAX;
    char **answers = calloc((size_t)n, sizeof *answers);
    if (!answers) return false;
    int asked = liveness_ask(rt->liveness, first, n, ASK_SECONDS, answers);
    if (asked > 0)
        guard_roll_text((const char(*)[PLACEMENT_HOST_MAX])l->hosts, l->rank, key, first, all, n, answers,
                        out, size);
    for (int i = 0; i < n; i++) free(answers[i]);
    free(answers);
    return asked > 0;
}

/* Before a collective over the world outside any op (a barrier, an
 * agreement): the main lane waits in it for every rank, for the
 * watchdog's message and its roll call. */
void guard_all(struct runtime *rt, const char *what)
{
    char at[64];
    struct watchdog_lane *lane = watchdog_main(rt->watchdog);
    runtime_where(rt, at, sizeof at);
    watchdog_doing(lane, "%s: %s (every rank)", at, what);
    watchdog_peers(lane, 0, rt->layout->size, NULL);
}

/* Collective: the heartbeat ring (liveness.h), which also answers peers'
 * roll calls. */
static int start_liveness(struct runtime *rt)
{
    const struct layout *l = rt->layout;
    char who[96];
    const char **hosts = malloc((size_t)l->size * sizeof *hosts);
    int rc = hosts ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (int r = 0; hosts && r < l->size; r++) hosts[r] = l->hosts[r];
    snprintf(who, sizeof who, "rank %d (%s)", l->rank, l->host);
    rc = coll_agree(l->world, rc);
    if (rc == 0)
        rc = coll_agree(l->world, liveness_start(l->world, rt->plan->job->watchdog.liveness, who, hosts,
                                                 liveness_words, where_now, rt,
                                                 !fault_nothread(&rt->fault, l->rank, "liveness", 0),
                                                 &rt->liveness));
    free(hosts);
    if (rc) liveness_drop(&rt->liveness); /* it may have started here and not elsewhere */
    if (rc || !rt->liveness) return rc;
    watchdog_asker(rt->watchdog, ask_peers, rt);
    /* with the ring faster than the watchdog, a rank or node lost is
     * caught by the ring: a stall is something else */
    const struct watchdog_spec *ws = &rt->plan->job->watchdog;
    if (ws->liveness < (ws->timeout > 0 ? ws->timeout : WATCHDOG_FLOOR))
        watchdog_hint(rt->watchdog, "every rank still sends its heartbeat (watchdog.liveness), so "
                                    "none is lost: this rank waits on work that is stuck or slower "
                                    "than the timeout");
    return 0;
}

int guard_start(struct runtime *rt)
{
    char who[96];
    snprintf(who, sizeof who, "rank %d (%s)", rt->layout->rank, rt->layout->host);
    int rc = watchdog_start(rt->plan->job->watchdog.timeout, WATCHDOG_FLOOR, who, watchdog_words, rt,
                            &rt->watchdog);
    rc = coll_agree(rt->layout->world, rc);
    return rc ? rc : start_liveness(rt);
}

void guard_quiesce(struct runtime *rt)
{
    /* no lane's progress is due meanwhile (rank 0 may still be asking
     * Slurm for a requeue), and no roll call starts any more (the ring
     * answers others' until it stops) */
    watchdog_pause(watchdog_main(rt->watchdog));
    watchdog_asker(rt->watchdog, NULL, NULL);
    liveness_stop(&rt->liveness);
}

void guard_end(struct runtime *rt)
{
    liveness_drop(&rt->liveness);
    watchdog_stop(&rt->watchdog);
}
