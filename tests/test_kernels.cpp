// The raw kernels (kernels.hpp) against plain loops in double, for every instruction set this
// binary has (scalar, sse2, avx2+fma natively; scalar, simd128 in wasm), printing the largest
// differences seen.
#include "kernels.hpp"
#include "oracle.hpp"
#include "test_util.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__GLIBC__)
#include <sys/resource.h>
#endif

using namespace attn;

namespace {

// Runs body once per available instruction set, with a Context of its own for that set.
template <class F>
void for_each_isa(F body) {
    for (kernels::Isa isa : kernels::available_isas()) {
        CAPTURE(kernels::isa_name(isa));
        kernels::Context ctx(isa);
        body(ctx);
    }
}

double rel(double got, double want) { return std::fabs(got - want) / (1.0 + std::fabs(want)); }

// C = A·B (+ bias) against plain loops in double: the largest relative difference. B is K×N,
// or N×K when bt (its columns past those used are ignored).
double product_vs_loops(const Matrix& C, const Matrix& A, const Matrix& B, bool bt, const Matrix* bias) {
    double worst = 0;
    for (int i = 0; i < C.rows(); ++i)
        for (int j = 0; j < C.cols(); ++j) {
            double want = bias ? (*bias)(0, j) : 0.0;
            for (int p = 0; p < A.cols(); ++p) want += double(A(i, p)) * (bt ? B(j, p) : B(p, j));
            worst = std::max(worst, rel(C(i, j), want));
        }
    return worst;
}

// kernels::matmul's C = A·B (+ bias) against plain loops. B's rows are ldb wide.
double matmul_vs_loops(kernels::Context& ctx, const Matrix& A, const Matrix& B, int N, int ldb, bool bt,
                       const Matrix* bias) {
    const int M = static_cast<int>(A.rows()), K = static_cast<int>(A.cols());
    Matrix C(M, N);
    kernels::matmul(ctx, M, N, K, A.data(), K, B.data(), ldb, bt, bias ? bias->data() : nullptr, C.data(), N);
    return product_vs_loops(C, A, B, bt, bias);
}

}  // namespace

TEST_CASE("kernels: the best instruction set is the default, an unavailable one is refused") {
    const auto isas = kernels::available_isas();
    REQUIRE(!isas.empty());
    CHECK(isas.front() == kernels::Isa::Scalar);
    CHECK(kernels::best_isa() == isas.back());
    CHECK(kernels::Context().isa == isas.back());
    std::printf("kernels: %s (of %zu)\n", kernels::isa_name(kernels::best_isa()), isas.size());
    for (kernels::Isa isa : {kernels::Isa::Scalar, kernels::Isa::Sse2, kernels::Isa::Avx2, kernels::Isa::Avx512,
                             kernels::Isa::Simd128, kernels::Isa::Relaxed}) {
        CAPTURE(kernels::isa_name(isa));
        if (std::find(isas.begin(), isas.end(), isa) != isas.end()) CHECK(kernels::Context(isa).isa == isa);
        else CHECK_THROWS_AS(kernels::Context{isa}, std::invalid_argument);
    }
}

TEST_CASE("kernels: exp of non-positive numbers within 2e-7 relative of std::exp") {
    std::vector<float> x;
    for (float v = 0.0f; v > -87.0f; v -= 0.0137f) x.push_back(v);
    for (float v : {-0.0f, -1e-30f, -1e-7f, -0.34657359f, -0.69314718f, -86.99f}) x.push_back(v);
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> zero = {-87.5f, -100.0f, -1e30f, -std::numeric_limits<float>::max(), -inf};
    for_each_isa([&](const kernels::Context& ctx) {
        std::vector<float> y(x.size()), z(zero.size());
        kernels::exp_nonpositive(ctx.isa, x.data(), y.data(), static_cast<int>(x.size()));
        kernels::exp_nonpositive(ctx.isa, zero.data(), z.data(), static_cast<int>(zero.size()));
        double worst = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            const double want = std::exp(static_cast<double>(x[i]));
            worst = std::max(worst, std::fabs(y[i] - want) / want);
        }
        std::printf("exp %-12s: %zu points in (-87, 0], max rel. error %.2e\n", kernels::isa_name(ctx.isa), x.size(),
                    worst);
        CHECK(worst < 2e-7);
        for (float v : z) CHECK(v == 0.0f);
    });
}

TEST_CASE("kernels: 2^t of non-positive t within 2e-7 relative of std::exp2") {
    std::vector<float> t;
    for (float v = 0.0f; v >= -125.0f; v -= 0.00731f) t.push_back(v);
    // The polynomial's ends (r = ±1/2), integers and the smallest kept value.
    for (float v : {-0.0f, -1e-30f, -1e-7f, -0.5f, -0.49999997f, -0.50000006f, -1.5f, -7.0f, -124.5f, -125.0f})
        t.push_back(v);
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> zero = {-125.01f, -126.0f, -200.0f, -1e30f, -std::numeric_limits<float>::max(), -inf,
                               std::numeric_limits<float>::quiet_NaN()};
    for_each_isa([&](const kernels::Context& ctx) {
        std::vector<float> y(t.size()), z(zero.size());
        kernels::exp2_nonpositive(ctx.isa, t.data(), y.data(), static_cast<int>(t.size()));
        kernels::exp2_nonpositive(ctx.isa, zero.data(), z.data(), static_cast<int>(zero.size()));
        double worst = 0;
        for (size_t i = 0; i < t.size(); ++i) {
            const double want = std::exp2(static_cast<double>(t[i]));
            worst = std::max(worst, std::fabs(y[i] - want) / want);
        }
        std::printf("exp2 %-12s: %zu points in [-125, 0], max rel. error %.2e\n", kernels::isa_name(ctx.isa), t.size(),
                    worst);
        CHECK(worst < 2e-7);
        for (float v : z) CHECK(v == 0.0f);
    });
}

TEST_CASE("kernels: softmax rows with NaN, +inf and -inf scores, both paths, against double") {
    // Same rows through softmax_rows: a finite row, rows with -inf and NaN (dense path, weight
    // 0) and with +inf (counts as the float max: the general path), against double.
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const int T = 37;
    std::vector<float> s(4 * T);
    for (int j = 0; j < T; ++j) s[j] = s[T + j] = s[2 * T + j] = s[3 * T + j] = std::sin(0.7f * j) * 9.0f;
    s[T + 3] = -inf, s[T + 36] = -inf;
    s[2 * T + 5] = nan;
    s[3 * T + 7] = inf;
    for_each_isa([&](const kernels::Context& ctx) {
        std::vector<float> w(s.size());
        std::vector<int> fully;
        kernels::softmax_rows(ctx.isa, s.data(), 0.5f, nullptr, nullptr, 4, T, nullptr, w.data(), &fully);
        CHECK(fully.empty());
        for (int i = 0; i < 4; ++i) {
            std::vector<double> x(T);
            double mx = -INFINITY;
            for (int j = 0; j < T; ++j) {
                const float v = s[i * T + j];
                x[j] = v != v ? -INFINITY : std::min(double(v) * 0.5, double(std::numeric_limits<float>::max()));
                mx = std::max(mx, x[j]);
            }
            double sum = 0;
            for (int j = 0; j < T; ++j) sum += x[j] == -INFINITY ? 0.0 : std::exp(x[j] - mx);
            double worst = 0;
            for (int j = 0; j < T; ++j) {
                const double want = x[j] == -INFINITY ? 0.0 : std::exp(x[j] - mx) / sum;
                worst = std::max(worst, rel(w[i * T + j], want));
                if (x[j] == -INFINITY) CHECK(w[i * T + j] == 0.0f);
            }
            CAPTURE(i);
            CHECK(worst < 1e-6);
        }
    });
}

TEST_CASE("kernels: softmax rows of huge finite scores are finite and sum to 1, every set, every length") {
    // Scores near 1e20 … 3e38 (a fuzzed checkpoint's): factor·s rounds, the max is one of those
    // rounded products, and x − max must be exactly 0 on the max's own lane. Fused into one
    // multiply-add, it was the product's rounding error (±1e13 at 1e20): rows of NaN.
    const float big = std::numeric_limits<float>::max();
    std::uint32_t seed = 12345;
    auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
    for_each_isa([&](const kernels::Context& ctx) {
        int bad = 0;
        for (int T = 1; T <= 40; ++T)
            for (const float factor : {1.0f, 0.70710677f, 0.125f, 0.0883883f}) {
                std::vector<float> s(T), w(T);
                for (int rep = 0; rep < 8; ++rep) {
                    for (float& x : s) {
                        const float mag = std::ldexp(1.0f, 60 + static_cast<int>(next() % 67));  // 2^60 … 2^126
                        x = (next() & 1 ? -1.0f : 1.0f) * mag * (1.0f + (next() % 1000) / 1000.0f);
                        x = std::min(x, big);
                    }
                    kernels::softmax_rows(ctx.isa, s.data(), factor, nullptr, nullptr, 1, T, nullptr, w.data(), nullptr);
                    float mx = -INFINITY;
                    for (const float x : s) mx = std::max(mx, x * factor);
                    double sum = 0;
                    for (int j = 0; j < T; ++j) {
                        sum += w[j];
                        // e^(x − max) is 1 at the max and 0 wherever x − max < −104 (all but ties here)
                        const float want = s[j] * factor == mx ? 1.0f : 0.0f;
                        bad += !(w[j] >= 0.0f) || (want == 0.0f && w[j] != 0.0f);
                    }
                    bad += !(std::fabs(sum - 1.0) < 1e-6);
                }
            }
        CHECK(bad == 0);
    });
}

TEST_CASE("kernels: one row (the LM head, a step of generation) matches plain loops, strided B, every tail") {
    oracle::Random rng(12);
    const int sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 130};
    for_each_isa([&](kernels::Context& ctx) {
        double worst = 0;
        for (int N : sizes)
            for (int K : sizes)
                for (int form = 0; form < 4; ++form) {
                    const bool bt = form & 1, with_bias = form & 2;
                    const int ldb = (bt ? K : N) + 3;  // B's rows wider than used
                    const Matrix a = rng.matrix(1, K), B = rng.matrix(bt ? N : K, ldb), bias = rng.matrix(1, N);
                    worst = std::max(worst, matmul_vs_loops(ctx, a, B, N, ldb, bt, with_bias ? &bias : nullptr));
                }
        std::printf("matvec %-12s: %zu shapes, max rel. diff %.2e\n", kernels::isa_name(ctx.isa),
                    4 * std::size(sizes) * std::size(sizes), worst);
        CHECK(worst < 1e-5);
    });
}

TEST_CASE("kernels: matmul matches plain loops for every shape, transposed or not, with bias") {
    oracle::Random rng(11);
    const int sizes[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 130, 257};
    for_each_isa([&](kernels::Context& ctx) {
        double worst = 0;
        int cases = 0;
        for (int n = 0; n < 60; ++n) {
            const int M = sizes[rng.below(15)], N = sizes[rng.below(15)], K = sizes[rng.below(15)];
            const bool bt = rng.below(2), with_bias = rng.below(2);
            const Matrix A = rng.matrix(M, K), B = bt ? rng.matrix(N, K) : rng.matrix(K, N), bias = rng.matrix(1, N);
            worst = std::max(worst, matmul_vs_loops(ctx, A, B, N, bt ? K : N, bt, with_bias ? &bias : nullptr));
            ++cases;
        }
        std::printf("matmul %-12s: %d shapes, max rel. diff %.2e\n", kernels::isa_name(ctx.isa), cases, worst);
        CHECK(worst < 1e-5);
    });
}

// Wider than one packed block of B (matmul packs at most 1 MB of B at a time: 1024 columns of
// 256 rows), so the product runs over several column blocks, the last with a partial panel;
// K crosses a 256-deep block, and B's rows are wider than used.
TEST_CASE("kernels: matmul over several column blocks of a wide B matches plain loops") {
    oracle::Random rng(13);
    for_each_isa([&](kernels::Context& ctx) {
        double worst = 0;
        for (const auto [M, N, K] : {std::array{3, 2311, 300}, std::array{33, 1031, 257}, std::array{9, 3072, 64}})
            for (int form = 0; form < 4; ++form) {
                const bool bt = form & 1, with_bias = form & 2;
                const int ldb = (bt ? K : N) + 5;
                const Matrix A = rng.matrix(M, K), B = rng.matrix(bt ? N : K, ldb), bias = rng.matrix(1, N);
                worst = std::max(worst, matmul_vs_loops(ctx, A, B, N, ldb, bt, with_bias ? &bias : nullptr));
            }
        std::printf("matmul, wide B %-12s: 12 shapes, max rel. diff %.2e\n", kernels::isa_name(ctx.isa), worst);
        CHECK(worst < 1e-5);
    });
}

// B packed once (a model's weights): every shape of the products' blocking (several column
// blocks, a partial last panel, K past one or two 256-deep blocks, none at all; one row, a
// partial tile, past MC rows), transposed or not, with a row stride, with and without bias.
TEST_CASE("kernels: B packed once unpacks exactly and gives matmul's numbers, in every set and across sets") {
    oracle::Random rng(17);
    const std::vector<std::array<int, 3>> shapes = {{1, 37, 300},  {2, 2311, 300}, {7, 1031, 257}, {33, 64, 64},
                                                    {150, 100, 513}, {1, 3072, 64},  {5, 10, 0}};
    for_each_isa([&](kernels::Context& ctx) {
        double worst = 0, worst_across = 0;
        int unpacked_wrong = 0, not_bitwise = 0;
        for (const auto [M, N, K] : shapes)
            for (int form = 0; form < 4; ++form) {
                const bool bt = form & 1, with_bias = form & 2;
                const int ldb = (bt ? K : N) + 5;
                const Matrix A = rng.matrix(M, K), B = rng.matrix(bt ? N : K, ldb), bias = rng.matrix(1, N);
                const Matrix* b = with_bias ? &bias : nullptr;
                std::vector<float> buf(kernels::packed_size(ctx.isa, K, N));
                const kernels::PackedB packed = kernels::pack(ctx.isa, K, N, B.data(), ldb, bt, buf.data());
                Matrix U(K, N);
                kernels::unpack(packed, U.data(), N);
                for (int p = 0; p < K; ++p)
                    for (int j = 0; j < N; ++j) unpacked_wrong += U(p, j) != (bt ? B(j, p) : B(p, j));
                Matrix C(M, N), C_dense(M, N);
                kernels::matmul(ctx, M, A.data(), K, packed, b ? b->data() : nullptr, C.data(), N);
                kernels::matmul(ctx, M, N, K, A.data(), K, B.data(), ldb, bt, b ? b->data() : nullptr, C_dense.data(), N);
                if (M > 1) not_bitwise += (C.array() != C_dense.array()).count();
                worst = std::max(worst, product_vs_loops(C, A, B, bt, b));
                // packed in the scalar set's layout (4 columns a panel), run in this one
                std::vector<float> other(kernels::packed_size(kernels::Isa::Scalar, K, N));
                const kernels::PackedB scalar = kernels::pack(kernels::Isa::Scalar, K, N, B.data(), ldb, bt, other.data());
                kernels::matmul(ctx, M, A.data(), K, scalar, b ? b->data() : nullptr, C.data(), N);
                worst_across = std::max(worst_across, product_vs_loops(C, A, B, bt, b));
            }
        std::printf("matmul, packed B %-10s: %zu shapes, max rel. diff %.2e (packed as scalar: %.2e)\n",
                    kernels::isa_name(ctx.isa), shapes.size() * 4, worst, worst_across);
        CHECK(unpacked_wrong == 0);
        CHECK(not_bitwise == 0);
        // float sums of up to 513 terms (the wide-B test's 1e-5 is for K ≤ 300)
        CHECK(worst < 2e-5);
        CHECK(worst_across < 2e-5);
    });
}

namespace {

// The 16-bit numbers as the definitions give them (the oracle of the kernels' widening):
// bfloat16 is a float's upper 16 bits; an IEEE half is (−1)^s · 2^(e − 15) · (1 + m/1024), or
// (−1)^s · m · 2^−24 when e = 0, infinite or NaN when e = 31.
double bf16_value(std::uint16_t h) {
    const std::uint32_t bits = std::uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}
double f16_value(std::uint16_t h) {
    const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    const double sign = s ? -1.0 : 1.0;
    if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
    return sign * (e ? std::ldexp(1.0 + m / 1024.0, e - 15) : std::ldexp(double(m), -24));
}
// A 16-bit number next to x (rounded toward zero), found by bisection over the definition: the
// random matrices below made exactly representable.
std::uint16_t nearest16(kernels::Precision p, float x) {
    const auto value = [&](std::uint16_t h) { return p == kernels::Precision::BF16 ? bf16_value(h) : f16_value(h); };
    const std::uint16_t limit = p == kernels::Precision::BF16 ? 0x7f80 : 0x7c00, sign = x < 0 ? 0x8000 : 0;
    std::uint16_t lo = 0, hi = limit;  // the largest finite magnitude not above |x|
    while (lo + 1 < hi) {
        const std::uint16_t mid = static_cast<std::uint16_t>((lo + hi) / 2);
        (value(mid) <= std::fabs(x) ? lo : hi) = mid;
    }
    return static_cast<std::uint16_t>(sign | lo);
}

}  // namespace

// Every one of the 65536 bit patterns, packed as a 256×256 B and unpacked, is the number the
// definition gives (NaN stays NaN), in every set: the widening the products do in registers.
TEST_CASE("kernels: 16-bit B widens every bfloat16 and half exactly, in every set") {
    std::vector<std::uint8_t> bytes(2 * 65536 + 1);  // from byte 1: a checkpoint's tensor need not be aligned
    for (int i = 0; i < 65536; ++i) {
        const std::uint16_t h = static_cast<std::uint16_t>(i);
        std::memcpy(bytes.data() + 1 + 2 * i, &h, 2);
    }
    for (const auto p : {kernels::Precision::BF16, kernels::Precision::F16})
        for_each_isa([&](kernels::Context& ctx) {
            std::vector<std::uint16_t> buf(kernels::packed_size(ctx.isa, 256, 256));
            const kernels::PackedB packed = kernels::pack16(ctx.isa, p, 256, 256, bytes.data() + 1, 256, false, buf.data());
            std::vector<float> U(65536);
            kernels::unpack(packed, U.data(), 256);
            int wrong = 0;
            for (int i = 0; i < 65536; ++i) {
                const double want = p == kernels::Precision::BF16 ? bf16_value(i) : f16_value(i);
                wrong += std::isnan(want) ? !std::isnan(U[i]) : U[i] != want || std::signbit(U[i]) != std::signbit(want);
            }
            CAPTURE(p == kernels::Precision::BF16 ? "bf16" : "f16");
            CHECK(wrong == 0);
            float col[256];
            kernels::column(packed, 77, col);
            int column_wrong = 0;
            for (int r = 0; r < 256; ++r) column_wrong += std::memcmp(&col[r], &U[r * 256 + 77], 4) != 0;
            CHECK(column_wrong == 0);
        });
    CHECK_THROWS_AS(kernels::pack16(kernels::best_isa(), kernels::Precision::F32, 1, 1, bytes.data(), 1, false, nullptr),
                    std::invalid_argument);
}

// B of 16-bit numbers packed as they are: the products give, bit for bit, the numbers of the
// same B packed as floats (its exact F32 copy), for every shape of the blocking, one row
// included, transposed or not, in every set; and across sets (packed in the scalar layout).
TEST_CASE("kernels: B packed as 16-bit numbers gives its F32 copy's products bit for bit, every set, every shape") {
    oracle::Random rng(29);
    const std::vector<std::array<int, 3>> shapes = {{1, 37, 300},  {2, 2311, 300}, {7, 1031, 257}, {33, 64, 64},
                                                    {150, 100, 513}, {1, 3072, 64},  {5, 10, 0}};
    for (const auto p : {kernels::Precision::BF16, kernels::Precision::F16})
        for_each_isa([&](kernels::Context& ctx) {
            CAPTURE(p == kernels::Precision::BF16 ? "bf16" : "f16");
            int not_bitwise = 0, unpacked_wrong = 0;
            double worst = 0, worst_across = 0;
            for (const auto [M, N, K] : shapes)
                for (int form = 0; form < 4; ++form) {
                    const bool bt = form & 1, with_bias = form & 2;
                    const int ldb = (bt ? K : N) + 3;
                    const Matrix A = rng.matrix(M, K), bias = rng.matrix(1, N);
                    Matrix B = rng.matrix(bt ? N : K, ldb);
                    std::vector<std::uint8_t> bytes(2 * static_cast<std::size_t>(B.size()) + 1);  // odd address
                    for (Eigen::Index r = 0; r < B.rows(); ++r)
                        for (Eigen::Index c = 0; c < B.cols(); ++c) {
                            const std::uint16_t h = nearest16(p, B(r, c));
                            B(r, c) = static_cast<float>(p == kernels::Precision::BF16 ? bf16_value(h) : f16_value(h));
                            std::memcpy(bytes.data() + 1 + 2 * (r * B.cols() + c), &h, 2);
                        }
                    const float* b = with_bias ? bias.data() : nullptr;
                    std::vector<float> f32(kernels::packed_size(ctx.isa, K, N));
                    std::vector<std::uint16_t> h16(kernels::packed_size(ctx.isa, K, N));
                    const kernels::PackedB as_float = kernels::pack(ctx.isa, K, N, B.data(), ldb, bt, f32.data());
                    const kernels::PackedB as_16 = kernels::pack16(ctx.isa, p, K, N, bytes.data() + 1, ldb, bt, h16.data());
                    Matrix U(K, N);
                    kernels::unpack(as_16, U.data(), N);
                    for (int q = 0; q < K; ++q)
                        for (int j = 0; j < N; ++j) unpacked_wrong += U(q, j) != (bt ? B(j, q) : B(q, j));
                    Matrix C(M, N), C16(M, N);
                    kernels::matmul(ctx, M, A.data(), K, as_float, b, C.data(), N);
                    kernels::matmul(ctx, M, A.data(), K, as_16, b, C16.data(), N);
                    not_bitwise += (C.array() != C16.array()).count();
                    worst = std::max(worst, product_vs_loops(C16, A, B, bt, with_bias ? &bias : nullptr));
                    std::vector<std::uint16_t> other(kernels::packed_size(kernels::Isa::Scalar, K, N));
                    const kernels::PackedB scalar =
                        kernels::pack16(kernels::Isa::Scalar, p, K, N, bytes.data() + 1, ldb, bt, other.data());
                    kernels::matmul(ctx, M, A.data(), K, scalar, b, C16.data(), N);
                    worst_across = std::max(worst_across, product_vs_loops(C16, A, B, bt, with_bias ? &bias : nullptr));
                }
            std::printf("matmul, 16-bit B %-10s %s: %zu shapes, max rel. diff %.2e (packed as scalar: %.2e)\n",
                        kernels::isa_name(ctx.isa), p == kernels::Precision::BF16 ? "bf16" : "f16 ", shapes.size() * 4,
                        worst, worst_across);
            CHECK(unpacked_wrong == 0);
            CHECK(not_bitwise == 0);
            CHECK(worst < 2e-5);
            CHECK(worst_across < 2e-5);
        });
}
// The grouped precisions (the block formats of GGUF files): B as 8-bit (or 4-bit) q with a scale
// s and an offset o per column and 16 (or 32) rows, given as floats (Q8, Q4) or coded as the
// K-quants code them (Q8K, Q4K, Q6K: s = d·a, o = m·b, codes a, b per group, factors d, m per
// 256 rows; Q6K's and Q5K's numbers 6- and 5-bit; Q8S a scale per 32, no offset), packed in parts of columns, unpacks to s·q + o as the kernels form it (one multiply-add:
// within 1 ulp of the float s·q + o), and gives the products of that F32 copy bit for bit: every
// set, many shapes (several column blocks, K past KC, one row), with a bias or not. The same
// numbers packed in another of them (coded as floats; 4- and 6-bit as 8-bit) unpack to the same floats.
namespace {
struct GroupedB {  // B's numbers and scales in one grouped precision, transposed (N columns of K)
    kernels::Precision precision = kernels::Precision::Q8;
    int K = 0, N = 0, ldq = 0, ldg = 0, ldk = 0;
    std::vector<std::int8_t> q, a, b;
    std::vector<float> s, o, d, m;  // s, o: every precision's floats (coded: d·a, m·b)
    int rows() const { return kernels::group_rows(precision); }
    bool coded() const { return kernels::is_coded(precision); }
    bool four() const { return precision == kernels::Precision::Q4 || precision == kernels::Precision::Q4K; }
    float scale(int j, int p) const { return s[static_cast<std::size_t>(j) * ldg + p / rows()]; }
    float offset(int j, int p) const { return o[static_cast<std::size_t>(j) * ldg + p / rows()]; }
    int number(int j, int p) const { return q[static_cast<std::size_t>(j) * ldq + p]; }
    // packed in parts of pack_step columns, as the loader packs a weight
    kernels::PackedB pack(kernels::Isa isa, std::vector<std::uint8_t>& numbers, std::vector<std::uint8_t>& scales) const {
        const std::size_t size = kernels::packed_size(isa, K, N);
        numbers.assign(kernels::packed_bytes(precision, size), 0xAB);
        scales.assign(kernels::scales_bytes(precision, size) + 1, 0xAB);
        const int step = kernels::pack_step(isa, N);
        for (int j0 = 0; j0 < N; j0 += step) {
            const std::size_t at = static_cast<std::size_t>(j0);
            kernels::GroupedColumns c;
            c.q = q.data() + at * ldq, c.ldq = ldq, c.ldg = ldg, c.ldk = ldk;
            if (coded()) c.a = a.data() + at * ldg, c.b = b.data() + at * ldg, c.d = d.data() + at * ldk, c.m = m.data() + at * ldk;
            else c.s = s.data() + at * ldg, c.o = o.data() + at * ldg;
            kernels::pack_columns_grouped(isa, precision, K, N, j0, std::min(N, j0 + step), c, numbers.data(), scales.data());
        }
        return {isa, precision, K, N, numbers.data(), scales.data()};
    }
    // the same numbers in `other`: coded scales given as their floats (or the same codes), 32-row groups as two of 16
    GroupedB as(kernels::Precision other) const {
        GroupedB g = *this;
        g.precision = other;
        if (kernels::is_coded(other)) return g;  // Q6K's as Q8K's: the same codes
        g.ldg = K / g.rows() + 1;
        g.s.assign(static_cast<std::size_t>(N) * g.ldg, 0.0f), g.o = g.s, g.a.clear(), g.b.clear(), g.d.clear(), g.m.clear();
        for (int j = 0; j < N; ++j)
            for (int p = 0; p < K; p += g.rows())
                g.s[static_cast<std::size_t>(j) * g.ldg + p / g.rows()] = scale(j, p),
                    g.o[static_cast<std::size_t>(j) * g.ldg + p / g.rows()] = offset(j, p);
        return g;
    }
};
GroupedB random_grouped(oracle::Random& rng, kernels::Precision precision, int K, int N) {
    GroupedB g;
    g.precision = precision, g.K = K, g.N = N;
    g.ldq = K + 5, g.ldg = K / g.rows() + 2, g.ldk = K / kernels::kCodedRows + 1;
    g.q.resize(static_cast<std::size_t>(N) * g.ldq);
    for (auto& x : g.q)
        x = static_cast<std::int8_t>(g.four()                                 ? rng.below(16)
                                     : precision == kernels::Precision::Q6K ? rng.below(64) - 32
                                     : precision == kernels::Precision::Q5K ? rng.below(32)
                                                                            : rng.below(256) - 128);
    g.s.resize(static_cast<std::size_t>(N) * g.ldg), g.o.resize(g.s.size());
    if (!g.coded()) {
        const bool offsets = precision != kernels::Precision::Q8S;
        for (std::size_t i = 0; i < g.s.size(); ++i) g.s[i] = 0.02f * rng.uniform(), g.o[i] = offsets && i % 3 ? 0.1f * rng.uniform() : 0.0f;
        return g;
    }
    // codes as the K-quants have them (Q6_K: int8 scales; Q4_K: 6-bit scales and mins), factors halves
    const bool offsets = precision == kernels::Precision::Q4K || precision == kernels::Precision::Q5K;
    g.a.resize(g.s.size()), g.b.resize(g.s.size()), g.d.resize(static_cast<std::size_t>(N) * g.ldk), g.m.resize(g.d.size());
    const auto half = [&] { return std::ldexp(static_cast<float>(rng.below(2048) - 1024), -22 - rng.below(4)); };
    for (std::size_t i = 0; i < g.d.size(); ++i) g.d[i] = half(), g.m[i] = offsets ? half() : 0.0f;
    for (int j = 0; j < N; ++j)
        for (int k = 0; k < g.ldg; ++k) {
            const std::size_t i = static_cast<std::size_t>(j) * g.ldg + k;
            const std::size_t f = static_cast<std::size_t>(j) * g.ldk + std::min(k * g.rows() / kernels::kCodedRows, g.ldk - 1);
            g.a[i] = static_cast<std::int8_t>(offsets ? rng.below(64) : rng.below(256) - 128);
            g.b[i] = static_cast<std::int8_t>(offsets ? rng.below(64) : 0);
            g.s[i] = g.d[f] * g.a[i], g.o[i] = g.m[f] * g.b[i];  // exact: a half times a small integer
        }
    return g;
}
}  // namespace
TEST_CASE("kernels: B packed as grouped 8-bit or 4-bit numbers, scales as floats or coded, gives its F32 copy's products bit for bit") {
    oracle::Random rng(53);
    const std::vector<std::array<int, 3>> shapes = {{1, 37, 320}, {2, 2311, 32}, {7, 1031, 288}, {33, 64, 64},
                                                    {150, 100, 512}, {1, 3072, 64}, {5, 10, 32}, {9, 300, 0}};
    const std::vector<std::array<int, 3>> coded_shapes = {{1, 37, 256}, {2, 1311, 256}, {7, 531, 768}, {33, 64, 512},
                                                          {150, 100, 512}, {1, 3072, 256}, {5, 10, 256}, {9, 300, 0}};
    using P = kernels::Precision;
    for (const auto precision : {P::Q8, P::Q4, P::Q8S, P::Q8K, P::Q4K, P::Q6K, P::Q5K})
        for_each_isa([&](kernels::Context& ctx) {
            const bool coded = kernels::is_coded(precision);
            int not_bitwise = 0, unpacked_wrong = 0, column_wrong = 0, others_differ = 0;
            double worst = 0;
            for (const auto [M, N, K] : coded ? coded_shapes : shapes)
                for (int with_bias = 0; with_bias < 2; ++with_bias) {
                    const GroupedB g = random_grouped(rng, precision, K, N);
                    std::vector<std::uint8_t> numbers, scales;
                    const kernels::PackedB B = g.pack(ctx.isa, numbers, scales);
                    Matrix U(K, N);  // B as floats: s·q + o, within an ulp of the float expression
                    kernels::unpack(B, U.data(), N);
                    std::vector<float> col(static_cast<std::size_t>(K));
                    for (int j = 0; j < N; ++j) {
                        kernels::column(B, j, col.data());
                        for (int p = 0; p < K; ++p) {
                            const double want = double(g.number(j, p)) * g.scale(j, p) + g.offset(j, p);
                            unpacked_wrong += std::fabs(U(p, j) - want) > 1.2e-7 * (std::fabs(want) + std::fabs(g.offset(j, p)) + 1e-30);
                            column_wrong += col[p] != U(p, j);
                        }
                    }
                    // the same numbers as floats' scales (coded), and as 8-bit numbers (4-bit)
                    std::vector<P> others;
                    if (coded) others.push_back(precision == P::Q4K ? P::Q4 : P::Q8);
                    if (precision == P::Q6K) others.push_back(P::Q8K);
                    if (precision == P::Q8S) others.push_back(P::Q8);
                    if (precision == P::Q4 || precision == P::Q4K) others.push_back(P::Q8);
                    for (const P other : others) {
                        std::vector<std::uint8_t> numbers2, scales2;
                        Matrix U2(K, N);
                        kernels::unpack(g.as(other).pack(ctx.isa, numbers2, scales2), U2.data(), N);
                        others_differ += (U.array() != U2.array()).count();
                    }
                    const std::size_t size = kernels::packed_size(ctx.isa, K, N);
                    std::vector<float> f32(size);
                    const kernels::PackedB copy = kernels::pack(ctx.isa, K, N, U.data(), N, false, f32.data());
                    Matrix C(M, N), Cq(M, N);
                    const Matrix A = rng.matrix(M, K), bias = rng.matrix(1, N);
                    const float* b = with_bias ? bias.data() : nullptr;
                    kernels::matmul(ctx, M, A.data(), K, copy, b, C.data(), N);
                    kernels::matmul(ctx, M, A.data(), K, B, b, Cq.data(), N);
                    not_bitwise += (C.array() != Cq.array()).count();
                    worst = std::max(worst, product_vs_loops(Cq, A, U, false, with_bias ? &bias : nullptr));
                }
            static constexpr const char* kNames[] = {"", "", "", "Q8 ", "Q4 ", "Q8K", "Q4K", "Q6K", "Q8S", "Q5K"};
            std::printf("matmul, grouped B %s %-10s: %zu shapes, max rel. diff %.2e\n", kNames[static_cast<int>(precision)],
                        kernels::isa_name(ctx.isa), shapes.size() * 2, worst);
            CHECK(unpacked_wrong == 0);
            CHECK(column_wrong == 0);
            CHECK(others_differ == 0);
            CHECK(not_bitwise == 0);
            CHECK(worst < 2e-5);
        });
}
// Packing in parts (a checkpoint's tensor read a window of rows at a time): the columns of B cut
// into parts of whole pack_steps, each part given alone and packed into its place, make the
// whole packing byte for byte, and unpack to B (plain loops); for every precision, transposed or
// not, at odd addresses, many shapes (several column blocks, K past KC), in every set.
TEST_CASE("kernels: B packed in parts of columns is B packed whole, bit for bit, every set and precision") {
    oracle::Random rng(41);
    const std::vector<std::array<int, 2>> shapes = {{37, 300}, {2311, 3}, {1031, 257}, {64, 64}, {4100, 300},
                                                    {3072, 17}, {5, 0},   {0, 9},     {1, 1}};
    for (const auto p : {kernels::Precision::F32, kernels::Precision::BF16, kernels::Precision::F16})
        for_each_isa([&](kernels::Context& ctx) {
            const char* name = p == kernels::Precision::F32 ? "f32" : p == kernels::Precision::BF16 ? "bf16" : "f16";
            CAPTURE(name);
            const std::size_t e = p == kernels::Precision::F32 ? 4 : 2;
            int wrong_bytes = 0, unpacked_wrong = 0, parts_seen = 0, most_parts = 0;
            for (const auto& shape : shapes)
                for (const bool bt : {false, true}) {
                    const int N = shape[0], K = shape[1];
                    CAPTURE(N);
                    CAPTURE(K);
                    CAPTURE(bt);
                    const int ldb = (bt ? K : N) + 3, rows = bt ? N : K;
                    // B's numbers: random bits (16-bit) or random floats, from byte 1
                    std::vector<std::uint8_t> bytes(e * static_cast<std::size_t>(rows) * ldb + 1);
                    const Matrix F = rng.matrix(std::max(rows, 1), ldb);
                    for (std::size_t i = 0; i + 1 < bytes.size(); i += e) {
                        const float x = F.data()[i / e];
                        if (e == 4) std::memcpy(&bytes[1 + i], &x, 4);
                        else {
                            std::uint32_t bits;
                            std::memcpy(&bits, &x, 4);
                            const std::uint16_t h = static_cast<std::uint16_t>(bits >> 11);  // any pattern, NaNs too
                            std::memcpy(&bytes[1 + i], &h, 2);
                        }
                    }
                    const std::size_t n = kernels::packed_size(ctx.isa, K, N);
                    std::vector<std::uint8_t> whole(n * e), parts(n * e, 0xA5);
                    kernels::pack_columns(ctx.isa, p, K, N, 0, N, bytes.data() + 1, ldb, bt, whole.data());
                    // parts of 1 and 2 steps in turn (the last: the rest), each from its own copy at an odd address
                    const int step = kernels::pack_step(ctx.isa, N);
                    int count = 0;
                    for (int j0 = 0; j0 < N || (N == 0 && count == 0); ++count) {
                        const int j1 = std::min(N, j0 + step * (1 + count % 2));
                        std::vector<std::uint8_t> part(1 + e * static_cast<std::size_t>(bt ? (j1 - j0) * ldb : rows * ldb));
                        if (bt) std::memcpy(part.data() + 1, bytes.data() + 1 + e * j0 * ldb, part.size() - 1);
                        else
                            for (int r = 0; r < rows; ++r)
                                std::memcpy(part.data() + 1 + e * r * ldb, bytes.data() + 1 + e * (r * ldb + j0), e * (j1 - j0));
                        kernels::pack_columns(ctx.isa, p, K, N, j0, j1, part.data() + 1, ldb, bt, parts.data());
                        j0 = j1;
                    }
                    parts_seen += count, most_parts = std::max(most_parts, count);
                    wrong_bytes += static_cast<int>(std::mismatch(whole.begin(), whole.end(), parts.begin()).first != whole.end());
                    const kernels::PackedB packed{ctx.isa, p, K, N, parts.data()};
                    Matrix U(std::max(K, 1), std::max(N, 1));
                    if (K && N) kernels::unpack(packed, U.data(), N);
                    for (int q = 0; q < K; ++q)
                        for (int j = 0; j < N; ++j) {
                            const std::uint8_t* b = bytes.data() + 1 + e * (bt ? j * ldb + q : q * ldb + j);
                            double want;
                            if (e == 4) {
                                float x;
                                std::memcpy(&x, b, 4);
                                want = x;
                            } else {
                                std::uint16_t h;
                                std::memcpy(&h, b, 2);
                                want = p == kernels::Precision::BF16 ? bf16_value(h) : f16_value(h);
                            }
                            unpacked_wrong += std::isnan(want) ? !std::isnan(U(q, j)) : U(q, j) != want;
                        }
                }
            std::printf("pack in parts %-10s %-4s: %zu shapes, %d parts (up to %d a B), %d packings differ, %d numbers wrong\n",
                        kernels::isa_name(ctx.isa), name, shapes.size() * 2, parts_seen, most_parts, wrong_bytes, unpacked_wrong);
            CHECK(wrong_bytes == 0);
            CHECK(unpacked_wrong == 0);
            CHECK(most_parts > 2);
        });
    // parts that are not whole steps are refused
    const kernels::Isa isa = kernels::best_isa();
    const int step = kernels::pack_step(isa, 4100);
    std::vector<float> out(kernels::packed_size(isa, 2, 4100)), B(2 * 4100);
    CHECK_THROWS_AS(kernels::pack_columns(isa, kernels::Precision::F32, 2, 4100, 1, step, B.data(), 2, true, out.data()),
                    std::invalid_argument);
    CHECK_THROWS_AS(kernels::pack_columns(isa, kernels::Precision::F32, 2, 4100, 0, step + 1, B.data(), 2, true, out.data()),
                    std::invalid_argument);
    CHECK_THROWS_AS(kernels::pack_columns(isa, kernels::Precision::F32, 2, 4100, step, 4101, B.data(), 2, true, out.data()),
                    std::invalid_argument);
    CHECK_NOTHROW(kernels::pack_columns(isa, kernels::Precision::F32, 2, 4100, step, 4100, B.data(), 2, true, out.data()));
    // grouped formats: K whole groups (16 for Q8, 32 for Q4, 256 for the coded), their numbers only with their scales
    std::vector<std::uint8_t> q(512 * 4), packed(kernels::packed_size(isa, 512, 4));
    std::vector<float> s(64), scales(packed.size());
    std::vector<std::int8_t> codes(4 * 32);  // 4 columns, ldg 32
    kernels::GroupedColumns c;
    c.q = q.data(), c.ldq = 48, c.s = s.data(), c.o = s.data(), c.ldg = 3;
    CHECK_THROWS_AS(kernels::pack_columns_grouped(isa, kernels::Precision::Q4, 48, 4, 0, 4, c, packed.data(), scales.data()),
                    std::invalid_argument);
    CHECK_NOTHROW(kernels::pack_columns_grouped(isa, kernels::Precision::Q8, 48, 4, 0, 4, c, packed.data(), scales.data()));
    CHECK_THROWS_AS(kernels::pack_columns(isa, kernels::Precision::Q4, 48, 4, 0, 4, q.data(), 48, true, packed.data()),
                    std::invalid_argument);
    c.ldq = 512, c.ldg = 32, c.a = codes.data(), c.d = s.data(), c.ldk = 2;  // Q8K: codes and factors, no b and m
    CHECK_THROWS_AS(kernels::pack_columns_grouped(isa, kernels::Precision::Q8K, 48, 4, 0, 4, c, packed.data(), scales.data()),
                    std::invalid_argument);
    CHECK_NOTHROW(kernels::pack_columns_grouped(isa, kernels::Precision::Q8K, 512, 4, 0, 4, c, packed.data(), scales.data()));
    CHECK_THROWS_AS(kernels::pack_columns_grouped(isa, kernels::Precision::Q4K, 512, 4, 0, 4, c, packed.data(), scales.data()),
                    std::invalid_argument);
    c.b = codes.data(), c.m = s.data();
    CHECK_NOTHROW(kernels::pack_columns_grouped(isa, kernels::Precision::Q4K, 512, 4, 0, 4, c, packed.data(), scales.data()));
    CHECK_THROWS_AS(kernels::pack_columns_grouped(isa, kernels::Precision::BF16, 512, 4, 0, 4, c, packed.data(), scales.data()),
                    std::invalid_argument);
}

TEST_CASE("kernels: row spans of causal, padded and explicit masks") {
    MaskSpec spec;
    spec.causal = true;
    const MaskMatrix causal = combine_masks(spec, 4, 5);
    const auto spans = kernels::row_spans(causal.data(), 4, 5);
    for (int i = 0; i < 4; ++i) {
        CHECK(spans[i].lo == 0);
        CHECK(spans[i].hi == i + 1);
        CHECK(spans[i].dense);
    }
    MaskMatrix m(3, 12);
    m.setZero();
    m(0, 2) = 1, m(0, 10) = 1;         // a hole: not dense
    m(1, 3) = m(1, 4) = m(1, 5) = 1;   // dense
    const auto s = kernels::row_spans(m.data(), 3, 12);
    CHECK((s[0].lo == 2 && s[0].hi == 11 && !s[0].dense));
    CHECK((s[1].lo == 3 && s[1].hi == 6 && s[1].dense));
    CHECK(s[2].hi <= s[2].lo);  // nothing allowed
    const auto all = kernels::row_spans(nullptr, 2, 7);
    CHECK((all[1].lo == 0 && all[1].hi == 7 && all[1].dense));
}

TEST_CASE("kernels: one head, full trace and weights only, against the double oracle, every set") {
    oracle::Random rng(5);
    constexpr float kNone = -INFINITY;
    struct Case {
        int T_q, T_k, d_k;
        int mask;    // 0 none, 1 causal, 2 random explicit with fully masked rows
        float sink;  // gpt-oss's logit of no key in every row, or kNone
    };
    const Case cases[] = {{1, 1, 1, 0, kNone},    {7, 7, 3, 1, kNone},      {13, 29, 5, 2, kNone},  {64, 64, 64, 1, kNone},
                          {33, 70, 17, 0, kNone}, {100, 100, 64, 1, kNone}, {45, 19, 8, 2, kNone},  {130, 130, 64, 2, kNone},
                          {1, 1, 1, 0, 0.5f},     {13, 29, 5, 2, 0.7f},     {64, 64, 64, 1, 6.0f},  {33, 70, 17, 0, -3.0f},
                          {130, 130, 64, 2, 2.0f}, {9, 40, 16, 1, 40.0f}};
    for_each_isa([&](kernels::Context& ctx) {
        double worst_w = 0, worst_o = 0, worst_s = 0;
        int mismatched_weights_only = 0;
        for (const Case& c : cases) {
            const Matrix q = rng.matrix(c.T_q, c.d_k), k = rng.matrix(c.T_k, c.d_k), v = rng.matrix(c.T_k, c.d_k);
            MaskSpec spec;
            spec.causal = c.mask == 1;
            if (c.mask == 2) {
                spec.allowed = MaskMatrix(c.T_q, c.T_k);
                for (Eigen::Index i = 0; i < spec.allowed.size(); ++i) spec.allowed.data()[i] = rng.below(3) != 0;
                for (int i = 0; i < c.T_q; i += 3) spec.allowed.row(i).setZero();
            }
            const MaskMatrix allowed = combine_masks(spec, c.T_q, c.T_k);
            const float factor = 1.0f / std::sqrt(static_cast<float>(c.d_k));
            Matrix scores(c.T_q, c.T_k), scaled(c.T_q, c.T_k), w(c.T_q, c.T_k), out(c.T_q, c.d_k);
            std::vector<int> flagged;
            kernels::HeadArgs a;
            a.T_q = c.T_q, a.T_k = c.T_k, a.d_k = c.d_k, a.q = q.data(), a.k = k.data(), a.v = v.data();
            a.allowed = allowed.data(), a.factor = factor, a.sink = c.sink;
            a.scores = scores.data(), a.scaled = scaled.data(), a.weights = w.data(), a.output = out.data();
            a.fully_masked = &flagged;
            kernels::attention_head(ctx, a);
            // Weights only: no scores or scaled, the masked half of QKᵀ skipped; same weights.
            Matrix w2(c.T_q, c.T_k), out2(c.T_q, c.d_k);
            kernels::HeadArgs b = a;
            b.scores = b.scaled = nullptr, b.weights = w2.data(), b.output = out2.data(), b.fully_masked = nullptr;
            kernels::attention_head(ctx, b);
            mismatched_weights_only += (w2 != w) + (out2 != out);

            std::vector<int> want_flagged;
            for (int i = 0; i < c.T_q; ++i) {
                std::vector<double> s(c.T_k);
                double mx = -INFINITY;
                for (int j = 0; j < c.T_k; ++j) {
                    double dot = 0;
                    for (int p = 0; p < c.d_k; ++p) dot += double(q(i, p)) * k(j, p);
                    s[j] = dot;
                    worst_s = std::max(worst_s, rel(scores(i, j), dot));
                    if (allowed(i, j)) mx = std::max(mx, dot * factor);
                    CHECK(scaled(i, j) == (allowed(i, j) ? scores(i, j) * factor : -INFINITY));
                }
                if (mx == -INFINITY) {
                    want_flagged.push_back(i);
                    CHECK(w.row(i).isZero());
                    CHECK(out.row(i).isZero());
                    continue;
                }
                // the sink: in the max and in the sum, a weight of its own (1 − the row's)
                mx = std::max(mx, static_cast<double>(c.sink));
                double sum = c.sink == kNone ? 0.0 : std::exp(c.sink - mx);
                std::vector<double> e(c.T_k, 0.0);
                for (int j = 0; j < c.T_k; ++j)
                    if (allowed(i, j)) sum += e[j] = std::exp(s[j] * factor - mx);
                for (int j = 0; j < c.T_k; ++j) {
                    worst_w = std::max(worst_w, rel(w(i, j), e[j] / sum));
                    if (!allowed(i, j)) CHECK(w(i, j) == 0.0f);
                }
                for (int p = 0; p < c.d_k; ++p) {
                    double o = 0;
                    for (int j = 0; j < c.T_k; ++j) o += e[j] / sum * v(j, p);
                    worst_o = std::max(worst_o, rel(out(i, p), o));
                }
            }
            CHECK(flagged == want_flagged);
        }
        std::printf("head %-12s: max rel. diff scores %.2e weights %.2e output %.2e\n", kernels::isa_name(ctx.isa),
                    worst_s, worst_w, worst_o);
        CHECK(mismatched_weights_only == 0);
        CHECK(worst_s < 1e-5);
        CHECK(worst_w < 1e-5);
        CHECK(worst_o < 1e-5);
    });
}

TEST_CASE("kernels: multi-head weights-only path gives the trace's weights and output, every set") {
    oracle::Random rng(3);
    const int T = 37, d_model = 24;
    const Matrix x = rng.matrix(T, d_model);
    const Weights w = Weights::random(9, d_model);
    AttentionOptions options;
    options.n_heads = 3;
    options.mask.causal = true;
    const Matrix best = multi_head_attention(x, x, w, options).output;
    for (kernels::Isa isa : kernels::available_isas()) {
        CAPTURE(kernels::isa_name(isa));
        kernels::Context ctx(isa);
        const MultiHeadTrace t = multi_head_attention(ctx, x, x, w, options);
        int heads_seen = 0;
        const Matrix out = multi_head_attention_weights(ctx, x, x, w, options, [&](int h, const Matrix& weights) {
            CHECK(weights == t.heads[h].weights);
            ++heads_seen;
        });
        CHECK(heads_seen == 3);
        CHECK(out == t.output);
        // Another set rounds differently (FMA or not, other sums), within the oracle's tolerance.
        CHECK((t.output - best).cwiseAbs().maxCoeff() < 1e-5f * (1.0f + best.cwiseAbs().maxCoeff()));
    }
}

// [SECTION] Threads ----------------------------------------------------------------------------

// The pool runs every part once, on any number of threads, job after job, and rethrows a part's
// exception once the job has ended.
TEST_CASE("threads: the pool runs every part of every job once, and passes on a part's exception") {
    for (int threads : {1, 2, 3, 8}) {
        CAPTURE(threads);
        kernels::Pool pool(threads);
        CHECK(pool.threads() == kernels::Pool::threads_for(threads));  // a wasm build without threads: 1
#ifndef __EMSCRIPTEN__
        CHECK(pool.threads() == threads);
#endif
        std::vector<int> runs(97), want(97), bad_worker(97);
        for (int job = 0; job < 200; ++job) {  // jobs close together: the threads between spinning and sleeping
            const int parts = job % 97 + 1;
            for (int p = 0; p < parts; ++p) ++want[static_cast<std::size_t>(p)];
            if (job == 150) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // and asleep
            pool.run(parts, [&](int part, int worker) {  // parts are apart: no two threads touch one
                ++runs[static_cast<std::size_t>(part)];
                bad_worker[static_cast<std::size_t>(part)] += worker < 0 || worker >= threads;
            });
        }
        CHECK(runs == want);
        CHECK(std::count(bad_worker.begin(), bad_worker.end(), 0) == 97);
        int threw = 0;
        try {
            pool.run(10, [](int part, int) {
                if (part == 7) throw std::runtime_error("part 7");
            });
        } catch (const std::runtime_error& e) {
            threw = std::string(e.what()) == "part 7";
        }
        CHECK(threw == 1);
        int after = 0;  // the pool still works
        std::vector<int> seen(5);
        pool.run(5, [&](int part, int) { seen[static_cast<std::size_t>(part)] = part + 1; });
        for (int v : seen) after += v;
        CHECK(after == 15);
    }
}

// Timing (benchmarks: Pool::set_timing) counts the jobs run on threads, their parts' time summed
// and each job's longest part; a job of one part runs on the caller and is not one of them.
// A product split into more parts a thread (Context::product_parts) gives the same bits.
TEST_CASE("threads: the pool's timing counts its jobs, their parts' time and longest parts; more parts a product, the same bits") {
    kernels::Pool pool(2);
    const auto sleep_ms = [](int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
    pool.set_timing(true);
    pool.run(4, [&](int part, int) { sleep_ms(part == 3 ? 8 : 2); });
    pool.run(1, [&](int, int) { sleep_ms(1); });
    const kernels::PoolTimes t = pool.times();
    if (pool.threads() == 1) {  // a wasm build without threads: every job on the caller
        CHECK(t.jobs == 0);
    } else {
        CHECK(t.jobs == 1);
        CHECK(t.parts == 4);
        CHECK(t.busy_s >= 0.0139);  // 2 + 2 + 2 + 8 ms, each at least
        CHECK(t.longest_s >= 0.0079);
        CHECK(t.longest_s <= t.busy_s);
        CHECK(t.wall_s >= t.longest_s);
    }
    pool.set_timing(false);  // off: counted from zero, nothing more
    pool.run(4, [&](int, int) {});
    CHECK(pool.times().jobs == 0);

    oracle::Random rng(34);
    const Matrix A = rng.matrix(41, 80), B = rng.matrix(80, 150);
    Matrix want(41, 150), got(41, 150);
    kernels::Context one;
    kernels::matmul(one, 41, 150, 80, A.data(), 80, B.data(), 150, false, nullptr, want.data(), 150);
    kernels::Context ctx(kernels::best_isa(), &pool);
    ctx.split_work = 0;
    for (int parts : {1, 2, 3}) {
        CAPTURE(parts);
        ctx.product_parts = parts;
        got.setZero();
        kernels::matmul(ctx, 41, 150, 80, A.data(), 80, B.data(), 150, false, nullptr, got.data(), 150);
        CHECK((got.array() != want.array()).count() == 0);
    }
}

// set_threads moves the threads a job uses within those started, either way, between jobs and
// while another caller's jobs run: every part still runs once, only workers below the setting
// take parts, and the numbers do not change.
TEST_CASE("threads: set_threads changes the threads jobs use, within those the pool started") {
    kernels::Pool pool(4);
    const int most = pool.capacity();
    CHECK(most == kernels::Pool::threads_for(4));
    CHECK(pool.threads() == most);
    pool.set_threads(0);
    CHECK(pool.threads() == 1);
    pool.set_threads(99);
    CHECK(pool.threads() == most);
    std::atomic<int> bad{0};
    for (int job = 0; job < 300; ++job) {
        const int active = job % most + 1;
        pool.set_threads(active);
        if (job % 100 == 50) std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the threads asleep
        std::vector<int> runs(13);
        pool.run(13, [&](int part, int worker) {
            ++runs[static_cast<std::size_t>(part)];
            bad += worker < 0 || worker >= active;
        });
        bad += std::count(runs.begin(), runs.end(), 1) != 13;
    }
    CHECK(bad.load() == 0);
    // Products on a pool set to 1, 2 and 4 threads: one thread's bits.
    oracle::Random rng(33);
    const Matrix A = rng.matrix(37, 96), B = rng.matrix(96, 200);
    Matrix want(37, 200), got(37, 200);
    kernels::Context one;
    kernels::matmul(one, 37, 200, 96, A.data(), 96, B.data(), 200, false, nullptr, want.data(), 200);
    kernels::Context ctx(kernels::best_isa(), &pool);
    ctx.split_work = 0;
    for (int n : {1, 2, 4, 1}) {
        pool.set_threads(n);
        got.setZero();
        kernels::matmul(ctx, 37, 200, 96, A.data(), 96, B.data(), 200, false, nullptr, got.data(), 200);
        CHECK((got.array() != want.array()).count() == 0);
    }
}

// keep_freed_memory: a run's kept maps (SmolLM2's shape at T = 512: 270 blocks of 1 MB), freed
// as the next run starts, serve that run without a page fault (at glibc's 128 KB trim threshold,
// or the 256 MB it was, they went back to the system and every page faulted in again).
// glibc's malloc only: ASan's has no such thresholds.
TEST_CASE("threads: a run's freed maps are the next run's memory, not faulted in again") {
#if defined(__GLIBC__) && !ATTN_TEST_SANITIZED
    kernels::keep_freed_memory();
    const auto faults = [] {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        return static_cast<long>(u.ru_minflt);
    };
    constexpr int kBlocks = 300, kFloats = 1 << 18;  // 300 MB
    const auto run = [&] {
        std::vector<std::unique_ptr<float[]>> maps;
        for (int b = 0; b < kBlocks; ++b) {
            maps.push_back(std::make_unique<float[]>(kFloats));  // zeroed: every page written
            maps.back()[kFloats - 1] = static_cast<float>(b);
        }
        return maps;
    };
    const long before = faults();
    run();
    const long first = faults() - before;
    run();
    const long second = faults() - before - first;
    INFO("page faults: " << first << " the first time, " << second << " the second");
    CHECK(second <= first / 50);  // 4 KB pages: 76 800 the first time
#endif
}

// part_range: the parts, in order, cover [0, n) once, each starts on a whole step, and they
// differ by at most one step in length (but the last, which may end short at n).
TEST_CASE("threads: part_range cuts [0, n) into even runs of whole steps") {
    int bad = 0, cases = 0;
    for (int n : {0, 1, 5, 31, 32, 33, 768, 50257})
        for (int parts : {1, 2, 3, 8})
            for (int step : {1, 4, 8, 16, 32}) {
                const int steps = (n + step - 1) / step;
                int at = 0, longest = 0, shortest = 1 << 30;
                for (int p = 0; p < parts; ++p) {
                    const auto [begin, end] = kernels::part_range(p, parts, n, step);
                    bad += begin != at || end < begin || begin % step != 0;
                    if (p + 1 < parts) longest = std::max(longest, (end - begin) / step), shortest = std::min(shortest, (end - begin) / step);
                    at = end;
                }
                bad += at != n || (parts > 1 && longest - shortest > 1) || (parts > 1 && steps >= parts && shortest < steps / parts);
                ++cases;
            }
    CHECK(cases == 160);
    CHECK(bad == 0);
}

// With a pool, a product splits C's columns among the threads and attention its heads: the same
// numbers, bit for bit, as one thread, for 1, 2, 3 and 8 threads (every job split: split_work 0),
// in every instruction set, every precision, one row and many, transposed or not.
TEST_CASE("threads: products and heads on 1, 2, 3 and 8 threads are one thread's, bit for bit") {
    oracle::Random rng(53);
    const std::vector<std::array<int, 3>> shapes = {{1, 37, 300}, {2, 2311, 300}, {7, 1031, 257}, {33, 64, 64},
                                                    {150, 100, 513}, {1, 3072, 64}, {5, 10, 0}, {64, 5, 40}};
    std::vector<std::unique_ptr<kernels::Pool>> pools;
    for (int threads : {2, 3, 8}) pools.push_back(std::make_unique<kernels::Pool>(threads));
    for_each_isa([&](kernels::Context& one) {
        int differ = 0, compared = 0;
        for (const auto [M, N, K] : shapes)
            for (int form = 0; form < 4; ++form) {
                const bool bt = form & 1, with_bias = form & 2;
                const Matrix A = rng.matrix(M, K), B = rng.matrix(bt ? N : K, bt ? K : N), bias = rng.matrix(1, N);
                const float* b = with_bias ? bias.data() : nullptr;
                const int ldb = bt ? K : N;
                std::vector<float> f32(kernels::packed_size(one.isa, K, N));
                std::vector<std::uint16_t> h16(kernels::packed_size(one.isa, K, N));
                std::vector<std::uint16_t> bits(static_cast<std::size_t>(B.size()));
                for (Eigen::Index i = 0; i < B.size(); ++i) bits[static_cast<std::size_t>(i)] = nearest16(kernels::Precision::BF16, B.data()[i]);
                const kernels::PackedB packed = kernels::pack(one.isa, K, N, B.data(), ldb, bt, f32.data());
                const kernels::PackedB packed16 =
                    kernels::pack16(one.isa, kernels::Precision::BF16, K, N, bits.data(), ldb, bt, h16.data());
                Matrix want(M, N), want_packed(M, N), want16(M, N);
                kernels::matmul(one, M, N, K, A.data(), K, B.data(), ldb, bt, b, want.data(), N);
                kernels::matmul(one, M, A.data(), K, packed, b, want_packed.data(), N);
                kernels::matmul(one, M, A.data(), K, packed16, b, want16.data(), N);
                for (const auto& pool : pools) {
                    kernels::Context ctx(one.isa, pool.get());
                    ctx.split_work = 0;
                    Matrix got(M, N), got_packed(M, N), got16(M, N);
                    kernels::matmul(ctx, M, N, K, A.data(), K, B.data(), ldb, bt, b, got.data(), N);
                    kernels::matmul(ctx, M, A.data(), K, packed, b, got_packed.data(), N);
                    kernels::matmul(ctx, M, A.data(), K, packed16, b, got16.data(), N);
                    differ += (got.array() != want.array()).count() + (got_packed.array() != want_packed.array()).count() +
                              (got16.array() != want16.array()).count();
                    compared += 3;
                }
            }
        // The heads: a trace of every head and the weights-only path, causal, several head counts.
        const int T = 41, d_model = 24;
        const Matrix x = rng.matrix(T, d_model);
        const Weights w = Weights::random(11, d_model);
        for (int heads : {1, 3, 8}) {
            AttentionOptions options;
            options.n_heads = heads;
            options.mask.causal = true;
            const MultiHeadTrace want = multi_head_attention(one, x, x, w, options);
            for (const auto& pool : pools) {
                kernels::Context ctx(one.isa, pool.get());
                ctx.split_work = 0;
                const MultiHeadTrace got = multi_head_attention(ctx, x, x, w, options);
                differ += (got.output.array() != want.output.array()).count();
                for (int h = 0; h < heads; ++h)
                    differ += (got.heads[h].weights.array() != want.heads[h].weights.array()).count() +
                              (got.heads[h].output.array() != want.heads[h].output.array()).count();
                // The weights-only path: heads a group at a time, shown in order.
                int next = 0;
                const Matrix out = multi_head_attention_weights(ctx, x, x, w, options, [&](int h, const Matrix& weights) {
                    differ += (h != next++) + (weights.array() != want.heads[h].weights.array()).count();
                });
                differ += (next != heads) + (out.array() != want.output.array()).count();
                compared += 2;
            }
        }
        std::printf("threads %-10s: %d products and attention calls on 2, 3 and 8 threads, %d numbers differ\n",
                    kernels::isa_name(one.isa), compared, differ);
        CHECK(differ == 0);
    });
}
