// renderer.hpp: the GPU part of the figures. GL programs for the heatmap (textured quads plus
// a 256-entry colormap LUT: the figure's map as 256×256 R8 tiles of a DisplayMap level, the
// model view's thumbnails from one RG32F atlas) and the lines (instanced anti-aliased quads,
// one draw call), drawn in order with ImGui's own geometry through draw-list callbacks.
//
// The lines are rasterized into a cached layer (a texture the framebuffer's size) only when
// they change (their version, the clip rectangle or the display); other frames composite that
// texture: one quad instead of thousands of blended figure-wide quads, which is what a
// software-rendered WebGL (SwiftShader) spends its frame on.
//
// Tiles are uploaded lazily, only those on screen at the level drawn, and kept in an LRU cache
// of at most kMaxTiles textures (kMaxTiles · 64 KB of GPU memory); a new map frees them all.
//
// Per frame: views call add_heatmap / add_lines while building the UI, then
// upload_frame() runs once before ImGui's render, and the callbacks draw.
#pragma once

#include "display_map.hpp"
#include "lines_layout.hpp"
#include "platform.hpp"

#include <imgui.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace attn {

// One line of the lines view: core/figure/lines_layout.hpp's LineSeg (end points in ImGui
// display units, colour and alpha, width), uploaded as it is.
using LineInstance = LineSeg;

struct HeatmapDraw {
    ImVec2 min, max;                    // grid corners, display units
    int T_q = 0, T_k = 0;
    float value_min = 0.0f, value_max = 1.0f;
    int colormap = 0;
    std::array<float, 4> hatch_a{}, hatch_b{}, grid{};
    std::array<float, 4> window_a{}, window_b{};  // cells outside a sliding window (the figure's map)
    int window = 0;                     // the figure's map: its sliding window W (0: none)
    bool sink_hidden = false;           // the figure's map: key 0 left out, drawn flat
    bool atlas = false;                 // the model view: read the thumbnail atlas
    int origin_x = 0, origin_y = 0;     // first texel of this map in the atlas
    // The figure's map (atlas == false): min/max is the visible box (draw it inside a clip
    // rectangle of that box); cells [cell_x0, cell_x0 + T_k) × [cell_y0, cell_y0 + T_q) of
    // level 0 fall in it, fractional at the edges. The tiles of `level` that meet it are drawn.
    const DisplayMap* map = nullptr;
    std::uint64_t map_id = 0;           // changes whenever `map` is a different map
    int level = 0;
    float cell_x0 = 0.0f, cell_y0 = 0.0f;
    float cells_w = 0.0f, cells_h = 0.0f;  // level-0 cells across the box (may be fractional)
};

inline constexpr int kTileSide = 256;   // texels
inline constexpr int kMaxTiles = 96;    // 6 MB of R8 textures

class Renderer {
public:
    // Compiles the programs and creates the textures; false with a message on failure.
    bool init(std::string& error);
    void shutdown();

    // The model view's thumbnails: many small maps side by side in one texture, width×height
    // (value, allowed) pairs, row-major. Uploaded once per import, drawn with HeatmapDraw.atlas.
    void set_atlas_values(const std::vector<float>& value_allowed, int width, int height);
    int max_texture_size() const { return max_texture_size_; }
    // The figure's tiles now held on the GPU, and their bytes.
    int tiles_resident() const { return static_cast<int>(tiles_.size()); }
    std::size_t tile_bytes() const { return tiles_.size() * static_cast<std::size_t>(kTileSide) * kTileSide; }
    int tile_uploads() const { return tile_uploads_; }  // since init (for tests)
    int line_instances() const { return static_cast<int>(instances_.size()); }  // queued this frame
    // 256×1 RGBA8 LUT texture of a colormap, usable with ImGui::Image for the legend.
    ImTextureID lut_texture(int colormap) const;
    // The Image view's picture (RGB, 8 bits a channel, rows top first) as a texture, uploaded
    // when `key` (the picture's address) changes; two pictures are held at a time (a tiled picture and its global view).
    ImTextureID picture_texture(const void* key, const std::uint8_t* rgb, int width, int height);

    void begin_frame();
    void add_heatmap(ImDrawList* draw_list, const HeatmapDraw& draw);
    // `version` names the content of `lines`: the same version means the same instances (the
    // lines view bumps it when it rebuilds them); 0 = unknown, rasterized every frame.
    void add_lines(ImDrawList* draw_list, const std::vector<LineInstance>& lines, std::uint64_t version);
    void upload_frame();  // after the UI is built, before ImGui_ImplOpenGL3_RenderDrawData
    // Mixes what this frame's callbacks will draw into `h` (with the draw lists' bytes, it tells
    // whether a frame would look like the last one: App::before_render).
    std::uint64_t signature(std::uint64_t h) const;

private:
    struct LinesDraw {
        int first = 0, count = 0;
        std::uint64_t version = 0;
    };
    // A draw's cached raster: premultiplied RGBA8, the size of the viewport it was drawn for.
    struct LinesLayer {
        GLuint texture = 0, framebuffer = 0;
        int width = 0, height = 0;
        std::uint64_t version = 0;
        std::array<float, 9> key{};  // clip rectangle, display pos/size, pixels per unit
        bool valid = false;
    };
    std::uint64_t atlas_generation_ = 0;
    std::vector<LinesLayer> layers_;  // by the draw's index in the frame
    std::vector<std::uint64_t> uploaded_versions_;  // of the draws in lines_buffer_
    void rasterize_lines(const LinesDraw& draw, const float display[4], float px);
    void free_layers();
    // A draw-list callback's user data: this renderer and the draw's tag. The n-th callback of
    // every frame keeps its address, so an unchanged frame has unchanged draw lists (App hashes them).
    struct Callback {
        Renderer* renderer = nullptr;
        std::intptr_t tag = 0;
    };
    std::vector<std::unique_ptr<Callback>> callbacks_;
    size_t callbacks_used_ = 0;
    void* callback(std::intptr_t tag);
    static void draw_callback(const ImDrawList* list, const ImDrawCmd* cmd);
    void draw_heatmap(const HeatmapDraw& draw, const ImDrawCmd* cmd);
    void draw_tiles(const HeatmapDraw& draw, const ImDrawCmd* cmd);
    GLuint use_heatmap_program(const HeatmapDraw& draw, const float display[4], float px, bool tiles);
    void free_tiles();
    struct Tile {
        GLuint texture = 0;
        int rows_uploaded = -1;         // texel rows of the tile that held final values then
        std::uint64_t used = 0;         // frame of last use (LRU)
    };
    std::map<std::tuple<int, int, int>, Tile> tiles_;  // (level, tile row, tile column)
    std::uint64_t tiles_map_id_ = 0, frame_ = 0;
    int tile_uploads_ = 0;
    void draw_lines(const LinesDraw& draw, const ImDrawCmd* cmd);

    GLuint heatmap_program_ = 0, lines_program_ = 0, layer_program_ = 0;
    GLuint empty_vao_ = 0, lines_vao_ = 0, lines_buffer_ = 0;
    GLuint atlas_texture_ = 0;
    // The pictures drawn (a vision-language model's tiles and its global view: two a frame), each
    // uploaded once while its key stays; a new one takes the slot not used last.
    struct PictureSlot {
        const void* key = nullptr;
        GLuint texture = 0;
    };
    PictureSlot pictures_[2];
    int picture_used_ = 0;  // the slot used last
    int max_texture_size_ = 2048;
    std::vector<GLuint> luts_;
    size_t lines_capacity_ = 0;

    std::vector<HeatmapDraw> heatmaps_;
    std::vector<LinesDraw> lines_draws_;
    std::vector<LineInstance> instances_;
};

}  // namespace attn
