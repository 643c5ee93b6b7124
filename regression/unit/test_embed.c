/* The embedding kernels: row-sparse sums and their tree against dense
 * references (bit for bit), the bag kernels against plain loops, and the
 * optimizers on rows against the dense update; the balance of a batch
 * larger than the data. */
#include "unit.h"

#include "cairn/embed_bag.h"
#include "cairn/embed_ids.h"
#include "cairn/optim.h"
#include "cairn/partition.h"
#include "cairn/rng.h"
#include "cairn/sparse_rows.h"

#include <math.h>

enum { ROWS = 40, DIM = 3 };

/* Random rows of leaf i (never zero, so dense zeros mean "no row"); a
 * dense copy [ROWS, DIM] beside it. */
static void make_leaf(struct sparse_rows *s, double *dense, uint64_t i, int density)
{
    assert_int_equal(sparse_rows_reserve(s, DT_F64, DIM, ROWS), 0);
    memset(dense, 0, sizeof(double) * ROWS * DIM);
    for (int64_t p = 0; p < ROWS; p++) {
        if (rng_u64(1, i, (uint64_t)p) % 100 >= (uint64_t)density) continue;
        s->pos[s->n] = p;
        for (int d = 0; d < DIM; d++) {
            double v = rng_normal(2, i, (uint64_t)(p * DIM + d)) + 0.01;
            ((double *)s->val)[s->n * DIM + d] = dense[p * DIM + d] = v;
        }
        s->n++;
    }
}

static void to_dense(const struct sparse_rows *s, double *dense)
{
    memset(dense, 0, sizeof(double) * ROWS * DIM);
    for (int64_t j = 0; j < s->n; j++) {
        assert_true(j == 0 || s->pos[j] > s->pos[j - 1]);
        memcpy(dense + s->pos[j] * DIM, (double *)s->val + j * DIM, sizeof(double) * DIM);
    }
}

/* The dense bisection sum of leaves [lo, hi) (partition.h's tree). */
static void dense_tree(double (*leaf)[ROWS * DIM], int64_t lo, int64_t hi, double *out)
{
    if (hi - lo == 1) {
        memcpy(out, leaf[lo], sizeof(double) * ROWS * DIM);
        return;
    }
    double r[ROWS * DIM];
    int64_t m = bisect_mid(lo, hi);
    dense_tree(leaf, lo, m, out);
    dense_tree(leaf, m, hi, r);
    for (int i = 0; i < ROWS * DIM; i++) out[i] = out[i] == 0 ? r[i] : r[i] == 0 ? out[i] : out[i] + r[i];
}

static void add_matches_dense(void **state)
{
    (void)state;
    struct sparse_rows a = {0}, b = {0}, c = {0};
    double da[ROWS * DIM], db[ROWS * DIM], dc[ROWS * DIM];
    make_leaf(&a, da, 1, 30);
    make_leaf(&b, db, 2, 60);
    assert_int_equal(sparse_rows_add(&c, &a, &b), 0);
    to_dense(&c, dc);
    for (int i = 0; i < ROWS * DIM; i++) assert_true(dc[i] == da[i] + db[i]);
    int64_t i0, i1;
    sparse_rows_range(&c, 10, 20, &i0, &i1);
    for (int64_t j = 0; j < c.n; j++) assert_true((c.pos[j] >= 10 && c.pos[j] < 20) == (j >= i0 && j < i1));
    sparse_rows_free(&a);
    sparse_rows_free(&b);
    sparse_rows_free(&c);
}

/* The tree's sum is the dense bisection sum, for any leaf count, with
 * leaves missing; and two halves summed apart then added (two replicas)
 * give the same bits as one tree. */
static void tree_matches_dense_and_halves(void **state)
{
    (void)state;
    static double leaf[16][ROWS * DIM];
    double want[ROWS * DIM], got[ROWS * DIM];
    struct sparse_tree t = {0}, h[2] = {{0}};
    struct sparse_rows s = {0}, top = {0};
    for (int64_t M = 1; M <= 16; M++) {
        sparse_tree_reset(&t, DT_F64, DIM, 0, M);
        for (int64_t i = 0; i < M; i++) {
            if (i % 5 == 3) { /* never added: empty */
                memset(leaf[i], 0, sizeof leaf[i]);
                continue;
            }
            make_leaf(&s, leaf[i], (uint64_t)(M * 100 + i), 25);
            assert_int_equal(sparse_tree_add(&t, i, &s), 0);
            assert_int_equal(s.n, 0);
        }
        const struct sparse_rows *sum;
        assert_int_equal(sparse_tree_sum(&t, &sum), 0);
        dense_tree(leaf, 0, M, want);
        to_dense(sum, got);
        assert_memory_equal(got, want, sizeof want);
        if (M % 2) continue;
        for (int r = 0; r < 2; r++) {
            sparse_tree_reset(&h[r], DT_F64, DIM, r * M / 2, (r + 1) * M / 2);
            for (int64_t i = r * M / 2; i < (r + 1) * M / 2; i++) {
                if (i % 5 == 3) continue;
                make_leaf(&s, leaf[i], (uint64_t)(M * 100 + i), 25);
                assert_int_equal(sparse_tree_add(&h[r], i, &s), 0);
            }
        }
        const struct sparse_rows *s0, *s1;
        assert_int_equal(sparse_tree_sum(&h[0], &s0), 0);
        assert_int_equal(sparse_tree_sum(&h[1], &s1), 0);
        assert_int_equal(sparse_rows_add(&top, s0, s1), 0);
        to_dense(&top, got);
        assert_memory_equal(got, want, sizeof want);
    }
    sparse_tree_reset(&t, DT_F64, DIM, 0, 4); /* out of order, out of range */
    make_leaf(&s, leaf[0], 9, 50);
    assert_int_equal(sparse_tree_add(&t, 2, &s), 0);
    make_leaf(&s, leaf[0], 9, 50);
    assert_int_equal(sparse_tree_add(&t, 1, &s), CAIRN_ERUNTIME);
    assert_int_equal(sparse_tree_add(&t, 4, &s), CAIRN_ERUNTIME);
    sparse_tree_free(&t);
    sparse_tree_free(&h[0]);
    sparse_tree_free(&h[1]);
    sparse_rows_free(&s);
    sparse_rows_free(&top);
}

/* touch, combine and grad against plain loops over the ids. */
static void bags_match_plain_loops(void **state)
{
    (void)state;
    enum { N = 50, K = 3, R = 30, D = 4 };
    int64_t ids[N * K], pos[N * K], slot[N * K], n_rows;
    static int64_t mark[(N * K) << 10]; /* room for the n_pos of the sorted path below */
    for (size_t i = 0; i < sizeof mark / sizeof *mark; i++) mark[i] = -1;
    for (int i = 0; i < N * K; i++) {
        ids[i] = (int64_t)(rng_u64(3, 1, (uint64_t)i) % (R + 3)) - 3; /* some -1..-3: made -1 */
        if (ids[i] < 0 || i % K == 2) ids[i] = i % 7 == 0 ? ids[i - i % K] : -1;
        if (ids[i] < -1) ids[i] = -1;
    }
    assert_int_equal(embed_touch(ids, N * K, R, pos, &n_rows, slot), 0);
    int64_t a = spread_step(R);
    for (int64_t j = 1; j < n_rows; j++) assert_true(pos[j] > pos[j - 1]);
    for (int i = 0; i < N * K; i++)
        assert_true(ids[i] < 0 ? slot[i] == -1 : pos[slot[i]] == spread_pos(ids[i], R, a));
    double rows[N * K * D], out[N * (D + 2)], g[N * (D + 2)];
    for (int64_t i = 0; i < n_rows * D; i++) rows[i] = rng_normal(4, 1, (uint64_t)i);
    for (int i = 0; i < N * (D + 2); i++) g[i] = rng_normal(4, 2, (uint64_t)i);
    for (int path = 0; path < 4; path++) { /* mean or sum; the used slots scanned or sorted */
        int mean = path & 1;
        int64_t n_pos = path & 2 ? n_rows << 10 : n_rows; /* as if the slots were few of many: sorted */
        embed_combine(DT_F64, N, K, slot, rows, D, mean, out + 2, D + 2); /* after 2 dense columns */
        struct sparse_rows leaf = {0};
        assert_int_equal(embed_grad(DT_F64, N, K, slot, pos, n_pos, g + 2, D + 2, D, mean, mark, &leaf), 0);
        for (int i = 0; i < N * K; i++) assert_int_equal(mark[i], -1);
        static double want[N * K * D];
        memset(want, 0, sizeof want);
        for (int s = 0; s < N; s++) {
            double sum[D] = {0};
            int c = 0;
            for (int j = 0; j < K; j++) c += ids[s * K + j] >= 0;
            for (int j = 0; j < K; j++) {
                int64_t r = slot[s * K + j];
                if (r < 0) continue;
                for (int d = 0; d < D; d++) {
                    sum[d] = sum[d] + rows[r * D + d];
                    want[r * D + d] += mean ? g[s * (D + 2) + 2 + d] / c : g[s * (D + 2) + 2 + d];
                }
            }
            for (int d = 0; d < D; d++)
                assert_true(out[s * (D + 2) + 2 + d] == (c == 0 ? 0 : mean ? sum[d] / c : sum[d]));
        }
        int64_t seen = 0;
        for (int64_t r = 0; r < n_rows; r++) {
            bool used = false;
            for (int i = 0; i < N * K; i++) used = used || slot[i] == r;
            if (!used) continue;
            assert_true(leaf.pos[seen] == pos[r]);
            assert_memory_equal((double *)leaf.val + seen * D, want + r * D, sizeof(double) * D);
            seen++;
        }
        assert_int_equal(leaf.n, seen);
        for (int i = 0; i < N * K; i++) assert_int_equal(mark[i], -1);
        sparse_rows_free(&leaf);
    }
}

/* Rows updated one at a time are the dense update's bits; adagrad's rule. */
static void optimizers_on_rows(void **state)
{
    (void)state;
    enum { N = 24 };
    const enum optimizer opts[] = {OPT_SGD, OPT_MOMENTUM, OPT_ADAGRAD, OPT_ADAM};
    for (size_t o = 0; o < sizeof opts / sizeof *opts; o++) {
        struct optim_args a = {opts[o], 0.1, 0.01, 0.9, 0.9, 0.999, 1e-8, 0.1, 0.001};
        float w[N], g[N], m[N], v[N], w2[N], m2[N], v2[N];
        for (int i = 0; i < N; i++) {
            w[i] = w2[i] = (float)rng_normal(5, 1, (uint64_t)i);
            g[i] = (float)rng_normal(5, 2, (uint64_t)i);
            m[i] = m2[i] = (float)fabs(rng_normal(5, 3, (uint64_t)i));
            v[i] = v2[i] = (float)fabs(rng_normal(5, 4, (uint64_t)i));
        }
        float w0 = w[0], m0 = m[0];
        optim_update(DT_F32, &a, N, w, g, m, v);
        for (int r = 0; r < N / 4; r++) optim_update(DT_F32, &a, 4, w2 + 4 * r, g + 4 * r, m2 + 4 * r, v2 + 4 * r);
        assert_memory_equal(w, w2, sizeof w);
        assert_memory_equal(m, m2, sizeof m);
        if (opts[o] == OPT_ADAGRAD) {
            float gi = g[0] + 0.01f * w0, acc = m0 + gi * gi;
            assert_true(m[0] == acc && w[0] == w0 - 0.1f * gi / (sqrtf(acc) + 1e-8f));
        }
    }
}

/* A batch beyond the data is one step of all of it: the same figures as
 * a batch of exactly n, with memory for n samples (10^10 int64 ids would
 * not be allocated, and abort under the sanitizers). */
static void balance_batch_beyond_data(void **state)
{
    (void)state;
    const int64_t ids[] = {0, 5, -1, 7, 3, 3, 9, 1};
    struct embed_balance whole, huge;
    assert_int_equal(embed_balance(ids, 4, 2, 10, 3, 4, true, &whole), 0);
    assert_int_equal(embed_balance(ids, 4, 2, 10, 3, INT64_C(10000000000), true, &huge), 0);
    assert_int_equal(huge.steps, 1);
    assert_memory_equal(&whole, &huge, sizeof whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(add_matches_dense),
        cmocka_unit_test(tree_matches_dense_and_halves),
        cmocka_unit_test(bags_match_plain_loops),
        cmocka_unit_test(optimizers_on_rows),
        cmocka_unit_test(balance_batch_beyond_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
