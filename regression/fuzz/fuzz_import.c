/* libFuzzer target: `cairn data import`'s readers on untrusted bytes
 * (include/cairn/dataimport.h).  The input's first byte picks the
 * options (separator, header, label, ids, hashed ids, fill, skip-bad);
 * the rest is a CSV or TSV file, then the same bytes as an .npy array and
 * as an .npz archive.  Each import runs on MPI_COMM_SELF (a singleton)
 * and writes a real HDF5 file.  Any crash, hang or sanitizer finding is a
 * bug; every input must end as 0 or an error.
 * Seed corpus: small CSV, TSV, .npy and .npz files (see regression/fuzz/run). */
#include "cairn/dataimport.h"
#include "cairn/error.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(data, 1, size, f);
    fclose(f);
}

/* MPI once, before any input (libFuzzer counts what an input leaves
 * allocated); never finalized: Open MPI would unload its components, and
 * LeakSanitizer could no longer tell their leaks (suppressed) from
 * cairn's. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    MPI_Init(NULL, NULL);
    snprintf(dir, sizeof dir, "/tmp/cairn-fuzz-import-%ld", (long)getpid());
    mkdir(dir, 0700);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned o = data[0];
    char in[128], npy[128], npz[128], out[128];
    snprintf(in, sizeof in, "%s/in.csv", dir);
    snprintf(npy, sizeof npy, "%s/a.npy", dir);
    snprintf(npz, sizeof npz, "%s/b.npz", dir);
    snprintf(out, sizeof out, "%s/out.h5", dir);
    write_file(in, data + 1, size - 1);
    write_file(npy, data + 1, size - 1);
    write_file(npz, data + 1, size - 1);
    const char *inputs[] = {in, in};
    struct import_spec s = {
        .out = out, .inputs = inputs, .n_inputs = 1 + (o >> 7 & 1), .delim = o & 1 ? '\t' : ',',
        .header = !(o & 2), .label = o & 4 ? "1" : NULL, .target = o & 8, .fill_set = o & 16, .fill = 0.5,
        .log1p = o & 32, .skip_bad = o & 64 ? 3 : 0, .empty_id = -1,
    };
    if (o & 4) { /* ids from column 2, hashed from column 3 */
        s.n_ids = 2;
        snprintf(s.ids[0].name, sizeof s.ids[0].name, "u");
        s.ids[0].columns = "2";
        snprintf(s.ids[1].name, sizeof s.ids[1].name, "h");
        s.ids[1].columns = "3";
        s.ids[1].rows = 97;
    }
    struct import_result r;
    import_text(MPI_COMM_SELF, &s, &r);
    const char *arrays[] = {npy, npz};
    struct import_spec n = {.out = out, .inputs = arrays, .n_inputs = 2};
    import_numpy(MPI_COMM_SELF, &n, &r);
    cairn_err_clear();
    return 0;
}
