/* A rank's workspace: the values of its group's blobs.  Each blob carries a
 * read-write lock because report steps read blobs while sibling steps write
 * them (see exec.c). */
#ifndef CAIRN_WORKSPACE_H
#define CAIRN_WORKSPACE_H

#include "cairn/tensor.h"

#include <pthread.h>
#include <stdbool.h>

struct group;
struct blob_info;

struct blob {
    const struct blob_info *info;
    struct tensor t;
    bool defined; /* holds a value */
    pthread_rwlock_t lock;
};

struct workspace {
    const struct group *g; /* NULL on a spare rank */
    struct blob *v;
    int n;
};

/* One blob per blob of g (g may be NULL: an empty workspace).  Not collective. */
int workspace_create(const struct group *g, struct workspace **out);
void workspace_destroy(struct workspace **w); /* accepts NULL, NULLs *w */
/* Find a blob by name; NULL if the group has none. */
struct blob *workspace_find(struct workspace *w, const char *name);

#endif
