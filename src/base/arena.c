/* Bump allocator; see include/cairn/arena.h. */
#include "cairn/arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct block {
    struct block *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
};

struct arena {
    struct block *head;
};

static void out_of_memory(void)
{
    fputs("cairn: out of memory while building the job plan\n", stderr);
    abort();
}

struct arena *arena_create(void)
{
    struct arena *a = calloc(1, sizeof *a);
    if (!a) out_of_memory();
    return a;
}

void arena_destroy(struct arena **ap)
{
    if (!ap || !*ap) return;
    for (struct block *b = (*ap)->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(*ap);
    *ap = NULL;
}

void *arena_alloc(struct arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    struct block *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        b = malloc(sizeof *b + cap);
        if (!b) out_of_memory();
        b->next = a->head;
        b->used = 0;
        b->size = cap;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    return memcpy(arena_alloc(a, n), s, n);
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

void *arena_grow(struct arena *a, void *old, size_t n, size_t elem)
{
    void *p = arena_alloc(a, (n + 1) * elem);
    if (n) memcpy(p, old, n * elem);
    return p;
}
