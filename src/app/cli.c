/* The command line: `cairn run|print|check|data ...` (see doc/cairn.1). */
#include "cairn/cli.h"
#include "cli_priv.h"

#include "cairn/analyze.h"
#include "cairn/blas_kernel.h"
#include "cairn/ckpt_file.h"
#include "cairn/ckpt_index.h"
#include "cairn/ckpt_tier.h"
#include "cairn/cmdline.h"
#include "cairn/config.h"
#include "cairn/datagen.h"
#include "cairn/ext.h"
#include "cairn/reader.h"
#include "cairn/diag.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/job.h"
#include "cairn/nn.h"
#include "cairn/op.h"
#include "cairn/plan.h"
#include "cairn/preempt.h"
#include "cairn/placement.h"
#include "cairn/print.h"
#include "cairn/runner.h"
#include "cairn/slurm.h"
#include "cairn/strbuf.h"
#include "cairn/version.h"

#include <getopt.h>
#include <malloc.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- usage ---------------------------------------------------------------- */

static const char usage_main[] =
    "usage: cairn COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  run JOB.cfg     run a job (under mpirun/srun, or alone as one rank)\n"
    "  print JOB.cfg   show the job's expanded plan\n"
    "  check JOB.cfg   analyze the job file and report every problem\n"
    "  ckpt ...        list, verify and extract checkpoints\n"
    "  data ...        write example data sets\n"
    "  ops             list the ops a job can use, with their parameters\n"
    "  plot RUN_DIR... -o FILE.png   loss, accuracy, samples/s per epoch\n"
    "  bench sgemm     this core's single-precision GEMM rate (for benchmarks)\n";

static const char usage_main_end[] =
    "\n"
    "`cairn COMMAND --help` describes each command; man cairn(1), cairn-job(5).\n"
    "exit codes: 0 success, 2 bad input, 3 runtime failure,\n"
    "            75 preempted (checkpoint saved; rerun to continue)\n";

static const char usage_run[] =
    "usage: cairn run JOB.cfg [--set KEY=VALUE]... [--run-dir DIR] [--resume=WHEN] [--force]\n"
    "                 [--no-requeue]\n"
    "\n"
    "Run the job on every rank of the MPI job (mpirun -np N cairn run ...).\n"
    "  --set KEY=VALUE  override a job-file key, e.g. --set stop.max_epochs=3\n"
    "                   or --set groups.0.ranks=2 (repeatable)\n"
    "  --run-dir DIR    where the log, metrics, checkpoints and results go\n"
    "                   (default runs/NAME)\n"
    "  --resume=WHEN    auto (default): from the newest committed checkpoint if any;\n"
    "                   latest: the same, but fail if there is none;\n"
    "                   EPOCH: from that epoch's checkpoint;\n"
    "                   none: start fresh (refused if checkpoints exist, unless --force)\n"
    "  --force          with --resume=none: delete the existing checkpoints\n"
    "  --no-requeue     when preempted under Slurm, save and stop (exit 75) but do\n"
    "                   not ask Slurm to requeue the job\n";

static const char usage_print[] =
    "usage: cairn print JOB.cfg [--ranks N] [--ranks-per-node K] [--set KEY=VALUE]...\n"
    "\n"
    "Print the job's plan for N ranks (default: as many as its groups need):\n"
    "groups with their ranks, then the init, epoch, stop, download and exit\n"
    "phases, one op per line.  With --ranks-per-node, also which ranks and\n"
    "groups land on which node when K ranks fill each node in turn (Slurm's\n"
    "and mpirun's default block placement).  Needs no MPI.\n";

static const char usage_check[] =
    "usage: cairn check JOB.cfg [--ranks N] [--set KEY=VALUE]...\n"
    "\n"
    "Analyze the job for N ranks and print every problem as FILE:LINE: message\n"
    "(undefined blobs, conflicting parallel writers, unknown ops or keys, wrong\n"
    "types, layout errors).  Exit 0 when clean, 2 otherwise.  Needs no MPI.\n";

static const char usage_data[] =
    "usage: cairn data range --out FILE.h5 --count N [--start S] [--dataset NAME]\n"
    "       [mpirun -np N] cairn data synth --out FILE.h5 --samples N --features D\n"
    "                      --classes K [--hidden H] [--seed S]\n"
    "                      [--table NAME:ROWS:K]... [--zipf S]\n"
    "       cairn data text --out FILE.h5 --context C TEXT...\n";

static const char usage_data_kinds[] =
    "\n"
    "  range   an i64 dataset (default name \"values\") holding S, S+1, ..., S+N-1\n"
    "  synth   a learnable classification set: datasets features [N, D] (f32) and\n"
    "          labels [N] (i32), the classes a random teacher network (H tanh units,\n"
    "          default 32) gives the features; the same file on any number of ranks.\n"
    "          Each --table adds ids NAME [N, K] (i64): bags of 1 to K ids of a table\n"
    "          of ROWS rows (-1 pads), drawn from Zipf's law with exponent S (default\n"
    "          1.1; id 0 the most frequent); the teacher also sees each id's latent\n"
    "          vector, so the ids carry part of the label\n"
    "  text    a language model's data (model.lm, vocab = 256): the TEXT files'\n"
    "          bytes, concatenated, cut into windows of C tokens, features [N, C]\n"
    "          (i32), and labels [N, C], each window's next tokens; under mpirun\n"
    "          each rank reads and writes its block of the windows\n";

static const char usage_ckpt[] =
    "usage: cairn ckpt ls DIR\n"
    "       cairn ckpt verify FILE [--job JOB.cfg [--set KEY=VALUE]... [--ranks N]]\n"
    "       cairn ckpt extract DIR [--epoch E] --blob GROUP/BLOB [--blob GROUP/BLOB]... -o OUT.h5\n"
    "\n"
    "  ls       one line per checkpoint in DIR's index, newest last, tab-separated:\n"
    "           epoch, step, file, bytes, status (ok or bad)\n"
    "  verify   run the loader's own checks (every attribute, the metadata checksum,\n"
    "           every dataset's type, shape and checksum); with --job, also that\n"
    "           the checkpoint is of that job; exit 0 if the loader would accept\n"
    "           it, 1 if it is damaged, 2 if it is of another format or job\n"
    "  extract  copy blobs of the committed checkpoint of epoch E (default: the\n"
    "           newest) into OUT.h5 as datasets /GROUP/BLOB, checksums verified\n"
    "A node-local checkpoint (checkpoint.local): verify takes its manifest,\n"
    "DIR/local/ckpt-eEPOCH, as FILE; extract takes it from DIR when it is the\n"
    "newest (or epoch E's); both read its parts on this node.\n";

/* The usage texts with the extensions' commands in them, built once,
 * each printed with one write (ranks' lines do not mix). */
static const char *usage_text(bool data)
{
    static struct strbuf text[2];
    struct strbuf *b = &text[data];
    if (b->len) return strbuf_str(b);
    int n;
    const struct ext_def *const *all = ext_all(&n);
    strbuf_add(b, data ? usage_data : usage_main);
    for (int e = 0; e < n; e++) /* the synopses, after the core's */
        for (const struct ext_command *x = all[e]->commands; x && x->name; x++)
            if ((strncmp(x->name, "data ", 5) == 0) == data) strbuf_add(b, x->synopsis);
    strbuf_add(b, data ? usage_data_kinds : usage_main_end);
    for (int e = 0; data && e < n; e++) /* a data tool's explanation */
        for (const struct ext_command *x = all[e]->commands; x && x->name; x++)
            if (x->about) strbuf_add(b, x->about);
    if (data) {
        strbuf_add(b, "\n");
        strbuf_add(b, cli_import_usage);
    }
    return strbuf_finish(b) ? (data ? usage_data : usage_main) : strbuf_str(b);
}

/* An extension's command of that name ("data NAME" for a data set kind,
 * which `cairn data` looks up), or NULL. */
static const struct ext_command *ext_command(const char *name)
{
    int n;
    const struct ext_def *const *all = ext_all(&n);
    for (int e = 0; e < n; e++)
        for (const struct ext_command *x = all[e]->commands; x && x->name; x++)
            if (strcmp(x->name, name) == 0) return x;
    return NULL;
}

/* ---- shared option parsing ------------------------------------------------ */

struct args {
    const char *job;
    const char **sets;
    int n_sets;
    const char *run_dir;
    int ranks;
    int per_node; /* print --ranks-per-node; 0: not asked */
    bool help;
    struct resume_opts resume;
    bool no_requeue;
};

enum {
    OPT_SET = 1000,
    OPT_RUN_DIR,
    OPT_RANKS,
    OPT_PER_NODE,
    OPT_HELP,
    OPT_RESUME,
    OPT_FORCE,
    OPT_NO_REQUEUE
};

static int parse_resume(const char *s, struct resume_opts *r)
{
    long v;
    if (strcmp(s, "auto") == 0) r->mode = RESUME_AUTO;
    else if (strcmp(s, "latest") == 0) r->mode = RESUME_LATEST;
    else if (strcmp(s, "none") == 0) r->mode = RESUME_NONE;
    else if (cmd_parse_int(s, 0, 1L << 40, &v) == 0) {
        r->mode = RESUME_EPOCH;
        r->epoch = v;
    } else {
        return -1;
    }
    return 0;
}

/* Parse the options common to run/print/check; returns an exit code or -1 to go on. */
static int parse_job_args(int argc, char **argv, const char *usage, bool with_ranks,
                          bool with_run_dir, struct args *a)
{
    static const struct option longs[] = {
        {"set", required_argument, NULL, OPT_SET},
        {"run-dir", required_argument, NULL, OPT_RUN_DIR},
        {"ranks", required_argument, NULL, OPT_RANKS},
        {"ranks-per-node", required_argument, NULL, OPT_PER_NODE},
        {"help", no_argument, NULL, OPT_HELP},
        {"resume", required_argument, NULL, OPT_RESUME},
        {"force", no_argument, NULL, OPT_FORCE},
        {"no-requeue", no_argument, NULL, OPT_NO_REQUEUE},
        {NULL, 0, NULL, 0},
    };
    a->sets = calloc((size_t)argc + 1, sizeof *a->sets);
    if (!a->sets) return CAIRN_EXIT_RUNTIME;
    optind = 0;
    opterr = 0;
    int c;
    long v;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (c) {
        case OPT_SET: a->sets[a->n_sets++] = optarg; break;
        case OPT_RUN_DIR:
            if (!with_run_dir) return cmd_usage_error(usage, "unknown option '%s'", "--run-dir");
            a->run_dir = optarg;
            break;
        case OPT_RANKS:
            if (!with_ranks) return cmd_usage_error(usage, "unknown option '%s'", "--ranks");
            if (cmd_parse_int(optarg, 1, 1 << 24, &v))
                return cmd_usage_error(usage, "--ranks needs a positive integer, not '%s'", optarg);
            a->ranks = (int)v;
            break;
        case OPT_PER_NODE:
            if (usage != usage_print) return cmd_usage_error(usage, "unknown option '%s'", "--ranks-per-node");
            if (cmd_parse_int(optarg, 1, 1 << 24, &v))
                return cmd_usage_error(usage, "--ranks-per-node needs a positive integer, not '%s'",
                                   optarg);
            a->per_node = (int)v;
            break;
        case OPT_RESUME:
        case OPT_FORCE:
        case OPT_NO_REQUEUE:
            if (!with_run_dir) return cmd_usage_error(usage, "unknown option '%s'", argv[optind - 1]);
            if (c == OPT_FORCE)
                a->resume.force = true;
            else if (c == OPT_NO_REQUEUE)
                a->no_requeue = true;
            else if (parse_resume(optarg, &a->resume))
                return cmd_usage_error(usage, "--resume takes auto, latest, none or an epoch, not '%s'",
                                   optarg);
            break;
        case 'h': case OPT_HELP: a->help = true; break;
        default: return cmd_usage_error(usage, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (a->help) {
        fputs(usage, stdout);
        return CAIRN_EXIT_OK;
    }
    if (optind >= argc) return cmd_usage_error(usage, "%s", "missing job file");
    a->job = argv[optind++];
    if (optind < argc) return cmd_usage_error(usage, "unexpected argument '%s'", argv[optind]);
    if (a->resume.force && a->resume.mode != RESUME_NONE)
        return cmd_usage_error(usage, "%s", "--force goes with --resume=none");
    return -1;
}

/* ---- print and check -------------------------------------------------------- */

/* Load and plan a job for a command that needs no MPI. */
static int load_plan(const struct args *a, struct job **job, struct plan **plan,
                     struct diags *d)
{
    int rc = config_load(a->job, NULL, a->sets, a->n_sets, job, d);
    if (rc == 0) rc = plan_build(*job, a->ranks, plan, d);
    return rc;
}

static int print_placement(const struct plan *p, int per_node)
{
    struct strbuf b = {0};
    char(*hosts)[PLACEMENT_HOST_MAX] = placement_block(p, per_node);
    int rc = hosts ? placement_text(p, (const char(*)[PLACEMENT_HOST_MAX])hosts, "\n  ", &b)
                   : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    if (rc == 0)
        printf("\nplacement: %d node%s of %d rank%s, filled in turn\n  %s\n",
               (p->nranks + per_node - 1) / per_node, p->nranks > per_node ? "s" : "", per_node,
               per_node > 1 ? "s" : "", strbuf_str(&b));
    free(hosts);
    strbuf_free(&b);
    return rc;
}

static int cmd_print(int argc, char **argv)
{
    struct args a = {0};
    int code = parse_job_args(argc, argv, usage_print, true, false, &a);
    if (code >= 0) goto done;
    struct job *job = NULL;
    struct plan *plan = NULL;
    struct diags d = {0};
    int rc = load_plan(&a, &job, &plan, &d);
    if (rc == 0) rc = plan_print(plan, stdout);
    if (rc == 0 && a.per_node) rc = print_placement(plan, a.per_node);
    diags_print(&d, stderr);
    if (rc && d.n == 0) fprintf(stderr, "cairn: %s\n", cairn_errmsg());
    code = cairn_exit_code(rc);
    diags_free(&d);
    plan_destroy(&plan);
    job_destroy(&job);
done:
    free(a.sets);
    return code;
}

static int count_tasks(const struct plan *p)
{
    int n = 0;
    for (int i = 0; i < N_PHASES; i++) n += p->phases[i].n;
    return n;
}

static void check_summary(const struct args *a, const struct plan *p)
{
    int blobs = 0, persistent = 0;
    for (int i = 0; i < p->n_groups; i++) {
        blobs += p->groups[i].n_blobs;
        for (int b = 0; b < p->groups[i].n_blobs; b++) persistent += p->groups[i].blobs[b].persistent;
    }
    printf("%s: ok: %d rank%s, %d group%s, %d task%s, %d blob%s (%d checkpointed)\n", a->job,
           p->nranks, p->nranks == 1 ? "" : "s", p->n_groups, p->n_groups == 1 ? "" : "s",
           count_tasks(p), count_tasks(p) == 1 ? "" : "s", blobs, blobs == 1 ? "" : "s",
           persistent);
    if (p->nranks > p->used_ranks)
        fprintf(stderr, "%s: warning: %d ranks given but the groups use %d; the rest idle\n",
                a->job, p->nranks, p->used_ranks);
}

static int cmd_check(int argc, char **argv)
{
    struct args a = {0};
    int code = parse_job_args(argc, argv, usage_check, true, false, &a);
    if (code >= 0) goto done;
    struct job *job = NULL;
    struct plan *plan = NULL;
    struct diags d = {0};
    int rc = load_plan(&a, &job, &plan, &d);
    if (rc == 0) rc = analyze(plan, &d);
    diags_print(&d, stderr);
    if (rc && d.n == 0) fprintf(stderr, "cairn: %s\n", cairn_errmsg());
    if (rc == 0) check_summary(&a, plan);
    code = cairn_exit_code(rc);
    diags_free(&d);
    plan_destroy(&plan);
    job_destroy(&job);
done:
    free(a.sets);
    return code;
}

/* ---- run -------------------------------------------------------------------- */

/* Rank 0 reads the job file once and broadcasts it: N ranks opening one
 * file at once is a metadata storm on a parallel file system. */
static int share_job_text(MPI_Comm world, const char *path, char **text)
{
    int rc = 0, me = 0;
    char *buf = NULL;
    struct verdict {
        long long len; /* -1: rank 0 could not read it, for why */
        char why[1024];
    } v = {.len = -1};
    MPI_Comm_rank(world, &me);
    if (me == 0 && config_read_text(path, &buf, NULL) == 0) v.len = (long long)strlen(buf);
    if (me == 0 && v.len < 0) snprintf(v.why, sizeof v.why, "%s", cairn_errmsg());
    CAIRN_CHECK_MPI(MPI_Bcast(&v, (int)sizeof v, MPI_BYTE, 0, world));
    long long len = v.len;
    if (len < 0) CAIRN_FAIL(CAIRN_EINPUT, "%s: %s", path, v.why);
    if (me != 0) {
        buf = malloc((size_t)len + 1);
        CAIRN_CHECK_ALLOC(buf);
        buf[len] = '\0';
    }
    CAIRN_CHECK_MPI(MPI_Bcast(buf, (int)len, MPI_CHAR, 0, world));
    *text = buf;
    buf = NULL;
cleanup:
    free(buf);
    return rc;
}

static bool needs_lanes(const struct plan *p)
{
    for (int i = 0; i < p->n_groups; i++)
        if (p->groups[i].n_lanes > 1) return true;
    return false;
}

/* Everything before the runner: every rank reaches the same verdict. */
static int load_for_run(MPI_Comm world, const struct args *a, struct job **job,
                        struct plan **plan, struct diags *d, int threads)
{
    int rc = 0, size = 0;
    char *text = NULL;
    MPI_Comm_size(world, &size);
    CAIRN_CHECK(share_job_text(world, a->job, &text));
    CAIRN_CHECK(config_load(a->job, text, a->sets, a->n_sets, job, d));
    CAIRN_CHECK(plan_build(*job, size, plan, d));
    CAIRN_CHECK(analyze(*plan, d));
    if (threads < MPI_THREAD_MULTIPLE && needs_lanes(*plan))
        CAIRN_FAIL(CAIRN_EINPUT, "this MPI library lacks MPI_THREAD_MULTIPLE, which parallel "
                                 "steps need");
cleanup:
    free(text);
    return rc;
}

static int cmd_run(int argc, char **argv)
{
    struct args a = {0};
    int code = parse_job_args(argc, argv, usage_run, false, true, &a);
    if (code >= 0) {
        free(a.sets);
        return code;
    }
    int threads = 0, me = 0, rc;
    if (slurm_launch_check()) {
        free(a.sets);
        return CAIRN_EXIT_INPUT;
    }
    preempt_install(preempt_default_signals, PREEMPT_N_DEFAULT);
    /* A launcher that is torn down closes the ranks' stdout: a log line
     * written then must fail, not kill the rank (the log file keeps it). */
    signal(SIGPIPE, SIG_IGN);
    cmd_mpi_init(&argc, &argv, &threads);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    struct job *job = NULL;
    struct plan *plan = NULL;
    struct diags d = {0};
    int64_t epochs = 0;
    char run_dir[4096];
    rc = load_for_run(MPI_COMM_WORLD, &a, &job, &plan, &d, threads);
    if (rc == 0) {
        if (a.run_dir)
            snprintf(run_dir, sizeof run_dir, "%s", a.run_dir);
        else
            snprintf(run_dir, sizeof run_dir, "runs/%s", job->name);
        struct run_opts o = {.run_dir = run_dir, .resume = a.resume, .no_requeue = a.no_requeue};
        rc = runner_run(MPI_COMM_WORLD, plan, &o, &epochs);
    }
    if (rc && me == 0) {
        diags_print(&d, stderr);
        if (d.n == 0 && rc != CAIRN_EPREEMPTED) fprintf(stderr, "cairn: %s\n", cairn_errmsg()); /* it said that */
    }
    diags_free(&d);
    plan_destroy(&plan);
    job_destroy(&job);
    free(a.sets);
    MPI_Finalize();
    return cairn_exit_code(rc);
}

/* ---- ckpt ------------------------------------------------------------------- */

/* Both tiers, by position; a node-local checkpoint (checkpoint.local) is
 * named by its manifest, local/NAME. */
static int ckpt_ls(const char *dir)
{
    struct ckpt_index idx = {0}, local = {0};
    char ldir[4400];
    if (access(dir, F_OK) != 0) {
        fprintf(stderr, "cairn: %s: no such directory\n", dir);
        return CAIRN_EXIT_INPUT;
    }
    int rc = ckpt_index_read(dir, &idx);
    if (rc == 0) rc = fsx_join(ldir, sizeof ldir, dir, "local");
    if (rc == 0) rc = ckpt_index_read(ldir, &local);
    if (rc) {
        fprintf(stderr, "cairn: %s\n", cairn_errmsg());
        ckpt_index_free(&idx);
        return cairn_exit_code(rc);
    }
    for (int i = 0, j = 0; i < idx.n || j < local.n;) {
        bool take_local = j < local.n && (i == idx.n || local.v[j].epoch < idx.v[i].epoch ||
                                          (local.v[j].epoch == idx.v[i].epoch && local.v[j].step < idx.v[i].step));
        const struct ckpt_entry *e = take_local ? &local.v[j++] : &idx.v[i++];
        char file[4 * sizeof e->file]; /* the index is untrusted: its names must not drive the terminal */
        cairn_escape(file, sizeof file, e->file);
        printf("%lld\t%lld\t%s%s\t%lld\t%s\n", (long long)e->epoch, (long long)e->step,
               take_local ? "local/" : "", file, (long long)e->bytes, e->ok ? "ok" : "bad");
    }
    ckpt_index_free(&idx);
    ckpt_index_free(&local);
    return CAIRN_EXIT_OK;
}

/* The job `verify --job` names: its plan, analyzed. */
static int job_plan(const struct args *a, struct job **job, struct plan **plan)
{
    struct diags d = {0};
    int rc = load_plan(a, job, plan, &d);
    if (rc == 0) rc = analyze(*plan, &d);
    diags_print(&d, stderr);
    if (rc && d.n == 0) fprintf(stderr, "cairn: %s\n", cairn_errmsg());
    diags_free(&d);
    return rc;
}

/* verify FILE [--job JOB.cfg [--set K=V]... [--ranks N]]: exit 0 only for
 * a file the loader accepts (for that job), 1 if damaged, 2 if of another
 * format or job. */
static int ckpt_verify(int argc, char **argv)
{
    struct args a = {0};
    struct job *job = NULL;
    struct plan *plan = NULL;
    const char *file = argc > 1 ? argv[1] : NULL;
    int code = CAIRN_EXIT_INPUT, rc = 0;
    if (!file || file[0] == '-') return cmd_usage_error(usage_ckpt, "%s", "verify needs FILE");
    if (argc > 2) { /* the rest is a job's arguments, --job JOB.cfg naming the job */
        char **rest = calloc((size_t)argc, sizeof *rest);
        int n = 0;
        bool named = false;
        if (!rest) return CAIRN_EXIT_RUNTIME;
        rest[n++] = argv[0];
        for (int i = 2; i < argc; i++)
            if (strcmp(argv[i], "--job") == 0) named = true;
            else rest[n++] = argv[i];
        code = named ? parse_job_args(n, rest, usage_ckpt, true, false, &a)
                   : cmd_usage_error(usage_ckpt, "%s", "verify takes FILE, then --job JOB.cfg");
        free(rest);
        if (code >= 0) goto done;
        if ((rc = job_plan(&a, &job, &plan))) {
            code = cairn_exit_code(rc);
            goto done;
        }
    }
    rc = ckpt_tier_of(file)->verify(file, plan, stdout);
    if (rc == CAIRN_ECORRUPT)
        printf("%s: damaged: %s\n", file, cairn_errmsg());
    else if (rc)
        fprintf(stderr, "cairn: %s\n", cairn_errmsg());
    else
        printf("%s: ok\n", file);
    code = rc == 0 ? 0 : rc == CAIRN_ECORRUPT ? 1 : cairn_exit_code(rc);
done:
    plan_destroy(&plan);
    job_destroy(&job);
    free(a.sets);
    return code;
}

/* The committed checkpoint of `epoch` (< 0: the newest) in either of
 * DIR's tiers; the node-local one where it is newer or alone.  Neither:
 * both tiers' "no such checkpoint" (a damaged index is named). */
static int locate_any(const char *dir, long epoch, struct ckpt_entry *e, char *path, size_t size)
{
    char local[4400], lpath[4400], why[2048], index[4400];
    struct ckpt_entry le;
    int rc = ckpt_index_locate(dir, epoch, e, path, size);
    snprintf(why, sizeof why, "%s", rc ? cairn_errmsg() : "");
    if (rc && rc != CAIRN_ENOCKPT) return rc;
    int lrc = fsx_join(local, sizeof local, dir, "local");
    if (lrc == 0) lrc = fsx_join(index, sizeof index, local, "index");
    if (lrc || access(index, F_OK) != 0) return rc ? cairn_err_set(rc, __FILE__, __LINE__, "%s", why) : 0;
    lrc = ckpt_index_locate(local, epoch, &le, lpath, sizeof lpath);
    if (lrc && (lrc != CAIRN_ENOCKPT || rc)) /* both lack it, or the node-local index is damaged */
        return rc ? cairn_err_set(rc, __FILE__, __LINE__, "%s; node-local: %s", why, cairn_errmsg()) : lrc;
    if (lrc || (rc == 0 && (e->epoch > le.epoch || (e->epoch == le.epoch && e->step >= le.step)))) return 0;
    *e = le;
    snprintf(path, size, "%s", lpath);
    if (snprintf(e->file, sizeof e->file, "local/%s", le.file) >= (int)sizeof e->file) e->file[0] = '\0';
    return 0;
}

static int ckpt_extract(int argc, char **argv)
{
    static const struct option longs[] = {
        {"epoch", required_argument, NULL, 'e'}, {"blob", required_argument, NULL, 'b'},
        {"out", required_argument, NULL, 'o'},   {NULL, 0, NULL, 0},
    };
    const char **blobs = calloc((size_t)argc + 1, sizeof *blobs), *out = NULL;
    long epoch = -1;
    int n = 0, c, code = CAIRN_EXIT_OK;
    if (!blobs) return CAIRN_EXIT_RUNTIME;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "e:b:o:", longs, NULL)) != -1) {
        if (c == 'e' && cmd_parse_int(optarg, 0, 1L << 40, &epoch) == 0) continue;
        if (c == 'b') blobs[n++] = optarg;
        else if (c == 'o') out = optarg;
        else {
            code = cmd_usage_error(usage_ckpt, "bad option '%s'", argv[optind - 1]);
            goto done;
        }
    }
    if (optind < argc - 1 && n > 0) { /* "--blob a b": b is no DIR */
        code = cmd_usage_error(usage_ckpt, "unexpected argument '%s': each blob needs its own --blob "
                                       "(--blob GROUP/A --blob GROUP/B)", argv[optind + 1]);
        goto done;
    }
    if (optind != argc - 1 || !out || n == 0) {
        code = cmd_usage_error(usage_ckpt, "%s", "extract needs DIR, --blob GROUP/BLOB (once per blob) and -o OUT.h5");
        goto done;
    }
    struct ckpt_entry e;
    char path[4400];
    int rc = locate_any(argv[optind], epoch, &e, path, sizeof path);
    if (rc == 0) rc = ckpt_tier_of(path)->extract(path, blobs, n, out);
    if (rc) fprintf(stderr, "cairn: %s\n", cairn_errmsg());
    else printf("%s: %d blob%s of epoch %lld (%s)\n", out, n, n == 1 ? "" : "s", (long long)e.epoch, e.file);
    code = cairn_exit_code(rc);
done:
    free(blobs);
    return code;
}

static int cmd_ckpt(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_ckpt, argc < 2 ? stderr : stdout);
        return argc < 2 ? CAIRN_EXIT_INPUT : CAIRN_EXIT_OK;
    }
    if (strcmp(argv[1], "ls") == 0 && argc == 3) return ckpt_ls(argv[2]);
    if (strcmp(argv[1], "verify") == 0) return ckpt_verify(argc - 1, argv + 1);
    if (strcmp(argv[1], "extract") == 0) return ckpt_extract(argc - 1, argv + 1);
    return cmd_usage_error(usage_ckpt, "bad arguments for '%s'", argv[1]);
}

/* ---- data ------------------------------------------------------------------- */

/* --table NAME:ROWS:K, checked against the others already given. */
static int parse_table(const char *arg, struct datagen_spec *g)
{
    struct datagen_table *t = &g->tables[g->n_tables];
    const char *rows = strchr(arg, ':'), *k = rows ? strchr(rows + 1, ':') : NULL;
    char num[32];
    long r, n;
    if (g->n_tables == DATAGEN_MAX_TABLES) return cmd_usage_error(usage_text(true), "more than 8 tables ('--table %s')", arg);
    if (!rows || !k || rows == arg || (size_t)(rows - arg) >= sizeof t->name || (size_t)(k - rows) > sizeof num)
        goto bad;
    snprintf(num, (size_t)(k - rows), "%s", rows + 1);
    if (cmd_parse_int(num, 1, 1L << 40, &r) || cmd_parse_int(k + 1, 1, DATAGEN_MAX_BAG, &n)) goto bad;
    snprintf(t->name, (size_t)(rows - arg) + 1, "%s", arg);
    if (strcmp(t->name, "features") == 0 || strcmp(t->name, "labels") == 0)
        return cmd_usage_error(usage_text(true), "table dataset '%s' would replace the features or labels", t->name);
    for (int i = 0; i < g->n_tables; i++)
        if (strcmp(g->tables[i].name, t->name) == 0)
            return cmd_usage_error(usage_text(true), "table '%s' given twice", t->name);
    t->rows = r;
    t->k = n;
    g->n_tables++;
    return 0;
bad:
    return cmd_usage_error(usage_text(true),
                       "'--table %s' needs NAME:ROWS:K (a name of at most 63 characters, ROWS from 1 to "
                       "2^40, K ids per sample from 1 to 64)",
                       arg);
}

static int data_synth(int argc, char **argv)
{
    static const struct option longs[] = {
        {"out", required_argument, NULL, 'o'},     {"samples", required_argument, NULL, 'n'},
        {"features", required_argument, NULL, 'd'}, {"classes", required_argument, NULL, 'k'},
        {"hidden", required_argument, NULL, 'H'},   {"seed", required_argument, NULL, 's'},
        {"table", required_argument, NULL, 't'},    {"zipf", required_argument, NULL, 'z'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL;
    long n = -1, d = -1, k = -1, h = 32, seed = 0, *dst;
    struct datagen_spec g = {.zipf = 1.1};
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:", longs, NULL)) != -1) {
        if (c == 'o') {
            out = optarg;
            continue;
        }
        if (c == 't') {
            if (parse_table(optarg, &g)) return CAIRN_EXIT_INPUT;
            continue;
        }
        if (c == 'z') {
            char *end;
            g.zipf = strtod(optarg, &end);
            if (!*optarg || *end || !(g.zipf > 0 && g.zipf <= 10))
                return cmd_usage_error(usage_text(true), "'--zipf %s' needs an exponent above 0, at most 10", optarg);
            continue;
        }
        dst = c == 'n' ? &n : c == 'd' ? &d : c == 'k' ? &k : c == 'H' ? &h : c == 's' ? &seed : NULL;
        if (!dst) return cmd_usage_error(usage_text(true), "bad option '%s'", argv[optind - 1]);
        if (cmd_parse_int(optarg, c == 's' ? 0 : 1, 1L << 40, dst))
            return cmd_usage_error(usage_text(true), "'%s' needs a positive integer", argv[optind - 2 >= 0 ? optind - 2 : 0]);
    }
    if (!out || n < 1 || d < 1 || k < 2)
        return cmd_usage_error(usage_text(true), "%s", "synth needs --out, --samples, --features and --classes (>= 2)");
    g.samples = n, g.features = d, g.classes = k, g.hidden = h, g.seed = seed;
    int me = 0, threads = 0;
    if (slurm_launch_check()) return CAIRN_EXIT_INPUT;
    cmd_mpi_init(&argc, &argv, &threads);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int rc = datagen_synth(MPI_COMM_WORLD, out, &g);
    if (rc && me == 0) fprintf(stderr, "cairn: %s: %s\n", out, cairn_errmsg());
    if (rc == 0 && me == 0) {
        printf("%s: %ld samples, %ld features, %ld classes (seed %ld)", out, n, d, k, seed);
        for (int i = 0; i < g.n_tables; i++)
            printf("%s ids '%s' of %lld rows, up to %lld per sample", i ? ";" : ", Zipf", g.tables[i].name,
                   (long long)g.tables[i].rows, (long long)g.tables[i].k);
        printf("\n");
    }
    MPI_Finalize();
    return cairn_exit_code(rc);
}

static int data_text(int argc, char **argv)
{
    static const struct option longs[] = {
        {"out", required_argument, NULL, 'o'}, {"context", required_argument, NULL, 'c'}, {NULL, 0, NULL, 0},
    };
    const char *out = NULL;
    long ctx = -1;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        if (c == 'o') out = optarg;
        else if (c == 'c') {
            if (cmd_parse_int(optarg, 1, 1L << 16, &ctx))
                return cmd_usage_error(usage_text(true), "--context needs an integer from 1 to 65536, not '%s'", optarg);
        } else return cmd_usage_error(usage_text(true), "bad option '%s'", argv[optind - 1]);
    }
    if (!out || ctx < 1 || optind >= argc)
        return cmd_usage_error(usage_text(true), "%s", "text needs --out, --context and at least one FILE");
    int64_t n = 0;
    int me = 0, threads = 0;
    if (slurm_launch_check()) return CAIRN_EXIT_INPUT;
    cmd_mpi_init(&argc, &argv, &threads);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int rc = datagen_text(MPI_COMM_WORLD, out, (const char *const *)argv + optind, argc - optind, ctx, &n);
    if (rc && me == 0) fprintf(stderr, "cairn: data text: %s\n", cairn_errmsg());
    if (rc == 0 && me == 0)
        printf("%s: %lld windows of %ld byte tokens (features) and their next tokens (labels)\n", out,
               (long long)n, ctx);
    MPI_Finalize();
    return cairn_exit_code(rc);
}

static int cmd_data(int argc, char **argv)
{
    static const struct option longs[] = {
        {"out", required_argument, NULL, 'o'}, {"count", required_argument, NULL, 'n'},
        {"start", required_argument, NULL, 's'}, {"dataset", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_text(true), argc < 2 ? stderr : stdout);
        return argc < 2 ? CAIRN_EXIT_INPUT : CAIRN_EXIT_OK;
    }
    char sub[128];
    snprintf(sub, sizeof sub, "data %s", argv[1]);
    const struct ext_command *x = strchr(argv[1], ' ') ? NULL : ext_command(sub);
    if (x) return x->run(argc - 1, argv + 1);
    if (strcmp(argv[1], "synth") == 0) return data_synth(argc - 1, argv + 1);
    if (strcmp(argv[1], "text") == 0) return data_text(argc - 1, argv + 1);
    if (strcmp(argv[1], "import") == 0) return cli_data_import(argc - 1, argv + 1);
    if (strcmp(argv[1], "range") != 0)
        return cmd_usage_error(usage_text(true), "unknown data set kind '%s'", argv[1]);
    const char *out = NULL, *dataset = "values";
    long count = -1, start = 0;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc - 1, argv + 1, "+o:n:s:d:h", longs, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'd': dataset = optarg; break;
        case 'n':
            if (cmd_parse_int(optarg, 0, 1L << 40, &count))
                return cmd_usage_error(usage_text(true), "--count needs an integer >= 0, not '%s'", optarg);
            break;
        case 's':
            if (cmd_parse_int(optarg, -(1L << 40), 1L << 40, &start))
                return cmd_usage_error(usage_text(true), "--start needs an integer, not '%s'", optarg);
            break;
        case 'h': fputs(usage_text(true), stdout); return CAIRN_EXIT_OK;
        default: return cmd_usage_error(usage_text(true), "unknown option '%s'", argv[optind]); /* argv+1 shifted: argv[optind] is the option */
        }
    }
    if (!out || count < 0) return cmd_usage_error(usage_text(true), "%s", "range needs --out and --count");
    int rc = datagen_range(out, dataset, start, count);
    if (rc) fprintf(stderr, "cairn: %s: %s\n", out, cairn_errmsg());
    return cairn_exit_code(rc);
}

/* ---- bench ---------------------------------------------------------------------- */

static int cmd_bench(int argc, char **argv)
{
    static const char usage[] =
        "usage: cairn bench sgemm [N]\n"
        "\n"
        "GFLOP/s of one thread's OpenBLAS sgemm on N x N matrices (default 1024),\n"
        "the best of 5: the BLAS-bound limit the training benchmark compares with.\n";
    long n = 1024;
    if (argc < 2 || strcmp(argv[1], "sgemm") != 0)
        return argc > 1 && strcmp(argv[1], "--help") == 0 ? (fputs(usage, stdout), 0)
                                                          : cmd_usage_error(usage, "%s", "which benchmark?");
    if (argc > 2 && cmd_parse_int(argv[2], 16, 16384, &n)) return cmd_usage_error(usage, "bad N '%s'", argv[2]);
    double gflops = 0;
    int rc = nn_sgemm_gflops((int)n, 5, &gflops);
    if (rc) {
        fprintf(stderr, "cairn: %s\n", cairn_errmsg());
        return cairn_exit_code(rc);
    }
    printf("sgemm %ld: %.2f GFLOP/s\n", n, gflops);
    return 0;
}

/* ---- ops ------------------------------------------------------------------------ */

static const char *ptype_name(enum ptype t)
{
    static const char *const names[] = {"integer", "number", "string", "boolean",
                                        "integer array", "name list", "choice"};
    return names[t];
}

static void print_arity(const char *what, int lo, int hi)
{
    if (lo == hi)
        printf("%d %s%s", lo, what, lo == 1 ? "" : "s");
    else if (hi < 0)
        printf("%d+ %ss", lo, what);
    else
        printf("%d-%d %ss", lo, hi, what);
}

static int cmd_ops(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        puts("usage: cairn ops\n\nList every op a job file can use, its inputs, outputs and "
             "parameters.");
        return CAIRN_EXIT_OK;
    }
    int n;
    const struct op_def *const *all = op_all(&n);
    for (int i = 0; i < n; i++) {
        const struct op_def *d = all[i];
        if (d->flags & OPF_INTERNAL) continue;
        printf("%s: %s\n  ", d->name, d->summary);
        print_arity("input", d->min_in, d->max_in);
        printf(", ");
        print_arity("output", d->min_out, d->max_out);
        printf("%s\n", d->flags & OPF_COLLECTIVE ? ", collective over the group" : "");
        for (int k = 0; d->params && d->params[k].key; k++) {
            const struct param_def *p = &d->params[k];
            printf("  %s (%s", p->key, p->type == PT_ENUM ? p->choices : ptype_name(p->type));
            if (p->dflt)
                printf(", default %s", p->dflt);
            else
                printf(", required");
            printf("): %s\n", p->doc);
        }
    }
    return CAIRN_EXIT_OK;
}

/* ---- entry ---------------------------------------------------------------------- */

int cairn_main(int argc, char **argv)
{
    /* Large temporaries (ScaLAPACK's packing buffers, HDF5's) come from a
     * heap that keeps them, instead of fresh mappings to fault in each time. */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    if (argc < 2) {
        fputs(usage_text(false), stderr);
        return CAIRN_EXIT_INPUT;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage_text(false), stdout);
        return CAIRN_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        struct blas_kernel k;
        struct strbuf b = {0};
        blas_kernel_get(&k); /* this node's: a run's ranks should all show the same */
        blas_kernel_name(&k, &b);
        printf("cairn %s\nBLAS kernel: %s\n", CAIRN_VERSION, strbuf_str(&b));
        strbuf_free(&b);
        return CAIRN_EXIT_OK;
    }
    if (strcmp(cmd, "run") == 0) return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "print") == 0) return cmd_print(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0) return cmd_check(argc - 1, argv + 1);
    if (strcmp(cmd, "data") == 0) return cmd_data(argc - 1, argv + 1);
    if (strcmp(cmd, "ops") == 0) return cmd_ops(argc - 1, argv + 1);
    if (strcmp(cmd, "ckpt") == 0) return cmd_ckpt(argc - 1, argv + 1);
    if (strcmp(cmd, "plot") == 0) return cli_plot(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0) return cmd_bench(argc - 1, argv + 1);
    const struct ext_command *x = strchr(cmd, ' ') ? NULL : ext_command(cmd);
    if (x) return x->run(argc - 1, argv + 1);
    return cmd_usage_error(usage_text(false), "unknown command '%s'", cmd);
}
