// A model PyTorch runs elsewhere, as the app follows it (web/state/served_state.hpp): what it asks
// and in what order, what an answer does to the figure, an edit while a run is out, a server lost
// and asked again, a refusal that keeps the figure. The server itself: tests/serve/test_serve.py.
#include "served_state.hpp"

#include "app_state.hpp"
#include "link_state.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

// /api/maps's answer: one layer, `heads` heads of T × T causal maps (each row uniform), F32.
std::string maps_file(int heads, int T) {
    std::vector<float> data;
    for (int h = 0; h < heads; ++h)
        for (int i = 0; i < T; ++i)
            for (int j = 0; j < T; ++j) data.push_back(j <= i ? 1.0f / static_cast<float>(i + 1) : 0.0f);
    nlohmann::json tokens = nlohmann::json::array();
    for (int i = 0; i < T; ++i) tokens.push_back("t" + std::to_string(i));
    nlohmann::json header = {{"__metadata__", {{"tokens", tokens.dump()}, {"model", "m"}}},
                             {"attention", {{"dtype", "F32"}, {"shape", {1, heads, T, T}}, {"data_offsets", {0, data.size() * 4}}}}};
    std::string text = header.dump();
    const std::uint64_t n = text.size();
    std::string out(8, '\0');
    std::memcpy(out.data(), &n, 8);
    out += text;
    out.append(reinterpret_cast<const char*>(data.data()), data.size() * 4);
    return out;
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
    CHECK(st.figure.stack(0).queries.size() == 3);
    CHECK(st.view == attn::View::Heatmap);  // the link's view, once the first maps are in
    attn::select_import_map(st, 0, 1);

    // Two edits while a run is out: one run after it, of the last text; the head stays chosen.
    st.served.text = "The cat sat";
    attn::served_text_changed(st);
    CHECK(sent(st) == "api/run");
    st.served.text = "The cat sat down";
    attn::served_text_changed(st);
    CHECK(st.served.outbox.empty());
    attn::served_reply(st, st.served.waiting, 200, run_answer(2, 4));
    CHECK(sent(st) == "api/maps?run=2");
    attn::served_reply(st, st.served.waiting, 200, maps_file(2, 4));
    CHECK(st.imported.import_head == 1);
    CHECK(st.figure.stack(0).queries.size() == 4);
    REQUIRE(st.served.outbox.size() == 1);  // the second edit
    CHECK(nlohmann::json::parse(st.served.outbox[0].body)["text"] == "The cat sat down");
    CHECK(attn::link_from_app(st).server == "http://127.0.0.1:8765");
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
    attn::served_text_changed(st);
    sent(st);
    attn::served_reply(st, st.served.waiting, 401, R"({"error":"token: missing or wrong"})");
    CHECK(st.served.error == ".: token: missing or wrong");
    CHECK(st.figure.stack(0).queries.size() == 2);  // the last good figure

    st.served.text = "and again";
    attn::served_text_changed(st);
    sent(st);
    attn::served_reply(st, st.served.waiting, 0, "no answer (Failed to fetch)");
    CHECK(st.served.lost);
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

    // Past the maps the server sends whole: said, the figure kept.
    sent(st);
    attn::served_reply(st, st.served.waiting, 200, run_answer(3, 600));
    CHECK(st.served.outbox.empty());
    CHECK(st.served.error.find("600 tokens") == 0);
    CHECK(st.figure.stack(0).queries.size() == 2);
}
