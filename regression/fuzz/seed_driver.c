/* libFuzzer's driver for one pass over the seeds, without libFuzzer: each
 * file named on the command line (or in a directory named there) goes
 * once through the target, as `fuzz_NAME -runs=0 DIR` would.  `make
 * check` links the targets with it and the sanitizer build (build/asan/),
 * so the seed run needs no third build of the library; `make fuzz` links
 * them with libFuzzer, to fuzz. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* One input through the target; 1 if it cannot be read. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return perror(path), 1;
    uint8_t *data = NULL;
    size_t size = 0, cap = 0, n;
    do {
        if (size == cap) {
            uint8_t *d = realloc(data, cap = cap ? 2 * cap : 4096);
            if (!d) return fclose(f), free(data), perror(path), 1;
            data = d;
        }
        n = fread(data + size, 1, cap - size, f);
        size += n;
    } while (n > 0);
    int bad = ferror(f);
    fclose(f);
    if (!bad) LLVMFuzzerTestOneInput(data, size);
    free(data);
    return bad ? (fprintf(stderr, "%s: read error\n", path), 1) : 0;
}

int main(int argc, char **argv)
{
    int bad = 0, runs = 0;
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
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
            if (e->d_name[0] == '.') continue;
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            bad |= run_file(path);
            runs++;
        }
        closedir(d);
    }
    printf("%d inputs run\n", runs);
    return bad;
}
