/* The checkpoint index file; see include/cairn/ckpt_index.h. */
#include "cairn/ckpt_index.h"

#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/strbuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char header[] = "# cairn checkpoint index v1\n# epoch\tstep\tfile\tbytes\tstatus\n";

void ckpt_file_name(int64_t epoch, int64_t step, char *out, size_t size)
{
    if (step > 0)
        snprintf(out, size, "ckpt-e%06" PRId64 "-s%06" PRId64 ".h5", epoch, step);
    else
        snprintf(out, size, "ckpt-e%06" PRId64 ".h5", epoch);
}

const char *ckpt_position(int64_t epoch, int64_t step, char *out, size_t size)
{
    if (step > 0)
        snprintf(out, size, "in epoch %" PRId64 " after step %" PRId64, epoch + 1, step);
    else
        snprintf(out, size, "after epoch %" PRId64, epoch);
    return out;
}

static int parse_line(char *line, struct ckpt_entry *e)
{
    char status[16] = "";
    long long epoch, step, bytes;
    if (sscanf(line, "%lld\t%lld\t%255[^\t]\t%lld\t%15s", &epoch, &step, e->file, &bytes,
               status) != 5)
        return -1;
    if (epoch < 0 || step < 0 || (strcmp(status, "ok") && strcmp(status, "bad"))) return -1;
    if (strchr(e->file, '/')) return -1; /* entries name files inside the directory */
    e->epoch = epoch;
    e->step = step;
    e->bytes = bytes;
    e->ok = strcmp(status, "ok") == 0;
    return 0;
}

/* Entries in file order, for sorting: a later line about the same
 * checkpoint wins, as with one put after another. */
struct seq_entry {
    struct ckpt_entry e;
    int line;
};

static int by_position(const void *a, const void *b)
{
    const struct seq_entry *x = a, *y = b;
    if (x->e.epoch != y->e.epoch) return x->e.epoch < y->e.epoch ? -1 : 1;
    if (x->e.step != y->e.step) return x->e.step < y->e.step ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* Sort by position and keep the last line of each: n log n, where a put
 * per line would be quadratic in a long index. */
static int collect(struct seq_entry *v, int n, struct ckpt_index *idx)
{
    if (n > 0) qsort(v, (size_t)n, sizeof *v, by_position); /* v is NULL for no entries */
    idx->v = calloc((size_t)n + 1, sizeof *idx->v);
    if (!idx->v) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    for (int i = 0; i < n; i++) {
        bool same = i + 1 < n && v[i + 1].e.epoch == v[i].e.epoch && v[i + 1].e.step == v[i].e.step;
        if (!same) idx->v[idx->n++] = v[i].e;
    }
    return 0;
}

int ckpt_index_read(const char *dir, struct ckpt_index *idx)
{
    int rc = 0, n = 0, cap = 0;
    char path[4200];
    char *text = NULL;
    size_t len = 0;
    struct seq_entry *v = NULL;
    *idx = (struct ckpt_index){0};
    CAIRN_CHECK(fsx_join(path, sizeof path, dir, "index"));
    if (access(path, F_OK) != 0) return 0;
    if (!fsx_is_regular(path)) CAIRN_FAIL(CAIRN_EINPUT, "%s is not a regular file", path);
    CAIRN_CHECK(fsx_read_all(path, &text, &len));
    int lineno = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\0') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            struct seq_entry *w = realloc(v, (size_t)cap * sizeof *v);
            CAIRN_CHECK_ALLOC(w);
            v = w;
        }
        v[n] = (struct seq_entry){.line = lineno};
        if (parse_line(line, &v[n].e))
            CAIRN_FAIL(CAIRN_EINPUT, "%s:%d: malformed checkpoint index line", path, lineno);
        n++;
    }
    CAIRN_CHECK(collect(v, n, idx));
cleanup:
    free(text);
    free(v);
    if (rc) ckpt_index_free(idx);
    return rc;
}

int ckpt_index_write_tmp(const char *dir, const struct ckpt_index *idx)
{
    int rc = 0;
    char path[4200];
    struct strbuf b = {0};
    struct fsx_out o = {.dir = -1, .fd = -1};
    strbuf_add(&b, header);
    for (int i = 0; i < idx->n; i++) {
        const struct ckpt_entry *e = &idx->v[i];
        strbuf_addf(&b, "%" PRId64 "\t%" PRId64 "\t%s\t%" PRId64 "\t%s\n", e->epoch, e->step,
                    e->file, e->bytes, e->ok ? "ok" : "bad");
    }
    CAIRN_CHECK(strbuf_finish(&b));
    CAIRN_CHECK(fsx_join(path, sizeof path, dir, "index"));
    CAIRN_CHECK(fsx_out_begin(&o, path, 0));
    CAIRN_CHECK(fsx_out_write(&o, strbuf_str(&b), b.len));
    CAIRN_CHECK(fsx_out_sync(&o));
    o.made = false; /* synced: left as index.tmp for ckpt_index_commit_tmp */
cleanup:
    fsx_out_abort(&o); /* a full disk must not leave index.tmp behind */
    strbuf_free(&b);
    return rc;
}

int ckpt_index_commit_tmp(const char *dir, bool *replaced)
{
    int rc = 0;
    char tmp[4200];
    bool renamed = false;
    CAIRN_CHECK(fsx_join(tmp, sizeof tmp, dir, "index.tmp"));
    rc = fsx_replace(dir, "index.tmp", "index", &renamed);
    if (!renamed) unlink(tmp);
cleanup:
    if (replaced) *replaced = renamed;
    return rc;
}

int ckpt_index_update(const char *dir, ckpt_index_edit *edit, void *arg, const struct ckpt_index_faults *f,
                      bool *listed)
{
    int rc = 0;
    bool replaced = false;
    char path[4200];
    struct ckpt_index idx = {0}, gone = {0};
    CAIRN_CHECK(ckpt_index_read(dir, &idx));
    rc = edit(&idx, &gone, arg);
    if (rc == CKPT_INDEX_KEEP) {
        rc = 0;
        goto cleanup;
    }
    CAIRN_CHECK(rc);
    CAIRN_CHECK(ckpt_index_write_tmp(dir, &idx));
    if (f && f->written) f->at(f->arg, f->written);
    CAIRN_CHECK(ckpt_index_commit_tmp(dir, &replaced));
    if (f && f->listed) f->at(f->arg, f->listed);
    for (int i = 0; i < gone.n; i++) /* unlisted: never loaded again */
        if (fsx_join(path, sizeof path, dir, gone.v[i].file) == 0) unlink(path);
cleanup:
    if (listed) *listed = replaced;
    ckpt_index_free(&idx);
    ckpt_index_free(&gone);
    return rc;
}

static int before(const struct ckpt_entry *a, const struct ckpt_entry *b)
{
    return a->epoch < b->epoch || (a->epoch == b->epoch && a->step < b->step);
}

int ckpt_index_put(struct ckpt_index *idx, const struct ckpt_entry *e)
{
    int i = ckpt_index_find(idx, e->epoch, e->step);
    if (i >= 0) {
        idx->v[i] = *e;
        return 0;
    }
    struct ckpt_entry *v = realloc(idx->v, (size_t)(idx->n + 1) * sizeof *v);
    if (!v) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    idx->v = v;
    i = idx->n++;
    while (i > 0 && before(e, &v[i - 1])) {
        v[i] = v[i - 1];
        i--;
    }
    v[i] = *e;
    return 0;
}

void ckpt_index_remove(struct ckpt_index *idx, int i)
{
    memmove(&idx->v[i], &idx->v[i + 1], (size_t)(idx->n - i - 1) * sizeof *idx->v);
    idx->n--;
}

int ckpt_index_find(const struct ckpt_index *idx, int64_t epoch, int64_t step)
{
    for (int i = 0; i < idx->n; i++)
        if (idx->v[i].epoch == epoch && idx->v[i].step == step) return i;
    return -1;
}

int ckpt_index_newest_ok(const struct ckpt_index *idx, int before_pos)
{
    for (int i = (before_pos < idx->n ? before_pos : idx->n) - 1; i >= 0; i--)
        if (idx->v[i].ok) return i;
    return -1;
}

void ckpt_index_free(struct ckpt_index *idx)
{
    free(idx->v);
    *idx = (struct ckpt_index){0};
}

int ckpt_index_locate(const char *dir, int64_t epoch, struct ckpt_entry *e, char *path,
                      size_t size)
{
    int rc = 0;
    struct ckpt_index idx = {0};
    struct strbuf list = {0};
    CAIRN_CHECK(ckpt_index_read(dir, &idx));
    int i = epoch < 0 ? ckpt_index_newest_ok(&idx, idx.n) : ckpt_index_find(&idx, epoch, 0);
    if (i < 0 || !idx.v[i].ok) {
        for (int k = 0; k < idx.n; k++)
            if (idx.v[k].ok && idx.v[k].step == 0)
                strbuf_addf(&list, "%s%" PRId64, list.len ? " " : "", idx.v[k].epoch);
        if (epoch < 0)
            CAIRN_FAIL(CAIRN_ENOCKPT, "no such checkpoint: %s holds no committed checkpoint", dir);
        CAIRN_FAIL(CAIRN_ENOCKPT, "no such checkpoint: epoch %" PRId64 " in %s (committed: %s)",
                   epoch, dir, list.len ? strbuf_str(&list) : "none");
    }
    *e = idx.v[i];
    CAIRN_CHECK(fsx_join(path, size, dir, e->file));
cleanup:
    ckpt_index_free(&idx);
    strbuf_free(&list);
    return rc;
}
