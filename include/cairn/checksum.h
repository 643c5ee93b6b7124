/* cairn-mix64: the checksum of every checkpoint dataset.
 *
 *   sum over elements i of mix(x_i XOR (i * K))   (mod 2^64)
 *
 * x_i is the element's bit pattern (zero-extended to 64 bits), i its index
 * in the whole dataset, K = 0x9e3779b97f4a7c15, and mix the bijection in
 * checksum.c.  Any partition of a dataset into parts has partial sums that
 * add up to the whole, so each rank checksums exactly what it writes or
 * reads, whatever the layout, and one allreduce combines them.  A change
 * of one element always changes the sum (mix is a bijection); because mix
 * spreads every bit, changes in two elements cancel only by a 2^-64 chance
 * (the first version, a linear sum, missed two flipped sign bits).  Not
 * cryptographic: it finds damage, not forgery. */
#ifndef CAIRN_CHECKSUM_H
#define CAIRN_CHECKSUM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CAIRN_CHECKSUM_NAME "cairn-mix64-v2"
/* What cairn wrote before: refused as an older cairn's file, not damage. */
#define CAIRN_CHECKSUM_OLD "cairn-poly64-v1"

/* Partial checksum of n elements of elem_size (4 or 8) bytes whose first
 * element has index `first` in the whole dataset. */
uint64_t checksum_part(const void *data, size_t elem_size, int64_t n, int64_t first);

/* A checksum_part on a thread of its own, so that the caller's I/O of the
 * same bytes overlaps it: checksum_start, then the I/O, then
 * checksum_finish (always, also after a failed I/O: it joins the thread).
 * Parts under CHECKSUM_THREAD_MIN bytes, a caller bound to one CPU, or no
 * thread to be had: checksum_start sums at once.  The bits are
 * checksum_part's. */
#define CHECKSUM_THREAD_MIN ((size_t)16 << 20)
struct checksum_job {
    const void *data;
    size_t elem_size;
    int64_t n, first;
    uint64_t sum;
    pthread_t thread;
    bool running;
};
void checksum_start(struct checksum_job *j, const void *data, size_t elem_size, int64_t n,
                    int64_t first);
uint64_t checksum_finish(struct checksum_job *j);

/* FNV-1a of a string. */
uint64_t checksum_string(const char *s);
/* The same as 16 hex digits in out (17 bytes). */
void checksum_text(const char *s, char out[17]);

#endif
