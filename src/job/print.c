/* The job printer; see include/cairn/print.h. */
#include "cairn/print.h"

#include "cairn/error.h"
#include "cairn/plan.h"
#include "cairn/strbuf.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void print_value(struct strbuf *b, const struct param_def *pd, const struct pval *v)
{
    switch (pd->type) {
    case PT_INT: strbuf_addf(b, "%" PRId64, v->i); break;
    case PT_FLOAT: strbuf_addf(b, "%.9g", v->f); break;
    case PT_BOOL: strbuf_add(b, v->i ? "true" : "false"); break;
    case PT_STR: strbuf_json_str(b, v->s ? v->s : ""); break;
    case PT_ENUM: strbuf_add(b, v->s ? v->s : "?"); break;
    case PT_INTS:
        strbuf_add(b, "[");
        for (int i = 0; i < v->n; i++) strbuf_addf(b, "%s%" PRId64, i ? ", " : "", v->ints[i]);
        strbuf_add(b, "]");
        break;
    case PT_STRS:
        strbuf_add(b, "[");
        for (int i = 0; i < v->n; i++) strbuf_addf(b, "%s%s", i ? ", " : "", v->strs[i]);
        strbuf_add(b, "]");
        break;
    }
}

/* out1, out2 = op(in1, in2, key=value) -- parameters as written in the job */
static void print_op(struct strbuf *b, const struct op_node *op)
{
    for (int i = 0; i < op->n_out; i++) strbuf_addf(b, "%s%s", i ? ", " : "", op->out[i]);
    if (op->n_out) strbuf_add(b, " = ");
    strbuf_addf(b, "%s(", op->def ? op->def->name : "?");
    int k = 0;
    for (int i = 0; i < op->n_in; i++, k++) strbuf_addf(b, "%s%s", k ? ", " : "", op->in[i]);
    for (int i = 0; op->def && op->def->params && op->def->params[i].key; i++) {
        if (!op->pv[i].given) continue;
        strbuf_addf(b, "%s%s=", k++ ? ", " : "", op->def->params[i].key);
        print_value(b, &op->def->params[i], &op->pv[i]);
    }
    strbuf_add(b, ")\n");
}

static void print_list(struct strbuf *b, const struct steplist *l, int depth);

static void print_step(struct strbuf *b, const struct step *st, int depth)
{
    strbuf_indent(b, depth);
    switch (st->kind) {
    case STEP_OP: print_op(b, &st->op); return;
    case STEP_LOOP:
        if (st->count >= 0 && st->until)
            strbuf_addf(b, "with loop(%" PRId64 ", until=%s):\n", st->count, st->until);
        else if (st->until)
            strbuf_addf(b, "with loop(until=%s):\n", st->until);
        else
            strbuf_addf(b, "with loop(%" PRId64 "):\n", st->count);
        print_list(b, &st->body, depth + 1);
        return;
    case STEP_REPORT:
        strbuf_addf(b, "with report(every_ms=%" PRId64 "):\n", st->every_ms);
        print_list(b, &st->body, depth + 1);
        return;
    case STEP_PARALLEL:
        strbuf_add(b, "with parallel():\n");
        for (int i = 0; i < st->n_branches; i++) {
            strbuf_indent(b, depth + 1);
            strbuf_add(b, "with branch():\n");
            print_list(b, &st->branches[i], depth + 2);
        }
        return;
    }
}

static void print_list(struct strbuf *b, const struct steplist *l, int depth)
{
    if (l->n == 0) {
        strbuf_indent(b, depth);
        strbuf_add(b, "pass\n");
    }
    for (int i = 0; i < l->n; i++) print_step(b, &l->v[i], depth);
}

static void print_ranks(struct strbuf *b, const struct group *g)
{
    if (g->nranks == 1)
        strbuf_addf(b, "rank %d", g->first);
    else
        strbuf_addf(b, "ranks %d-%d", g->first, g->first + g->nranks - 1);
}

static void print_phase(struct strbuf *b, const struct plan *p, enum phase_id ph)
{
    const struct phase *phase = &p->phases[ph];
    if (ph == PHASE_EPOCH && p->steps_per_epoch == 0)
        strbuf_add(b, "epoch (steps: one pass over the training data):\n");
    else if (ph == PHASE_EPOCH)
        strbuf_addf(b, "epoch (%" PRId64 " step%s per epoch):\n", p->steps_per_epoch,
                    p->steps_per_epoch == 1 ? "" : "s");
    else
        strbuf_addf(b, "%s:\n", phase_name(ph));
    if (phase->n == 0) strbuf_add(b, "  (none)\n");
    for (int i = 0; i < phase->n; i++) {
        const struct task *t = &phase->v[i];
        const struct group *g = &p->groups[t->group_id];
        strbuf_addf(b, "  task %s on %s (", t->name, g->name);
        print_ranks(b, g);
        strbuf_add(b, "):\n");
        print_list(b, &t->steps, 2);
    }
}

static void print_stop(struct strbuf *b, const struct plan *p)
{
    const struct stop_spec *s = &p->job->stop;
    strbuf_add(b, "stop:\n");
    for (int i = 0; i < p->n_stop_blobs; i++)
        strbuf_addf(b, "  when %s/%s\n", p->stop_blobs[i].group, p->stop_blobs[i].blob);
    if (s->max_epochs) strbuf_addf(b, "  max_epochs = %" PRId64 "\n", s->max_epochs);
    if (!p->n_stop_blobs && !s->max_epochs) strbuf_add(b, "  (after the first epoch)\n");
}

int plan_print(const struct plan *p, FILE *out)
{
    struct strbuf b = {0};
    const struct job *j = p->job;
    strbuf_addf(&b, "job %s (seed %" PRId64 ") on %d rank%s\n", j->name, j->seed, p->nranks,
                p->nranks == 1 ? "" : "s");
    strbuf_add(&b, "groups:\n");
    for (int i = 0; i < p->n_groups; i++) {
        strbuf_addf(&b, "  %s: ", p->groups[i].name);
        print_ranks(&b, &p->groups[i]);
        if (p->groups[i].note) strbuf_addf(&b, " (%s)", p->groups[i].note);
        strbuf_add(&b, "\n");
    }
    if (p->nranks == p->used_ranks + 1)
        strbuf_addf(&b, "  (spare: rank %d idles)\n", p->used_ranks);
    else if (p->nranks > p->used_ranks)
        strbuf_addf(&b, "  (spare: ranks %d-%d idle)\n", p->used_ranks, p->nranks - 1);
    int rc = 0;
    for (int i = 0; i < p->n_exts && rc == 0; i++)
        if (p->exts[i].def->describe) rc = p->exts[i].def->describe(p->exts[i].spec, p->exts[i].part, &b);
    print_phase(&b, p, PHASE_INIT);
    print_phase(&b, p, PHASE_EPOCH);
    if (p->phases[PHASE_EPOCH_END].n) print_phase(&b, p, PHASE_EPOCH_END);
    print_stop(&b, p);
    print_phase(&b, p, PHASE_DOWNLOAD);
    print_phase(&b, p, PHASE_EXIT);
    if (rc == 0) rc = strbuf_finish(&b);
    if (rc == 0) fputs(strbuf_str(&b), out);
    strbuf_free(&b);
    return rc;
}
