// Maps on demand (attention_maps.hpp, issue 47): a head's map recomputed from the Q, K and row
// statistics a forward kept is the map the forward computed, bit for bit, in every region, every
// instruction set and every reference model; pooled maps are the blocks' max or mean of it; the
// heads and products split into enough balanced parts for 16 threads.
#include "attention_maps.hpp"
#include "figure.hpp"
#include "builtin.hpp"
#include "config.hpp"
#include "files.hpp"
#include "kernels.hpp"
#include "model.hpp"
#include "oracle.hpp"
#include "reference_cases.hpp"
#include "test_util.hpp"
#include "transformer.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

using namespace attn;
using attn::test::same_bits;

namespace {

// The naive pooling of a dense map: each block's max or mean over the entries it covers.
Matrix pooled_naively(const Matrix& map, const PooledMap& p) {
    const int R = static_cast<int>(p.row_edges.size()) - 1, C = static_cast<int>(p.col_edges.size()) - 1;
    Matrix out(R, C);
    for (int a = 0; a < R; ++a)
        for (int b = 0; b < C; ++b) {
            const auto block = map.block(p.row_edges[a], p.col_edges[b], p.row_edges[a + 1] - p.row_edges[a],
                                         p.col_edges[b + 1] - p.col_edges[b]);
            out(a, b) = p.reduce == PoolReduce::Max ? block.maxCoeff() : static_cast<float>(block.cast<double>().mean());
        }
    return out;
}

}  // namespace

TEST_CASE("kernels: a region recomputed from the rows' statistics is attention_head's weights, bit for bit, every set") {
    oracle::Random rng(47);
    constexpr float kNone = -INFINITY;
    struct Case {
        int T_q, T_k, d_k;
        int mask;  // 0 none, 1 causal, 2 random holes with fully masked rows, 3 a sliding window of 5
        float softcap, sink;
        bool huge;  // a row of +inf scores (the general path) among the others
    };
    const Case cases[] = {{1, 1, 1, 0, 0, kNone, false},     {7, 7, 3, 1, 0, kNone, false},    {13, 29, 5, 2, 0, kNone, false},
                          {64, 64, 64, 1, 0, kNone, false},  {33, 70, 17, 0, 0, kNone, false}, {100, 100, 64, 3, 0, kNone, false},
                          {45, 19, 8, 2, 30.0f, kNone, false}, {70, 70, 32, 1, 0, 2.0f, false}, {20, 37, 16, 0, 0, kNone, true},
                          {130, 130, 64, 3, 50.0f, 0.5f, false}};
    for (kernels::Isa isa : kernels::available_isas()) {
        const std::string isa_name = kernels::isa_name(isa);
        CAPTURE(isa_name);
        kernels::Context ctx(isa);
        int differ = 0, regions = 0;
        for (const Case& c : cases) {
            CAPTURE(c.T_q);
            CAPTURE(c.T_k);
            CAPTURE(c.mask);
            Matrix q = rng.matrix(c.T_q, c.d_k) * 3.0f, k = rng.matrix(c.T_k, c.d_k) * 3.0f, v = rng.matrix(c.T_k, c.d_k);
            if (c.huge) q.row(c.T_q / 2).setConstant(std::numeric_limits<float>::max()), k.row(0).setConstant(1.0f);
            MaskMatrix allowed;
            if (c.mask > 0) {
                allowed = MaskMatrix::Ones(c.T_q, c.T_k);
                for (int i = 0; i < c.T_q; ++i)
                    for (int j = 0; j < c.T_k; ++j) {
                        if (c.mask == 1) allowed(i, j) = j <= i;
                        if (c.mask == 2) allowed(i, j) = i % 3 != 0 && rng.below(3) != 0;
                        if (c.mask == 3) allowed(i, j) = j <= i && j > i - 5;
                    }
            }
            Matrix w(c.T_q, c.T_k), out(c.T_q, c.d_k);
            std::vector<kernels::RowStat> stats(static_cast<std::size_t>(c.T_q));
            kernels::HeadArgs a;
            a.T_q = c.T_q, a.T_k = c.T_k, a.d_k = c.d_k, a.q = q.data(), a.k = k.data(), a.v = v.data();
            a.allowed = c.mask > 0 ? allowed.data() : nullptr;
            a.factor = 1.0f / std::sqrt(static_cast<float>(c.d_k)), a.softcap = c.softcap, a.sink = c.sink;
            a.weights = w.data(), a.output = out.data(), a.stats = stats.data();
            kernels::attention_head(ctx, a);
            // every region of a 4 × 4 grid of cuts, and the whole map
            const int rs[] = {0, c.T_q / 3, c.T_q / 2 + 1, c.T_q}, cs[] = {0, c.T_k / 4, c.T_k / 2 + 1, c.T_k};
            for (int r0 : rs)
                for (int r1 : rs)
                    for (int c0 : cs)
                        for (int c1 : cs) {
                            if (r1 <= r0 || c1 <= c0) continue;
                            Matrix got(r1 - r0, c1 - c0);
                            kernels::RegionArgs g;
                            g.rows = r1 - r0, g.cols = c1 - c0, g.d_k = c.d_k;
                            g.q = q.data() + r0 * c.d_k, g.k = k.data() + c0 * c.d_k, g.stats = stats.data() + r0;
                            if (c.mask > 0) g.allowed = allowed.data() + r0 * c.T_k + c0, g.ld_allowed = c.T_k;
                            g.factor = a.factor, g.softcap = c.softcap, g.out = got.data();
                            kernels::head_region(ctx, g);
                            differ += !same_bits(got, Matrix(w.block(r0, c0, r1 - r0, c1 - c0)));
                            ++regions;
                        }
            // the rows in parts of any size give the same weights, outputs and statistics
            for (int part : {1, 5, 16}) {
                Matrix w2(c.T_q, c.T_k), out2(c.T_q, c.d_k);
                std::vector<kernels::RowStat> stats2(static_cast<std::size_t>(c.T_q));
                for (int r0 = 0; r0 < c.T_q; r0 += part) {
                    kernels::HeadArgs b = a;
                    const auto spans = kernels::row_spans(a.allowed, c.T_q, c.T_k);
                    b.T_q = std::min(part, c.T_q - r0), b.q += r0 * c.d_k, b.spans = spans.data() + r0;
                    if (b.allowed) b.allowed += r0 * c.T_k;
                    b.weights = w2.data() + r0 * c.T_k, b.output = out2.data() + r0 * c.d_k, b.stats = stats2.data() + r0;
                    kernels::attention_head(ctx, b);
                }
                differ += !same_bits(w2, w) + !same_bits(out2, out);
                for (int i = 0; i < c.T_q; ++i) differ += stats2[i].max != stats[i].max && !(std::isnan(stats2[i].max) && std::isnan(stats[i].max));
            }
            for (Eigen::Index i = 0; i < w.size(); ++i) CHECK(!std::isnan(w.data()[i]));
        }
        MESSAGE(std::string(kernels::isa_name(isa)), ": ", regions, " regions, ", differ, " differ from the head's weights");
        CHECK(regions > 200);
        CHECK(differ == 0);
    }
}

// The heads: 4 parts per thread (a part costs its keys: no overhead measured); the products a
// part per thread (kernels.hpp product_split: more cost their packing). Either way no part above
// 1.25 × the mean, so no thread waits long for another.
TEST_CASE("threads: the plan splits every job of SmolLM2-135M's shape among 16 threads, no part above 1.25 x the mean") {
    // SmolLM2-135M: d = 576, 9 heads of 64 (3 K/V heads), d_ff = 1536, vocab 49152; causal
    const int threads = 16;
    for (kernels::Isa isa : kernels::available_isas()) {
        CAPTURE(kernels::isa_name(isa));
        for (int T : {128, 512}) {
            CAPTURE(T);
            // the heads: cost of a part = the keys of its rows
            std::vector<kernels::RowSpan> spans;
            for (int i = 0; i < T; ++i) spans.push_back({0, i + 1, true});
            const auto parts = kernels::head_parts(isa, threads, 9, spans, 2.0 * 9 * T * T * 64);
            double total = 0, most = 0;
            for (const auto& p : parts) {
                double cost = 0;
                for (int i = p.r0; i < p.r1; ++i) cost += spans[i].hi - spans[i].lo;
                total += cost, most = std::max(most, cost);
            }
            CHECK(static_cast<int>(parts.size()) >= 4 * threads);
            CHECK(most <= 1.25 * total / static_cast<double>(parts.size()));
            // every row of every head once
            std::vector<int> seen(static_cast<std::size_t>(9 * T), 0);
            for (const auto& p : parts)
                for (int i = p.r0; i < p.r1; ++i) ++seen[static_cast<std::size_t>(p.head * T + i)];
            CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
            // the products: Q and O, K and V, gate and up, down, the LM head at the last position
            struct Job {
                const char* name;
                int M, N, K;
            };
            const Job jobs[] = {{"q, o", T, 576, 576}, {"k, v", T, 192, 576}, {"gate, up", T, 1536, 576},
                                {"down", T, 576, 1536}, {"lm head", 1, 49152, 576}};
            for (const Job& j : jobs) {
                CAPTURE(j.name);
                const kernels::ProductSplit split = kernels::product_split(isa, threads, j.M, j.N, j.K);
                double biggest = 0;
                long long covered = 0;
                for (int part = 0; part < split.parts(); ++part) {
                    const auto b = split.part(part, j.M, j.N);
                    const double work = static_cast<double>(b.i1 - b.i0) * (b.j1 - b.j0);
                    biggest = std::max(biggest, work), covered += static_cast<long long>(work);
                }
                CHECK(covered == static_cast<long long>(j.M) * j.N);
                CHECK(split.parts() >= threads);
                CHECK(biggest <= 1.25 * static_cast<double>(j.M) * j.N / split.parts());
            }
        }
    }
}

// Every reference case (every family, GQA, sliding windows, soft caps, sinks, marian's three
// stacks), with and without hidden tokens: a run that keeps no map gives the run's hidden states
// and logits bit for bit, and every head's map recomputed from what it kept (whole, in regions,
// pooled) is the kept map's, bit for bit; on 3 threads too.
TEST_CASE("maps on demand: every reference case's maps, regions and pooled blocks are the forward's, bit for bit") {
#ifdef ATTN_MODEL_REFS
    const std::filesystem::path root = ATTN_MODEL_REFS;
    kernels::Pool pool(3);
    int cases = 0, maps = 0, differ = 0;
    for (const std::string& name : test::reference_case_names(root)) {
        CAPTURE(name);
        const test::ReferenceCase rc = test::load_reference_case(root, name);
        const Model& model = rc.model;
        for (bool hide : {false, true}) {
            RunInput in = rc.input;
            if (hide) in.edits.hidden = {1};
            kernels::Context one;
            const RunResult kept = forward(one, model, in);
            in.keep_maps = false;
            const RunResult lean = forward(one, model, in);
            kernels::Context three(kernels::best_isa(), &pool);
            three.split_work = 0;
            const RunResult lean3 = forward(three, model, in);
            differ += !same_bits(lean.hidden, kept.hidden) + (lean.logits != kept.logits) + !same_bits(lean3.hidden, kept.hidden);
            CHECK_THROWS_AS(block_trace(one, model, lean, 0, 0), ModelError);
            for (std::size_t s = 0; s < kept.stacks.size(); ++s)
                for (std::size_t l = 0; l < kept.stacks[s].layers.size(); ++l) {
                    const BlockRun& want = kept.stacks[s].layers[l];
                    CHECK(want.kept.empty());  // maps or what they are recomputed from, never both
                    const KeptHeads& k = lean.stacks[s].layers[l].kept;
                    CHECK(lean.stacks[s].layers[l].weights.empty());
                    CHECK(lean.stacks[s].layers[l].x.size() == 0);
                    for (int h = 0; h < k.heads; ++h) {
                        const Matrix& map = want.weights[static_cast<std::size_t>(h)];
                        differ += !same_bits(map_region(one, k, h, whole_map(k)), map);
                        differ += !same_bits(map_region(three, lean3.stacks[s].layers[l].kept, h, whole_map(k)), map);
                        const MapRegion part{k.T_q / 3, k.T_q, k.T_k / 4, std::max(k.T_k / 4 + 1, k.T_k - 1)};
                        differ += !same_bits(map_region(one, k, h, part), Matrix(map.block(part.r0, part.c0, part.rows(), part.cols())));
                        for (PoolReduce reduce : {PoolReduce::Max, PoolReduce::Mean}) {
                            const PooledMap p = map_pooled(three, k, h, whole_map(k), 3, 5, reduce);
                            CHECK(p.values.rows() == std::min(3, k.T_q));
                            const Matrix naive = pooled_naively(map, p);
                            differ += reduce == PoolReduce::Max ? !same_bits(p.values, naive)
                                                                : (p.values - naive).cwiseAbs().maxCoeff() > 1e-6f;
                            differ += !same_bits(pooled(map, whole_map(k), 3, 5, reduce).values, p.values);  // from the kept map
                        }
                        ++maps;
                    }
                    CHECK_THROWS_AS(map_region(one, k, k.heads, whole_map(k)), std::out_of_range);
                    CHECK_THROWS_AS(map_region(one, k, 0, MapRegion{0, k.T_q + 1, 0, k.T_k}), std::out_of_range);
                    CHECK_THROWS_AS(map_region(one, k, 0, MapRegion{2, 2, 0, k.T_k}), std::out_of_range);
                }
        }
        ++cases;
    }
    MESSAGE(cases, " cases, ", maps, " maps: ", differ, " differ from the forward's");
    CHECK(cases > 10);
    CHECK(differ == 0);
#else
    FAIL("built without ATTN_MODEL_REFS: the PyTorch references (tests/model/make_models.py) were not made");
#endif
}

TEST_CASE("maps on demand: a long text keeps memory linear in T, as activation_bytes says") {
    // SmolLM2-135M's shape: what a run keeps per token, maps or not
    ModelConfig c;
    c.family = Family::Llama, c.model_type = "llama";
    c.vocab_size = 49152, c.d_model = 576, c.n_layers = 30, c.n_heads = 9, c.n_kv_heads = 3, c.d_ff = 1536;
    c.gated_mlp = true, c.norm = NormKind::RmsNorm, c.positions = Positions::Rotary;
    const Model m{c, nullptr};
    const double gb = 1e9;
    MESSAGE("SmolLM2-135M's shape at T = 8192: ", m.activation_bytes(8192, false) / gb, " GB on demand, ",
            m.activation_bytes(8192, true) / gb, " GB with every map");
    CHECK(m.activation_bytes(8192, false) < static_cast<std::uint64_t>(1.2 * gb));
    CHECK(m.activation_bytes(8192, true) > static_cast<std::uint64_t>(70 * gb));
    // twice the tokens: about twice the memory on demand, four times with the maps
    const double lean = static_cast<double>(m.activation_bytes(8192, false)) / static_cast<double>(m.activation_bytes(4096, false));
    CHECK(lean > 1.8);
    CHECK(lean < 2.1);
}

#ifndef __EMSCRIPTEN__  // (tiny-circuits is compiled in natively; the page fetches it)
TEST_CASE("maps on demand: a run that needs more memory than there is is refused before it starts, with its tokens") {
    const LoadedModel m = load_model(folder_or_builtin("tiny-circuits"));
    RunInput in;
    in.ids.assign(3000, 5);
    const std::uint64_t weights = m.model.weight_bytes(), kept = m.model.activation_bytes(3000, true),
                        lean = m.model.activation_bytes(3000, false);
    CHECK(lean * 20 < kept);
    CHECK_NOTHROW(check_run_memory(m, in, weights + kept, "text"));
    try {
        check_run_memory(m, in, weights + kept - 1, "text");
        FAIL("a run past the memory there is was not refused");
    } catch (const ModelError& e) {
        const std::string what = e.what();
        CHECK(attn::test::contains(what, "text: 3000 tokens need "));
        CHECK(attn::test::contains(what, "with every map kept"));
    }
    in.keep_maps = false;  // on demand: the same text fits in its 1/20
    CHECK_NOTHROW(check_run_memory(m, in, weights + lean, "text"));
    CHECK_THROWS_AS(check_run_memory(m, in, weights + lean - 1, "text"), ModelError);
    CHECK_THROWS_AS(check_run_memory(m, in, weights / 2, "text"), ModelError);  // less than the weights themselves
}
#endif

TEST_CASE("key_span: causal or sliding, OR'ed with a picture's runs both ways, as transformers' token-type mask") {
    // The naive rule (gemma3's create_causal_mask_mapping): key j for query i if the causal (and
    // sliding) mask allows it, or both sit in the same run of image tokens.
    const BothWays runs = {{2, 6}, {9, 10}, {12, 17}};
    const auto same_run = [&](int i, int j) {
        for (const auto& [a, b] : runs)
            if (i >= a && i < b && j >= a && j < b) return true;
        return false;
    };
    for (int T_k : {1, 5, 12, 20})
        for (bool causal : {false, true})
            for (int window : {0, 1, 3, 8})
                for (const BothWays& both : {BothWays{}, runs})
                    for (int i = 0; i < T_k; ++i) {
                        const auto [lo, hi] = key_span(i, T_k, causal, window, both);
                        for (int j = 0; j < T_k; ++j) {
                            const bool base = (!causal || j <= i) && (window <= 0 || j > i - window);
                            const bool expected = base || (!both.empty() && same_run(i, j) && j < T_k);
                            CHECK_MESSAGE((j >= lo && j < hi) == expected, "T_k " << T_k << " causal " << causal << " window " << window
                                                                                   << " runs " << both.size() << " i " << i << " j " << j);
                        }
                    }
}

// A long trace's mask is its block's rule (KeyMask): no T×T cells, the same answers as the cells.
TEST_CASE("KeyMask: a rule answers as its cells do, cell by cell, row by row, and whether a key is masked") {
    SplitMix64 rng{47};
    for (int T : {1, 2, 7, 33})
        for (bool causal : {false, true})
            for (int window : {0, 1, 4})
                for (int extra = 0; extra < 4; ++extra) {  // 1: hidden keys, 2: a picture both ways, 3: window groups
                    KeyRule rule{causal, window, {}, {}, {}};
                    if (extra == 1)
                        for (int j = 0; j < T; ++j) rule.keys.push_back(rng.next() % 4 != 0);
                    if (extra == 2 && T > 3) rule.both_ways = {{1, T - 1}};
                    if (extra == 3)
                        for (int j = 0; j < T; ++j) rule.groups.push_back(j / 3);
                    const int T_q = causal || extra == 3 ? T : T + 1;  // cross-shaped too where no causal limit or groups
                    const KeyMask mask(T_q, T, rule);
                    MaskMatrix naive(T_q, T);
                    for (int i = 0; i < T_q; ++i)
                        for (int j = 0; j < T; ++j) naive(i, j) = rule.allows(i, j, T);
                    CAPTURE(T);
                    CAPTURE(causal);
                    CAPTURE(window);
                    CAPTURE(extra);
                    CHECK(mask.rows() == T_q);
                    CHECK(mask.cols() == T);
                    CHECK(mask.cells() == naive);
                    CHECK(mask == KeyMask(naive));
                    std::vector<std::uint8_t> scratch;
                    bool same = true;
                    for (int i = 0; i < T_q; ++i) {
                        const std::uint8_t* row = mask.row(i, scratch);
                        for (int j = 0; j < T; ++j) same = same && row[j] == naive(i, j) && mask(i, j) == naive(i, j);
                    }
                    CHECK(same);
                    for (int r0 = 0; r0 < T_q; r0 += 3) CHECK(mask.rows_between(r0, T_q) == naive.bottomRows(T_q - r0));
                    for (int first = 0; first <= T; ++first) {
                        const bool want = first < T && naive.rightCols(T - first).minCoeff() == 0;
                        CHECK_MESSAGE(mask.any_masked(first) == want, "first " << first);
                        CHECK(KeyMask(naive).any_masked(first) == want);
                    }
                }
    CHECK(KeyMask(8192, 8192, KeyRule{true, 1024, {}, {}, {}}).bytes() == 0);  // no cells held
    CHECK(KeyMask(MaskMatrix::Ones(64, 64)).bytes() == 64 * 64);
}

TEST_CASE("maps on demand: a query's row for the Picture view (figure_row), one head's and the heads' mean, is the forward's") {
#ifdef ATTN_MODEL_REFS
    const std::filesystem::path root = ATTN_MODEL_REFS;
    int rows = 0;
    float worst = 0;
    for (const std::string& name : test::reference_case_names(root)) {
        CAPTURE(name);
        const test::ReferenceCase rc = test::load_reference_case(root, name);
        kernels::Context ctx;
        const RunResult kept = forward(ctx, rc.model, rc.input);
        auto live = std::make_shared<LiveRun>();
        live->input = rc.input;
        live->input.keep_maps = false;
        live->result = forward(ctx, rc.model, live->input);
        Figure figure;
        figure.live = live;
        for (std::size_t l = 0; l < kept.stacks[0].layers.size(); ++l) {
            const std::vector<Matrix>& maps = kept.stacks[0].layers[l].weights;
            const int heads = static_cast<int>(maps.size()), q = static_cast<int>(maps[0].rows()) - 1;
            for (int head = -1; head < heads; ++head) {
                const std::vector<float> row = figure_row(figure, Trace{}, 0, static_cast<int>(l), head, q);
                REQUIRE(row.size() == static_cast<std::size_t>(maps[0].cols()));
                for (std::size_t j = 0; j < row.size(); ++j) {
                    double want = 0;
                    for (int h = head < 0 ? 0 : head; h < (head < 0 ? heads : head + 1); ++h) want += maps[static_cast<std::size_t>(h)](q, static_cast<Eigen::Index>(j));
                    if (head < 0) want /= heads;
                    worst = std::max(worst, static_cast<float>(std::abs(row[j] - want)));
                }
                ++rows;
            }
        }
    }
    MESSAGE(rows, " rows: largest difference ", worst);
    CHECK(rows > 20);
    CHECK(worst < 1e-6f);
#else
    FAIL("built without ATTN_MODEL_REFS: the PyTorch references (tests/model/make_models.py) were not made");
#endif
}
