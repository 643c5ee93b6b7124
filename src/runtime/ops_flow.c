/* Control and reporting ops: countdown, log, sleep. */
#include "cairn/op.h"

#include "cairn/diag.h"
#include "cairn/error.h"
#include "cairn/exec.h"
#include "cairn/job.h"
#include "cairn/plan.h"
#include "cairn/runtime.h"
#include "op_impl.h"
#include "cairn/clock.h"
#include "cairn/workspace.h"
#include "cairn/runlog.h"
#include "cairn/strbuf.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- countdown ---------------------------------------------------------- */

static int countdown_infer(struct infer *ix)
{
    if (!dtype_is_int(ix->in[0].dtype) || !is_scalar_type(&ix->in[0]))
        return infer_error(ix, "counter '%s' must be an integer scalar", ix->op->in[0]);
    ix->out[0] = (struct blob_type){.dtype = DT_I32, .dist = ix->in[0].dist};
    return 0;
}

/* Decrement the counter (not below 0); done once it reaches 0, so a
 * counter set to n makes `loop until done` run n times. */
static int countdown_run(struct op_call *c)
{
    struct tensor *cnt = &c->in[0]->t;
    int64_t v = tensor_get_i64(cnt, 0);
    if (v > 0) tensor_set_i64(cnt, 0, --v);
    struct shape scalar = {0};
    int rc = tensor_resize(&c->out[0]->t, DT_I32, &scalar);
    if (rc == 0) tensor_set_i64(&c->out[0]->t, 0, v == 0);
    return rc;
}


/* ---- log ------------------------------------------------------------- */

enum { LOG_RANK };
static const struct param_def log_params[] = {
    {"rank", PT_INT, "0", NULL, "group rank that logs; -1 for every rank"},
    {NULL, 0, NULL, NULL, NULL},
};

static int log_infer(struct infer *ix)
{
    int64_t r = PI(ix, LOG_RANK)->i;
    if (r < -1 || r >= ix->group_size)
        return infer_error(ix, "rank %lld is not -1 or a rank of the group (0..%d)",
                           (long long)r, ix->group_size - 1);
    return 0;
}

static void json_value(struct strbuf *b, const struct tensor *t)
{
    int64_t n = tensor_numel(t);
    if (t->shape.ndim > 0) strbuf_add(b, "[");
    for (int64_t i = 0; i < n && i < 64; i++) {
        double v = tensor_get(t, i);
        if (i) strbuf_add(b, ",");
        if (dtype_is_int(t->dtype))
            strbuf_addf(b, "%lld", (long long)tensor_get_i64(t, i));
        else if (isfinite(v))
            strbuf_addf(b, "%.9g", v);
        else
            strbuf_add(b, "null");
    }
    if (t->shape.ndim > 0) strbuf_add(b, "]");
}

static void where_text(const struct runtime *rt, bool report, char *buf, size_t size)
{
    if (rt->phase == PHASE_EPOCH || rt->phase == PHASE_EPOCH_END)
        snprintf(buf, size, "%sepoch %lld step %lld", report ? "report " : "",
                 (long long)rt->epoch, (long long)rt->step);
    else
        snprintf(buf, size, "%s%s", report ? "report " : "", phase_name(rt->phase));
}

static int log_run(struct op_call *c)
{
    const struct exec_ctx *x = c->ctx;
    int64_t who = P(c, LOG_RANK)->i;
    if (who >= 0 && who != x->rank) return 0;
    const char *group = x->task->group;
    struct strbuf line = {0}, json = {0};
    char val[512], where[96];
    where_text(x->rt, x->in_report, where, sizeof where);
    strbuf_add(&json, "\"group\":");
    strbuf_json_str(&json, group);
    if (who < 0) strbuf_addf(&json, ",\"rank\":%d", x->rank);
    for (int i = 0; i < c->op->n_in; i++) {
        const struct tensor *t = &c->in[i]->t;
        strbuf_addf(&line, "%s%s/%s = %s", i ? ", " : "", group, c->op->in[i],
                    tensor_format(t, val, sizeof val));
        strbuf_add(&json, ",");
        strbuf_json_str(&json, c->op->in[i]);
        strbuf_add(&json, ":");
        json_value(&json, t);
    }
    if (who < 0)
        runlog_line(x->rt->log, "%s: %s (rank %d)", where, strbuf_str(&line), x->rank);
    else
        runlog_line(x->rt->log, "%s: %s", where, strbuf_str(&line));
    runlog_metric(x->rt->log, x->in_report ? "report" : "log", x->rt->epoch, x->rt->step,
                  strbuf_str(&json));
    int rc = strbuf_finish(&line);
    if (rc == 0) rc = strbuf_finish(&json);
    strbuf_free(&line);
    strbuf_free(&json);
    return rc;
}


/* ---- sleep ------------------------------------------------------------- */

enum { SLEEP_MS };
static const struct param_def sleep_params[] = {
    {"ms", PT_INT, NULL, NULL, "milliseconds to wait (stands in for work in examples)"},
    {NULL, 0, NULL, NULL, NULL},
};

static int sleep_infer(struct infer *ix)
{
    if (PI(ix, SLEEP_MS)->i < 0) return infer_error(ix, "ms must be >= 0");
    return 0;
}

static int sleep_run(struct op_call *c)
{
    clock_sleep((double)P(c, SLEEP_MS)->i / 1000);
    return 0;
}


/* ---- definitions ---- */

const struct op_def op_countdown = {
    .name = "countdown",
    .summary = "decrement counter in[0]; out = 1 once it reaches 0",
    .min_in = 1,
    .max_in = 1,
    .min_out = 1,
    .max_out = 1,
    .flags = OPF_MUTATES_IN0,
    .infer = countdown_infer,
    .run = countdown_run,
};

const struct op_def op_log = {
    .name = "log",
    .summary = "write the inputs' values to the log and metrics",
    .min_in = 1,
    .max_in = 32,
    .max_out = 0,
    .params = log_params,
    .infer = log_infer,
    .run = log_run,
};

const struct op_def op_sleep = {
    .name = "sleep",
    .summary = "wait ms milliseconds",
    .max_in = 0,
    .max_out = 0,
    .params = sleep_params,
    .infer = sleep_infer,
    .run = sleep_run,
};
