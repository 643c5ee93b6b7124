/* Data sets for examples and tests (`cairn data ...`). */
#ifndef CAIRN_DATAGEN_H
#define CAIRN_DATAGEN_H

#include <stdint.h>

/* Write an i64 dataset [count] holding start, start+1, ... to file.
 * Not collective.  Errors: CAIRN_EHDF5, CAIRN_ENOMEM. */
int datagen_range(const char *file, const char *dataset, int64_t start, int64_t count);

#endif
