/* libFuzzer's driver for one pass over the seeds, without libFuzzer: an
 * empty input, then each file named on the command line (or in a
 * directory named there) goes once through the target, as `fuzz_NAME
 * -runs=0 DIR` would, each in a buffer of exactly its size (ASan then sees
 * a read past its end).  `make check` links the targets with it and the
 * sanitizer build (build/asan/), so the seed run needs no third build of
 * the library; `make fuzz` links them with libFuzzer, to fuzz.  Exits
 * non-zero if an input cannot be read, none is run, or the target exits
 * before the last one. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int finished; /* 0 until every input has run */

static void early_exit(void)
{
    if (!finished) {
        fprintf(stderr, "seed_driver: the target exited before the last input\n");
        _exit(1);
    }
}

/* One input through the target, in a buffer of its size; 1 if it cannot
 * be read. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "seed_driver: %s: not a readable file\n", path);
        if (f) fclose(f);
        return 1;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *data = malloc(size ? size : 1);
    int bad = !data || fread(data, 1, size, f) != size;
    fclose(f);
    if (bad) fprintf(stderr, "seed_driver: %s: read error\n", path);
    else LLVMFuzzerTestOneInput(data, size);
    free(data);
    return bad;
}

int main(int argc, char **argv)
{
    int bad = 0, runs = 1;
    atexit(early_exit);
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    uint8_t *empty = malloc(1);
    if (!empty) return 1;
    LLVMFuzzerTestOneInput(empty, 0); /* libFuzzer's first input too */
    free(empty);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        DIR *d = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? opendir(argv[i]) : NULL;
        if (!d) {
            bad |= run_file(argv[i]);
            runs++;
            continue;
        }
        for (struct dirent *e; (e = readdir(d));) {
            char path[4096];
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            bad |= run_file(path);
            runs++;
        }
        closedir(d);
    }
    finished = 1;
    printf("%d inputs run (the empty one and %d seeds)\n", runs, runs - 1);
    return bad || runs < 2;
}
