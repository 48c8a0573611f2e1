// link_state.cpp: the link's hash and the parent page's messages (link_state.hpp).
//
// [SECTION] Names and numbers
// [SECTION] Parameters
// [SECTION] Hash
// [SECTION] App
// [SECTION] Messages
#include "link_state.hpp"

#include "colormaps.hpp"
#include "presets.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <set>

namespace attn {
namespace {

// [SECTION] Names and numbers ----------------------------------------------------------------

constexpr const char* kDefaultPreset = "i-am-good";

const char* theme_name(Theme t) { return t == Theme::Light ? "light" : "dark"; }
const char* lang_name(Lang l) { return l == Lang::Zh ? "zh" : "en"; }

// A whole decimal number in [lo, hi], nothing else.
std::optional<int> parse_int(std::string_view s, int lo, int hi) {
    int v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
    return v;
}

std::optional<float> parse_float(std::string_view s) {
    if (s.empty() || s.size() > 32) return std::nullopt;
    std::string text(s);
    char* end = nullptr;
    float v = std::strtof(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

std::string format_float(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

bool unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.' || c == '~' || c == ',';
}

std::string percent_encode(std::string_view s) {
    constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if (unreserved(c)) out += static_cast<char>(c);
        else out += {'%', hex[c >> 4], hex[c & 15]};
    }
    return out;
}

std::optional<std::string> percent_decode(std::string_view s) {
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size()) return std::nullopt;
        int hi = nibble(s[i + 1]), lo = nibble(s[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

// Shows a parameter's value in an error line: quoted, cut short, control bytes escaped.
std::string shown_value(std::string_view v) {
    std::string out = "\"";
    for (size_t i = 0; i < v.size() && i < 40; ++i)
        out += static_cast<unsigned char>(v[i]) < 0x20 ? '?' : v[i];
    if (v.size() > 40) out += "…";
    return out + "\"";
}

// "scene.heads" for a field of the scene; "scene" for JSON that does not parse (where = line:column).
std::string scene_param(const SceneError& e) {
    const std::string& w = e.where();
    return w.empty() || (w[0] >= '0' && w[0] <= '9') ? "scene" : "scene." + w;
}

const Scene& link_scene(const LinkState& link) {
    if (link.scene) return *link.scene;
    return *find_preset(link.preset.empty() ? kDefaultPreset : link.preset);
}

// [SECTION] Parameters -----------------------------------------------------------------------
// One parameter of the hash or of a set-view message, given as text. Returns "" or what was
// wrong (without the parameter's name). Ranges that depend on the scene are checked later.

std::string set_param(LinkState& l, std::string_view key, std::string_view value) {
    if (key == "preset") {
        if (!find_preset(value)) return "no preset named " + shown_value(value);
        l.preset = value;
    } else if (key == "scene") {
        auto json = base64url_decode(value);
        if (!json) return "expected base64url (A–Z a–z 0–9 - _) of the scene's JSON";
        // read_scene's own errors are named by the caller ("scene.<field>").
        Scene s = read_scene(*json);
        s.description.clear();
        l.scene = std::move(s);
    } else if (key == "view") {
        if (value == "lines") l.view = View::Lines;
        else if (value == "heatmap") l.view = View::Heatmap;
        else if (value == "steps") l.view = View::Steps;
        else if (value == "model") l.view = View::Model;
        else return "expected lines, heatmap, steps or model, got " + shown_value(value);
    } else if (key == "map") {
        if (!parse_import_map(value)) return "expected STACK:LAYER:HEAD (decoder_attention:2:5), got " + shown_value(value);
        l.import_map = value;
    } else if (key == "head") {
        if (value == "mean") l.head = -1;
        else if (auto h = parse_int(value, 1, kMaxHeads)) l.head = *h - 1;
        else return "expected a head number from 1 or \"mean\", got " + shown_value(value);
    } else if (key == "token") {
        auto i = value.size() > 1 ? parse_int(value.substr(1), 1, kMaxTokens) : std::nullopt;
        if (value == "none") l.token = {};
        else if (i && (value[0] == 'q' || value[0] == 'k'))
            l.token = {value[0] == 'q' ? TokenRef::Query : TokenRef::Key, *i - 1};
        else return "expected q or k and a token number from 1 (q1, k3), got " + shown_value(value);
    } else if (key == "theme") {
        l.theme_auto = value == "auto";
        if (value == "dark") l.theme = Theme::Dark;
        else if (value == "light") l.theme = Theme::Light;
        else if (!l.theme_auto) return "expected dark, light or auto, got " + shown_value(value);
    } else if (key == "text") {
        auto t = parse_float(value);
        if (!t || *t < kMinTextScale || *t > kMaxTextScale) return "expected a text size from 0.75 to 2, got " + shown_value(value);
        l.text_scale = *t;
    } else if (key == "lang") {
        if (value == "en") l.lang = Lang::En;
        else if (value == "zh") l.lang = Lang::Zh;
        else return "expected en or zh, got " + shown_value(value);
    } else if (key == "panels") {
        if (value == "1") l.panels = true;
        else if (value == "0") l.panels = false;
        else return "expected 1 (controls shown) or 0 (figure only), got " + shown_value(value);
    } else if (key == "fps") {
        if (value == "1") l.fps = true;
        else if (value == "0") l.fps = false;
        else return "expected 1 (frame time shown) or 0, got " + shown_value(value);
    } else if (key == "lineheads") {
        // Heads shown in the Lines view, 1-based, comma separated; checked against the scene later.
        l.head_visible.clear();
        size_t start = 0;
        while (start <= value.size()) {
            size_t comma = std::min(value.find(',', start), value.size());
            auto h = parse_int(value.substr(start, comma - start), 1, kMaxHeads);
            if (!h) return "expected head numbers from 1 separated by commas (1,3), got " + shown_value(value);
            if (l.head_visible.size() < static_cast<size_t>(*h)) l.head_visible.resize(static_cast<size_t>(*h), false);
            l.head_visible[static_cast<size_t>(*h - 1)] = true;
            start = comma + 1;
        }
    } else if (key == "threshold") {
        auto t = parse_float(value);
        if (!t || *t < 0.0f || *t > 1.0f) return "expected a weight from 0 to 1, got " + shown_value(value);
        l.threshold = *t;
    } else if (key == "topk") {
        auto k = parse_int(value, 0, kMaxTokens);
        if (!k) return "expected a whole number from 0 (auto: all lines up to 64 keys, 3 per query past it), got " + shown_value(value);
        l.top_k = *k;
    } else if (key == "cmap") {
        auto maps = colormaps();
        auto it = std::find_if(maps.begin(), maps.end(), [&](const Colormap& m) { return m.name == value; });
        if (it == maps.end()) {
            std::string names;
            for (const Colormap& m : maps) names += (names.empty() ? "" : ", ") + std::string(m.name);
            return "expected one of " + names + ", got " + shown_value(value);
        }
        l.colormap = static_cast<int>(it - maps.begin());
    } else if (key == "values") {
        if (value == "weights") l.values = HeatValues::Weights;
        else if (value == "scores") l.values = HeatValues::Scores;
        else return "expected weights or scores, got " + shown_value(value);
    } else if (key == "numbers" || key == "log") {
        bool& flag = key == "numbers" ? l.numbers : l.log;
        if (value == "1") flag = true;
        else if (value == "0") flag = false;
        else return "expected 1 or 0, got " + shown_value(value);
    } else {
        return "unknown parameter";
    }
    return "";
}

// Head and token against the link's scene. Returns {param, problem} or {"", ""}.
std::pair<std::string, std::string> check_ranges(const LinkState& l) {
    const Scene& s = link_scene(l);
    if (l.head >= s.heads)
        return {"head", "head " + std::to_string(l.head + 1) + " of a scene with " + std::to_string(s.heads) +
                            (s.heads == 1 ? " head" : " heads")};
    if (l.head < 0 && l.view == View::Steps) return {"head", "the Steps view shows one head, not the mean"};
    if (l.head_visible.size() > static_cast<size_t>(s.heads))
        return {"lineheads", "head " + std::to_string(l.head_visible.size()) + " of a scene with " + std::to_string(s.heads) +
                                 (s.heads == 1 ? " head" : " heads")};
    if (l.token.valid()) {
        const bool q = l.token.side == TokenRef::Query;
        const size_t n = q ? s.tokens.size() : s.key_tokens().size();
        if (static_cast<size_t>(l.token.index) >= n)
            return {"token", std::string(q ? "query " : "key ") + std::to_string(l.token.index + 1) + " of " +
                                 std::to_string(n) + (q ? " queries" : " keys")};
    }
    return {"", ""};
}

}  // namespace

// [SECTION] Hash -----------------------------------------------------------------------------

std::string base64url_encode(std::string_view bytes) {
    constexpr char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                     static_cast<unsigned char>(bytes[i + 2]);
        out += {k[n >> 18], k[(n >> 12) & 63], k[(n >> 6) & 63], k[n & 63]};
    }
    if (i + 1 == bytes.size()) {
        unsigned n = static_cast<unsigned char>(bytes[i]) << 16;
        out += {k[n >> 18], k[(n >> 12) & 63]};
    } else if (i + 2 == bytes.size()) {
        unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
        out += {k[n >> 18], k[(n >> 12) & 63], k[(n >> 6) & 63]};
    }
    return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
    while (!text.empty() && text.back() == '=') text.remove_suffix(1);
    if (text.size() % 4 == 1) return std::nullopt;
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '-' || c == '+') return 62;  // '+' and '/': standard base64 pasted by hand
        if (c == '_' || c == '/') return 63;
        return -1;
    };
    std::string out;
    out.reserve(text.size() * 3 / 4);
    unsigned acc = 0;
    int bits = 0;
    for (char c : text) {
        int v = value(c);
        if (v < 0) return std::nullopt;
        acc = (acc << 6) | static_cast<unsigned>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xff);
        }
    }
    return out;
}

const std::string& LinkSceneCache::text(const Scene& scene) {
    Scene s = scene;
    s.description.clear();  // the panel shows descriptions of presets only
    if (!scene_ || !(s == *scene_)) {
        text_ = base64url_encode(write_scene(s, false));
        scene_ = std::move(s);
    }
    return text_;
}

std::string encode_link(const LinkState& l, LinkSceneCache* cache) {
    std::string out = "v=" + std::to_string(kLinkVersion);
    if (l.scene) {
        LinkSceneCache once;
        out += "&scene=" + (cache ? *cache : once).text(*l.scene);
    } else {
        out += "&preset=" + percent_encode(l.preset.empty() ? kDefaultPreset : l.preset);
    }
    out += std::string("&view=") + view_name(l.view);
    if (l.head != 0) out += "&head=" + (l.head < 0 ? std::string("mean") : std::to_string(l.head + 1));
    if (l.token.valid()) out += (l.token.side == TokenRef::Query ? "&token=q" : "&token=k") + std::to_string(l.token.index + 1);
    if (l.theme_auto) out += "&theme=auto";
    else if (l.theme != Theme::Dark) out += std::string("&theme=") + theme_name(l.theme);
    if (l.text_scale != 1.0f) out += "&text=" + format_float(l.text_scale);
    if (l.lang != Lang::En) out += std::string("&lang=") + lang_name(l.lang);
    if (!l.panels) out += "&panels=0";
    if (l.fps) out += "&fps=1";
    if (std::find(l.head_visible.begin(), l.head_visible.end(), false) != l.head_visible.end()) {
        std::string heads;
        for (size_t h = 0; h < l.head_visible.size(); ++h)
            if (l.head_visible[h]) heads += (heads.empty() ? "" : ",") + std::to_string(h + 1);
        // No head shown at all has no 1-based list: show them all rather than write an empty value.
        if (!heads.empty()) out += "&lineheads=" + heads;
    }
    if (l.threshold > 0.0f) out += "&threshold=" + format_float(l.threshold);
    if (!l.import_map.empty()) out += "&map=" + percent_encode(l.import_map);
    if (l.top_k > 0) out += "&topk=" + std::to_string(l.top_k);
    if (l.colormap > 0 && l.colormap < static_cast<int>(colormaps().size()))
        out += "&cmap=" + std::string(colormaps()[static_cast<size_t>(l.colormap)].name);
    if (l.values == HeatValues::Scores) out += "&values=scores";
    if (!l.numbers) out += "&numbers=0";
    if (l.log) out += "&log=1";
    return out;
}

LinkResult decode_link(std::string_view hash) {
    LinkResult r;
    auto fail = [&](std::string param, const std::string& problem) {
        r.link = LinkState{};
        r.param = std::move(param);
        r.error = r.param + ": " + problem;
        return r;
    };
    if (!hash.empty() && hash.front() == '#') hash.remove_prefix(1);
    if (hash.size() > kMaxLinkChars)
        return fail("link", "longer than " + std::to_string(kMaxLinkChars >> 20) + " MB");
    std::set<std::string> seen;
    bool versioned = false;
    size_t start = 0;
    while (start < hash.size()) {
        size_t amp = std::min(hash.find('&', start), hash.size());
        std::string_view pair = hash.substr(start, amp - start);
        start = amp + 1;
        if (pair.empty()) continue;
        size_t eq = pair.find('=');
        auto key = percent_decode(pair.substr(0, eq));
        if (!key || eq == std::string_view::npos)
            return fail(key && !key->empty() ? *key : "link", "expected key=value pairs (v=1&preset=…), got " + shown_value(pair));
        auto value = percent_decode(pair.substr(eq + 1));
        if (key->empty()) return fail("link", "a parameter without a name: " + shown_value(pair));
        if (!value) return fail(*key, "bad %-escape in " + shown_value(pair.substr(eq + 1)));
        if (!seen.insert(*key).second) return fail(*key, "given twice");
        if (*key == "v") {
            if (*value != std::to_string(kLinkVersion))
                return fail("v", "this attnviz reads version " + std::to_string(kLinkVersion) + " links, got " + shown_value(*value));
            versioned = true;
            continue;
        }
        if (!versioned) return fail("v", "missing: a link starts with v=" + std::to_string(kLinkVersion));
        if (value->empty()) return fail(*key, "empty value");
        try {
            std::string problem = set_param(r.link, *key, *value);
            if (!problem.empty()) return fail(*key, problem);
        } catch (const SceneError& e) {
            fail(scene_param(e), "");
            r.error = std::string("scene: ") + e.what();  // what() already names the field
            return r;
        } catch (const std::exception& e) {
            return fail(*key, e.what());
        }
    }
    if (!versioned) return fail("v", "missing: a link starts with v=" + std::to_string(kLinkVersion));
    if (r.link.scene && !r.link.preset.empty()) return fail("scene", "give preset or scene, not both");
    auto [param, problem] = check_ranges(r.link);
    if (!param.empty()) return fail(param, problem);
    return r;
}

// [SECTION] App ------------------------------------------------------------------------------

LinkState link_from_app(const AppState& st) {
    LinkState l;
    if (st.showing_preset()) l.preset = st.preset_name;
    else l.scene = st.scene;
    l.view = st.view;
    l.head = st.view == View::Steps ? st.steps.head : st.heatmap.head;
    l.token = st.pinned;
    l.theme = st.theme;
    l.theme_auto = st.theme_auto;
    l.text_scale = st.text_scale;
    l.lang = st.lang;
    l.panels = st.show_panels;
    l.fps = st.show_frame_time;
    l.head_visible = st.lines.head_visible;
    l.threshold = st.lines.threshold;
    l.top_k = st.lines.top_k;
    l.colormap = st.heatmap.colormap;
    l.values = st.heatmap.values;
    l.numbers = st.heatmap.show_numbers;
    l.log = st.heatmap.log_scale;
    if (st.figure.has(Detail::Layers)) {
        const ImportView& im = st.imported;
        l.import_map = st.figure.stack(im.import_stack).name + ":" + std::to_string(im.import_layer + 1) + ":" + std::to_string(im.import_head + 1);
        // Heads and tokens of the map, not of the scene the link carries: the map says them.
        l.head = 0;
        l.token = {};
        l.head_visible.clear();
    }
    return l;
}

namespace {

// Everything but the scene.
void apply_view(AppState& st, const LinkState& l) {
    st.view = l.view;
    st.heatmap.head = l.head;
    st.steps.head = std::max(l.head, 0);
    st.pinned = l.token;
    st.theme = l.theme;
    st.theme_auto = l.theme_auto;
    st.text_scale = l.text_scale;
    st.lang = l.lang;
    st.show_panels = l.panels;
    st.show_frame_time = l.fps;
    const size_t heads = static_cast<size_t>(std::max(st.figure.trace().heads, 1));
    st.lines.head_visible.assign(heads, l.head_visible.empty());
    for (size_t h = 0; h < l.head_visible.size() && h < heads; ++h) st.lines.head_visible[h] = l.head_visible[h];
    st.lines.threshold = l.threshold;
    st.lines.top_k = l.top_k;
    st.heatmap.colormap = l.colormap;
    st.heatmap.values = l.values;
    st.heatmap.show_numbers = l.numbers;
    st.heatmap.log_scale = l.log;
    // An imported map waits for its file (import_state.cpp, apply_link_map); the model view
    // needs one.
    st.link_map = l.import_map;
    st.link_map_view = l.view;
    if (st.figure.has(Detail::Layers)) apply_link_map(st);
    else if (st.view == View::Model) st.view = View::Lines;
}

}  // namespace

void apply_link(AppState& st, const LinkState& l) {
    if (l.scene) {
        st.load_scene(*l.scene);
        // A changed preset keeps its name, as it did in the app that made the link.
        st.preset_name = find_preset(l.scene->name) ? l.scene->name : "";
    } else {
        st.load_preset(l.preset.empty() ? kDefaultPreset : l.preset);
    }
    st.scene_json.clear();
    apply_view(st, l);
}

bool open_link(AppState& st, std::string_view hash) {
    LinkResult r = decode_link(hash);
    if (!r.ok()) {
        st.error = "link: " + r.error;
        return false;
    }
    apply_link(st, r.link);
    return true;
}

std::string embed_snippet(const std::string& page_url, const LinkState& link, const EmbedOptions& o, LinkSceneCache* cache) {
    LinkState l = link;
    l.panels = o.panels;
    const Scene& s = link_scene(l);
    std::string title = "attnviz: " + (s.name.empty() ? std::string(kind_name(s.kind)) + " attention" : s.name);
    std::string escaped;
    for (char c : title) {
        if (c == '"') escaped += "&quot;";
        else if (c == '<') escaped += "&lt;";
        else if (c == '&') escaped += "&amp;";
        else escaped += c;
    }
    std::string url = page_url + "#" + encode_link(l, cache);
    std::string amp_url;
    for (char c : url) amp_url += c == '&' ? std::string("&amp;") : std::string(1, c);
    return "<iframe src=\"" + amp_url + "\" width=\"" + std::to_string(o.width) + "\" height=\"" +
           std::to_string(o.height) + "\" title=\"" + escaped + "\" loading=\"lazy\" style=\"border:0\"></iframe>";
}

// [SECTION] Messages -------------------------------------------------------------------------

std::string handle_message(AppState& st, std::string_view message_json) {
    using nlohmann::json;
    json msg;
    try {
        msg = json::parse(message_json);
    } catch (const std::exception&) {
        return "";
    }
    if (!msg.is_object() || !msg.contains("type") || !msg["type"].is_string()) return "";
    const std::string type = msg["type"];
    if (type != "attnviz:set-scene" && type != "attnviz:set-view" && type != "attnviz:get-state") return "";
    const std::string request = type.substr(8);
    auto reply = [&](json body) {
        body["request"] = request;
        if (msg.contains("id")) body["id"] = msg["id"];
        return body.dump(-1, ' ', false, json::error_handler_t::replace);
    };
    auto error = [&](const std::string& field, const std::string& message) {
        return reply({{"type", "attnviz:error"}, {"field", field}, {"message", field + ": " + message}});
    };
    auto ok = [&]() { return reply({{"type", "attnviz:ok"}}); };

    if (type == "attnviz:get-state") {
        LinkState l = link_from_app(st);
        json token = nullptr;
        if (l.token.valid()) token = std::string(l.token.side == TokenRef::Query ? "q" : "k") + std::to_string(l.token.index + 1);
        Scene scene = st.scene;
        json state = {
            {"view", view_name(l.view)},
            {"head", l.head < 0 ? json("mean") : json(l.head + 1)},
            {"token", token},
            {"theme", l.theme_auto ? "auto" : theme_name(l.theme)},
            {"text", l.text_scale},
            {"lang", lang_name(l.lang)},
            {"panels", l.panels},
            {"preset", l.preset.empty() ? json(nullptr) : json(l.preset)},
            {"scene", json::parse(write_scene(scene, false))},
            {"error", st.error},
        };
        return reply({{"type", "attnviz:state"}, {"state", state}, {"hash", encode_link(l)}});
    }

    if (type == "attnviz:set-scene") {
        for (const auto& [key, value] : msg.items())
            if (key != "type" && key != "id" && key != "scene" && key != "preset") return error(key, "unknown field");
        LinkState l = link_from_app(st);
        if (msg.contains("preset") && msg.contains("scene")) return error("scene", "give preset or scene, not both");
        if (msg.contains("preset")) {
            if (!msg["preset"].is_string()) return error("preset", "expected a preset name");
            const std::string name = msg["preset"];
            if (!find_preset(name)) return error("preset", "no preset named " + shown_value(name));
            l.scene.reset();
            l.preset = name;
        } else if (msg.contains("scene")) {
            const json& s = msg["scene"];
            if (!s.is_object() && !s.is_string()) return error("scene", "expected a scene object or its JSON text");
            try {
                Scene scene = read_scene(s.is_string() ? s.get<std::string>() : s.dump());
                l.preset.clear();
                l.scene = std::move(scene);
            } catch (const SceneError& e) {
                return reply({{"type", "attnviz:error"},
                              {"field", scene_param(e)},
                              {"message", std::string("scene: ") + e.what()}});
            } catch (const std::exception& e) {
                return error("scene", e.what());
            }
        } else {
            return error("scene", "missing: give \"scene\" (an object or JSON text) or \"preset\"");
        }
        // The view stays; what depends on the old scene's shape starts over.
        l.head = l.view == View::Heatmap && l.head < 0 ? -1 : 0;
        l.token = {};
        l.head_visible.clear();
        if (l.head >= link_scene(l).heads || (l.head < 0 && link_scene(l).heads == 1)) l.head = 0;
        apply_link(st, l);
        return ok();
    }

    // set-view: the same parameters as the hash, as JSON values.
    static const std::set<std::string> kViewFields = {"view", "head", "token", "theme", "text", "lang", "panels"};
    LinkState l = link_from_app(st);
    int given = 0;
    for (const auto& [key, value] : msg.items()) {
        if (key == "type" || key == "id") continue;
        if (!kViewFields.count(key)) return error(key, "unknown field (set-view takes view, head, token, theme, text, lang, panels)");
        std::string text;
        if (value.is_string()) text = value.get<std::string>();
        else if (key == "head" && value.is_number_integer()) text = std::to_string(value.get<long long>());
        else if (key == "text" && value.is_number()) text = format_float(value.get<float>());
        else if (key == "panels" && value.is_boolean()) text = value.get<bool>() ? "1" : "0";
        else if (key == "token" && value.is_null()) text = "none";
        else return error(key, "wrong type: " + std::string(value.type_name()));
        std::string problem = set_param(l, key, text);
        if (!problem.empty()) return error(key, problem);
        ++given;
    }
    if (given == 0) return error("view", "set-view with nothing to set");
    auto [param, problem] = check_ranges(l);
    if (!param.empty()) return error(param, problem);
    apply_view(st, l);
    return ok();
}

}  // namespace attn
