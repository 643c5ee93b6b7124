/* `cairn data import`: its options (see doc/cairn.1). */
#include "cli_priv.h"

#include "cairn/cmdline.h"
#include "cairn/dataimport.h"
#include "cairn/error.h"
#include "cairn/slurm.h"
#include "cairn/strbuf.h"

#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_import_usage[] =
    "usage: [mpirun -np N] cairn data import --out FILE.h5 [--format csv|tsv|criteo|npy]\n"
    "           [--no-header | --columns NAME,...] [--label COL | --target COLS]\n"
    "           [--features COLS] [--skip COLS] [--ids NAME=COLS]... [--hash NAME=COLS:ROWS]...\n"
    "           [--fill V] [--log1p] [--rows R] [--seed S] [--empty-id ID]\n"
    "           [--skip-bad N] [--progress SECONDS] INPUT...\n"
    "  import  users' data: CSV or TSV (RFC 4180 quoting; the first line names the\n"
    "          columns unless --no-header or --columns) into features [N, F] (f32),\n"
    "          labels [N] (i32 classes; --target: f32 [N, T]) and ids datasets\n"
    "          [N] or [N, k] (i64; --hash: any text hashed into ROWS rows); COLS is\n"
    "          a list of names or numbers from 1 (\"a,b,4,7-9\").  criteo: the\n"
    "          click-log layout (label, 13 integer features, 26 categorical columns\n"
    "          hashed into ids C1 to C26 of --rows R rows each, default 1048576).\n"
    "          npy: NAME=FILE.npy, FILE.npy or FILE.npz, one dataset per array name,\n"
    "          arrays of one name joined along axis 0.  Several inputs join in the\n"
    "          order given.  A bad record is exit 2 with FILE:LINE:COLUMN, unless\n"
    "          --skip-bad N allows N of them; under mpirun each rank parses a range\n"
    "          of the bytes, and the file is the same on any number of ranks\n";

static int bad(const char *fmt, const char *arg)
{
    return cmd_usage_error(cli_import_usage, fmt, arg);
}

/* NAME=COLS or NAME=COLS:ROWS into the next ids dataset. */
static int add_ids(struct import_spec *s, char *arg, bool hash)
{
    char *eq = strchr(arg, '='), *colon = hash ? strrchr(arg, ':') : NULL;
    long rows = 0;
    if (s->n_ids == IMPORT_MAX_IDS) return bad("more than 32 ids datasets ('%s')", arg);
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof s->ids[0].name || !eq[1] || (hash && (!colon || colon < eq)))
        return bad(hash ? "'--hash %s' needs NAME=COLS:ROWS" : "'--ids %s' needs NAME=COLS", arg);
    if (hash && (*colon = 0, cmd_parse_int(colon + 1, 1, 1L << 40, &rows)))
        return bad("'--hash %s': ROWS must be from 1 to 2^40", arg);
    struct import_ids *d = &s->ids[s->n_ids];
    snprintf(d->name, sizeof d->name, "%.*s", (int)(eq - arg), arg);
    if (strcmp(d->name, "features") == 0 || strcmp(d->name, "labels") == 0)
        return bad("ids dataset '%s' would replace the features or labels", d->name);
    for (int i = 0; i < s->n_ids; i++)
        if (strcmp(s->ids[i].name, d->name) == 0) return bad("ids dataset '%s' given twice", d->name);
    d->columns = eq + 1;
    d->rows = rows;
    s->n_ids++;
    return 0;
}

/* The Criteo click-log layout: label, I1..I13, C1..C26, tab-separated. */
static int criteo(struct import_spec *s, long rows)
{
    static char names[400];
    char *p = names;
    p += sprintf(p, "label");
    for (int i = 1; i <= 13; i++) p += sprintf(p, ",I%d", i);
    for (int i = 1; i <= 26; i++) p += sprintf(p, ",C%d", i);
    if (s->label || s->features || s->skip || s->n_ids || s->names)
        return bad("%s", "--format criteo fixes the columns (no --label, --target, --features, --skip, --ids, --hash or --columns)");
    s->names = names, s->header = false, s->delim = '\t';
    s->label = "label", s->features = "I1,I2,I3,I4,I5,I6,I7,I8,I9,I10,I11,I12,I13";
    if (!s->fill_set) s->fill_set = true, s->fill = 0; /* missing counts are zero, as DLRM reads them */
    for (int i = 0; i < 26; i++) {
        struct import_ids *d = &s->ids[s->n_ids++];
        snprintf(d->name, sizeof d->name, "C%d", i + 1);
        d->columns = d->name, d->rows = rows; /* the column of that name */
    }
    return 0;
}

static const char *format_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot) return NULL;
    if (strcmp(dot, ".csv") == 0) return "csv";
    if (strcmp(dot, ".tsv") == 0 || strcmp(dot, ".txt") == 0) return "tsv";
    if (strcmp(dot, ".npy") == 0 || strcmp(dot, ".npz") == 0) return "npy";
    return NULL;
}

/* The options that take a number. */
static int number_opt(struct import_spec *s, int c, const char *arg, long *rows)
{
    long v;
    char *end;
    switch (c) {
    case 'f':
        s->fill = strtod(arg, &end);
        if (!*arg || *end || !(fabs(s->fill) <= FLT_MAX)) return bad("--fill needs a number within f32's range, not '%s'", arg);
        s->fill_set = true;
        return 0;
    case 'r':
        if (cmd_parse_int(arg, 1, 1L << 40, rows)) return bad("--rows needs a number from 1 to 2^40, not '%s'", arg);
        return 0;
    case 'S':
        if (cmd_parse_int(arg, 0, 1L << 62, &v)) return bad("--seed needs an integer >= 0, not '%s'", arg);
        s->seed = (uint64_t)v;
        return 0;
    case 'e':
        if (cmd_parse_int(arg, -1, 1L << 40, &v)) return bad("--empty-id needs -1 or a row, not '%s'", arg);
        s->empty_id = v;
        return 0;
    case 'b':
        if (cmd_parse_int(arg, 0, 1L << 62, &v)) return bad("--skip-bad needs an integer >= 0, not '%s'", arg);
        s->skip_bad = v;
        return 0;
    case 'p':
        s->progress = strtod(arg, &end);
        if (!*arg || *end || !(s->progress >= 0 && s->progress <= 86400))
            return bad("--progress needs seconds from 0 to 86400, not '%s'", arg);
        return 0;
    }
    return bad("bad option '%s'", arg);
}

/* The command line as the file records it. */
static char *command_line(int argc, char **argv)
{
    struct strbuf b = {0};
    strbuf_add(&b, "cairn data");
    for (int i = 0; i < argc; i++) strbuf_addf(&b, " %s", argv[i]);
    char *s = strbuf_finish(&b) ? NULL : strdup(strbuf_str(&b));
    strbuf_free(&b);
    return s;
}

/* Options that do not go together, or not with the format: seen holds
 * each option's letter as given. */
static int conflicts(const struct option *longs, const char *seen, const char *format)
{
    bool npy = strcmp(format, "npy") == 0, criteo = strcmp(format, "criteo") == 0;
    if (strchr(seen, 'l') && strchr(seen, 't')) return bad("%s", "--label and --target exclude each other");
    if (strchr(seen, 'x') && strchr(seen, 'k'))
        return bad("%s", "--skip leaves columns out of the default features; with --features, leave them out of its list");
    if (strchr(seen, 'r') && !criteo) return bad("%s", "--rows is for --format criteo (--hash NAME=COLS:ROWS elsewhere)");
    for (const struct option *o = longs; npy && o->name; o++)
        if (strchr("nclxkihfLbSe", o->val) && strchr(seen, o->val))
            return bad("--%s is for CSV and TSV, not NumPy arrays", o->name);
    return 0;
}

static int run(struct import_spec *s, const char *format, int argc, char **argv)
{
    struct import_result r = {0};
    int me = 0, threads = 0;
    if (slurm_launch_check()) return CAIRN_EXIT_INPUT;
    cmd_mpi_init(&argc, &argv, &threads);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    double t0 = MPI_Wtime();
    int rc = strcmp(format, "npy") == 0 ? import_numpy(MPI_COMM_WORLD, s, &r) : import_text(MPI_COMM_WORLD, s, &r);
    double dt = MPI_Wtime() - t0;
    if (rc && me == 0) fprintf(stderr, "cairn: data import: %s\n", cairn_errmsg());
    if (rc == 0 && me == 0) {
        printf("%s: %lld rows from %d %s file%s (%.1f MB)", s->out, (long long)r.rows, s->n_inputs, format,
               s->n_inputs == 1 ? "" : "s", (double)r.bytes / 1e6);
        printf(" in %.2f s (%.1f MB/s on %d rank%s)", dt, (double)r.bytes / 1e6 / (dt > 0 ? dt : 1e-9), ranks,
               ranks == 1 ? "" : "s");
        if (r.skipped) printf("; %lld bad records skipped", (long long)r.skipped);
        printf("\n");
    }
    MPI_Finalize();
    return cairn_exit_code(rc);
}

int cli_data_import(int argc, char **argv)
{
    static const struct option longs[] = {
        {"out", required_argument, NULL, 'o'},      {"format", required_argument, NULL, 'F'},
        {"no-header", no_argument, NULL, 'n'},      {"columns", required_argument, NULL, 'c'},
        {"label", required_argument, NULL, 'l'},    {"target", required_argument, NULL, 't'},
        {"features", required_argument, NULL, 'x'}, {"skip", required_argument, NULL, 'k'},
        {"ids", required_argument, NULL, 'i'},      {"hash", required_argument, NULL, 'h'},
        {"fill", required_argument, NULL, 'f'},     {"log1p", no_argument, NULL, 'L'},
        {"rows", required_argument, NULL, 'r'},     {"seed", required_argument, NULL, 'S'},
        {"empty-id", required_argument, NULL, 'e'}, {"skip-bad", required_argument, NULL, 'b'},
        {"progress", required_argument, NULL, 'p'}, {NULL, 0, NULL, 0},
    };
    struct import_spec s = {.delim = ',', .header = true, .empty_id = -1, .progress = 10};
    const char *format = NULL;
    long rows = 1L << 20;
    int c, rc, n_seen = 0;
    char *cmd = command_line(argc, argv), seen[64] = "";
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        if (c != '?' && n_seen < (int)sizeof seen - 1 && !strchr(seen, c)) seen[n_seen++] = (char)c;
        switch (c) {
        case 'o': s.out = optarg; break;
        case 'F': format = optarg; break;
        case 'n': s.header = false; break;
        case 'c': s.names = optarg, s.header = false; break;
        case 'l': s.label = optarg, s.target = false; break;
        case 't': s.label = optarg, s.target = true; break;
        case 'x': s.features = optarg; break;
        case 'k': s.skip = optarg; break;
        case 'i':
        case 'h':
            if ((rc = add_ids(&s, optarg, c == 'h'))) goto done;
            break;
        case 'L': s.log1p = true; break;
        default:
            if (c == '?') {
                rc = bad("bad option '%s'", argv[optind - 1]);
                goto done;
            }
            if ((rc = number_opt(&s, c, optarg, &rows))) goto done;
        }
    }
    s.inputs = (const char *const *)argv + optind, s.n_inputs = argc - optind, s.command = cmd;
    rc = CAIRN_EXIT_INPUT;
    if (!s.out || s.n_inputs < 1) {
        rc = bad("%s", "import needs --out and at least one INPUT");
        goto done;
    }
    if (!format && !(format = format_of(s.inputs[0]))) {
        rc = bad("cannot tell the format of '%s' from its name; give --format", s.inputs[0]);
        goto done;
    }
    if ((rc = conflicts(longs, seen, format))) goto done;
    if (strcmp(format, "tsv") == 0) s.delim = '\t';
    else if (strcmp(format, "criteo") == 0) {
        if ((rc = criteo(&s, rows))) goto done;
    } else if (strcmp(format, "csv") != 0 && strcmp(format, "npy") != 0) {
        rc = bad("--format must be csv, tsv, criteo or npy, not '%s'", format);
        goto done;
    }
    for (int i = 0; i < s.n_ids; i++)
        if (s.ids[i].rows && s.empty_id >= s.ids[i].rows) {
            rc = bad("--empty-id must be below the ids' rows ('%s')", s.ids[i].name);
            goto done;
        }
    rc = run(&s, format, argc, argv);
done:
    free(cmd);
    return rc;
}
