// heatmap.frag: an attention map as textured quads, in one of two encodings.
// u_tiles = 1: the figure's map, one 256×256 R8 tile per quad (core/figure/display_map.hpp): the byte
//   0..254 is the position in the colormap range, 255 a masked cell; texel rows from u_done on
//   are not computed yet (drawn flat, so the map visibly fills in).
// u_tiles = 0: the model view's thumbnails, RG32F: r = the value, g = 1 where the query may
//   attend to the key, 0 where the mask forbids it, 0.25 outside a sliding window; u_range maps
//   r to the LUT.
// Masked cells are hatched in two neutral tones so they never read as a weight of 0; those
// outside a sliding window (u_window > 0: keys k <= q - u_window) in two warm tones striped the
// other way; the first key's column left out of the map (u_sink_hidden) is one flat tone.
uniform highp sampler2D u_values;
uniform sampler2D u_lut;        // 256×1 RGBA8 colormap
uniform int u_tiles;
uniform ivec2 u_cells;          // texels across the quad (T_k, T_q for a thumbnail)
uniform ivec2 u_origin;         // first texel of the map (thumbnails share one atlas texture)
uniform int u_done;             // tiles: texel rows holding final values
uniform vec2 u_range;           // thumbnails: value mapped to the first and the last LUT entry
uniform vec2 u_cell_px;         // size of one cell in framebuffer pixels (0: no grid lines)
uniform float u_px;             // framebuffer pixels per display unit
uniform vec4 u_hatch_a;
uniform vec4 u_hatch_b;
uniform vec4 u_grid;            // colour of the 1-pixel lines between cells
uniform vec4 u_window_a;
uniform vec4 u_window_b;
uniform int u_window;           // tiles: the sliding window W (0: none)
uniform ivec2 u_first_cell;     // tiles: the level-0 cell (key, query) of the tile's first texel
uniform int u_texel_cells;      // tiles: level-0 cells per texel side (2^level)
uniform int u_sink_hidden;      // tiles: key 0 is left out (rows renormalized without it)
in vec2 v_uv;
out vec4 frag_color;

void main() {
    vec2 cell_f = v_uv * vec2(u_cells);
    ivec2 cell = clamp(ivec2(floor(cell_f)), ivec2(0), u_cells - 1);
    bool masked;
    bool window_texel = false;  // thumbnails: g = 0.25, outside the layer's sliding window
    float t;
    if (u_tiles == 1) {
        if (cell.y >= u_done) {  // not computed yet
            frag_color = vec4(mix(u_hatch_b.rgb, u_hatch_a.rgb, 0.25), 1.0);
            return;
        }
        float byte = floor(texelFetch(u_values, cell, 0).r * 255.0 + 0.5);
        masked = byte > 254.5;
        t = byte / 254.0;
    } else {
        vec2 rg = texelFetch(u_values, u_origin + cell, 0).rg;
        masked = rg.g < 0.5;
        window_texel = rg.g > 0.125 && rg.g < 0.5;
        float span = u_range.y - u_range.x;
        t = span > 0.0 ? clamp((rg.r - u_range.x) / span, 0.0, 1.0) : 0.5;
    }
    vec4 color;
    // The level-0 cells under this texel (tiles), to tell which mask it is: its centre's key and query.
    int n = u_tiles == 1 ? u_texel_cells : 1;
    ivec2 c0 = u_first_cell + cell * n;
    float k_mid = float(c0.x) + 0.5 * float(n - 1), q_mid = float(c0.y) + 0.5 * float(n - 1);
    if (masked && u_tiles == 1 && u_sink_hidden == 1 && c0.x == 0 && n == 1) {
        color = vec4(mix(u_hatch_b.rgb, u_hatch_a.rgb, 0.5), 1.0);
    } else if (masked && (u_tiles == 1 ? u_window > 0 && k_mid <= q_mid - float(u_window) : window_texel)) {
        float stripe = fract((gl_FragCoord.x - gl_FragCoord.y) / (7.0 * u_px));
        color = stripe < 0.5 ? u_window_a : u_window_b;
    } else if (masked) {
        float stripe = fract((gl_FragCoord.x + gl_FragCoord.y) / (7.0 * u_px));
        color = stripe < 0.5 ? u_hatch_a : u_hatch_b;
    } else {
        color = texture(u_lut, vec2((t * 255.0 + 0.5) / 256.0, 0.5));
    }
    // Separate cells by a thin line once they are large enough to tell apart.
    vec2 in_cell = fract(cell_f) * u_cell_px;
    if (min(u_cell_px.x, u_cell_px.y) >= 8.0 && (in_cell.x < 1.0 || in_cell.y < 1.0))
        color = mix(color, u_grid, u_grid.a);
    frag_color = vec4(color.rgb, 1.0);
}
