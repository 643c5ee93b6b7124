/* The analyzer; see include/cairn/analyze.h for what it reports. */
#include "cairn/analyze.h"

#include "cairn/arena.h"
#include "cairn/diag.h"
#include "cairn/error.h"
#include "cairn/plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable set of blob ids. */
struct bits {
    unsigned char *v;
    int n;
};

static void bits_set(struct bits *b, int i)
{
    if (i >= b->n) {
        int n = i + 32;
        unsigned char *v = realloc(b->v, (size_t)n);
        if (!v) abort(); /* a job-sized bitmap: see arena.h on allocation failure */
        memset(v + b->n, 0, (size_t)(n - b->n));
        b->v = v;
        b->n = n;
    }
    b->v[i] = 1;
}

static bool bits_get(const struct bits *b, int i) { return i >= 0 && i < b->n && b->v[i]; }

static void bits_free(struct bits *b)
{
    free(b->v);
    *b = (struct bits){0};
}

/* Which blobs of a group hold a value at a point of the walk, and of what
 * type there: types are tracked along the flow, so `x = allreduce_sum(x)`
 * turns a per-rank x into a replicated one. */
struct tstate {
    struct bits def;
    struct blob_type *t;
    int cap;
};

static void ts_set(struct tstate *s, int id, const struct blob_type *t)
{
    if (id >= s->cap) {
        int cap = id + 32;
        struct blob_type *v = realloc(s->t, (size_t)cap * sizeof *v);
        if (!v) abort();
        memset(v + s->cap, 0, (size_t)(cap - s->cap) * sizeof *v);
        s->t = v;
        s->cap = cap;
    }
    s->t[id] = *t;
    bits_set(&s->def, id);
}

static bool ts_has(const struct tstate *s, int id) { return bits_get(&s->def, id); }

static struct tstate ts_dup(const struct tstate *s)
{
    struct tstate c = {0};
    for (int i = 0; i < s->def.n; i++)
        if (s->def.v[i]) ts_set(&c, i, &s->t[i]);
    return c;
}

static void ts_free(struct tstate *s)
{
    bits_free(&s->def);
    free(s->t);
    *s = (struct tstate){0};
}

/* The type a blob may have when control can arrive with a or with b. */
static struct blob_type type_join(const struct blob_type *a, const struct blob_type *b)
{
    struct blob_type j = *a;
    if (a->dtype != b->dtype) return j; /* reported already */
    if (a->shape.ndim != b->shape.ndim) {
        j.shape.ndim = -1;
        return j;
    }
    for (int i = 0; i < j.shape.ndim; i++)
        if (a->shape.d[i] != b->shape.d[i]) j.shape.d[i] = -1;
    if (a->dist != b->dist) j.dist = DIST_LOCAL;
    return j;
}

/* Reads and writes of one stretch of steps, for concurrency checks. */
struct access {
    int blob;
    bool write;
    const char *file;
    int line;
};

struct accesses {
    struct access *v;
    int n, cap;
};

static void acc_add(struct accesses *a, int blob, bool write, const struct op_node *op)
{
    if (!a) return;
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 16;
        a->v = realloc(a->v, (size_t)a->cap * sizeof *a->v);
        if (!a->v) abort();
    }
    a->v[a->n++] = (struct access){blob, write, op->file, op->line};
}

static void acc_append(struct accesses *dst, const struct accesses *src)
{
    for (int i = 0; dst && i < src->n; i++) {
        struct op_node fake = {.file = src->v[i].file, .line = src->v[i].line};
        acc_add(dst, src->v[i].blob, src->v[i].write, &fake);
    }
}

struct walk {
    struct plan *p;
    struct diags *d;
    int errors;
    struct group *g;
    enum phase_id phase;
    struct tstate *def;    /* blobs defined on the current path, with types */
    struct bits *warned;   /* per group: blobs already reported undefined */
    struct accesses *acc;  /* where this stretch's accesses go */
    int lane;
    int next_lane;
    int in_report;
};

__attribute__((format(printf, 4, 5))) static void problem(struct walk *w, const char *file,
                                                          int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diags_add(w->d, file, line, "%s", msg);
    w->errors++;
}

static int add_blob(struct walk *w, const char *name, const char *file, int line)
{
    struct group *g = w->g;
    g->blobs = arena_grow(w->p->arena, g->blobs, (size_t)g->n_blobs, sizeof *g->blobs);
    g->blobs[g->n_blobs] = (struct blob_info){.name = name, .file = file, .line = line};
    return g->n_blobs++;
}

/* ---- definitions and uses --------------------------------------------- */

static int use_blob(struct walk *w, const char *name, const struct op_node *op)
{
    int id = group_find_blob(w->g, name);
    if (id >= 0 && ts_has(w->def, id)) return id;
    bool late = id >= 0 && (w->phase == PHASE_DOWNLOAD || w->phase == PHASE_EXIT);
    if (id < 0) id = add_blob(w, name, op->file, op->line);
    int gi = (int)(w->g - w->p->groups);
    if (!bits_get(&w->warned[gi], id)) {
        if (late)
            problem(w, op->file, op->line,
                    "blob '%s' on group '%s' is made only by epoch tasks; %s may use only "
                    "blobs that init creates (the checkpointed state) or that it makes itself",
                    name, w->g->name, phase_name(w->phase));
        else
            problem(w, op->file, op->line,
                    "blob '%s' is used before any step on group '%s' defines it", name,
                    w->g->name);
        bits_set(&w->warned[gi], id);
    }
    ts_set(w->def, id, &(struct blob_type){0}); /* unknown type: report each blob once */
    return id;
}

static void type_text(const struct blob_type *t, char *buf, size_t size)
{
    char sh[128];
    snprintf(buf, size, "%s%s %s", dtype_name(t->dtype), shape_format(&t->shape, sh, sizeof sh),
             dist_name(t->dist));
}

/* A blob keeps its dtype everywhere; init's blobs (the checkpointed state)
 * also keep their shape and distribution.  Returns false after reporting. */
static bool type_allowed(struct walk *w, int id, const struct blob_type *t,
                         const struct op_node *op)
{
    const struct blob_info *b = &w->g->blobs[id];
    if (b->type.dtype == DT_NONE || t->dtype == DT_NONE) return true;
    bool persistent = b->persistent && w->phase != PHASE_INIT;
    bool ok = b->type.dtype == t->dtype && shape_compatible(&b->type.shape, &t->shape);
    if (persistent)
        ok = ok && b->type.dist == t->dist && shape_compatible(&b->type.shape, &t->shape);
    if (ok) return true;
    char was[192], now[192];
    type_text(&b->type, was, sizeof was);
    type_text(t, now, sizeof now);
    problem(w, op->file, op->line, "op '%s' makes blob '%s' %s, but it is %s (line %d)%s",
            op->def->name, b->name, now, was, b->line,
            persistent ? "; init's blobs keep their type, shape and distribution" : "");
    return false;
}

static int define_blob(struct walk *w, const char *name, const struct blob_type *t,
                       const struct op_node *op)
{
    int id = group_find_blob(w->g, name);
    if (id < 0) id = add_blob(w, name, op->file, op->line);
    struct blob_info *b = &w->g->blobs[id];
    if (w->phase == PHASE_INIT) b->persistent = true;
    if (type_allowed(w, id, t, op) && t->dtype != DT_NONE) {
        if (b->type.dtype == DT_NONE) {
            b->type = *t;
            b->file = op->file;
            b->line = op->line;
        } else if (!(b->persistent && w->phase != PHASE_INIT)) {
            b->type = type_join(&b->type, t); /* the summary over all definitions */
        }
    }
    ts_set(w->def, id, t);
    return id;
}

static void walk_op(struct walk *w, struct op_node *op)
{
    const struct op_def *def = op->def;
    if (!def) return; /* config already reported it */
    if (op->n_in > OP_MAX_ARITY || op->n_out > OP_MAX_ARITY) { /* exec's lock sets hold no more */
        diags_add(w->d, op->file, op->line, "op '%s' has %d inputs and %d outputs; at most %d each",
                  def->name, op->n_in, op->n_out, (int)OP_MAX_ARITY);
        w->errors++;
        return;
    }
    struct arena *a = w->p->arena;
    op->in_id = arena_alloc(a, (size_t)(op->n_in + 1) * sizeof *op->in_id);
    op->out_id = arena_alloc(a, (size_t)(op->n_out + 1) * sizeof *op->out_id);
    struct blob_type *in_t = arena_alloc(a, (size_t)(op->n_in + 1) * sizeof *in_t);
    struct blob_type *out_t = arena_alloc(a, (size_t)(op->n_out + 1) * sizeof *out_t);
    bool known = true;
    for (int i = 0; i < op->n_in; i++) {
        op->in_id[i] = use_blob(w, op->in[i], op);
        in_t[i] = w->def->t[op->in_id[i]];
        known = known && in_t[i].dtype != DT_NONE;
        acc_add(w->acc, op->in_id[i], i == 0 && (def->flags & OPF_MUTATES_IN0), op);
    }
    if (w->in_report && (def->flags & OPF_COLLECTIVE))
        problem(w, op->file, op->line,
                "op '%s' communicates over its group and cannot run in a report step "
                "(reports run on each rank's own timer)",
                def->name);
    struct infer ix = {.plan = w->p, .op = op, .in = in_t, .out = out_t, .group_size = w->g->nranks,
                       .diags = w->d};
    if (known && def->infer) def->infer(&ix);
    w->errors += ix.errors;
    for (int i = 0; i < op->n_out; i++) {
        op->out_id[i] = define_blob(w, op->out[i], &out_t[i], op);
        acc_add(w->acc, op->out_id[i], true, op);
    }
}

/* ---- structure --------------------------------------------------------- */

static void walk_list(struct walk *w, struct steplist *l);

static void report_conflicts(struct walk *w, const struct accesses *a, const struct accesses *b,
                             struct bits *seen)
{
    for (int i = 0; i < a->n; i++) {
        for (int j = 0; j < b->n; j++) {
            const struct access *x = &a->v[i], *y = &b->v[j];
            if (x->blob != y->blob || !(x->write || y->write) || bits_get(seen, x->blob))
                continue;
            const struct access *at = y->write ? y : x, *other = y->write ? x : y;
            const char *name = w->g->blobs[x->blob].name;
            if (x->write && y->write)
                problem(w, at->file, at->line,
                        "blob '%s' is written by two parallel branches (lines %d and %d)", name,
                        other->line, at->line);
            else
                problem(w, other->file, other->line,
                        "blob '%s' is read here while a parallel branch writes it (line %d)",
                        name, at->line);
            bits_set(seen, x->blob);
        }
    }
}

/* Run fn on a copy of the state with its own access list. */
struct sub {
    struct tstate st;
    struct accesses acc;
};

static void walk_sub(struct walk *w, struct sub *s, struct steplist *l, const struct tstate *from)
{
    struct tstate *outer_def = w->def;
    struct accesses *outer_acc = w->acc;
    s->st = ts_dup(from);
    w->def = &s->st;
    w->acc = &s->acc;
    walk_list(w, l);
    w->def = outer_def;
    w->acc = outer_acc;
}

static void sub_free(struct sub *s)
{
    ts_free(&s->st);
    free(s->acc.v);
}

static void walk_parallel(struct walk *w, struct step *st)
{
    int n = st->n_branches, outer_lane = w->lane;
    struct sub *subs = calloc((size_t)n + 1, sizeof *subs);
    struct bits seen = {0};
    if (!subs) abort();
    st->branch_lane = arena_alloc(w->p->arena, (size_t)(n + 1) * sizeof *st->branch_lane);
    for (int i = 0; i < n; i++) {
        w->lane = st->branch_lane[i] = i == 0 ? outer_lane : w->next_lane++;
        walk_sub(w, &subs[i], &st->branches[i], w->def);
    }
    w->lane = outer_lane;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) report_conflicts(w, &subs[i].acc, &subs[j].acc, &seen);
    /* branches write disjoint blobs: take each branch's writes */
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < subs[i].acc.n; k++) {
            int id = subs[i].acc.v[k].blob;
            if (subs[i].acc.v[k].write) ts_set(w->def, id, &subs[i].st.t[id]);
        }
        acc_append(w->acc, &subs[i].acc);
        sub_free(&subs[i]);
    }
    free(subs);
    bits_free(&seen);
}

/* One pass over the body; after the loop a blob may have its type from
 * before the loop or from the end of the body, so the two are joined. */
static void walk_loop(struct walk *w, struct step *st)
{
    struct tstate before = ts_dup(w->def);
    walk_list(w, &st->body);
    for (int id = 0; id < before.def.n; id++)
        if (ts_has(&before, id) && ts_has(w->def, id)) {
            struct blob_type j = type_join(&before.t[id], &w->def->t[id]);
            ts_set(w->def, id, &j);
        }
    ts_free(&before);
    st->until_id = -1;
    if (!st->until) return;
    struct op_node at = {.file = st->file, .line = st->line};
    int id = group_find_blob(w->g, st->until);
    if (id < 0 || !ts_has(w->def, id)) {
        problem(w, st->file, st->line,
                "loop stops on blob '%s', which neither its body nor an earlier step defines",
                st->until);
        return;
    }
    acc_add(w->acc, id, false, &at);
    st->until_id = id;
    if (w->g->nranks > 1 && w->def->t[id].dist != DIST_REPLICATED)
        problem(w, st->file, st->line,
                "loop stops on blob '%s', which is %s: its ranks could disagree and hang; "
                "make it replicated (e.g. with allreduce_sum or broadcast)",
                st->until, dist_name(w->def->t[id].dist));
}

/* Reports run concurrently with their sibling steps: they start from what
 * was defined before the list and must not write what the siblings use. */
static void walk_reports(struct walk *w, struct steplist *l, const struct tstate *base,
                         const struct accesses *siblings)
{
    struct bits seen = {0};
    for (int i = 0; i < l->n; i++) {
        struct step *st = &l->v[i];
        if (st->kind != STEP_REPORT) continue;
        struct sub s = {0};
        w->in_report++;
        walk_sub(w, &s, &st->body, base);
        w->in_report--;
        for (int a = 0; a < s.acc.n; a++) {
            const struct access *x = &s.acc.v[a];
            for (int b = 0; x->write && b < siblings->n; b++) {
                if (siblings->v[b].blob != x->blob || bits_get(&seen, x->blob)) continue;
                problem(w, x->file, x->line,
                        "report step writes blob '%s', which its sibling steps use (line %d); "
                        "reports run while their siblings run",
                        w->g->blobs[x->blob].name, siblings->v[b].line);
                bits_set(&seen, x->blob);
            }
        }
        sub_free(&s);
    }
    bits_free(&seen);
}

static void walk_list(struct walk *w, struct steplist *l)
{
    bool has_report = false;
    for (int i = 0; i < l->n; i++) has_report = has_report || l->v[i].kind == STEP_REPORT;
    struct tstate base = has_report ? ts_dup(w->def) : (struct tstate){0};
    struct accesses sib = {0};
    struct accesses *outer_acc = w->acc;
    if (has_report) w->acc = &sib;
    for (int i = 0; i < l->n; i++) {
        struct step *st = &l->v[i];
        switch (st->kind) {
        case STEP_OP: walk_op(w, &st->op); break;
        case STEP_LOOP: walk_loop(w, st); break;
        case STEP_PARALLEL: walk_parallel(w, st); break;
        case STEP_REPORT: break; /* after the siblings, see walk_reports */
        }
    }
    w->acc = outer_acc;
    if (has_report) {
        walk_reports(w, l, &base, &sib);
        acc_append(w->acc, &sib);
    }
    ts_free(&base);
    free(sib.v);
}

/* ---- phases ------------------------------------------------------------ */

static void walk_phase(struct walk *w, struct tstate *states, enum phase_id ph)
{
    struct phase *phase = &w->p->phases[ph];
    w->phase = ph;
    for (int i = 0; i < phase->n; i++) {
        struct task *t = &phase->v[i];
        if (t->group_id < 0) continue;
        w->g = &w->p->groups[t->group_id];
        w->def = &states[t->group_id];
        w->acc = NULL;
        w->lane = 0;
        w->next_lane = 1;
        walk_list(w, &t->steps);
        if (w->next_lane > w->g->n_lanes) w->g->n_lanes = w->next_lane;
    }
}

static void resolve_stops(struct walk *w, const struct tstate *states)
{
    const struct plan *p = w->p;
    w->p->stops = arena_alloc(w->p->arena, (size_t)(p->n_stop_blobs + 1) * sizeof *w->p->stops);
    for (int i = 0; i < p->n_stop_blobs; i++) {
        const struct stop_blob *sb = &p->stop_blobs[i];
        int gid = plan_find_group(w->p, sb->group);
        if (gid < 0) {
            problem(w, sb->file, sb->line, "stop blob '%s/%s': unknown group '%s'", sb->group,
                    sb->blob, sb->group);
            continue;
        }
        int id = group_find_blob(&w->p->groups[gid], sb->blob);
        if (id < 0 || !ts_has(&states[gid], id)) {
            problem(w, sb->file, sb->line,
                    "stop blob '%s/%s' is not defined by init, epoch or epoch_end tasks on "
                    "group '%s'",
                    sb->group, sb->blob, sb->group);
            continue;
        }
        w->p->stops[w->p->n_stops++] = (struct stop_ref){gid, id};
    }
}

/* Download and exit start from the checkpointed state alone: after a
 * resume from the last checkpoint nothing else exists. */
static void keep_persistent(struct plan *p, struct tstate *states)
{
    for (int g = 0; g < p->n_groups; g++) {
        ts_free(&states[g]);
        for (int b = 0; b < p->groups[g].n_blobs; b++)
            if (p->groups[g].blobs[b].persistent) ts_set(&states[g], b, &p->groups[g].blobs[b].type);
    }
}

int analyze(struct plan *p, struct diags *d)
{
    int n = p->n_groups;
    struct tstate *states = calloc((size_t)n + 1, sizeof *states);
    struct bits *warned = calloc((size_t)n + 1, sizeof *warned);
    if (!states || !warned) abort();
    struct walk w = {.p = p, .d = d, .warned = warned};
    walk_phase(&w, states, PHASE_INIT);
    walk_phase(&w, states, PHASE_EPOCH);
    walk_phase(&w, states, PHASE_EPOCH_END);
    resolve_stops(&w, states);
    keep_persistent(p, states);
    walk_phase(&w, states, PHASE_DOWNLOAD);
    walk_phase(&w, states, PHASE_EXIT);
    for (int g = 0; g < n; g++) {
        ts_free(&states[g]);
        bits_free(&warned[g]);
    }
    free(states);
    free(warned);
    if (w.errors == 0) return 0;
    return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%d problem%s in %s", w.errors,
                         w.errors == 1 ? "" : "s", p->job->file);
}
