/* Kernels of lm.c for one element type: included with REAL, SUFFIX, GEMM
 * and SQRT set; the elementwise functions are vmath.h's.  R = n ctx rows
 * throughout. */

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define F(name) CAT(name, SUFFIX)
#define VM(name) CAT(CAT(vm_, name), SUFFIX)

static void F(gemm)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, REAL alpha, const REAL *a,
                    int64_t lda, const REAL *b, int64_t ldb, REAL beta, REAL *c, int64_t ldc)
{
    if (m == 0 || n == 0) return; /* k = 0 (no sequences): BLAS sets C = beta C */
    GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m,
         (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/* Dropout at `site` of n samples of `per` elements each: dst = src, each
 * element zeroed or scaled by 1 / (1 - p) (src may be dst). */
static void F(drop)(double p, const struct lm_drop *k, int site, int64_t n, int64_t per, const REAL *src,
                    REAL *dst)
{
    REAL scale = (REAL)(1 / (1 - p));
    for (int64_t i = 0; i < n; i++) {
        uint64_t key = drop_key(k, i);
        for (int64_t e = 0; e < per; e++)
            dst[i * per + e] = src[i * per + e] * (drop_u(k, key, site, e) < p ? (REAL)0 : scale);
    }
}

/* The width of a head, and of this rank's heads (qkv has 3 of it). */
static int64_t F(head_dim)(const struct lm_shape *s) { return s->dh ? s->dh : s->d / s->heads; }
static int64_t F(att_width)(const struct lm_shape *s) { return s->heads * F(head_dim)(s); }

/* The tape's parts, for n sequences. */
struct F(tape) {
    REAL *xhat1, *xn1, *rstd1, *qkv, *P, *a, *xhat2, *xn2, *rstd2, *u, *gl;
    REAL *o, *Pd; /* with dropout or parts: an output [R, d]; with dropout: a head's kept P */
};

static struct F(tape) F(tape_parts)(const struct lm_shape *s, int64_t n, REAL *t)
{
    int64_t R = n * s->ctx, d = s->d, dq = F(att_width)(s);
    struct F(tape) p;
    p.xhat1 = t, t += R * d;
    p.xn1 = t, t += R * d;
    p.rstd1 = t, t += R;
    p.qkv = t, t += R * 3 * dq;
    p.P = t, t += n * s->heads * s->ctx * s->ctx;
    p.a = t, t += R * dq;
    p.xhat2 = t, t += R * d;
    p.xn2 = t, t += R * d;
    p.rstd2 = t, t += R;
    p.u = t, t += R * s->mlp;
    p.gl = t;
    p.o = p.Pd = NULL;
    if (s->drop > 0 || s->parts > 1) p.o = t + R * s->mlp;
    if (s->drop > 0) p.Pd = p.o + R * d;
    return p;
}

/* Layer norm of R rows of d: xhat, 1 / sd, and y = xhat g + b. */
static void F(ln_forward)(int64_t R, int64_t d, const REAL *x, const REAL *g, const REAL *b,
                          REAL *xhat, REAL *rstd, REAL *y)
{
    for (int64_t r = 0; r < R; r++) {
        const REAL *xr = x + r * d;
        REAL mean = 0, var = 0;
        for (int64_t j = 0; j < d; j++) mean += xr[j];
        mean /= (REAL)d;
        for (int64_t j = 0; j < d; j++) var += (xr[j] - mean) * (xr[j] - mean);
        var /= (REAL)d;
        REAL rs = (REAL)1 / SQRT(var + (REAL)1e-5);
        rstd[r] = rs;
        for (int64_t j = 0; j < d; j++) {
            REAL xh = (xr[j] - mean) * rs;
            xhat[r * d + j] = xh;
            y[r * d + j] = xh * g[j] + b[j];
        }
    }
}

/* Column sums of dy[R, cols] into v (set, or added to). */
static void F(colsum)(int64_t R, int64_t cols, const REAL *dy, REAL *v, bool accumulate)
{
    if (!accumulate) memset(v, 0, (size_t)cols * sizeof(REAL));
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < cols; j++) v[j] += dy[r * cols + j];
}

/* Layer norm's backward: dg and db from dy (the gradient of its output),
 * and dx += the input's gradient. */
static void F(ln_backward)(int64_t R, int64_t d, const REAL *xhat, const REAL *rstd, const REAL *g,
                           const REAL *dy, REAL *dg, REAL *db, bool accumulate, REAL *dx)
{
    if (!accumulate) {
        memset(dg, 0, (size_t)d * sizeof(REAL));
        memset(db, 0, (size_t)d * sizeof(REAL));
    }
    for (int64_t r = 0; r < R; r++) {
        const REAL *xh = xhat + r * d, *dyr = dy + r * d;
        REAL m1 = 0, m2 = 0; /* means of dxhat and of dxhat xhat */
        for (int64_t j = 0; j < d; j++) {
            REAL dxh = dyr[j] * g[j];
            dg[j] += dyr[j] * xh[j];
            db[j] += dyr[j];
            m1 += dxh;
            m2 += dxh * xh[j];
        }
        m1 /= (REAL)d;
        m2 /= (REAL)d;
        for (int64_t j = 0; j < d; j++) dx[r * d + j] += rstd[r] * (dyr[j] * g[j] - m1 - xh[j] * m2);
    }
}

/* y[R, cols] = x[R, in] W + b (broadcast), or, with add, y += that. */
static void F(affine)(int64_t R, int64_t in, int64_t cols, const REAL *x, const REAL *W,
                      const REAL *b, REAL *y, bool add)
{
    if (!add)
        for (int64_t r = 0; r < R; r++) memcpy(y + r * cols, b, (size_t)cols * sizeof(REAL));
    else
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < cols; j++) y[r * cols + j] += b[j];
    F(gemm)(false, false, R, cols, in, 1, x, in, W, cols, 1, y, cols);
}

/* The backward of y = x W + b, x [R, in], W [in, out]: db and dW (set,
 * or added to) and dx = dy W^T [R, in]. */
static void F(affine_back)(int64_t R, int64_t in, int64_t out, const REAL *x, const REAL *W, const REAL *dy,
                           REAL *db, REAL *dW, bool accumulate, REAL *dx)
{
    F(colsum)(R, out, dy, db, accumulate);
    F(gemm)(true, false, in, out, R, 1, x, in, dy, out, accumulate ? 1 : 0, dW, out);
    F(gemm)(false, true, R, in, out, 1, dy, out, W, out, 0, dx, in);
}

/* Dropout's factors for (this rank's) head h of one sequence's probabilities, [ctx, ctx]
 * (0 or 1 / (1 - p) on and below the diagonal, 0 above); key: the
 * sample's. */
static void F(attn_mask)(const struct lm_shape *s, const struct lm_drop *k, uint64_t key, int64_t h, REAL *M)
{
    int64_t c = s->ctx;
    REAL scale = (REAL)(1 / (1 - s->drop));
    for (int64_t i = 0; i < c; i++)
        for (int64_t j = 0; j < c; j++)
            M[i * c + j] = j > i || drop_u(k, key, LM_DROP_ATTN, ((s->head0 + h) * c + i) * c + j) < s->drop
                               ? (REAL)0 : scale;
}

/* Causal attention of one sequence (this rank's heads, d their width
 * here): a[ctx, d] (its rows) from qkv[ctx, 3d];
 * P[heads, ctx, ctx] the probabilities, zero above the diagonal.  With
 * dropout (k not NULL, key the sample's), a is from the kept
 * probabilities, made in Pd [ctx, ctx]; P holds them all. */
static void F(attend)(const struct lm_shape *s, const REAL *qkv, REAL *P, REAL *a, const struct lm_drop *kd,
                      uint64_t key, REAL *Pd)
{
    int64_t c = s->ctx, d = F(att_width)(s), dh = F(head_dim)(s);
    REAL scale = (REAL)1 / SQRT((REAL)dh);
    for (int64_t h = 0; h < s->heads; h++) {
        REAL *Ph = P + h * c * c;
        const REAL *q = qkv + h * dh, *k = qkv + d + h * dh, *v = qkv + 2 * d + h * dh;
        F(gemm)(false, true, c, c, dh, scale, q, 3 * d, k, 3 * d, 0, Ph, c);
        for (int64_t i = 0; i < c; i++) {
            REAL *row = Ph + i * c, m = row[0], sum = 0;
            for (int64_t j = 1; j <= i; j++) m = row[j] > m ? row[j] : m;
            VM(exp_shift)(i + 1, row, m);
            for (int64_t j = 0; j <= i; j++) sum += row[j];
            for (int64_t j = 0; j <= i; j++) row[j] /= sum;
            for (int64_t j = i + 1; j < c; j++) row[j] = 0;
        }
        if (kd) {
            F(attn_mask)(s, kd, key, h, Pd);
            for (int64_t e = 0; e < c * c; e++) Pd[e] *= Ph[e];
        }
        F(gemm)(false, false, c, dh, c, 1, kd ? Pd : Ph, c, v, 3 * d, 0, a + h * dh, d);
    }
}

/* Its backward: dqkv[ctx, 3d] from da[ctx, d]; dP: ctx x ctx scratch, and
 * with dropout (kd not NULL) M and Pd two more. */
static void F(attend_back)(const struct lm_shape *s, const REAL *qkv, const REAL *P, const REAL *da,
                           REAL *dP, REAL *dqkv, const struct lm_drop *kd, uint64_t key, REAL *M, REAL *Pd)
{
    int64_t c = s->ctx, d = F(att_width)(s), dh = F(head_dim)(s);
    REAL scale = (REAL)1 / SQRT((REAL)dh);
    for (int64_t h = 0; h < s->heads; h++) {
        const REAL *Ph = P + h * c * c, *q = qkv + h * dh, *k = qkv + d + h * dh, *v = qkv + 2 * d + h * dh;
        const REAL *dah = da + h * dh;
        if (kd) {
            F(attn_mask)(s, kd, key, h, M);
            for (int64_t e = 0; e < c * c; e++) Pd[e] = Ph[e] * M[e];
        }
        F(gemm)(false, true, c, c, dh, 1, dah, d, v, 3 * d, 0, dP, c);           /* dP = da v^T */
        F(gemm)(true, false, c, dh, c, 1, kd ? Pd : Ph, c, dah, d, 0, dqkv + 2 * d + h * dh, 3 * d); /* dv = P^T da */
        if (kd)
            for (int64_t e = 0; e < c * c; e++) dP[e] *= M[e]; /* through the dropout */
        for (int64_t i = 0; i < c; i++) { /* dS = P (dP - sum_j P dP), in place */
            const REAL *p = Ph + i * c;
            REAL *g = dP + i * c, dot = 0;
            for (int64_t j = 0; j <= i; j++) dot += p[j] * g[j];
            for (int64_t j = 0; j <= i; j++) g[j] = p[j] * (g[j] - dot);
            for (int64_t j = i + 1; j < c; j++) g[j] = 0;
        }
        F(gemm)(false, false, c, dh, c, scale, dP, c, k, 3 * d, 0, dqkv + h * dh, 3 * d);   /* dq */
        F(gemm)(true, false, c, dh, c, scale, dP, c, q, 3 * d, 0, dqkv + d + h * dh, 3 * d); /* dk */
    }
}

/* y += x W + b, x [R, in], through dropout at `site` with k (o: room for
 * x W + b).  Split into parts, x W is a partial sum, added up before b. */
static void F(residual)(const struct lm_shape *s, const struct lm_drop *k, const struct lm_tp *tp, int site,
                        int64_t n, int64_t in, const REAL *x, const REAL *W, const REAL *b, REAL *o, REAL *y)
{
    int64_t R = n * s->ctx, d = s->d;
    if (!k && !tp) {
        F(affine)(R, in, d, x, W, b, y, true);
        return;
    }
    if (!tp) {
        F(affine)(R, in, d, x, W, b, o, false);
    } else {
        F(gemm)(false, false, R, d, in, 1, x, in, W, d, 0, o, d);
        tp->sum(tp->ctx, o, R * d);
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < d; j++) o[r * d + j] += b[j];
    }
    if (k) F(drop)(s->drop, k, site, n, s->ctx * d, o, o);
    for (int64_t e = 0; e < R * d; e++) y[e] += o[e];
}

static void F(block_forward)(const struct lm_shape *s, int64_t n, const REAL *x, const REAL *const *p,
                             REAL *y, REAL *tape, const struct lm_drop *k, const struct lm_tp *tp)
{
    int64_t R = n * s->ctx, d = s->d, m = s->mlp, c = s->ctx, dq = F(att_width)(s);
    struct F(tape) t = F(tape_parts)(s, n, tape);
    F(ln_forward)(R, d, x, p[LM_LN1_G], p[LM_LN1_B], t.xhat1, t.rstd1, t.xn1);
    F(affine)(R, d, 3 * dq, t.xn1, p[LM_QKV_W], p[LM_QKV_B], t.qkv, false);
    for (int64_t i = 0; i < n; i++)
        F(attend)(s, t.qkv + i * c * 3 * dq, t.P + i * s->heads * c * c, t.a + i * c * dq, k,
                  k ? drop_key(k, i) : 0, t.Pd);
    /* h, the attention's residual, is built in y (the backward needs only LN2's tape of it) */
    if (y != x) memcpy(y, x, (size_t)(R * d) * sizeof(REAL));
    F(residual)(s, k, tp, LM_DROP_PROJ, n, dq, t.a, p[LM_PROJ_W], p[LM_PROJ_B], t.o, y);
    F(ln_forward)(R, d, y, p[LM_LN2_G], p[LM_LN2_B], t.xhat2, t.rstd2, t.xn2);
    F(affine)(R, d, m, t.xn2, p[LM_FC_W], p[LM_FC_B], t.u, false);
    VM(gelu)(R * m, t.u, t.gl);
    F(residual)(s, k, tp, LM_DROP_MLP, n, m, t.gl, p[LM_OUT_W], p[LM_OUT_B], t.o, y);
}

static void F(block_backward)(const struct lm_shape *s, int64_t n, const REAL *const *p, const REAL *tape,
                              const REAL *dy, REAL *const *dp, bool accumulate, REAL *dx, REAL *scratch,
                              const struct lm_drop *k, const struct lm_tp *tp)
{
    int64_t R = n * s->ctx, d = s->d, m = s->mlp, c = s->ctx, dq = F(att_width)(s);
    struct F(tape) t = F(tape_parts)(s, n, (REAL *)tape);
    REAL *du = scratch, *dxn = du + R * m, *dh = dxn + R * d, *da = dh + R * d, *dqkv = da + R * dq,
         *dP = dqkv + R * 3 * dq, *dk = NULL, *M = NULL, *Pd = NULL;
    if (k) dk = dP + c * c, M = dk + R * d, Pd = M + c * c;
    /* the MLP: out (through its dropout: dk), GELU, fc */
    const REAL *dyo = dy;
    if (k) {
        F(drop)(s->drop, k, LM_DROP_MLP, n, c * d, dy, dk);
        dyo = dk;
    }
    F(affine_back)(R, m, d, t.gl, p[LM_OUT_W], dyo, dp[LM_OUT_B], dp[LM_OUT_W], accumulate, du);
    VM(dgelu)(R * m, t.u, t.gl, du);
    F(affine_back)(R, d, m, t.xn2, p[LM_FC_W], du, dp[LM_FC_B], dp[LM_FC_W], accumulate, dxn);
    if (tp) tp->sum(tp->ctx, dxn, R * d);
    /* the residual, then LN2 */
    memcpy(dh, dy, (size_t)(R * d) * sizeof(REAL));
    F(ln_backward)(R, d, t.xhat2, t.rstd2, p[LM_LN2_G], dxn, dp[LM_LN2_G], dp[LM_LN2_B], accumulate, dh);
    /* the attention's projection (through its dropout), the attention, qkv */
    const REAL *dho = dh;
    if (k) {
        F(drop)(s->drop, k, LM_DROP_PROJ, n, c * d, dh, dk);
        dho = dk;
    }
    F(affine_back)(R, dq, d, t.a, p[LM_PROJ_W], dho, dp[LM_PROJ_B], dp[LM_PROJ_W], accumulate, da);
    for (int64_t i = 0; i < n; i++)
        F(attend_back)(s, t.qkv + i * c * 3 * dq, t.P + i * s->heads * c * c, da + i * c * dq, dP,
                       dqkv + i * c * 3 * dq, k, k ? drop_key(k, i) : 0, M, Pd);
    F(affine_back)(R, d, 3 * dq, t.xn1, p[LM_QKV_W], dqkv, dp[LM_QKV_B], dp[LM_QKV_W], accumulate, dxn);
    if (tp) tp->sum(tp->ctx, dxn, R * d);
    /* the residual, then LN1 (its parameters' gradients even without dx) */
    if (dx) memcpy(dx, dh, (size_t)(R * d) * sizeof(REAL));
    F(ln_backward)(R, d, t.xhat1, t.rstd1, p[LM_LN1_G], dxn, dp[LM_LN1_G], dp[LM_LN1_B], accumulate,
                   dx ? dx : dh);
}

/* Token ids as the stage input holds them (reals, exact up to 2^24 in f32). */
static int64_t F(id)(REAL v) { return (int64_t)v; }

static void F(embed_forward)(const struct lm_shape *s, int64_t n, const REAL *tokens, const REAL *tok,
                             const REAL *pos, REAL *y, const struct lm_drop *k)
{
    int64_t d = s->d;
    for (int64_t r = 0; r < n * s->ctx; r++) {
        const REAL *a = tok + F(id)(tokens[r]) * d, *b = pos + (r % s->ctx) * d;
        for (int64_t j = 0; j < d; j++) y[r * d + j] = a[j] + b[j];
    }
    if (k) F(drop)(s->drop, k, LM_DROP_EMBED, n, s->ctx * d, y, y);
}

/* Rows in order, so a table row used twice sums the same way every time. */
static void F(embed_backward)(const struct lm_shape *s, int64_t vocab, int64_t n, const REAL *tokens,
                              REAL *dy, REAL *dtok, REAL *dpos, bool accumulate, const struct lm_drop *k)
{
    int64_t d = s->d;
    if (k) F(drop)(s->drop, k, LM_DROP_EMBED, n, s->ctx * d, dy, dy);
    if (!accumulate) {
        memset(dtok, 0, (size_t)(vocab * d) * sizeof(REAL));
        memset(dpos, 0, (size_t)(s->ctx * d) * sizeof(REAL));
    }
    for (int64_t r = 0; r < n * s->ctx; r++) {
        REAL *a = dtok + F(id)(tokens[r]) * d, *b = dpos + (r % s->ctx) * d;
        for (int64_t j = 0; j < d; j++) {
            a[j] += dy[r * d + j];
            b[j] += dy[r * d + j];
        }
    }
}

/* The head's tape: xhat [R, d], xn [R, d], rstd [R]. */
static void F(head_forward)(const struct lm_shape *s, int64_t vocab, int64_t n, const REAL *x,
                            const REAL *const *p, REAL *y, REAL *tape)
{
    int64_t R = n * s->ctx, d = s->d;
    REAL *xhat = tape, *xn = xhat + R * d, *rstd = xn + R * d;
    F(ln_forward)(R, d, x, p[0], p[1], xhat, rstd, xn);
    F(gemm)(false, false, R, vocab, d, 1, xn, d, p[2], vocab, 0, y, vocab);
}

static void F(head_backward)(const struct lm_shape *s, int64_t vocab, int64_t n, const REAL *const *p,
                             const REAL *tape, const REAL *dy, REAL *const *dp, bool accumulate, REAL *dx,
                             REAL *scratch)
{
    int64_t R = n * s->ctx, d = s->d;
    const REAL *xhat = tape, *xn = xhat + R * d, *rstd = xn + R * d;
    F(gemm)(true, false, d, vocab, R, 1, xn, d, dy, vocab, accumulate ? 1 : 0, dp[2], vocab);
    F(gemm)(false, true, R, d, vocab, 1, dy, vocab, p[2], vocab, 0, scratch, d);
    REAL *to = dx ? dx : scratch + R * d;
    memset(to, 0, (size_t)(R * d) * sizeof(REAL));
    F(ln_backward)(R, d, xhat, rstd, p[0], scratch, dp[0], dp[1], accumulate, to);
}

/* One new position t of one sequence through a block: x [d] -> y [d]
 * (may alias); kc, vc [ctx, d] hold the keys and values of positions < t
 * and receive t's.  work: lm_step_work_numel. */
static void F(block_step)(const struct lm_shape *s, int64_t t, const REAL *x, const REAL *const *p, REAL *kc,
                          REAL *vc, REAL *y, REAL *work)
{
    int64_t d = s->d, m = s->mlp, dh = d / s->heads;
    REAL *xhat = work, *xn = xhat + d, *qkv = xn + d, *a = qkv + 3 * d, *u = a + d, *sc = u + m, *h = sc + s->ctx, rs;
    REAL scale = (REAL)1 / SQRT((REAL)dh);
    F(ln_forward)(1, d, x, p[LM_LN1_G], p[LM_LN1_B], xhat, &rs, xn);
    F(affine)(1, d, 3 * d, xn, p[LM_QKV_W], p[LM_QKV_B], qkv, false);
    memcpy(kc + t * d, qkv + d, (size_t)d * sizeof(REAL));
    memcpy(vc + t * d, qkv + 2 * d, (size_t)d * sizeof(REAL));
    for (int64_t hd = 0; hd < s->heads; hd++) {
        const REAL *q = qkv + hd * dh;
        REAL mx = 0, sum = 0;
        for (int64_t j = 0; j <= t; j++) {
            REAL v = 0;
            for (int64_t e = 0; e < dh; e++) v += q[e] * kc[j * d + hd * dh + e];
            sc[j] = v * scale;
            mx = j == 0 || sc[j] > mx ? sc[j] : mx;
        }
        VM(exp_shift)(t + 1, sc, mx);
        for (int64_t j = 0; j <= t; j++) sum += sc[j];
        for (int64_t e = 0; e < dh; e++) a[hd * dh + e] = 0;
        for (int64_t j = 0; j <= t; j++)
            for (int64_t e = 0; e < dh; e++) a[hd * dh + e] += sc[j] / sum * vc[j * d + hd * dh + e];
    }
    memcpy(h, x, (size_t)d * sizeof(REAL));
    F(affine)(1, d, d, a, p[LM_PROJ_W], p[LM_PROJ_B], h, true);
    F(ln_forward)(1, d, h, p[LM_LN2_G], p[LM_LN2_B], xhat, &rs, xn);
    F(affine)(1, d, m, xn, p[LM_FC_W], p[LM_FC_B], u, false);
    VM(gelu)(m, u, u);
    F(affine)(1, m, d, u, p[LM_OUT_W], p[LM_OUT_B], h, true);
    memcpy(y, h, (size_t)d * sizeof(REAL));
}

/* One row through the head: logits y [vocab] from x [d]. */
static void F(head_row)(const struct lm_shape *s, int64_t vocab, const REAL *x, const REAL *const *p, REAL *y,
                        REAL *work)
{
    REAL rs;
    F(ln_forward)(1, s->d, x, p[0], p[1], work, &rs, work + s->d);
    F(gemm)(false, false, 1, vocab, s->d, 1, work + s->d, s->d, p[2], vocab, 0, y, vocab);
}

#undef F
#undef VM
#undef CAT
#undef CAT2
