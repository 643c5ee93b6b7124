/* libFuzzer target: a node-local checkpoint's manifest and one part file,
 * both untrusted (include/cairn/ckpt_local.h).  The input is the
 * manifest's text, then (after its first NUL byte, if any) the bytes of
 * rank 0's part, which the target writes where the manifest's root line
 * (appended: the last one wins) makes `cairn ckpt verify` and `extract`
 * look.  The manifest is also held against a job of one group ("main", a
 * family) with ckpt_settings_fold.  Any crash, hang or sanitizer finding
 * is a bug; every input must end as 0 or an error.
 * Seed corpus: manifests as cairn writes them (see `make fuzz`). */
#include "cairn/ckpt_file.h"
#include "cairn/ckpt_local.h"
#include "cairn/job.h"
#include "cairn/plan.h"
#include "cairn/strbuf.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    char manifest[128], parts[128], part[160];
    if (!sink) sink = fopen("/dev/null", "w");
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/cairn-fuzz-manifest-%ld", (long)getpid());
        mkdir(dir, 0700);
    }
    const uint8_t *nul = memchr(data, 0, size);
    size_t text_len = nul ? (size_t)(nul - data) : size;
    snprintf(manifest, sizeof manifest, "%s/ckpt-e000001", dir);
    snprintf(parts, sizeof parts, "%s/root", dir);
    mkdir(parts, 0700);
    snprintf(part, sizeof part, "%s/root/ckpt-e000001", dir); /* the manifest's name is its parts' folder */
    mkdir(part, 0700);
    snprintf(part, sizeof part, "%s/root/ckpt-e000001/rank000000", dir);
    char *text = malloc(text_len + sizeof parts + 16);
    if (!text) return 0;
    memcpy(text, data, text_len);
    int n = snprintf(text + text_len, sizeof parts + 16, "\nroot %s\n", parts);
    write_file(manifest, text, text_len + (size_t)n);
    write_file(part, nul ? nul + 1 : (const uint8_t *)"", nul ? size - text_len - 1 : 0);

    struct ckpt_local_manifest man = {0};
    if (ckpt_local_manifest_read(manifest, &man) == 0 && man.settings) {
        struct job job = {.seed = 1};
        struct blob_info blobs[1] = {
            {.name = "w", .type = {.dtype = DT_F32, .shape = {.ndim = 2, .d = {4, 3}}, .dist = DIST_SHARDED},
             .persistent = true}};
        struct group g = {.name = "main0", .nranks = 1, .blobs = blobs, .n_blobs = 1, .family = "main"};
        struct plan p = {.job = &job, .nranks = 1, .groups = &g, .n_groups = 1};
        struct strbuf b = {0};
        ckpt_settings_fold(man.settings, &p, &b);
        strbuf_free(&b);
        ckpt_local_verify(manifest, &p, sink);
    }
    ckpt_local_manifest_free(&man);
    ckpt_local_verify(manifest, NULL, sink);
    static const char *const some[] = {"main/w", "main0/w", "ps/L0.W"};
    char out[160];
    snprintf(out, sizeof out, "%s/x.h5", dir);
    ckpt_local_extract(manifest, some, 3, out);
    unlink(out);
    free(text);
    return 0;
}
