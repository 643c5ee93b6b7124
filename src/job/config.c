/* Job files: libconfig in, checked job spec out (include/cairn/config.h).
 *
 * Each key is read in exactly one place below, checked for type and range,
 * and every group rejects keys it does not know.  Problems are collected as
 * FILE:LINE diagnostics so that one `cairn check` shows them all. */
#include "cairn/config.h"

#include "cairn/arena.h"
#include "cairn/diag.h"
#include "cairn/error.h"
#include "cairn/job.h"
#include "cairn/preempt.h"
#include "config_priv.h"

#include <ctype.h>
#include <libgen.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A string or a list/array of strings, as names. */
static const char **get_names(struct cfg *c, const config_setting_t *s, int *n, const char *what)
{
    *n = 0;
    if (config_setting_type(s) == CONFIG_TYPE_STRING) {
        const char **v = arena_alloc(c->a, sizeof *v);
        v[0] = arena_strdup(c->a, config_setting_get_string(s));
        *n = 1;
        if (!cfg_valid_name(v[0])) cfg_err(c, s, "%s '%s' is not a valid blob name", what, v[0]);
        return v;
    }
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST) {
        cfg_err(c, s, "'%s' must be a blob name or a list of names, not %s", cfg_where(s),
               cfg_type_name(s));
        return NULL;
    }
    int len = config_setting_length(s);
    const char **v = arena_alloc(c->a, (size_t)(len ? len : 1) * sizeof *v);
    for (int i = 0; i < len; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        if (config_setting_type(e) != CONFIG_TYPE_STRING) {
            cfg_err(c, e, "'%s' entries must be strings, not %s", cfg_where(s), cfg_type_name(e));
            continue;
        }
        v[*n] = arena_strdup(c->a, config_setting_get_string(e));
        if (!cfg_valid_name(v[*n])) cfg_err(c, e, "%s '%s' is not a valid blob name", what, v[*n]);
        (*n)++;
    }
    return v;
}

/* ---- op parameters ---------------------------------------------------- */

static void list_choices(const char *choices, char *out, size_t size)
{
    snprintf(out, size, "%s", choices);
    for (char *p = out; *p; p++)
        if (*p == '|') *p = ',';
}

static void param_ints(struct cfg *c, const config_setting_t *s, struct pval *v, const char *key)
{
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST) {
        cfg_err(c, s, "parameter '%s' must be an array of integers like [2, 3], not %s", key,
               cfg_type_name(s));
        return;
    }
    v->n = config_setting_length(s);
    v->ints = arena_alloc(c->a, (size_t)(v->n ? v->n : 1) * sizeof *v->ints);
    for (int i = 0; i < v->n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        if (!cfg_is_int(e)) {
            cfg_err(c, e, "parameter '%s' must hold integers, not %s", key, cfg_type_name(e));
            continue;
        }
        v->ints[i] = config_setting_get_int64(e);
    }
}

static void param_strs(struct cfg *c, const config_setting_t *s, struct pval *v, const char *key)
{
    int t = config_setting_type(s);
    bool one = t == CONFIG_TYPE_STRING;
    if (!one && t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST) {
        cfg_err(c, s, "parameter '%s' must be a string or a list of strings, not %s", key,
               cfg_type_name(s));
        return;
    }
    v->n = one ? 1 : config_setting_length(s);
    v->strs = arena_alloc(c->a, (size_t)(v->n ? v->n : 1) * sizeof *v->strs);
    for (int i = 0; i < v->n; i++) {
        const config_setting_t *e = one ? s : config_setting_get_elem(s, (unsigned)i);
        if (config_setting_type(e) != CONFIG_TYPE_STRING) {
            cfg_err(c, e, "parameter '%s' must hold strings, not %s", key, cfg_type_name(e));
            continue;
        }
        v->strs[i] = arena_strdup(c->a, config_setting_get_string(e));
    }
}

static void param_value(struct cfg *c, const struct param_def *pd, const config_setting_t *s,
                        struct pval *v)
{
    const char *key = pd->key;
    int t = config_setting_type(s);
    v->given = true;
    switch (pd->type) {
    case PT_INT:
        if (!cfg_is_int(s)) break;
        v->i = config_setting_get_int64(s);
        v->f = (double)v->i;
        return;
    case PT_FLOAT:
        if (t == CONFIG_TYPE_FLOAT) v->f = config_setting_get_float(s);
        else if (cfg_is_int(s)) v->f = (double)config_setting_get_int64(s);
        else break;
        return;
    case PT_BOOL:
        if (t != CONFIG_TYPE_BOOL) break;
        v->i = config_setting_get_bool(s);
        return;
    case PT_STR:
        if (t != CONFIG_TYPE_STRING) break;
        v->s = arena_strdup(c->a, config_setting_get_string(s));
        return;
    case PT_ENUM:
        if (t != CONFIG_TYPE_STRING) break;
        v->s = arena_strdup(c->a, config_setting_get_string(s));
        v->i = op_choice_index(pd->choices, v->s);
        if (v->i < 0) {
            char list[256];
            list_choices(pd->choices, list, sizeof list);
            cfg_err(c, s, "parameter '%s' must be one of %s, not \"%s\"", key, list, v->s);
        }
        return;
    case PT_INTS:
        param_ints(c, s, v, key);
        return;
    case PT_STRS:
        param_strs(c, s, v, key);
        return;
    }
    static const char *const want[] = {"an integer", "a number", "a string", "a boolean",
                                       "an array of integers", "a list of strings",
                                       "a string"};
    cfg_err(c, s, "parameter '%s' must be %s, not %s", key, want[pd->type], cfg_type_name(s));
}

static bool reserved_op_key(const char *k)
{
    return strcmp(k, "op") == 0 || strcmp(k, "in") == 0 || strcmp(k, "out") == 0;
}

static void op_params(struct cfg *c, const config_setting_t *g, struct op_node *op)
{
    const struct op_def *def = op->def;
    int np = 0;
    while (def->params && def->params[np].key) np++;
    op->pv = arena_alloc(c->a, (size_t)(np ? np : 1) * sizeof *op->pv);
    op_set_defaults(def, op->pv);
    for (int i = 0, n = config_setting_length(g); i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
        const char *key = config_setting_name(s);
        if (reserved_op_key(key)) continue;
        int k = op_param_index(def, key);
        if (k < 0) {
            char list[512] = "";
            for (int j = 0; j < np; j++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "",
                         def->params[j].key);
            cfg_err(c, s, "op '%s' has no parameter '%s' (parameters: %s)", def->name, key,
                   np ? list : "none");
            continue;
        }
        param_value(c, &def->params[k], s, &op->pv[k]);
    }
    for (int i = 0; i < np; i++)
        if (!def->params[i].dflt && !op->pv[i].given)
            cfg_err(c, g, "op '%s' needs parameter '%s'", def->name, def->params[i].key);
}

/* ---- steps and tasks -------------------------------------------------- */

static void parse_steps(struct cfg *c, const config_setting_t *list, struct steplist *out);

static void parse_op_step(struct cfg *c, const config_setting_t *g, struct step *st)
{
    struct op_node *op = &st->op;
    const char *name = cfg_str(c, g, "op", true, NULL);
    op->file = st->file;
    op->line = st->line;
    if (!name) return;
    op->def = op_find(name);
    if (!op->def || (op->def->flags & OPF_INTERNAL)) {
        cfg_err(c, config_setting_get_member(g, "op"), "unknown op '%s' (see cairn-job(5))", name);
        op->def = NULL;
        return;
    }
    const config_setting_t *in = config_setting_get_member(g, "in");
    const config_setting_t *out = config_setting_get_member(g, "out");
    if (in) op->in = get_names(c, in, &op->n_in, "input");
    if (out) op->out = get_names(c, out, &op->n_out, "output");
    const struct op_def *d = op->def;
    if (op->n_in < d->min_in || (d->max_in >= 0 && op->n_in > d->max_in)) {
        if (d->min_in == d->max_in)
            cfg_err(c, g, "op '%s' takes %d input%s, got %d", d->name, d->min_in,
                   d->min_in == 1 ? "" : "s", op->n_in);
        else
            cfg_err(c, g, "op '%s' takes at least %d input%s, got %d", d->name, d->min_in,
                   d->min_in == 1 ? "" : "s", op->n_in);
    }
    if (op->n_out < d->min_out || op->n_out > d->max_out) {
        if (d->min_out == d->max_out)
            cfg_err(c, g, "op '%s' gives %d output%s, got %d", d->name, d->min_out,
                   d->min_out == 1 ? "" : "s", op->n_out);
        else
            cfg_err(c, g, "op '%s' gives %d to %d outputs, got %d", d->name, d->min_out,
                   d->max_out, op->n_out);
    }
    op_params(c, g, op);
}

static void parse_loop_step(struct cfg *c, const config_setting_t *g, struct step *st)
{
    static const char *const keys[] = {"loop", "until", "steps", NULL};
    cfg_keys(c, g, "a loop step", keys);
    st->kind = STEP_LOOP;
    st->count = cfg_int(c, g, "loop", false, -1, 0, INT64_MAX);
    const config_setting_t *u = config_setting_get_member(g, "until");
    if (u) {
        int n = 0;
        const char **v = get_names(c, u, &n, "until blob");
        if (n != 1 && v) cfg_err(c, u, "'until' names one blob");
        st->until = n >= 1 ? v[0] : NULL;
    }
    const config_setting_t *body = config_setting_get_member(g, "steps");
    if (!body)
        cfg_err(c, g, "loop step needs 'steps'");
    else
        parse_steps(c, body, &st->body);
}

static void parse_parallel_step(struct cfg *c, const config_setting_t *g, struct step *st)
{
    static const char *const keys[] = {"parallel", NULL};
    cfg_keys(c, g, "a parallel step", keys);
    st->kind = STEP_PARALLEL;
    const config_setting_t *p = config_setting_get_member(g, "parallel");
    if (config_setting_type(p) != CONFIG_TYPE_LIST) {
        cfg_err(c, p, "'parallel' must be a list of step lists, like ( ( {...} ), ( {...} ) )");
        return;
    }
    st->n_branches = config_setting_length(p);
    if (st->n_branches < 1) cfg_err(c, p, "'parallel' needs at least one branch");
    st->branches = arena_alloc(c->a, (size_t)(st->n_branches + 1) * sizeof *st->branches);
    for (int i = 0; i < st->n_branches; i++)
        parse_steps(c, config_setting_get_elem(p, (unsigned)i), &st->branches[i]);
}

static void parse_report_step(struct cfg *c, const config_setting_t *g, struct step *st)
{
    static const char *const keys[] = {"report", "steps", NULL};
    cfg_keys(c, g, "a report step", keys);
    st->kind = STEP_REPORT;
    st->every_ms = cfg_int(c, g, "report", true, 1000, 1, 86400000);
    const config_setting_t *body = config_setting_get_member(g, "steps");
    if (!body)
        cfg_err(c, g, "report step needs 'steps'");
    else
        parse_steps(c, body, &st->body);
}

static void parse_step(struct cfg *c, const config_setting_t *g, struct step *st)
{
    cfg_locate(c, g, &st->file, &st->line);
    if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
        cfg_err(c, g, "a step must be a group like { op = \"copy\"; ... }, not %s", cfg_type_name(g));
        return;
    }
    bool is_op = config_setting_get_member(g, "op") != NULL;
    bool is_loop = config_setting_get_member(g, "loop") || config_setting_get_member(g, "until");
    bool is_par = config_setting_get_member(g, "parallel") != NULL;
    bool is_rep = config_setting_get_member(g, "report") != NULL;
    int kinds = is_op + is_loop + is_par + is_rep;
    if (kinds != 1) {
        cfg_err(c, g, kinds ? "a step is one of op, loop/until, parallel or report, not several"
                           : "a step needs one of 'op', 'loop', 'until', 'parallel', 'report'");
        return;
    }
    if (is_op)
        parse_op_step(c, g, st);
    else if (is_loop)
        parse_loop_step(c, g, st);
    else if (is_par)
        parse_parallel_step(c, g, st);
    else
        parse_report_step(c, g, st);
}

static void parse_steps(struct cfg *c, const config_setting_t *list, struct steplist *out)
{
    if (config_setting_type(list) != CONFIG_TYPE_LIST) {
        cfg_err(c, list, "'%s' must be a list of steps ( {...}, {...} ), not %s",
               cfg_where(list), cfg_type_name(list));
        return;
    }
    out->n = config_setting_length(list);
    out->v = arena_alloc(c->a, (size_t)(out->n + 1) * sizeof *out->v);
    for (int i = 0; i < out->n; i++)
        parse_step(c, config_setting_get_elem(list, (unsigned)i), &out->v[i]);
}

static void parse_task(struct cfg *c, const config_setting_t *g, struct task *t,
                       enum phase_id ph, int index)
{
    static const char *const keys[] = {"name", "group", "steps", NULL};
    cfg_locate(c, g, &t->file, &t->line);
    t->group_id = -1;
    if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
        cfg_err(c, g, "a task must be a group { group = ...; steps = (...); }, not %s",
               cfg_type_name(g));
        return;
    }
    cfg_keys(c, g, "a task", keys);
    t->name = cfg_name(c, g, "name", false, "task name");
    if (!t->name) t->name = arena_printf(c->a, "%s%d", phase_name(ph), index);
    t->group = cfg_name(c, g, "group", true, "group name");
    const config_setting_t *steps = config_setting_get_member(g, "steps");
    if (!steps)
        cfg_err(c, g, "task '%s' needs 'steps'", t->name);
    else
        parse_steps(c, steps, &t->steps);
}

static void parse_phase(struct cfg *c, const config_setting_t *root, enum phase_id ph)
{
    struct phase *p = &c->job->phases[ph];
    const config_setting_t *s = config_setting_get_member(root, phase_name(ph));
    if (!s) return;
    cfg_locate(c, s, &(const char *){NULL}, &p->line);
    if (config_setting_type(s) != CONFIG_TYPE_LIST) {
        cfg_err(c, s, "'%s' must be a list of tasks ( {...}, {...} ), not %s", phase_name(ph),
               cfg_type_name(s));
        return;
    }
    p->n = config_setting_length(s);
    p->v = arena_alloc(c->a, (size_t)(p->n + 1) * sizeof *p->v);
    for (int i = 0; i < p->n; i++)
        parse_task(c, config_setting_get_elem(s, (unsigned)i), &p->v[i], ph, i);
}

/* ---- top-level sections ---------------------------------------------- */

static void parse_groups(struct cfg *c, const config_setting_t *root)
{
    const config_setting_t *s = config_setting_get_member(root, "groups");
    if (!s) return; /* a model section may generate them; plan.c checks there are some */
    if (config_setting_type(s) != CONFIG_TYPE_LIST) {
        cfg_err(c, s, "'groups' must be a list ( { name = ...; ranks = ...; }, ... ), not %s",
               cfg_type_name(s));
        return;
    }
    static const char *const keys[] = {"name", "ranks", NULL};
    struct job *j = c->job;
    j->n_groups = config_setting_length(s);
    j->groups = arena_alloc(c->a, (size_t)(j->n_groups + 1) * sizeof *j->groups);
    for (int i = 0; i < j->n_groups; i++) {
        const config_setting_t *g = config_setting_get_elem(s, (unsigned)i);
        struct group_spec *gs = &j->groups[i];
        cfg_locate(c, g, &gs->file, &gs->line);
        if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
            cfg_err(c, g, "a group entry must be { name = ...; ranks = ...; }, not %s",
                   cfg_type_name(g));
            continue;
        }
        cfg_keys(c, g, "a group entry", keys);
        gs->name = cfg_name(c, g, "name", true, "group name");
        gs->ranks = cfg_int(c, g, "ranks", true, 1, 1, 1 << 24);
        for (int k = 0; k < i && gs->name; k++)
            if (j->groups[k].name && strcmp(j->groups[k].name, gs->name) == 0)
                cfg_err(c, g, "group '%s' is declared twice (first at line %d)", gs->name,
                       j->groups[k].line);
    }
}

/* core keys followed by every extension's (NULL-terminated, job arena) */
static const char *const *all_keys(struct cfg *c, const char *const *core, bool stop)
{
    int n_ext, n = 0;
    const struct ext_def *const *e = ext_all(&n_ext);
    const char **v = NULL;
    for (const char *const *k = core; *k; k++) v = arena_grow(c->a, v, (size_t)n, sizeof *v), v[n++] = *k;
    for (int i = 0; i < n_ext; i++)
        for (const char *const *k = stop ? e[i]->stop_keys : e[i]->keys; k && *k; k++)
            v = arena_grow(c->a, v, (size_t)n, sizeof *v), v[n++] = *k;
    v = arena_grow(c->a, v, (size_t)n, sizeof *v);
    v[n] = NULL;
    return v;
}

static void parse_stop(struct cfg *c, const config_setting_t *root)
{
    struct stop_spec *st = &c->job->stop;
    const config_setting_t *s = config_setting_get_member(root, "stop");
    if (!s) return;
    cfg_locate(c, s, &st->file, &st->line);
    if (config_setting_type(s) != CONFIG_TYPE_GROUP) {
        cfg_err(c, s, "'stop' must be a group { blobs = [...]; max_epochs = N; }");
        return;
    }
    static const char *const core[] = {"blobs", "max_epochs", NULL};
    cfg_keys(c, s, "stop", all_keys(c, core, true)); /* the rest: extensions' */
    st->max_epochs = cfg_int(c, s, "max_epochs", false, 0, 1, INT64_MAX);
    const config_setting_t *b = config_setting_get_member(s, "blobs");
    if (!b) return;
    int t = config_setting_type(b);
    if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST && t != CONFIG_TYPE_STRING) {
        cfg_err(c, b, "'blobs' must list \"group/blob\" names, not %s", cfg_type_name(b));
        return;
    }
    int n = t == CONFIG_TYPE_STRING ? 1 : config_setting_length(b);
    st->blobs = arena_alloc(c->a, (size_t)(n + 1) * sizeof *st->blobs);
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = t == CONFIG_TYPE_STRING ? b : config_setting_get_elem(b, (unsigned)i);
        struct stop_blob *sb = &st->blobs[st->n_blobs];
        cfg_locate(c, e, &sb->file, &sb->line);
        const char *v = config_setting_get_string(e);
        const char *slash = v ? strchr(v, '/') : NULL;
        if (!slash) {
            cfg_err(c, e, "stop blob must be written \"group/blob\"");
            continue;
        }
        sb->group = arena_strdup(c->a, v);
        ((char *)sb->group)[slash - v] = '\0';
        sb->blob = arena_strdup(c->a, slash + 1);
        if (!cfg_valid_name(sb->group) || !cfg_valid_name(sb->blob)) {
            cfg_err(c, e, "stop blob \"%s\" is not a valid \"group/blob\" name", v);
            continue;
        }
        st->n_blobs++;
    }
}

static void parse_checkpoint(struct cfg *c, const config_setting_t *root)
{
    struct ckpt_spec *k = &c->job->ckpt;
    k->every = 1;
    k->max_resumes = 3;
    k->async = CKPT_ASYNC_DEFAULT;
    k->align = -1;
    k->flush_every = CKPT_FLUSH_EVERY_DEFAULT;
    const config_setting_t *s = cfg_section(c, root, "checkpoint", "{ dir = ...; every = N; }");
    if (!s) return;
    static const char *const keys[] = {"dir",    "every",       "keep",         "on_failure", "upload",
                                       "max_resumes", "stripe_count", "stripe_size", "align", "async",
                                       "local",  "flush_every", NULL};
    cfg_keys(c, s, "checkpoint", keys);
    k->stripe_count = cfg_int(c, s, "stripe_count", false, 0, 0, 2000); /* Lustre's most */
    k->stripe_size = cfg_int(c, s, "stripe_size", false, 0, 0, INT64_C(1) << 30);
    k->align = cfg_int(c, s, "align", false, -1, -1, INT64_C(64) << 20);
    if (k->stripe_size % 65536)
        cfg_err(c, config_setting_get_member(s, "stripe_size"),
                "'stripe_size' must be a multiple of 65536 (64 KiB), not %lld", (long long)k->stripe_size);
    if (k->align > 0 && (k->align & (k->align - 1)))
        cfg_err(c, config_setting_get_member(s, "align"),
                "'align' must be 0 (packed), -1 (automatic) or a power of two, not %lld", (long long)k->align);
    k->max_resumes = cfg_int(c, s, "max_resumes", false, 3, 1, 1000000);
    k->async = cfg_bool(c, s, "async", CKPT_ASYNC_DEFAULT);
    k->dir = cfg_str(c, s, "dir", false, NULL);
    k->local = cfg_str(c, s, "local", false, NULL);
    if (k->local && !k->local[0])
        cfg_err(c, config_setting_get_member(s, "local"), "'local' must name a directory, not \"\"");
    k->flush_every = cfg_int(c, s, "flush_every", false, CKPT_FLUSH_EVERY_DEFAULT, 1, INT64_MAX);
    if (!k->local && config_setting_get_member(s, "flush_every"))
        cfg_err(c, config_setting_get_member(s, "flush_every"),
                "'flush_every' needs 'local' (the node-local tier whose saves it flushes)");
    k->every = cfg_int(c, s, "every", false, 1, 0, INT64_MAX);
    k->keep = cfg_int(c, s, "keep", false, 0, 0, INT64_MAX);
    const char *pol = cfg_str(c, s, "on_failure", false, "warn");
    if (pol && strcmp(pol, "warn") && strcmp(pol, "abort"))
        cfg_err(c, config_setting_get_member(s, "on_failure"),
               "'on_failure' must be \"warn\" or \"abort\", not \"%s\"", pol);
    k->abort_on_failure = pol && strcmp(pol, "abort") == 0;
    const config_setting_t *up = cfg_section(c, s, "upload", "{ to = \"DIR\"; }");
    if (up) {
        static const char *const ukeys[] = {"to", NULL};
        cfg_keys(c, up, "checkpoint.upload", ukeys);
        k->upload_to = cfg_str(c, up, "to", true, NULL);
    }
}

static void parse_watchdog(struct cfg *c, const config_setting_t *root)
{
    const config_setting_t *s = cfg_section(c, root, "watchdog", "{ timeout = 120; liveness = 10; }");
    c->job->watchdog.liveness = LIVENESS_DEFAULT;
    if (!s) return;
    static const char *const keys[] = {"timeout", "liveness", NULL};
    cfg_keys(c, s, "watchdog", keys);
    c->job->watchdog.timeout = cfg_num(c, s, "timeout", 0, 0, 1e7, NULL);
    c->job->watchdog.liveness = cfg_num(c, s, "liveness", LIVENESS_DEFAULT, 0, 1e7, NULL);
    if (c->job->watchdog.liveness > 0 && c->job->watchdog.liveness < 3)
        cfg_err(c, config_setting_get_member(s, "liveness"),
                "watchdog.liveness must be 0 (off) or at least 3 seconds (a heartbeat goes every second)");
}

static void parse_slurm(struct cfg *c, const config_setting_t *root)
{
    struct slurm_spec *sl = &c->job->slurm;
    sl->signals = (const char **)preempt_default_signals;
    sl->n_signals = PREEMPT_N_DEFAULT;
    sl->requeue = true;
    const config_setting_t *s = cfg_section(c, root, "slurm", "{ signals = [\"USR1\"]; requeue = true; }");
    if (!s) return;
    static const char *const keys[] = {"signals", "requeue", "time_margin", NULL};
    cfg_keys(c, s, "slurm", keys);
    const config_setting_t *sig = config_setting_get_member(s, "signals");
    if (sig) {
        int n = 0;
        sl->signals = get_names(c, sig, &n, "signal");
        sl->n_signals = n;
        for (int i = 0; i < n; i++)
            if (sl->signals[i] && !preempt_signal_number(sl->signals[i]))
                cfg_err(c, sig, "'%s' is not a signal cairn can catch (%s)", sl->signals[i],
                        preempt_signal_names);
    }
    sl->requeue = cfg_bool(c, s, "requeue", true);
    sl->time_margin = cfg_num(c, s, "time_margin", 0, 0, 1e9, NULL);
}

/* Each extension reads its own keys; those the job uses join job->exts. */
static void configure_exts(struct cfg *c, const config_setting_t *root)
{
    int n_ext;
    const struct ext_def *const *e = ext_all(&n_ext);
    struct job *j = c->job;
    for (int i = 0; i < n_ext; i++) {
        void *spec = NULL;
        e[i]->configure(c, root, &spec);
        if (!spec) continue;
        j->exts = arena_grow(c->a, j->exts, (size_t)j->n_exts, sizeof *j->exts);
        j->exts[j->n_exts++] = (struct job_ext){.def = e[i], .spec = spec};
    }
}

static bool ext_stops(const struct job *j)
{
    for (int i = 0; i < j->n_exts; i++)
        if (j->exts[i].def->has_stop && j->exts[i].def->has_stop(j->exts[i].spec)) return true;
    return false;
}

static void parse_root(struct cfg *c, const config_setting_t *root)
{
    static const char *const core[] = {"name", "seed", "groups", "init", "epoch", "epoch_end",
                                       "steps_per_epoch", "download", "exit", "stop",
                                       "checkpoint", "slurm", "watchdog", "progress", NULL};
    struct job *j = c->job;
    cfg_keys(c, root, "the job", all_keys(c, core, false));
    j->name = cfg_name(c, root, "name", true, "job name");
    j->seed = cfg_int(c, root, "seed", false, 0, 0, INT64_MAX);
    j->steps_per_epoch = cfg_int(c, root, "steps_per_epoch", false, 0, 1, INT64_MAX);
    j->progress = cfg_num(c, root, "progress", 10, 0, 1e6, NULL);
    parse_groups(c, root);
    for (int p = 0; p < N_PHASES; p++) parse_phase(c, root, (enum phase_id)p);
    parse_stop(c, root);
    parse_checkpoint(c, root);
    parse_slurm(c, root);
    parse_watchdog(c, root);
    configure_exts(c, root);
    if (!j->n_exts && j->steps_per_epoch == 0) j->steps_per_epoch = 1;
    bool stops = j->stop.n_blobs || j->stop.max_epochs || ext_stops(j);
    if ((j->phases[PHASE_EPOCH].n > 0 || j->n_exts) && !stops)
        cfg_err(c, j->n_exts ? root : config_setting_get_member(root, "epoch"),
               "the job has epoch tasks but no stop condition: "
               "give stop = { blobs = [...]; } or stop.max_epochs");
}

const void *job_ext_spec(const struct job *j, const struct ext_def *def)
{
    for (int i = 0; i < j->n_exts; i++)
        if (j->exts[i].def == def) return j->exts[i].spec;
    return NULL;
}

/* ---- --set overrides -------------------------------------------------- */

static int copy_setting(config_setting_t *dst_parent, const char *name,
                        const config_setting_t *src);

static int copy_children(config_setting_t *dst, const config_setting_t *src)
{
    bool named = config_setting_type(src) == CONFIG_TYPE_GROUP;
    for (int i = 0, n = config_setting_length(src); i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(src, (unsigned)i);
        if (copy_setting(dst, named ? config_setting_name(e) : NULL, e)) return -1;
    }
    return 0;
}

static int copy_setting(config_setting_t *dst_parent, const char *name,
                        const config_setting_t *src)
{
    int t = config_setting_type(src);
    config_setting_t *d = config_setting_add(dst_parent, name, t);
    if (!d) return -1;
    switch (t) {
    case CONFIG_TYPE_INT: return config_setting_set_int(d, config_setting_get_int(src)) ? 0 : -1;
    case CONFIG_TYPE_INT64:
        return config_setting_set_int64(d, config_setting_get_int64(src)) ? 0 : -1;
    case CONFIG_TYPE_FLOAT: return config_setting_set_float(d, config_setting_get_float(src)) ? 0 : -1;
    case CONFIG_TYPE_BOOL: return config_setting_set_bool(d, config_setting_get_bool(src)) ? 0 : -1;
    case CONFIG_TYPE_STRING:
        return config_setting_set_string(d, config_setting_get_string(src)) ? 0 : -1;
    default: return copy_children(d, src);
    }
}

/* "groups.0.ranks" -> "groups.[0].ranks" so plain indices work too. */
static void normalize_path(const char *in, char *out, size_t size)
{
    size_t o = 0;
    for (const char *p = in; *p && o + 4 < size;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        bool digits = len > 0;
        for (size_t i = 0; i < len; i++) digits = digits && isdigit((unsigned char)p[i]);
        if (o) out[o++] = '.';
        if (digits) out[o++] = '[';
        for (size_t i = 0; i < len && o + 3 < size; i++) out[o++] = p[i];
        if (digits) out[o++] = ']';
        p += len + (dot ? 1 : 0);
        if (!dot) break;
    }
    out[o] = '\0';
}

/* Find the parent of `path`, creating missing groups; *leaf gets the last key. */
static config_setting_t *parent_of(config_t *cf, char *path, const char **leaf)
{
    char *dot = strrchr(path, '.');
    if (!dot) {
        *leaf = path;
        return config_root_setting(cf);
    }
    *dot = '\0';
    *leaf = dot + 1;
    config_setting_t *p = config_lookup(cf, path);
    if (p) return p;
    const char *up_leaf;
    char up[512];
    snprintf(up, sizeof up, "%s", path);
    config_setting_t *gp = parent_of(cf, up, &up_leaf);
    if (!gp || up_leaf[0] == '[' || config_setting_type(gp) != CONFIG_TYPE_GROUP) return NULL;
    return config_setting_add(gp, up_leaf, CONFIG_TYPE_GROUP);
}

/* Parse a --set value as libconfig text (1), or else take it as a bare
 * string (0); -1 if out of memory. */
static int parse_value(config_t *tmp, const char *text)
{
    size_t n = strlen(text) + 16;
    char *buf = malloc(n);
    if (!buf) return -1;
    snprintf(buf, n, "v = %s;", text);
    int ok = config_read_string(tmp, buf);
    free(buf);
    if (ok) return 1;
    config_destroy(tmp);
    config_init(tmp);
    config_setting_t *v = config_setting_add(config_root_setting(tmp), "v", CONFIG_TYPE_STRING);
    return v && config_setting_set_string(v, text) ? 0 : -1;
}

/* Overwrite a scalar in place when the types agree (an integer may stand
 * for a number); false if the caller must replace the setting instead. */
static bool set_scalar(config_setting_t *d, const config_setting_t *src)
{
    int td = config_setting_type(d), ts = config_setting_type(src);
    if (td == CONFIG_TYPE_INT64 && cfg_is_int(src))
        return config_setting_set_int64(d, config_setting_get_int64(src));
    if (td == CONFIG_TYPE_INT && cfg_is_int(src)) {
        long long v = config_setting_get_int64(src);
        return v >= INT32_MIN && v <= INT32_MAX && config_setting_set_int(d, (int)v);
    }
    if (td == CONFIG_TYPE_FLOAT && (ts == CONFIG_TYPE_FLOAT || cfg_is_int(src)))
        return config_setting_set_float(d, ts == CONFIG_TYPE_FLOAT
                                               ? config_setting_get_float(src)
                                               : (double)config_setting_get_int64(src));
    if (td == CONFIG_TYPE_STRING && ts == CONFIG_TYPE_STRING)
        return config_setting_set_string(d, config_setting_get_string(src));
    if (td == CONFIG_TYPE_BOOL && ts == CONFIG_TYPE_BOOL)
        return config_setting_set_bool(d, config_setting_get_bool(src));
    return false;
}

static config_setting_t *replace(config_setting_t *parent, const char *leaf,
                                 const config_setting_t *src)
{
    if (leaf[0] == '[') { /* list elements can only be overwritten in place */
        config_setting_t *e = config_setting_get_elem(parent, (unsigned)atoi(leaf + 1));
        return e && set_scalar(e, src) ? e : NULL;
    }
    if (config_setting_type(parent) != CONFIG_TYPE_GROUP) return NULL;
    config_setting_t *old = config_setting_get_member(parent, leaf);
    if (old && set_scalar(old, src)) return old;
    if (old) config_setting_remove(parent, leaf);
    if (copy_setting(parent, leaf, src)) return NULL;
    return config_setting_get_member(parent, leaf);
}

static void apply_set(struct cfg *c, config_t *cf, const char *set)
{
    const char *eq = strchr(set, '=');
    if (!eq || eq == set) {
        diags_add(c->d, "--set", 0, "'%s' must be written key=value", set);
        c->errors++;
        return;
    }
    char key[512], path[512];
    snprintf(key, sizeof key, "%.*s", (int)(eq - set), set);
    normalize_path(key, path, sizeof path);
    const char *label = arena_printf(c->a, "--set %s", set);
    config_t tmp;
    config_init(&tmp);
    const char *leaf = NULL;
    config_setting_t *parent = NULL, *made = NULL;
    int parsed = parse_value(&tmp, eq + 1);
    if (parsed == 1 && (config_setting_length(config_root_setting(&tmp)) != 1 ||
                        cfg_text_check(c->d, label, eq + 1, NULL, 0, CFG_MAX_INCLUDE))) {
        if (config_setting_length(config_root_setting(&tmp)) != 1)
            diags_add(c->d, label, 0, "the value must be one value, not several settings");
        c->errors++;
        config_destroy(&tmp);
        return;
    }
    if (config_setting_length(config_root_setting(&tmp)) == 1) parent = parent_of(cf, path, &leaf);
    const config_setting_t *src = config_lookup(&tmp, "v");
    if (parent && src) made = replace(parent, leaf, src);
    config_destroy(&tmp);
    if (!made) {
        diags_add(c->d, "--set", 0, "cannot set '%s': no such list element or not a key path",
                  key);
        c->errors++;
        return;
    }
    c->ov[c->n_ov++] = (struct override){made, label};
}

/* ---- entry ------------------------------------------------------------ */

int config_load(const char *path, const char *text, const char *const *sets, int n_sets, struct job **out,
                struct diags *d)
{
    int rc = 0;
    char *own = NULL;
    config_t cf;
    config_init(&cf);
    struct job *j = NULL;
    struct arena *a = arena_create();
    j = arena_alloc(a, sizeof *j);
    j->arena = a;
    j->file = arena_strdup(a, path);
    struct cfg c = {.job = j, .a = a, .d = d, .path = j->file};
    c.ov = arena_alloc(a, (size_t)(n_sets + 1) * sizeof *c.ov);
    *out = NULL;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    const char *inc_dir = dirname(dir); /* may be a static ".", not dir */
    config_set_include_dir(&cf, inc_dir);
    /* the text checked is the text parsed: read once, here */
    if (!text && !(text = own = cfg_read_text(d, path)))
        CAIRN_FAIL(CAIRN_EINPUT, "%s: not a readable job file", path);
    if (cfg_text_check(d, path, text, inc_dir, 1, 0))
        CAIRN_FAIL(CAIRN_EINPUT, "%s: not a readable job file", path);
    if (!config_read_string(&cf, text)) {
        diags_add(d, config_error_file(&cf) ? config_error_file(&cf) : path,
                  config_error_line(&cf), "%s", config_error_text(&cf));
        CAIRN_FAIL(CAIRN_EINPUT, "%s: not a readable job file", path);
    }
    for (int i = 0; i < n_sets; i++) apply_set(&c, &cf, sets[i]);
    parse_root(&c, config_root_setting(&cf));
    if (c.errors) CAIRN_FAIL(CAIRN_EINPUT, "%s: %d problem%s in the job file", path, c.errors,
                             c.errors == 1 ? "" : "s");
    *out = j;
    j = NULL;
cleanup:
    config_destroy(&cf);
    free(own);
    if (j) job_destroy(&j);
    return rc;
}

void job_destroy(struct job **job)
{
    if (!job || !*job) return;
    struct arena *a = (*job)->arena;
    arena_destroy(&a);
    *job = NULL;
}

const char *phase_name(enum phase_id p)
{
    static const char *const names[] = {"init", "epoch", "epoch_end", "download", "exit"};
    return (unsigned)p < N_PHASES ? names[p] : "?";
}
