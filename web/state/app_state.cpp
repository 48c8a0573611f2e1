// app_state.cpp: inputs → scene → trace, keeping the last good figure on bad input.
#include "app_state.hpp"

#include "flash_layout.hpp"
#include "presets.hpp"
#include "text.hpp"

#include <algorithm>
#include <cstring>
#include <exception>

namespace attn {
namespace {

// First code point of a UTF-8 string: 0 when empty, U+FFFD when it starts with a bad byte.
char32_t first_code_point(const std::string& s) {
    size_t pos = 0;
    return s.empty() ? 0 : decode_utf8(s, pos);
}

bool is_wide(const std::string& token) { return first_code_point(token) >= 0x2e80; }

bool attaches_left(const std::string& token) {
    return token.size() == 1 && std::strchr(".,!?;:)]}%", token[0]) != nullptr;
}

}  // namespace

std::string AppState::join_tokens(const std::vector<std::string>& tokens) {
    std::string tight, spaced;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (i > 0) {
            spaced += ' ';
            bool no_space = is_wide(tokens[i - 1]) || is_wide(tokens[i]) || attaches_left(tokens[i]);
            if (!no_space) tight += ' ';
        }
        tight += tokens[i];
        spaced += tokens[i];
    }
    return tokenize(tight) == tokens ? tight : spaced;
}

Matrix follow_tokens(const Matrix& rows, const std::vector<std::string>& old_tokens,
                     const std::vector<std::string>& new_tokens, int d_model) {
    // rows: T_old×d_old → result: T_new×d_model
    Matrix generated = generated_embeddings(new_tokens, d_model);
    Matrix out = generated;
    const int d_keep = std::min<int>(d_model, static_cast<int>(rows.cols()));
    for (size_t i = 0; i < new_tokens.size(); ++i) {
        auto it = std::find(old_tokens.begin(), old_tokens.end(), new_tokens[i]);
        if (it == old_tokens.end()) continue;
        auto j = static_cast<Eigen::Index>(it - old_tokens.begin());
        if (j >= rows.rows()) continue;
        out.row(static_cast<Eigen::Index>(i)).head(d_keep) = rows.row(j).head(d_keep);
    }
    return out;
}

Matrix AppState::current_embeddings(bool source) const {
    const auto& given = source ? draft.source_embeddings : draft.embeddings;
    const auto& tokens = source ? draft.source_tokens : draft.tokens;
    if (given && given->rows() == static_cast<Eigen::Index>(tokens.size()) &&
        given->cols() == draft.d_model)
        return *given;
    return generated_embeddings(tokens, draft.d_model);
}

Matrix& AppState::editable_embeddings(bool source) {
    auto& given = source ? draft.source_embeddings : draft.embeddings;
    given = current_embeddings(source);
    return *given;
}

void AppState::load_scene(const Scene& s) {
    draft = s;
    target_text = join_tokens(s.tokens);
    source_text = join_tokens(s.source_tokens);
    switch (s.scale.kind) {
        case ScaleKind::InvSqrtDk: scale_mode = ScaleMode::InvSqrtDk; break;
        case ScaleKind::None: scale_mode = ScaleMode::None; break;
        case ScaleKind::Divisor:
            scale_mode = ScaleMode::Temperature;
            temperature = s.scale.divisor;
            break;
    }
    if (std::holds_alternative<SeededWeights>(s.weights)) {
        weights_mode = WeightsMode::Random;
        seed = static_cast<int>(std::get<SeededWeights>(s.weights).seed);
    } else if (std::holds_alternative<ExplicitWeights>(s.weights)) {
        weights_mode = WeightsMode::Explicit;
    } else {
        weights_mode = WeightsMode::Identity;
    }
    pinned = {};
    hover = {};
    query_set.clear();
    lines.head_visible.assign(static_cast<size_t>(std::max(s.heads, 1)), true);
    heatmap.head = 0;
    steps.head = 0;
    apply();
}

void AppState::load_preset(const std::string& name) {
    const Scene* preset = find_preset(name);
    if (!preset) {
        error = "no preset named \"" + name + "\"";
        return;
    }
    load_scene(*preset);
    preset_name = name;
}

void AppState::apply_scene_json() {
    try {
        Scene s = read_scene(scene_json);
        load_scene(s);
        preset_name.clear();
    } catch (const std::exception& e) {
        error = std::string("scene: ") + e.what();
    }
}

bool AppState::showing_preset() const {
    if (preset_name.empty()) return false;
    const Scene* preset = find_preset(preset_name);
    return preset && figure.has(Detail::Scene) && *figure.scene == *preset;  // an error (a draft's, a link's) leaves it shown
}

void AppState::apply() {
    // Tokens from the texts; explicit embeddings follow their tokens. A text still as it was
    // shown keeps its tokens: a scene's tokens (苹果 as one) need not be how tokenize() cuts it.
    auto tokens_of = [](const std::string& text, const std::vector<std::string>& shown) {
        return text == join_tokens(shown) ? shown : tokenize(text);
    };
    auto tokens = tokens_of(target_text, draft.tokens);
    if (draft.embeddings && (tokens != draft.tokens || draft.embeddings->cols() != draft.d_model))
        draft.embeddings = follow_tokens(*draft.embeddings, draft.tokens, tokens, draft.d_model);
    draft.tokens = std::move(tokens);
    if (draft.kind == AttentionKind::Cross) {
        auto source = tokens_of(source_text, draft.source_tokens);
        if (draft.source_embeddings &&
            (source != draft.source_tokens || draft.source_embeddings->cols() != draft.d_model))
            draft.source_embeddings =
                follow_tokens(*draft.source_embeddings, draft.source_tokens, source, draft.d_model);
        draft.source_tokens = std::move(source);
    }
    switch (scale_mode) {
        case ScaleMode::InvSqrtDk: draft.scale = Scale{}; break;
        case ScaleMode::None: draft.scale = Scale{ScaleKind::None, 1.0f}; break;
        case ScaleMode::Temperature: draft.scale = Scale{ScaleKind::Divisor, temperature}; break;
    }
    if (weights_mode == WeightsMode::Identity) draft.weights = IdentityWeights{};
    if (weights_mode == WeightsMode::Random) draft.weights = SeededWeights{static_cast<std::uint64_t>(seed)};
    if (weights_mode == WeightsMode::Explicit && !std::holds_alternative<ExplicitWeights>(draft.weights)) {
        weights_mode = WeightsMode::Identity;  // explicit weights come only with a scene
        draft.weights = IdentityWeights{};
    }

    Scene s = draft;
    if (s.kind != AttentionKind::Cross) {
        s.source_tokens.clear();
        s.source_embeddings.reset();
    }
    try {
        validate(s);
        Trace t = compute(s);
        scene = s;
        figure = scene_figure(std::move(s), std::move(t));
        error.clear();
        ++revision;
        if (view == View::Model || view == View::Compare || view == View::Why || view == View::Image) view = View::Lines;  // views of layered or live figures
    } catch (const std::exception& e) {
        error = e.what();
        return;
    }
    // View state that depends on the shape of the figure.
    const Trace& trace = figure.trace();
    lines.head_visible.resize(static_cast<size_t>(trace.heads), true);
    if (heatmap.head >= trace.heads) heatmap.head = 0;
    if (steps.head >= trace.heads) steps.head = 0;
    auto clamp_ref = [&](TokenRef& r) {
        int n = r.side == TokenRef::Query ? static_cast<int>(trace.queries.size())
                                          : static_cast<int>(trace.keys.size());
        if (r.valid() && r.index >= n) r = {};
    };
    clamp_ref(pinned);
    clamp_ref(hover);
    std::erase_if(query_set, [&](int q) { return q >= static_cast<int>(trace.queries.size()); });
}

TileSize AppState::steps_tile() const {
    const Trace& tr = figure.trace();
    if (steps.tile.rows > 0 && steps.tile.cols > 0) return steps.tile;
    if (figure.live) return flash_tile_size(kFlashSramFloats, tr.d_k, tr.T_q(), tr.T_k());
    return {2, 2};
}

int AppState::tiles_step() const {
    const Trace& tr = figure.trace();
    const long count = flash_step_count(tr.T_q(), tr.T_k(), steps_tile());
    return static_cast<int>(std::clamp<long>(steps.tile_step, 0, std::max(count - 1, 0L)));
}

}  // namespace attn
