// Kernels against the naive oracle over many shapes and masks, and the softmax edge cases.
#include "oracle.hpp"
#include "test_util.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

using namespace attn;

namespace {

enum class MaskKind { None, Causal, Padding, Explicit, Combined, FullyMaskedRows };
constexpr MaskKind kMaskKinds[] = {MaskKind::None, MaskKind::Causal, MaskKind::Padding,
                                   MaskKind::Explicit, MaskKind::Combined, MaskKind::FullyMaskedRows};
const char* mask_name(MaskKind k) {
    constexpr const char* names[] = {"none", "causal", "padding", "explicit", "combined", "fully-masked rows"};
    return names[static_cast<int>(k)];
}

MaskSpec make_mask(MaskKind kind, int T_q, int T_k, oracle::Random& rng) {
    MaskSpec spec;
    auto padding = [&] {
        spec.key_padding.assign(T_k, 1);
        for (auto& p : spec.key_padding) p = rng.below(4) != 0;
    };
    auto explicit_bits = [&] {
        spec.allowed = MaskMatrix(T_q, T_k);
        for (Eigen::Index i = 0; i < spec.allowed.size(); ++i) spec.allowed.data()[i] = rng.below(3) != 0;
    };
    switch (kind) {
        case MaskKind::None: break;
        case MaskKind::Causal: spec.causal = true; break;
        case MaskKind::Padding: padding(); break;
        case MaskKind::Explicit: explicit_bits(); break;
        case MaskKind::Combined: spec.causal = true, padding(), explicit_bits(); break;
        case MaskKind::FullyMaskedRows:
            explicit_bits();
            for (int i = 0; i < T_q; i += 2) spec.allowed.row(i).setZero();
            break;
    }
    return spec;
}

// Largest |a − b| / (1 + |b|) seen, per quantity, over the whole sweep.
struct MaxDiff {
    double q = 0, k = 0, v = 0, scores = 0, weights = 0, head_output = 0, output = 0;
};

// Largest relative difference; a shape mismatch or a non-finite value counts as infinite.
double compare(const Matrix& got, const oracle::Grid& want) {
    if (got.rows() != static_cast<Eigen::Index>(want.size())) return INFINITY;
    double worst = 0;
    for (Eigen::Index i = 0; i < got.rows(); ++i) {
        if (got.cols() != static_cast<Eigen::Index>(want[i].size())) return INFINITY;
        for (Eigen::Index j = 0; j < got.cols(); ++j) {
            if (!std::isfinite(got(i, j))) return INFINITY;
            worst = std::max(worst, std::fabs(got(i, j) - want[i][j]) / (1.0 + std::fabs(want[i][j])));
        }
    }
    return worst;
}

struct Shape {
    int T_q, T_k, d_model, heads;
    bool cross;
};

std::vector<Shape> sweep_shapes() {
    std::vector<Shape> shapes = {{1, 1, 1, 1, false},     {1, 1, 1, 1, true},      {300, 300, 256, 8, false},
                                 {300, 7, 256, 8, true},  {1, 300, 64, 4, true},   {300, 1, 8, 8, true},
                                 {2, 2, 3, 3, false},     {64, 64, 96, 6, false},  {17, 33, 40, 5, true},
                                 {128, 128, 128, 1, false}, {5, 5, 4, 1, false},   {3, 3, 3, 1, false}};
    oracle::Random rng(2024);
    for (int n = 0; n < 36; ++n) {
        int heads = 1 + rng.below(8);
        int d_k = 1 + rng.below(std::max(1, 256 / heads));
        bool cross = rng.below(2) == 1;
        // Mostly small sequences (fast under sanitizers and wasm), some long ones.
        auto length = [&] { return rng.below(4) == 0 ? 1 + rng.below(300) : 1 + rng.below(40); };
        int T_q = length();
        shapes.push_back({T_q, cross ? length() : T_q, heads * d_k, heads, cross});
    }
    return shapes;
}

}  // namespace

TEST_CASE("multi-head attention matches the naive oracle over shapes, masks, self and cross") {
    MaxDiff worst;
    int cases = 0, fully_masked_rows_seen = 0, masked_entries_wrong = 0;
    oracle::Random rng(7);
    int shape_index = 0;
    for (const Shape& s : sweep_shapes()) {
        ++shape_index;
        // Under ASan a shape of a million multiply-adds and more takes one mask kind, in turn.
        const bool one_mask = ATTN_TEST_SANITIZED && static_cast<long>(s.T_q) * s.T_k * s.d_model >= (1 << 20);
        for (MaskKind mk : kMaskKinds) {
            if (mk == MaskKind::Combined && s.cross && rng.below(2)) continue;  // keep the sweep quick
            if (one_mask && mk != kMaskKinds[shape_index % std::size(kMaskKinds)]) continue;
            CAPTURE(s.T_q);
            CAPTURE(s.T_k);
            CAPTURE(s.d_model);
            CAPTURE(s.heads);
            CAPTURE(s.cross);
            CAPTURE(mask_name(mk));
            const Matrix x_q = rng.matrix(s.T_q, s.d_model);
            const Matrix x_kv = s.cross ? rng.matrix(s.T_k, s.d_model) : x_q;
            // Entries ±1/√d_model keep X·W the size of X: the sweep's numeric regime stays fixed
            // whatever scale the app's seeded weights use.
            const float w_scale = 1.0f / std::sqrt(static_cast<float>(s.d_model));
            Weights w;
            w.w_q = rng.matrix(s.d_model, s.d_model) * w_scale, w.w_k = rng.matrix(s.d_model, s.d_model) * w_scale;
            w.w_v = rng.matrix(s.d_model, s.d_model) * w_scale, w.w_o = rng.matrix(s.d_model, s.d_model) * w_scale;
            w.b_q = rng.matrix(1, s.d_model), w.b_k = rng.matrix(1, s.d_model);
            w.b_v = rng.matrix(1, s.d_model), w.b_o = rng.matrix(1, s.d_model);
            AttentionOptions options;
            options.n_heads = s.heads;
            options.scale = rng.below(3) == 0 ? Scale{ScaleKind::Divisor, 0.5f}
                                              : Scale{ScaleKind::InvSqrtDk, 1.0f};
            options.mask = make_mask(mk, s.T_q, s.T_k, rng);

            const MultiHeadTrace got = multi_head_attention(x_q, x_kv, w, options);
            const MaskMatrix allowed = combine_masks(options.mask, s.T_q, s.T_k);
            const oracle::Result want = oracle::attention(x_q, x_kv, w, s.heads,
                                                          options.scale.factor(s.d_model / s.heads), allowed);
            REQUIRE(got.heads.size() == want.heads.size());
            for (size_t h = 0; h < want.heads.size(); ++h) {
                const HeadTrace& g = got.heads[h];
                const oracle::Head& o = want.heads[h];
                worst.q = std::max(worst.q, compare(g.q, o.q));
                worst.k = std::max(worst.k, compare(g.k, o.k));
                worst.v = std::max(worst.v, compare(g.v, o.v));
                worst.scores = std::max(worst.scores, compare(g.scores, o.scores));
                worst.weights = std::max(worst.weights, compare(g.weights, o.weights));
                worst.head_output = std::max(worst.head_output, compare(g.output, o.output));
                std::vector<int> flagged;
                for (int i = 0; i < s.T_q; ++i)
                    if (o.fully_masked[i]) flagged.push_back(i);
                CHECK(g.fully_masked_rows == flagged);
                fully_masked_rows_seen += static_cast<int>(flagged.size());
                // Masked entries: -inf in scaled, exactly 0 in weights.
                for (Eigen::Index i = 0; i < allowed.size(); ++i)
                    if (!allowed.data()[i] && (g.scaled.data()[i] != -std::numeric_limits<float>::infinity() ||
                                               g.weights.data()[i] != 0.0f))
                        ++masked_entries_wrong;
            }
            worst.output = std::max(worst.output, compare(got.output, want.output));
            ++cases;
        }
    }
    std::printf("oracle sweep: %d cases (T 1..300, d_model 1..256, heads 1..8, 6 mask kinds, self and cross), "
                "%d fully masked rows; max rel. diff q %.2e k %.2e v %.2e scores %.2e weights %.2e "
                "head output %.2e output %.2e\n",
                cases, fully_masked_rows_seen, worst.q, worst.k, worst.v, worst.scores, worst.weights,
                worst.head_output, worst.output);
    CHECK(cases > (ATTN_TEST_SANITIZED ? 150 : 200));
    CHECK(fully_masked_rows_seen > 0);
    CHECK(masked_entries_wrong == 0);
    CHECK(worst.q < 1e-5);
    CHECK(worst.k < 1e-5);
    CHECK(worst.v < 1e-5);
    CHECK(worst.scores < 1e-5);
    CHECK(worst.weights < 1e-5);
    CHECK(worst.head_output < 1e-5);
    CHECK(worst.output < 1e-5);
}

TEST_CASE("softmax: every row sums to 1, masked entries are 0, extreme scores stay finite") {
    const float inf = std::numeric_limits<float>::infinity();
    Matrix scaled(6, 3);
    scaled << 1e30f, -1e30f, 0.0f,      // huge spread: one-hot, no overflow
        -1e30f, -1e30f, -1e30f,         // all hugely negative but allowed: uniform
        inf, 1.0f, inf,                 // +inf scores share the row
        -inf, -inf, -inf,               // only -inf: nothing to attend to
        1.0f, 2.0f, 3.0f,               // fully masked by the mask
        0.5f, 0.5f, 1e30f;              // the huge one is masked
    MaskMatrix allowed = MaskMatrix::Ones(6, 3);
    allowed.row(4).setZero();
    allowed(5, 2) = 0;
    Matrix w;
    const std::vector<int> flagged = masked_softmax(scaled, allowed, w);
    for (Eigen::Index i = 0; i < w.size(); ++i) REQUIRE(std::isfinite(w.data()[i]));
    CHECK(flagged == std::vector<int>{3, 4});
    CHECK(w(0, 0) == 1.0f);
    CHECK(w(0, 1) == 0.0f);
    CHECK(w(1, 0) == doctest::Approx(1.0 / 3));
    CHECK(w(2, 0) == 0.5f);
    CHECK(w(2, 1) == 0.0f);
    CHECK(w.row(3).isZero());
    CHECK(w.row(4).isZero());
    CHECK(w(5, 0) == 0.5f);
    CHECK(w(5, 2) == 0.0f);
    for (int i : {0, 1, 2, 5}) CHECK(w.row(i).sum() == doctest::Approx(1.0));
}

TEST_CASE("a fully masked row gives zero weights and zero output, flagged, never NaN") {
    Matrix q = Matrix::Constant(2, 2, 1.0f), k = q, v = q;
    MaskMatrix allowed(2, 2);
    allowed << 0, 0, 1, 0;
    const HeadTrace h = scaled_dot_product_attention(q, k, v, allowed, Scale{});
    CHECK(h.fully_masked_rows == std::vector<int>{0});
    CHECK(h.weights.row(0).isZero());
    CHECK(h.output.row(0).isZero());
    CHECK(h.weights(1, 0) == 1.0f);
    CHECK(h.output.allFinite());
}

TEST_CASE("masks combine: causal, per-key padding and an explicit matrix") {
    MaskSpec spec;
    spec.causal = true;
    MaskMatrix causal = combine_masks(spec, 3, 4);  // top-left aligned, as PyTorch's tril
    MaskMatrix want(3, 4);
    want << 1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0;
    CHECK(causal == want);
    spec.key_padding = {1, 0, 1, 1};
    spec.allowed = MaskMatrix::Ones(3, 4);
    spec.allowed(2, 0) = 0;
    want << 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0;
    CHECK(combine_masks(spec, 3, 4) == want);
    spec.key_padding = {1, 1};
    CHECK_THROWS_AS(combine_masks(spec, 3, 4), std::invalid_argument);
}

TEST_CASE("scale: 1/sqrt(d_k), none, or a divisor") {
    CHECK(Scale{}.factor(4) == 0.5f);
    CHECK(Scale{ScaleKind::None, 1}.factor(64) == 1.0f);
    CHECK(Scale{ScaleKind::Divisor, 4}.factor(64) == 0.25f);
}

TEST_CASE("seeded weights are deterministic and bit-identical across builds") {
    const Weights a = Weights::random(7, 4), b = Weights::random(7, 4), c = Weights::random(8, 4);
    CHECK(a.w_q == b.w_q);
    CHECK(a.w_o == b.w_o);
    CHECK(a.w_q != c.w_q);
    CHECK(a.w_q != a.w_k);
    CHECK(a.b_q.isZero());
    // Frozen bit patterns: the same test runs natively and in wasm.
    std::uint32_t bits[3];
    std::memcpy(&bits[0], &a.w_q(0, 0), 4);
    std::memcpy(&bits[1], &a.w_v(3, 2), 4);
    std::memcpy(&bits[2], &a.w_o(1, 3), 4);
    std::printf("seeded weights bits: %08x %08x %08x\n", bits[0], bits[1], bits[2]);
    CHECK(bits[0] == 0xbf7e5533u);
    CHECK(bits[1] == 0x3f3bf68cu);
    CHECK(bits[2] == 0x3e06a324u);
    CHECK((a.w_q.array().abs() <= 1.5f).all());  // d_model 4: entries in [-3/2, 3/2)
}
