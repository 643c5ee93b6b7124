/* The training extension's own commands (ext_def.commands): `cairn
 * grads`, the single-process reference gradients, and `cairn data
 * balance`, how evenly a table's rows fall on the PS shards. */
#include "train_priv.h"

#include "cairn/cmdline.h"
#include "cairn/config.h"
#include "cairn/diag.h"
#include "cairn/embed_ids.h"
#include "cairn/error.h"
#include "cairn/reader.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char train_balance_synopsis[] =
    "       cairn data balance FILE.h5 --ids NAME --rows R [--shards P,...] [--batch B]\n";
const char train_balance_about[] =
    "  balance how evenly the distinct rows of ids NAME that each step of B samples\n"
    "          (default 512; more than the data: one step of all of it) touches\n"
    "          fall on P PS shards (default 2,4,8): cairn's spread placement\n"
    "          against contiguous blocks of ids\n";

static const char usage_balance[] =
    "usage: cairn data balance FILE.h5 --ids NAME --rows R [--shards P,...] [--batch B]\n"
    "\n"
    "How evenly the distinct rows of ids NAME that each step of B samples\n"
    "(default 512; more than the data: one step of all of it) touches fall on\n"
    "P PS shards (default 2,4,8): cairn's spread placement against contiguous\n"
    "blocks of ids.\n";

static const char usage_grads[] =
    "usage: cairn grads JOB.cfg -o OUT.h5 [--set KEY=VALUE]...\n"
    "\n"
    "The gradients of a model job's first mini-batch, split into the job's\n"
    "micro-batches, computed in this one process with no pipeline, parameter\n"
    "server or MPI: the reference for the distributed gradients the job's\n"
    "debug.grads option writes.  Datasets /grads/L<i>/<name> for each layer's\n"
    "parameters (W and b; a language model's as cairn-job(5) names them),\n"
    "and for each embedding table the rows the batch touched:\n"
    "/grads/embeddings/<name>/ids and .../rows (in the order the shards hold\n"
    "them).  Embedding tables are held whole in this process.\n";

/* The job's reference gradients into out (exit code). */
static int grads(const char *file, const char *const *sets, int n_sets, const char *out)
{
    struct job *job = NULL;
    struct diags d = {0};
    int rc = config_load(file, NULL, sets, n_sets, &job, &d);
    const struct train_spec *spec = rc == 0 ? job_ext_spec(job, &train_ext) : NULL;
    if (rc == 0 && !spec) {
        diags_add(&d, file, 1, "cairn grads needs a job with a model section");
        rc = CAIRN_EINPUT;
    }
    if (rc == 0) rc = model_reference_grads(spec, (uint64_t)job->seed, out);
    diags_print(&d, stderr);
    if (rc && d.n == 0) fprintf(stderr, "cairn: %s\n", cairn_errmsg());
    diags_free(&d);
    job_destroy(&job);
    return cairn_exit_code(rc);
}

int train_cmd_grads(int argc, char **argv)
{
    static const struct option longs[] = {
        {"set", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *out = NULL, **sets = calloc((size_t)argc + 1, sizeof *sets);
    int n_sets = 0, c, code = -1;
    if (!sets) return CAIRN_EXIT_RUNTIME;
    optind = 0;
    opterr = 0;
    while (code < 0 && (c = getopt_long(argc, argv, "ho:", longs, NULL)) != -1) {
        if (c == 's') sets[n_sets++] = optarg;
        else if (c == 'o') out = optarg;
        else if (c == 'h') code = (fputs(usage_grads, stdout), CAIRN_EXIT_OK);
        else code = cmd_usage_error(usage_grads, "unknown option '%s'", argv[optind - 1]);
    }
    if (code < 0 && optind >= argc) code = cmd_usage_error(usage_grads, "%s", "missing job file");
    if (code < 0 && optind < argc - 1) code = cmd_usage_error(usage_grads, "unexpected argument '%s'", argv[optind + 1]);
    if (code < 0 && !out) code = cmd_usage_error(usage_grads, "%s", "missing -o OUT.h5");
    if (code < 0) code = grads(argv[optind], sets, n_sets, out);
    free(sets);
    return code;
}

int train_cmd_balance(int argc, char **argv)
{
    static const struct option longs[] = {
        {"ids", required_argument, NULL, 'i'},   {"rows", required_argument, NULL, 'r'},
        {"shards", required_argument, NULL, 'p'}, {"batch", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    const char *ids = NULL, *shards = "2,4,8";
    long rows = -1, batch = 512;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        if (c == 'h') return fputs(usage_balance, stdout), CAIRN_EXIT_OK;
        if (c == 'i') ids = optarg;
        else if (c == 'p') shards = optarg;
        else if (c == 'r' || c == 'b') {
            if (cmd_parse_int(optarg, 1, 1L << 40, c == 'r' ? &rows : &batch))
                return cmd_usage_error(usage_balance, "'%s' needs a positive integer", argv[optind - 2 >= 0 ? optind - 2 : 0]);
        } else return cmd_usage_error(usage_balance, "bad option '%s'", argv[optind - 1]);
    }
    if (optind != argc - 1 || !ids || rows < 1)
        return cmd_usage_error(usage_balance, "%s", "balance needs FILE.h5, --ids and --rows");
    int P[16], n_p = 0;
    for (const char *q = shards; *q; n_p++) {
        char *end;
        long v = strtol(q, &end, 10);
        if (n_p == 16 || end == q || v < 1 || v > 65536 || (*end && *end != ','))
            return cmd_usage_error(usage_balance, "'--shards %s' needs up to 16 counts from 1 to 65536, comma-separated", shards);
        P[n_p] = (int)v;
        q = *end ? end + 1 : end;
    }
    const char *file = argv[optind];
    struct reader_cache *rc_ = NULL;
    struct tensor v = {0};
    int64_t n = 0, k = 0;
    int rc = reader_cache_create(&rc_);
    if (rc == 0) rc = embed_ids_shape(rc_, file, ids, &n, &k);
    if (rc == 0 && (uint64_t)n * (uint64_t)k > (UINT64_C(1) << 32))
        rc = cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "ids dataset '%s' in %s holds more than 2^32 ids", ids, file);
    if (rc == 0) rc = embed_ids_read(rc_, file, ids, rows, 0, n, k, &v);
    const char *whole = batch > n ? " (--batch is more than the data: one step of all of it)" : "";
    if (batch > n) batch = n > 0 ? (long)n : 1;
    if (rc == 0)
        printf("%s '%s': %lld samples of up to %lld ids, %ld rows, steps of %ld samples%s\n"
               "%8s %18s %16s %26s\n", file, ids, (long long)n, (long long)k, rows, batch, whole, "shards",
               "rows per step", "per shard", "busiest / mean: spread, blocks");
    for (int i = 0; rc == 0 && i < n_p; i++) {
        struct embed_balance s, b;
        rc = embed_balance(v.data, n, k, rows, P[i], batch, true, &s);
        if (rc == 0) rc = embed_balance(v.data, n, k, rows, P[i], batch, false, &b);
        if (rc == 0)
            printf("%8d %18.1f %16.1f %10.2f (worst %.2f), %.2f (worst %.2f)\n", P[i], s.rows_per_step,
                   s.rows_per_step / P[i], s.busiest_mean, s.busiest_worst, b.busiest_mean, b.busiest_worst);
    }
    if (rc) fprintf(stderr, "cairn: %s\n", cairn_errmsg());
    tensor_free(&v);
    reader_cache_destroy(&rc_);
    return cairn_exit_code(rc);
}

