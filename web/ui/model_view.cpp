// model_view.cpp: imported attention on screen. The model view (layers × heads of small
// heatmaps, like BertViz's model view), the Steps view of an import, and the import panel,
// toolbar, progress bar and status line.
//
// [SECTION] Thumbnails (one atlas texture per import and stack)
// [SECTION] Model view
// [SECTION] Controls panel
// [SECTION] Toolbar, progress and status
#include "model_view.hpp"
#include "controls.hpp"
#include "text.hpp"
#include "live_panel.hpp"

#include "experts_layout.hpp"
#include "model_layout.hpp"

#include "panels.hpp"
#include "platform.hpp"

#include <imgui_internal.h>
#include <misc/cpp/imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace attn {
namespace {

// [SECTION] Thumbnails (one atlas texture per import and stack) --------------------------------

// Texels per thumbnail side at most (kThumbnailBlocks, figure.hpp): a 12×12 model of 1024
// tokens is a 768×768 atlas, not 150 M floats; a map with fewer tokens keeps one texel per cell.
struct Atlas {
    const Renderer* renderer = nullptr;
    const ImportedAttention* data = nullptr;
    int revision = -1, stack = -1;
    bool rows_scaled = false;
    int tile_w = 1, tile_h = 1;  // texels of one thumbnail: keys across, queries down
};

// Every map of the stack, tile (layer, head) at texel (head·tile_w, layer·tile_h). A tile
// smaller than its map keeps each block's largest weight (max pooling), so a sharp diagonal
// or a column on the first token stays visible however long the sequence; blocks wholly above
// a causal diagonal stay masked (g = 0), those wholly outside a layer's sliding window too, as
// such (g = 0.25: the shader's window stripes). With rows_scaled each texel row is divided by
// its largest value, so a thin stripe of weights under 1 is as bright as a full one.
const Atlas& atlas_for(ViewContext& ctx, Atlas& atlas) {
    const ImportView& im = ctx.state.imported;
    const Figure& figure = ctx.state.figure;
    if (atlas.renderer == &ctx.renderer && atlas.data == figure.layers.get() && atlas.revision == im.revision &&
        atlas.stack == im.import_stack && atlas.rows_scaled == im.rows_scaled)
        return atlas;
    const AttentionStack& s = figure.stack(im.import_stack);
    const int T_q = static_cast<int>(s.queries.size()), T_k = static_cast<int>(s.keys.size());
    const int max_texture = ctx.renderer.max_texture_size();
    atlas.tile_w = std::max(1, std::min({T_k, kThumbnailBlocks, max_texture / std::max(s.heads, 1)}));
    atlas.tile_h = std::max(1, std::min({T_q, kThumbnailBlocks, max_texture / std::max(s.layers, 1)}));
    if (figure.maps_on_demand()) atlas.tile_w = std::min(T_k, kThumbnailBlocks), atlas.tile_h = std::min(T_q, kThumbnailBlocks);
    const int W = atlas.tile_w * s.heads, H = atlas.tile_h * s.layers;
    std::vector<float> texels(static_cast<size_t>(W) * H * 2, 0.0f);
    const bool causal = figure.causal[static_cast<size_t>(im.import_stack)];
    // Maps on demand (a long text): the run's thumbnails, pooled the same way when it ran.
    const std::vector<Matrix>* pooled = figure.maps_on_demand() ? &figure.thumbnails(im.import_stack) : nullptr;
    for (int l = 0; l < s.layers; ++l)
        for (int h = 0; h < s.heads; ++h) {
            const Matrix& m = pooled ? (*pooled)[static_cast<size_t>(l * s.heads + h)] : s.map(l, h);
            const int window = figure.window_of(im.import_stack, l);
            for (int ty = 0; ty < atlas.tile_h; ++ty) {
                const int q0 = ty * T_q / atlas.tile_h, q1 = std::max((ty + 1) * T_q / atlas.tile_h, q0 + 1);
                const size_t row = static_cast<size_t>(l * atlas.tile_h + ty) * W + h * atlas.tile_w;
                float row_max = 0.0f;
                for (int tx = 0; tx < atlas.tile_w; ++tx) {
                    const int k0 = tx * T_k / atlas.tile_w, k1 = std::max((tx + 1) * T_k / atlas.tile_w, k0 + 1);
                    const bool later = causal && k0 > q1 - 1, outside = causal && window > 0 && k1 - 1 <= q0 - window;
                    float v = 0.0f;
                    if (!later && !outside) v = pooled ? m(ty, tx) : m.block(q0, k0, q1 - q0, k1 - k0).maxCoeff();
                    const size_t i = (row + tx) * 2;
                    texels[i] = std::isfinite(v) ? v : 0.0f;
                    texels[i + 1] = later ? 0.0f : outside ? 0.25f : 1.0f;
                    row_max = std::max(row_max, texels[i]);
                }
                if (im.rows_scaled && row_max > 0.0f)
                    for (int tx = 0; tx < atlas.tile_w; ++tx) texels[(row + tx) * 2] /= row_max;
            }
        }
    ctx.renderer.set_atlas_values(texels, W, H);
    atlas.renderer = &ctx.renderer;
    atlas.data = figure.layers.get();
    atlas.revision = im.revision;
    atlas.stack = im.import_stack;
    atlas.rows_scaled = im.rows_scaled;
    return atlas;
}

HeatmapDraw thumbnail(const AppState& st, const Atlas& atlas, int layer, int head, ImVec2 a, ImVec2 b) {
    const Palette& pal = palette(st.theme);
    HeatmapDraw d;
    d.min = a, d.max = b;
    d.T_q = atlas.tile_h, d.T_k = atlas.tile_w;
    d.value_min = 0.0f, d.value_max = 1.0f;  // weights: the heatmap's fixed scale
    d.colormap = st.heatmap.colormap;
    d.hatch_a = pal.hatch_a, d.hatch_b = pal.hatch_b, d.grid = pal.grid;
    d.atlas = true;
    d.origin_x = head * atlas.tile_w, d.origin_y = layer * atlas.tile_h;
    return d;
}

const char* stack_label(Lang lang, const AttentionStack& s) {
    if (s.name == "encoder_attention") return tr(lang, Str::StackEncoder);
    if (s.name == "decoder_attention") return tr(lang, Str::StackDecoder);
    if (s.name == "cross_attention") return tr(lang, Str::StackCross);
    return tr(lang, Str::StackAttention);
}

// Numbered toggles (1..n) that wrap; at least one stays on. True when one changed.
bool toggle_numbers(AppState& st, const char* id, std::vector<bool>& on) {
    bool changed = false;
    ImGui::PushID(id);
    const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
    const float w = ImGui::CalcTextSize("00").x + ImGui::GetStyle().FramePadding.x * 2.0f;
    const int count = static_cast<int>(std::count(on.begin(), on.end(), true));
    for (size_t i = 0; i < on.size(); ++i) {
        if (i > 0) {
            ImGui::SameLine();
            if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
        }
        char label[24];
        std::snprintf(label, sizeof label, "%zu", i + 1);
        const bool was = on[i];
        if (was) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
        if (was) ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 1, 1, 1));
        ImGui::PushID(static_cast<int>(i));
        if (ImGui::Button(label, ImVec2(w, 0)) && !(was && count == 1)) {
            on[i] = !was;
            changed = true;
        }
        ImGui::PopID();
        if (was) ImGui::PopStyleColor(2);
        probe(st, (std::string(id) + "." + label).c_str());
    }
    ImGui::PopID();
    return changed;
}

// The head scores of the stack the model view shows: a live model's (gpt2, bert), or nullptr.
const HeadScores* shown_head_scores(const AppState& st) {
    const LiveRun* live = st.figure.live.get();
    if (!live || !live->model->heads || st.imported.import_stack != 0) return nullptr;
    return &*live->model->heads;
}

// Every head's tags: each kind its scores clear the threshold for, the highest first, with the
// score ("induction 0.88", "first 0.52").
std::vector<std::vector<HeadTag>> head_tags(const HeadScores& hs, Lang lang) {
    constexpr Str kFull[kHeadKinds] = {Str::HeadPrev, Str::HeadInduction, Str::HeadSink, Str::HeadDelimiter, Str::HeadDuplicate};
    constexpr Str kBrief[kHeadKinds] = {Str::HeadPrevBrief, Str::HeadInductionBrief, Str::HeadSinkBrief, Str::HeadDelimiterBrief,
                                        Str::HeadDuplicateBrief};
    std::vector<std::vector<HeadTag>> tags(static_cast<size_t>(hs.layers * hs.heads));
    for (int l = 0; l < hs.layers; ++l)
        for (int h = 0; h < hs.heads; ++h) {
            std::vector<HeadKind> kinds = head_tags(hs, l, h);
            std::stable_sort(kinds.begin(), kinds.end(), [&](HeadKind a, HeadKind b) { return hs.at(a, l, h) > hs.at(b, l, h); });
            for (HeadKind kind : kinds) {
                char score[16];
                std::snprintf(score, sizeof score, "%.2f", static_cast<double>(hs.at(kind, l, h)));
                const size_t k = static_cast<size_t>(kind);
                tags[static_cast<size_t>(l * hs.heads + h)].push_back(
                    {std::string(tr(lang, kFull[k])) + " " + score, std::string(tr(lang, kBrief[k])) + " " + (score + 1)});
            }
        }
    return tags;
}

// Learned sinks (gpt-oss): every head's mean weight on no token over its rows ("sink 0.42").
std::vector<std::vector<HeadTag>> sink_tags(const AttentionStack& s, Lang lang) {
    std::vector<std::vector<HeadTag>> tags(static_cast<size_t>(s.layers * s.heads));
    for (int l = 0; l < s.layers; ++l)
        for (int h = 0; h < s.heads; ++h) {
            const Matrix& m = s.map(l, h);
            const double mean = m.rows() ? 1.0 - static_cast<double>(m.sum()) / static_cast<double>(m.rows()) : 0.0;
            char score[16];
            std::snprintf(score, sizeof score, "%.2f", std::clamp(mean, 0.0, 1.0));
            tags[static_cast<size_t>(l * s.heads + h)] = {{std::string(tr(lang, Str::HeadLearnedSink)) + " " + score,
                                                           std::string(tr(lang, Str::HeadLearnedSinkBrief)) + " " + (score + 1)}};
        }
    return tags;
}

}  // namespace

// A live mixture of experts' routing under the grid (experts_layout.hpp): a row per layer with
// experts, a cell per token in the colour of its first expert; the hover lists all of them.
void draw_experts(AppState& st, ImDrawList* dl, const LiveRun& live, const AttentionStack& s, const ModelLayout& grid, float sc) {
    const std::vector<Routing>& routing = live.result.experts;
    const ExpertsLayout e = lay_out_experts(routing, grid.grid.x0 - grid.label_w, grid.grid.y0 + grid.content_h - grid.margin,
                                            grid.label_w, grid.grid.w(), sc);
    if (e.layers.empty()) return;
    const Palette& pal = palette(st.theme);
    const int k = static_cast<int>(routing[static_cast<std::size_t>(e.layers.front())].front().size());
    char text[96];
    std::snprintf(text, sizeof text, tr(st.lang, Str::ExpertsTitle), k);
    dl->AddText(ImVec2(e.box.x0, e.title_y), ImGui::GetColorU32(ImGuiCol_TextDisabled), text);
    for (int r = 0; r < static_cast<int>(e.layers.size()); ++r) {
        const int l = e.layers[static_cast<std::size_t>(r)];
        const Box first = e.cell(r, 0);
        std::snprintf(text, sizeof text, tr(st.lang, Str::LayerN), l + 1);
        const ImVec2 size = ImGui::CalcTextSize(text);
        dl->AddText(ImVec2(first.x0 - size.x - 6.0f * sc, first.y0 + (e.cell_h - size.y) * 0.5f), ImGui::GetColorU32(ImGuiCol_Text), text);
        const Routing& rows = routing[static_cast<std::size_t>(l)];
        for (int t = 0; t < static_cast<int>(rows.size()); ++t) {
            const Routed& top = rows[static_cast<std::size_t>(t)].front();
            const Box b = e.cell(r, t);
            ImVec4 c = head_color(st.theme, top.expert);
            c.w = 0.25f + 0.75f * std::clamp(top.weight, 0.0f, 1.0f);
            dl->AddRectFilled(ImVec2(b.x0, b.y0), ImVec2(b.x1 - 1.0f, b.y1), ImGui::ColorConvertFloat4ToU32(c));
            if (e.numbers) {
                std::snprintf(text, sizeof text, "%d", top.expert);
                const ImVec2 n = ImGui::CalcTextSize(text);
                dl->AddText(ImVec2(b.x0 + (b.w() - n.x) * 0.5f, b.y0 + (b.h() - n.y) * 0.5f), pal.text, text);
            }
        }
    }
    probe(st, "model.experts");
    ImGui::SetCursorScreenPos(ImVec2(e.box.x0, e.box.y0));
    ImGui::Dummy(ImVec2(e.box.w(), e.box.h() + 8.0f * sc));
    if (!ImGui::IsWindowHovered()) return;
    const auto [r, t] = e.hit(ImGui::GetIO().MousePos.x, ImGui::GetIO().MousePos.y);
    if (r < 0) return;
    const int l = e.layers[static_cast<std::size_t>(r)];
    ImGui::BeginTooltip();
    ImGui::Text(tr(st.lang, Str::LayerN), l + 1);
    ImGui::SameLine();
    ImGui::TextUnformatted(t < static_cast<int>(s.queries.size()) ? display_token(s.queries[static_cast<std::size_t>(t)]).c_str() : "");
    for (const Routed& x : routing[static_cast<std::size_t>(l)][static_cast<std::size_t>(t)]) {
        std::snprintf(text, sizeof text, tr(st.lang, Str::ExpertWeight), x.expert, static_cast<double>(x.weight));
        ImGui::TextUnformatted(text);
    }
    ImGui::EndTooltip();
}

// [SECTION] Model view ---------------------------------------------------------------------------

struct ModelView::Cache {
    Atlas atlas;
};
ModelView::ModelView() : cache_(std::make_unique<Cache>()) {}
ModelView::~ModelView() = default;

void ModelView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    ImportView& im = st.imported;
    if (!st.figure.has(Detail::Layers)) return;
    const AttentionStack& s = st.figure.stack(im.import_stack);
    const Atlas& atlas = atlas_for(ctx, cache_->atlas);
    const float sc = ctx.scale;
    const int L = s.layers, H = s.heads;

    // Layout (core/figure/model_layout.hpp): row labels on the left, head numbers on top,
    // square thumbnails with gaps; past the smallest thumbnail the grid scrolls.
    ImGui::SetCursorScreenPos(min);
    ImGui::BeginChild("##model", ImVec2(max.x - min.x, max.y - min.y), false, ImGuiWindowFlags_HorizontalScrollbar);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const FontsMeasure measure(ctx.fonts);
    ModelInput in;
    in.layers = L, in.heads = H;
    in.x0 = origin.x, in.y0 = origin.y;
    in.view = {min.x, min.y, max.x, max.y};
    in.scale = sc;
    in.dark = st.theme == Theme::Dark;
    in.causal = st.figure.causal[static_cast<size_t>(im.import_stack)];
    for (int l = 0; l < L && in.causal; ++l)
        if (const int w = st.figure.window_of(im.import_stack, l); w > 0 && static_cast<int>(s.queries.size()) > w) in.window = true;
    in.rows_scaled = im.rows_scaled;
    in.show = im.show == ImportShow::Head ? ModelShow::Head : im.show == ImportShow::Aggregate ? ModelShow::Aggregate : ModelShow::Rollout;
    in.layer = im.import_layer, in.head = im.import_head;
    in.layers_on = im.layers_on, in.heads_on = im.heads_on;
    const HeadScores* head_scores = shown_head_scores(st);
    if (head_scores && head_scores->layers == L && head_scores->heads == H) in.tags = head_tags(*head_scores, st.lang);
    else if (s.sinks && !st.figure.maps_on_demand()) in.tags = sink_tags(s, st.lang);  // (a long text's: not kept)
    const bool live = st.figure.live != nullptr;
    const bool knocks = live || st.served.active();  // a live model's heads, or a served model's, knock out
    if (knocks) {  // the experiment's knocked-out heads of this stack
        in.off.assign(static_cast<size_t>(L * H), false);
        for (const HeadRef& r : knocked_heads(st))
            if (r.stack == im.import_stack && r.layer < L && r.head < H) in.off[static_cast<size_t>(r.layer * H + r.head)] = true;
    }
    in.words.heads = tr(st.lang, Str::CaptionHeads), in.words.layers = tr(st.lang, Str::CaptionLayers), in.words.layer = tr(st.lang, Str::LayerN);
    in.words.weight = tr(st.lang, Str::LegendWeight), in.words.masked = tr(st.lang, Str::Masked);
    in.words.kv_shared = tr(st.lang, Str::KvShared);
    in.words.outside_window = tr(st.lang, Str::OutsideWindow), in.words.rows_scaled = tr(st.lang, Str::RowsScaledLegend);
    in.kv_heads = st.figure.kv_heads_of(im.import_stack);
    const ModelLayout layout = lay_out_model(in, measure);
    const float cell = layout.cell;
    st.grid_rect = {layout.grid.x0, layout.grid.y0, layout.grid.w(), layout.grid.h()};

    // Hover, then everything in the layout's order: the thumbnails are one textured quad each,
    // all from the same atlas texture.
    ModelLayout::Hit hover;
    if (ctx.interactive && ImGui::IsWindowHovered()) hover = layout.hit(ImGui::GetIO().MousePos.x, ImGui::GetIO().MousePos.y);
    // Else the keyboard's thumbnail (access.hpp), its tooltip beside it; Enter opens it, Space
    // knocks a live model's head out.
    AppState::KeyCursor& kc = st.cursor;
    kc.q = std::min(kc.q, L - 1), kc.k = std::min(kc.k, H - 1);
    const int action = std::exchange(kc.action, 0);
    const bool at_thumb = ctx.interactive && hover.layer < 0 && kc.on;
    if (at_thumb) {
        hover.layer = kc.q, hover.head = kc.k;
        const Box b = layout.thumb(kc.q, kc.k);
        ImGui::SetNextWindowPos(ImVec2(b.x0 + cell + 8.0f * sc, b.y0));
        if (action == 1) select_import_map(st, kc.q, kc.k), st.view = View::Heatmap;
        if (action == 2 && knocks) toggle_knockout(st, {im.import_stack, kc.q, kc.k});
    }
    const int hl = hover.layer, hh = hover.head;
    draw_items(dl, model_items(layout, in, hover, measure), {}, measure, palette(st.theme), sc, [&](const Item& it) {
        if (it.kind == Item::Grid) {
            const ImVec2 a(it.box.x0, it.box.y0), b(it.box.x1, it.box.y1);
            ctx.renderer.add_heatmap(dl, thumbnail(st, atlas, it.index / H, it.index % H, a, b));
        }
        if (it.kind == Item::Colormap)
            dl->AddImageQuad(ctx.renderer.lut_texture(st.heatmap.colormap), ImVec2(it.box.x0, it.box.y0), ImVec2(it.box.x1, it.box.y0),
                             ImVec2(it.box.x1, it.box.y1), ImVec2(it.box.x0, it.box.y1), ImVec2(1, 0.5f), ImVec2(1, 0.5f),
                             ImVec2(0, 0.5f), ImVec2(0, 0.5f));
    });
    if (L * H <= 1024) {  // the thumbnails drawn, for the tests
        char label[48];
        for (int l = 0; l < L; ++l)
            for (int h = 0; h < H && layout.near_view(l); ++h) {
                std::snprintf(label, sizeof label, "thumb.%d.%d", l + 1, h + 1);
                const Box b = layout.thumb(l, h);
                st.probe[label] = {b.x0, b.y0, cell, cell};
            }
    }
    ImGui::SetCursorScreenPos(origin);
    ImGui::Dummy(ImVec2(layout.content_w, layout.content_h));
    if (live && im.import_stack == 0) draw_experts(st, dl, *st.figure.live, s, layout, sc);

    if (at_thumb && st.view == View::Model) {
        const Box b = layout.thumb(hl, hh);  // the keyboard's thumbnail outlined
        dl->AddRect(ImVec2(b.x0 - 3.0f * sc, b.y0 - 3.0f * sc), ImVec2(b.x0 + cell + 3.0f * sc, b.y0 + cell + 3.0f * sc),
                    im_color(figure_palette(st.theme == Theme::Dark).accent), 4.0f * sc, 0, 2.5f * sc);
    }
    if (hl >= 0 && st.view == View::Model) {
        ImGui::SetMouseCursor(ImGuiMouseCursor_Hand);
        const bool knock = knocks && !at_thumb && (ImGui::IsMouseClicked(ImGuiMouseButton_Right) ||
                                                 (ctx.panels.click_knocks_out && ImGui::IsMouseClicked(ImGuiMouseButton_Left)));
        if (knock) {
            toggle_knockout(st, {im.import_stack, hl, hh});
        } else if (!at_thumb && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
            select_import_map(st, hl, hh);
            st.view = View::Heatmap;
        } else {
            // A larger view of the map, with its first and last tokens for orientation.
            ImGui::BeginTooltip();
            ImGui::Text(tr(st.lang, Str::ThumbTip), hl + 1, hh + 1);
            if (layout.group > 1) {  // "K, V: head 2 of 3, shared by query heads 4–6"
                const int g = hh / layout.group;
                ImGui::TextDisabled(tr(st.lang, Str::KvGroupTip), g + 1, H / layout.group, g * layout.group + 1, (g + 1) * layout.group);
            }
            if (!in.tags.empty() && head_scores)
                ImGui::TextDisabled(tr(st.lang, Str::HeadScoresTip), head_scores->at(HeadKind::Prev, hl, hh),
                                    head_scores->at(HeadKind::Induction, hl, hh), head_scores->at(HeadKind::Sink, hl, hh),
                                    head_scores->at(HeadKind::Delimiter, hl, hh), head_scores->at(HeadKind::Duplicate, hl, hh));
            const float size = std::round(std::clamp(cell * 2.5f, 160.0f * sc, 260.0f * sc));
            const float aspect = static_cast<float>(s.queries.size()) / static_cast<float>(std::max<size_t>(s.keys.size(), 1));
            const ImVec2 p = ImGui::GetCursorScreenPos();
            const ImVec2 q(p.x + size, p.y + size * std::clamp(aspect, 0.4f, 2.5f));
            ImGui::Dummy(ImVec2(q.x - p.x, q.y - p.y));
            ctx.renderer.add_heatmap(ImGui::GetWindowDrawList(), thumbnail(st, atlas, hl, hh, p, q));
            ImGui::TextDisabled("%s", tr(st.lang, Str::ThumbClick));
            if (live) {
                const bool off = in.off[static_cast<size_t>(hl * H + hh)];
                ImGui::TextDisabled("%s", tr(st.lang, ctx.panels.click_knocks_out ? (off ? Str::ThumbRestoreClick : Str::ThumbKnockClick)
                                                                                   : (off ? Str::ThumbRestoreRight : Str::ThumbKnockRight)));
            }
            ImGui::EndTooltip();
        }
    }
    if (st.touch) drag_scroll(ctx.panels.drag_scrolling, ctx.scale, true);
    ImGui::EndChild();
}

// [SECTION] Controls panel -------------------------------------------------------------------

void open_control(ViewContext& ctx, const OpenControl& c) {
    AppState& st = ctx.state;
    const float sc = ctx.scale;
    const std::string probe_name = c.probe;
    if (small_button(st, tr(st.lang, c.button))) {
        if (platform::kBrowser) c.browser_pick();
        else ImGui::OpenPopup(c.popup);
    }
    probe(st, (probe_name + ".open").c_str());
    if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 26.0f);
        ImGui::TextUnformatted(tr(st.lang, c.tip));
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
    // Desktop: a path field (dropping the file or folder on the window does the same).
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x * 0.5f, io.DisplaySize.y * 0.4f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowSize(ImVec2(std::min(560.0f * sc, io.DisplaySize.x - 40.0f * sc), 0.0f));
    if (ImGui::BeginPopupModal(c.popup, nullptr, ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove)) {
        std::string& path = *c.path;
        ImGui::TextWrapped("%s", tr(st.lang, c.tip));
        ImGui::TextUnformatted(tr(st.lang, c.field));
        ImGui::SetNextItemWidth(-FLT_MIN);
        if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
        const bool enter = ImGui::InputText("##path", &path, ImGuiInputTextFlags_EnterReturnsTrue);
        mark_text_box(st);
        probe(st, (probe_name + ".path").c_str());
        if ((ImGui::Button(tr(st.lang, Str::OpenFile)) || enter) && !path.empty()) {
            c.open(st, path);
            ImGui::CloseCurrentPopup();
        }
        probe(st, (probe_name + ".path.open").c_str());
        ImGui::SameLine();
        if (ImGui::Button(tr(st.lang, Str::JsonClose)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) ImGui::CloseCurrentPopup();
        ImGui::EndPopup();
    }
}

void open_model_control(ViewContext& ctx) {
    open_control(ctx, {.popup = "Open model attention", .button = Str::OpenModel, .tip = Str::OpenModelTip, .field = Str::FilePath,
                       .probe = "import", .path = &ctx.panels.model_path, .browser_pick = platform::open_file_picker,
                       .open = open_file_path});
}

void draw_import_controls(ViewContext& ctx) {
    AppState& st = ctx.state;
    ImportView& im = st.imported;
    const float sc = ctx.scale;
    const Palette& pal = palette(st.theme);
    section(tr(st.lang, st.figure.live || st.served.active() ? Str::SectionMaps : Str::SectionImport));
    const Figure& figure = st.figure;
    if (!figure.file.empty()) ImGui::TextDisabled(tr(st.lang, Str::ImportFile), figure.file.c_str());
    if (!figure.layers->model.empty() && !figure.live) ImGui::TextDisabled(tr(st.lang, Str::ImportModel), figure.layers->model.c_str());
    const AttentionStack& s = figure.stack(im.import_stack);
    ImGui::TextDisabled(tr(st.lang, Str::ImportShape), s.layers, s.heads, s.queries.size(), s.keys.size());

    const size_t n_stacks = static_cast<size_t>(figure.stack_count());
    if (n_stacks > 1) {
        ImGui::Spacing();
        int stack = im.import_stack;
        ImGui::PushID("stacks");
        const float w = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x * (n_stacks - 1)) /
                        static_cast<float>(n_stacks);
        for (size_t i = 0; i < n_stacks; ++i) {
            if (i > 0) ImGui::SameLine();
            const bool on = stack == static_cast<int>(i);
            if (on) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
            if (on) ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 1, 1, 1));
            ImGui::PushID(static_cast<int>(i));
            if (ImGui::Button(stack_label(st.lang, figure.stack(static_cast<int>(i))), ImVec2(w, 0)) && !on) stack = static_cast<int>(i);
            ImGui::PopID();
            if (on) ImGui::PopStyleColor(2);
            probe(st, ("import.stack." + figure.stack(static_cast<int>(i)).name).c_str());
        }
        ImGui::PopID();
        if (stack != im.import_stack) select_import_stack(st, stack);
    }

    ImGui::Spacing();
    if (segmented<ImportShow>(st, "import.show", &im.show,
                              {{ImportShow::Head, Str::ShowHead, "head"}, {ImportShow::Aggregate, Str::ShowAggregate, "aggregate"},
                               {ImportShow::Rollout, Str::ShowRollout, "rollout"}},
                              "import.show", 0.0f, figure.maps_on_demand() ? 1 : rollout_allowed(st) ? 3 : 2))
        show_import(st);
    if (figure.maps_on_demand()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("%s", tr(st.lang, Str::MapsOnDemand));
        ImGui::PopStyleColor();
    }
    const float label_x = 92.0f * sc;
    auto row = [&](const char* label) {
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted(label);
        ImGui::SameLine(label_x);
        ImGui::SetNextItemWidth(-FLT_MIN);
    };
    const AttentionStack& stack = figure.stack(im.import_stack);
    char current[48];
    auto layer_combo = [&]() {
        row(tr(st.lang, Str::Layer));
        std::snprintf(current, sizeof current, tr(st.lang, Str::HeadOf), im.import_layer + 1, stack.layers);
        if (ImGui::BeginCombo("##layer", current)) {
            for (int l = 0; l < stack.layers; ++l) {
                std::snprintf(current, sizeof current, tr(st.lang, Str::HeadOf), l + 1, stack.layers);
                if (ImGui::Selectable(current, l == im.import_layer)) {
                    im.import_layer = l;
                    show_import(st);
                }
            }
            ImGui::EndCombo();
        }
        probe(st, "import.layer");
    };
    auto reduce_row = [&]() {
        row(tr(st.lang, Str::Reduce));
        if (segmented<HeadReduce>(st, "import.reduce", &im.reduce, {{HeadReduce::Mean, Str::ReduceMean, "mean"}, {HeadReduce::Max, Str::ReduceMax, "max"}},
                                  "import.reduce"))
            show_import(st);
    };
    ImGui::Spacing();
    if (im.show == ImportShow::Head) {
        layer_combo();
        row(tr(st.lang, Str::Head));
        std::snprintf(current, sizeof current, tr(st.lang, Str::HeadOf), im.import_head + 1, stack.heads);
        if (ImGui::BeginCombo("##import_head", current)) {
            for (int h = 0; h < stack.heads; ++h) {
                std::snprintf(current, sizeof current, tr(st.lang, Str::HeadOf), h + 1, stack.heads);
                if (ImGui::Selectable(current, h == im.import_head)) select_import_map(st, im.import_layer, h);
            }
            ImGui::EndCombo();
        }
        probe(st, "import.head");
    } else if (im.show == ImportShow::Aggregate) {
        reduce_row();
        ImGui::TextUnformatted(tr(st.lang, Str::AggLayers));
        if (toggle_numbers(st, "import.layers", im.layers_on)) show_import(st);
        ImGui::TextUnformatted(tr(st.lang, Str::AggHeads));
        if (toggle_numbers(st, "import.heads", im.heads_on)) show_import(st);
    } else {
        reduce_row();
        layer_combo();
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("%s", tr(st.lang, Str::RolloutNote));
        ImGui::PopStyleColor();
    }
    if (!rollout_allowed(st)) ImGui::TextDisabled("%s", tr(st.lang, Str::RolloutSelfOnly));

    ImGui::Spacing();
    ImGui::BeginDisabled(figure.maps_on_demand());
    if (ImGui::Checkbox(tr(st.lang, Str::MergeWords), &im.merge_words)) show_import(st);
    ImGui::EndDisabled();
    probe(st, "import.merge");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(st.lang, Str::MergeWordsTip));
    if (!st.figure.live) {  // a live model's tokens are under its text boxes
        token_chips(st.lang, st.figure.trace().queries, pal, sc);
        if (!stack.is_self()) token_chips(st.lang, st.figure.trace().keys, pal, sc);
    }

    ImGui::Spacing();
    ImGui::Separator();
    ImGui::Spacing();
    open_model_control(ctx);
    const ImGuiStyle& style = ImGui::GetStyle();
    const float live_w = ImGui::CalcTextSize(tr(st.lang, Str::OpenLiveModel)).x + 2.0f * style.FramePadding.x;
    if (ImGui::GetContentRegionAvail().x - ImGui::GetItemRectSize().x - style.ItemSpacing.x >= live_w) ImGui::SameLine();
    open_live_model_control(ctx);
    // On a line of its own: the two open buttons fill the panel's width. (A live model's close
    // button is at the top of its section.)
    if (!st.model.active()) {
        if (small_button(st, tr(st.lang, Str::CloseImport))) close_import(st);
        probe(st, "import.close");
    }
}

// [SECTION] Toolbar, progress and status -----------------------------------------------------

// The stack switch and the colours (View::toolbar).
void ModelView::toolbar(ViewContext& ctx) {
    AppState& st = ctx.state;
    const float sc = ctx.scale;
    ImportView& im = st.imported;
    if (st.figure.stack_count() > 1) {
        for (int i = 0; i < st.figure.stack_count(); ++i) {
            const bool on = im.import_stack == i;
            if (on) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
            ImGui::PushID(i);
            if (ImGui::Button(stack_label(st.lang, st.figure.stack(i))) && !on) select_import_stack(st, i);
            ImGui::PopID();
            if (on) ImGui::PopStyleColor();
            probe(st, ("model.stack." + st.figure.stack(i).name).c_str());
            ImGui::SameLine();
        }
    }
    ImGui::SetNextItemWidth(110.0f * sc);
    colormap_combo(ctx);
    // Contrast: each thumbnail row scaled to its largest weight (the legend says so).
    const char* label = tr(st.lang, Str::RowsScaled);
    same_line_if_fits(ImGui::GetFrameHeight() + ImGui::CalcTextSize(label).x + 8.0f * sc);
    ImGui::Checkbox((std::string(label) + "###model.rows").c_str(), &im.rows_scaled);
    probe(st, "model.rows");
    if (ImGui::IsItemHovered()) wrapped_tooltip(tr(st.lang, Str::RowsScaledTip));
}

void draw_import_progress(ViewContext& ctx) {
    AppState& st = ctx.state;
    const auto& load = st.imported.load;
    if (!load) return;
    char text[160];
    float fraction = 1.0f;
    if (load->parsing) {
        std::snprintf(text, sizeof text, tr(st.lang, Str::Parsing), load->name.c_str());
    } else if (load->total > 0) {
        fraction = static_cast<float>(static_cast<double>(load->done) / static_cast<double>(load->total));
        std::snprintf(text, sizeof text, tr(st.lang, Str::Reading), load->name.c_str(), byte_size(static_cast<double>(load->done)).c_str(),
                      byte_size(static_cast<double>(load->total)).c_str());
    } else {
        fraction = -1.0f * static_cast<float>(ImGui::GetTime());  // unknown size: ImGui's indeterminate bar
        std::snprintf(text, sizeof text, tr(st.lang, Str::ReadingUnknown), load->name.c_str(), byte_size(static_cast<double>(load->done)).c_str());
    }
    ImGui::ProgressBar(fraction, ImVec2(-FLT_MIN, 0.0f), text);
    probe(st, "import.progress");
}

std::string import_description(const AppState& st) {
    const ImportView& im = st.imported;
    char desc[96] = "";
    switch (im.show) {
        case ImportShow::Head:
            std::snprintf(desc, sizeof desc, attn::tr(st.lang, Str::DescHead), im.import_layer + 1,
                          ((st.view == View::Heatmap || st.view == View::Image) && st.heatmap.head >= 0 ? st.heatmap.head : im.import_head) + 1);
            break;
        case ImportShow::Aggregate:
            std::snprintf(desc, sizeof desc, attn::tr(st.lang, Str::DescAggregate),
                          attn::tr(st.lang, im.reduce == HeadReduce::Mean ? Str::ReduceMean : Str::ReduceMax),
                          static_cast<int>(std::count(im.heads_on.begin(), im.heads_on.end(), true)),
                          static_cast<int>(std::count(im.layers_on.begin(), im.layers_on.end(), true)));
            break;
        case ImportShow::Rollout: std::snprintf(desc, sizeof desc, attn::tr(st.lang, Str::DescRollout), im.import_layer + 1); break;
    }
    return desc;
}

std::string import_status_text(const AppState& st) {
    const Trace& tr = st.figure.trace();
    char line[512];
    if (st.figure.live || st.served.active())  // a model run here, or served by PyTorch
        std::snprintf(line, sizeof line, attn::tr(st.lang, st.figure.live ? Str::LiveStatus : Str::ServedStatus),
                      st.figure.live ? st.figure.name.c_str() : st.served.model.c_str(), ui_kind_name(st.lang, tr.kind),
                      tr.queries.size(), tr.keys.size(), import_description(st).c_str());
    else
        std::snprintf(line, sizeof line, attn::tr(st.lang, Str::ImportStatus), ui_kind_name(st.lang, tr.kind), tr.queries.size(),
                      tr.keys.size(), import_description(st).c_str());
    return line;
}

void draw_import_status(ViewContext& ctx) {
    AppState& st = ctx.state;
    ImGui::TextDisabled("%s", import_status_text(st).c_str());
    if (ctx.fonts.font_pending()) {
        ImGui::SameLine();
        ImGui::TextDisabled("%s", attn::tr(st.lang, Str::LoadingGlyphs));
    }
    const char* hint = view_hint(st);
    const float w = ImGui::CalcTextSize(hint).x;
    const float used = ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x;
    if (used + 24.0f * ctx.scale + w <= ImGui::GetWindowContentRegionMax().x) {
        ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - w);
        ImGui::TextDisabled("%s", hint);
    }
}

}  // namespace attn
