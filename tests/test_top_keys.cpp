// test_top_keys.cpp: TopKeys against a plain sort of every row and column (the oracle), over
// shapes, masks, ties, fully masked rows, long traces and incremental building.
#include "scene.hpp"
#include "top_keys.hpp"

#include "scene_cases.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace attn;
using cases::tokens_json;

namespace {

// Every weight of one head, T_q×T_k, from the rows on demand.
std::vector<float> all_weights(const Trace& t, int head) {
    std::vector<float> w(static_cast<size_t>(t.T_q()) * static_cast<size_t>(t.T_k()));
    attention_rows(t, head, 0, t.T_q(), w.data());
    return w;
}

// The oracle: allowed cells of the row (or column) of token `self`, in increasing index order,
// sorted by weight descending then distance to `self`, first K.
std::vector<TopEntry> oracle(const std::vector<TopEntry>& cells, int self, int K) {
    std::vector<TopEntry> sorted = cells;
    std::stable_sort(sorted.begin(), sorted.end(), [self](const TopEntry& a, const TopEntry& b) {
        return a.weight > b.weight || (a.weight == b.weight && std::abs(a.index - self) < std::abs(b.index - self));
    });
    if (static_cast<int>(sorted.size()) > K) sorted.resize(static_cast<size_t>(K));
    return sorted;
}

void check_against_oracle(const Trace& t, const TopKeys& top, int head) {
    const std::vector<float> w = all_weights(t, head);
    const int T_q = t.T_q(), T_k = t.T_k();
    for (int q = 0; q < T_q; ++q) {
        std::vector<TopEntry> cells;
        for (int k = 0; k < T_k; ++k)
            if (t.allowed(q, k)) cells.push_back({k, w[static_cast<size_t>(q) * T_k + k]});
        int n = 0;
        const TopEntry* got = top.query_top(q, &n);
        const std::vector<TopEntry> want = oracle(cells, q, top.keys_per_query());
        CAPTURE(q);
        REQUIRE(n == static_cast<int>(want.size()));
        CHECK(std::equal(want.begin(), want.end(), got));
    }
    for (int k = 0; k < T_k; ++k) {
        std::vector<TopEntry> cells;
        for (int q = 0; q < T_q; ++q)
            if (t.allowed(q, k)) cells.push_back({q, w[static_cast<size_t>(q) * T_k + k]});
        int n = 0;
        const TopEntry* got = top.key_top(k, &n);
        const std::vector<TopEntry> want = oracle(cells, k, top.queries_per_key());
        CAPTURE(k);
        REQUIRE(n == static_cast<int>(want.size()));
        CHECK(std::equal(want.begin(), want.end(), got));
    }
}

std::vector<std::string> scenes() {
    std::vector<std::string> all = cases::mask_scenes();
    all.insert(all.end(), {
        // Repeated tokens with identity weights: equal embeddings, so exactly equal weights (ties).
        R"({"tokens": )" + tokens_json(40, 3) + R"(, "d_model": 6, "heads": 2})",
        R"({"kind": "masked", "tokens": )" + tokens_json(90, 2) + R"(, "d_model": 8})",
        R"({"tokens": )" + tokens_json(130) + R"(, "d_model": 16, "heads": 2, "weights": {"seed": 11}})",
    });
    return all;
}

}  // namespace

TEST_CASE("top keys: equal a plain sort of every row and column, full and long traces, several K") {
    for (const std::string& text : scenes()) {
        CAPTURE(text.substr(0, 70));
        const Scene s = read_scene(text);
        for (const bool long_trace : {false, true}) {
            const Trace t = long_trace ? compute(s, 0) : compute(s);
            REQUIRE(t.is_long() == long_trace);
            for (int h = 0; h < t.heads; ++h) {
                for (const int K : {1, 3, top_keys_capacity(t.T_k())}) {
                    CAPTURE(h);
                    CAPTURE(K);
                    TopKeys top(t, h, K, std::min(K + 1, t.T_q()));
                    top.build(t);
                    REQUIRE(top.done());
                    check_against_oracle(t, top, h);
                }
            }
        }
    }
}

TEST_CASE("top keys: ties go to the nearest token, a fully masked row and a padded key have no entries") {
    const Scene s = read_scene(scenes()[4]);  // w0 w1 w2 w0 w1 w2 …: every weight appears ≥ 13 times
    const Trace t = compute(s);
    TopKeys top(t, 0, 4, 4);
    top.build(t);
    int n = 0;
    const TopEntry* row = top.query_top(20, &n);  // w2: its copies are keys 2, 5, …, 17, 20, 23, …
    REQUIRE(n == 4);
    CHECK(row[0].weight == row[3].weight);
    CHECK(row[0].index == 20);  // itself, then the copies either side, the earlier first
    CHECK(row[1].index == 17);
    CHECK(row[2].index == 23);
    CHECK(row[3].index == 14);
    check_against_oracle(t, top, 0);

    const Trace masked = compute(read_scene(scenes()[3]));
    TopKeys m(masked, 0, 5, 5);
    m.build(masked);
    m.query_top(17, &n);
    CHECK(n == 0);
    m.query_top(16, &n);
    CHECK(n == 5);
    const Trace padded = compute(read_scene(scenes()[2]));
    TopKeys p(padded, 1, 3, 3);
    p.build(padded);
    p.key_top(6, &n);  // padding 0 at key 6
    CHECK(n == 0);
    p.key_top(5, &n);
    CHECK(n == 3);
}

TEST_CASE("top keys: built in small steps equals built at once; progress grows; bounded work per call") {
    const Scene s = read_scene(scenes()[1]);
    const Trace t = compute(s, 0);
    TopKeys whole(t, 2, 3, 3), steps(t, 2, 3, 3);
    whole.build(t);
    int calls = 0;
    float last = 0.0f;
    while (!steps.advance(t, 1)) {  // one row per call at T_k = 70 (blocks are ≥ 1 row)
        ++calls;
        CHECK(steps.progress() > last);
        last = steps.progress();
        CHECK(steps.rows_done() <= t.T_q());
    }
    CHECK(calls >= 1);
    CHECK(steps.done());
    for (int q = 0; q < t.T_q(); ++q) {
        int a = 0, b = 0;
        const TopEntry* x = whole.query_top(q, &a);
        const TopEntry* y = steps.query_top(q, &b);
        REQUIRE(a == b);
        CHECK(std::equal(x, x + a, y));
    }
    for (int k = 0; k < t.T_k(); ++k) {
        int a = 0, b = 0;
        const TopEntry* x = whole.key_top(k, &a);
        const TopEntry* y = steps.key_top(k, &b);
        REQUIRE(a == b);
        CHECK(std::equal(x, x + a, y));
    }
    // Before it is done, a key's list is not shown (it still misses rows).
    TopKeys partial(t, 0, 3, 3);
    partial.advance(t, 1);
    int n = -1;
    partial.key_top(0, &n);
    CHECK(n == 0);
    CHECK_FALSE(partial.done());
}

TEST_CASE("top keys: a long trace at T = 1500 gives the same lists as its full trace") {
    const Scene s = read_scene(R"({"kind": "masked", "tokens": )" + tokens_json(1500) + R"(, "d_model": 32, "heads": 4, "weights": {"seed": 4}})");
    const Trace full = compute(s, std::int64_t{1} << 40), lng = compute(s);
    REQUIRE(lng.is_long());
    REQUIRE_FALSE(full.is_long());
    const int K = top_keys_capacity(1500);
    CHECK(K == kTopKeysMax);
    TopKeys a(full, 1, K, K), b(lng, 1, K, K);
    a.build(full);
    b.build(lng);
    check_against_oracle(lng, b, 1);
    for (int q : {0, 15, 16, 17, 700, 1499}) {
        int na = 0, nb = 0;
        const TopEntry* x = a.query_top(q, &na);
        const TopEntry* y = b.query_top(q, &nb);
        REQUIRE(na == nb);
        CHECK(na == std::min(q + 1, K));
        for (int i = 0; i < na; ++i) CHECK(x[i].weight == doctest::Approx(y[i].weight).epsilon(1e-5));
    }
    CHECK(b.bytes() < 2u * 1500u * static_cast<unsigned>(K) * sizeof(TopEntry) + 64u * 1024u * 1024u / 8u);
}

TEST_CASE("summed rows: Σ of the chosen rows, full and long traces; a bad row throws") {
    const Scene s = read_scene(scenes()[2]);
    const Trace full = compute(s), lng = compute(s, 0);
    const std::vector<int> set = {0, 3, 20};
    for (int h = 0; h < s.heads; ++h) {
        RowVector want = RowVector::Zero(full.T_k());
        for (int q : set) want += full.attention.heads[static_cast<size_t>(h)].weights.row(q);
        CHECK(summed_rows(full, h, set).isApprox(want, 1e-6f));
        CHECK(summed_rows(lng, h, set).isApprox(want, 1e-5f));
    }
    CHECK_THROWS_AS(summed_rows(lng, 0, {21}), std::out_of_range);
}
