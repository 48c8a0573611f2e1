// renderer.hpp: the GPU part of the figures. GL programs for the heatmap (one textured quad:
// an RG32F value texture plus a 256-entry colormap LUT) and the lines (instanced anti-aliased
// quads, one draw call), drawn in order with ImGui's own geometry through draw-list callbacks.
//
// Per frame: views call add_heatmap / add_lines while building the UI, then
// upload_frame() runs once before ImGui's render, and the callbacks draw.
#pragma once

#include "platform.hpp"

#include <imgui.h>

#include <array>
#include <string>
#include <vector>

namespace attn {

// One line of the lines view. Positions in ImGui display units.
struct LineInstance {
    float x0, y0, x1, y1;
    float r, g, b, a;
    float width;
};

struct HeatmapDraw {
    ImVec2 min, max;                    // grid corners, display units
    int T_q = 0, T_k = 0;
    float value_min = 0.0f, value_max = 1.0f;
    int colormap = 0;
    std::array<float, 4> hatch_a{}, hatch_b{}, grid{};
    bool atlas = false;                 // read the thumbnail atlas instead of the figure's values
    int origin_x = 0, origin_y = 0;     // first texel of this map in the texture
};

class Renderer {
public:
    // Compiles the programs and creates the textures; false with a message on failure.
    bool init(std::string& error);
    void shutdown();

    // values: T_q×T_k pairs (value, allowed), row-major by query. Uploaded at once.
    void set_heatmap_values(const std::vector<float>& value_allowed, int T_q, int T_k);
    // The model view's thumbnails: many small maps side by side in one texture, width×height
    // (value, allowed) pairs, row-major. Uploaded once per import, drawn with HeatmapDraw.atlas.
    void set_atlas_values(const std::vector<float>& value_allowed, int width, int height);
    int max_texture_size() const { return max_texture_size_; }
    // 256×1 RGBA8 LUT texture of a colormap, usable with ImGui::Image for the legend.
    ImTextureID lut_texture(int colormap) const;

    void begin_frame();
    void add_heatmap(ImDrawList* draw_list, const HeatmapDraw& draw);
    void add_lines(ImDrawList* draw_list, const std::vector<LineInstance>& lines);
    void upload_frame();  // after the UI is built, before ImGui_ImplOpenGL3_RenderDrawData

private:
    struct LinesDraw {
        int first = 0, count = 0;
    };
    static void draw_callback(const ImDrawList* list, const ImDrawCmd* cmd);
    void draw_heatmap(const HeatmapDraw& draw, const ImDrawCmd* cmd);
    void draw_lines(const LinesDraw& draw, const ImDrawCmd* cmd);

    GLuint heatmap_program_ = 0, lines_program_ = 0;
    GLuint empty_vao_ = 0, lines_vao_ = 0, lines_buffer_ = 0;
    GLuint values_texture_ = 0, atlas_texture_ = 0;
    int max_texture_size_ = 2048;
    std::vector<GLuint> luts_;
    size_t lines_capacity_ = 0;

    std::vector<HeatmapDraw> heatmaps_;
    std::vector<LinesDraw> lines_draws_;
    std::vector<LineInstance> instances_;
};

}  // namespace attn
