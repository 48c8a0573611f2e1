// qk_space.cpp: the Q–K space view's math (qk_space.hpp has the formulas; the same numbers mark
// the passes here). The same input gives the same bits natively and in wasm: sums run in double,
// in plain loops in a fixed order (no Eigen reductions, whose order follows the build's vector
// width), no a·b + c is fused, and t-SNE's exp and log are our own of +, −, ×, ÷ (the standard
// libraries' differ in the last bit: glibc picks an FMA variant on CPUs that have it, and a
// t-SNE run turns one bit into another layout).
//
// [SECTION] Normalization
// [SECTION] PCA
// [SECTION] t-SNE: the affinities P
// [SECTION] t-SNE: the gradient, exact and Barnes–Hut
// [SECTION] t-SNE: the descent
// [SECTION] Reading the plane
#include "qk_space.hpp"


#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF  // clang fuses where the target has FMA (arm64); gcc not in ISO mode (-std=c++20)
#endif

namespace attn {

namespace {

using QkRows = std::vector<double>;  // N×w row-major, doubles

// Mean of the rows' Euclidean norms; 0 without rows.
double qk_mean_norm(const QkRows& x, int rows, int d) {
    if (rows == 0) return 0.0;
    double sum = 0.0;
    for (int r = 0; r < rows; ++r) {
        double sq = 0.0;
        for (int c = 0; c < d; ++c) sq += x[static_cast<size_t>(r) * d + c] * x[static_cast<size_t>(r) * d + c];
        sum += std::sqrt(sq);
    }
    return sum / rows;
}

QkRows qk_doubles(const Matrix& m) {
    QkRows x(static_cast<size_t>(m.size()));
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < m.cols(); ++c) x[static_cast<size_t>(r * m.cols() + c)] = m(r, c);
    return x;
}

// Each column of x (N rows of d, row-major) less its mean, in a fixed order.
void qk_centre(QkRows& x, int N, int d) {
    for (int c = 0; c < d; ++c) {
        double mean = 0.0;
        for (int r = 0; r < N; ++r) mean += x[static_cast<size_t>(r) * d + c];
        mean /= N;
        for (int r = 0; r < N; ++r) x[static_cast<size_t>(r) * d + c] -= mean;
    }
}

}  // namespace

// [SECTION] Normalization -------------------------------------------------------------------------

QKNormalized normalize_qk(const Matrix& q, const Matrix& k) {
    if (q.cols() != k.cols())
        throw std::invalid_argument("normalize_qk: Q is " + std::to_string(q.rows()) + "×" + std::to_string(q.cols()) + ", K " +
                                    std::to_string(k.rows()) + "×" + std::to_string(k.cols()));
    const int T_q = static_cast<int>(q.rows()), T_k = static_cast<int>(k.rows()), d = static_cast<int>(q.cols());
    // 1. t = mean(q) − mean(k)
    std::vector<double> t(static_cast<size_t>(d), 0.0);
    if (T_q > 0 && T_k > 0)
        for (int c = 0; c < d; ++c) {
            double sq = 0.0, sk = 0.0;
            for (int r = 0; r < T_q; ++r) sq += q(r, c);
            for (int r = 0; r < T_k; ++r) sk += k(r, c);
            t[static_cast<size_t>(c)] = sq / T_q - sk / T_k;
        }
    QKNormalized n;
    n.translation.resize(d);
    double t_sq = 0.0;
    for (int c = 0; c < d; ++c) {
        n.translation(c) = static_cast<float>(t[static_cast<size_t>(c)]);
        t_sq += t[static_cast<size_t>(c)] * t[static_cast<size_t>(c)];
    }
    n.translation_norm = static_cast<float>(std::sqrt(t_sq));
    // k′ = k + t (in float, as the keys will be used)
    Matrix moved = k;
    for (int r = 0; r < T_k; ++r) moved.row(r) += n.translation;
    // 2. c = √(mean‖k′‖ / mean‖q‖)
    const double q_norm = qk_mean_norm(qk_doubles(q), T_q, d), k_norm = qk_mean_norm(qk_doubles(moved), T_k, d);
    const double c = q_norm > 0.0 && k_norm > 0.0 ? std::sqrt(k_norm / q_norm) : 1.0;
    n.query_scale = static_cast<float>(c);
    n.q = q * n.query_scale;
    n.k = moved / n.query_scale;
    return n;
}

Matrix QKNormalized::joint() const {
    Matrix x(q.rows() + k.rows(), q.cols());
    x.topRows(q.rows()) = q;
    x.bottomRows(k.rows()) = k;
    return x;
}

// [SECTION] PCA -----------------------------------------------------------------------------------

namespace {

// The eigenvalues (descending) and unit eigenvectors (columns, in that order) of the symmetric
// n×n matrix a (row-major), by cyclic Jacobi rotations in plain double arithmetic: the same bits
// in every build, exact to rounding (Golub & Van Loan §8.5), and no eigensolver's code in the page.
void qk_jacobi(std::vector<double>& a, int n, std::vector<double>& values, std::vector<double>& vectors) {
    std::vector<double> v(static_cast<size_t>(n) * n, 0.0);
    for (int i = 0; i < n; ++i) v[static_cast<size_t>(i) * n + i] = 1.0;
    auto at = [n](std::vector<double>& m, int r, int c) -> double& { return m[static_cast<size_t>(r) * n + c]; };
    for (int sweep = 0; sweep < 64; ++sweep) {
        double off = 0.0, all = 0.0;
        for (int p = 0; p < n; ++p)
            for (int q = 0; q < n; ++q) (p == q ? all : off) += at(a, p, q) * at(a, p, q);
        if (!(off > 1e-30 * (all + off))) break;  // the off-diagonal part is gone (or was never there)
        for (int p = 0; p < n; ++p)
            for (int q = p + 1; q < n; ++q) {
                const double apq = at(a, p, q);
                if (apq == 0.0) continue;
                // The rotation J (c at p,p and q,q; s at p,q; −s at q,p) that zeroes a_pq in JᵀAJ.
                const double theta = (at(a, q, q) - at(a, p, p)) / (2.0 * apq);
                const double t = (theta >= 0.0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
                const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < n; ++k) {  // A·J and V·J: columns p and q
                    const double akp = at(a, k, p), akq = at(a, k, q);
                    at(a, k, p) = c * akp - s * akq, at(a, k, q) = s * akp + c * akq;
                    const double vkp = at(v, k, p), vkq = at(v, k, q);
                    at(v, k, p) = c * vkp - s * vkq, at(v, k, q) = s * vkp + c * vkq;
                }
                for (int k = 0; k < n; ++k) {  // Jᵀ·(A·J): rows p and q
                    const double apk = at(a, p, k), aqk = at(a, q, k);
                    at(a, p, k) = c * apk - s * aqk, at(a, q, k) = s * apk + c * aqk;
                }
                at(a, p, q) = at(a, q, p) = 0.0;
            }
    }
    std::vector<int> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int i, int j) { return at(a, i, i) > at(a, j, j); });
    values.assign(static_cast<size_t>(n), 0.0);
    vectors.assign(static_cast<size_t>(n) * n, 0.0);
    for (int k = 0; k < n; ++k) {
        const int from = order[static_cast<size_t>(k)];
        values[static_cast<size_t>(k)] = at(a, from, from);
        for (int r = 0; r < n; ++r) vectors[static_cast<size_t>(r) * n + k] = at(v, r, from);
    }
}

}  // namespace

PcaPlane pca_plane(const Matrix& points) {
    const int N = static_cast<int>(points.rows()), d = static_cast<int>(points.cols());
    PcaPlane out;
    out.points = Matrix::Zero(N, 2);
    out.axes = Matrix::Zero(2, d);
    if (N == 0 || d == 0) return out;
    // 1. centre: X − μ                                                    N×d
    QkRows x = qk_doubles(points);
    qk_centre(x, N, d);
    // 2. C = XᵀX / N (d×d); with fewer points than dimensions the Gram matrix G = XXᵀ / N (N×N)
    //    instead: the same nonzero eigenvalues, and C's eigenvectors are Xᵀu, normalized.
    const bool gram = N < d;
    const int n = gram ? N : d;
    std::vector<double> m(static_cast<size_t>(n) * n, 0.0);
    for (int a = 0; a < n; ++a)
        for (int b = a; b < n; ++b) {
            double sum = 0.0;
            if (gram)
                for (int c = 0; c < d; ++c) sum += x[static_cast<size_t>(a) * d + c] * x[static_cast<size_t>(b) * d + c];
            else
                for (int r = 0; r < N; ++r) sum += x[static_cast<size_t>(r) * d + a] * x[static_cast<size_t>(r) * d + b];
            m[static_cast<size_t>(a) * n + b] = m[static_cast<size_t>(b) * n + a] = sum / N;
        }
    double total = 0.0;  // trace: the total variance
    for (int a = 0; a < n; ++a) total += m[static_cast<size_t>(a) * n + a];
    if (!(total > 0.0)) return out;
    // 3. the eigenvectors of the two largest eigenvalues (qk_jacobi sorts them descending)
    std::vector<double> values, vectors;
    qk_jacobi(m, n, values, vectors);
    const int n_axes = std::min(n, 2);
    std::vector<double> axes(static_cast<size_t>(2 * d), 0.0);
    for (int a = 0; a < n_axes; ++a) {
        std::vector<double> v(static_cast<size_t>(d), 0.0);
        if (gram) {  // Xᵀu, normalized; no axis for a zero eigenvalue
            double norm = 0.0;
            for (int c = 0; c < d; ++c) {
                for (int r = 0; r < N; ++r) v[static_cast<size_t>(c)] += x[static_cast<size_t>(r) * d + c] * vectors[static_cast<size_t>(r) * n + a];
                norm += v[static_cast<size_t>(c)] * v[static_cast<size_t>(c)];
            }
            if (!(values[static_cast<size_t>(a)] > 0.0) || !(norm > 0.0)) continue;
            for (double& e : v) e /= std::sqrt(norm);
        } else {
            for (int c = 0; c < d; ++c) v[static_cast<size_t>(c)] = vectors[static_cast<size_t>(c) * n + a];
        }
        int big = 0;  // the largest |entry|, the first on ties, made positive
        for (int c = 1; c < d; ++c)
            if (std::fabs(v[static_cast<size_t>(c)]) > std::fabs(v[static_cast<size_t>(big)])) big = c;
        const double sign = v[static_cast<size_t>(big)] < 0.0 ? -1.0 : 1.0;
        for (int c = 0; c < d; ++c) {
            axes[static_cast<size_t>(a * d + c)] = sign * v[static_cast<size_t>(c)];
            out.axes(a, c) = static_cast<float>(sign * v[static_cast<size_t>(c)]);
        }
        out.explained[static_cast<size_t>(a)] = static_cast<float>(std::max(0.0, values[static_cast<size_t>(a)]) / total);
    }
    // 4. points = X·[a₁ a₂]                                                N×2
    for (int r = 0; r < N; ++r)
        for (int a = 0; a < n_axes; ++a) {
            double s = 0.0;
            for (int c = 0; c < d; ++c) s += x[static_cast<size_t>(r) * d + c] * axes[static_cast<size_t>(a * d + c)];
            out.points(r, a) = static_cast<float>(s);
        }
    return out;
}

// [SECTION] t-SNE: the affinities P ---------------------------------------------------------------

namespace {

// e^x: x = k·ln 2 + r with |r| ≤ ln 2 / 2 (ln 2 in two parts, Cody & Waite), e^r by its Taylor
// series to r¹⁴/14! (relative error below 1e-16), times 2^k.
double qk_exp(double x) {
    if (x < -745.0) return 0.0;
    if (x > 709.0) return HUGE_VAL;
    constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
    const double k = std::floor(x * 1.44269504088896338700 + 0.5);
    const double r = (x - k * kLn2Hi) - k * kLn2Lo;
    double sum = 1.0;
    for (int n = 14; n >= 1; --n) sum = 1.0 + sum * r / n;
    return std::ldexp(sum, static_cast<int>(k));
}

// ln x for x > 0: x = m·2^e with m in [√½, √2), ln m = 2·atanh(f) with f = (m − 1)/(m + 1),
// |f| ≤ 0.172, by its series to f²³.
double qk_log(double x) {
    int e = 0;
    double m = std::frexp(x, &e);
    if (m < 0.70710678118654752440) m *= 2.0, --e;
    const double f = (m - 1.0) / (m + 1.0), f2 = f * f;
    double sum = 0.0;
    for (int n = 23; n >= 1; n -= 2) sum = 1.0 / n + f2 * sum;
    return e * 0.69314718055994530942 + 2.0 * f * sum;
}

// One row of pass 1: p_j ∝ e^(−β·dist2_j) over n squared distances, β bisected until the entropy
// H = −Σ p log p is log(perplexity) within 1e-5 (bhtsne's search, 200 steps at most). The
// exponent is taken from the smallest distance, so the largest p is e⁰ and the sum never 0.
void qk_gaussian_row(const double* dist2, int n, double log_perplexity, double* p) {
    if (n == 0) return;
    const double d_min = *std::min_element(dist2, dist2 + n);
    double beta = 1.0, lo = 0.0, hi = 0.0, sum = 0.0;
    bool have_lo = false, have_hi = false;
    for (int step = 0; step < 200; ++step) {
        double weighted = 0.0;
        sum = 0.0;
        for (int j = 0; j < n; ++j) {
            p[j] = qk_exp(-beta * (dist2[j] - d_min));
            sum += p[j];
            weighted += (dist2[j] - d_min) * p[j];
        }
        const double H = qk_log(sum) + beta * weighted / sum;
        const double over = H - log_perplexity;
        if (std::fabs(over) < 1e-5) break;
        if (over > 0.0) {  // too flat: a narrower Gaussian
            lo = beta, have_lo = true;
            beta = have_hi ? (beta + hi) / 2.0 : beta * 2.0;
        } else {
            hi = beta, have_hi = true;
            beta = have_lo ? (beta + lo) / 2.0 : beta / 2.0;
        }
    }
    for (int j = 0; j < n; ++j) p[j] /= sum;
}

// ‖x_i − x_j‖² over rows of width d.
double qk_dist2(const QkRows& x, int d, int i, int j) {
    const double* a = &x[static_cast<size_t>(i) * d];
    const double* b = &x[static_cast<size_t>(j) * d];
    double s = 0.0;
    for (int c = 0; c < d; ++c) s += (a[c] - b[c]) * (a[c] - b[c]);
    return s;
}

// Pass 1–2, exact: P as N×N, symmetric, summing to 1, zero diagonal.
std::vector<double> qk_dense_affinities(const QkRows& x, int N, int d, double perplexity) {
    std::vector<double> P(static_cast<size_t>(N) * N, 0.0), dist2(static_cast<size_t>(N)), row(static_cast<size_t>(N));
    for (int i = 0; i < N; ++i) {
        int n = 0;
        for (int j = 0; j < N; ++j)
            if (j != i) dist2[static_cast<size_t>(n++)] = qk_dist2(x, d, i, j);
        qk_gaussian_row(dist2.data(), n, qk_log(perplexity), row.data());
        n = 0;
        for (int j = 0; j < N; ++j)
            if (j != i) P[static_cast<size_t>(i) * N + j] = row[static_cast<size_t>(n++)];
    }
    double total = 0.0;
    for (int i = 0; i < N; ++i)
        for (int j = i + 1; j < N; ++j) {
            const double s = P[static_cast<size_t>(i) * N + j] + P[static_cast<size_t>(j) * N + i];
            P[static_cast<size_t>(i) * N + j] = P[static_cast<size_t>(j) * N + i] = s;
            total += 2.0 * s;
        }
    for (double& p : P) p /= total;
    return P;
}

// P kept as rows of (column, value), the columns ascending.
struct QkSparseP {
    std::vector<int> row_start;  // N + 1
    std::vector<int> col;
    std::vector<double> val;
};

// Pass 1–2, Barnes–Hut: each row over its K nearest (exact search, ties to the lower index), then
// p_ij + p_ji over the union of both rows' entries, divided by the sum.
QkSparseP qk_sparse_affinities(const QkRows& x, int N, int d, double perplexity, int K) {
    struct Entry {
        int i, j;
        double p;
    };
    std::vector<Entry> entries;
    entries.reserve(static_cast<size_t>(2) * N * K);
    std::vector<std::pair<double, int>> near(static_cast<size_t>(N));
    std::vector<double> dist2(static_cast<size_t>(K)), row(static_cast<size_t>(K));
    for (int i = 0; i < N; ++i) {
        int n = 0;
        for (int j = 0; j < N; ++j)
            if (j != i) near[static_cast<size_t>(n++)] = {qk_dist2(x, d, i, j), j};
        std::partial_sort(near.begin(), near.begin() + K, near.begin() + n);  // by distance, then index
        for (int m = 0; m < K; ++m) dist2[static_cast<size_t>(m)] = near[static_cast<size_t>(m)].first;
        qk_gaussian_row(dist2.data(), K, qk_log(perplexity), row.data());
        for (int m = 0; m < K; ++m) {
            const int j = near[static_cast<size_t>(m)].second;
            entries.push_back({i, j, row[static_cast<size_t>(m)]});
            entries.push_back({j, i, row[static_cast<size_t>(m)]});
        }
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.i != b.i ? a.i < b.i : a.j != b.j ? a.j < b.j : a.p < b.p;
    });
    QkSparseP P;
    P.row_start.assign(static_cast<size_t>(N) + 1, 0);
    double total = 0.0;
    for (size_t e = 0; e < entries.size();) {
        size_t f = e;
        double s = 0.0;  // at most two entries: p_j|i and p_i|j
        for (; f < entries.size() && entries[f].i == entries[e].i && entries[f].j == entries[e].j; ++f) s += entries[f].p;
        P.col.push_back(entries[e].j);
        P.val.push_back(s);
        ++P.row_start[static_cast<size_t>(entries[e].i) + 1];
        total += s;
        e = f;
    }
    for (int i = 0; i < N; ++i) P.row_start[static_cast<size_t>(i) + 1] += P.row_start[static_cast<size_t>(i)];
    for (double& v : P.val) v /= total;
    return P;
}

// [SECTION] t-SNE: the gradient, exact and Barnes–Hut ---------------------------------------------

// g = α·attraction − repulsion / Z, with attraction_i = Σ_j p_ij w_ij (y_i − y_j) and
// repulsion_i = Σ_j w_ij² (y_i − y_j). Y, g: N×2 row-major.
void qk_exact_gradient(const std::vector<double>& P, const std::vector<double>& Y, int N, double alpha, std::vector<double>& g) {
    std::vector<double> rep(static_cast<size_t>(2) * N, 0.0);
    double Z = 0.0;
    std::fill(g.begin(), g.end(), 0.0);
    for (int i = 0; i < N; ++i)
        for (int j = i + 1; j < N; ++j) {
            const double dx = Y[2 * i] - Y[2 * j], dy = Y[2 * i + 1] - Y[2 * j + 1];
            const double w = 1.0 / (1.0 + dx * dx + dy * dy);
            const double a = alpha * P[static_cast<size_t>(i) * N + j] * w, r = w * w;
            Z += 2.0 * w;
            g[2 * i] += a * dx, g[2 * i + 1] += a * dy, g[2 * j] -= a * dx, g[2 * j + 1] -= a * dy;
            rep[2 * i] += r * dx, rep[2 * i + 1] += r * dy, rep[2 * j] -= r * dx, rep[2 * j + 1] -= r * dy;
        }
    for (int c = 0; c < 2 * N; ++c) g[c] -= rep[c] / Z;
}

// A quadtree over Y, rebuilt every iteration: cells split at their centre until one point is left
// (or the points coincide, or 64 levels). A cell's points are order[begin, end).
struct QkCell {
    double cx, cy, half;   // the square: centre and half its side
    double mx, my;         // the centre of mass
    int begin, end;        // its points in order[]
    int child[4];          // −1: none (a leaf has none)
    bool leaf;
};

struct QkQuadtree {
    const std::vector<double>* Y = nullptr;
    std::vector<QkCell> cells;
    std::vector<int> order, scratch;

    void build(const std::vector<double>& y, int N) {
        Y = &y;
        cells.clear();
        order.resize(static_cast<size_t>(N));
        scratch.resize(static_cast<size_t>(N));
        std::iota(order.begin(), order.end(), 0);
        double x0 = y[0], x1 = y[0], y0 = y[1], y1 = y[1];
        for (int i = 1; i < N; ++i) {
            x0 = std::min(x0, y[2 * i]), x1 = std::max(x1, y[2 * i]);
            y0 = std::min(y0, y[2 * i + 1]), y1 = std::max(y1, y[2 * i + 1]);
        }
        const double half = std::max(x1 - x0, y1 - y0) / 2.0 * (1.0 + 1e-9) + 1e-12;
        split((x0 + x1) / 2.0, (y0 + y1) / 2.0, half, 0, N, 0);
    }

    int split(double cx, double cy, double half, int begin, int end, int depth) {
        const std::vector<double>& y = *Y;
        const int id = static_cast<int>(cells.size());
        QkCell cell{cx, cy, half, 0.0, 0.0, begin, end, {-1, -1, -1, -1}, true};
        bool coincide = true;
        const int first = order[static_cast<size_t>(begin)];
        for (int m = begin; m < end; ++m) {
            const int p = order[static_cast<size_t>(m)];
            cell.mx += y[2 * p], cell.my += y[2 * p + 1];
            coincide = coincide && y[2 * p] == y[2 * first] && y[2 * p + 1] == y[2 * first + 1];
        }
        cell.mx /= end - begin, cell.my /= end - begin;
        cell.leaf = end - begin == 1 || coincide || depth >= 64;
        cells.push_back(cell);
        if (cell.leaf) return id;
        // the points by quadrant (x ≥ cx) + 2·(y ≥ cy), each quadrant's in their order
        int count[4] = {0, 0, 0, 0};
        auto quadrant = [&](int p) { return (y[2 * p] >= cx ? 1 : 0) + (y[2 * p + 1] >= cy ? 2 : 0); };
        for (int m = begin; m < end; ++m) ++count[quadrant(order[static_cast<size_t>(m)])];
        int at[4] = {begin, begin + count[0], begin + count[0] + count[1], begin + count[0] + count[1] + count[2]};
        const int starts[4] = {at[0], at[1], at[2], at[3]};
        for (int m = begin; m < end; ++m) {
            const int p = order[static_cast<size_t>(m)];
            scratch[static_cast<size_t>(at[quadrant(p)]++)] = p;
        }
        std::copy(scratch.begin() + begin, scratch.begin() + end, order.begin() + begin);
        const double h = half / 2.0;
        for (int c = 0; c < 4; ++c) {
            if (count[c] == 0) continue;
            const int kid = split(cx + (c & 1 ? h : -h), cy + (c & 2 ? h : -h), h, starts[c], starts[c] + count[c], depth + 1);
            cells[static_cast<size_t>(id)].child[c] = kid;  // cells may have moved: index, not reference
        }
        return id;
    }

    // Point i's repulsion Σ_j w_ij² (y_i − y_j) into rep[0..1], and Σ_j w_ij added to Z: a cell
    // of side s at distance D from y_i as its n points at its centre of mass when s < θ·D.
    void repulsion(int i, double theta, std::vector<int>& stack, double rep[2], double& Z) const {
        const std::vector<double>& y = *Y;
        const double yx = y[2 * i], yy = y[2 * i + 1];
        stack.clear();
        stack.push_back(0);
        while (!stack.empty()) {
            const QkCell& cell = cells[static_cast<size_t>(stack.back())];
            stack.pop_back();
            if (cell.leaf) {
                for (int m = cell.begin; m < cell.end; ++m) {
                    const int j = order[static_cast<size_t>(m)];
                    if (j == i) continue;
                    const double dx = yx - y[2 * j], dy = yy - y[2 * j + 1];
                    const double w = 1.0 / (1.0 + dx * dx + dy * dy);
                    Z += w, rep[0] += w * w * dx, rep[1] += w * w * dy;
                }
                continue;
            }
            const double dx = yx - cell.mx, dy = yy - cell.my, D2 = dx * dx + dy * dy;
            const double side = 2.0 * cell.half;
            if (side * side < theta * theta * D2) {
                const double n = cell.end - cell.begin, w = 1.0 / (1.0 + D2);
                Z += n * w, rep[0] += n * w * w * dx, rep[1] += n * w * w * dy;
                continue;
            }
            for (int c = 3; c >= 0; --c)  // popped in quadrant order 0 … 3
                if (cell.child[c] >= 0) stack.push_back(cell.child[c]);
        }
    }
};

// The same g with the sparse P and the quadtree's repulsion.
void qk_barnes_hut_gradient(const QkSparseP& P, const std::vector<double>& Y, int N, double alpha, double theta, QkQuadtree& tree,
                            std::vector<int>& stack, std::vector<double>& g) {
    tree.build(Y, N);
    std::vector<double> rep(static_cast<size_t>(2) * N, 0.0);
    double Z = 0.0;
    for (int i = 0; i < N; ++i) {
        double ax = 0.0, ay = 0.0;
        for (int e = P.row_start[static_cast<size_t>(i)]; e < P.row_start[static_cast<size_t>(i) + 1]; ++e) {
            const int j = P.col[static_cast<size_t>(e)];
            const double dx = Y[2 * i] - Y[2 * j], dy = Y[2 * i + 1] - Y[2 * j + 1];
            const double a = P.val[static_cast<size_t>(e)] / (1.0 + dx * dx + dy * dy);
            ax += a * dx, ay += a * dy;
        }
        g[2 * i] = alpha * ax, g[2 * i + 1] = alpha * ay;
        tree.repulsion(i, theta, stack, &rep[static_cast<size_t>(2 * i)], Z);
    }
    for (int c = 0; c < 2 * N; ++c) g[c] -= rep[c] / Z;
}

double qk_sign(double v) { return v == 0.0 ? 0.0 : v < 0.0 ? -1.0 : 1.0; }

// About N(0, 1): twelve uniforms less 6 (no log or cosine, so the same bits in every build).
double qk_noise(SplitMix64& rng) {
    double s = -6.0;
    for (int n = 0; n < 12; ++n) s += rng.unit();
    return s;
}

}  // namespace

// [SECTION] t-SNE: the descent --------------------------------------------------------------------

TsnePlane tsne_plane(const Matrix& points, const TsneOptions& options) {
    const int N = static_cast<int>(points.rows()), d = static_cast<int>(points.cols());
    TsnePlane out;
    out.points = Matrix::Zero(N, 2);
    if (N <= 1) return out;
    out.perplexity = std::max(1.0f, std::min(options.perplexity, static_cast<float>(N - 1) / 3.0f));
    out.barnes_hut = N >= options.barnes_hut_from;
    out.neighbours = out.barnes_hut ? std::clamp(static_cast<int>(3.0 * out.perplexity + 1e-4), 1, N - 1) : N - 1;

    // 1. X centred and divided by its largest |entry|
    QkRows x = qk_doubles(points);
    qk_centre(x, N, d);
    double biggest = 0.0;
    for (double v : x) biggest = std::max(biggest, std::fabs(v));
    if (biggest > 0.0)
        for (double& v : x) v /= biggest;
    // 1–2. P
    std::vector<double> dense;
    QkSparseP sparse;
    if (out.barnes_hut)
        sparse = qk_sparse_affinities(x, N, d, out.perplexity, out.neighbours);
    else
        dense = qk_dense_affinities(x, N, d, out.perplexity);

    // 3. the descent from seeded noise
    SplitMix64 rng{options.seed};
    std::vector<double> Y(static_cast<size_t>(2) * N), g(Y.size(), 0.0), step(Y.size(), 0.0), gain(Y.size(), 1.0);
    for (double& v : Y) v = 1e-4 * qk_noise(rng);
    const double eta = std::max(200.0, N / 12.0);
    QkQuadtree tree;
    std::vector<int> stack;
    for (int it = 0; it < options.iterations; ++it) {
        const double alpha = it < 250 ? 12.0 : 1.0, momentum = it < 250 ? 0.5 : 0.8;
        if (out.barnes_hut)
            qk_barnes_hut_gradient(sparse, Y, N, alpha, options.theta, tree, stack, g);
        else
            qk_exact_gradient(dense, Y, N, alpha, g);
        for (size_t c = 0; c < Y.size(); ++c) {
            gain[c] = qk_sign(g[c]) != qk_sign(step[c]) ? gain[c] + 0.2 : gain[c] * 0.8;
            gain[c] = std::max(gain[c], 0.01);
            step[c] = momentum * step[c] - eta * gain[c] * g[c];
            Y[c] += step[c];
        }
        for (int a = 0; a < 2; ++a) {
            double mean = 0.0;
            for (int i = 0; i < N; ++i) mean += Y[static_cast<size_t>(2 * i + a)];
            mean /= N;
            for (int i = 0; i < N; ++i) Y[static_cast<size_t>(2 * i + a)] -= mean;
        }
    }
    for (int i = 0; i < N; ++i) out.points(i, 0) = static_cast<float>(Y[2 * i]), out.points(i, 1) = static_cast<float>(Y[2 * i + 1]);
    return out;
}

// [SECTION] Reading the plane ---------------------------------------------------------------------

float qk_distance_correlation(const Matrix& q, const Matrix& k, const KeyMask& allowed, const Matrix& plane) {
    const int T_q = static_cast<int>(q.rows()), T_k = static_cast<int>(k.rows());
    if (q.cols() != k.cols() || plane.rows() != T_q + T_k || plane.cols() != 2 ||
        (allowed.size() != 0 && (allowed.rows() != T_q || allowed.cols() != T_k)))
        throw std::invalid_argument("qk_distance_correlation: Q is " + std::to_string(T_q) + "×" + std::to_string(q.cols()) + ", K " +
                                    std::to_string(T_k) + "×" + std::to_string(k.cols()) + ", the plane " +
                                    std::to_string(plane.rows()) + "×" + std::to_string(plane.cols()) + ", the mask " +
                                    std::to_string(allowed.rows()) + "×" + std::to_string(allowed.cols()));
    // 1. the pairs: q·k and the distance
    std::vector<double> dot, dist;
    for (int i = 0; i < T_q; ++i)
        for (int j = 0; j < T_k; ++j) {
            if (allowed.size() != 0 && allowed(i, j) == 0) continue;
            double s = 0.0;
            for (int c = 0; c < q.cols(); ++c) s += static_cast<double>(q(i, c)) * k(j, c);
            const double dx = static_cast<double>(plane(i, 0)) - plane(T_q + j, 0), dy = static_cast<double>(plane(i, 1)) - plane(T_q + j, 1);
            dot.push_back(s);
            dist.push_back(std::sqrt(dx * dx + dy * dy));
        }
    const size_t n = dot.size();
    if (n < 2) return 0.0f;
    // 2. r = cov / (σ_dot σ_dist), from the means first
    double m_dot = 0.0, m_dist = 0.0;
    for (size_t p = 0; p < n; ++p) m_dot += dot[p], m_dist += dist[p];
    m_dot /= static_cast<double>(n), m_dist /= static_cast<double>(n);
    double cov = 0.0, v_dot = 0.0, v_dist = 0.0;
    for (size_t p = 0; p < n; ++p) {
        const double a = dot[p] - m_dot, b = dist[p] - m_dist;
        cov += a * b, v_dot += a * a, v_dist += b * b;
    }
    if (!(v_dot > 0.0) || !(v_dist > 0.0)) return 0.0f;
    return static_cast<float>(std::clamp(cov / std::sqrt(v_dot * v_dist), -1.0, 1.0));
}

std::vector<int> nearest_keys(const Matrix& plane, int T_q, int query, int n, const KeyMask& allowed) {
    const int T_k = static_cast<int>(plane.rows()) - T_q;
    if (T_q < 0 || T_k < 0 || plane.cols() != 2 || (allowed.size() != 0 && (allowed.rows() != T_q || allowed.cols() != T_k)))
        throw std::invalid_argument("nearest_keys: the plane is " + std::to_string(plane.rows()) + "×" + std::to_string(plane.cols()) +
                                    " for " + std::to_string(T_q) + " queries, the mask " + std::to_string(allowed.rows()) + "×" +
                                    std::to_string(allowed.cols()));
    if (query < 0 || query >= T_q || n <= 0) return {};
    const bool masked = allowed.size() != 0;
    std::vector<std::pair<double, int>> keys;
    for (int j = 0; j < T_k; ++j) {
        if (masked && allowed(query, j) == 0) continue;
        const double dx = static_cast<double>(plane(query, 0)) - plane(T_q + j, 0), dy = static_cast<double>(plane(query, 1)) - plane(T_q + j, 1);
        keys.push_back({dx * dx + dy * dy, j});
    }
    const size_t m = std::min(keys.size(), static_cast<size_t>(n));
    std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(m), keys.end());  // by distance, then index
    std::vector<int> out(m);
    for (size_t a = 0; a < m; ++a) out[a] = keys[a].second;
    return out;
}

}  // namespace attn

#if defined(__clang__)
#pragma STDC FP_CONTRACT DEFAULT  // the files after this one in a unity batch keep the compiler's choice
#endif
