/* Reading a job file's keys: the typed getters every key goes through,
 * for the config module and the extensions' configure hooks
 * (include/cairn/ext.h).  Each checks its key's type and range and reports
 * a problem as a FILE:LINE diagnostic of the job file (cfg_err), returning
 * the default so that one `cairn check` shows every problem. */
#ifndef CAIRN_CFG_H
#define CAIRN_CFG_H

#include <libconfig.h>
#include <stdbool.h>
#include <stdint.h>

struct arena;
struct cfg; /* a job file being read */

/* The job's arena, where a configure hook allocates its spec. */
struct arena *cfg_arena(struct cfg *c);
/* Problems reported so far. */
int cfg_errors(const struct cfg *c);
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

#endif
