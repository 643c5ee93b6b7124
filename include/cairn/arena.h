/* Bump allocator for the job spec and plan: many small nodes that live and
 * die together, so one arena_destroy frees them all.  Allocation failure is
 * treated as fatal (abort) because it can only happen while reading a job
 * file, long before any collective could be left waiting. */
#ifndef CAIRN_ARENA_H
#define CAIRN_ARENA_H

#include <stddef.h>

struct arena;

struct arena *arena_create(void);
void arena_destroy(struct arena **a);           /* accepts NULL, NULLs *a */
void *arena_alloc(struct arena *a, size_t size); /* zeroed, 16-byte aligned */
char *arena_strdup(struct arena *a, const char *s); /* NULL stays NULL */
char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Grow an array of n elements of size elem to n+1, returning the new array;
 * the old storage stays in the arena (cheap enough for job-sized data). */
void *arena_grow(struct arena *a, void *old, size_t n, size_t elem);

#endif
