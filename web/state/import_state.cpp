// import_state.cpp: an import file → ImportView → the Trace the lines and heatmap views draw.
//
// [SECTION] Reading a file
// [SECTION] Loading in pieces
// [SECTION] The figure from the choice
// [SECTION] State for the tests
#include "import_state.hpp"

#include "app_state.hpp"
#include "attention_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <utility>

namespace attn {
namespace {

// The views that read a head's pipeline (Q, K, V, the scores) rather than its map alone.
bool sink_pipeline_view(View v) { return v == View::Steps || v == View::Qk || v == View::Explain; }

std::vector<int> chosen(const std::vector<bool>& on) {
    std::vector<int> out;
    for (size_t i = 0; i < on.size(); ++i)
        if (on[i]) out.push_back(static_cast<int>(i));
    return out;
}

// "NAME:3:14: malformed JSON …" or "NAME: attention[2][1]: expected …" (as the CLI says it).
std::string describe(const std::string& name, const SceneError& e) {
    const bool position = !e.where().empty() && std::isdigit(static_cast<unsigned char>(e.where()[0]));
    return name + (position ? ":" : ": ") + e.what();
}

const std::vector<Matrix>& rollout_of(const Figure& figure, ImportView& im) {
    RolloutCache& c = im.rollout;
    if (c.layers != figure.layers.get() || c.stack != im.import_stack || c.reduce != im.reduce) {
        c.maps = attention_rollout(figure.stack(im.import_stack), im.reduce);
        c.layers = figure.layers.get();
        c.stack = im.import_stack;
        c.reduce = im.reduce;
    }
    return c.maps;
}

// View state that follows the shape of the maps shown.
void shown_changed(AppState& st) {
    const ImportView& im = st.imported;
    st.error.clear();
    ++st.revision;
    const auto T_q = static_cast<Eigen::Index>(st.figure.trace().T_q()), T_k = static_cast<Eigen::Index>(st.figure.trace().T_k());
    const int heads = st.figure.trace().heads;
    if (st.lines.head_visible.size() != static_cast<size_t>(heads)) st.lines.head_visible.assign(static_cast<size_t>(heads), true);
    const int head = im.show == ImportShow::Head ? im.import_head : 0;
    st.heatmap.head = head;
    if (!st.figure.has(Detail::Scores)) st.heatmap.values = HeatValues::Weights;
    st.steps.head = head;
    auto clamp_ref = [&](TokenRef& r) {
        const Eigen::Index n = r.side == TokenRef::Query ? T_q : T_k;
        if (r.valid() && r.index >= n) r = {};
    };
    clamp_ref(st.pinned);
    clamp_ref(st.hover);
    std::erase_if(st.query_set, [&](int q) { return q >= T_q; });
}

}  // namespace

// [SECTION] Reading a file -------------------------------------------------------------------

bool import_attention(AppState& st, std::string_view text, const std::string& name) {
    Figure figure;
    try {
        auto imported = read_import_file(text, name);
        figure = layered_figure(std::make_shared<const ImportedAttention>(std::move(imported)), name);
    } catch (const SceneError& e) {
        st.error = describe(name, e);
        return false;
    } catch (const ModelError& e) {  // a broken safetensors header: "name: header: …"
        st.error = e.what();
        return false;
    } catch (const std::exception& e) {  // out of memory, or a reader bug: still keep the figure
        st.error = name + ": " + e.what();
        return false;
    }
    show_layered_figure(st, std::move(figure), false);
    return true;
}

void show_layered_figure(AppState& st, Figure figure, bool keep_choice) {
    const bool had_picture = st.figure.live && st.figure.live->picture;
    st.figure = std::move(figure);
    ImportView& im = st.imported;
    ++im.revision;
    im.wanted_layer = -1;
    st.error.clear();
    if (keep_choice) {
        show_import(st);
    } else {
        im.show = ImportShow::Head;
        im.merge_words = false;
        im.layers_on.clear();
        im.heads_on.clear();
        st.view = st.figure.live && st.figure.live->picture ? View::Image : View::Model;  // a vision model: its picture first
        select_import_stack(st, 0);
    }
    const bool has_picture = st.figure.live && st.figure.live->picture;
    if (keep_choice && has_picture && !had_picture) st.view = View::Image;  // a picture opened for the model's text: its view
    if (st.view == View::Image && !has_picture) st.view = View::Model;      // a text after a picture
    if (!st.link_map.empty() || st.link_view_waits) apply_link_map(st);  // a link's or a live scene's map, or view
}

bool rollout_allowed(const AppState& st) {
    return st.figure.has(Detail::Layers) && st.figure.stack(st.imported.import_stack).is_self();
}

std::optional<ImportMapRef> parse_import_map(std::string_view text) {
    const size_t a = text.find(':'), b = a == std::string_view::npos ? a : text.find(':', a + 1);
    if (b == std::string_view::npos) return std::nullopt;
    auto number = [](std::string_view s) -> std::optional<int> {
        int v = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || end != s.data() + s.size() || v < 1) return std::nullopt;
        return v;
    };
    auto layer = number(text.substr(a + 1, b - a - 1)), head = number(text.substr(b + 1));
    if (a == 0 || !layer || !head) return std::nullopt;
    return ImportMapRef{std::string(text.substr(0, a)), *layer, *head};
}

void apply_link_map(AppState& st) {
    const std::string text = std::move(st.link_map);
    st.link_map.clear();
    const bool view_waits = std::exchange(st.link_view_waits, false);
    if (!st.figure.has(Detail::Layers)) return;
    // A live model's link without a map: its view, on the first map (layer 1, head 1).
    if (text.empty() && view_waits) st.view = st.link_map_view;
    auto ref = parse_import_map(text);
    if (!ref) return;
    const auto& stacks = st.figure.layers->stacks;
    auto it = std::find_if(stacks.begin(), stacks.end(), [&](const AttentionStack& s) { return s.name == ref->stack; });
    if (it == stacks.end() || ref->layer > it->layers || ref->head > it->heads) {
        st.error = "link: map: " + text + " is not in " + st.figure.file;
        return;
    }
    select_import_stack(st, static_cast<int>(it - stacks.begin()), ref->layer - 1, ref->head - 1);
    st.view = st.link_map_view;
}

bool open_file_text(AppState& st, std::string_view text, const std::string& name) {
    if (file_kind(text) == FileKind::Import) return import_attention(st, text, name);
    try {
        Scene scene = read_scene(text);
        st.load_scene(scene);  // leaves import mode
        st.preset_name.clear();
        return st.error.empty();
    } catch (const SceneError& e) {
        st.error = describe(name, e);
    } catch (const std::exception& e) {
        st.error = name + ": " + e.what();
    }
    return false;
}

bool open_file_path(AppState& st, const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec) || path.ends_with(".gguf")) return open_model_folder(st, path);  // a model's folder or GGUF file
    std::string text;
    if (!read_file(path, text)) {
        st.error = path + ": cannot open the file";
        return false;
    }
    const size_t slash = path.find_last_of("/\\");
    import_bytes(st, slash == std::string::npos ? path : path.substr(slash + 1), std::move(text));
    return true;
}

// [SECTION] Loading in pieces ----------------------------------------------------------------

void import_progress(AppState& st, const std::string& name, long long done, long long total) {
    if (!st.imported.load || st.imported.load->name != name) {
        st.imported.load.emplace();
        st.imported.load->name = name;
    }
    st.imported.load->done = done;
    st.imported.load->total = total;
}

void import_bytes(AppState& st, const std::string& name, std::string bytes) {
    if (looks_like_picture(bytes)) {  // a picture: the vision model's input, not a figure's data
        st.imported.load.reset();
        set_model_picture(st, name, bytes);
        return;
    }
    ImportLoad load;
    load.name = name;
    load.done = load.total = static_cast<long long>(bytes.size());
    load.parsing = true;
    load.bytes = std::move(bytes);
    st.imported.load = std::move(load);
}

void import_failed(AppState& st, const std::string& name, const std::string& message) {
    st.imported.load.reset();
    st.error = name + ": " + message;
}

void follow_sink_view(AppState& st) {
    const ImportView& im = st.imported;
    if (!st.figure.live || !st.figure.has(Detail::Layers) || im.import_stack >= st.figure.stack_count()) return;
    if (!st.figure.stack(im.import_stack).sinks || im.show != ImportShow::Head || im.merge_words) return;
    if (sink_pipeline_view(st.view) != im.sink_pipeline) show_import(st);
}

void advance_import_load(AppState& st) {
    auto& load = st.imported.load;
    if (!load || !load->parsing) return;
    // Frame 0 builds the UI with "parsing…", frame 1 shows it; parse after that.
    if (load->frames_shown++ < 2) return;
    ImportLoad done = std::move(*load);
    load.reset();
    open_file_text(st, done.bytes, done.name);
}

// [SECTION] The figure from the choice -------------------------------------------------------

void show_import(AppState& st) {
    ImportView& im = st.imported;
    Figure& figure = st.figure;
    if (!figure.has(Detail::Layers)) return;
    im.import_stack = std::clamp(im.import_stack, 0, figure.stack_count() - 1);
    const AttentionStack& s = figure.stack(im.import_stack);
    im.import_layer = std::clamp(im.import_layer, 0, s.layers - 1);
    im.import_head = std::clamp(im.import_head, 0, s.heads - 1);
    if (im.layers_on.size() != static_cast<size_t>(s.layers)) im.layers_on.assign(static_cast<size_t>(s.layers), true);
    if (im.heads_on.size() != static_cast<size_t>(s.heads)) im.heads_on.assign(static_cast<size_t>(s.heads), true);
    if (im.show == ImportShow::Rollout && !s.is_self()) im.show = ImportShow::Aggregate;
    // A long text's maps are on demand: one head's layer at a time, over its tokens.
    if (figure.maps_on_demand()) im.show = ImportShow::Head, im.merge_words = false;

    // Tokens: cleaned, or merged into words (rows: mean of the pieces, columns: their sum).
    std::vector<Word> query_words, key_words;
    Trace t;
    if (im.merge_words) {
        query_words = merge_subwords(s.queries);
        key_words = s.is_self() ? query_words : merge_subwords(s.keys);
        for (const Word& w : query_words) t.queries.push_back(w.text);
        for (const Word& w : key_words) t.keys.push_back(w.text);
    } else {
        for (const auto& token : s.queries) t.queries.push_back(display_token(token));
        for (const auto& token : s.keys) t.keys.push_back(display_token(token));
    }
    auto shown = [&](Matrix m) { return im.merge_words ? merge_attention(m, query_words, key_words) : m; };

    // Learned sinks (gpt-oss): each row's weight on no token, 1 − its sum, as a last key of its
    // own ("(sink)"), where the maps are rows of weights (a head, or the heads' mean); a live
    // head in the pipeline's views shows the sink as a term of its softmax instead.
    const bool pipeline = (figure.live || figure.remote) && im.show == ImportShow::Head && !im.merge_words;
    im.sink_pipeline = s.sinks && pipeline && sink_pipeline_view(st.view);
    const bool sink_key = s.sinks && !im.sink_pipeline &&
                          (im.show == ImportShow::Head || (im.show == ImportShow::Aggregate && im.reduce == HeadReduce::Mean));
    // A live model's one layer: its block's whole pipeline, recomputed (Steps shows it); maps on
    // demand, or a served layer: its scores and weights, from the Q and K the run kept.
    // A served layer whose Q and K have not come is wanted (the served session asks for them:
    // served_state.hpp); a short text shows its maps meanwhile, a long one the map shown.
    const bool qk_here = figure.live || figure.kept_layer(im.import_stack, im.import_layer);
    if (pipeline && !qk_here) im.wanted_layer = im.import_layer, im.wanted_head = im.import_head;
    else if (!figure.maps_on_demand()) im.wanted_layer = -1;  // (a short text's: only the layer shown is wanted)
    if (pipeline && (!sink_key || figure.maps_on_demand()) && (qk_here || figure.maps_on_demand())) {
        if (!qk_here) {
            if (figure.shown && figure.kept_layer(im.import_stack, im.shown_layer)) {
                im.import_layer = im.shown_layer, im.import_head = im.shown_head;
                return;
            }
            im.import_layer = figure.remote->layers.begin()->first;  // nothing shown yet: a layer at hand meanwhile
        }
        im.shown_layer = im.import_layer, im.shown_head = im.import_head;
        show_maps(figure, live_layer_trace(figure, im.import_stack, im.import_layer, std::move(t.queries), std::move(t.keys)),
                  figure.live && !figure.maps_on_demand() ? Detail::Scores | Detail::Projections | Detail::Input | Detail::Output
                                                          : Detail::Scores | Detail::Queries);
        shown_changed(st);
        return;
    }
    std::vector<Matrix> maps;
    switch (im.show) {
        case ImportShow::Head:
            for (int h = 0; h < s.heads; ++h) maps.push_back(shown(s.map(im.import_layer, h)));
            break;
        case ImportShow::Aggregate:
            maps.push_back(shown(aggregate(s, chosen(im.layers_on), chosen(im.heads_on), im.reduce)));
            break;
        case ImportShow::Rollout:
            maps.push_back(shown(rollout_of(figure, im)[static_cast<size_t>(im.import_layer)]));
            break;
    }

    if (sink_key) {
        for (Matrix& m : maps) {
            Matrix with(m.rows(), m.cols() + 1);
            with.leftCols(m.cols()) = m;
            for (Eigen::Index q = 0; q < m.rows(); ++q) with(q, m.cols()) = std::max(0.0f, 1.0f - m.row(q).sum());
            m = std::move(with);
        }
        t.keys.push_back(kSinkKey);
    }
    const bool causal = figure.causal[static_cast<size_t>(im.import_stack)];
    t.kind = !s.is_self() ? AttentionKind::Cross : causal ? AttentionKind::Masked : AttentionKind::Self;
    t.heads = static_cast<int>(maps.size());
    t.d_k = t.d_model = 0;  // no Q, K, V in the file
    const auto T_q = static_cast<Eigen::Index>(t.queries.size()), T_k = static_cast<Eigen::Index>(t.keys.size());
    // A sliding window the model's config names (never guessed from zeros): one layer's, or an
    // aggregate's when every chosen layer slides (the widest window masks what all of them do).
    // Merged words and the rollout mix keys across the window's edge: none.
    if (causal && !im.merge_words && im.show != ImportShow::Rollout) {
        if (im.show == ImportShow::Head) t.window = figure.window_of(im.import_stack, im.import_layer);
        else
            for (int l : chosen(im.layers_on)) {
                const int w = figure.window_of(im.import_stack, l);
                if (w == 0) {
                    t.window = 0;
                    break;
                }
                t.window = std::max(t.window, w);
            }
    }
    MaskMatrix allowed = MaskMatrix::Ones(T_q, T_k);
    for (Eigen::Index q = 0; q < T_q && causal; ++q)
        for (Eigen::Index k = 0; k < T_k - (sink_key ? 1 : 0); ++k)  // the sink's key is every row's
            if (k > q || (t.window > 0 && k <= q - t.window)) allowed(q, k) = 0;
    t.allowed = std::move(allowed);
    for (Matrix& m : maps) {
        HeadTrace head;
        head.weights = std::move(m);
        t.attention.heads.push_back(std::move(head));
    }

    show_maps(figure, std::move(t));
    shown_changed(st);
}


void select_import_map(AppState& st, int layer, int head) {
    ImportView& im = st.imported;
    if (!st.figure.has(Detail::Layers)) return;
    im.import_layer = layer;
    im.import_head = head;
    im.show = ImportShow::Head;
    show_import(st);
    // Open on that head alone; the lines toolbar can bring the layer's other heads back.
    st.lines.head_visible.assign(static_cast<size_t>(st.figure.trace().heads), false);
    st.lines.head_visible[static_cast<size_t>(im.import_head)] = true;
}

void select_import_stack(AppState& st, int stack, int layer, int head) {
    ImportView& im = st.imported;
    if (!st.figure.has(Detail::Layers)) return;
    im.import_stack = stack;
    im.layers_on.clear();
    im.heads_on.clear();
    st.pinned = st.hover = {};
    st.query_set.clear();
    select_import_map(st, layer, head);
}

void close_import(AppState& st) {
    st.query_set.clear();
    if (st.view == View::Model) st.view = View::Lines;
    const Scene inputs = st.draft;
    st.load_scene(inputs);  // the inputs' own scene again
}

// [SECTION] State for the tests --------------------------------------------------------------

void add_import_json(const AppState& st, nlohmann::json& out) {
    using nlohmann::json;
    const ImportView& im = st.imported;
    const Figure& figure = st.figure;
    const bool active = figure.has(Detail::Layers);
    json j = {{"active", active}, {"file", figure.file}, {"revision", im.revision}};
    if (im.load)
        j["load"] = {{"name", im.load->name}, {"done", im.load->done}, {"total", im.load->total}, {"parsing", im.load->parsing}};
    else
        j["load"] = nullptr;
    if (active) {
        json stacks = json::array();
        for (int i = 0; i < figure.stack_count(); ++i) {
            const AttentionStack& s = figure.stack(i);
            std::vector<int> windows;
            for (int l = 0; l < s.layers; ++l) windows.push_back(figure.window_of(i, l));
            stacks.push_back({{"name", s.name}, {"layers", s.layers}, {"heads", s.heads}, {"T_q", s.queries.size()},
                              {"T_k", s.keys.size()}, {"causal", static_cast<bool>(figure.causal[static_cast<size_t>(i)])},
                              {"kv_heads", figure.kv_heads_of(i)}, {"windows", windows}});
        }
        const char* show = im.show == ImportShow::Head ? "head" : im.show == ImportShow::Aggregate ? "aggregate" : "rollout";
        j.update({{"model", figure.layers->model}, {"stacks", stacks}, {"stack", im.import_stack}, {"layer", im.import_layer},
                  {"head", im.import_head}, {"show", show}, {"reduce", im.reduce == HeadReduce::Mean ? "mean" : "max"},
                  {"layers_on", im.layers_on}, {"heads_on", im.heads_on}, {"merge_words", im.merge_words},
                  {"maps_on_demand", figure.maps_on_demand()}});
        // The map the heatmap shows (one head or the mean), small figures only (up to 90 tokens:
        // tiny-vit's 65 among them).
        const Trace& tr = st.figure.trace();
        const auto T_q = static_cast<Eigen::Index>(tr.queries.size()), T_k = static_cast<Eigen::Index>(tr.keys.size());
        if (T_q * T_k <= 8192 && tr.heads > 0) {
            json rows = json::array();
            for (Eigen::Index q = 0; q < T_q; ++q) rows.push_back(head_row(tr, st.heatmap.head, static_cast<int>(q)));
            j["shown"] = rows;
        } else if (tr.is_long() && tr.heads > 0) {  // a long text: its first, middle and last rows, computed again
            const int head = std::clamp(im.import_head, 0, tr.heads - 1);
            std::vector<float> row(static_cast<size_t>(T_k));
            json rows = json::object();
            for (const int q : {0, static_cast<int>(T_q / 2), static_cast<int>(T_q - 1)}) {
                attention_rows(tr, head, q, q + 1, row.data());
                rows[std::to_string(q)] = row;
            }
            j["long_rows"] = rows;
        }
        if (figure.maps_on_demand()) {  // the model view's thumbnail of the map chosen
            const AttentionStack& s = figure.stack(im.import_stack);
            const Matrix& m = figure.thumbnails(im.import_stack)[static_cast<size_t>(im.import_layer * s.heads + im.import_head)];
            json rows = json::array();
            for (Eigen::Index r = 0; r < m.rows(); ++r) rows.push_back(std::vector<float>(m.row(r).data(), m.row(r).data() + m.cols()));
            j["thumbnail"] = rows;
        }
    }
    out["import"] = j;
    out["query_set"] = st.query_set;
}

}  // namespace attn
