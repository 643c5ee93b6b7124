/* Helpers of every command; see include/cairn/cmdline.h. */
#include "cairn/cmdline.h"

#include "cairn/error.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int cmd_usage_error(const char *usage, const char *fmt, const char *arg)
{
    char raw[512], msg[512];
    snprintf(raw, sizeof raw, fmt, arg);
    cairn_escape(msg, sizeof msg, raw); /* arg may be a file's name */
    fprintf(stderr, "cairn: %s\n%s", msg, usage);
    return CAIRN_EXIT_INPUT;
}

int cmd_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* A rank that waits in MPI (HDF5's collective calls, a collective in a
 * step) gives its core up instead of spinning, unless the user chose
 * otherwise: Open MPI yields on its own only when mpirun knows a node is
 * oversubscribed, and cairn's ranks often share cores (PS shards beside
 * trainers; srun never tells).  A spinning rank made every checkpoint save
 * across 3 test nodes 40x slower (1.5 s instead of 0.04 s for 25.7 MB).
 * With a core to itself, a rank pays one sched_yield per idle poll. */
void cmd_mpi_init(int *argc, char ***argv, int *threads)
{
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, threads);
}
