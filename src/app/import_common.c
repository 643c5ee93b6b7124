/* What the importers share: bad records, progress, the file's attributes;
 * see import_priv.h. */
#include "import_priv.h"

#include "cairn/clock.h"
#include "cairn/error.h"
#include "cairn/strbuf.h"
#include "cairn/version.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { ATTR_MAX = 60000 };

void import_bad_add(struct import_bad *b, const char *fmt, ...)
{
    if (b->n < IMPORT_MAX_SHOWN) {
        char raw[sizeof b->msg[0]];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        cairn_escape(b->msg[b->n++], sizeof b->msg[0], raw);
    }
    b->count++;
}

void import_bad_fatal(struct import_bad *b, int code)
{
    if (b->fatal) return;
    b->fatal = code;
    snprintf(b->fatal_msg, sizeof b->fatal_msg, "%s", cairn_errmsg());
}

/* inout = in, then inout: MPI hands the lower ranks' part as in. */
static void bad_join_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const struct import_bad *a = in;
    struct import_bad *b = inout;
    for (int i = 0; i < *len; i++, a++, b++) {
        struct import_bad r = *a;
        if (!a->fatal) { /* a fatal end stops the input there */
            for (int j = 0; j < b->n && r.n < IMPORT_MAX_SHOWN; j++) memcpy(r.msg[r.n++], b->msg[j], sizeof r.msg[0]);
            r.count += b->count;
            r.fatal = b->fatal;
            memcpy(r.fatal_msg, b->fatal_msg, sizeof r.fatal_msg);
        }
        *b = r;
    }
}

int import_bad_join(MPI_Comm comm, const struct import_bad *mine, struct import_bad *all)
{
    int rc = 0;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    CAIRN_CHECK_MPI(MPI_Type_contiguous((int)sizeof *mine, MPI_BYTE, &t));
    CAIRN_CHECK_MPI(MPI_Type_commit(&t));
    CAIRN_CHECK_MPI(MPI_Op_create(bad_join_op, 0, &op)); /* not commutative: rank order */
    CAIRN_CHECK_MPI(MPI_Allreduce(mine, all, 1, t, op, comm));
cleanup:
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    return rc;
}

int import_bad_verdict(const struct import_bad *all, int64_t skip_bad)
{
    if (all->count > skip_bad && skip_bad == 0) return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s", all->msg[0]);
    if (all->count > skip_bad)
        return cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "%s (and more bad records after it: more than "
                             "--skip-bad %lld)", all->msg[0], (long long)skip_bad);
    if (all->fatal) return cairn_err_set(all->fatal, __FILE__, __LINE__, "%s", all->fatal_msg);
    return 0;
}

void import_progress_init(struct import_progress *p, MPI_Comm comm, double interval, int64_t total)
{
    int me = 0;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p->ranks);
    p->interval = me == 0 ? interval : 0;
    p->total = total;
    p->t0 = p->last = clock_now();
}

void import_progress(struct import_progress *p, int64_t done)
{
    if (p->interval <= 0) return;
    double now = clock_now();
    if (now - p->last < p->interval) return;
    p->last = now;
    double all = (double)done * p->ranks, total = (double)p->total, rate = all / (now - p->t0);
    if (all > total) all = total;
    fprintf(stderr, "cairn: data import: %.1f of %.1f MB (%.0f%%), %.1f MB/s, ETA %.0f s\n", all / 1e6, total / 1e6,
            total > 0 ? 100 * all / total : 100.0, rate / 1e6, rate > 0 ? (total - all) / rate : 0.0);
}

int import_write(MPI_Comm comm, const struct import_spec *spec, const char *format, const int64_t *sizes,
                 int rc, const struct rows_out *d, int nd, int64_t skipped)
{
    struct strbuf src = {0}, num = {0};
    char cmd[ATTR_MAX + 16];
    int i = 0;
    /* an attribute lives in its object's header, of 64 KiB at most */
    for (; i < spec->n_inputs && src.len < ATTR_MAX - 4096; i++)
        strbuf_addf(&src, "%.3000s\t%lld\n", spec->inputs[i], (long long)sizes[i]);
    if (i < spec->n_inputs) strbuf_addf(&src, "... and %d more inputs\n", spec->n_inputs - i);
    snprintf(cmd, sizeof cmd, "%.*s%s", ATTR_MAX, spec->command ? spec->command : "",
             spec->command && strlen(spec->command) > ATTR_MAX ? " ..." : "");
    strbuf_addf(&num, "%lld", (long long)skipped);
    if (rc == 0 && (strbuf_finish(&src) || strbuf_finish(&num)))
        rc = cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    const struct attr_out a[] = {
        {"import_sources", strbuf_str(&src)}, /* one line per input: its path, a tab, its bytes */
        {"import_command", cmd},
        {"import_format", format},
        {"import_skipped", strbuf_str(&num)},
        {"import_version", CAIRN_VERSION},
    };
    rc = data_write(comm, spec->out, rc, d, nd, a, (int)(sizeof a / sizeof *a));
    strbuf_free(&src);
    strbuf_free(&num);
    return rc;
}

void import_quote(char *dst, size_t size, const char *s, size_t n)
{
    snprintf(dst, size, "%.*s%s", (int)(n > 40 ? 40 : n), s, n > 40 ? "..." : "");
}
