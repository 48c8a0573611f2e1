// image_view.cpp: the Image view (core/figure/image_layout.hpp): a vision model's picture with
// one token's attention over its patches laid over it. The token is the one pointed at or pinned
// (a patch on the picture, a chip beside it, or any view's token), else the [CLS] (SigLIP, which
// has none: the middle patch); the map is the one the heatmap shows (the panel's layer, head or
// mean, aggregate or rollout). Hover a patch: where it looks; click: pin it.
#include "view.hpp"
#include "controls.hpp"

#include "image_layout.hpp"
#include "model_view.hpp"
#include "panels.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

namespace attn {

struct ImageView::Cache {
    std::shared_ptr<const Image> uploaded, global;  // the pictures the renderer's textures hold (kept: their addresses are the keys)
};
ImageView::ImageView() : cache_(std::make_unique<Cache>()) {}
ImageView::~ImageView() = default;

int picture_query(const AppState& st) {
    const std::shared_ptr<const LiveRun>& live = st.figure.live;
    if (!live || !live->picture) return -1;
    const TokenRef sel = st.selected();
    const int T = static_cast<int>(live->input.ids.size());
    if (sel.valid() && sel.index < T) return sel.index;
    const ModelConfig& c = live->model->config();
    if (c.vision_language()) return T - 1;  // the text's last token: where the answer comes from
    if (c.class_token) return 0;
    const int rows = live->input.patch_rows, cols = rows > 0 ? static_cast<int>(live->input.patches.rows()) / rows : 0;
    return c.registers + (rows / 2) * cols + cols / 2;
}

namespace {

// A vision-language model's image tokens as cells: the tiles' (rows × cols of them, g × g each,
// as they cover the picture, row by row) and the global view's (g × g), the other tokens the
// chips; nullopt when the run's image tokens are not its views' count.
struct PictureCells {
    int rows = 0, cols = 0, g = 0;
    std::vector<int> cells, global_cells, chip_tokens;
};
std::optional<PictureCells> picture_cells(const LiveRun& live) {
    const ModelConfig& c = live.model->config();
    PictureCells p;
    // a view's merged grid: the tower's square, or (qwen2_5_vl) the picture's own
    const int cell = c.vision_tower->patch_size * c.scale_factor;
    const bool own = c.connector == ModelConfig::Connector::Merge && live.picture;
    const int vr = own ? live.picture->height / cell : c.vision_tower->patch_grid() / c.scale_factor;
    const int vc = own ? live.picture->width / cell : vr;
    p.g = vr;
    const int per_view = vr * vc, tr = std::max(live.tile_rows, 1), tc = std::max(live.tile_cols, 1);
    std::vector<int> images;
    for (int t = 0; t < static_cast<int>(live.input.ids.size()); ++t)
        if (live.input.ids[static_cast<std::size_t>(t)] == c.image_token_id) images.push_back(t);
        else p.chip_tokens.push_back(t);
    if (static_cast<int>(images.size()) != (tr * tc + (live.global_picture ? 1 : 0)) * per_view) return std::nullopt;
    p.rows = tr * vr, p.cols = tc * vc;
    p.cells.resize(static_cast<std::size_t>(p.rows) * p.cols);
    for (int v = 0; v < tr * tc; ++v)
        for (int i = 0; i < vr; ++i)
            for (int j = 0; j < vc; ++j)
                p.cells[static_cast<std::size_t>(((v / tc) * vr + i) * p.cols + (v % tc) * vc + j)] = images[static_cast<std::size_t>(v * per_view + i * vc + j)];
    if (live.global_picture) p.global_cells.assign(images.end() - per_view, images.end());
    return p;
}

}  // namespace

PatchCrops patch_crops(const AppState& st, const Trace& drawn) {
    const std::shared_ptr<const LiveRun>& live = st.figure.live;
    if (!live || !live->picture) return {};
    if (live->model->config().vision_language()) {  // each image token its cell's part of the picture (a global one: the same part of the whole)
        const std::optional<PictureCells> p = picture_cells(*live);
        if (!p || drawn.T_k() != static_cast<int>(live->input.ids.size())) return {};
        PatchCrops c;
        c.width = live->picture->width, c.height = live->picture->height;
        const auto piece = [&](const std::vector<int>& cells, int rows, int cols) {
            for (int i = 0; i < rows * cols; ++i) {
                const float r = static_cast<float>(i / cols), k = static_cast<float>(i % cols);
                c.pieces[cells[static_cast<std::size_t>(i)]] = {k / cols, r / rows, (k + 1) / cols, (r + 1) / rows};
            }
        };
        piece(p->cells, p->rows, p->cols);
        piece(p->global_cells, p->global_cells.empty() ? 0 : p->g, p->g);
        return c;
    }
    if (live->input.patch_rows <= 0) return {};
    PatchCrops c;
    c.rows = live->input.patch_rows;
    c.cols = static_cast<int>(live->input.patches.rows()) / c.rows;
    c.first = drawn.T_k() - c.rows * c.cols;
    c.patch = live->model->config().patch_size;
    c.width = live->picture->width, c.height = live->picture->height;
    if (drawn.T_q() != drawn.T_k() || drawn.T_k() != static_cast<int>(live->input.ids.size()) || c.first < 0) return {};
    return c;
}

void draw_picture_part(ViewContext& ctx, ImDrawList* dl, const Image& picture, const Item& it) {
    dl->AddImage(ctx.renderer.picture_texture(&picture, picture.rgb.data(), picture.width, picture.height), ImVec2(it.box.x0, it.box.y0),
                 ImVec2(it.box.x1, it.box.y1), ImVec2(it.x, it.y), ImVec2(it.x2, it.y2));
}

std::optional<ImageInput> image_view_input(const AppState& st, Box box, float scale) {
    const std::shared_ptr<const LiveRun>& live = st.figure.live;
    if (!live || !live->picture || st.figure.empty()) return std::nullopt;
    const Trace& tr = st.figure.trace();
    const int q = std::clamp(picture_query(st), 0, tr.T_q() - 1);
    ImageInput in;
    in.box = box;
    in.scale = scale;
    in.dark = st.theme == Theme::Dark;
    in.colormap = st.heatmap.colormap;
    in.picture_width = live->picture->width, in.picture_height = live->picture->height;
    const ModelConfig& c = live->model->config();
    if (c.vision_language()) {  // the tiles' image tokens over the picture, the global view's beside it, the text's under it
        std::optional<PictureCells> p = picture_cells(*live);
        if (!p) return std::nullopt;
        in.rows = p->rows, in.cols = p->cols;
        in.patch = c.vision_tower->patch_size * c.scale_factor;
        in.cells = std::move(p->cells), in.chip_tokens = std::move(p->chip_tokens);
        if (live->global_picture) {
            in.global_size = live->global_picture->width, in.global_rows = p->g;
            in.global_cells = std::move(p->global_cells);
            in.global_label = attn::tr(st.lang, Str::ImageGlobalView);
        }
        in.tiles_rows = live->tile_rows, in.tiles_cols = live->tile_cols;
    } else {
        in.rows = live->input.patch_rows;
        in.cols = in.rows > 0 ? static_cast<int>(live->input.patches.rows()) / in.rows : 0;
        in.patch = c.patch_size;
    }
    in.tokens = tr.keys;
    // the heatmap's head, or the heads' mean (a long text's: recomputed, exact)
    in.weights = figure_row(st.figure, tr, st.imported.import_stack, st.imported.import_layer, st.heatmap.head, q);
    in.query = q;
    in.hidden.assign(static_cast<std::size_t>(tr.T_k()), false);
    for (int t : st.model.experiment.hidden)
        if (t >= 0 && t < tr.T_k()) in.hidden[static_cast<std::size_t>(t)] = true;
    // A text token whose mask leaves the picture out (gemma3's sliding layers) says so.
    float on_picture = c.vision_language() && !in.weights.empty() ? 0.0f : 1.0f;
    for (const std::vector<int>* cells : {&in.cells, &in.global_cells})
        for (int t : *cells)
            if (t >= 0 && t < static_cast<int>(in.weights.size())) on_picture = std::max(on_picture, in.weights[static_cast<std::size_t>(t)]);
    char caption[512];
    std::snprintf(caption, sizeof caption, attn::tr(st.lang, on_picture > 0 ? Str::ImageCaption : Str::ImageCaptionNone),
                  token_text(tr.queries[static_cast<std::size_t>(q)]).c_str(), import_description(st).c_str());
    in.caption = caption;
    in.legend = attn::tr(st.lang, Str::LegendWeight);
    return in;
}

void ImageView::draw(ViewContext& ctx, ImVec2 min, ImVec2 max) {
    AppState& st = ctx.state;
    const std::optional<ImageInput> input = image_view_input(st, {min.x, min.y, max.x, max.y}, ctx.scale);
    if (!input) return draw_panels_note(ctx, Str::ImageNoPicture, min, max, "image");
    const ImageInput& in = *input;
    const std::shared_ptr<const LiveRun>& live = st.figure.live;
    const Trace& tr = st.figure.trace();
    const int q = in.query;
    const FontsMeasure measure(ctx.fonts);
    const ImageLayout layout = lay_out_image(in, measure);

    ImDrawList* dl = ImGui::GetWindowDrawList();
    cache_->uploaded = live->picture;
    const Image& picture = *cache_->uploaded;
    dl->AddImage(ctx.renderer.picture_texture(&picture, picture.rgb.data(), picture.width, picture.height), ImVec2(layout.picture.x0, layout.picture.y0),
                 ImVec2(layout.picture.x1, layout.picture.y1));
    cache_->global = live->global_picture;
    if (const Image* global = cache_->global.get(); global && layout.global.w() > 0)  // a vision-language model's global view
        dl->AddImage(ctx.renderer.picture_texture(global, global->rgb.data(), global->width, global->height), ImVec2(layout.global.x0, layout.global.y0),
                     ImVec2(layout.global.x1, layout.global.y1));
    draw_items(dl, layout.items, {}, measure, palette(st.theme), ctx.scale, [&](const Item& it) {
        if (it.kind == Item::Colormap)
            dl->AddImageQuad(ctx.renderer.lut_texture(st.heatmap.colormap), ImVec2(it.box.x0, it.box.y0), ImVec2(it.box.x1, it.box.y0),
                             ImVec2(it.box.x1, it.box.y1), ImVec2(it.box.x0, it.box.y1), ImVec2(1, 0.5f), ImVec2(1, 0.5f),
                             ImVec2(0, 0.5f), ImVec2(0, 0.5f));
    });
    st.probe["image.picture"] = {layout.picture.x0, layout.picture.y0, layout.picture.w(), layout.picture.h()};
    st.probe["image.grid"] = {layout.grid.x0, layout.grid.y0, layout.grid.w(), layout.grid.h()};
    for (std::size_t i = 0; i < layout.chips.size(); ++i)
        st.probe["image.chip." + std::to_string(i)] = {layout.chips[i].x0, layout.chips[i].y0, layout.chips[i].w(), layout.chips[i].h()};
    if (in.cols > 0 && in.weights.size() == tr.keys.size()) {  // the cell the query looks at most, for the tests
        int top = 0;
        for (std::size_t i = 0; i < layout.cells.size(); ++i)
            if (in.weights[static_cast<std::size_t>(layout.cells[i])] > in.weights[static_cast<std::size_t>(layout.cells[static_cast<std::size_t>(top)])])
                top = static_cast<int>(i);
        st.probe["image.top"] = {layout.grid.x0 + static_cast<float>(top % in.cols) * layout.cell_w,
                                 layout.grid.y0 + static_cast<float>(top / in.cols) * layout.cell_h, layout.cell_w, layout.cell_h};
    }
    if (layout.global.w() > 0) st.probe["image.global"] = {layout.global.x0, layout.global.y0, layout.global.w(), layout.global.h()};

    // Hover: that token's attention (and its own weight from the query shown, in the tooltip); click: pin it.
    ImGui::SetCursorScreenPos(min);
    ImGui::InvisibleButton("##image", ImVec2(std::max(max.x - min.x, 1.0f), std::max(max.y - min.y, 1.0f)));
    if (!ctx.interactive || !ImGui::IsItemHovered()) return;
    const int token = layout.hit(ImGui::GetIO().MousePos.x, ImGui::GetIO().MousePos.y);
    if (token < 0 || token >= tr.T_k()) return;
    st.hover = {TokenRef::Query, token};
    if (ImGui::IsItemClicked()) st.pinned = st.pinned == st.hover ? TokenRef{} : st.hover;
    const bool hidden = in.hidden[static_cast<std::size_t>(token)];
    if (ImGui::IsItemClicked(ImGuiMouseButton_Right)) toggle_hidden(st, token);  // the experiment: no query attends to it
    ImGui::BeginTooltip();
    ImGui::Text("%s", token_text(tr.keys[static_cast<std::size_t>(token)]).c_str());
    if (!hidden)
        ImGui::TextDisabled(attn::tr(st.lang, Str::ImageTip), token_text(tr.queries[static_cast<std::size_t>(q)]).c_str(),
                            static_cast<double>(in.weights[static_cast<std::size_t>(token)]));
    ImGui::TextDisabled("%s", attn::tr(st.lang, hidden ? Str::ImageHidden : Str::ImageHideTip));
    ImGui::EndTooltip();
}

// [SECTION] Toolbar -----------------------------------------------------------------------------

// The heatmap's layer and head (the same choice: the map both show), and the colours.
void ImageView::toolbar(ViewContext& ctx) {
    heatmap_head_toolbar(ctx);
    toolbar_colormap(ctx);
}

}  // namespace attn
