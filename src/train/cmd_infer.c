/* cairn eval and cairn predict: a trained model used on data (infer.h). */
#include "train_priv.h"

#include "cairn/cmdline.h"

#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/infer.h"
#include "cairn/slurm.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_eval[] =
    "usage: [mpirun -np N] cairn eval MODEL.h5 DATA.h5 [--features NAME] [--labels NAME]\n"
    "                                 [--rows FIRST:END] [--batch B] [--json]\n"
    "\n"
    "The loss and accuracy (and the AUC, for two classes) of a model cairn wrote\n"
    "(a language model's: per token, with the perplexity and bits per token)\n"
    "(RUN_DIR/model.h5) on rows of DATA.h5, computed as training computes its\n"
    "held-out metrics: pointed at the held-out rows, the figures the run logged.\n"
    "On any number of ranks (each reads its share of the rows), or alone.\n"
    "  --features NAME, --labels NAME  datasets (default: the ones it trained on)\n"
    "  --rows FIRST:END  rows FIRST to END-1 (either may be left out; default: all)\n"
    "  --batch B         rows per pass and per term of the sums (default: the\n"
    "                    job's data.eval_batch)\n"
    "  --json            print one JSON line\n";

static const char usage_predict[] =
    "usage: [mpirun -np N] cairn predict MODEL.h5 DATA.h5 -o OUT.h5 [--features NAME]\n"
    "                                    [--rows FIRST:END] [--batch B] [--json]\n"
    "\n"
    "Write a model's outputs for rows of DATA.h5 into OUT.h5, in parallel:\n"
    "/outputs [rows, k] (class probabilities for softmax models, values for mse)\n"
    "and /predicted [rows] (the class: the largest output); a language model's:\n"
    "/outputs [rows, context, vocabulary] logits and /predicted [rows, context].\n"
    "On any number of ranks, or alone.  OUT.h5 appears only once it is whole.\n"
    "  --features NAME   dataset (default: the one it trained on)\n"
    "  --rows FIRST:END  rows FIRST to END-1 (either may be left out; default: all)\n"
    "  --batch B         rows per pass (default: the job's data.eval_batch)\n"
    "  --json            print one JSON line (rows, ranks, seconds)\n";

struct cmd {
    bool predict, json;
    const char *model, *features, *labels, *rows;
    struct infer_opts o;
};

/* "FIRST:END", "FIRST:", ":END" */
static int parse_rows(const char *s, int64_t *first, int64_t *end)
{
    char *e;
    const char *colon = strchr(s, ':');
    if (!colon) return -1;
    *first = 0;
    *end = -1;
    if (colon > s) {
        long long v = strtoll(s, &e, 10);
        if (e != colon || v < 0) return -1;
        *first = v;
    }
    if (colon[1]) {
        long long v = strtoll(colon + 1, &e, 10);
        if (*e || v < 0) return -1;
        *end = v;
    }
    return 0;
}

/* -1: go on; else the exit code. */
static int parse(int argc, char **argv, struct cmd *c)
{
    const char *usage = c->predict ? usage_predict : usage_eval;
    static const struct option opts[] = {{"features", required_argument, NULL, 'f'},
                                         {"labels", required_argument, NULL, 'l'},
                                         {"rows", required_argument, NULL, 'r'},
                                         {"batch", required_argument, NULL, 'b'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int o;
    char *end;
    c->o.end = -1;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, c->predict ? "o:h" : "h", opts, NULL)) != -1) {
        switch (o) {
        case 'f': c->features = optarg; break;
        case 'l':
            if (c->predict) return cmd_usage_error(usage, "%s", "predict takes no labels");
            c->labels = optarg;
            break;
        case 'r':
            if (parse_rows(optarg, &c->o.first, &c->o.end))
                return cmd_usage_error(usage, "--rows takes FIRST:END (row numbers), not '%s'", optarg);
            break;
        case 'b':
            c->o.batch = strtoll(optarg, &end, 10);
            if (*end || c->o.batch < 1 || c->o.batch > (1 << 24))
                return cmd_usage_error(usage, "--batch needs an integer from 1 to 16777216, not '%s'", optarg);
            break;
        case 'o': c->o.out = optarg; break;
        case 'j': c->json = true; break;
        case 'h': fputs(usage, stdout); return 0;
        default: return cmd_usage_error(usage, "bad option '%s'", argv[optind - 1]);
        }
    }
    for (; optind < argc; optind++) {
        if (!c->model) c->model = argv[optind];
        else if (!c->o.data) c->o.data = argv[optind];
        else return cmd_usage_error(usage, "unexpected argument '%s'", argv[optind]);
    }
    if (!c->model || !c->o.data) return cmd_usage_error(usage, "%s", "needs MODEL.h5 and DATA.h5");
    if (c->predict && !c->o.out) return cmd_usage_error(usage, "%s", "needs -o OUT.h5");
    return -1;
}

static void print_json_number(const char *name, double v)
{
    if (isfinite(v))
        printf(",\"%s\":%.9g", name, v);
    else
        printf(",\"%s\":null", name);
}

/* tokens: a language model's per row (0 for a model of layers), whose
 * loss is also given as perplexity and bits per token (per byte, for
 * cairn data text's byte tokens). */
static void report(const struct cmd *c, const struct infer_result *r, int ranks, int64_t tokens)
{
    double ppl = exp(r->loss), bits = r->loss / log(2.0);
    double rate = r->seconds > 0 ? (double)r->rows / r->seconds : 0;
    int64_t end = c->o.first + r->rows;
    if (c->json) {
        printf("{\"command\":\"%s\",\"rows\":%lld,\"first\":%lld,\"ranks\":%d", c->predict ? "predict" : "eval",
               (long long)r->rows, (long long)c->o.first, ranks);
        if (!c->predict) {
            print_json_number("loss", r->loss);
            print_json_number("accuracy", r->accuracy);
            if (!isnan(r->auc)) print_json_number("auc", r->auc);
            if (tokens) {
                print_json_number("perplexity", ppl);
                print_json_number("bits_per_token", bits);
            }
        }
        printf(",\"seconds\":%.6f,\"rows_per_second\":%.1f}\n", r->seconds, rate);
        return;
    }
    if (c->predict) {
        printf("predict: rows %lld:%lld of %s on %d rank%s into %s in %.3f s (%.0f rows/s)\n",
               (long long)c->o.first, (long long)end, c->o.data, ranks, ranks == 1 ? "" : "s", c->o.out,
               r->seconds, rate);
        return;
    }
    printf("eval: rows %lld:%lld of %s on %d rank%s: loss = %.9g, accuracy = %.9g", (long long)c->o.first,
           (long long)end, c->o.data, ranks, ranks == 1 ? "" : "s", r->loss, r->accuracy);
    if (!isnan(r->auc)) printf(", auc = %.9g", r->auc);
    if (tokens) printf(" (of %lld tokens a row), perplexity = %.6g, bits per token = %.6g", (long long)tokens, ppl, bits);
    printf(" (%.3f s, %.0f rows/s)\n", r->seconds, rate);
}

static int run(int argc, char **argv, bool predict)
{
    struct cmd c = {.predict = predict};
    int code = parse(argc, argv, &c), threads = 0, me = 0, size = 1, rc;
    if (code >= 0) return code;
    if (slurm_launch_check()) return CAIRN_EXIT_INPUT; /* ranks that would each run alone */
    struct infer_model *m = NULL;
    struct infer_result r;
    MPI_Comm comm = MPI_COMM_NULL;
    cmd_mpi_init(&argc, &argv, &threads);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    rc = coll_agree(comm, infer_open(c.model, &m));
    if (rc == 0) {
        c.o.features = c.features ? c.features : infer_features(m);
        c.o.labels = predict ? NULL : c.labels ? c.labels : infer_labels(m);
        if (!c.o.batch) c.o.batch = infer_eval_batch(m);
        rc = infer_run(comm, m, &c.o, &r);
    }
    if (me == 0 && rc == 0) report(&c, &r, size, infer_tokens(m));
    if (me == 0 && rc) fprintf(stderr, "cairn: %s\n", cairn_errmsg());
    fflush(stdout);
    infer_close(&m);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return cairn_exit_code(rc);
}

int train_cmd_eval(int argc, char **argv) { return run(argc, argv, false); }
int train_cmd_predict(int argc, char **argv) { return run(argc, argv, true); }

/* ---- generate ---------------------------------------------------------------- */

static const char usage_generate[] =
    "usage: cairn generate MODEL.h5 --prompt TEXT --tokens N [--temperature T]\n"
    "                      [--top-k K] [--seed S] [--no-cache] [--json]\n"
    "\n"
    "Text from a language model cairn trained (model.lm, byte tokens): the\n"
    "prompt, then N more bytes, written to stdout.  Temperature 0 (the default)\n"
    "takes the most likely byte each time; above 0 (up to 1e6) a byte is drawn\n"
    "from the softmax of the logits over T among the K most likely (default:\n"
    "all), the same text for the same seed (default 1).  Each byte costs one\n"
    "position: a cache keeps every block's keys and values (--no-cache runs the\n"
    "whole window through the model for each byte instead: the same bytes within\n"
    "rounding, slower).  --json prints one JSON line of timings after the text.\n";

/* The text (every byte: a byte-level model may write NUL), then with
 * json the figures. */
static int print_generated(const unsigned char *text, int64_t n, const struct infer_gen *g, bool json, double secs)
{
    bool ok = fwrite(text, 1, (size_t)n, stdout) == (size_t)n && putchar('\n') != EOF && fflush(stdout) == 0;
    if (ok && json)
        ok = printf("{\"command\":\"generate\",\"tokens\":%lld,\"cache\":%s,\"seconds\":%.6f,"
                    "\"tokens_per_second\":%.1f}\n", (long long)g->tokens, g->no_cache ? "false" : "true", secs,
                    secs > 0 ? (double)g->tokens / secs : 0.0) > 0 && fflush(stdout) == 0;
    return ok ? 0 : cairn_err_errno(CAIRN_EIO, __FILE__, __LINE__, "cannot write the generated text");
}

int train_cmd_generate(int argc, char **argv)
{
    static const struct option opts[] = {{"prompt", required_argument, NULL, 'p'},
                                         {"tokens", required_argument, NULL, 'n'},
                                         {"temperature", required_argument, NULL, 't'},
                                         {"top-k", required_argument, NULL, 'k'},
                                         {"seed", required_argument, NULL, 's'},
                                         {"no-cache", no_argument, NULL, 'c'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct infer_gen g = {.seed = 1, .tokens = -1};
    bool json = false;
    char *e;
    int o, threads = 0, size = 1;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case 'p': g.prompt = optarg; break;
        case 'n':
            g.tokens = strtoll(optarg, &e, 10);
            if (*e || e == optarg || g.tokens < 0 || g.tokens > (1 << 24))
                return cmd_usage_error(usage_generate, "--tokens needs an integer from 0 to 16777216, not '%s'", optarg);
            break;
        case 't':
            g.temperature = strtod(optarg, &e);
            if (*e || e == optarg || !(g.temperature >= 0 && g.temperature <= 1e6))
                return cmd_usage_error(usage_generate, "--temperature needs a number from 0 to 1e6, not '%s'", optarg);
            break;
        case 'k':
            g.top_k = strtoll(optarg, &e, 10);
            if (*e || e == optarg || g.top_k < 1 || g.top_k > (1 << 24))
                return cmd_usage_error(usage_generate, "--top-k needs an integer from 1 to 16777216, not '%s'", optarg);
            break;
        case 's': {
            errno = 0;
            unsigned long long v = strtoull(optarg, &e, 10);
            if (*e || e == optarg || optarg[0] == '-' || errno == ERANGE)
                return cmd_usage_error(usage_generate, "--seed needs an integer >= 0, not '%s'", optarg);
            g.seed = v;
            break;
        }
        case 'c': g.no_cache = true; break;
        case 'j': json = true; break;
        case 'h': fputs(usage_generate, stdout); return CAIRN_EXIT_OK;
        default: return cmd_usage_error(usage_generate, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1 || !g.prompt || g.tokens < 0)
        return cmd_usage_error(usage_generate, "%s", "generate needs MODEL.h5, --prompt and --tokens");
    g.prompt_len = (int64_t)strlen(g.prompt);
    if (slurm_launch_check()) return CAIRN_EXIT_INPUT;
    cmd_mpi_init(&argc, &argv, &threads);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct infer_model *m = NULL;
    unsigned char *text = NULL;
    int64_t n = 0;
    int rc = size == 1 ? 0 : cairn_err_set(CAIRN_EINPUT, __FILE__, __LINE__, "generate runs on one rank, not %d", size);
    double t0 = MPI_Wtime(), t1 = t0;
    if (rc == 0) rc = infer_open(argv[optind], &m);
    if (rc == 0) {
        t0 = MPI_Wtime();
        rc = infer_generate(m, &g, &text, &n);
        t1 = MPI_Wtime();
    }
    if (rc == 0) rc = print_generated(text, n, &g, json, t1 - t0);
    if (rc) fprintf(stderr, "cairn: %s\n", cairn_errmsg());
    free(text);
    infer_close(&m);
    fflush(stdout);
    MPI_Finalize();
    return cairn_exit_code(rc);
}
