// test_model_views.cpp: what the views show of today's models (issue 29 §3): a sliding window's
// mask told apart from the causal one (the figure carries each layer's window from the live
// model's config; the heatmap's cells, legend and SVG), the attention-sink option (rows
// renormalized without the first key), the model grid's frames around the query heads that share
// K and V, a live model's link opening the view it names (issue 29), and why an induction head's
// query looks where it does (K-composition, issue 30).
//
// [SECTION] Helpers
// [SECTION] Sliding windows
// [SECTION] Attention sinks
// [SECTION] Shared K/V heads
// [SECTION] A live model's link
// [SECTION] K-composition
#include "test_util.hpp"
#include "app_state.hpp"
#include "explain_layout.hpp"
#include "explain_rows.hpp"
#include "family.hpp"
#include "heatmap_layout.hpp"
#include "induction.hpp"
#include "link_state.hpp"
#include "live_scenes.hpp"
#include "model_layout.hpp"
#include "sink.hpp"
#include "steps.hpp"
#include "svg.hpp"
#include "why.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace attn;

namespace {

// [SECTION] Helpers ------------------------------------------------------------------------------

// Widths from the byte count: enough for layouts whose text need not match any font.
struct PlainMeasure final : TextMeasure {
    float size(FontRole role) const override { return role == FontRole::Title ? 19.0f : role == FontRole::Small ? 12.0f : 15.0f; }
    float width(std::string_view text, FontRole role) const override { return 0.55f * size(role) * static_cast<float>(text.size()); }
};

#ifdef ATTN_MODEL_REFS
// A random-weight reference model (tests/model/make_models.py) run on ids 1 … T, as the app's
// live figure.
Figure live_reference(const std::string& name, int T) {
    const std::filesystem::path root = ATTN_MODEL_REFS;
    auto model = std::make_shared<const LoadedModel>(load_model(ModelFiles::from_folder((root / name).string())));
    auto run = std::make_shared<LiveRun>();
    run->model = model;
    for (int i = 1; i <= T; ++i) run->input.ids.push_back(i);
    kernels::Context ctx;
    run->result = forward(ctx, model->model, run->input);
    return live_figure(run);
}

// The app showing a live figure's first map.
AppState app_showing(Figure figure) {
    AppState st;
    st.load_preset("i-am-good");
    show_layered_figure(st, std::move(figure), false);
    REQUIRE(st.figure.has(Detail::Layers));
    return st;
}
#endif

std::vector<const Item*> with_role(const std::vector<Item>& items, ItemRole role) {
    std::vector<const Item*> out;
    for (const Item& it : items)
        if (it.role == role) out.push_back(&it);
    return out;
}

HeatmapItems heatmap_of(const Trace& tr, bool sink_hidden, const TextMeasure& m, HeatmapLayout* layout = nullptr) {
    HeatmapInput in;
    in.trace = &tr;
    in.box = {0.0f, 0.0f, 1100.0f, 700.0f};
    in.any_masked = any_masked(tr, sink_hidden);
    in.sink_hidden = sink_hidden;
    const HeatmapLayout L = lay_out_heatmap(in, m, label_widths(tr, FontRole::Body, m));
    if (layout) *layout = L;
    return heatmap_items(L, {}, {}, m);
}


}  // namespace

// [SECTION] Sliding windows --------------------------------------------------------------------

TEST_CASE("a live model's figure carries each layer's window and K/V heads from its config") {
#ifdef ATTN_MODEL_REFS
    const Figure mistral = live_reference("mistral_l2_h4kv2_d32_f32_window", 14);
    CHECK(mistral.window_of(0, 0) == 4);
    CHECK(mistral.window_of(0, 1) == 4);
    CHECK(mistral.kv_heads_of(0) == 2);
    const Figure qwen2 = live_reference("qwen2_l2_h4kv2_d32_bf16_window", 12);  // layer 2 slides, window 3
    CHECK(qwen2.window_of(0, 0) == 0);
    CHECK(qwen2.window_of(0, 1) == 3);
    const Figure gemma2 = live_reference("gemma2_l3_h4kv2_d32_f32_softcap", 10);  // layers 1 and 3 slide
    CHECK(gemma2.window_of(0, 0) == 4);
    CHECK(gemma2.window_of(0, 1) == 0);
    CHECK(gemma2.window_of(0, 2) == 4);
    const Figure gpt2 = live_reference("gpt2_l2_h2_d16_f32", 6);
    CHECK(gpt2.window_of(0, 1) == 0);
    CHECK(gpt2.kv_heads_of(0) == 2);  // no sharing: as many as its heads
    // An import file's maps say nothing of windows: none, whatever its zeros.
    CHECK(layered_figure(std::make_shared<const ImportedAttention>(run_attention(*mistral.live->model, mistral.live->input,
                                                                                 mistral.live->result)),
                         "m.json")
              .window_of(0, 0) == 0);
#else
    FAIL("built without ATTN_MODEL_REFS");
#endif
}

TEST_CASE("heatmap: cells outside the window are told from the causal mask, in every way the map is shown") {
#ifdef ATTN_MODEL_REFS
    AppState st = app_showing(live_reference("mistral_l2_h4kv2_d32_f32_window", 14));
    auto check_cells = [](const Trace& tr, int window) {
        CAPTURE(window);
        REQUIRE(tr.window == window);
        int outside = 0, causal = 0;
        for (int q = 0; q < tr.T_q(); ++q)
            for (int k = 0; k < tr.T_k(); ++k) {
                const bool out = window > 0 && k <= q - window;
                CHECK(outside_window(tr, q, k) == out);
                CHECK((tr.allowed(q, k) == 0) == (out || k > q));
                for (const HeadTrace& h : tr.attention.heads)
                    if (out) CHECK(h.weights(q, k) == 0.0f);
                outside += out, causal += k > q;
            }
        CHECK(causal == tr.T_q() * (tr.T_q() - 1) / 2);
        return outside;
    };
    // One layer's map (the block recomputed: its mask is the model's own), 14 queries, W = 4:
    // rows 4 … 13 have q − 3 keys outside each.
    CHECK(check_cells(st.figure.trace(), 4) == 10 * 11 / 2);
    // The same layer from its kept maps (an aggregate of the two sliding layers), and with
    // merged words (none here: no window then, the cells are only the map's zeros).
    st.imported.show = ImportShow::Aggregate;
    show_import(st);
    CHECK(check_cells(st.figure.trace(), 4) == 55);
    st.imported.show = ImportShow::Rollout;
    show_import(st);
    CHECK(st.figure.trace().window == 0);  // the rollout carries weight across the window's edge

    // qwen2: only layer 2 slides; an aggregate with layer 1 has no window.
    AppState q = app_showing(live_reference("qwen2_l2_h4kv2_d32_bf16_window", 12));
    CHECK(q.figure.trace().window == 0);
    select_import_map(q, 1, 2);
    CHECK(check_cells(q.figure.trace(), 3) == 9 * 10 / 2);
    q.imported.show = ImportShow::Aggregate;
    show_import(q);
    CHECK(q.figure.trace().window == 0);
    q.imported.layers_on = {false, true};
    show_import(q);
    CHECK(q.figure.trace().window == 3);
#else
    FAIL("built without ATTN_MODEL_REFS");
#endif
}

TEST_CASE("heatmap: the window's legend entry only where the window masks a cell; its SVG cells and words") {
#ifdef ATTN_MODEL_REFS
    const PlainMeasure m;
    AppState st = app_showing(live_reference("mistral_l2_h4kv2_d32_f32_window", 14));
    const Trace& tr = st.figure.trace();
    HeatmapLayout L;
    const HeatmapItems items = heatmap_of(tr, false, m, &L);
    CHECK(window_bites(tr));
    const auto words = with_role(items.items, ItemRole::WindowLabel);
    REQUIRE(words.size() == 2);
    CHECK(words[0]->text == "outside the window");
    CHECK(words[1]->text == "W = 4");
    REQUIRE(with_role(items.items, ItemRole::WindowSwatch).size() == 2);  // the hatch and its outline
    CHECK(with_role(items.items, ItemRole::WindowSwatch)[0]->kind == Item::WindowHatch);
    CHECK(with_role(items.items, ItemRole::MaskedLabel).size() == 1);  // the causal mask keeps its own
    CHECK(L.window_swatch.y0 > L.swatch.y1);
    for (const Item* w : words) CHECK(w->x + w->text_w <= L.box.x1);  // the legend's column holds them
    CHECK(L.fit_y > L.window_swatch.y1);

    // The SVG: a cell per visible cell, those outside the window with the window's pattern.
    SvgOptions o;
    const std::string svg = write_svg(tr, o);
    CHECK(test::occurrences(svg, "class=\"cell masked window\"") == 55);
    CHECK(test::occurrences(svg, "class=\"cell masked\"") == 14 * 13 / 2);
    CHECK(svg.find("<pattern id=\"window-hatch\"") != std::string::npos);
    CHECK(svg.find(">outside the window</text>") != std::string::npos);
    CHECK(svg.find(">W = 4</text>") != std::string::npos);

    // Too short a text for the window to bite (4 tokens, W = 4): no entry; a layer without a
    // window: none either.
    AppState short_text = app_showing(live_reference("mistral_l2_h4kv2_d32_f32_window", 4));
    CHECK(short_text.figure.trace().window == 4);
    CHECK_FALSE(window_bites(short_text.figure.trace()));
    CHECK(with_role(heatmap_of(short_text.figure.trace(), false, m).items, ItemRole::WindowLabel).empty());
    CHECK(write_svg(short_text.figure.trace(), o).find("window-label") == std::string::npos);
    CHECK(write_svg(short_text.figure.trace(), o).find("window-hatch") == std::string::npos);  // nor its pattern
    AppState q = app_showing(live_reference("qwen2_l2_h4kv2_d32_bf16_window", 12));
    CHECK(with_role(heatmap_of(q.figure.trace(), false, m).items, ItemRole::WindowLabel).empty());
    select_import_map(q, 1, 0);
    CHECK(with_role(heatmap_of(q.figure.trace(), false, m).items, ItemRole::WindowLabel).size() == 2);
#else
    FAIL("built without ATTN_MODEL_REFS");
#endif
}

// [SECTION] Attention sinks ----------------------------------------------------------------------

TEST_CASE("sink hidden: each row renormalized over the keys but the first sums to 1; the first key is out") {
    // A causal scene, and (with a live model where there are references) a sliding window's map.
    std::vector<Trace> traces;
    {
        AppState st;
        st.load_preset("masked-apple");
        REQUIRE(!st.figure.empty());
        traces.push_back(st.figure.trace());
        st.load_preset("multi-head-rain");
        traces.push_back(st.figure.trace());
    }
#ifdef ATTN_MODEL_REFS
    traces.push_back(app_showing(live_reference("mistral_l2_h4kv2_d32_f32_window", 14)).figure.trace());
#endif
    double worst = 0;
    for (const Trace& tr : traces) {
        REQUIRE(sink_hideable(tr));
        const Trace t = without_sink(tr);
        CHECK(t.window == tr.window);
        CHECK(t.heads == tr.heads);
        REQUIRE(t.attention.heads.size() == tr.attention.heads.size());
        for (int h = 0; h < tr.heads; ++h)
            for (int q = 0; q < tr.T_q(); ++q) {
                CHECK(t.allowed(q, 0) == 0);
                double sum = 0;
                bool others = false;
                for (int k = 1; k < tr.T_k(); ++k) {
                    CHECK(t.allowed(q, k) == tr.allowed(q, k));
                    sum += t.attention.heads[h].weights(q, k);
                    others |= tr.allowed(q, k) != 0;
                }
                CHECK(t.attention.heads[h].weights(q, 0) == 0.0f);
                if (!others) {  // a causal map's first query had only the first key: nothing left
                    CHECK(sum == 0.0);
                    continue;
                }
                worst = std::max(worst, std::fabs(sum - 1.0));
                // In proportion to the true weights: w′ = w / (1 − w₀) when the row summed to 1.
                const float w0 = tr.attention.heads[h].weights(q, 0);
                for (int k = 1; k < tr.T_k(); ++k)
                    CHECK(t.attention.heads[h].weights(q, k) ==
                          doctest::Approx(tr.attention.heads[h].weights(q, k) / (1.0f - w0)).epsilon(1e-4));
            }
    }
    MESSAGE("largest |row sum − 1| without the first key: " << worst);
    CHECK(worst < 1e-5);
}

TEST_CASE("sink hidden: the heatmap's legend says so, the column is not counted as masked, the SVG draws it flat") {
    const PlainMeasure m;
    AppState st;
    st.load_preset("multi-head-rain");  // self-attention: nothing masked
    const Trace t = without_sink(st.figure.trace());
    CHECK_FALSE(any_masked(t, true));
    CHECK(any_masked(t, false));
    const HeatmapItems items = heatmap_of(t, true, m);
    CHECK(with_role(items.items, ItemRole::MaskedLabel).empty());
    const auto words = with_role(items.items, ItemRole::SinkLabel);
    REQUIRE(words.size() == 2);
    CHECK(words[0]->text == "first token hidden");
    CHECK(words[1]->text == "rows renormalized");
    SvgOptions o;
    o.sink_hidden = true;
    const std::string svg = write_svg(t, o);
    CHECK(test::occurrences(svg, "class=\"cell sink\"") == t.T_q());
    CHECK(svg.find("class=\"cell masked") == std::string::npos);
    // The option applies to the weights of the lines and the heatmap, not to scores or Steps.
    st.sink_hidden = true;
    CHECK(st.hides_sink(View::Lines));
    CHECK(st.hides_sink(View::Heatmap));
    CHECK_FALSE(st.hides_sink(View::Steps));
    st.heatmap.values = HeatValues::Scores;
    CHECK_FALSE(st.hides_sink(View::Heatmap));
}

// [SECTION] Shared K/V heads -------------------------------------------------------------------

TEST_CASE("model grid: query heads that share K and V are framed together in every layer's row") {
    const PlainMeasure m;
    for (int kv : {0, 1, 2, 4}) {
        for (float width : {390.0f, 1280.0f}) {
            CAPTURE(kv);
            CAPTURE(width);
            ModelInput in;
            in.layers = 3, in.heads = 4, in.kv_heads = kv, in.causal = true;
            in.view = {0.0f, 0.0f, width, 800.0f};
            const ModelLayout L = lay_out_model(in, m);
            const int group = kv > 0 && kv < 4 ? 4 / kv : 1;
            CHECK(L.group == group);
            const std::vector<Item> items = model_items(L, in, {}, m);
            const auto frames = with_role(items, ItemRole::GroupFrame);
            if (group == 1) {
                CHECK(frames.empty());
                CHECK(L.gap == L.row_gap);
                continue;
            }
            const int groups = 4 / group;
            // A frame per group per row, then the legend's swatch and words.
            REQUIRE(frames.size() == static_cast<size_t>(3 * groups + 2));
            for (int l = 0; l < 3; ++l)
                for (int g = 0; g < groups; ++g) {
                    const Box& f = frames[static_cast<size_t>(l * groups + g)]->box;
                    CHECK(frames[static_cast<size_t>(l * groups + g)]->index == l * groups + g);
                    for (int ll = 0; ll < 3; ++ll)
                        for (int h = 0; h < 4; ++h) {
                            const Box b = L.thumb(ll, h);
                            const bool inside = b.x0 > f.x0 && b.x1 < f.x1 && b.y0 > f.y0 && b.y1 < f.y1;
                            const bool touches = b.x1 > f.x0 && b.x0 < f.x1 && b.y1 > f.y0 && b.y0 < f.y1;
                            CHECK(inside == (ll == l && h / group == g));
                            CHECK(touches == inside);  // no other thumbnail under a frame
                        }
                    // Frames of neighbouring groups and rows keep apart.
                    if (g + 1 < groups) CHECK(L.group_frame(l, g + 1).x0 - f.x1 >= 3.9f);
                    if (l + 1 < 3) CHECK(L.group_frame(l + 1, g).y0 - f.y1 >= 3.9f);
                }
            CHECK(frames.back()->text == "K, V shared");
            // The pointer finds every thumbnail at its centre, and none in the gap between groups.
            for (int l = 0; l < 3; ++l)
                for (int h = 0; h < 4; ++h) {
                    const Box b = L.thumb(l, h);
                    const ModelLayout::Hit hit = L.hit((b.x0 + b.x1) * 0.5f, (b.y0 + b.y1) * 0.5f);
                    CHECK(hit.layer == l);
                    CHECK(hit.head == h);
                }
            const float between = (L.thumb(0, group - 1).x1 + L.thumb(0, group).x0) * 0.5f;
            CHECK(L.hit(between, L.thumb(0, 0).y0 + 1.0f).layer == -1);
            CHECK(L.thumb(0, 3).x1 <= L.grid.x1 + 0.01f);
            CHECK(L.thumb(2, 0).y1 <= L.grid.y1 + 0.01f);
        }
    }
}

TEST_CASE("model grid: a live GQA model's stack gives the view its K/V heads") {
#ifdef ATTN_MODEL_REFS
    const Figure qwen3 = live_reference("qwen3_l2_h4kv2_d24_f32_qknorm", 8);
    CHECK(qwen3.kv_heads_of(0) == 2);
    CHECK(qwen3.window_of(0, 0) + qwen3.window_of(0, 1) == 5);  // a window of 5 on one of its two layers
#else
    FAIL("built without ATTN_MODEL_REFS");
#endif
}

// [SECTION] A live model's link ----------------------------------------------------------------

namespace {

// Runs the app's model work until a live figure of `text` is in.
void until_live(AppState& st) {
    for (int i = 0; i < 10000 && !(st.figure.has(Detail::Layers) && st.figure.live && !st.model.loading); ++i) advance_model(st, 1.0);
    REQUIRE(st.figure.has(Detail::Layers));
    REQUIRE(st.figure.live);
}

}  // namespace

TEST_CASE("a live model's link opens the view it names, on layer 1, head 1, and the app's link carries no scene") {
#ifdef ATTN_MODEL_REFS
    // The page's ?model= folder and the link's text: the link's view once the model is in.
    const std::string mistral = std::string(ATTN_MODEL_REFS) + "/mistral_l2_h4kv2_d32_f32_window";
    AppState st;
    st.load_preset("i-am-good");
    REQUIRE(open_link(st, "#v=1&text=the%20cat%20sat%20on%20the%20mat&view=heatmap"));
    CHECK(st.link_view_waits);
    REQUIRE(open_model_folder(st, mistral));
    until_live(st);
    CHECK(st.view == View::Heatmap);  // not the model grid
    CHECK(st.imported.import_layer == 0);
    CHECK(st.imported.import_head == 0);
    CHECK_FALSE(st.link_view_waits);
    const std::string hash = encode_link(link_from_app(st));
    MESSAGE(hash);
    CHECK(hash.find("scene=") == std::string::npos);
    CHECK(hash.find("preset=") == std::string::npos);
    CHECK(hash.find("view=heatmap") != std::string::npos);
    CHECK(hash.size() < 200);
    // Read back with the same folder: the same figure, the same link.
    AppState b;
    REQUIRE(open_link(b, "#" + hash));
    REQUIRE(open_model_folder(b, mistral));
    until_live(b);
    CHECK(b.view == View::Heatmap);
    CHECK(encode_link(link_from_app(b)) == hash);
    // A map given: that map, in the named view; no view given: lines, the link's default.
    AppState c;
    REQUIRE(open_link(c, "#v=1&text=the%20cat%20sat&view=steps&map=attention:2:3"));
    REQUIRE(open_model_folder(c, mistral));
    until_live(c);
    CHECK(c.view == View::Steps);
    CHECK(c.imported.import_layer == 1);
    CHECK(c.imported.import_head == 2);
    AppState d;
    REQUIRE(open_link(d, "#v=1&text=the%20cat%20sat"));
    REQUIRE(open_model_folder(d, mistral));
    until_live(d);
    CHECK(d.view == View::Lines);
#else
    FAIL("built without ATTN_MODEL_REFS");
#endif
#ifndef __EMSCRIPTEN__
    // The issue's link, with a built-in model (compiled into native programs; the page fetches
    // them, and tests/browser/builtin.mjs follows the same link there).
    AppState t;
    t.load_preset("i-am-good");
    REQUIRE(open_link(t, "#v=1&model=tiny-lm&text=The%20cat%20sat&view=heatmap"));
    until_live(t);
    CHECK(t.view == View::Heatmap);
    const std::string tiny = encode_link(link_from_app(t));
    MESSAGE(tiny);
    CHECK(tiny == "v=1&view=heatmap&map=attention%3A1%3A1&model=tiny-lm&text=The%20cat%20sat");
#endif
    // A scene's link still names its scene, and leaves no view waiting for a model.
    AppState e;
    REQUIRE(open_link(e, "#v=1&preset=multi-head-rain&view=heatmap"));
    CHECK_FALSE(e.link_view_waits);
    CHECK(encode_link(link_from_app(e)).find("preset=multi-head-rain") != std::string::npos);
}

// [SECTION] K-composition ----------------------------------------------------------------------

TEST_CASE("probs=p|surprisal: each run's tokens' probabilities are token_probs()'; generation's steps have theirs; patching can be stopped") {
#ifdef ATTN_MODEL_REFS
    const std::string gpt2 = std::string(ATTN_MODEL_REFS) + "/gpt2_l3_h4_d32_f16";
    AppState st;
    REQUIRE(open_link(st, "#v=1&text=the%20cat%20sat%20on%20the%20mat&probs=surprisal"));
    CHECK(st.model.experiment.probs == TokenShade::Surprisal);
    REQUIRE(open_model_folder(st, gpt2));
    until_live(st);
    for (int i = 0; i < 100 && st.model.busy(); ++i) advance_model(st, 1.0);
    REQUIRE(st.figure.probs);
    const LiveRun& live = *st.figure.live;
    CHECK_FALSE(live.input.record);  // the hidden rows are enough: no stream recorded
    kernels::Context ctx;
    const TokenProbs want = token_probs(ctx, live.model->model, live.result, live.input.ids);
    REQUIRE(st.figure.probs->positions() == want.positions());
    CHECK(want.positions() == static_cast<int>(live.input.ids.size()));
    for (int t = 1; t < want.positions(); ++t) {
        CHECK(st.figure.probs->at[static_cast<std::size_t>(t)].target_p == want.at[static_cast<std::size_t>(t)].target_p);
        CHECK(st.figure.probs->at[static_cast<std::size_t>(t)].top.size() == 10);
    }
    CHECK(encode_link(link_from_app(st)).find("probs=surprisal") != std::string::npos);
    // generated: each step's run has the probabilities of its tokens, the newest the picked one's
    st.model.generation.tokens = 3;
    request_generation(st);
    for (int i = 0; i < 1000 && (st.model.busy() || st.model.run_revision != st.model.input_revision); ++i) advance_model(st, 1.0);
    REQUIRE(st.model.generation.generated() == 3);
    show_generation_step(st, 1);
    for (int i = 0; i < 1000 && (st.model.busy() || st.model.run_revision != st.model.input_revision); ++i) advance_model(st, 1.0);
    REQUIRE(st.figure.probs);
    const int n = st.model.generation.prompt + 1;
    REQUIRE(st.figure.probs->positions() == n);
    CHECK(st.figure.probs->at[static_cast<std::size_t>(n - 1)].target == st.model.generation.ids[static_cast<std::size_t>(n - 1)]);
    // off: no probabilities after the next run
    st.model.experiment.probs = TokenShade::Off;
    model_input_changed(st);
    for (int i = 0; i < 100 && (st.model.busy() || st.model.run_revision != st.model.input_revision); ++i) advance_model(st, 1.0);
    CHECK_FALSE(st.figure.probs);
    // patching stopped: its grids stay empty, and say so, until the next run
    AppState pt;
    REQUIRE(open_link(pt, "#v=1&text=the%20cat%20sat&compare=the%20dog%20sat&patching=1"));
    REQUIRE(open_model_folder(pt, gpt2));
    until_live(pt);
    REQUIRE(pt.model.patching);
    cancel_patching(pt);
    CHECK(pt.model.patching_stopped);
    for (int i = 0; i < 100 && pt.model.busy(); ++i) advance_model(pt, 1.0);
    CHECK_FALSE(pt.figure.patching);
    model_input_changed(pt);
    for (int i = 0; i < 1000 && (pt.model.busy() || pt.model.run_revision != pt.model.input_revision); ++i) advance_model(pt, 1.0);
    CHECK_FALSE(pt.model.patching_stopped);
    CHECK(pt.figure.patching);
    // attribution and patching of a chosen target against a chosen contrast: attribute()'s and patching()'s
    AppState tc;
    REQUIRE(open_link(tc, "#v=1&text=the%20cat%20sat&compare=the%20dog%20sat&attribution=1&patching=1&target=%235&contrast=%237"));
    REQUIRE(open_model_folder(tc, gpt2));
    until_live(tc);
    for (int i = 0; i < 1000 && tc.model.busy(); ++i) advance_model(tc, 1.0);
    REQUIRE(tc.figure.attribution);
    REQUIRE(tc.figure.patching);
    CHECK(tc.figure.attribution->target == 5);
    CHECK(tc.figure.attribution->contrast == 7);
    const LiveRun& clean = *tc.figure.live;
    CHECK(tc.figure.attribution->head == attribute(ctx, clean.model->model, forward(ctx, clean.model->model, clean.input), 5, 7).head);
    CHECK(tc.figure.patching->head == patching(ctx, clean.model->model, clean.input, tc.figure.compare->input, 5, 7, "test").head);
    CHECK(encode_link(link_from_app(tc)).find("target=%235&contrast=%237") != std::string::npos);
    // a target of several tokens, a contrast that is the target: the error names the field, the figure stays
    tc.model.experiment.target = "the cat sat";
    model_input_changed(tc);
    for (int i = 0; i < 1000 && (tc.model.busy() || tc.model.run_revision != tc.model.input_revision); ++i) advance_model(tc, 1.0);
    CHECK(tc.error.find("target: \"the cat sat\" is ") != std::string::npos);
    CHECK(tc.figure.live);
    CHECK_FALSE(tc.figure.attribution);
    tc.model.experiment.target = "#7";
    model_input_changed(tc);
    for (int i = 0; i < 1000 && (tc.model.busy() || tc.model.run_revision != tc.model.input_revision); ++i) advance_model(tc, 1.0);
    CHECK(tc.error.find("contrast: \"#7\" is the target's token") != std::string::npos);
    // bad input: the link names the values
    AppState bad;
    CHECK_FALSE(open_link(bad, "#v=1&probs=yes"));
    CHECK(bad.error.find("probs") != std::string::npos);
#else
    FAIL("built without ATTN_MODEL_REFS");
#endif
}

TEST_CASE("attribution=1, lens=1: a live run records its stream; the panel's grids are attribute()'s and logit_lens()'") {
#ifdef ATTN_MODEL_REFS
    const std::string gemma = std::string(ATTN_MODEL_REFS) + "/gemma2_l3_h4kv2_d32_f32_softcap";
    AppState st;
    REQUIRE(open_link(st, "#v=1&text=the%20cat%20sat%20on%20the%20mat&attribution=1&lens=1"));
    REQUIRE(open_model_folder(st, gemma));
    until_live(st);
    for (int i = 0; i < 100 && st.model.busy(); ++i) advance_model(st, 1.0);
    REQUIRE(st.figure.attribution);
    const LiveRun& live = *st.figure.live;
    CHECK(live.input.record);
    kernels::Context ctx;
    const Attribution want = attribute(ctx, live.model->model, forward(ctx, live.model->model, live.input), live.top.front().id);
    const Attribution& got = *st.figure.attribution;
    CHECK(got.target == live.top.front().id);
    CHECK(got.head == want.head);
    CHECK(got.total == want.total);
    // the lens, read in slices after the run: logit_lens()' cells
    REQUIRE(st.figure.lens);
    const Lens lens = logit_lens(ctx, live.model->model, forward(ctx, live.model->model, live.input));
    REQUIRE(st.figure.lens->cells.size() == lens.cells.size());
    for (std::size_t i = 0; i < lens.cells.size(); ++i) {
        CHECK(st.figure.lens->cells[i].top.front().id == lens.cells[i].top.front().id);
        CHECK(st.figure.lens->cells[i].target_rank == lens.cells[i].target_rank);
    }
    CHECK(st.figure.lens->at(lens.layers - 1, lens.positions - 1).target == live.top.front().id);
    CHECK(encode_link(link_from_app(st)).find("attribution=1&lens=1") != std::string::npos);
    // turned off: the next run records nothing and shows no grid
    st.model.experiment.attribution = st.model.experiment.lens = false;
    model_input_changed(st);
    for (int i = 0; i < 100 && (st.model.busy() || st.model.run_revision != st.model.input_revision); ++i) advance_model(st, 1.0);
    CHECK_FALSE(st.figure.live->input.record);
    CHECK_FALSE(st.figure.attribution);
    CHECK_FALSE(st.figure.lens);
    // patching=1 with a Compare text of as many tokens: patching()'s, the Compare text's prediction the contrast
    AppState pt;
    REQUIRE(open_link(pt, "#v=1&text=the%20cat%20sat%20on%20the%20mat&compare=the%20dog%20sat%20on%20the%20mat&patching=1"));
    REQUIRE(open_model_folder(pt, gemma));
    until_live(pt);
    for (int i = 0; i < 1000 && pt.model.busy(); ++i) advance_model(pt, 1.0);
    REQUIRE(pt.figure.compare);
    REQUIRE(pt.figure.compare->input.ids.size() == pt.figure.live->input.ids.size());
    REQUIRE(pt.figure.patching);
    const LiveRun &clean = *pt.figure.live, &corrupt = *pt.figure.compare;
    const int contrast = corrupt.top[0].id != clean.top[0].id ? corrupt.top[0].id : clean.top[1].id;
    const Patching direct = patching(ctx, clean.model->model, clean.input, corrupt.input, clean.top[0].id, contrast, "test");
    CHECK(pt.figure.patching->head == direct.head);
    CHECK(pt.figure.patching->resid == direct.resid);
    CHECK(pt.figure.patching->resid_at(direct.layers, direct.positions - 1) == 1.0);
    const std::vector<int> corrupt_ids = corrupt.input.ids;
    // a Compare text of another length: no patching
    pt.model.compare = "the dog";
    model_input_changed(pt);
    for (int i = 0; i < 1000 && (pt.model.busy() || pt.model.run_revision != pt.model.input_revision); ++i) advance_model(pt, 1.0);
    CHECK_FALSE(pt.figure.patching);
    // a corrupted text of its own (corrupted=): patched into it, the Compare text aside; the contrast its prediction
    AppState own;
    REQUIRE(open_link(own, "#v=1&text=the%20cat%20sat%20on%20the%20mat&compare=the%20dog&patching=1&corrupted=the%20dog%20sat%20on%20the%20mat"));
    REQUIRE(open_model_folder(own, gemma));
    until_live(own);
    for (int i = 0; i < 1000 && own.model.busy(); ++i) advance_model(own, 1.0);
    REQUIRE(own.figure.patching);
    const LiveRun& own_clean = *own.figure.live;
    RunInput own_corrupt = own_clean.input;
    own_corrupt.ids = corrupt_ids;  // the same words as the Compare text above
    const Patching own_direct = patching(ctx, own_clean.model->model, own_clean.input, own_corrupt, own_clean.top[0].id, -1, "test");
    CHECK(own.figure.patching->contrast == own_direct.contrast);
    CHECK(own.figure.patching->head == own_direct.head);
    CHECK(own.figure.patching->resid == own_direct.resid);
    CHECK(own.figure.patching->head == direct.head);  // the contrast chosen as the page chose it from the Compare run
    CHECK(encode_link(link_from_app(own)).find("corrupted=the%20dog%20sat%20on%20the%20mat") != std::string::npos);
    // of another length: the error names the field, the figure stays
    own.model.experiment.corrupted = "the dog";
    model_input_changed(own);
    for (int i = 0; i < 1000 && (own.model.busy() || own.model.run_revision != own.model.input_revision); ++i) advance_model(own, 1.0);
    CHECK(own.error.find("corrupted: the corrupted text is ") != std::string::npos);
    CHECK(own.figure.live);
    CHECK_FALSE(own.figure.patching);
    // an encoder has no stream to read: asked for, nothing is recorded
    AppState b;
    REQUIRE(open_link(b, "#v=1&text=the%20cat&attribution=1"));
    REQUIRE(open_model_folder(b, std::string(ATTN_MODEL_REFS) + "/bert_l2_h2_d16_f32"));
    until_live(b);
    CHECK_FALSE(b.figure.live->input.record);
    CHECK_FALSE(b.figure.attribution);
#else
    FAIL("built without ATTN_MODEL_REFS");
#endif
}

TEST_CASE("induction_why: the key after the earlier copy, and the earlier layer's head that wrote the token there") {
    // ids: 7 3 5 9 | 3 5 9 (a text said twice after a first token); layer 0: head 0 looks at
    // the previous token, head 1 at the first; layer 1, head 0: induction (query q looks at the
    // key after q's earlier copy; a new token looks at itself), head 1: the first token.
    const std::vector<int> ids = {7, 3, 5, 9, 3, 5, 9};
    const int T = static_cast<int>(ids.size());
    AttentionStack st;
    st.name = "attention";
    for (int i = 0; i < T; ++i) st.queries.push_back("t" + std::to_string(i)), st.keys.push_back("t" + std::to_string(i));
    st.layers = 2, st.heads = 2;
    Matrix prev = Matrix::Zero(T, T), first = Matrix::Zero(T, T), induction = Matrix::Zero(T, T);
    for (int i = 0; i < T; ++i) {
        prev(i, std::max(i - 1, 0)) = 1.0f;
        first(i, 0) = 1.0f;
        induction(i, i >= 4 ? i - 2 : i) = 0.9f, induction(i, 0) += 0.1f;  // i − 3 + 1: after the copy
    }
    prev(4, 3) = 0.8f, prev(4, 0) = 0.2f;  // a weaker previous-token weight at key 4 (from 4 to 3)
    st.maps = {prev, first, induction, first};

    const std::optional<InductionWhy> w = induction_why(st, ids, 1, 0, 5);  // the second "5"
    REQUIRE(w);
    CHECK(w->earlier == 2);
    CHECK(w->top == 3);
    CHECK(w->matched());
    CHECK(w->top_weight == doctest::Approx(0.9));
    CHECK(w->after_weight == doctest::Approx(0.9));
    CHECK(w->writer_layer == 0);
    CHECK(w->writer_head == 0);
    CHECK(w->writer_weight == doctest::Approx(1.0));  // A0[3][2]

    const std::optional<InductionWhy> n = induction_why(st, ids, 1, 0, 3);  // "9": new here
    REQUIRE(n);
    CHECK(n->earlier == -1);
    CHECK_FALSE(n->matched());
    CHECK(n->top == 3);
    CHECK(n->after_weight == 0.0f);
    CHECK(n->writer_layer == -1);

    // The first-token head of layer 1 is not an induction head: the key after the copy gets nothing.
    const std::optional<InductionWhy> f = induction_why(st, ids, 1, 1, 6);
    REQUIRE(f);
    CHECK(f->earlier == 3);
    CHECK(f->top == 0);
    CHECK_FALSE(f->matched());
    CHECK(f->after_weight == 0.0f);
    // Layer 0 has no earlier layer to compose with.
    const std::optional<InductionWhy> l0 = induction_why(st, ids, 0, 0, 5);
    REQUIRE(l0);
    CHECK(l0->writer_layer == -1);

    CHECK(induction_example_query(st, ids, 1, 0) == 6);
    CHECK(induction_example_query(st, ids, 1, 1) == T - 1);  // no match: the last query
    CHECK_FALSE(induction_why(st, ids, 1, 0, T));
    CHECK_FALSE(induction_why(st, ids, 2, 0, 1));
    CHECK_FALSE(induction_why(st, {1, 2, 3}, 1, 0, 1));  // the ids are not the stack's tokens
    st.name = "cross_attention";
    CHECK_FALSE(induction_why(st, ids, 1, 0, 5));
}

#ifndef __EMSCRIPTEN__
TEST_CASE("the why-induction scene: the numbers its caption states are its run's") {
    AppState st;
    st.load_preset("i-am-good");
    const LiveScene* scene = find_live_scene("why-induction");
    REQUIRE(scene);
    open_live_scene(st, *scene);
    until_live(st);
    for (int i = 0; i < 1000 && st.model.busy(); ++i) advance_model(st, 1.0);
    REQUIRE(st.figure.attribution);
    REQUIRE(st.figure.lens);
    REQUIRE(st.figure.patching);
    const Tokenizer& t = st.figure.live->model->tokenizer;
    const Attribution& a = *st.figure.attribution;
    CHECK(t.token(a.target) == "J");
    CHECK(a.total == doctest::Approx(10.4).epsilon(0.005));
    CHECK(a.at(1, 2) == doctest::Approx(2.47).epsilon(0.005));
    CHECK(a.at(1, 1) == doctest::Approx(1.26).epsilon(0.005));
    CHECK(a.at(1, 0) == doctest::Approx(1.17).epsilon(0.005));
    CHECK(a.at(1, 3) == doctest::Approx(1.07).epsilon(0.005));
    CHECK(a.mlp[1] == doctest::Approx(4.52).epsilon(0.005));
    const Lens& lens = *st.figure.lens;
    const int last = lens.positions - 1;
    CHECK(lens.at(0, last).target_rank == 206);
    CHECK(lens.at(1, last).target_rank == 268);
    CHECK(lens.at(2, last).target_rank == 1);
    CHECK(lens.at(2, last).target_p == doctest::Approx(0.92).epsilon(0.01));
    const Patching& p = *st.figure.patching;
    CHECK(t.token(st.figure.live->input.ids[6]) == "w");  // position 7, counted from 1
    CHECK(p.resid_at(0, 6) == doctest::Approx(1.0).epsilon(0.01));
    CHECK(p.resid_at(1, 7) == doctest::Approx(1.0).epsilon(0.02));
    CHECK(p.resid_at(2, last) == 1.0);
}

// A link names any built-in scene: preset=induction-circuit opens it as the scene list does (its
// model, text, view and head), the scene box names it, later rows of the link still apply, and the
// link the app writes back opens the same figure.
TEST_CASE("a link opens a live scene by its name, as the list does") {
    AppState listed;
    listed.load_preset("i-am-good");
    open_live_scene(listed, *find_live_scene("induction-circuit"));
    until_live(listed);
    for (int i = 0; i < 100 && listed.model.busy(); ++i) advance_model(listed, 1.0);
    for (const char* hash : {"v=1&preset=induction-circuit", "v=1&preset=induction-circuit&view=heatmap"}) {
        CAPTURE(hash);
        AppState st;
        st.load_preset("i-am-good");
        REQUIRE(open_link(st, hash));
        until_live(st);
        for (int i = 0; i < 100 && st.model.busy(); ++i) advance_model(st, 1.0);
        CHECK(st.error.empty());
        CHECK(st.view == (std::string(hash).ends_with("heatmap") ? View::Heatmap : View::Steps));
        CHECK(st.imported.import_layer == listed.imported.import_layer);
        CHECK(st.imported.import_head == listed.imported.import_head);
        REQUIRE(shown_live_scene(st));
        CHECK(std::string(shown_live_scene(st)->name) == "induction-circuit");
        CHECK(st.model.text == listed.model.text);
    }
    {  // The same live link again with another view (a reader's address bar): the model's figure stays.
        AppState st;
        REQUIRE(open_link(st, "v=1&preset=induction-circuit"));
        until_live(st);
        for (int i = 0; i < 100 && st.model.busy(); ++i) advance_model(st, 1.0);
        REQUIRE(open_link(st, "v=1&preset=induction-circuit&view=heatmap"));
        for (int i = 0; i < 100 && st.model.busy(); ++i) advance_model(st, 1.0);
        CHECK(st.figure.has(Detail::Layers));
        CHECK(st.figure.live != nullptr);
        CHECK(st.view == View::Heatmap);
        CHECK(st.imported.import_layer == listed.imported.import_layer);
    }
    {  // From one live scene to another of another model, by link: the new model runs on its text.
        AppState st;
        REQUIRE(open_link(st, "v=1&preset=trained-heads"));
        until_live(st);
        for (int i = 0; i < 100 && st.model.busy(); ++i) advance_model(st, 1.0);
        REQUIRE(open_link(st, "v=1&preset=translate-numbers"));
        for (int i = 0; i < 200 && (st.model.loading || st.model.busy() || st.model.run_revision != st.model.input_revision); ++i)
            advance_model(st, 1.0);
        CHECK(st.model.run_revision == st.model.input_revision);
        REQUIRE(st.figure.live);
        CHECK(st.figure.live->model->name == "tiny-translator");
        CHECK(std::string(shown_live_scene(st)->name) == "translate-numbers");
    }
    // trained-heads picks its head by score once the model is in.
    AppState st;
    REQUIRE(open_link(st, "v=1&preset=trained-heads"));
    until_live(st);
    for (int i = 0; i < 100 && st.model.busy(); ++i) advance_model(st, 1.0);
    const HeadScores& hs = *st.figure.live->model->heads;
    float best = 0.0f;
    for (int l = 0; l < hs.layers; ++l)
        for (int h = 0; h < hs.heads; ++h) best = std::max(best, hs.at(HeadKind::Prev, l, h));
    CHECK(hs.at(HeadKind::Prev, st.imported.import_layer, st.imported.import_head) == best);
    CHECK(st.view == View::Model);
    // Written back, the link is the model's and opens the same figure.
    AppState again;
    REQUIRE(open_link(again, encode_link(link_from_app(listed))));
    until_live(again);
    for (int i = 0; i < 100 && again.model.busy(); ++i) advance_model(again, 1.0);
    CHECK(again.view == View::Steps);
    CHECK(again.imported.import_head == listed.imported.import_head);
    CHECK(std::string(shown_live_scene(again)->name) == "induction-circuit");
}

// The vision model's scene: tiny-vit on one of its example pictures, in the Picture view; the
// panel's example buttons (set_example_picture) run it on another, and the link says which; a
// link naming a picture the model lacks is one line and the picture before stays.
TEST_CASE("the vit-digit scene: tiny-vit reads its example picture; another example by name; a link keeps it") {
    AppState st;
    const LiveScene* scene = find_live_scene("vit-digit");
    REQUIRE(scene);
    open_live_scene(st, *scene);
    until_live(st);
    for (int i = 0; i < 100 && st.model.busy(); ++i) advance_model(st, 1.0);
    REQUIRE(st.model.picture);
    CHECK(st.model.picture->name == scene->picture);
    CHECK(st.model.examples.size() == 10);
    CHECK(st.view == View::Image);
    REQUIRE(shown_live_scene(st));
    CHECK(std::string(shown_live_scene(st)->name) == "vit-digit");
    REQUIRE(!st.figure.live->top.empty());
    CHECK(st.figure.live->top[0].token == std::string(1, scene->picture[8]));  // example-3.png reads 3
    CHECK(st.figure.live->input.ids.size() == 65);                             // [CLS] + 8 × 8 patches

    CHECK(set_example_picture(st, "example-7.png").empty());
    until_live(st);
    for (int i = 0; i < 100 && (st.model.busy() || st.model.run_revision != st.model.input_revision); ++i) advance_model(st, 1.0);
    CHECK(st.figure.live->top[0].token == "7");
    CHECK(shown_live_scene(st) == nullptr);  // another picture: no longer the scene
    const std::string link = encode_link(link_from_app(st));
    CHECK(link.find("model=tiny-vit") != std::string::npos);
    CHECK(link.find("picture=example-7.png") != std::string::npos);
    AppState again;
    REQUIRE(open_link(again, link));
    until_live(again);
    for (int i = 0; i < 100 && (again.model.busy() || again.model.run_revision != again.model.input_revision); ++i) advance_model(again, 1.0);
    REQUIRE(again.model.picture);
    CHECK(again.model.picture->name == "example-7.png");
    CHECK(again.figure.live->top[0].token == "7");

    REQUIRE(open_link(st, "v=1&model=tiny-vit&picture=example-12.png"));
    CHECK(st.error == "no example picture named example-12.png (the model has example-0.png … example-9.png)");
    CHECK(st.model.picture->name == "example-7.png");
}

// Steps on a patch: a vision model's first layer starts from the pixels. P holds each patch's
// pixels as the forward read them (the [CLS]'s row 0), E = P·W_e + b every number of it (W_e and
// b read back through the model's product) and E plus each token's position is the forward's own
// embedding (its recorded stream 0); the tooltip writes the product out; the next layer has neither.
TEST_CASE("Steps of tiny-vit's first layer: the pixels, the patch embedding as a product, then X") {
    AppState st;
    open_live_scene(st, *find_live_scene("vit-digit"));
    until_live(st);
    for (int i = 0; i < 100 && st.model.busy(); ++i) advance_model(st, 1.0);
    REQUIRE(st.figure.live);
    const LiveRun& live = *st.figure.live;
    const Trace tr = live_layer_trace(st.figure, 0, 0, st.figure.stack(0).queries, st.figure.stack(0).keys);
    const std::vector<Step> steps = pipeline_steps(tr, 0, false);
    REQUIRE(steps.size() > 3);
    CHECK(steps[0].kind == StepKind::Patches);
    CHECK(steps[1].kind == StepKind::Embedded);
    CHECK(steps[1].label == "E = P·W_e + b");
    CHECK(steps[2].kind == StepKind::Input);
    const FamilyTrace& f = tr.family;
    const Matrix& P = live.input.patches;
    const int T = static_cast<int>(live.input.ids.size()), d = live.model->config().d_model;
    REQUIRE(f.patch_first == 1);
    CHECK(steps[0].values.rows() == T);
    CHECK(steps[0].values.row(0).isZero());
    CHECK(steps[0].values.bottomRows(T - 1) == P);
    double worst = 0;
    for (int t = 1; t < T; ++t)
        for (int c = 0; c < d; ++c) {
            double e = f.patch_bias(c);
            for (Eigen::Index k = 0; k < P.cols(); ++k) e += static_cast<double>(P(t - 1, k)) * f.patch_weight(k, c);
            worst = std::max(worst, std::abs(e - f.patch_embedded(t, c)));
        }
    CHECK(worst < 1e-5);
    kernels::Context ctx;
    RunInput in = live.input;
    in.record = true;
    const RunResult run = forward(ctx, live.model->model, in);
    const Matrix with_positions = f.patch_embedded + Eigen::Map<const Matrix>(live.model->model.weights->positions, T, d);
    const double apart = (with_positions - run.inside.streams.at(0)).cwiseAbs().maxCoeff();
    MESSAGE("tiny-vit: E = P·W_e + b within " << worst << " of the naive sum; E + positions within " << apart << " of the forward's embedding");
    CHECK(apart < 1e-6);
    CHECK(explain_embedding(f, 5, 2).starts_with("e = p·w + b = " + format_number(P(4, 0)) + "×" + format_number(f.patch_weight(0, 2)) + " + "));
    CHECK(explain_embedding(f, 5, 2).ends_with("\n  = " + format_number(f.patch_embedded(5, 2))));
    CHECK(explain_embedding(f, 0, 2) == "e = " + format_number(f.patch_embedded(0, 2)));
    const Trace next = live_layer_trace(st.figure, 0, 1, st.figure.stack(0).queries, st.figure.stack(0).keys);
    CHECK(pipeline_steps(next, 0, false)[0].kind == StepKind::Input);
}

TEST_CASE("the induction-circuit scene: tiny-circuits' layer-2 induction head, whose query's key was written by a layer-1 head") {
    AppState st;
    st.load_preset("i-am-good");
    const LiveScene* scene = find_live_scene("induction-circuit");
    REQUIRE(scene);
    open_live_scene(st, *scene);
    until_live(st);
    for (int i = 0; i < 100 && st.model.busy(); ++i) advance_model(st, 1.0);
    CHECK(st.view == View::Steps);
    REQUIRE(st.figure.live->model->heads);
    const HeadScores& hs = *st.figure.live->model->heads;
    const int layer = st.imported.import_layer, head = st.imported.import_head;
    CHECK(layer == 1);
    CHECK(hs.at(HeadKind::Induction, layer, head) >= kHeadThresholds[static_cast<size_t>(HeadKind::Induction)]);
    const AttentionStack& stack = st.figure.layers->stacks[0];
    const std::vector<int>& ids = st.figure.live->input.ids;
    const int q = induction_example_query(stack, ids, layer, head);
    const std::optional<InductionWhy> why = induction_why(stack, ids, layer, head, q);
    REQUIRE(why);
    CHECK(why->matched());
    CHECK(why->writer_layer == 0);
    CHECK(why->writer_weight > 0.5f);  // from the key e + 1, the writer looks back at the query's earlier copy
    // The scene's text is a sentence said twice: most of the second copy's queries look hardest at the
    // token after the same position in the first copy (the textbook picture).
    const int n = static_cast<int>(ids.size()) / 2;  // BOS, the sentence, " ", the sentence: the copies are n apart
    REQUIRE(std::equal(ids.begin() + n + 1, ids.end(), ids.begin() + 1));
    int aligned = 0;
    for (int i = n + 1; i < static_cast<int>(ids.size()); ++i) {
        int top = 0;
        for (int j = 1; j <= i; ++j) top = stack.map(layer, head)(i, j) > stack.map(layer, head)(i, top) ? j : top;
        aligned += top == i - n + 1;
    }
    const int queries = static_cast<int>(ids.size()) - n - 1;
    MESSAGE(aligned << " of " << queries << " second-copy queries look hardest at the token after their earlier copy");
    CHECK(aligned * 3 >= queries * 2);
}
#endif

#ifndef __EMSCRIPTEN__
// A run on a thread of its own (ModelSession::background, where the build has threads): the same
// figure as the slices between frames give, the frame never stepping the run itself; text typed
// while a run is on its way wins, and the abandoned run's thread ends on its own. The panel's
// Threads setting, moved between edits while runs are on their way, keeps the session's one pool
// (started with most_threads) and changes no number.
TEST_CASE("a live model's run on its own thread shows the slices' figure, and the newest text wins") {
    const auto run = [](bool background, std::vector<int> threads, const std::vector<std::string>& texts) {
        AppState st;
        st.load_preset("i-am-good");
        st.model.background = background;
        st.model.most_threads = 3;
        set_model_threads(st.model, threads[0]);
        open_builtin_model(st, "tiny-lm");
        for (int i = 0; i < 10000 && (st.model.loading || !st.model.model); ++i) advance_model(st, 1.0);
        int frames = 0;
        const kernels::Pool* pool = nullptr;
        for (std::size_t i = 0; i < texts.size(); ++i) {  // each typed one frame after the last
            const std::string& text = texts[i];
            set_model_threads(st.model, threads[std::min(i, threads.size() - 1)]);
            CHECK(st.model.threads_used() == std::min(threads[std::min(i, threads.size() - 1)], 3));
            if (st.model.pool) {
                CHECK((!pool || pool == st.model.pool.get()));
                CHECK(st.model.pool->threads() == st.model.threads_used());
                pool = st.model.pool.get();
            }
            st.model.text = text;
            model_input_changed(st);
            advance_model(st, 1.0), ++frames;
        }
        for (; frames < 100000 && st.model.busy(); ++frames) {
            advance_model(st, 1.0);
            if (background) std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        REQUIRE(st.figure.live);
        return std::make_pair(st.figure.live, frames);
    };
    const std::vector<std::string> texts = {"The cat", "The cat sat on", "The cat sat on the mat. The cat sat on the mat."};
    const auto [sliced, sliced_frames] = run(false, {1}, texts);
    for (const std::vector<int>& threads : std::vector<std::vector<int>>{{1}, {3}, {3, 1, 9}, {1, 2, 3}}) {
        CAPTURE(threads.back());
        const auto [live, frames] = run(true, threads, texts);
        CHECK(live->input.ids == sliced->input.ids);  // the last text's
        REQUIRE(live->result.stacks.size() == sliced->result.stacks.size());
        int differ = 0;
        for (std::size_t l = 0; l < live->result.stacks[0].layers.size(); ++l)
            for (std::size_t h = 0; h < live->result.stacks[0].layers[l].weights.size(); ++h)
                differ += live->result.stacks[0].layers[l].weights[h] != sliced->result.stacks[0].layers[l].weights[h];
        CHECK(differ == 0);
        CHECK(live->result.logits == sliced->result.logits);
        MESSAGE("background, ", threads.back(), " threads at the end: the figure after ", frames, " frames (in slices: ", sliced_frames, ")");
    }
}
#endif

TEST_CASE("learned sinks (gpt-oss): a (sink) key in the maps' views, the sink's term in the pipeline's") {
#ifdef ATTN_MODEL_REFS
    AppState st = app_showing(live_reference("gpt_oss_l2_h4kv2_d32_f32_sinks_experts", 7));
    const AttentionStack& s = st.figure.stack(0);
    REQUIRE(s.sinks);
    // The maps' views: one more key, its column each row's weight on no token (1 − the row's sum).
    st.view = View::Heatmap;
    follow_sink_view(st);
    const Trace& maps = st.figure.trace();
    REQUIRE(maps.T_k() == 8);
    CHECK(maps.keys.back() == kSinkKey);
    const Matrix& w = maps.attention.heads[0].weights;
    for (int q = 0; q < 7; ++q) {
        CHECK(maps.allowed(q, 7) == 1);  // the sink is every row's, past the causal mask
        CHECK(w(q, 7) == doctest::Approx(1.0f - s.map(0, 0).row(q).sum()).epsilon(1e-6));
        CHECK(w.row(q).sum() == doctest::Approx(1.0f).epsilon(1e-5));
    }
    // The pipeline's views: the live block, its heads' sinks, the softmax with the sink's term.
    st.view = View::Steps;
    follow_sink_view(st);
    const Trace& pipe = st.figure.trace();
    REQUIRE(pipe.T_k() == 7);
    REQUIRE(pipe.family.sinks.size() == 4);
    const std::vector<Step> steps = pipeline_steps(pipe, 0, false);
    const auto weights = std::find_if(steps.begin(), steps.end(), [](const Step& x) { return x.kind == StepKind::Weights; });
    REQUIRE(weights != steps.end());
    CHECK(weights->label == "softmax (+ sink)");
    CHECK(weights->formula == "Σ = 1 − sink");
    const HeadTrace& h = pipe.attention.heads[0];
    const std::string text = explain_weight(h, pipe.allowed, 3, 1, 4, pipe.family.sinks[0]);
    CHECK(text.find(" (sink)) = ") != std::string::npos);
    CHECK(text.ends_with(format_number(h.weights(3, 1))));
    // the sum the text divides by is the keys' and the sink's: e^s / that is the weight
    double sum = std::exp(static_cast<double>(pipe.family.sinks[0]));
    for (int j = 0; j <= 3; ++j) sum += std::exp(static_cast<double>(h.scaled(3, j)));
    CHECK(std::exp(static_cast<double>(h.scaled(3, 1))) / sum == doctest::Approx(h.weights(3, 1)).epsilon(1e-5));
    // The model grid tags each head with its mean sink weight.
    st.view = View::Model;
    follow_sink_view(st);
    CHECK(st.figure.trace().keys.back() == kSinkKey);
#else
    FAIL("built without ATTN_MODEL_REFS");
#endif
}

#ifndef __EMSCRIPTEN__  // (tiny-circuits is compiled in natively; the page fetches it)
// A text past kMapsKeptUpTo tokens in the app (issue 47): the run keeps no map; the model view's
// thumbnails are the maps pooled to at most kThumbnailBlocks² blocks; the layer shown is a long
// trace whose every row, recomputed from the Q and K the run kept, is the map's row bit for bit;
// views that need every map say so instead (Explain: "long"; one head at a time).
TEST_CASE("a live model's long text: maps on demand, each one the forward's, thumbnails its pooled blocks") {
    AppState st;
    st.load_preset("i-am-good");
    open_builtin_model(st, "tiny-circuits");
    for (int i = 0; i < 10000 && (st.model.loading || !st.model.model); ++i) advance_model(st, 1.0);
    REQUIRE(st.model.model);
    std::string text;
    for (int i = 0; i < 80; ++i) text += "the cat sat on the mat. ";
    st.model.text = text;
    model_input_changed(st);
    advance_model(st, 1.0);
    for (int i = 0; i < 100000 && st.model.busy(); ++i) advance_model(st, 1.0);
    CAPTURE(st.error);
    REQUIRE(st.figure.live);
    const LiveRun& live = *st.figure.live;
    const int T = static_cast<int>(live.input.ids.size());
    CAPTURE(T);
    REQUIRE(T > kMapsKeptUpTo);
    CHECK(st.figure.maps_on_demand());
    CHECK(st.figure.layers->stacks[0].maps.empty());
    // the same run with every map, for the numbers
    RunInput dense_input = live.input;
    dense_input.keep_maps = true;
    kernels::Context ctx;
    const RunResult dense = forward(ctx, live.model->model, dense_input);
    CHECK(dense.logits == live.result.logits);
    const StackRun& s = dense.stacks[0];
    REQUIRE(live.thumbnails.size() == 1);
    REQUIRE(live.thumbnails[0].size() == s.layers.size() * static_cast<std::size_t>(s.heads));
    int differ = 0;
    for (std::size_t l = 0; l < s.layers.size(); ++l)
        for (int h = 0; h < s.heads; ++h) {
            const Matrix& map = s.layers[l].weights[static_cast<std::size_t>(h)];
            const Matrix& thumb = live.thumbnails[0][l * static_cast<std::size_t>(s.heads) + static_cast<std::size_t>(h)];
            CHECK(thumb.rows() == kThumbnailBlocks);
            differ += !test::same_bits(thumb, pooled(map, {0, T, 0, T}, kThumbnailBlocks, kThumbnailBlocks).values);
        }
    // every layer and head shown: its rows (the trace's first ones, and recomputed ones) are the map's
    for (int layer = 0; layer < static_cast<int>(s.layers.size()); ++layer) {
        select_import_map(st, layer, 1);
        const Trace& tr = st.figure.trace();
        REQUIRE(tr.is_long());
        CHECK(st.imported.show == ImportShow::Head);
        CHECK(!st.figure.has(Detail::Projections));
        CHECK(st.figure.has(Detail::Queries));
        REQUIRE(tr.heads == s.heads);
        // Steps from the kept Q and K: Q, K, the scores, scaled, masked, the weights (no X, V or outputs)
        const std::vector<Step> steps = pipeline_steps(tr, 1, false);
        std::vector<StepKind> kinds;
        for (const Step& step : steps) kinds.push_back(step.kind);
        CHECK(kinds == std::vector<StepKind>{StepKind::Q, StepKind::K, StepKind::Scores, StepKind::Scaled, StepKind::Masked, StepKind::Weights});
        CHECK(steps[0].label == "Q");
        CHECK(steps[0].values == tr.attention.heads[1].q);
        CHECK(steps[0].rows == T);  // every query is a row; the first kLongTraceRows are at hand
        differ += !test::same_bits(steps.back().values, s.layers[static_cast<std::size_t>(layer)].weights[1].topRows(kLongTraceRows));
        std::vector<float> rows(static_cast<std::size_t>(8) * T);
        for (int h = 0; h < tr.heads; ++h)
            for (int r0 : {0, 12, T / 2, T - 8}) {
                attention_rows(tr, h, r0, r0 + 8, rows.data());
                const Matrix& map = s.layers[static_cast<std::size_t>(layer)].weights[static_cast<std::size_t>(h)];
                differ += std::memcmp(rows.data(), map.row(r0).data(), rows.size() * sizeof(float)) != 0;
            }
    }
    CHECK(differ == 0);
    CHECK(explain(st.figure, 0, 0, 0).why[0] == "long");
    // Explain reads one query's row (explain_rows.hpp): the value norms the run kept are those
    // of the block's V and W_o, bit for bit; a rollout row is attention_rollout's over every map.
    {
        AttentionStack every;
        every.name = "attention", every.layers = static_cast<int>(s.layers.size()), every.heads = s.heads;
        every.queries.assign(static_cast<std::size_t>(T), "t"), every.keys = every.queries;
        for (const BlockRun& b : s.layers) every.maps.insert(every.maps.end(), b.weights.begin(), b.weights.end());
        const std::vector<Matrix> full = attention_rollout(every, HeadReduce::Mean);
        double worst = 0;
        int norms = 0;
        for (int layer : {0, every.layers - 1}) {
            select_import_map(st, layer, 1);
            const BlockTrace b = block_trace(ctx, live.model->model, dense, 0, layer);
            for (int h = 0; h < s.heads; ++h, ++norms) {
                const RowVector want = value_norms(b.trace.heads[static_cast<std::size_t>(h)].v, b.weights.w_o.middleRows(h * b.d_head, b.d_head));
                differ += !test::same_bits(shown_value_norms(st.figure, 0, layer, h), want);
            }
            for (int q : {T - 1, T / 2, 3}) {
                RolloutRow r;
                r.start(figure_rows(st.figure, 0), layer, q);
                while (!r.step(1e30)) {}
                worst = std::max(worst, static_cast<double>((r.row() - full[static_cast<std::size_t>(layer)].row(q)).cwiseAbs().maxCoeff()));
            }
        }
        MESSAGE(norms, " heads' value norms kept; rollout rows at T = ", T, ": worst difference ", worst);
        CHECK(differ == 0);
        CHECK(worst < 1e-5);
    }
    CHECK(!induction_why(st.figure.layers->stacks[0], live.input.ids, 1, 0, T - 1));
    // 512 tokens or fewer: every map kept, as before
    st.model.text = "the cat sat on the mat. the cat sat on the mat.";
    model_input_changed(st);
    advance_model(st, 1.0);
    for (int i = 0; i < 100000 && st.model.busy(); ++i) advance_model(st, 1.0);
    CHECK(!st.figure.maps_on_demand());
    CHECK(!st.figure.layers->stacks[0].maps.empty());
    // Cancel: the long text's run stops, the last figure stays, nothing runs again until an edit
    const std::shared_ptr<const LiveRun> before = st.figure.live;
    st.model.text = text;
    model_input_changed(st);
    advance_model(st, 0.0);  // one slice
    REQUIRE(st.model.job);
    cancel_model_run(st);
    for (int i = 0; i < 10; ++i) advance_model(st, 1.0);
    CHECK(!st.model.busy());
    CHECK(st.figure.live == before);
}
#endif
