/* What every command of `cairn` shares, the core's (src/app) and the
 * extensions' (include/cairn/ext.h): usage errors, integer options and
 * MPI's start-up. */
#ifndef CAIRN_CMDLINE_H
#define CAIRN_CMDLINE_H

/* Print "cairn: <fmt with arg>" (arg escaped: it may be a file's name)
 * and the usage to stderr; returns exit code 2. */
int cmd_usage_error(const char *usage, const char *fmt, const char *arg);
/* s as a whole decimal number in [lo, hi] into *out: 0, or -1 if not. */
int cmd_parse_int(const char *s, long lo, long hi, long *out);
/* MPI_Init_thread as every MPI command of cairn starts it: thread level
 * MULTIPLE asked for (a background save needs it), idle ranks yielding. */
void cmd_mpi_init(int *argc, char ***argv, int *threads);

#endif
