/* The typed getters every job-file key goes through (include/cairn/cfg.h):
 * each checks its key's type and range, and reports a problem as a
 * FILE:LINE diagnostic.  Used by config.c and by the extensions'
 * configure hooks (include/cairn/ext.h). */
#include "config_priv.h"

#include "cairn/arena.h"
#include "cairn/diag.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena *cfg_arena(struct cfg *c) { return c->a; }
int cfg_errors(const struct cfg *c) { return c->errors; }

/* ---- locations and messages ------------------------------------------- */

static const char *intern_file(struct cfg *c, const char *f)
{
    if (!f) return c->path;
    if (f != c->src_raw) {
        c->src_raw = f;
        c->src_copy = strcmp(f, c->path) == 0 ? c->path : arena_strdup(c->a, f);
    }
    return c->src_copy;
}

/* A setting's FILE:LINE (line 1 for the file as a whole, and for no
 * setting: s NULL); settings made by --set are named by the override. */
void cfg_locate(struct cfg *c, const config_setting_t *s, const char **file, int *line)
{
    if (!s) {
        *file = c->path;
        *line = 1;
        return;
    }
    for (const config_setting_t *p = s; p; p = config_setting_parent(p)) {
        for (int i = 0; i < c->n_ov; i++) {
            if (c->ov[i].s == p) {
                *file = c->ov[i].text;
                *line = 0;
                return;
            }
        }
    }
    bool made_by_set = config_setting_parent(s) && config_setting_source_line(s) == 0;
    for (int i = 0; made_by_set && i < c->n_ov; i++) {
        for (const config_setting_t *p = c->ov[i].s; p; p = config_setting_parent(p)) {
            if (p == s) { /* a group that --set created on the way to its key */
                *file = c->ov[i].text;
                *line = 0;
                return;
            }
        }
    }
    for (const config_setting_t *p = s; p; p = config_setting_parent(p)) {
        if (config_setting_source_line(p) > 0) {
            *file = intern_file(c, config_setting_source_file(p));
            *line = config_setting_source_line(p);
            return;
        }
    }
    *file = c->path;
    *line = 1;
}

__attribute__((format(printf, 3, 4))) void cfg_err(struct cfg *c,
                                                         const config_setting_t *s,
                                                         const char *fmt, ...)
{
    const char *file;
    int line;
    char msg[1024];
    cfg_locate(c, s, &file, &line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diags_add(c->d, file, line, "%s", msg);
    c->errors++;
}

const char *cfg_type_name(const config_setting_t *s)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT: case CONFIG_TYPE_INT64: return "an integer";
    case CONFIG_TYPE_FLOAT: return "a number";
    case CONFIG_TYPE_STRING: return "a string";
    case CONFIG_TYPE_BOOL: return "a boolean";
    case CONFIG_TYPE_ARRAY: return "an array";
    case CONFIG_TYPE_LIST: return "a list";
    case CONFIG_TYPE_GROUP: return "a group";
    default: return "nothing";
    }
}

const char *cfg_where(const config_setting_t *s)
{
    const char *n = config_setting_name(s);
    return n ? n : "(element)";
}

/* Reject keys of a group that are not in `allowed` (NULL-terminated). */
void cfg_keys(struct cfg *c, const config_setting_t *g, const char *what,
                       const char *const *allowed)
{
    for (int i = 0, n = config_setting_length(g); i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
        const char *key = config_setting_name(s);
        bool ok = false;
        for (const char *const *k = allowed; *k && !ok; k++) ok = strcmp(*k, key) == 0;
        if (ok) continue;
        char list[512] = "";
        for (const char *const *k = allowed; *k; k++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                     k == allowed ? "" : ", ", *k);
        cfg_err(c, s, "unknown key '%s' in %s (expected: %s)", key, what, list);
    }
}

/* ---- typed getters ---------------------------------------------------- */

bool cfg_is_int(const config_setting_t *s)
{
    int t = config_setting_type(s);
    return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64;
}

bool cfg_valid_name(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.' || *s == '-')) return false;
    return true;
}

/* Integer key in [lo, hi]; absent -> dflt (or an error when required). */
int64_t cfg_int(struct cfg *c, const config_setting_t *g, const char *key, bool required,
                       int64_t dflt, int64_t lo, int64_t hi)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) {
        if (required) cfg_err(c, g, "missing key '%s' (an integer)", key);
        return dflt;
    }
    if (!cfg_is_int(s)) {
        cfg_err(c, s, "'%s' must be an integer, not %s", key, cfg_type_name(s));
        return dflt;
    }
    long long v = config_setting_get_int64(s);
    if (v < lo || v > hi) {
        if (hi == INT64_MAX)
            cfg_err(c, s, "'%s' must be >= %lld, got %lld", key, (long long)lo, v);
        else
            cfg_err(c, s, "'%s' must be in %lld..%lld, got %lld", key, (long long)lo,
                   (long long)hi, v);
        return dflt;
    }
    return v;
}

void cfg_int_range(struct cfg *c, const config_setting_t *g, const char *key, int64_t dflt,
                   int64_t lo, int64_t hi, int64_t *min, int64_t *max)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    *min = *max = dflt;
    if (!s || cfg_is_int(s)) {
        *min = *max = cfg_int(c, g, key, false, dflt, lo, hi);
        return;
    }
    const config_setting_t *a = config_setting_get_elem(s, 0), *b = config_setting_get_elem(s, 1);
    if (!config_setting_is_aggregate(s) || config_setting_length(s) != 2 || !cfg_is_int(a) ||
        !cfg_is_int(b)) {
        cfg_err(c, s, "'%s' must be an integer or a range [MIN, MAX], not %s", key,
                cfg_type_name(s));
        return;
    }
    long long x = config_setting_get_int64(a), y = config_setting_get_int64(b);
    if (x < lo || y > hi || x > y) {
        cfg_err(c, s, "'%s' = [%lld, %lld] must have %lld <= MIN <= MAX <= %lld", key, x, y,
                (long long)lo, (long long)hi);
        return;
    }
    *min = x;
    *max = y;
}

const char *cfg_str(struct cfg *c, const config_setting_t *g, const char *key,
                           bool required, const char *dflt)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) {
        if (required) cfg_err(c, g, "missing key '%s' (a string)", key);
        return dflt;
    }
    if (config_setting_type(s) != CONFIG_TYPE_STRING) {
        cfg_err(c, s, "'%s' must be a string, not %s", key, cfg_type_name(s));
        return dflt;
    }
    return arena_strdup(c->a, config_setting_get_string(s));
}

const char *cfg_name(struct cfg *c, const config_setting_t *g, const char *key,
                            bool required, const char *what)
{
    const char *v = cfg_str(c, g, key, required, NULL);
    if (v && !cfg_valid_name(v)) {
        cfg_err(c, config_setting_get_member(g, key),
               "%s '%s' is not a valid name (letters, digits, '_', '.', '-'; not first digit)",
               what, v);
        return NULL;
    }
    return v;
}

const config_setting_t *cfg_section(struct cfg *c, const config_setting_t *root,
                                      const char *key, const char *example)
{
    const config_setting_t *s = config_setting_get_member(root, key);
    if (s && config_setting_type(s) != CONFIG_TYPE_GROUP) {
        cfg_err(c, s, "'%s' must be a group %s, not %s", key, example, cfg_type_name(s));
        return NULL;
    }
    return s;
}

double cfg_num(struct cfg *c, const config_setting_t *g, const char *key, double dflt,
               double lo, double hi, bool *present)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (present) *present = s != NULL;
    if (!s) return dflt;
    double v;
    if (config_setting_type(s) == CONFIG_TYPE_FLOAT)
        v = config_setting_get_float(s);
    else if (cfg_is_int(s))
        v = (double)config_setting_get_int64(s);
    else {
        cfg_err(c, s, "'%s' must be a number, not %s", key, cfg_type_name(s));
        return dflt;
    }
    if (!(v >= lo && v <= hi)) {
        cfg_err(c, s, "'%s' must be in [%g, %g], got %g", key, lo, hi, v);
        return dflt;
    }
    return v;
}

bool cfg_bool(struct cfg *c, const config_setting_t *g, const char *key, bool dflt)
{
    const config_setting_t *s = config_setting_get_member(g, key);
    if (!s) return dflt;
    if (config_setting_type(s) == CONFIG_TYPE_BOOL) return config_setting_get_bool(s);
    cfg_err(c, s, "'%s' must be true or false, not %s", key, cfg_type_name(s));
    return dflt;
}
