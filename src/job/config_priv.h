/* The parse state and the typed getters every job-file key goes through:
 * private to the config module and the extensions' configure hooks
 * (include/cairn/ext.h). */
#ifndef CAIRN_CONFIG_PRIV_H
#define CAIRN_CONFIG_PRIV_H

#include "cairn/config.h"

#include <libconfig.h>
#include <stdbool.h>
#include <stdint.h>

struct diags;

struct override {
    config_setting_t *s;
    const char *text;
};

struct cfg {
    struct job *job;
    struct arena *a;
    struct diags *d;
    const char *path;
    struct override *ov;
    int n_ov;
    int errors;
    const char *src_raw;  /* last file name libconfig gave, and our copy: */
    const char *src_copy; /* libconfig's strings die with its config_t */
};

void cfg_locate(struct cfg *c, const config_setting_t *s, const char **file, int *line);
void cfg_err(struct cfg *c, const config_setting_t *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *cfg_type_name(const config_setting_t *s);
/* Reject keys of group g not in `allowed` (NULL-terminated). */
void cfg_keys(struct cfg *c, const config_setting_t *g, const char *what,
              const char *const *allowed);
bool cfg_is_int(const config_setting_t *s);
bool cfg_valid_name(const char *s);
int64_t cfg_int(struct cfg *c, const config_setting_t *g, const char *key, bool required,
                int64_t dflt, int64_t lo, int64_t hi);
const char *cfg_str(struct cfg *c, const config_setting_t *g, const char *key, bool required,
                    const char *dflt);
/* An integer N (min = max = N) or a range [MIN, MAX], lo <= MIN <= MAX <= hi;
 * absent -> dflt for both. */
void cfg_int_range(struct cfg *c, const config_setting_t *g, const char *key, int64_t dflt,
                   int64_t lo, int64_t hi, int64_t *min, int64_t *max);
/* A number in [lo, hi] (an integer is fine); absent -> dflt. */
double cfg_num(struct cfg *c, const config_setting_t *g, const char *key, double dflt,
               double lo, double hi, bool *present);
/* true or false; absent -> dflt. */
bool cfg_bool(struct cfg *c, const config_setting_t *g, const char *key, bool dflt);
const char *cfg_name(struct cfg *c, const config_setting_t *g, const char *key, bool required,
                     const char *what);
/* A group-valued key, or NULL (absent, or reported as not a group). */
const config_setting_t *cfg_section(struct cfg *c, const config_setting_t *root, const char *key,
                                    const char *example);

/* config_text.c: limits on a job file's text, and its check before
 * libconfig parses it (problems go to d as FILE:LINE; returns their count).
 * dir resolves relative @include names; line is the number of the text's
 * first line (0 for a --set value, whose problems carry no line); depth is
 * the include depth of `text`. */
enum { CFG_MAX_BYTES = CONFIG_MAX_BYTES, CFG_MAX_LINE = 16384, CFG_MAX_INCLUDE = 8 };
int cfg_text_check(struct diags *d, const char *file, const char *text, const char *dir, int line,
                   int depth);
/* A job file's text (caller frees), or NULL after reporting why not: not a
 * regular file, over CFG_MAX_BYTES, unreadable, or holding a NUL byte. */
char *cfg_read_text(struct diags *d, const char *path);


#endif
