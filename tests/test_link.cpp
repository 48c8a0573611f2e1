// test_link.cpp: the link's hash (web/state/link_state.cpp): round trips through the app state, every
// bad parameter named in the error, and the parent page's messages.
#include "link_state.hpp"
#include "text.hpp"

#include "import_state.hpp"
#include "colormaps.hpp"
#include "presets.hpp"
#include "docs_table.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>

using namespace attn;

namespace {

// A scene as the figure shows it: the link leaves out descriptions (only presets show theirs).
Scene figure_of(Scene s) {
    s.description.clear();
    return s;
}

// Every field of the state the link carries, for comparing two apps.
std::string shown(const AppState& st) {
    return encode_link(link_from_app(st)) + " | " + write_scene(figure_of(st.scene), false) + " | " + st.target_text +
           " | " + st.source_text + " | " + st.error;
}

AppState app_with(const std::string& preset) {
    AppState st;
    st.load_preset(preset);
    REQUIRE(st.error.empty());
    return st;
}

}  // namespace

TEST_CASE("base64url round trip over every length and byte") {
    std::mt19937 rng(5);
    for (int n = 0; n < 64; ++n) {
        std::string bytes;
        for (int i = 0; i < n; ++i) bytes += static_cast<char>(rng() & 0xff);
        std::string text = base64_encode(bytes, true);
        CHECK(text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == std::string::npos);
        auto back = base64url_decode(text);
        REQUIRE(back);
        CHECK(*back == bytes);
    }
    CHECK(base64url_decode("aGk=").value() == "hi");  // padding accepted
    CHECK(!base64url_decode("a"));                      // no 6-bit leftover is a byte
    CHECK(!base64url_decode("ab*d"));
    // RFC 4648 §10's vectors, padded (base64: data: URIs); the same bytes as base64url without it
    const char* vectors[][2] = {{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="},
                                {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
    for (const auto& [bytes, text] : vectors) {
        CHECK(base64_encode(bytes) == text);
        CHECK(base64_encode(bytes, true) == std::string(text).substr(0, std::string(text).find('=')));
    }
    CHECK(base64_encode("\xfb\xff") == "+/8=");
    CHECK(base64_encode("\xfb\xff", true) == "-_8");
}

TEST_CASE("the link of the design reads as written") {
    LinkResult r = decode_link("#v=1&preset=multi-head-rain&view=heatmap&head=2&token=q1&theme=light&panels=0");
    REQUIRE_MESSAGE(r.ok(), r.error);
    CHECK(r.link.preset == "multi-head-rain");
    CHECK(!r.link.scene);
    CHECK(r.link.view == View::Heatmap);
    CHECK(r.link.head == 1);
    CHECK(r.link.token == TokenRef{TokenRef::Query, 0});
    CHECK(r.link.theme == Theme::Light);
    CHECK(!r.link.panels);
    CHECK(!r.link.fps);  // off unless fps=1
    CHECK(encode_link(r.link) == "v=1&preset=multi-head-rain&view=heatmap&head=2&token=q1&theme=light&panels=0");
}

TEST_CASE("an unchanged preset is named, every view option round-trips through a second app") {
    AppState a = app_with("multi-head-rain");
    REQUIRE(a.figure.trace().heads >= 2);
    a.view = View::Steps;
    a.steps.head = 1;
    a.heatmap.head = 1;
    a.pinned = {TokenRef::Key, 2};
    a.theme = Theme::Light;
    a.theme_auto = true;
    a.text_scale = 1.25f;
    a.lang = Lang::Zh;
    a.show_panels = false;
    a.show_frame_time = true;
    a.lines.head_visible[0] = false;
    a.lines.threshold = 0.125f;
    a.lines.top_k = 2;
    a.heatmap.colormap = 2;
    a.heatmap.values = HeatValues::Scores;
    a.heatmap.show_numbers = false;
    a.heatmap.log_scale = true;
    const std::string hash = encode_link(link_from_app(a));
    MESSAGE(hash);
    CHECK(hash.find("preset=multi-head-rain") != std::string::npos);
    CHECK(hash.find("scene=") == std::string::npos);

    AppState b = app_with("i-am-good");
    REQUIRE(open_link(b, "#" + hash));
    CHECK(shown(b) == shown(a));
    CHECK(b.showing_preset());
    CHECK(b.steps.head == 1);
    CHECK(b.pinned == a.pinned);
    CHECK(b.lines.head_visible == a.lines.head_visible);
    CHECK(b.lines.threshold == doctest::Approx(0.125f));
    CHECK(b.heatmap.log_scale);
    CHECK(hash.find("log=1") != std::string::npos);
    CHECK(b.heatmap.colormap == 2);
    CHECK(!b.show_panels);
    CHECK(b.show_frame_time);
    CHECK(hash.find("panels=0&fps=1") != std::string::npos);
    CHECK(b.lines.top_k == 2);
    CHECK(b.theme_auto);
    CHECK(b.text_scale == 1.25f);
    CHECK(hash.find("theme=auto&size=1.25") != std::string::npos);
}

TEST_CASE("a typed sentence travels as the scene itself") {
    AppState a = app_with("i-am-good");
    a.target_text = "the cat sat on the mat";
    a.apply();
    REQUIRE(a.error.empty());
    a.view = View::Heatmap;
    a.pinned = {TokenRef::Query, 3};
    const std::string hash = encode_link(link_from_app(a));
    MESSAGE(hash.size() << " characters: " << hash.substr(0, 60) << "…");
    CHECK(hash.find("&scene=") != std::string::npos);
    CHECK(hash.find("preset=") == std::string::npos);

    AppState b = app_with("five-tokens");
    REQUIRE(open_link(b, hash));
    CHECK(b.figure.trace().queries == std::vector<std::string>{"the", "cat", "sat", "on", "the", "mat"});
    CHECK(b.target_text == a.target_text);
    CHECK(b.scene == figure_of(a.scene));
    CHECK(shown(b) == shown(a));
    CHECK(b.preset_name == "i-am-good");  // a changed preset keeps its name
    CHECK(!b.showing_preset());
}

TEST_CASE("custom scenes round-trip: cross with a seed, explicit weights, a mask matrix, Chinese tokens") {
    const char* scenes[] = {
        R"({"name":"mine","kind":"cross","tokens":["我","爱","你"],"source_tokens":["I","love","you","!"],
            "d_model":4,"heads":2,"weights":{"seed":11},"scale":2.5,"positional":"sinusoidal"})",
        R"({"kind":"self","tokens":["a","b"],"embeddings":[[0.1,-2.25],[3e-5,1e5]],
            "weights":{"w_q":[[1,2],[3,4]],"w_k":[[0,1],[1,0]],"w_v":[[1,0],[0,1]],"w_o":[[2,0],[0,2]],"b_q":[0.5,-0.5]},
            "mask":[[1,0],[1,1]],"scale":"none"})",
    };
    for (const char* json : scenes) {
        AppState a;
        a.scene_json = json;
        a.apply_scene_json();
        REQUIRE_MESSAGE(a.error.empty(), a.error);
        a.view = View::Steps;
        const std::string hash = encode_link(link_from_app(a));
        AppState b = app_with("i-am-good");
        REQUIRE(open_link(b, hash));
        CHECK(b.scene == figure_of(a.scene));
        CHECK(shown(b) == shown(a));
        CHECK(b.figure.trace().attention.output.isApprox(a.figure.trace().attention.output));
    }
}

TEST_CASE("every bad link names its parameter, and the figure stays") {
    const std::string bad_json = base64_encode("{\"kind\":\"self\",", true);
    const std::string bad_heads = base64_encode(R"({"kind":"self","tokens":["a","b"],"d_model":3,"heads":2})", true);
    const std::string bad_tokens = base64_encode(R"({"kind":"self","tokens":7})", true);
    const std::string good_scene = base64_encode(R"({"kind":"self","tokens":["a","b"]})", true);
    struct Case {
        std::string hash, param;
    };
    const Case cases[] = {
        {"preset=i-am-good", "v"},
        {"v=2&preset=i-am-good", "v"},
        {"view=lines&v=1", "v"},
        {"v=1&preset=nope", "preset"},
        {"v=1&view=pie", "view"},
        {"v=1&view=", "view"},
        {"v=1&head=0", "head"},
        {"v=1&head=2", "head"},  // i-am-good has one head
        {"v=1&head=two", "head"},
        {"v=1&head=mean&view=steps", "head"},
        {"v=1&token=q4", "token"},
        {"v=1&token=k0", "token"},
        {"v=1&token=x1", "token"},
        {"v=1&token=q", "token"},
        {"v=1&theme=pink", "theme"},
        {"v=1&size=3", "size"},
        {"v=1&size=big", "size"},
        {"v=1&lang=fr", "lang"},
        {"v=1&panels=yes", "panels"},
        {"v=1&fps=yes", "fps"},
        {"v=1&lineheads=0", "lineheads"},
        {"v=1&lineheads=1,,2", "lineheads"},
        {"v=1&lineheads=2", "lineheads"},
        {"v=1&threshold=1.5", "threshold"},
        {"v=1&threshold=nan", "threshold"},
        {"v=1&topk=-1", "topk"},
        {"v=1&cmap=rainbow", "cmap"},
        {"v=1&values=logits", "values"},
        {"v=1&numbers=2", "numbers"},
        {"v=1&log=yes", "log"},
        {"v=1&colour=red", "colour"},
        {"v=1&view=lines&view=heatmap", "view"},
        {"v=1&head", "head"},
        {"v=1&view=%zz", "view"},
        {"v=1&scene=not*base64", "scene"},
        {"v=1&scene=" + bad_json, "scene"},
        {"v=1&scene=" + bad_heads, "scene.heads"},
        {"v=1&scene=" + bad_tokens, "scene.tokens"},
        {"v=1&preset=i-am-good&scene=" + good_scene, "scene"},
        {"v=1&scene=" + good_scene + "&token=q3", "token"},
        {"v=1&" + std::string(kMaxLinkChars, 'x'), "link"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.hash.substr(0, 80));
        LinkResult r;
        CHECK_NOTHROW(r = decode_link(c.hash));
        CHECK(!r.ok());
        CHECK(r.param == c.param);
        // One line that starts with the parameter (scene errors start with "scene").
        CHECK(r.error.rfind(c.param.substr(0, c.param.find('.')), 0) == 0);
        CHECK(r.error.find('\n') == std::string::npos);
        MESSAGE(r.error.substr(0, 160));

        AppState st = app_with("wo-ai-ni");
        st.view = View::Heatmap;
        const std::string before = write_scene(st.scene, false);
        CHECK(!open_link(st, c.hash));
        CHECK(st.error.rfind("link: ", 0) == 0);
        CHECK(write_scene(st.scene, false) == before);
        CHECK(st.view == View::Heatmap);
        CHECK(st.showing_preset());  // the scene box names the scene still shown, not "(custom scene)"
    }
    // An old link's tile= (it counted steps) opens the same step, written back as tile_step=; not both.
    const LinkResult old = decode_link("v=1&preset=masked-apple&view=steps&tiles=2x2&tile=6");
    REQUIRE(old.ok());
    CHECK(old.link.tile_step == 5);
    CHECK(encode_link(old.link).find("tile_step=6") != std::string::npos);
    CHECK(decode_link("v=1&tile=6&tile_step=6").param == "tile_step");
    // An unknown name is answered with the names there are, the live scenes' among them.
    CHECK(decode_link("v=1&preset=nope").error.find("i-am-good, ") != std::string::npos);
    CHECK(decode_link("v=1&preset=nope").error.find(", induction-circuit, ") != std::string::npos);
}

TEST_CASE("random bytes never throw past decode_link") {
    std::mt19937 rng(42);
    const std::string alphabet = "v=1&%#_-abcdefghijklmnopqrstuvwxyz0123456789,.~\xe4\xbd\xa0";
    int decoded = 0;
    for (int n = 0; n < 3000; ++n) {
        std::string s = n % 2 ? "v=1&" : "";
        const int len = static_cast<int>(rng() % 40);
        for (int i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
        LinkResult r;
        CHECK_NOTHROW(r = decode_link(s));
        if (r.ok()) ++decoded;
        else CHECK(!r.param.empty());
    }
    MESSAGE(decoded << " of 3000 random hashes were valid links");
}

TEST_CASE("an empty hash is no link; trailing & and escapes are read") {
    CHECK(!decode_link("").ok());
    LinkResult r = decode_link("#v=1&preset=%69-am-good&view=heatmap&");
    REQUIRE_MESSAGE(r.ok(), r.error);
    CHECK(r.link.preset == "i-am-good");
}

TEST_CASE("the embed snippet is a plain iframe to the figure-only link") {
    AppState st = app_with("five-tokens");
    st.view = View::Heatmap;
    std::string snippet = embed_snippet("https://example.org/attnviz/index.html", link_from_app(st), {720, 450, false});
    MESSAGE(snippet);
    CHECK(snippet.rfind("<iframe src=\"https://example.org/attnviz/index.html#v=1&amp;preset=five-tokens&amp;view=heatmap", 0) == 0);
    CHECK(snippet.find("panels=0") != std::string::npos);
    CHECK(snippet.find("width=\"720\" height=\"450\"") != std::string::npos);
    CHECK(snippet.find("</iframe>") != std::string::npos);
    CHECK(snippet.find('<', 1) == snippet.find("</iframe>"));
}

TEST_CASE("messages: set-scene, set-view, get-state; junk ignored, bad input answered by name") {
    using nlohmann::json;
    AppState st = app_with("i-am-good");
    auto send = [&](const json& m) {
        std::string reply = handle_message(st, m.dump());
        return reply.empty() ? json() : json::parse(reply);
    };

    // Not for us: no reply, nothing changes.
    const std::string before = shown(st);
    for (const char* junk : {"", "nonsense", "42", "[1,2]", "null", R"({"type":7})", R"({"kind":"attnviz:get-state"})",
                             R"({"type":"attnviz:explode"})", R"({"type":"set-scene","scene":{}})"})
        CHECK(handle_message(st, junk).empty());
    CHECK(shown(st) == before);

    json r = send({{"type", "attnviz:set-scene"}, {"id", 7}, {"scene", {{"kind", "masked"}, {"tokens", "the cat sat down"}}}});
    CHECK(r["type"] == "attnviz:ok");
    CHECK(r["id"] == 7);
    CHECK(st.figure.trace().kind == AttentionKind::Masked);
    CHECK(st.figure.trace().queries.size() == 4);

    r = send({{"type", "attnviz:set-view"}, {"view", "heatmap"}, {"token", "q2"}, {"theme", "light"}, {"panels", false}});
    CHECK(r["type"] == "attnviz:ok");
    CHECK(st.view == View::Heatmap);
    CHECK(st.pinned == TokenRef{TokenRef::Query, 1});
    CHECK(!st.show_panels);

    r = send({{"type", "attnviz:get-state"}, {"id", "a"}});
    CHECK(r["type"] == "attnviz:state");
    CHECK(r["id"] == "a");
    CHECK(r["state"]["view"] == "heatmap");
    CHECK(r["state"]["token"] == "q2");
    CHECK(r["state"]["theme"] == "light");
    CHECK(r["state"]["panels"] == false);
    CHECK(r["state"]["scene"]["kind"] == "masked");
    CHECK(decode_link(r["hash"].get<std::string>()).ok());

    // Bad input: an error naming the field; the figure stays.
    const std::string kept = shown(st);
    struct Bad {
        json message;
        std::string field;
    };
    const Bad bad[] = {
        {{{"type", "attnviz:set-scene"}, {"scene", {{"kind", "self"}, {"tokens", 7}}}}, "scene.tokens"},
        {{{"type", "attnviz:set-scene"}, {"scene", {{"kind", "sideways"}, {"tokens", "a b"}}}}, "scene.kind"},
        {{{"type", "attnviz:set-scene"}, {"scene", "{not json"}}, "scene"},
        {{{"type", "attnviz:set-scene"}, {"scene", 3}}, "scene"},
        {{{"type", "attnviz:set-scene"}}, "scene"},
        {{{"type", "attnviz:set-scene"}, {"preset", "nope"}}, "preset"},
        {{{"type", "attnviz:set-scene"}, {"scene", {{"tokens", "a"}}}, {"colour", 1}}, "colour"},
        {{{"type", "attnviz:set-view"}, {"view", "pie"}}, "view"},
        {{{"type", "attnviz:set-view"}, {"view", 1}}, "view"},
        {{{"type", "attnviz:set-view"}, {"head", 3}}, "head"},
        {{{"type", "attnviz:set-view"}, {"head", 1.5}}, "head"},
        {{{"type", "attnviz:set-view"}, {"token", "q9"}}, "token"},
        {{{"type", "attnviz:set-view"}, {"panels", "maybe"}}, "panels"},
        {{{"type", "attnviz:set-view"}, {"zoom", 2}}, "zoom"},
        {{{"type", "attnviz:set-view"}}, "view"},
    };
    for (const Bad& b : bad) {
        CAPTURE(b.message.dump());
        json e = send(b.message);
        CHECK(e["type"] == "attnviz:error");
        CHECK(e["field"] == b.field);
        CHECK(e["message"].get<std::string>().find(b.field.substr(0, b.field.find('.'))) == 0);
        CHECK(shown(st) == kept);
    }

    r = send({{"type", "attnviz:set-scene"}, {"preset", "multi-head-rain"}});
    CHECK(r["type"] == "attnviz:ok");
    CHECK(st.showing_preset());
    CHECK(st.view == View::Heatmap);  // the view stays
    r = send({{"type", "attnviz:set-view"}, {"head", 2}, {"token", nullptr}});
    CHECK(r["type"] == "attnviz:ok");
    CHECK(st.heatmap.head == 1);
    CHECK(!st.pinned.valid());
}

TEST_CASE("every preset shows its own tokens and its link names it") {
    for (const Scene& preset : presets()) {
        CAPTURE(preset.name);
        AppState st = app_with(preset.name);
        CHECK(st.scene.tokens == preset.tokens);  // masked-apple keeps 苹果 as one token
        CHECK(st.scene.source_tokens == preset.source_tokens);
        CHECK(st.showing_preset());
        CHECK(encode_link(link_from_app(st)).find("preset=" + preset.name) != std::string::npos);
        // Editing the text re-tokenizes it.
        st.target_text += " x";
        st.apply();
        CHECK(st.scene.tokens.back() == "x");
    }
}

TEST_CASE("an imported map travels as map=STACK:LAYER:HEAD and is shown once its file is in") {
    // Two layers × two heads over three tokens; every map a different one-hot pattern.
    std::string attention = "[";
    for (int layer = 0; layer < 2; ++layer) {
        attention += layer ? ",[" : "[";
        for (int head = 0; head < 2; ++head) {
            attention += head ? ",[" : "[";
            for (int q = 0; q < 3; ++q) {
                const int hot = (q + layer + 2 * head) % 3;
                attention += std::string(q ? "," : "") + "[" + (hot == 0 ? "1,0,0" : hot == 1 ? "0,1,0" : "0,0,1") + "]";
            }
            attention += "]";
        }
        attention += "]";
    }
    attention += "]";
    const std::string file = R"({"tokens": ["a", "b", "c"], "attention": )" + attention + "}";

    AppState a = app_with("i-am-good");
    REQUIRE(import_attention(a, file, "m.json"));
    select_import_map(a, 1, 0);
    a.view = View::Heatmap;
    const std::string hash = encode_link(link_from_app(a));
    MESSAGE(hash);
    CHECK(hash.find("map=attention%3A2%3A1") != std::string::npos);

    // The link opens before the page's ?import= file arrives: the choice waits for it.
    AppState b = app_with("i-am-good");
    REQUIRE(open_link(b, "#" + hash));
    CHECK(b.view != View::Model);
    REQUIRE(import_attention(b, file, "m.json"));
    CHECK(b.imported.import_layer == 1);
    CHECK(b.imported.import_head == 0);
    CHECK(b.view == View::Heatmap);
    CHECK(b.figure.trace().attention.heads[0].weights == a.figure.trace().attention.heads[0].weights);

    // A map the file does not have: the first map, and an error naming the parameter.
    AppState c = app_with("i-am-good");
    REQUIRE(open_link(c, "#v=1&preset=i-am-good&view=model&map=attention:3:1"));
    REQUIRE(import_attention(c, file, "m.json"));
    CHECK(c.imported.import_layer == 0);
    CHECK(c.error.rfind("link: map:", 0) == 0);
    CHECK(!decode_link("#v=1&map=attention:0:1").ok());
    CHECK(!decode_link("#v=1&map=attention").ok());
}

// [The parameter table] ----------------------------------------------------------------------
// link_parameters() is the one list of the link's parameters; these check each row by itself,
// and docs/LINKS.md's table against it.

namespace {

// Per parameter: values that read and write back as themselves, and one bad value. A new row
// of link_parameters() needs an entry here. Scene-dependent values fit multi-head-rain
// (3 heads, 27 tokens), which the hashes below carry.
struct ParamSamples {
    std::vector<std::string> good;
    std::string bad;
};

std::map<std::string, ParamSamples> param_samples() {
    const std::string scene = base64_encode(write_scene(read_scene(R"({"kind":"self","tokens":["a","b"]})"), false), true);
    std::vector<std::string> cmaps;
    for (const Colormap& m : colormaps()) cmaps.emplace_back(m.name);
    return {
        {"v", {{"1"}, "2"}},
        {"preset", {{"multi-head-rain", "i-am-good"}, "nope"}},
        {"scene", {{scene}, "not*base64"}},
        {"view", {{"lines", "heatmap", "steps", "model", "explain", "compare", "qk"}, "pie"}},
        {"head", {{"1", "3", "mean"}, "0"}},
        {"token", {{"q1", "k27", "none"}, "x1"}},
        {"theme", {{"dark", "light", "auto"}, "pink"}},
        {"size", {{"1", "0.75", "1.25", "2"}, "3"}},
        {"text", {{"rain", "1.25"}, std::string(5000, 'a')}},
        {"source", {{"rain"}, std::string(5000, 'a')}},
        {"compare", {{"dog", "1.25"}, std::string(5000, 'a')}},
        {"chat", {{R"([{"role":"user","content":"Hi"}])", R"([{"role":"system","content":"Be brief."},{"role":"user","content":"猫?"}])"},
                  R"([{"role":"user","content":3}])"}},
        {"model", {{"tiny-lm", "tiny-translator"}, "gpt2"}},
        {"picture", {{"example-7.png", "example-0.png"}, "photo.jpg"}},
        {"hf", {{"HuggingFaceTB/SmolLM2-135M", "Qwen/Qwen2.5-0.5B@7ae557604adf67be50417f59c2c2f167def9a775", "gpt2",
                 "bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M"}, "a/b/c"}},
        {"server", {{".", "http://127.0.0.1:8765", "https://gpu.example:8443"}, "ftp://x"}},
        {"key", {{"pXb3_Q-9zT"}, "a b"}},
        {"translate", {{"1", "0"}, "yes"}},
        {"knockout", {{"2:3", "2:3,1:1", "cross_attention:2:1"}, "2-3"}},
        {"knockout_mode", {{"zero", "mean"}, "half"}},
        {"hide", {{"3", "1,5"}, "0"}},
        {"importance", {{"1", "0"}, "yes"}},
        {"attribution", {{"1", "0"}, "yes"}},
        {"lens", {{"1", "0"}, "yes"}},
        {"probs", {{"p", "surprisal", "0"}, "yes"}},
        {"target", {{" cat", "#42"}, std::string(300, 'a')}},
        {"contrast", {{" dog", "#7"}, std::string(300, 'a')}},
        {"corrupted", {{"the dog sat", "John gave Mary"}, std::string(5000, 'a')}},
        {"patching", {{"1", "0"}, "yes"}},
        {"generate", {{"0", "5", "64"}, "65"}},
        {"temperature", {{"0", "0.5", "1.25"}, "-1"}},
        {"top_k", {{"0", "40"}, "-3"}},
        {"seed", {{"0", "7", "123456"}, "x"}},
        {"step", {{"0", "3"}, "-1"}},
        {"lang", {{"en", "zh"}, "fr"}},
        {"panels", {{"1", "0"}, "yes"}},
        {"fps", {{"1", "0"}, "yes"}},
        {"lineheads", {{"1,3", "2"}, "0"}},
        {"threshold", {{"0", "0.125", "1"}, "1.5"}},
        {"map", {{"attention:2:1", "decoder_attention:2:5"}, "attention"}},
        {"topk", {{"0", "3", "64"}, "-1"}},
        {"cmap", {cmaps, "rainbow"}},
        {"values", {{"weights", "scores"}, "logits"}},
        {"numbers", {{"1", "0"}, "2"}},
        {"log", {{"1", "0"}, "yes"}},
        {"sink", {{"hidden", "shown"}, "gone"}},
        {"rows", {{"weight", "max"}, "row"}},
        {"tiles", {{"off", "auto", "2x2", "4x8"}, "2by2"}},
        {"tile_step", {{"1", "5"}, "0"}},
        {"qk", {{"pca", "tsne", "heads"}, "umap"}},
    };
}

// A hash that gives one parameter `value` over multi-head-rain (v and the scene as needed).
std::string hash_with(const std::string& name, const std::string& value) {
    if (name == "v") return "v=" + value + "&preset=multi-head-rain";
    if (name == "preset" || name == "scene") return "v=1&" + name + "=" + value;
    return "v=1&preset=multi-head-rain&" + name + "=" + value;
}

// The value as a hash writes it ("attention:2:1" -> "attention%3A2%3A1", " cat" -> "%20cat").
std::string escaped(const std::string& value) {  // every byte but A–Z a–z 0–9 - _ . ~ , as %XX
    std::string out;
    for (const unsigned char c : value) {
        if (std::isalnum(c) || std::strchr("-_.~,", c)) {
            out += static_cast<char>(c);
        } else {
            char hex[4];
            std::snprintf(hex, sizeof hex, "%%%02X", c);
            out += hex;
        }
    }
    return out;
}

bool has_param(const std::string& hash, const std::string& name) {
    return ("&" + hash).find("&" + name + "=") != std::string::npos;
}

}  // namespace

TEST_CASE("every link parameter: samples read and write back, defaults are left out, a bad value is named") {
    const auto samples = param_samples();
    REQUIRE(link_parameters().size() == samples.size());
    for (const LinkParam& p : link_parameters()) {
        const std::string name = p.name;
        CAPTURE(name);
        REQUIRE_MESSAGE(samples.count(name), "no samples for the parameter " << name);
        CHECK(find_link_parameter(name) == &p);
        const ParamSamples& s = samples.at(name);
        if (name == "cmap")  // docs/LINKS.md lists every colormap
            for (const Colormap& m : colormaps()) {
                std::string quoted = "`";
                quoted.append(m.name).push_back('`');
                CHECK(std::string(p.values).find(quoted) != std::string::npos);
            }

        for (const std::string& x : s.good) {
            CAPTURE(x);
            // format(parse(x)) == x, by the row itself and through a whole link.
            LinkState l;
            CHECK(p.parse(l, x).empty());
            CHECK(p.format(l) == x);
            LinkResult r = decode_link(hash_with(name, x));
            REQUIRE_MESSAGE(r.ok(), r.error);
            CHECK(p.format(r.link) == x);
            const std::string hash = encode_link(r.link);
            if (p.always_written || x != p.default_value) CHECK(hash.find(name + "=" + escaped(x)) != std::string::npos);
            else CHECK(!has_param(hash, name));  // the default is left out
            LinkResult back = decode_link(hash);
            REQUIRE_MESSAGE(back.ok(), back.error);
            CHECK(encode_link(back.link) == hash);
        }

        // A link that does not give the parameter has its default, and writes it only if it must.
        CHECK(p.format(LinkState{}) == (name == "v" ? std::to_string(kLinkVersion) : std::string(p.default_value)));
        CHECK(has_param(encode_link(LinkState{}), name) == p.always_written);
        if (*p.default_value) {
            LinkState l;
            CHECK(p.parse(l, p.default_value).empty());
            CHECK(encode_link(l) == encode_link(LinkState{}));
        } else {
            CHECK((*p.absent != '\0') >= p.always_written);  // docs/LINKS.md says what a missing one means
        }

        // A bad value: the error names the parameter and the figure is the default one.
        LinkResult r = decode_link(hash_with(name, s.bad));
        CHECK(!r.ok());
        CHECK(r.param == name);
        CHECK(r.error.rfind(name + ": ", 0) == 0);
        CHECK(encode_link(r.link) == encode_link(LinkState{}));
    }
}

TEST_CASE("set-view takes and get-state reports the parameters with a message type, as the link does") {
    using nlohmann::json;
    const auto samples = param_samples();
    int fields = 0;
    for (const LinkParam& p : link_parameters()) {
        if (p.message == LinkMessage::None) continue;
        ++fields;
        const std::string name = p.name;
        CAPTURE(name);
        for (const std::string& x : samples.at(name).good) {
            CAPTURE(x);
            if (x == "model") continue;  // the model view needs an imported file
            AppState st = app_with("multi-head-rain");
            st.view = View::Heatmap;
            json reply = json::parse(handle_message(st, json{{"type", "attnviz:set-view"}, {name, x}}.dump()));
            REQUIRE_MESSAGE(reply["type"] == "attnviz:ok", reply.dump());
            const std::string hash = encode_link(link_from_app(st));
            CHECK(p.format(decode_link(hash).link) == x);
            // get-state's value, sent back with set-view, sets the same.
            json state = json::parse(handle_message(st, R"({"type":"attnviz:get-state"})"));
            CHECK(state["hash"] == hash);
            const json value = state["state"][name];
            switch (p.message) {
                case LinkMessage::Integer: CHECK(value.is_number() == (x != "mean")); break;
                case LinkMessage::Number: CHECK(value.is_number()); break;
                case LinkMessage::Boolean: CHECK(value.is_boolean()); break;
                case LinkMessage::TextOrNull: CHECK(value.is_null() == (x == p.default_value)); break;
                default: CHECK(value == x);
            }
            AppState other = app_with("multi-head-rain");
            other.view = View::Heatmap;
            reply = json::parse(handle_message(other, json{{"type", "attnviz:set-view"}, {name, value}}.dump()));
            REQUIRE_MESSAGE(reply["type"] == "attnviz:ok", reply.dump());
            CHECK(encode_link(link_from_app(other)) == hash);
        }
        AppState st = app_with("multi-head-rain");
        json reply = json::parse(handle_message(st, json{{"type", "attnviz:set-view"}, {name, samples.at(name).bad}}.dump()));
        CHECK(reply["field"] == name);
    }
    CHECK(fields == 27);
    AppState st = app_with("multi-head-rain");
    json reply = json::parse(handle_message(st, R"({"type":"attnviz:set-view","lineheads":"1"})"));
    CHECK(reply["message"] == "lineheads: unknown field (set-view takes view, head, tiles, tile_step, qk, token, theme, size, lang, panels, compare, knockout, knockout_mode, hide, importance, attribution, lens, probs, target, contrast, corrupted, patching, generate, temperature, top_k, seed, step)");
}

TEST_CASE("LINKS.md's parameter table is link_parameters_markdown()") {
    for (const LinkParam& p : link_parameters())
        for (const char* cell : {p.what, p.values, p.absent})
            CHECK(std::string(cell).find_first_of("|\n") == std::string::npos);  // one row, four cells
    test::check_docs_table("LINKS.md", "link-parameters", link_parameters_markdown(), "LINKS*");
}

TEST_CASE("EMBED.md's set-view message names the link parameters set-view takes") {
    const std::string page = test::read_docs_page(test::docs_path("EMBED.md"));
    const size_t set_view = page.find("| `{type: \"attnviz:set-view\"");
    REQUIRE_MESSAGE(set_view != std::string::npos, "docs/EMBED.md has no set-view row");
    const std::string row = page.substr(set_view, page.find('\n', set_view) - set_view);
    for (const LinkParam& p : link_parameters())
        CHECK_MESSAGE((row.find(std::string(p.name) + "?") != std::string::npos) == (p.message != LinkMessage::None), p.name);
}

TEST_CASE("a link scene cache writes the same links, and follows the scene as it changes") {
    LinkSceneCache cache;
    AppState a = app_with("i-am-good");
    for (const char* text : {"the cat sat", "the cat sat", "the dog sat", "我 爱 你", "the cat sat"}) {
        CAPTURE(text);
        a.target_text = text;
        a.apply();
        REQUIRE(a.error.empty());
        LinkState l = link_from_app(a);
        REQUIRE(l.scene);
        CHECK(encode_link(l, &cache) == encode_link(l));
        l.scene->description = "a description stays out of links";
        CHECK(encode_link(l, &cache) == encode_link(l));
        CHECK(embed_snippet("https://example.org/", l, {}, &cache) == embed_snippet("https://example.org/", l, {}));
    }
    LinkState preset = link_from_app(app_with("wo-ai-ni"));  // no scene: the cache is not asked
    CHECK(encode_link(preset, &cache) == encode_link(preset));
}

TEST_CASE("a link's experiment reaches the live model's session, and the app's goes back into the link") {
    AppState st = app_with("i-am-good");
    REQUIRE(open_link(st, "v=1&preset=i-am-good&model=tiny-lm&text=the%20cat&knockout=2%3A3,1%3A1&knockout_mode=mean&hide=1,4&importance=1"));
    CHECK(st.model.experiment.knockout == "2:3,1:1");
    CHECK(st.model.experiment.ablation == Ablation::Mean);
    CHECK(st.model.experiment.hidden == std::vector<int>{0, 3});
    CHECK(st.model.experiment.importance);
    const std::string hash = encode_link(link_from_app(st));
    CHECK(hash.find("knockout=2%3A3,1%3A1&knockout_mode=mean&hide=1,4&importance=1") != std::string::npos);
}

TEST_CASE("a link with a conversation alone names a live model: its view waits for the model, and it carries no scene") {
    AppState st = app_with("i-am-good");
    const std::string chat = "%5B%7B%22role%22%3A%22user%22,%22content%22%3A%22Hi%22%7D%5D";  // [{"role":"user","content":"Hi"}]
    REQUIRE(open_link(st, "v=1&view=heatmap&chat=" + chat));
    CHECK(st.link_view_waits);
    CHECK(st.model.chat.on);
    REQUIRE(st.model.chat.turns.size() == 1);
    CHECK(st.model.chat.turns[0].content == "Hi");
    LinkResult r = decode_link("v=1&view=heatmap&chat=" + chat);
    REQUIRE(r.ok());
    CHECK(r.link.names_model());
    CHECK(encode_link(r.link).find("preset=") == std::string::npos);
}
