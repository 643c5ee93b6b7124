/* Numbers from text (the fields of data files): strict decimal syntax,
 * correctly rounded, fast on the common short numbers.  A data import
 * parses one field after another, so these never allocate and never
 * consult the locale. */
#ifndef CAIRN_NUMTEXT_H
#define CAIRN_NUMTEXT_H

#include <stddef.h>
#include <stdint.h>

enum { NUM_OK = 0, NUM_SYNTAX = -1, NUM_RANGE = -2 };

/* The n bytes at s, spaces around them ignored, as a double: a decimal
 * number [+-]digits[.digits][(e|E)[+-]digits] (a leading or trailing
 * point allowed, as in ".5" and "5.").  Correctly rounded: the same
 * double as strtod gives in the C locale.  NUM_SYNTAX for anything else
 * (empty, hexadecimal, inf, nan, other bytes); NUM_RANGE if it overflows
 * a double. */
int num_f64(const char *s, size_t n, double *v);

/* The n bytes at s, spaces around them ignored, as [+-]digits.
 * NUM_SYNTAX, or NUM_RANGE outside int64_t. */
int num_i64(const char *s, size_t n, int64_t *v);

/* FNV-1a (64 bits) of n bytes, from basis h (FNV_BASIS to start). */
#define NUM_FNV_BASIS 0xcbf29ce484222325ULL
uint64_t num_fnv1a(uint64_t h, const void *s, size_t n);
/* SplitMix64's finalizer: a bijection that spreads every input bit. */
uint64_t num_mix(uint64_t z);

#endif
