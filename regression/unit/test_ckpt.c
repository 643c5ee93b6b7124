/* Checkpoint building blocks: the checksum and the index file. */
#include "unit.h"

#include "cairn/checksum.h"
#include "cairn/ckpt_index.h"
#include "cairn/partition.h"

#include <sys/stat.h>
#include <unistd.h>

static void checksum_splits_add_up(void **state)
{
    (void)state;
    double v[1000];
    float w[999];
    for (int i = 0; i < 1000; i++) v[i] = i * 0.37 - 5;
    for (int i = 0; i < 999; i++) w[i] = (float)(i * 1.5);
    uint64_t whole = checksum_part(v, 8, 1000, 0), whole4 = checksum_part(w, 4, 999, 0);
    /* the file format: values from a Python transcription of checksum.h's formula */
    assert_true(whole == UINT64_C(0x6ab4a6bfd8a74386));
    assert_true(whole4 == UINT64_C(0xdc80e85584715ed6));
    for (int parts = 1; parts <= 7; parts++) {
        uint64_t sum = 0, sum4 = 0;
        for (int p = 0; p < parts; p++) {
            int64_t lo, hi;
            part_range(1000, parts, p, &lo, &hi);
            sum += checksum_part(v + lo, 8, hi - lo, lo);
            part_range(999, parts, p, &lo, &hi);
            sum4 += checksum_part(w + lo, 4, hi - lo, lo);
        }
        assert_true(sum == whole);
        assert_true(sum4 == whole4);
    }
}

static void checksum_sees_changes(void **state)
{
    (void)state;
    int64_t v[64] = {0};
    uint64_t zero = checksum_part(v, 8, 64, 0);
    for (int i = 0; i < 64; i++) {
        for (int bit = 0; bit < 64; bit += 7) {
            v[i] ^= (int64_t)(UINT64_C(1) << bit);
            assert_true(checksum_part(v, 8, 64, 0) != zero); /* any single flip */
            v[i] ^= (int64_t)(UINT64_C(1) << bit);
        }
    }
    v[3] = 5; /* swapped elements */
    uint64_t a = checksum_part(v, 8, 64, 0);
    v[3] = 0;
    v[4] = 5;
    assert_true(checksum_part(v, 8, 64, 0) != a);
    char h1[17], h2[17];
    checksum_text("seed=1\n", h1);
    checksum_text("seed=2\n", h2);
    assert_int_equal(strlen(h1), 16);
    assert_string_not_equal(h1, h2);
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Every pair of flipped bits in a dataset changes the checksum: the two
 * flipped sign bits that cancelled in the first, linear version; all pairs
 * within one element; and all pairs in different elements, found at once
 * by sorting each single flip's change d and looking for a -d. */
static void checksum_sees_two_flips(void **state)
{
    (void)state;
    enum { N = 200, BITS = N * 64 };
    double v[N];
    for (int i = 0; i < N; i++) v[i] = i % 7 ? i * 0.37 - 5 : 0.0;
    const uint64_t base = checksum_part(v, 8, N, 0);
    double w[N];
    memcpy(w, v, sizeof w);
    w[10] = -w[10], w[20] = -w[20];
    assert_true(checksum_part(w, 8, N, 0) != base);
    uint64_t *d = malloc(BITS * sizeof *d), *neg = malloc(BITS * sizeof *neg);
    assert_non_null(d);
    assert_non_null(neg);
    for (int i = 0; i < N; i++) {
        uint64_t x;
        memcpy(&x, &v[i], 8);
        for (int b = 0; b < 64; b++) {
            uint64_t y = x ^ (UINT64_C(1) << b);
            d[i * 64 + b] = checksum_part(&y, 8, 1, i) - checksum_part(&x, 8, 1, i);
            for (int c = b + 1; c < 64; c++) {
                uint64_t z = y ^ (UINT64_C(1) << c);
                assert_true(checksum_part(&z, 8, 1, i) != checksum_part(&x, 8, 1, i));
            }
        }
    }
    for (int k = 0; k < BITS; k++) neg[k] = -d[k];
    qsort(d, BITS, sizeof *d, by_u64);
    qsort(neg, BITS, sizeof *neg, by_u64);
    int hits = 0;
    for (int a = 0, b = 0; a < BITS && b < BITS;) { /* d_p + d_q == 0 for some p, q */
        if (d[a] == neg[b]) hits++, a++;
        else if (d[a] < neg[b]) a++;
        else b++;
    }
    assert_int_equal(hits, 0);
    free(d);
    free(neg);
}

static char dir[] = "/tmp/cairn-unit-XXXXXX";

static void index_round_trip(void **state)
{
    (void)state;
    struct ckpt_index idx = {0}, back = {0};
    assert_int_equal(ckpt_index_read(dir, &idx), 0); /* missing: empty */
    assert_int_equal(idx.n, 0);
    struct ckpt_entry e = {.epoch = 2, .step = 0, .bytes = 10, .ok = true};
    ckpt_file_name(2, 0, e.file, sizeof e.file);
    assert_string_equal(e.file, "ckpt-e000002.h5");
    assert_int_equal(ckpt_index_put(&idx, &e), 0);
    e.epoch = 1;
    ckpt_file_name(1, 7, e.file, sizeof e.file);
    assert_string_equal(e.file, "ckpt-e000001-s000007.h5");
    e.step = 7;
    assert_int_equal(ckpt_index_put(&idx, &e), 0); /* sorted in */
    e.epoch = 2;
    e.step = 0;
    e.ok = false;
    ckpt_file_name(2, 0, e.file, sizeof e.file);
    assert_int_equal(ckpt_index_put(&idx, &e), 0); /* replaces (2, 0) */
    assert_int_equal(idx.n, 2);
    assert_true(idx.v[0].epoch == 1 && idx.v[1].epoch == 2);
    assert_int_equal(ckpt_index_newest_ok(&idx, idx.n), 0);
    assert_int_equal(ckpt_index_write_tmp(dir, &idx), 0);
    assert_int_equal(ckpt_index_read(dir, &back), 0); /* not committed yet */
    assert_int_equal(back.n, 0);
    assert_int_equal(ckpt_index_commit_tmp(dir, NULL), 0);
    assert_int_equal(ckpt_index_read(dir, &back), 0);
    assert_int_equal(back.n, 2);
    assert_false(back.v[1].ok);
    assert_true(back.v[0].step == 7 && back.v[0].bytes == 10);
    struct ckpt_entry found;
    char path[512];
    assert_int_equal(ckpt_index_locate(dir, 2, &found, path, sizeof path), CAIRN_ENOCKPT);
    assert_non_null(strstr(cairn_errmsg(), "no such checkpoint: epoch 2"));
    ckpt_index_remove(&back, 0);
    assert_int_equal(back.n, 1);
    ckpt_index_free(&idx);
    ckpt_index_free(&back);
}

/* ckpt_index_update's edits: one that lists a checkpoint and drops the
 * older one (whose file goes, after the index is in place), and one that
 * keeps the index as it was (never rewritten). */
static int keep_newest(struct ckpt_index *idx, struct ckpt_index *gone, void *arg)
{
    const struct ckpt_entry *e = arg;
    for (int i = idx->n - 1; i >= 0; i--)
        if (ckpt_index_put(gone, &idx->v[i]) == 0) ckpt_index_remove(idx, i);
    return ckpt_index_put(idx, e);
}

static int no_change(struct ckpt_index *idx, struct ckpt_index *gone, void *arg)
{
    (void)idx, (void)gone;
    ++*(int *)arg;
    return CKPT_INDEX_KEEP;
}

static int points_seen;
static void count_point(void *arg, const char *point)
{
    (void)arg;
    points_seen += strcmp(point, "written") == 0 ? 1 : strcmp(point, "listed") == 0 ? 10 : 100;
}

static void index_update_edits(void **state)
{
    (void)state;
    char sub[256], path[300];
    struct ckpt_index back = {0};
    struct ckpt_entry a = {.epoch = 1, .bytes = 1, .ok = true, .file = "a.h5"},
                      b = {.epoch = 2, .bytes = 2, .ok = true, .file = "b.h5"};
    struct ckpt_index_faults f = {.at = count_point, .written = "written", .listed = "listed"};
    bool listed = false;
    int calls = 0;
    snprintf(sub, sizeof sub, "%s/update", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(path, sizeof path, "%s/a.h5", sub);
    FILE *fa = fopen(path, "w");
    assert_non_null(fa);
    fclose(fa);
    assert_int_equal(ckpt_index_update(sub, keep_newest, &a, NULL, &listed), 0);
    assert_true(listed);
    assert_int_equal(ckpt_index_update(sub, keep_newest, &b, &f, &listed), 0);
    assert_int_equal(points_seen, 11); /* written, then listed */
    assert_int_equal(access(path, F_OK), -1); /* a.h5 left the index, then the disk */
    assert_int_equal(ckpt_index_read(sub, &back), 0);
    assert_int_equal(back.n, 1);
    assert_string_equal(back.v[0].file, "b.h5");
    ckpt_index_free(&back);
    snprintf(path, sizeof path, "%s/index", sub);
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    assert_int_equal(ckpt_index_update(sub, no_change, &calls, &f, &listed), 0);
    assert_int_equal(calls, 1);
    assert_false(listed);
    assert_int_equal(points_seen, 11); /* nothing written */
    assert_int_equal(stat(path, &after), 0);
    assert_true(before.st_ino == after.st_ino && before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
    unlink(path);
    assert_int_equal(rmdir(sub), 0);
}

static void index_rejects_garbage(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/index", dir);
    FILE *f = fopen(path, "w");
    fputs("# cairn checkpoint index v1\n0\t0\tckpt-e000000.h5\t5\tok\nnonsense here\n", f);
    fclose(f);
    struct ckpt_index idx = {0};
    assert_int_equal(ckpt_index_read(dir, &idx), CAIRN_EINPUT);
    assert_non_null(strstr(cairn_errmsg(), "/index:3: malformed checkpoint index line"));
    f = fopen(path, "w");
    fputs("0\t0\t../escape.h5\t5\tok\n", f); /* entries stay inside the directory */
    fclose(f);
    assert_int_equal(ckpt_index_read(dir, &idx), CAIRN_EINPUT);
    unlink(path);
}

static int make_dir(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/index", dir);
    unlink(path);
    return rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(checksum_splits_add_up),
        cmocka_unit_test(checksum_sees_changes),
        cmocka_unit_test(checksum_sees_two_flips),
        cmocka_unit_test(index_round_trip),
        cmocka_unit_test(index_update_edits),
        cmocka_unit_test(index_rejects_garbage),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
