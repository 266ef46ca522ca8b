/* Example (c): LayerNorm, causal multi-head self-attention and a ReLU feed-forward in C,
 * each with its hand-written backward pass, in double precision, row-major.
 * Shapes: x (N, C) with N = B * T rows; attention works on B sequences of T tokens and
 * H heads of width D = C / H. Every backward writes (never accumulates) its outputs. */
#include <math.h>
#include <string.h>

/* out (n, m) = a (n, k) @ b (k, m) */
static void matmul(const double *a, const double *b, double *out, int n, int k, int m) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < m; j++) out[i * m + j] = 0.0;
        for (int p = 0; p < k; p++) {
            double aip = a[i * k + p];
            for (int j = 0; j < m; j++) out[i * m + j] += aip * b[p * m + j];
        }
    }
}

/* out (k, m) = a (n, k)^T @ b (n, m) */
static void matmul_tn(const double *a, const double *b, double *out, int n, int k, int m) {
    memset(out, 0, sizeof(double) * (size_t)k * (size_t)m);
    for (int i = 0; i < n; i++)
        for (int p = 0; p < k; p++) {
            double aip = a[i * k + p];
            for (int j = 0; j < m; j++) out[p * m + j] += aip * b[i * m + j];
        }
}

/* out (n, k) = a (n, m) @ b (k, m)^T */
static void matmul_nt(const double *a, const double *b, double *out, int n, int m, int k) {
    for (int i = 0; i < n; i++)
        for (int p = 0; p < k; p++) {
            double s = 0.0;
            for (int j = 0; j < m; j++) s += a[i * m + j] * b[p * m + j];
            out[i * k + p] = s;
        }
}

/* ---- LayerNorm: y = (x - mean) * rstd * g + b over each row ---------------------------- */
void layernorm_forward(const double *x, const double *g, const double *b, double *y,
                       double *xhat, double *rstd, int n, int c) {
    for (int i = 0; i < n; i++) {
        const double *xi = x + i * c;
        double mean = 0.0, var = 0.0;
        for (int j = 0; j < c; j++) mean += xi[j];
        mean /= c;
        for (int j = 0; j < c; j++) var += (xi[j] - mean) * (xi[j] - mean);
        var /= c;
        rstd[i] = 1.0 / sqrt(var + 1e-5);
        for (int j = 0; j < c; j++) {
            xhat[i * c + j] = (xi[j] - mean) * rstd[i];
            y[i * c + j] = xhat[i * c + j] * g[j] + b[j];
        }
    }
}

void layernorm_backward(const double *dy, const double *xhat, const double *rstd,
                        const double *g, double *dx, double *dg, double *db, int n, int c) {
    memset(dg, 0, sizeof(double) * (size_t)c);
    memset(db, 0, sizeof(double) * (size_t)c);
    for (int i = 0; i < n; i++) {
        double m1 = 0.0, m2 = 0.0;  /* mean(dy g) and mean(dy g xhat) */
        for (int j = 0; j < c; j++) {
            double gj = dy[i * c + j] * g[j];
            m1 += gj;
            m2 += gj * xhat[i * c + j];
            dg[j] += dy[i * c + j] * xhat[i * c + j];
            db[j] += dy[i * c + j];
        }
        m1 /= c;
        m2 /= c;
        for (int j = 0; j < c; j++)
            dx[i * c + j] = rstd[i] * (dy[i * c + j] * g[j] - m1 - xhat[i * c + j] * m2);
    }
}

/* ---- feed-forward: y = relu(x W1 + b1) W2 + b2 ----------------------------------------- */
void ffn_forward(const double *x, const double *W1, const double *b1, const double *W2,
                 const double *b2, double *z, double *a, double *y, int n, int c, int f) {
    matmul(x, W1, z, n, c, f);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < f; j++) {
            z[i * f + j] += b1[j];
            a[i * f + j] = z[i * f + j] > 0.0 ? z[i * f + j] : 0.0;
        }
    matmul(a, W2, y, n, f, c);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < c; j++) y[i * c + j] += b2[j];
}

void ffn_backward(const double *dy, const double *x, const double *z, const double *a,
                  const double *W1, const double *W2, double *dx, double *dW1, double *db1,
                  double *dW2, double *db2, double *dz, int n, int c, int f) {
    matmul_tn(a, dy, dW2, n, f, c);
    memset(db2, 0, sizeof(double) * (size_t)c);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < c; j++) db2[j] += dy[i * c + j];
    matmul_nt(dy, W2, dz, n, c, f);  /* da = dy W2^T */
    memset(db1, 0, sizeof(double) * (size_t)f);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < f; j++) {
            if (z[i * f + j] <= 0.0) dz[i * f + j] = 0.0;  /* relu' */
            db1[j] += dz[i * f + j];
        }
    matmul_tn(x, dz, dW1, n, c, f);
    matmul_nt(dz, W1, dx, n, f, c);
}

/* ---- causal multi-head self-attention: y = concat_h(softmax(q k^T / sqrt D) v) Wo ------ */
void mha_forward(const double *x, const double *Wq, const double *Wk, const double *Wv,
                 const double *Wo, double *q, double *k, double *v, double *att, double *ctx,
                 double *y, int B, int T, int C, int H) {
    int N = B * T, D = C / H;
    double scale = 1.0 / sqrt((double)D);
    matmul(x, Wq, q, N, C, C);
    matmul(x, Wk, k, N, C, C);
    matmul(x, Wv, v, N, C, C);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                double *row = att + (((size_t)b * H + h) * T + t) * T;
                double top = -INFINITY, sum = 0.0;
                for (int s = 0; s < T; s++) {
                    if (s > t) { row[s] = 0.0; continue; }
                    double dot = 0.0;
                    for (int d = 0; d < D; d++)
                        dot += q[(b * T + t) * C + h * D + d] * k[(b * T + s) * C + h * D + d];
                    row[s] = dot * scale;
                    if (row[s] > top) top = row[s];
                }
                for (int s = 0; s <= t; s++) { row[s] = exp(row[s] - top); sum += row[s]; }
                for (int s = 0; s <= t; s++) row[s] /= sum;
                for (int d = 0; d < D; d++) {
                    double acc = 0.0;
                    for (int s = 0; s <= t; s++) acc += row[s] * v[(b * T + s) * C + h * D + d];
                    ctx[(b * T + t) * C + h * D + d] = acc;
                }
            }
    matmul(ctx, Wo, y, N, C, C);
}

void mha_backward(const double *dy, const double *x, const double *Wq, const double *Wk,
                  const double *Wv, const double *Wo, const double *q, const double *k,
                  const double *v, const double *att, const double *ctx, double *dx,
                  double *dWq, double *dWk, double *dWv, double *dWo, double *dq, double *dk,
                  double *dv, double *dctx, double *tmp, int B, int T, int C, int H) {
    int N = B * T, D = C / H;
    double scale = 1.0 / sqrt((double)D);
    matmul_tn(ctx, dy, dWo, N, C, C);
    matmul_nt(dy, Wo, dctx, N, C, C);
    memset(dq, 0, sizeof(double) * (size_t)N * (size_t)C);
    memset(dk, 0, sizeof(double) * (size_t)N * (size_t)C);
    memset(dv, 0, sizeof(double) * (size_t)N * (size_t)C);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                const double *row = att + (((size_t)b * H + h) * T + t) * T;
                double dot_sum = 0.0;
                for (int s = 0; s <= t; s++) {   /* datt[s] = dctx_t . v_s */
                    double da = 0.0;
                    for (int d = 0; d < D; d++)
                        da += dctx[(b * T + t) * C + h * D + d] * v[(b * T + s) * C + h * D + d];
                    tmp[s] = da;
                    dot_sum += da * row[s];
                    for (int d = 0; d < D; d++)
                        dv[(b * T + s) * C + h * D + d] +=
                            row[s] * dctx[(b * T + t) * C + h * D + d];
                }
                for (int s = 0; s <= t; s++) {   /* softmax, then the scaled scores */
                    double ds = row[s] * (tmp[s] - dot_sum) * scale;
                    for (int d = 0; d < D; d++) {
                        dq[(b * T + t) * C + h * D + d] += ds * k[(b * T + s) * C + h * D + d];
                        dk[(b * T + s) * C + h * D + d] += ds * q[(b * T + t) * C + h * D + d];
                    }
                }
            }
    matmul_tn(x, dq, dWq, N, C, C);
    matmul_tn(x, dk, dWk, N, C, C);
    matmul_tn(x, dv, dWv, N, C, C);
    matmul_nt(dq, Wq, dx, N, C, C);   /* the three branches of self-attention add up */
    matmul_nt(dk, Wk, tmp, N, C, C);
    for (int i = 0; i < N * C; i++) dx[i] += tmp[i];
    matmul_nt(dv, Wv, tmp, N, C, C);
    for (int i = 0; i < N * C; i++) dx[i] += tmp[i];
}
