/* The parse state of a job file, private to the config module (its
 * getters are public: include/cairn/cfg.h). */
#ifndef CAIRN_CONFIG_PRIV_H
#define CAIRN_CONFIG_PRIV_H

#include "cairn/cfg.h"
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

/* The name a setting goes by in messages ("layers", "model.layers"). */
const char *cfg_where(const config_setting_t *s);

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
