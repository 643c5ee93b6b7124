/* cairn-poly64: the checksum of every checkpoint dataset.
 *
 *   sum over elements i of (x_i + K) * (2 i + 1)   (mod 2^64)
 *
 * x_i is the element's bit pattern (zero-extended to 64 bits) and i its
 * index in the whole dataset.  Any partition of a dataset into parts has
 * partial sums that add up to the whole, so each rank checksums exactly
 * what it writes or reads, whatever the layout, and one allreduce combines
 * them.  A change of any single element always changes the sum (the
 * multiplier is odd).  Not cryptographic. */
#ifndef CAIRN_CHECKSUM_H
#define CAIRN_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#define CAIRN_CHECKSUM_NAME "cairn-poly64-v1"

/* Partial checksum of n elements of elem_size (4 or 8) bytes whose first
 * element has index `first` in the whole dataset. */
uint64_t checksum_part(const void *data, size_t elem_size, int64_t n, int64_t first);

/* FNV-1a of a string. */
uint64_t checksum_string(const char *s);
/* The same as 16 hex digits in out (17 bytes). */
void checksum_text(const char *s, char out[17]);

#endif
