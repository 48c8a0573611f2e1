// A model PyTorch runs elsewhere, as the app follows it (web/state/served_state.hpp): what it asks
// and in what order, what an answer does to the figure, an edit while a run is out, a server lost
// and asked again, a refusal that keeps the figure. The server itself: tests/serve/test_serve.py.
#include "served_state.hpp"

#include "app_state.hpp"
#include "explain_layout.hpp"
#include "explain_rows.hpp"
#include "import_state.hpp"
#include "link_state.hpp"
#include "safetensors.hpp"
#include "steps.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Tensor {
    std::string name;
    std::vector<std::int64_t> shape;
    std::vector<float> data;
};

// A .safetensors file of F32 tensors, as the server answers.
std::string safetensors_file(const std::vector<Tensor>& tensors, const nlohmann::json& metadata) {
    nlohmann::json header = nlohmann::json::object();
    if (!metadata.is_null()) header["__metadata__"] = metadata;
    std::string data;
    for (const Tensor& t : tensors) {
        header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.data.size() * 4}}};
        data.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * 4);
    }
    std::string text = header.dump();
    const std::uint64_t n = text.size();
    std::string out(8, '\0');
    std::memcpy(out.data(), &n, 8);
    return out + text + data;
}

// /api/maps's answer: `layers` layers of `heads` heads of T × T causal maps (each row uniform), F32.
std::string maps_file(int heads, int T, int layers = 1) {
    std::vector<float> data;
    for (int h = 0; h < heads * layers; ++h)
        for (int i = 0; i < T; ++i)
            for (int j = 0; j < T; ++j) data.push_back(j <= i ? 1.0f / static_cast<float>(i + 1) : 0.0f);
    nlohmann::json tokens = nlohmann::json::array();
    for (int i = 0; i < T; ++i) tokens.push_back("t" + std::to_string(i));
    return safetensors_file({{"attention", {layers, heads, T, T}, data}}, {{"tokens", tokens.dump()}, {"model", "m"}});
}

std::string run_answer(int run, int T) {
    nlohmann::json tokens = nlohmann::json::array();
    for (int i = 0; i < T; ++i) tokens.push_back("t" + std::to_string(i));
    return nlohmann::json{{"run", run}, {"tokens", tokens}, {"causal", true}, {"top", {{{"id", 5}, {"token", "x"}, {"p", 0.25}}}}}.dump();
}

// The request the app would send now (one at a time): its path.
std::string sent(attn::AppState& st) {
    REQUIRE(st.served.outbox.size() == 1);
    std::string path = st.served.outbox[0].path;
    st.served.outbox.clear();
    return path;
}

}  // namespace

TEST_CASE("a served model: info, run, maps; the choice kept; an edit waits for the run out") {
    attn::AppState st;
    REQUIRE(attn::open_link(st, "v=1&server=http://127.0.0.1:8765&key=abc_1&text=The%20cat&view=heatmap"));
    CHECK(st.served.active());
    CHECK(st.served.key == "abc_1");
    CHECK(attn::awaiting_served_figure(st));  // the scene behind is not drawn: the server's state is
    CHECK(sent(st) == "api/info");
    attn::served_reply(st, st.served.waiting, 200, R"({"attnviz":1,"model":"llama","maps_up_to":512})");
    CHECK(st.served.model == "llama");
    REQUIRE(st.served.outbox.size() == 1);
    CHECK(nlohmann::json::parse(st.served.outbox[0].body)["text"] == "The cat");  // the link's text
    CHECK(sent(st) == "api/run");
    attn::served_reply(st, st.served.waiting, 200, run_answer(1, 3));
    CHECK(sent(st) == "api/maps?run=1");
    CHECK(st.served.top.size() == 1);
    attn::served_reply(st, st.served.waiting, 200, maps_file(2, 3));
    REQUIRE(st.figure.has(attn::Detail::Layers));
    CHECK_FALSE(attn::awaiting_served_figure(st));
    CHECK(st.figure.stack(0).queries.size() == 3);
    CHECK(st.view == attn::View::Heatmap);  // the link's view, once the first maps are in
    attn::select_import_map(st, 0, 1);

    // Two edits while a run is out: one run after it, of the last text; the head stays chosen.
    st.served.text = "The cat sat";
    attn::served_input_changed(st);
    CHECK(sent(st) == "api/run");
    st.served.text = "The cat sat down";
    attn::served_input_changed(st);
    CHECK(st.served.outbox.empty());
    attn::served_reply(st, st.served.waiting, 200, run_answer(2, 4));
    CHECK(sent(st) == "api/maps?run=2");
    attn::served_reply(st, st.served.waiting, 200, maps_file(2, 4));
    CHECK(st.imported.import_head == 1);
    CHECK(st.figure.stack(0).queries.size() == 4);
    REQUIRE(st.served.outbox.size() == 1);  // the second edit
    CHECK(nlohmann::json::parse(st.served.outbox[0].body)["text"] == "The cat sat down");
    CHECK(attn::link_from_app(st).server == "http://127.0.0.1:8765");
    // The same server's link again, another view: its figure stays (no scene in between).
    REQUIRE(attn::open_link(st, "v=1&server=http://127.0.0.1:8765&key=abc_1&text=The%20cat%20sat%20down&view=lines"));
    CHECK(st.figure.has(attn::Detail::Layers));
    CHECK(st.view == attn::View::Lines);
}

TEST_CASE("a served link before its first figure: the canvas says the server's state and problem, not the scene behind") {
    attn::AppState st;
    REQUIRE(attn::open_link(st, "v=1&server=http://127.0.0.1:8765&key=wrong_key&text=The%20cat"));
    CHECK(attn::awaiting_served_figure(st));
    CHECK(attn::served_summary(st) == "Connecting to http://127.0.0.1:8765\xe2\x80\xa6");
    attn::served_reply(st, st.served.waiting, 401, R"({"error":"token: missing or wrong"})");
    CHECK(attn::awaiting_served_figure(st));  // still no figure: the problem is said where it would be
    CHECK(st.served.error == "http://127.0.0.1:8765: token: missing or wrong");
    // The server gone before any figure: asked again, and no "the figure stays" (there is none)
    attn::served_reply(st, st.served.waiting, 0, "no answer (Failed to fetch)");
    REQUIRE(st.served.lost);
    CHECK(attn::served_summary(st) == "http://127.0.0.1:8765 does not answer: asking again every few seconds.");
    // A link without a server, or the reader's own scene, is drawn as ever.
    st.load_preset("masked-apple");
    CHECK_FALSE(attn::awaiting_served_figure(st));
    REQUIRE(attn::open_link(st, "v=1&preset=i-am-good"));
    CHECK_FALSE(attn::awaiting_served_figure(st));
}

TEST_CASE("a served model: a stale answer is dropped, a refusal keeps the figure, a lost server is asked again") {
    attn::AppState st;
    attn::connect_served(st, ".", "k");
    const int info = st.served.waiting;
    sent(st);
    attn::served_reply(st, info + 7, 200, "{}");  // not the request out: nothing
    CHECK(st.served.model.empty());
    attn::served_reply(st, info, 200, R"({"model":"m"})");
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, run_answer(1, 2));
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, maps_file(1, 2));
    REQUIRE(st.figure.has(attn::Detail::Layers));

    st.served.text = "again";
    attn::served_input_changed(st);
    sent(st);
    attn::served_reply(st, st.served.waiting, 401, R"({"error":"token: missing or wrong"})");
    CHECK(st.served.error == ".: token: missing or wrong");
    CHECK(st.figure.stack(0).queries.size() == 2);  // the last good figure

    st.served.text = "and again";
    attn::served_input_changed(st);
    sent(st);
    attn::served_reply(st, st.served.waiting, 0, "no answer (Failed to fetch)");
    CHECK(st.served.lost);
    CHECK(attn::served_summary(st) == "this page's server does not answer: asking again every few seconds (the figure stays).");
    attn::advance_served(st, 10.0);
    CHECK(st.served.outbox.empty());
    attn::advance_served(st, 12.0);
    CHECK(st.served.outbox.empty());
    attn::advance_served(st, 13.5);
    CHECK(sent(st) == "api/info");
    attn::served_reply(st, st.served.waiting, 200, R"({"model":"m"})");
    CHECK(!st.served.lost);
    REQUIRE(st.served.outbox.size() == 1);
    CHECK(nlohmann::json::parse(st.served.outbox[0].body)["text"] == "and again");

}

namespace {

// /api/qk's answer for a layer: H heads of q [T, D] and KV of k, a fixed pseudo-random pattern,
// and value_norms [H, T] where `norms` has H·T.
std::string qk_file(int H, int KV, int T, int D, float scaling, int window, std::vector<float>& q, std::vector<float>& k,
                    const std::vector<float>& norms = {}) {
    q.resize(static_cast<size_t>(H) * T * D), k.resize(static_cast<size_t>(KV) * T * D);
    for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>((i * 7919) % 201) / 50.0f - 2.0f;
    for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>((i * 104729) % 199) / 50.0f - 2.0f;
    std::vector<Tensor> tensors = {{"q", {H, T, D}, q}, {"k", {KV, T, D}, k}};
    if (!norms.empty()) tensors.push_back({"value_norms", {H, T}, norms});
    return safetensors_file(tensors,
                            {{"scaling", std::to_string(scaling)}, {"softcap", "0"}, {"sinks", "[]"}, {"causal", "1"},
                             {"window", std::to_string(window)}, {"heads", std::to_string(H)}, {"kv_heads", std::to_string(KV)}});
}

// Row i of head h, computed naively in double from the answer's q and k.
std::vector<double> naive_row(const std::vector<float>& q, const std::vector<float>& k, int H, int KV, int T, int D, float scaling,
                              int window, int h, int i) {
    std::vector<double> s(static_cast<size_t>(T), -INFINITY);
    double top = -INFINITY;
    for (int j = 0; j <= i; ++j) {
        if (window > 0 && j <= i - window) continue;
        double dot = 0;
        for (int d = 0; d < D; ++d)
            dot += static_cast<double>(q[(static_cast<size_t>(h) * T + i) * D + d]) * k[(static_cast<size_t>(h / (H / KV)) * T + j) * D + d];
        s[static_cast<size_t>(j)] = dot * scaling;
        top = std::max(top, s[static_cast<size_t>(j)]);
    }
    double sum = 0;
    for (double& v : s) sum += v = std::isinf(v) ? 0.0 : std::exp(v - top);
    for (double& v : s) v /= sum;
    return s;
}

// /api/run's answer with what the run says of its layers (d_model 8; windows per layer).
nlohmann::json layered_run(int run, int T, int L, int H, int KV, std::vector<int> windows) {
    nlohmann::json j = nlohmann::json::parse(run_answer(run, T));
    j["layers"] = L, j["heads"] = H, j["kv_heads"] = KV, j["d_model"] = 8, j["windows"] = windows;
    return j;
}

// /api/qk's answer to the request out, then frames until it is read into the block (advance_served):
// how many frames that took.
int reply_layer(attn::AppState& st, std::string body) {
    attn::served_reply(st, st.served.waiting, 200, std::move(body));
    int frames = 0;
    for (; st.served.reading && frames < 100000; ++frames) attn::advance_served(st, 0.0);
    return frames;
}

// Connected to a server whose maps are kept up to 512 tokens: its info answered, the text's run asked.
void connect_long(attn::AppState& st) {
    attn::connect_served(st, ".", "k");
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, R"({"model":"m","maps_up_to":512})");
    sent(st);
}

// Connected, a long text of one layer run (run 3) and its thumbnails answered: its Q and K asked for.
void long_text_asks_layer(attn::AppState& st, int T, int H, int KV) {
    connect_long(st);
    attn::served_reply(st, st.served.waiting, 200, layered_run(3, T, 1, H, KV, {0}).dump());
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, safetensors_file({{"values", {H, 64, 64}, std::vector<float>(H * 64 * 64)}}, {}));
    CHECK(sent(st) == "api/qk?run=3&layer=0");
}

}  // namespace

TEST_CASE("a served model's long text: thumbnails a layer at a time, then the shown layer's Q and K; another layer asked for") {
    attn::AppState st;
    connect_long(st);
    constexpr int T = 600, L = 2, H = 2, KV = 1, D = 4;
    nlohmann::json run = layered_run(3, T, L, H, KV, {0, 3});
    attn::served_reply(st, st.served.waiting, 200, run.dump());
    CHECK(st.served.error.empty());
    for (int layer = 0; layer < L; ++layer) {
        CHECK(sent(st) == "api/region?run=3&layer=" + std::to_string(layer) + "&rows=64&cols=64");
        std::vector<float> values(static_cast<size_t>(H) * 64 * 64, 0.0f);
        values[static_cast<size_t>(layer * 5 + 1)] = 0.5f;  // a mark per layer
        attn::served_reply(st, st.served.waiting, 200, safetensors_file({{"values", {H, 64, 64}, values}}, {{"reduce", "max"}}));
    }
    CHECK(!st.figure.has(attn::Detail::Layers));  // nothing shown until a layer's Q and K come
    CHECK(sent(st) == "api/qk?run=3&layer=0");
    std::vector<float> q, k;
    reply_layer(st, qk_file(H, KV, T, D, 0.5f, 0, q, k));
    REQUIRE(st.served.error.empty());
    REQUIRE(st.figure.has(attn::Detail::Layers));
    CHECK(st.figure.maps_on_demand());
    CHECK(st.figure.thumbnails(0).size() == static_cast<size_t>(L * H));
    CHECK(st.figure.thumbnails(0)[2](0, 6) == 0.5f);  // layer 1's mark, head 0
    CHECK(st.figure.window_of(0, 1) == 3);
    CHECK(st.figure.kv_heads_of(0) == KV);
    const attn::Trace& t = st.figure.trace();
    REQUIRE(t.is_long());
    CHECK(t.T_q() == T);
    std::vector<float> row(static_cast<size_t>(T));
    for (int h = 0; h < H; ++h)
        for (int i : {0, 17, 599}) {
            attn::attention_rows(t, h, i, i + 1, row.data());
            const std::vector<double> want = naive_row(q, k, H, KV, T, D, 0.5f, 0, h, i);
            double d = 0;
            for (int j = 0; j < T; ++j) d = std::max(d, std::abs(row[static_cast<size_t>(j)] - want[static_cast<size_t>(j)]));
            CHECK(d < 1e-6);
        }

    // Layer 1 chosen: asked for once; the choice stays on the map shown until it comes, then it
    // is layer 1's.
    attn::select_import_map(st, 1, 1);
    CHECK(st.served.outbox.empty());
    CHECK(st.imported.import_layer == 0);
    CHECK(st.imported.wanted_layer == 1);
    attn::advance_served(st, 1.0);
    CHECK(sent(st) == "api/qk?run=3&layer=1");
    attn::advance_served(st, 1.1);
    CHECK(st.served.outbox.empty());
    std::vector<float> norms(static_cast<size_t>(H) * T);
    for (size_t i = 0; i < norms.size(); ++i) norms[i] = 1.0f + static_cast<float>(i % 5);
    reply_layer(st, qk_file(H, KV, T, D, 0.5f, 3, q, k, norms));
    REQUIRE(st.figure.kept_layer(0, 1) != nullptr);
    CHECK(st.imported.import_layer == 1);
    CHECK(st.imported.import_head == 1);
    CHECK(st.imported.wanted_layer == -1);
    CHECK(st.figure.trace().window == 3);
    // Explain's value-weighted row reads the norms the server sent with the layer (none with layer 0)
    const attn::RowVector n = attn::shown_value_norms(st.figure, 0, 1, 1);
    REQUIRE(n.size() == T);
    CHECK((n.array() == Eigen::Map<const attn::RowVector>(norms.data() + T, T).array()).all());
    CHECK(attn::shown_value_norms(st.figure, 0, 0, 1).size() == 0);
    attn::attention_rows(st.figure.trace(), 1, 300, 301, row.data());
    const std::vector<double> want = naive_row(q, k, H, KV, T, D, 0.5f, 3, 1, 300);
    double d = 0;
    for (int j = 0; j < T; ++j) d = std::max(d, std::abs(row[static_cast<size_t>(j)] - want[static_cast<size_t>(j)]));
    CHECK(d < 1e-6);
    CHECK(row[297] == 0.0f);  // outside the window
    const attn::KeptHeads& kept = *st.figure.kept_layer(0, 1);
    // The trace reads the block's Q and K where they are (a copy per head was 38 MB at 8 192 tokens)
    CHECK(st.figure.trace().long_q.get() == &kept.q);
    CHECK(st.figure.trace().long_k.get() == &kept.k);
    CHECK(attn::head_keys(st.figure.trace(), 1).data() == kept.k.data());  // K head 0 serves both
    CHECK(attn::head_queries(st.figure.trace(), 1).data() == kept.q.data() + D);
    const std::vector<attn::Step> steps = attn::pipeline_steps(st.figure.trace(), 1, false);  // Steps shows that K whole
    const auto k_step = std::find_if(steps.begin(), steps.end(), [](const attn::Step& s) { return s.kind == attn::StepKind::K; });
    REQUIRE(k_step != steps.end());
    CHECK(k_step->values == kept.k.leftCols(D));
    bool same = true;  // the trace's mask is the kept block's, entry for entry
    for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j) same = same && (st.figure.trace().allowed(i, j) != 0) == kept.allowed(i, j);
    CHECK(same);

    // A layer the server refuses (its mask): said, not asked again, the figure kept.
    attn::select_import_map(st, 0, 0);  // at hand: nothing asked
    attn::advance_served(st, 2.0);
    CHECK(st.served.outbox.empty());
    st.served.text = "another";
    attn::served_input_changed(st);
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, run.dump());
    sent(st);
    CHECK(st.figure.kept_layer(0, 0) != nullptr);  // the last run's figure, until the new one's comes
    st.served.text = "edited while the maps come";
    attn::served_input_changed(st);
    attn::served_reply(st, st.served.waiting, 200, safetensors_file({{"values", {H, 64, 64}, std::vector<float>(H * 64 * 64)}}, {}));
    REQUIRE(st.served.outbox.size() == 1);
    CHECK(st.served.outbox[0].path == "api/run");  // the new text first
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, run.dump());
    for (int layer = 0; layer < L; ++layer) {
        sent(st);
        attn::served_reply(st, st.served.waiting, 200, safetensors_file({{"values", {H, 64, 64}, std::vector<float>(H * 64 * 64)}}, {}));
    }
    CHECK(sent(st) == "api/qk?run=3&layer=0");  // the reader's layer stays: 0
    attn::served_reply(st, st.served.waiting, 422, R"({"error":"qk: this layer's mask is not a causal one"})");
    CHECK(st.served.error.find("not a causal one") != std::string::npos);
    attn::advance_served(st, 3.0);
    CHECK(st.served.outbox.empty());
    CHECK(st.figure.kept_layer(0, 1) != nullptr);  // the last good figure

    // An answer of the wrong shape: an error naming the tensor, the figure kept.
    st.served.text = "once more";
    attn::served_input_changed(st);
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, run.dump());
    for (int layer = 0; layer < L; ++layer) {
        sent(st);
        attn::served_reply(st, st.served.waiting, 200, safetensors_file({{"values", {H, 64, 64}, std::vector<float>(H * 64 * 64)}}, {}));
    }
    sent(st);
    reply_layer(st, qk_file(H + 1, KV, T, D, 0.5f, 0, q, k));
    CHECK(st.served.error.find("q") != std::string::npos);
    CHECK(st.served.error.find("[2, 600, -1]") != std::string::npos);
    CHECK(st.figure.kept_layer(0, 1) != nullptr);
}

// A server keeps Q and K in the model's 16-bit dtype: the page reads them into the block a row of
// a head at a time, each number as its dtype says.
TEST_CASE("a served model's long text: Q in BF16 and K in F16, read into the block as those numbers") {
    attn::AppState st;
    constexpr int T = 600, H = 4, KV = 2, D = 8;
    long_text_asks_layer(st, T, H, KV);
    std::vector<std::uint16_t> q(static_cast<size_t>(H) * T * D), k(static_cast<size_t>(KV) * T * D);
    for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<std::uint16_t>(0x3F80 + (i * 37) % 128 + (i % 3 ? 0 : 0x8000));
    for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint16_t>(0x3C00 + (i * 101) % 1024 + (i % 5 ? 0 : 0x8000));
    nlohmann::json header = {{"q", {{"dtype", "BF16"}, {"shape", {H, T, D}}, {"data_offsets", {0, q.size() * 2}}}},
                             {"k", {{"dtype", "F16"}, {"shape", {KV, T, D}}, {"data_offsets", {q.size() * 2, (q.size() + k.size()) * 2}}}},
                             {"__metadata__", {{"scaling", "0.5"}, {"softcap", "0"}, {"sinks", "[]"}, {"causal", "1"}, {"window", "0"}}}};
    const std::string text = header.dump();
    const std::uint64_t n = text.size();
    std::string body(8, '\0');
    std::memcpy(body.data(), &n, 8);
    body += text;
    body.append(reinterpret_cast<const char*>(q.data()), q.size() * 2).append(reinterpret_cast<const char*>(k.data()), k.size() * 2);
    // Read into the block 7 rows a frame (Q's 4 heads of 8 and K's 2: 192 bytes a row): nothing is
    // shown until the last of its 86 frames, the busy state says so meanwhile, and a slip at a
    // frame's first or last row fails the numbers below.
    st.served.read_bytes_per_frame = 7 * 192 + 100;
    attn::served_reply(st, st.served.waiting, 200, std::move(body));
    REQUIRE(st.served.error.empty());
    int frames = 0;
    float progress = 0;
    bool grows = true;
    for (; st.served.reading && frames < 1000; ++frames) {
        CHECK_FALSE(st.figure.kept_layer(0, 0));
        nlohmann::json state;
        attn::add_served_json(st, state);
        CHECK(state["served"]["busy"] == true);
        attn::advance_served(st, 0.0);
        const float now = attn::served_reading_progress(st.served);
        grows = grows && (now < 0 || now > progress);
        progress = now;
    }
    CHECK(frames == (T + 6) / 7);
    CHECK(grows);
    CHECK(attn::served_reading_progress(st.served) == -1.0f);
    const std::shared_ptr<const attn::KeptHeads> kept = st.figure.kept_layer(0, 0);
    REQUIRE(kept);
    REQUIRE(kept->q.rows() == T);
    REQUIRE(kept->q.cols() == H * D);
    REQUIRE(kept->k.cols() == KV * D);
    int wrong = 0;
    for (int h = 0; h < H; ++h)
        for (int i = 0; i < T; ++i)
            for (int d = 0; d < D; ++d) {
                wrong += kept->q(i, h * D + d) != attn::bf16_to_f32(q[(static_cast<size_t>(h) * T + i) * D + d]);
                if (h < KV) wrong += kept->k(i, h * D + d) != attn::f16_to_f32(k[(static_cast<size_t>(h) * T + i) * D + d]);
            }
    CHECK(wrong == 0);
}

// A layer's answer half read when the text changes: it is dropped (its run is not the figure's to
// be), the new text runs, and no frame shows the old layer.
TEST_CASE("a served model's long text: a layer being read is dropped when the text is edited") {
    attn::AppState st;
    constexpr int T = 600, H = 2, KV = 1, D = 4;
    long_text_asks_layer(st, T, H, KV);
    std::vector<float> q, k;
    st.served.read_bytes_per_frame = 48 * 100;  // 100 rows a frame
    attn::served_reply(st, st.served.waiting, 200, qk_file(H, KV, T, D, 0.5f, 0, q, k));
    attn::advance_served(st, 0.0);
    CHECK(attn::served_reading_progress(st.served) == doctest::Approx(100.0 / T));
    st.served.text = "Another text.";
    attn::served_input_changed(st);
    CHECK(sent(st) == "api/run");
    CHECK_FALSE(st.served.reading);
    for (int frame = 0; frame < 10; ++frame) attn::advance_served(st, 0.0);
    CHECK_FALSE(st.figure.kept_layer(0, 0));
    CHECK(st.served.outbox.empty());  // nothing asked until the run answers
}

// A link's map of a layer whose Q and K are not here: the layer shown stays as it is (its trace is
// not made again on the way, 0.3 s at 8 192 tokens in the page), the link's layer asked for.
TEST_CASE("a served model's long text: a link's map of another layer asks for it without making the shown one again") {
    attn::AppState st;
    connect_long(st);
    constexpr int T = 600, L = 3, H = 2, KV = 1, D = 4;
    attn::served_reply(st, st.served.waiting, 200, layered_run(3, T, L, H, KV, {0, 0, 0}).dump());
    for (int layer = 0; layer < L; ++layer) {
        sent(st);
        attn::served_reply(st, st.served.waiting, 200, safetensors_file({{"values", {H, 64, 64}, std::vector<float>(H * 64 * 64)}}, {}));
    }
    CHECK(sent(st) == "api/qk?run=3&layer=0");
    std::vector<float> q, k;
    reply_layer(st, qk_file(H, KV, T, D, 0.5f, 0, q, k));
    REQUIRE(st.figure.shown);
    const attn::Trace* shown = st.figure.shown.get();
    st.link_map = "attention:3:2";
    st.link_map_view = attn::View::Heatmap;
    attn::apply_link_map(st);
    CHECK(st.figure.shown.get() == shown);  // the first layer's trace, not made again
    CHECK(st.imported.wanted_layer == 2);
    CHECK(st.imported.wanted_head == 1);
    CHECK(st.view == attn::View::Heatmap);
    attn::advance_served(st, 1.0);
    CHECK(sent(st) == "api/qk?run=3&layer=2");
    reply_layer(st, qk_file(H, KV, T, D, 0.5f, 0, q, k));
    CHECK(st.imported.import_layer == 2);
    CHECK(st.imported.import_head == 1);
    CHECK(st.figure.shown.get() != shown);
}

// A short text (its maps whole): then the Q and K of the layer shown, so that Steps starts at Q
// and the Q–K space draws; the maps stay (Aggregate, another layer until its Q and K come); a
// layer the server will not send keeps its maps, no error.
TEST_CASE("a served model's short text: the shown layer's Q and K after its maps, for Steps and the Q-K space") {
    attn::AppState st;
    connect_long(st);
    constexpr int T = 20, L = 2, H = 2, KV = 1, D = 4;
    nlohmann::json run = layered_run(1, T, L, H, KV, {0, 0});
    attn::served_reply(st, st.served.waiting, 200, run.dump());
    CHECK(sent(st) == "api/maps?run=1");
    attn::served_reply(st, st.served.waiting, 200, maps_file(H, T, L));
    REQUIRE(st.figure.has(attn::Detail::Layers));
    CHECK(!st.figure.has(attn::Detail::Queries));  // the maps alone, until Q and K come
    CHECK(sent(st) == "api/qk?run=1&layer=0");
    std::vector<float> q, k, norms(static_cast<size_t>(H) * T);
    for (size_t i = 0; i < norms.size(); ++i) norms[i] = 0.5f + static_cast<float>(i % 7);
    reply_layer(st, qk_file(H, KV, T, D, 0.5f, 0, q, k, norms));
    REQUIRE(st.served.error.empty());
    CHECK(st.figure.has(attn::Detail::Queries));
    // Explain: the value-weighted reading from the server's norms, the rollout from the whole maps
    const attn::Explanation e = attn::explain(st.figure, 1, 0, 0);
    REQUIRE(e.maps[1]);
    REQUIRE(e.maps[2]);
    double worst = 0;
    const attn::Matrix& w = st.figure.trace().attention.heads[1].weights;
    for (int i = 0; i < T; ++i) {
        double sum = 0;
        for (int j = 0; j < T; ++j) sum += static_cast<double>(w(i, j)) * norms[static_cast<size_t>(T + j)];
        for (int j = 0; j < T; ++j) worst = std::max(worst, std::abs((*e.maps[1])(i, j) - w(i, j) * norms[static_cast<size_t>(T + j)] / sum));
    }
    CHECK(worst < 1e-6);
    CHECK(!st.figure.maps_on_demand());
    CHECK(st.figure.stack(0).maps.size() == static_cast<size_t>(L * H));  // the whole maps stay
    const attn::Trace& t = st.figure.trace();
    CHECK(!t.is_long());
    REQUIRE(t.T_q() == T);
    double d = 0;
    for (int h = 0; h < H; ++h)
        for (int i = 0; i < T; ++i) {
            const std::vector<double> want = naive_row(q, k, H, KV, T, D, 0.5f, 0, h, i);
            for (int j = 0; j < T; ++j) d = std::max(d, std::abs(t.attention.heads[static_cast<size_t>(h)].weights(i, j) - want[static_cast<size_t>(j)]));
        }
    CHECK(d < 1e-6);
    const std::vector<attn::Step> steps = attn::pipeline_steps(t, 1, false);
    REQUIRE(steps.size() == 6);
    CHECK(steps[0].kind == attn::StepKind::Q);
    CHECK(steps[0].values.rows() == T);
    CHECK(steps[1].kind == attn::StepKind::K);
    CHECK(steps.back().kind == attn::StepKind::Weights);

    // Layer 1 chosen: its maps meanwhile, its Q and K asked for, then shown from them.
    attn::select_import_map(st, 1, 0);
    CHECK(st.imported.import_layer == 1);
    CHECK(!st.figure.has(attn::Detail::Queries));
    CHECK(st.figure.trace().attention.heads[0].weights(3, 0) == 0.25f);  // the server's map
    attn::advance_served(st, 1.0);
    CHECK(sent(st) == "api/qk?run=1&layer=1");
    reply_layer(st, qk_file(H, KV, T, D, 0.5f, 0, q, k));
    CHECK(st.imported.import_layer == 1);
    CHECK(st.figure.has(attn::Detail::Queries));
    CHECK(st.figure.kept_layer(0, 0) != nullptr);  // both kept
    CHECK(!attn::explain(st.figure, 0, 0, 1).maps[1]);  // no norms sent (a W_o the server does not know)
    CHECK(attn::explain(st.figure, 0, 0, 1).why[1] == "projections");
    // Every head's mean: the maps, not Q and K
    st.imported.show = attn::ImportShow::Aggregate;
    attn::show_import(st);
    CHECK(!st.figure.has(attn::Detail::Queries));
    st.imported.show = attn::ImportShow::Head;
    attn::show_import(st);
    CHECK(st.figure.has(attn::Detail::Queries));
    attn::advance_served(st, 2.0);
    CHECK(st.served.outbox.empty());

    // A new text's run and maps: -> what the page asks for then
    auto new_text = [&](const char* text, int id) {
        st.served.text = text;
        attn::served_input_changed(st);
        CHECK(sent(st) == "api/run");
        run["run"] = id;
        attn::served_reply(st, st.served.waiting, 200, run.dump());
        CHECK(sent(st) == "api/maps?run=" + std::to_string(id));
        attn::served_reply(st, st.served.waiting, 200, maps_file(H, T, L));
        return sent(st);
    };
    // A new text whose layer 1 comes; then a link's map again (its stack chosen, layer 1 of it
    // after): layer 0, passed through, is not asked for, and the choice stays on layer 1.
    CHECK(new_text("once more", 2) == "api/qk?run=2&layer=1");
    reply_layer(st, qk_file(H, KV, T, D, 0.5f, 0, q, k));
    attn::select_import_stack(st, 0);
    attn::select_import_map(st, 1, 0);
    attn::advance_served(st, 2.5);
    CHECK(st.served.outbox.empty());
    CHECK(st.imported.import_layer == 1);
    CHECK(st.figure.has(attn::Detail::Queries));

    // A new text: a layer the server will not send keeps the maps, and says nothing.
    CHECK(new_text("another", 3) == "api/qk?run=3&layer=1");  // the reader's layer stays
    attn::served_reply(st, st.served.waiting, 422, R"({"error":"qk: this layer's mask is not a causal one"})");
    CHECK(st.served.error.empty());
    CHECK(st.figure.has(attn::Detail::Layers));
    CHECK(!st.figure.has(attn::Detail::Queries));
    attn::advance_served(st, 3.0);
    CHECK(st.served.outbox.empty());  // not asked again
}

TEST_CASE("a served model's knockout: the link's heads go with each run; a toggle runs again; Restore all") {
    attn::AppState st;
    REQUIRE(attn::open_link(st, "v=1&server=.&key=k&text=The%20cat&knockout=2:3,1:1&view=model"));
    CHECK(st.served.knockout == "2:3,1:1");
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, R"({"model":"m"})");
    REQUIRE(st.served.outbox.size() == 1);
    CHECK(nlohmann::json::parse(st.served.outbox[0].body)["knockout"] == nlohmann::json{{1, 2}, {0, 0}});
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, run_answer(1, 3));
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, maps_file(2, 3));
    CHECK(attn::knocked_heads(st).size() == 2);
    attn::toggle_knockout(st, {0, 1, 2});  // the model view's right click on 2:3: back in
    CHECK(st.served.knockout == "1:1");
    REQUIRE(st.served.outbox.size() == 1);
    CHECK(nlohmann::json::parse(st.served.outbox[0].body)["knockout"] == nlohmann::json{{0, 0}});
    CHECK(attn::link_from_app(st).knockout == "1:1");
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, run_answer(2, 3));
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, maps_file(2, 3));
    attn::toggle_knockout(st, {0, 0, 0});
    REQUIRE(st.served.outbox.size() == 1);
    CHECK(!nlohmann::json::parse(st.served.outbox[0].body).contains("knockout"));
}

TEST_CASE("a served model's Generate: the server continues the text, which then runs; nothing while a request is out") {
    attn::AppState st;
    REQUIRE(attn::open_link(st, "v=1&server=.&key=k&text=The%20cat&knockout=1:2"));
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, R"({"model":"m"})");
    attn::served_generate(st);  // a run is out: nothing
    CHECK(st.served.outbox.size() == 1);
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, run_answer(1, 2));
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, maps_file(1, 2));
    st.served.generate_tokens = 3;
    attn::served_generate(st);
    REQUIRE(st.served.outbox.size() == 1);
    CHECK(st.served.outbox[0].path == "api/generate");
    const nlohmann::json body = nlohmann::json::parse(st.served.outbox[0].body);
    CHECK(body["tokens"] == 3);
    CHECK(body["text"] == "The cat");
    CHECK(body["knockout"] == nlohmann::json{{0, 1}});
    st.served.outbox.clear();
    attn::served_reply(st, st.served.waiting, 200, R"({"text":"The cat sat on","ids":[5,6,7],"tokens":["a","b","c"]})");
    CHECK(st.served.text == "The cat sat on");
    REQUIRE(st.served.outbox.size() == 1);
    CHECK(nlohmann::json::parse(st.served.outbox[0].body)["text"] == "The cat sat on");
    CHECK(attn::link_from_app(st).model_text == "The cat sat on");
}

TEST_CASE("a served long text's faults: a cut answer named and the figure kept, the server gone while maps come") {
    attn::AppState st;
    connect_long(st);
    constexpr int T = 600, H = 2, KV = 1, D = 4;
    nlohmann::json run = nlohmann::json::parse(run_answer(1, T));
    run["layers"] = 1, run["heads"] = H, run["kv_heads"] = KV, run["windows"] = {0};
    const std::string thumbs = safetensors_file({{"values", {H, 64, 64}, std::vector<float>(H * 64 * 64)}}, {});
    std::vector<float> q, k;
    const std::string layer = qk_file(H, KV, T, D, 0.5f, 0, q, k);
    attn::served_reply(st, st.served.waiting, 200, run.dump());
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, thumbs.substr(0, thumbs.size() / 2));  // cut: a transfer ended early
    CHECK(st.served.error.find("api/region") != std::string::npos);
    CHECK(!st.figure.has(attn::Detail::Layers));

    const auto edited = [&](const char* text) {  // a new text run, then its thumbnails asked for
        st.served.text = text;
        attn::served_input_changed(st);
        sent(st);
        attn::served_reply(st, st.served.waiting, 200, run.dump());
        sent(st);
    };
    edited("again");
    attn::served_reply(st, st.served.waiting, 200, thumbs);
    sent(st);
    reply_layer(st, layer);
    REQUIRE(st.figure.has(attn::Detail::Layers));
    const int shown = st.figure.trace().T_q();

    // A third text: its layer's answer cut, then the server gone while its thumbnails come.
    edited("a third");
    attn::served_reply(st, st.served.waiting, 200, thumbs);
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, layer.substr(0, layer.size() - 100));
    CHECK(st.served.error.find("api/qk") != std::string::npos);
    CHECK(st.figure.trace().T_q() == shown);  // the last good figure
    edited("a fourth");
    attn::served_reply(st, st.served.waiting, 0, "no answer (Failed to fetch)");
    CHECK(st.served.lost);
    CHECK(st.figure.trace().T_q() == shown);
    attn::advance_served(st, 1.0);
    attn::advance_served(st, 5.0);
    CHECK(sent(st) == "api/info");  // asked again; then the text runs again
    attn::served_reply(st, st.served.waiting, 200, R"({"model":"m","maps_up_to":512})");
    CHECK(nlohmann::json::parse(st.served.outbox.at(0).body)["text"] == "a fourth");
}
