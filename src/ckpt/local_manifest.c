/* A node-local checkpoint's manifest (include/cairn/ckpt_local.h): text,
 * in the shared directory's local/ folder, written by rank 0 once every
 * part is durable, read as untrusted input:
 *
 *   # cairn node-local checkpoint v1
 *   epoch E / step S / done D / identity HEX16 / world W
 *   part R BYTES SUM16          one per rank, in rank order
 *   blas KERNELS                optional
 *   root DIR                    optional: where the parts are on each node
 *   group NAME FIRST NRANKS     optional: the writer's groups ...
 *   setting LINE                ... and settings, which a re-split needs */
#include "local_priv.h"

#include "cairn/checksum.h"

#include "cairn/coll.h"
#include "cairn/error.h"
#include "cairn/fsx.h"
#include "cairn/plan.h"
#include "cairn/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MANIFEST_HEAD "# cairn node-local checkpoint v1"
#define MANIFEST_MAX_WORLD (1 << 24)
#define MANIFEST_MAX_SETTINGS ((size_t)64 << 20) /* bytes of its settings, as a checkpoint file's */

int ckpt_local_describe(const struct plan *p, struct ckpt_local_manifest *man)
{
    int rc = 0;
    struct strbuf b = {0};
    CAIRN_CHECK(ckpt_local_identity(p, man->identity));
    CAIRN_CHECK(ckpt_settings(p, &b));
    free(man->settings);
    CAIRN_CHECK_ALLOC(man->settings = strdup(strbuf_str(&b)));
    free(man->groups);
    CAIRN_CHECK_ALLOC(man->groups = calloc((size_t)p->n_groups + 1, sizeof *man->groups));
    man->n_groups = p->n_groups;
    for (int g = 0; g < p->n_groups; g++) {
        struct ckpt_local_group *mg = &man->groups[g];
        snprintf(mg->name, sizeof mg->name, "%s", p->groups[g].name);
        mg->first = p->groups[g].first;
        mg->nranks = p->groups[g].nranks;
    }
cleanup:
    strbuf_free(&b);
    return rc;
}

int ckpt_local_manifest_write(const char *path, const struct ckpt_local_manifest *man)
{
    struct strbuf b = {0};
    strbuf_addf(&b, "%s\nepoch %lld\nstep %lld\ndone %d\nidentity %s\nworld %d\n", MANIFEST_HEAD,
                (long long)man->meta.epoch, (long long)man->meta.step, man->meta.done, man->identity,
                man->world);
    for (int r = 0; r < man->world; r++)
        strbuf_addf(&b, "part %d %llu %016llx\n", r, (unsigned long long)man->parts[r].bytes,
                    (unsigned long long)man->parts[r].sum);
    if (man->blas_kernels[0] && !strchr(man->blas_kernels, '\n')) /* optional: older manifests lack it */
        strbuf_addf(&b, "blas %s\n", man->blas_kernels);
    if (man->root[0] && !strchr(man->root, '\n')) strbuf_addf(&b, "root %s\n", man->root);
    for (int g = 0; g < man->n_groups; g++)
        strbuf_addf(&b, "group %s %d %d\n", man->groups[g].name, man->groups[g].first, man->groups[g].nranks);
    for (const char *l = man->settings; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        strbuf_addf(&b, "setting %.*s\n", (int)len, l);
        l += len + (nl != NULL);
    }
    int rc = strbuf_finish(&b);
    if (rc == 0) rc = fsx_write_atomic(path, strbuf_str(&b), b.len, 0);
    strbuf_free(&b);
    return rc;
}

void ckpt_local_manifest_free(struct ckpt_local_manifest *man)
{
    free(man->parts);
    free(man->settings);
    free(man->groups);
    man->parts = NULL;
    man->settings = NULL;
    man->groups = NULL;
    man->n_groups = 0;
}

/* The next line of text (NUL-terminated in place), or NULL. */
static char *next_line(char **at)
{
    char *s = *at;
    if (!s || !*s) return NULL;
    char *nl = strchr(s, '\n');
    if (nl) *nl = '\0';
    *at = nl ? nl + 1 : s + strlen(s);
    return s;
}

/* One optional line; -1 if it is none of them. */
static int optional_line(const char *s, struct ckpt_local_manifest *man, struct strbuf *settings)
{
    char name[128], tail = 0;
    int first = -1, nranks = -1;
    if (strncmp(s, "blas ", 5) == 0) {
        snprintf(man->blas_kernels, sizeof man->blas_kernels, "%s", s + 5);
    } else if (strncmp(s, "root ", 5) == 0 && strlen(s + 5) < sizeof man->root) {
        snprintf(man->root, sizeof man->root, "%s", s + 5);
    } else if (strncmp(s, "setting ", 8) == 0 && settings->len + strlen(s) < MANIFEST_MAX_SETTINGS) {
        strbuf_addf(settings, "%s\n", s + 8);
    } else if (sscanf(s, "group %127s %d %d%c", name, &first, &nranks, &tail) == 3 && first >= 0 &&
               nranks >= 1 && first <= man->world - nranks && man->n_groups < man->world &&
               man->n_groups < 4096) {
        for (int g = 0; g < man->n_groups; g++)
            if (strcmp(man->groups[g].name, name) == 0) return -1; /* a group named twice */
        struct ckpt_local_group *g = realloc(man->groups, (size_t)(man->n_groups + 1) * sizeof *g);
        if (!g) return cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
        man->groups = g;
        g[man->n_groups] = (struct ckpt_local_group){.first = first, .nranks = nranks};
        snprintf(g[man->n_groups++].name, sizeof g->name, "%s", name);
    } else {
        return -1;
    }
    return 0;
}

int ckpt_local_manifest_read(const char *path, struct ckpt_local_manifest *man)
{
    int rc = 0, line = 0;
    char *text = NULL, *at, *s;
    size_t len = 0;
    long long e = -1, st = -1, world = -1;
    int done = -1;
    char id[32] = "", tail = 0;
    struct strbuf settings = {0};
    *man = (struct ckpt_local_manifest){0};
    CAIRN_CHECK(fsx_read_all(path, &text, &len));
    at = text;
#define BAD() CAIRN_FAIL(CAIRN_ECORRUPT, "%s:%d: not a node-local checkpoint manifest", path, line)
    if (++line, !(s = next_line(&at)) || strcmp(s, MANIFEST_HEAD) != 0) BAD();
    if (++line, !(s = next_line(&at)) || sscanf(s, "epoch %lld%c", &e, &tail) != 1 || e < 0) BAD();
    if (++line, !(s = next_line(&at)) || sscanf(s, "step %lld%c", &st, &tail) != 1 || st < 0) BAD();
    if (++line, !(s = next_line(&at)) || sscanf(s, "done %d%c", &done, &tail) != 1 || done < 0 || done > 1) BAD();
    if (++line, !(s = next_line(&at)) || sscanf(s, "identity %16[0-9a-f]%c", id, &tail) != 1 || strlen(id) != 16) BAD();
    if (++line, !(s = next_line(&at)) || sscanf(s, "world %lld%c", &world, &tail) != 1 || world < 1 ||
        world > MANIFEST_MAX_WORLD) BAD();
    man->meta = (struct ckpt_meta){.epoch = e, .step = st, .done = done};
    memcpy(man->identity, id, 17);
    man->world = (int)world;
    CAIRN_CHECK_ALLOC(man->parts = calloc((size_t)world, sizeof *man->parts));
    for (int r = 0; r < man->world; r++) {
        int got = -1;
        unsigned long long bytes = 0, sum = 0;
        if (++line, !(s = next_line(&at)) ||
            sscanf(s, "part %d %llu %16llx%c", &got, &bytes, &sum, &tail) != 3 || got != r ||
            bytes < sizeof(struct part_head))
            BAD();
        man->parts[r] = (struct ckpt_local_part){.bytes = bytes, .sum = sum};
    }
    while (++line, (s = next_line(&at))) {
        rc = optional_line(s, man, &settings);
        if (rc < 0) BAD();
        CAIRN_CHECK(rc);
    }
#undef BAD
    CAIRN_CHECK(strbuf_finish(&settings));
    if (settings.len) CAIRN_CHECK_ALLOC(man->settings = strdup(strbuf_str(&settings)));
cleanup:
    free(text);
    strbuf_free(&settings);
    if (rc) ckpt_local_manifest_free(man);
    return rc;
}

int ckpt_local_manifest_bcast(struct ckpt_local_manifest *man, MPI_Comm comm)
{
    int rc = 0, rank = 0;
    uint64_t len = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) len = man->settings ? strlen(man->settings) + 1 : 0;
    struct ckpt_local_manifest keep = *man;
    CAIRN_CHECK_MPI(MPI_Bcast(man, (int)sizeof *man, MPI_BYTE, 0, comm));
    CAIRN_CHECK_MPI(MPI_Bcast(&len, 1, MPI_UINT64_T, 0, comm));
    if (rank != 0) { /* rank 0's pointers mean nothing here */
        man->parts = calloc((size_t)man->world, sizeof *man->parts);
        man->settings = len ? malloc(len) : NULL;
        man->groups = calloc((size_t)man->n_groups + 1, sizeof *man->groups);
        rc = man->parts && (man->settings || !len) && man->groups
                 ? 0 : cairn_err_set(CAIRN_ENOMEM, __FILE__, __LINE__, "out of memory");
    } else {
        *man = keep;
    }
    CAIRN_CHECK(coll_agree(comm, rc));
    CAIRN_CHECK_MPI(MPI_Bcast(man->parts, 2 * man->world, MPI_UINT64_T, 0, comm));
    if (len) CAIRN_CHECK_MPI(MPI_Bcast(man->settings, (int)len, MPI_CHAR, 0, comm));
    if (man->n_groups)
        CAIRN_CHECK_MPI(MPI_Bcast(man->groups, man->n_groups * (int)sizeof *man->groups, MPI_BYTE, 0, comm));
cleanup:
    return rc;
}

/* Serial: one copy of part r at path, checked whole: 0, or
 * CAIRN_ECORRUPT saying why. */
static int verify_copy(const char *path, int r, const struct ckpt_local_manifest *man)
{
    char *buf = NULL;
    int rc = lp_check_copy(path, r, man);
    if (rc == 0) rc = lp_read_file(path, man->parts[r].bytes, &buf);
    if (rc == 0) {
        const struct part_head *h = (const struct part_head *)buf;
        size_t head = sizeof *h + (size_t)h->n_blobs * sizeof(struct part_rec);
        bool ok = h->n_blobs <= (man->parts[r].bytes - sizeof *h) / sizeof(struct part_rec) &&
                  h->data_bytes == man->parts[r].bytes - head && h->data_bytes % 4 == 0 &&
                  h->head_sum == lp_head_sum(buf, head) &&
                  checksum_part(buf + head, 4, (int64_t)(h->data_bytes / 4), 0) == man->parts[r].sum;
        if (!ok) rc = cairn_err_set(CAIRN_ECORRUPT, __FILE__, __LINE__, "%s fails its checksum", path);
    }
    free(buf);
    return rc;
}

int ckpt_local_verify(const char *path, const struct plan *job, FILE *out)
{
    int rc = 0, elsewhere = 0;
    struct ckpt_local_manifest man = {0};
    struct strbuf ours = {0}, mine = {0}, theirs = {0};
    char id[17], copy[4400];
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    CAIRN_CHECK(ckpt_local_manifest_read(path, &man));
    if (job && man.settings) {
        CAIRN_CHECK(ckpt_settings(job, &ours));
        CAIRN_CHECK(ckpt_settings_fold(strbuf_str(&ours), job, &mine));
        CAIRN_CHECK(ckpt_settings_fold(man.settings, job, &theirs));
        if (strcmp(strbuf_str(&mine), strbuf_str(&theirs)) != 0)
            CAIRN_FAIL(CAIRN_EINPUT, "%s was written for other settings", path);
    } else if (job && (ckpt_local_identity(job, id) || memcmp(id, man.identity, 17) != 0)) {
        CAIRN_FAIL(CAIRN_EINPUT, "%s was written for another layout or other settings", path);
    }
    if (!man.root[0])
        CAIRN_FAIL(CAIRN_EINPUT, "%s: an older cairn wrote it, and its manifest does not say where its parts are",
                   path);
    if (man.settings && man.n_groups) { /* the loader's checks, records and all */
        CAIRN_CHECK(lp_verify_parts(path, &man, out, &elsewhere));
        goto done;
    }
    for (int r = 0; r < man.world; r++) {
        int found = 0, prc = 0;
        for (int partner = 0; partner < 2 && found <= 0; partner++) {
            struct stat st;
            if (lp_part_path(copy, sizeof copy, man.root, name, partner ? "partner" : "rank", r) ||
                lstat(copy, &st) != 0)
                continue;
            prc = verify_copy(copy, r, &man);
            found = prc ? -1 : 1;
            if (found > 0 && out) fprintf(out, "ok\trank %d's part (%s)\n", r, partner ? "partner copy" : "own copy");
        }
        if (found < 0) CAIRN_FAIL(prc, "%s", cairn_errmsg()); /* every copy here is damaged */
        if (!found) elsewhere++;
    }
done:
    if (elsewhere && out)
        fprintf(out, "%d of %d parts are on other nodes (not under %s here): not checked\n", elsewhere,
                man.world, man.root);
cleanup:
    ckpt_local_manifest_free(&man);
    strbuf_free(&ours);
    strbuf_free(&mine);
    strbuf_free(&theirs);
    return rc;
}
