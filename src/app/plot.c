/* cairn plot: loss, accuracy, samples/s and checkpoint seconds per epoch
 * from the metrics.jsonl of one or more run directories, drawn by gnuplot
 * into one PNG (the runs overlaid and labelled: a sweep). */
#include "cli_priv.h"

#include "cairn/cmdline.h"

#include "cairn/error.h"
#include "cairn/fsx.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage_plot[] =
    "usage: cairn plot RUN_DIR... -o FILE.png [--size WIDTHxHEIGHT]\n"
    "\n"
    "Draw the held-out and training loss, the accuracy, the samples per second\n"
    "and the checkpoint seconds of every epoch in each RUN_DIR/metrics.jsonl\n"
    "into FILE.png (default size 1200x900), the runs overlaid and labelled by\n"
    "their directory.  Needs gnuplot.  RUN_DIR/metrics.jsonl must be a regular\n"
    "file.  A malformed metrics row is skipped with a warning, and so is a value\n"
    "that is not a finite number (NaN, Infinity, 1e400); null (how cairn logs a\n"
    "NaN or infinite loss) leaves a gap.\n";

enum { MAX_RUNS = 32, MAX_EPOCH = 100000, MAX_LINE = 1 << 16 };
enum { F_LOSS, F_TRAIN_LOSS, F_ACCURACY, F_RATE, F_CKPT, N_FIELDS };

struct run {
    const char *dir;
    int64_t n;    /* epochs 1..n have a slot */
    int64_t last; /* the last epoch with a row */
    double *v;  /* [n][N_FIELDS], NaN: not logged */
};

/* The value after "key": in a JSON line (cairn writes flat objects). */
enum num { NUM_ABSENT, NUM_NULL, NUM_OK, NUM_BAD };

/* NUM_OK: *v is a finite number.  NUM_NULL: null, which cairn logs for a
 * NaN or infinite value (a diverged loss): a gap in the plot.  NUM_BAD:
 * anything else, e.g. NaN, Infinity or 1e400 (which strtod would take as
 * NaN or infinity, none of them JSON), for a warning. */
static enum num number(const char *line, const char *key, double *v)
{
    char pat[64], *end;
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return NUM_ABSENT;
    p += strlen(pat);
    if (strncmp(p, "null", 4) == 0 && (p[4] == ',' || p[4] == '}')) return NUM_NULL;
    *v = strtod(p, &end);
    return end != p && (*end == ',' || *end == '}') && isfinite(*v) ? NUM_OK : NUM_BAD;
}

/* The keys of a row's values left out (a row has at most three). */
struct bad_keys {
    const char *key[4];
    int n;
};

/* A plotted value of a row: *out if it is a number; a key whose value is
 * not (nor null) is added to bad, for read_run's warning. */
static bool value(const char *line, const char *key, double *out, struct bad_keys *bad)
{
    double x;
    enum num n = number(line, key, &x);
    if (n == NUM_BAD && bad->n < 4) bad->key[bad->n++] = key;
    if (n == NUM_OK) *out = x;
    return n == NUM_OK;
}

static bool is_kind(const char *line, const char *kind)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"kind\":\"%s\"", kind);
    return strstr(line, pat) != NULL;
}

static int slot(struct run *r, int64_t epoch, double **out)
{
    if (epoch > r->n) {
        int64_t n = epoch + 16;
        double *v = realloc(r->v, (size_t)n * N_FIELDS * sizeof *v);
        if (!v) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
        for (int64_t i = r->n * N_FIELDS; i < n * N_FIELDS; i++) v[i] = NAN;
        r->v = v;
        r->n = n;
    }
    if (epoch > r->last) r->last = epoch;
    *out = r->v + (epoch - 1) * N_FIELDS;
    return 0;
}

/* One metrics row into its epoch's slot (a later row of an epoch, after a
 * restart, replaces an earlier one).  *ok false: malformed; bad: the keys
 * of values left out for not being finite numbers. */
static int take_row(struct run *r, const char *line, bool *ok, struct bad_keys *bad)
{
    double e, x, y, *v = NULL;
    size_t len = strlen(line);
    bad->n = 0;
    *ok = len >= 2 && line[0] == '{' && line[len - 1] == '}' && number(line, "epoch", &e) == NUM_OK &&
          e == floor(e) && e >= 0 && e <= MAX_EPOCH;
    if (!*ok || e < 1) return 0; /* epoch 0: before the first */
    if (is_kind(line, "log")) {
        int rc = slot(r, (int64_t)e, &v);
        if (rc) return rc;
        value(line, "loss", &v[F_LOSS], bad);
        value(line, "train_loss", &v[F_TRAIN_LOSS], bad);
        value(line, "accuracy", &v[F_ACCURACY], bad);
    } else if (is_kind(line, "epoch")) {
        bool have = value(line, "samples", &x, bad), secs = value(line, "train_seconds", &y, bad);
        if (!have || !secs) return 0;
        int rc = slot(r, (int64_t)e, &v);
        if (rc) return rc;
        if (y > 0) v[F_RATE] = x / y;
    } else if (is_kind(line, "ckpt_save") && number(line, "step", &y) == NUM_OK && y == 0) {
        if (!value(line, "seconds", &x, bad)) return 0;
        int rc = slot(r, (int64_t)e, &v);
        if (rc) return rc;
        v[F_CKPT] = x;
    }
    return 0;
}

/* One warning for a row's values left out: FILE:LINE, each key and its
 * value as written (escaped: the file is anyone's), in one write. */
static void warn_values(const char *path, long no, const char *line, const struct bad_keys *bad)
{
    char text[1024], pat[64], raw[32], shown[128];
    int at = snprintf(text, sizeof text, "cairn: warning: %s:%ld: ", path, no);
    for (int i = 0; i < bad->n && at > 0 && (size_t)at < sizeof text; i++) {
        snprintf(pat, sizeof pat, "\"%s\":", bad->key[i]);
        const char *p = strstr(line, pat) + strlen(pat);
        snprintf(raw, sizeof raw, "%.*s", (int)strcspn(p, ",}"), p);
        cairn_escape(shown, sizeof shown, raw);
        at += snprintf(text + at, sizeof text - (size_t)at, "%s\"%s\" is %s", i ? ", " : "", bad->key[i], shown);
    }
    fprintf(stderr, "%s: not a finite number; left out of the plot\n", text);
}

/* What kind of file st is, for a refusal. */
static const char *file_kind(const struct stat *st)
{
    if (S_ISLNK(st->st_mode)) return "a symbolic link";
    if (S_ISDIR(st->st_mode)) return "a directory";
    if (S_ISFIFO(st->st_mode)) return "a FIFO";
    if (S_ISSOCK(st->st_mode)) return "a socket";
    if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) return "a device";
    return "not a regular file";
}

/* Open path for reading only if it is a regular file: a FIFO would block
 * the open (and the read) for good, a device or a link may lead anywhere.
 * lstat refuses those up front; O_NONBLOCK|O_NOFOLLOW and fstat refuse
 * one swapped in between the two without blocking.  Errors: CAIRN_EINPUT
 * naming the path. */
static int open_metrics(const char *path, FILE **out)
{
    int rc = 0, fd = -1;
    struct stat st;
    if (lstat(path, &st) != 0) CAIRN_FAIL(CAIRN_EINPUT, "cannot read %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) CAIRN_FAIL(CAIRN_EINPUT, "%s is %s, not a regular file", path, file_kind(&st));
    fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) CAIRN_FAIL(CAIRN_EINPUT, "cannot read %s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) CAIRN_FAIL(CAIRN_EINPUT, "cannot read %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) CAIRN_FAIL(CAIRN_EINPUT, "%s is %s, not a regular file", path, file_kind(&st));
    *out = fdopen(fd, "r");
    if (!*out) CAIRN_FAIL(CAIRN_ERUNTIME, "cannot read %s: %s", path, strerror(errno));
    fd = -1; /* the stream owns it */
cleanup:
    if (fd >= 0) close(fd);
    return rc;
}

static int read_run(struct run *r)
{
    int rc = 0;
    char path[4200], *line = malloc(MAX_LINE + 2);
    long no = 0, rows = 0;
    FILE *f = NULL;
    CAIRN_CHECK_ALLOC(line);
    if (snprintf(path, sizeof path, "%s/metrics.jsonl", r->dir) >= (int)sizeof path)
        CAIRN_FAIL(CAIRN_EINPUT, "the run directory's path is too long");
    CAIRN_CHECK(open_metrics(path, &f));
    while (fgets(line, MAX_LINE + 2, f)) {
        size_t len = strlen(line);
        bool whole = len > 0 && line[len - 1] == '\n', cut = !whole && !feof(f), ok = false;
        no++;
        if (cut) { /* longer than any row cairn writes: skip the rest, no row */
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n') {}
        }
        if (whole) line[--len] = '\0';
        struct bad_keys bad = {0};
        if (!cut) CAIRN_CHECK(take_row(r, line, &ok, &bad));
        if (!ok)
            fprintf(stderr, "cairn: warning: %s:%ld: not a metrics row; skipped\n", path, no);
        else
            rows++;
        if (bad.n) warn_values(path, no, line, &bad);
    }
    if (ferror(f)) CAIRN_FAIL(CAIRN_EINPUT, "cannot read %s: %s", path, strerror(errno));
    if (r->n == 0) CAIRN_FAIL(CAIRN_EINPUT, "%s has no epoch to plot (%ld rows)", path, rows);
cleanup:
    if (f) fclose(f);
    free(line);
    return rc;
}

/* A label as a gnuplot single-quoted string's body ('' is a quote). */
static void put_label(FILE *g, const char *s)
{
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', g);
        if ((unsigned char)*s >= ' ') fputc(*s, g);
    }
}

static bool has(const struct run *r, int field)
{
    for (int64_t e = 0; e < r->n; e++)
        if (!isnan(r->v[e * N_FIELDS + field])) return true;
    return false;
}

/* One panel: field (and dashed, the second field, if >= 0) of every run. */
static void panel(FILE *g, const struct run *runs, int n, const char *title, int field, int dashed)
{
    int drawn = 0;
    fprintf(g, "set title '%s'\n", title);
    for (int i = 0; i < n; i++) drawn += has(&runs[i], field) + (dashed >= 0 && has(&runs[i], dashed));
    if (!drawn) {
        fprintf(g, "set label 1 'not logged' at graph 0.5, 0.5 center\nplot [0:1] [0:1] -1 notitle\nunset label 1\n");
        return;
    }
    fprintf(g, "plot ");
    const char *sep = "";
    for (int i = 0; i < n; i++) {
        int f[2] = {field, dashed};
        for (int k = 0; k < 2; k++) {
            if (f[k] < 0 || !has(&runs[i], f[k])) continue;
            fprintf(g, "%s$run%d using 1:%d with linespoints linecolor %d dashtype %d pointtype 7 pointsize 0.6 title '", sep,
                    i, f[k] + 2, i + 1, k ? 2 : 1);
            put_label(g, runs[i].dir);
            fprintf(g, "%s'", k ? " (training)" : "");
            sep = ", ";
        }
    }
    fprintf(g, "\n");
}

/* gnuplot draws into out's temporary, which an fsx_out made; renamed once
 * whole. */
static int draw(const struct run *runs, int n, const char *out, int w, int h)
{
    struct fsx_out o;
    int rc = fsx_out_begin(&o, out, 0);
    if (rc) return rc;
    signal(SIGPIPE, SIG_IGN); /* a gnuplot that is missing or quits: its status says why */
    FILE *g = popen("gnuplot >&2", "w");
    if (!g) {
        fsx_out_abort(&o);
        return cairn_err_errno(CAIRN_ERUNTIME, __FILE__, __LINE__, "cannot run gnuplot");
    }
    for (int i = 0; i < n; i++) {
        fprintf(g, "$run%d << EOD\n", i);
        for (int64_t e = 0; e < runs[i].n; e++) {
            const double *v = runs[i].v + e * N_FIELDS;
            bool any = false;
            for (int k = 0; k < N_FIELDS; k++) any |= !isnan(v[k]);
            if (!any) continue;
            fprintf(g, "%lld", (long long)(e + 1));
            for (int k = 0; k < N_FIELDS; k++) isnan(v[k]) ? fprintf(g, " ?") : fprintf(g, " %.9g", v[k]);
            fprintf(g, "\n");
        }
        fprintf(g, "EOD\n");
    }
    fprintf(g, "set terminal pngcairo size %d,%d noenhanced font ',10'\nset output '", w, h);
    put_label(g, o.tmp);
    fprintf(g, "'\nset datafile missing '?'\nset key top right font ',8'\nset grid\nset xlabel 'epoch'\n"
               "set format x '%%.0f'\n");
    int64_t epochs = 0;
    for (int i = 0; i < n; i++) epochs = runs[i].last > epochs ? runs[i].last : epochs;
    if (epochs <= 20) fprintf(g, "set xtics 1\n"); /* whole epochs */
    fprintf(g, "set multiplot layout 2,2\n");
    panel(g, runs, n, "loss (held-out; dashed: training)", F_LOSS, F_TRAIN_LOSS);
    panel(g, runs, n, "held-out accuracy", F_ACCURACY, -1);
    panel(g, runs, n, "samples/s (training steps)", F_RATE, -1);
    panel(g, runs, n, "checkpoint seconds (end of epoch)", F_CKPT, -1);
    fprintf(g, "unset multiplot\nset output\n");
    int st = pclose(g);
    if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0) return fsx_out_commit(&o);
    fsx_out_abort(&o);
    return cairn_err_set(CAIRN_ERUNTIME, __FILE__, __LINE__, "gnuplot failed (exit %d%s); %s not written",
                             WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                             WIFEXITED(st) && WEXITSTATUS(st) == 127 ? ": is it installed? make deps installs it" : "",
                             out);
    return 0;
}

int cli_plot(int argc, char **argv)
{
    static const struct option opts[] = {{"size", required_argument, NULL, 's'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *out = NULL;
    int w = 1200, h = 900, o, n = 0, rc = 0;
    struct run runs[MAX_RUNS] = {{0}};
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (o) {
        case 'o': out = optarg; break;
        case 's':
            if (sscanf(optarg, "%dx%d", &w, &h) != 2 || w < 200 || h < 150 || w > 10000 || h > 10000)
                return cmd_usage_error(usage_plot, "--size takes WIDTHxHEIGHT (200x150 to 10000x10000), not '%s'", optarg);
            break;
        case 'h': fputs(usage_plot, stdout); return 0;
        default: return cmd_usage_error(usage_plot, "bad option '%s'", argv[optind - 1]);
        }
    }
    if (!out) return cmd_usage_error(usage_plot, "%s", "needs -o FILE.png");
    for (const char *c = out; *c; c++)
        if ((unsigned char)*c < ' ') return cmd_usage_error(usage_plot, "%s", "-o: a file name without control characters");
    if (optind >= argc) return cmd_usage_error(usage_plot, "%s", "needs at least one RUN_DIR");
    if (argc - optind > MAX_RUNS) return cmd_usage_error(usage_plot, "%s", "at most 32 run directories");
    for (; optind < argc && rc == 0; optind++) {
        runs[n].dir = argv[optind];
        rc = read_run(&runs[n++]);
    }
    if (rc == 0) rc = draw(runs, n, out, w, h);
    if (rc == 0) printf("plot: %d run%s into %s (%dx%d)\n", n, n == 1 ? "" : "s", out, w, h);
    if (rc) fprintf(stderr, "cairn: %s\n", cairn_errmsg());
    for (int i = 0; i < n; i++) free(runs[i].v);
    return cairn_exit_code(rc);
}
