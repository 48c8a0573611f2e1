// export.cpp: PNG (off screen, at k×), SVG and scene JSON of the figure on screen (export.hpp).
//
// [SECTION] Off-screen figure
// [SECTION] SVG options, names
// [SECTION] Queue and record
// [SECTION] Menu
#include "export.hpp"

#include "app.hpp"
#include "model_view.hpp"
#include "panels.hpp"
#include "platform.hpp"
#include "theme.hpp"
#include "view.hpp"

#include <nlohmann/json.hpp>

#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

namespace attn {

// [SECTION] Off-screen figure ------------------------------------------------------------------

bool render_figure(const AppState& source, FigureDrawer drawer, int width, int height, float scale, FigureImage& out,
                   std::string& error) {
    GLint max_renderbuffer = 0, max_viewport[2] = {0, 0};
    glGetIntegerv(GL_MAX_RENDERBUFFER_SIZE, &max_renderbuffer);
    glGetIntegerv(GL_MAX_VIEWPORT_DIMS, max_viewport);
    const int limit = std::min({max_renderbuffer, max_viewport[0], max_viewport[1]});
    if (width < 1 || height < 1 || (limit > 0 && std::max(width, height) > limit)) {
        char message[160];
        std::snprintf(message, sizeof message, "a %d×%d picture is beyond this GPU's limit of %d pixels a side",
                      width, height, limit);
        error = message;
        return false;
    }

    // Its own ImGui context: its own font atlas (baked at this scale) and GL backend data.
    ImGuiContext* previous = ImGui::GetCurrentContext();
    ImGuiContext* context = ImGui::CreateContext();
    ImGui::SetCurrentContext(context);
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    ImGui_ImplOpenGL3_Init(platform::kImGuiGlslVersion);

    // A copy of the state (the figure's numbers are shared, not copied): the views write their
    // probes into it, and the screen's hover is no part of an exported figure.
    AppState st = source;
    st.hover = {};
    Fonts fonts;
    if (drawer.downloads) fonts.use_downloads_of(*drawer.downloads);
    PanelState panels;  // the figure alone: no panel is drawn
    const float ui_scale = scale * std::clamp(st.text_scale, kMinTextScale, kMaxTextScale);
    GLuint fbo = 0, color = 0;
    glGenFramebuffers(1, &fbo);
    glGenRenderbuffers(1, &color);
    glBindRenderbuffer(GL_RENDERBUFFER, color);
    glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, color);
    bool ok = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
    if (!ok) error = "no framebuffer of that size";
    // A few frames so that ImGui's layout (auto-sized items, fonts) has settled.
    for (int frame = 0; ok && frame < 3; ++frame) {
        collect_text(st, panels, fonts);
        fonts.update(ui_scale);
        apply_theme(st.theme, ui_scale);
        io.DisplaySize = ImVec2(static_cast<float>(width), static_cast<float>(height));
        io.DisplayFramebufferScale = ImVec2(1.0f, 1.0f);
        io.DeltaTime = 1.0f / 60.0f;
        io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
        ImGui_ImplOpenGL3_NewFrame();
        ImGui::NewFrame();
        drawer.renderer.begin_frame();
        st.probe.clear();
        ViewContext ctx{st, drawer.renderer, fonts, drawer.views, panels, ui_scale, false};
        draw_app(ctx, true);
        ImGui::Render();
        glBindFramebuffer(GL_FRAMEBUFFER, fbo);
        glViewport(0, 0, width, height);
        glClearColor(1, 1, 1, 1);
        glClear(GL_COLOR_BUFFER_BIT);
        drawer.renderer.upload_frame();
        ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    }
    if (ok) {
        std::vector<std::uint8_t> pixels(static_cast<size_t>(width) * height * 4);
        glPixelStorei(GL_PACK_ALIGNMENT, 1);
        glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
        // GL rows run bottom to top; images top to bottom. Opaque alpha.
        out.width = width;
        out.height = height;
        out.rgba.resize(pixels.size());
        const size_t stride = static_cast<size_t>(width) * 4;
        for (int y = 0; y < height; ++y)
            std::copy_n(pixels.data() + (height - 1 - y) * stride, stride, out.rgba.data() + y * stride);
        for (size_t i = 3; i < out.rgba.size(); i += 4) out.rgba[i] = 255;
        nlohmann::json layout = figure_state_json(st);
        layout["ui_scale"] = ui_scale;
        out.layout_json = layout.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glDeleteRenderbuffers(1, &color);
    glDeleteFramebuffers(1, &fbo);
    ImGui_ImplOpenGL3_Shutdown();
    ImGui::DestroyContext(context);
    ImGui::SetCurrentContext(previous);
    return ok;
}

// [SECTION] SVG options, names -----------------------------------------------------------------

std::string figure_title(const AppState& st) {
    char kind[64];
    std::snprintf(kind, sizeof kind, tr(st.lang, Str::AttentionTitle), ui_kind_name(st.lang, st.figure.trace().kind));
    const std::string& name = st.figure.name;
    std::string title = name.empty() ? std::string(kind) : name + " \xc2\xb7 " + kind;
    // A model's layers: the title names the layer and head, or the aggregate (web/ui/model_view.cpp).
    if (st.figure.has(Detail::Layers))
        return st.view == View::Model ? title : title + " \xc2\xb7 " + (st.view == View::Why ? tr(st.lang, Str::ViewWhy) : import_description(st));
    // Which head, when the view shows one of several (the toolbar says so on screen).
    const int head = st.view == View::Heatmap || st.view == View::Image ? st.heatmap.head : st.view == View::Steps || st.view == View::Qk ? st.steps.head : 0;
    if (st.figure.trace().heads > 1 && st.view != View::Lines) {
        // "head 1 of 3" / "头 1 / 3"; "mean · 3 heads" / "平均 · 3 个头"
        char which[64], count[64];
        if (head < 0) {
            std::snprintf(count, sizeof count, tr(st.lang, Str::HeadsMany), st.figure.trace().heads);
            title += std::string(" \xc2\xb7 ") + tr(st.lang, Str::Mean) + " \xc2\xb7 " + count;
        } else {
            std::snprintf(which, sizeof which, tr(st.lang, Str::HeadOf), head + 1, st.figure.trace().heads);
            title += std::string(" \xc2\xb7 ") + tr(st.lang, Str::Head) + " " + which;
        }
    }
    return title;
}

SvgOptions svg_options(const AppState& st) {
    SvgOptions o;
    o.view = st.view == View::Lines ? SvgView::Lines : st.view == View::Qk ? SvgView::Qk : SvgView::Heatmap;
    o.dark = st.theme == Theme::Dark;
    o.head_visible = st.lines.head_visible;
    o.threshold = st.lines.threshold;
    o.top_k = st.lines.top_k;
    const TokenRef sel = st.pinned;  // the hover is gone by the time the menu is used
    if (sel.side == TokenRef::Query) o.selected_query = sel.index;
    if (sel.side == TokenRef::Key) o.selected_key = sel.index;
    o.query_set = st.query_set;
    o.head = st.view == View::Qk ? st.steps.head : st.heatmap.head;
    o.qk = st.qk;
    o.colormap = st.heatmap.colormap;
    o.scores = st.heatmap.values == HeatValues::Scores;
    o.show_numbers = st.heatmap.show_numbers;
    o.log = st.heatmap.log_scale;
    o.zoom = st.heatmap.zoom, o.view_x = st.heatmap.view_x, o.view_y = st.heatmap.view_y;
    o.labels.title = figure_title(st);
    o.labels.lines = lines_words(st.lang);
    o.labels.heatmap = heatmap_words(st.lang);
    o.labels.qk = qk_words(st.lang);
    return o;
}

std::string figure_svg(const AppState& source, SvgPicture picture, std::string& error) {
    // Its own ImGui context for its own atlas, baked on the CPU at the picture's scale with the
    // glyphs render_figure would bake (collect_text): the same fonts, so the same widths.
    ImGuiContext* previous = ImGui::GetCurrentContext();
    ImGuiContext* context = ImGui::CreateContext();
    ImGui::SetCurrentContext(context);
    ImGui::GetIO().IniFilename = nullptr;
    AppState st = source;
    st.hover = {};
    Fonts fonts;
    fonts.cpu_only();
    if (picture.downloads) fonts.use_downloads_of(*picture.downloads);
    PanelState panels;
    const float ui_scale = picture.scale * std::clamp(st.text_scale, kMinTextScale, kMaxTextScale);
    collect_text(st, panels, fonts);
    fonts.update(ui_scale);
    const FontsMeasure measure(fonts);
    SvgOptions o = svg_options(st);
    o.width = static_cast<float>(picture.width), o.height = static_cast<float>(picture.height);
    o.scale = ui_scale;
    o.measure = &measure;
    o.lines_weights = picture.lines_weights;
    // The map as the view draws it: without its first key when the sink option applies (the
    // lines' lists, when at hand, are of the view's own copy of it).
    const Trace* drawn = &st.figure.trace();
    std::optional<Trace> sinkless;
    if (st.hides_sink(st.view)) {
        const bool lists = st.view == View::Lines && o.lines_weights && &o.lines_weights->trace() != drawn;
        drawn = lists ? &o.lines_weights->trace() : &sinkless.emplace(without_sink(*drawn));
        o.sink_hidden = st.view == View::Heatmap;
    }
    if ((st.view == View::Heatmap || st.view == View::Lines) && (o.crops = patch_crops(st, *drawn)).any())
        o.crops_rgb = st.figure.live->picture->rgb.data();
    std::string svg;
    if (st.view == View::Why) {
        const std::vector<WhyShown> grids = why_grids(st, true);
        if (grids.empty()) {
            error = "SVG: the Why view shows no grid (turn on an experiment)";
        } else {
            WhyInput in = why_view_input(figure_frame(o.width, o.height, o.scale, measure).box, ui_scale);
            in.dark = o.dark, in.colormap = st.heatmap.colormap;
            for (const WhyShown& g : grids) in.grids.push_back(g.grid);
            svg = write_items_svg(lay_out_why(in, measure).items, o, "why");
        }
    } else if (st.view == View::Image) {
        const std::optional<ImageInput> in = image_view_input(st, figure_frame(o.width, o.height, o.scale, measure).box, ui_scale);
        if (!in) {
            error = "SVG: the Picture view shows no picture";
        } else {
            const Image& picture = *st.figure.live->picture;
            const ImageLayout layout = lay_out_image(*in, measure);
            std::vector<SvgRaster> under{{layout.picture, picture.rgb.data(), picture.width, picture.height}};
            if (const Image* global = st.figure.live->global_picture.get(); global && layout.global.w() > 0)  // a vision-language model's whole picture
                under.push_back({layout.global, global->rgb.data(), global->width, global->height});
            svg = write_items_svg(layout.items, o, "image", under);
        }
    } else if (st.view != View::Lines && st.view != View::Heatmap && st.view != View::Qk) {
        error = "SVG: lines, heatmap, Q–K space, Why and Picture views only";
    } else if (st.view == View::Qk && !st.figure.has(Detail::Projections) && !st.figure.has(Detail::Queries)) error = "SVG: this map has no queries and keys";
    else if (error = svg_size_problem(*drawn, o); error.empty()) svg = write_svg(*drawn, o);
    ImGui::DestroyContext(context);
    ImGui::SetCurrentContext(previous);
    return svg;
}

std::string export_basename(const AppState& st) {
    // Letters, digits, - and _ from the figure's name; anything else becomes one '-'.
    std::string name, source = !st.figure.name.empty() ? st.figure.name : kind_name(st.figure.trace().kind);
    for (unsigned char c : source) {
        const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (keep) name += static_cast<char>(c);
        else if (!name.empty() && name.back() != '-') name += '-';
    }
    while (!name.empty() && name.back() == '-') name.pop_back();
    if (name.empty()) name = kind_name(st.figure.trace().kind);
    return "attnviz-" + name + "-" + view_name(st.view);
}

// [SECTION] Queue and record -------------------------------------------------------------------

namespace {

// 1× is the figure as laid out on screen in CSS pixels (the device pixel ratio taken out, the
// text size kept); the export window adds its padding (12 each side) and the title line
// (19 + 6) around the canvas.
std::pair<float, float> png_css_size(const App& app) {
    const AppState& st = app.state;
    const float text = st.text_scale;
    const float dpr = std::max(app.ui_scale() / std::max(text, 0.01f), 0.5f);
    // The Why view's grids may be taller than the figure (it scrolls there): the picture holds them all.
    const float h = st.view == View::Why ? std::max(st.figure_rect[3], app.views.why.content_height()) : st.figure_rect[3];
    return {st.figure_rect[2] / dpr + 24.0f * text, h / dpr + 49.0f * text};
}

}  // namespace

void run_pending_export(App& app) {
    ExportQueue& exports = app.panels.exports;
    if (!exports.pending) return;
    const ExportKind kind = *exports.pending;
    exports.pending.reset();
    const AppState& st = app.state;
    ExportRecord record;
    record.count = exports.last.count + 1;
    std::string error;
    const std::string base = export_basename(st);
    if (st.figure.empty()) {
        error = "no figure to export";
    } else if (kind == ExportKind::SceneJson) {
        if (!st.figure.has(Detail::Scene)) error = "scene JSON: this figure was not computed from a scene";
        else record.file = platform::save_file(base + ".json", "application/json", write_scene(*st.figure.scene), error);
    } else if (kind == ExportKind::Svg) {
        // The picture PNG 1× draws (below), as vector: the same size, layout and fonts.
        const int width = std::max(64, static_cast<int>(std::lround(png_css_size(app).first)));
        const int height = std::max(64, static_cast<int>(std::lround(png_css_size(app).second)));
        const std::string svg = figure_svg(st, {width, height, 1.0f, &app.fonts, app.views.lines.weights_for(st)}, error);
        if (error.empty()) record.file = platform::save_file(base + ".svg", "image/svg+xml", svg, error);
        record.width = width, record.height = height;
    } else {
        // 1× is the figure in CSS pixels (png_css_size); k× the same layout with k times the pixels.
        const int k = kind == ExportKind::Png1 ? 1 : kind == ExportKind::Png2 ? 2 : 4;
        const auto [w_css, h_css] = png_css_size(app);
        const int width = std::max(64, static_cast<int>(std::lround(w_css * k)));
        const int height = std::max(64, static_cast<int>(std::lround(h_css * k)));
        FigureImage image;
        if (render_figure(st, {app.renderer, app.views, &app.fonts}, width, height, static_cast<float>(k), image, error)) {
            const std::string name = base + (k > 1 ? "@" + std::to_string(k) + "x" : "") + ".png";
            record.file = platform::save_png(name, image.rgba, image.width, image.height, error);
            record.width = image.width;
            record.height = image.height;
        }
    }
    if (record.file.empty() && error.empty()) error = "not saved";
    record.error = error;
    record.time = ImGui::GetTime();
    exports.last = record;
}

std::string export_note(Lang lang, const ExportQueue& exports) {
    const ExportRecord& last = exports.last;
    if (last.count == 0 || ImGui::GetTime() - last.time > 8.0) return "";
    char note[600];
    if (last.error.empty()) std::snprintf(note, sizeof note, tr(lang, Str::ExportSaved), last.file.c_str());
    else std::snprintf(note, sizeof note, tr(lang, Str::ExportFailed), last.error.c_str());
    return note;
}

// [SECTION] Menu -------------------------------------------------------------------------------

void export_menu(AppState& st, ExportQueue& exports, float s) {
    if (ImGui::Button(tr(st.lang, Str::Export))) ImGui::OpenPopup("##export");
    probe(st, "export");
    const ExportRecord& last = exports.last;
    if (!last.file.empty() || !last.error.empty()) {
        if (ImGui::IsItemHovered()) {
            ImGui::BeginTooltip();
            if (last.error.empty()) ImGui::Text(tr(st.lang, Str::ExportSaved), last.file.c_str());
            else ImGui::Text(tr(st.lang, Str::ExportFailed), last.error.c_str());
            ImGui::EndTooltip();
        }
    }
    if (!ImGui::BeginPopup("##export")) return;
    struct Item {
        Str label;
        ExportKind kind;
        const char* probe;
    };
    const Item items[] = {{Str::ExportPng1, ExportKind::Png1, "export.png1"},
                          {Str::ExportPng2, ExportKind::Png2, "export.png2"},
                          {Str::ExportPng4, ExportKind::Png4, "export.png4"},
                          {Str::ExportSvg, ExportKind::Svg, "export.svg"},
                          {Str::ExportJson, ExportKind::SceneJson, "export.json"}};
    ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(8.0f * s, 6.0f * s));
    for (const Item& item : items) {
        const bool disabled = (item.kind == ExportKind::Svg && st.view != View::Lines && st.view != View::Heatmap && st.view != View::Qk &&
                               st.view != View::Why && st.view != View::Image) ||
                              (item.kind == ExportKind::SceneJson && !st.figure.has(Detail::Scene));
        if (disabled) ImGui::BeginDisabled();
        if (ImGui::Selectable(tr(st.lang, item.label), false, 0, ImVec2(190.0f * s, 0))) exports.pending = item.kind;
        if (disabled) ImGui::EndDisabled();
        probe(st, item.probe);
        if (disabled && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", tr(st.lang, Str::ExportSvgSteps));
    }
    ImGui::PopStyleVar();
    ImGui::EndPopup();
}

}  // namespace attn
