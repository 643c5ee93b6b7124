/* Reading a job file: libconfig text plus --set overrides in, a checked
 * job spec out.  Every key is read here and nowhere else. */
#ifndef CAIRN_CONFIG_H
#define CAIRN_CONFIG_H

struct job;
struct diags;

/* The largest job file (and included file) cairn reads, in bytes. */
#define CONFIG_MAX_BYTES (1 << 20)

/* A job file's text (caller frees): a regular file (a FIFO is never
 * opened) of at most CONFIG_MAX_BYTES with no NUL byte.  Not collective.
 * Errors: CAIRN_EINPUT saying why (without the path); *line (may be
 * NULL) is then the line at fault, or left alone. */
int config_read_text(const char *path, char **text, int *line);

/* Read `path` (or parse `text`, if not NULL, naming it `path` in messages),
 * apply overrides ("key=value", key a dotted libconfig path
 * such as checkpoint.every or groups.[0].ranks), and check every key.
 * Problems go to `d` as FILE:LINE diagnostics.  Returns 0 and a job the
 * caller frees with job_destroy, or CAIRN_EINPUT.  Not collective. */
int config_load(const char *path, const char *text, const char *const *sets, int n_sets, struct job **out,
                struct diags *d);

#endif
