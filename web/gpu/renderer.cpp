// renderer.cpp: GL programs, textures and instancing for the figures.
//
// [SECTION] Programs
// [SECTION] Resources
// [SECTION] Queuing draws in ImGui's draw lists
// [SECTION] Drawing (inside ImGui's render, from the callbacks)
#include "renderer.hpp"

#include "colormaps.hpp"
#include "shaders.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace attn {
namespace {

// A callback's tag: which kind of draw and its index in this frame's queue.
constexpr std::intptr_t kHeatmapTag = 1 << 24;
constexpr std::intptr_t kLinesTag = 2 << 24;

// [SECTION] Programs ---------------------------------------------------------------------------

GLuint compile_stage(GLenum stage, const char* body, std::string& error) {
    GLuint shader = glCreateShader(stage);
    const char* sources[2] = {platform::kShaderPrelude, body};
    glShaderSource(shader, 2, sources, nullptr);
    glCompileShader(shader);
    GLint ok = 0;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[2048] = {};
        glGetShaderInfoLog(shader, sizeof log, nullptr, log);
        error = std::string(stage == GL_VERTEX_SHADER ? "vertex" : "fragment") + " shader: " + log;
        glDeleteShader(shader);
        return 0;
    }
    return shader;
}

GLuint link_program(const char* vert, const char* frag, const std::vector<const char*>& attributes,
                    std::string& error) {
    GLuint vs = compile_stage(GL_VERTEX_SHADER, vert, error);
    if (!vs) return 0;
    GLuint fs = compile_stage(GL_FRAGMENT_SHADER, frag, error);
    if (!fs) return glDeleteShader(vs), 0;
    GLuint program = glCreateProgram();
    glAttachShader(program, vs);
    glAttachShader(program, fs);
    for (size_t i = 0; i < attributes.size(); ++i)
        glBindAttribLocation(program, static_cast<GLuint>(i), attributes[i]);
    glLinkProgram(program);
    glDeleteShader(vs);
    glDeleteShader(fs);
    GLint ok = 0;
    glGetProgramiv(program, GL_LINK_STATUS, &ok);
    if (!ok) {
        char log[2048] = {};
        glGetProgramInfoLog(program, sizeof log, nullptr, log);
        error = std::string("link: ") + log;
        glDeleteProgram(program);
        return 0;
    }
    return program;
}

// A new 2D texture, left bound: clamped at its edges, `filter` both ways, its storage allocated
// and, when `pixels` is given, filled.
GLuint new_texture(GLint filter, GLint internal_format, int width, int height, GLenum format, GLenum type,
                   const void* pixels) {
    GLuint texture = 0;
    glGenTextures(1, &texture);
    glBindTexture(GL_TEXTURE_2D, texture);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, filter);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, filter);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glTexImage2D(GL_TEXTURE_2D, 0, internal_format, width, height, 0, format, type, pixels);
    return texture;
}

}  // namespace

// [SECTION] Resources --------------------------------------------------------------------------

bool Renderer::init(std::string& error) {
    heatmap_program_ = link_program(shaders::kHeatmapVert, shaders::kHeatmapFrag, {}, error);
    if (!heatmap_program_) return false;
    lines_program_ = link_program(shaders::kLinesVert, shaders::kLinesFrag,
                                  {"a_p0", "a_p1", "a_color", "a_width"}, error);
    if (!lines_program_) return false;
    layer_program_ = link_program(shaders::kLayerVert, shaders::kLayerFrag, {}, error);
    if (!layer_program_) return false;

    glGenVertexArrays(1, &empty_vao_);
    glGenVertexArrays(1, &lines_vao_);
    glGenBuffers(1, &lines_buffer_);
    glBindVertexArray(lines_vao_);
    glBindBuffer(GL_ARRAY_BUFFER, lines_buffer_);
    const GLsizei stride = sizeof(LineInstance);
    auto attribute = [&](GLuint index, GLint size, size_t offset) {
        glEnableVertexAttribArray(index);
        glVertexAttribPointer(index, size, GL_FLOAT, GL_FALSE, stride,
                              reinterpret_cast<const void*>(offset));
        glVertexAttribDivisor(index, 1);
    };
    attribute(0, 2, offsetof(LineInstance, x0));
    attribute(1, 2, offsetof(LineInstance, x1));
    attribute(2, 4, offsetof(LineInstance, r));
    attribute(3, 1, offsetof(LineInstance, width));
    glBindVertexArray(0);
    glBindBuffer(GL_ARRAY_BUFFER, 0);

    const float zero[2] = {0.0f, 1.0f};
    atlas_texture_ = new_texture(GL_NEAREST, GL_RG32F, 1, 1, GL_RG, GL_FLOAT, zero);
    GLint max_size = 0;
    glGetIntegerv(GL_MAX_TEXTURE_SIZE, &max_size);
    if (max_size > 0) max_texture_size_ = max_size;

    for (const Colormap& map : colormaps()) {
        const auto lut = colormap_lut(map);
        luts_.push_back(new_texture(GL_LINEAR, GL_RGBA8, 256, 1, GL_RGBA, GL_UNSIGNED_BYTE, lut.data()));
    }
    glBindTexture(GL_TEXTURE_2D, 0);
    return true;
}

void Renderer::shutdown() {
    if (heatmap_program_) glDeleteProgram(heatmap_program_);
    if (lines_program_) glDeleteProgram(lines_program_);
    if (layer_program_) glDeleteProgram(layer_program_);
    free_layers();
    if (empty_vao_) glDeleteVertexArrays(1, &empty_vao_);
    if (lines_vao_) glDeleteVertexArrays(1, &lines_vao_);
    if (lines_buffer_) glDeleteBuffers(1, &lines_buffer_);
    free_tiles();
    if (atlas_texture_) glDeleteTextures(1, &atlas_texture_);
    for (PictureSlot& p : pictures_) {
        if (p.texture) glDeleteTextures(1, &p.texture);
        p = {};
    }
    for (GLuint t : luts_) glDeleteTextures(1, &t);
    luts_.clear();
    heatmap_program_ = lines_program_ = layer_program_ = empty_vao_ = lines_vao_ = lines_buffer_ = atlas_texture_ = 0;
}

void Renderer::free_tiles() {
    for (auto& [key, tile] : tiles_) glDeleteTextures(1, &tile.texture);
    tiles_.clear();
}

void Renderer::free_layers() {
    for (LinesLayer& l : layers_) {
        if (l.framebuffer) glDeleteFramebuffers(1, &l.framebuffer);
        if (l.texture) glDeleteTextures(1, &l.texture);
    }
    layers_.clear();
}

void Renderer::set_atlas_values(const std::vector<float>& value_allowed, int width, int height) {
    ++atlas_generation_;
    glBindTexture(GL_TEXTURE_2D, atlas_texture_);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RG32F, width, height, 0, GL_RG, GL_FLOAT, value_allowed.data());
    glBindTexture(GL_TEXTURE_2D, 0);
}

ImTextureID Renderer::picture_texture(const void* key, const std::uint8_t* rgb, int width, int height) {
    int slot = pictures_[0].key == key && pictures_[0].texture ? 0 : pictures_[1].key == key && pictures_[1].texture ? 1 : -1;
    if (slot < 0) {
        slot = 1 - picture_used_;
        PictureSlot& p = pictures_[slot];
        std::vector<std::uint8_t> rgba(static_cast<std::size_t>(width) * height * 4, 255);
        for (std::size_t i = 0, n = static_cast<std::size_t>(width) * height; i < n; ++i)
            for (int c = 0; c < 3; ++c) rgba[4 * i + c] = rgb[3 * i + c];
        if (p.texture) glDeleteTextures(1, &p.texture);
        // A picture of at most 64 px a side (tiny-vit's 32 × 32) is magnified many times: its pixels are drawn
        // as squares, as the model saw them, not smoothed into a blur.
        const GLint filter = std::max(width, height) <= 64 ? GL_NEAREST : GL_LINEAR;
        p.texture = new_texture(filter, GL_RGBA8, width, height, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
        glBindTexture(GL_TEXTURE_2D, 0);
        p.key = key;
    }
    picture_used_ = slot;
    return reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(pictures_[slot].texture));
}

ImTextureID Renderer::lut_texture(int colormap) const {
    if (colormap < 0 || colormap >= static_cast<int>(luts_.size())) colormap = 0;
    return reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(luts_[colormap]));
}

// [SECTION] Queuing draws in ImGui's draw lists ------------------------------------------------

void Renderer::begin_frame() {
    ++frame_;
    callbacks_used_ = 0;
    heatmaps_.clear();
    lines_draws_.clear();
    instances_.clear();
}

void Renderer::add_heatmap(ImDrawList* draw_list, const HeatmapDraw& draw) {
    heatmaps_.push_back(draw);
    draw_list->AddCallback(draw_callback, callback(kHeatmapTag | static_cast<std::intptr_t>(heatmaps_.size() - 1)));
    draw_list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

void Renderer::add_lines(ImDrawList* draw_list, const std::vector<LineInstance>& lines, std::uint64_t version) {
    if (lines.empty()) return;
    lines_draws_.push_back({static_cast<int>(instances_.size()), static_cast<int>(lines.size()), version});
    instances_.insert(instances_.end(), lines.begin(), lines.end());
    draw_list->AddCallback(draw_callback, callback(kLinesTag | static_cast<std::intptr_t>(lines_draws_.size() - 1)));
    draw_list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

void Renderer::upload_frame() {
    if (instances_.empty()) return;
    // The buffer holds this frame's instances already when every draw has the version it was
    // uploaded with (versions are never reused for other content).
    std::vector<std::uint64_t> versions;
    for (const LinesDraw& d : lines_draws_) versions.push_back(d.version);
    const bool same = versions == uploaded_versions_ &&
                      std::none_of(versions.begin(), versions.end(), [](std::uint64_t v) { return v == 0; });
    uploaded_versions_ = std::move(versions);
    if (same) return;
    glBindBuffer(GL_ARRAY_BUFFER, lines_buffer_);
    size_t bytes = instances_.size() * sizeof(LineInstance);
    if (bytes > lines_capacity_) {
        lines_capacity_ = bytes * 2;
        glBufferData(GL_ARRAY_BUFFER, static_cast<GLsizeiptr>(lines_capacity_), nullptr, GL_DYNAMIC_DRAW);
    }
    glBufferSubData(GL_ARRAY_BUFFER, 0, static_cast<GLsizeiptr>(bytes), instances_.data());
    glBindBuffer(GL_ARRAY_BUFFER, 0);
}

std::uint64_t Renderer::signature(std::uint64_t h) const {
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 0x9E3779B97F4A7C15ull, h ^= h >> 29; };
    auto mixf = [&mix](float f) { std::uint32_t u; std::memcpy(&u, &f, 4); mix(u); };
    mix(atlas_generation_);
    for (const HeatmapDraw& d : heatmaps_) {
        for (float f : {d.min.x, d.min.y, d.max.x, d.max.y, d.value_min, d.value_max, d.cell_x0, d.cell_y0, d.cells_w, d.cells_h})
            mixf(f);
        for (const auto* a : {&d.hatch_a, &d.hatch_b, &d.grid, &d.window_a, &d.window_b})
            for (float f : *a) mixf(f);
        mix(static_cast<std::uint64_t>(d.window) << 1 | static_cast<std::uint64_t>(d.sink_hidden));
        mix(static_cast<std::uint64_t>(d.T_q) << 32 | static_cast<std::uint32_t>(d.T_k));
        mix(static_cast<std::uint64_t>(d.colormap) << 40 | static_cast<std::uint64_t>(d.atlas) << 32 |
            static_cast<std::uint32_t>(d.origin_x) << 16 | static_cast<std::uint32_t>(d.origin_y));
        mix(d.map_id), mix(static_cast<std::uint64_t>(d.level));
        // The tiles fill in as the map builds: their rows done so far.
        if (d.map && d.level >= 0 && d.level < static_cast<int>(d.map->levels.size()))
            mix(static_cast<std::uint64_t>(d.map->levels[static_cast<size_t>(d.level)].done_rows));
    }
    for (const LinesDraw& d : lines_draws_) {
        mix(d.version), mix(static_cast<std::uint64_t>(d.count));
        if (d.version == 0) mix(frame_);  // unknown content: never the same as the last frame's
    }
    return h;
}

// [SECTION] Drawing (inside ImGui's render, from the callbacks) --------------------------------

namespace {

struct DisplayInfo {
    float display[4];  // pos x, y, size w, h
    float px;          // framebuffer pixels per display unit
};

// Sets the scissor to the command's clip rectangle (ImGui's backend does so only for its own
// draw commands) and returns the mapping from display units to the framebuffer.
DisplayInfo prepare(const ImDrawCmd* cmd) {
    ImDrawData* data = ImGui::GetDrawData();
    DisplayInfo info{{data->DisplayPos.x, data->DisplayPos.y, data->DisplaySize.x, data->DisplaySize.y},
                     data->FramebufferScale.x};
    const float fb_height = data->DisplaySize.y * data->FramebufferScale.y;
    ImVec2 clip_min((cmd->ClipRect.x - data->DisplayPos.x) * data->FramebufferScale.x,
                    (cmd->ClipRect.y - data->DisplayPos.y) * data->FramebufferScale.y);
    ImVec2 clip_max((cmd->ClipRect.z - data->DisplayPos.x) * data->FramebufferScale.x,
                    (cmd->ClipRect.w - data->DisplayPos.y) * data->FramebufferScale.y);
    glEnable(GL_SCISSOR_TEST);
    glScissor(static_cast<GLint>(clip_min.x), static_cast<GLint>(fb_height - clip_max.y),
              static_cast<GLsizei>(clip_max.x - clip_min.x), static_cast<GLsizei>(clip_max.y - clip_min.y));
    glEnable(GL_BLEND);
    glBlendEquation(GL_FUNC_ADD);
    glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
    return info;
}

}  // namespace

void* Renderer::callback(std::intptr_t tag) {
    if (callbacks_used_ == callbacks_.size()) callbacks_.push_back(std::make_unique<Callback>());
    Callback& c = *callbacks_[callbacks_used_++];
    c = {this, tag};
    return &c;
}

void Renderer::draw_callback(const ImDrawList*, const ImDrawCmd* cmd) {
    const Callback& c = *static_cast<const Callback*>(cmd->UserCallbackData);
    Renderer& r = *c.renderer;
    auto index = static_cast<size_t>(c.tag & 0xffffff);
    if ((c.tag & ~0xffffff) == kHeatmapTag && index < r.heatmaps_.size()) r.draw_heatmap(r.heatmaps_[index], cmd);
    if ((c.tag & ~0xffffff) == kLinesTag && index < r.lines_draws_.size()) r.draw_lines(r.lines_draws_[index], cmd);
}

// The heatmap program with what both of its modes share: the display mapping, the hatch and
// grid colours, the values on texture unit 0 and the colormap's LUT bound on unit 1.
GLuint Renderer::use_heatmap_program(const HeatmapDraw& d, const float display[4], float px, bool tiles) {
    const GLuint p = heatmap_program_;
    glUseProgram(p);
    glUniform4fv(glGetUniformLocation(p, "u_display"), 1, display);
    glUniform1f(glGetUniformLocation(p, "u_px"), px);
    glUniform1i(glGetUniformLocation(p, "u_tiles"), tiles ? 1 : 0);
    glUniform4fv(glGetUniformLocation(p, "u_hatch_a"), 1, d.hatch_a.data());
    glUniform4fv(glGetUniformLocation(p, "u_hatch_b"), 1, d.hatch_b.data());
    glUniform4fv(glGetUniformLocation(p, "u_grid"), 1, d.grid.data());
    glUniform4fv(glGetUniformLocation(p, "u_window_a"), 1, d.window_a.data());
    glUniform4fv(glGetUniformLocation(p, "u_window_b"), 1, d.window_b.data());
    glUniform1i(glGetUniformLocation(p, "u_window"), tiles ? d.window : 0);
    glUniform1i(glGetUniformLocation(p, "u_sink_hidden"), tiles && d.sink_hidden ? 1 : 0);
    glUniform2i(glGetUniformLocation(p, "u_first_cell"), 0, 0);
    glUniform1i(glGetUniformLocation(p, "u_texel_cells"), 1);
    glUniform1i(glGetUniformLocation(p, "u_values"), 0);
    glUniform1i(glGetUniformLocation(p, "u_lut"), 1);
    glActiveTexture(GL_TEXTURE1);
    glBindTexture(GL_TEXTURE_2D, luts_[d.colormap >= 0 && d.colormap < (int)luts_.size() ? d.colormap : 0]);
    glActiveTexture(GL_TEXTURE0);
    return p;
}

void Renderer::draw_heatmap(const HeatmapDraw& d, const ImDrawCmd* cmd) {
    if (!d.atlas) return draw_tiles(d, cmd);
    DisplayInfo info = prepare(cmd);
    const GLuint p = use_heatmap_program(d, info.display, info.px, false);
    glUniform4f(glGetUniformLocation(p, "u_rect"), d.min.x, d.min.y, d.max.x, d.max.y);
    glUniform2i(glGetUniformLocation(p, "u_cells"), d.T_k, d.T_q);
    glUniform2i(glGetUniformLocation(p, "u_origin"), d.origin_x, d.origin_y);
    glUniform2f(glGetUniformLocation(p, "u_range"), d.value_min, d.value_max);
    glUniform2f(glGetUniformLocation(p, "u_cell_px"), (d.max.x - d.min.x) / d.T_k * info.px,
                (d.max.y - d.min.y) / d.T_q * info.px);
    glBindTexture(GL_TEXTURE_2D, atlas_texture_);
    glBindVertexArray(empty_vao_);
    glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
    glActiveTexture(GL_TEXTURE1);
    glBindTexture(GL_TEXTURE_2D, 0);
    glActiveTexture(GL_TEXTURE0);
}

void Renderer::draw_tiles(const HeatmapDraw& d, const ImDrawCmd* cmd) {
    if (!d.map || d.map->levels.empty()) return;
    if (d.map_id != tiles_map_id_) free_tiles(), tiles_map_id_ = d.map_id;
    const int level_i = std::clamp(d.level, 0, static_cast<int>(d.map->levels.size()) - 1);
    const DisplayLevel& level = d.map->levels[static_cast<size_t>(level_i)];
    const float scale = static_cast<float>(1 << level_i);  // level-0 cells per texel
    // Display units per level-0 cell, and the texels of this level that meet the box.
    const float ux = (d.max.x - d.min.x) / d.cells_w, uy = (d.max.y - d.min.y) / d.cells_h;
    const int tx0 = std::max(0, static_cast<int>(std::floor(d.cell_x0 / scale)) / kTileSide);
    const int ty0 = std::max(0, static_cast<int>(std::floor(d.cell_y0 / scale)) / kTileSide);
    const int tx1 = std::min((level.cols - 1) / kTileSide, static_cast<int>(std::ceil((d.cell_x0 + d.cells_w) / scale)) / kTileSide);
    const int ty1 = std::min((level.rows - 1) / kTileSide, static_cast<int>(std::ceil((d.cell_y0 + d.cells_h) / scale)) / kTileSide);

    DisplayInfo info = prepare(cmd);
    const GLuint p = use_heatmap_program(d, info.display, info.px, true);
    glUniform2i(glGetUniformLocation(p, "u_origin"), 0, 0);
    // Grid lines between cells only at level 0, where a texel is a cell.
    glUniform2f(glGetUniformLocation(p, "u_cell_px"), level_i == 0 ? ux * info.px : 0.0f, level_i == 0 ? uy * info.px : 0.0f);
    glBindVertexArray(empty_vao_);
    const GLint u_rect = glGetUniformLocation(p, "u_rect"), u_cells = glGetUniformLocation(p, "u_cells"),
                u_done = glGetUniformLocation(p, "u_done"), u_first_cell = glGetUniformLocation(p, "u_first_cell");
    glUniform1i(glGetUniformLocation(p, "u_texel_cells"), 1 << level_i);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, level.cols);
    for (int ty = ty0; ty <= ty1; ++ty)
        for (int tx = tx0; tx <= tx1; ++tx) {
            const int r0 = ty * kTileSide, c0 = tx * kTileSide;
            const int h = std::min(kTileSide, level.rows - r0), w = std::min(kTileSide, level.cols - c0);
            const int done = std::clamp(level.done_rows - r0, 0, h);
            Tile& tile = tiles_[{level_i, ty, tx}];
            tile.used = frame_;
            if (!tile.texture)
                tile.texture = new_texture(GL_NEAREST, GL_R8, kTileSide, kTileSide, GL_RED, GL_UNSIGNED_BYTE, nullptr);
            else
                glBindTexture(GL_TEXTURE_2D, tile.texture);
            if (tile.rows_uploaded != done) {  // new, or rows have been filled in since
                const int from = std::max(tile.rows_uploaded, 0);
                if (done > from)
                    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, from, w, done - from, GL_RED, GL_UNSIGNED_BYTE,
                                    level.texels.data() + static_cast<size_t>(r0 + from) * level.cols + c0);
                tile.rows_uploaded = done;
                ++tile_uploads_;
            }
            // The tile's rectangle on screen: its level-0 cells relative to the box's first cell.
            const float x0 = d.min.x + (c0 * scale - d.cell_x0) * ux, y0 = d.min.y + (r0 * scale - d.cell_y0) * uy;
            glUniform4f(u_rect, x0, y0, x0 + w * scale * ux, y0 + h * scale * uy);
            glUniform2i(u_cells, w, h);
            glUniform1i(u_done, done);
            glUniform2i(u_first_cell, c0 << level_i, r0 << level_i);
            glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
        }
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    // Least recently used tiles go once over the bound (never those of this frame).
    while (tiles_.size() > static_cast<size_t>(kMaxTiles)) {
        auto oldest = std::min_element(tiles_.begin(), tiles_.end(),
                                       [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
        if (oldest->second.used == frame_) break;
        glDeleteTextures(1, &oldest->second.texture);
        tiles_.erase(oldest);
    }
    glActiveTexture(GL_TEXTURE1);
    glBindTexture(GL_TEXTURE_2D, 0);
    glActiveTexture(GL_TEXTURE0);
}

// Draws the instances of `d` into whatever framebuffer is bound (blend and scissor as set).
void Renderer::rasterize_lines(const LinesDraw& d, const float display[4], float px) {
    GLuint p = lines_program_;
    glUseProgram(p);
    glUniform4fv(glGetUniformLocation(p, "u_display"), 1, display);
    glUniform1f(glGetUniformLocation(p, "u_px"), px);
    glBindVertexArray(lines_vao_);
    // Point the per-instance attributes at this draw's range of the frame's buffer.
    glBindBuffer(GL_ARRAY_BUFFER, lines_buffer_);
    const GLsizei stride = sizeof(LineInstance);
    const size_t base = static_cast<size_t>(d.first) * sizeof(LineInstance);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, stride, reinterpret_cast<const void*>(base + offsetof(LineInstance, x0)));
    glVertexAttribPointer(1, 2, GL_FLOAT, GL_FALSE, stride, reinterpret_cast<const void*>(base + offsetof(LineInstance, x1)));
    glVertexAttribPointer(2, 4, GL_FLOAT, GL_FALSE, stride, reinterpret_cast<const void*>(base + offsetof(LineInstance, r)));
    glVertexAttribPointer(3, 1, GL_FLOAT, GL_FALSE, stride, reinterpret_cast<const void*>(base + offsetof(LineInstance, width)));
    glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, d.count);
    glBindVertexArray(0);
}

void Renderer::draw_lines(const LinesDraw& d, const ImDrawCmd* cmd) {
    DisplayInfo info = prepare(cmd);
    const auto index = static_cast<size_t>(&d - lines_draws_.data());
    if (d.version == 0) return rasterize_lines(d, info.display, info.px);
    GLint viewport[4] = {}, bound = 0;
    glGetIntegerv(GL_VIEWPORT, viewport);
    glGetIntegerv(GL_FRAMEBUFFER_BINDING, &bound);
    if (layers_.size() <= index) layers_.resize(index + 1);
    LinesLayer& layer = layers_[index];
    const int w = viewport[2], h = viewport[3];
    if (w <= 0 || h <= 0) return;
    if (!layer.texture || layer.width != w || layer.height != h) {
        if (layer.texture) glDeleteTextures(1, &layer.texture);
        if (!layer.framebuffer) glGenFramebuffers(1, &layer.framebuffer);
        layer.texture = new_texture(GL_NEAREST, GL_RGBA8, w, h, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
        glBindFramebuffer(GL_FRAMEBUFFER, layer.framebuffer);
        glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, layer.texture, 0);
        const bool complete = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
        glBindFramebuffer(GL_FRAMEBUFFER, static_cast<GLuint>(bound));
        layer.width = w, layer.height = h, layer.valid = false;
        if (!complete) {  // no render-to-texture here: draw the lines directly, every frame
            glDeleteFramebuffers(1, &layer.framebuffer), glDeleteTextures(1, &layer.texture);
            layer = {};
            return rasterize_lines(d, info.display, info.px);
        }
    }
    const std::array<float, 9> key = {cmd->ClipRect.x, cmd->ClipRect.y, cmd->ClipRect.z, cmd->ClipRect.w, info.display[0],
                                      info.display[1], info.display[2], info.display[3], info.px};
    if (!layer.valid || layer.version != d.version || layer.key != key) {
        // Over transparent black with the straight-alpha blend prepare() set: the layer ends up
        // premultiplied (colour Σ αc over the lines in order, alpha their coverage).
        glBindFramebuffer(GL_FRAMEBUFFER, layer.framebuffer);
        glClearColor(0.0f, 0.0f, 0.0f, 0.0f);
        glClear(GL_COLOR_BUFFER_BIT);  // inside the scissor: the clip rectangle
        rasterize_lines(d, info.display, info.px);
        glBindFramebuffer(GL_FRAMEBUFFER, static_cast<GLuint>(bound));
        layer.version = d.version, layer.key = key, layer.valid = true;
    }
    glBlendFuncSeparate(GL_ONE, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
    glUseProgram(layer_program_);
    glUniform1i(glGetUniformLocation(layer_program_, "u_layer"), 0);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, layer.texture);
    glBindVertexArray(empty_vao_);
    glDrawArrays(GL_TRIANGLES, 0, 3);
    glBindVertexArray(0);
    glBindTexture(GL_TEXTURE_2D, 0);
}

}  // namespace attn
