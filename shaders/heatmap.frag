// heatmap.frag: the attention matrix as one textured quad.
// u_values is T_k wide and T_q tall, RG32F: r = the value (weight or scaled score),
// g = 1 where the query may attend to the key, 0 where the mask forbids it.
// Masked cells are hatched in two neutral tones so they never read as a weight of 0.
uniform highp sampler2D u_values;
uniform sampler2D u_lut;        // 256×1 RGBA8 colormap
uniform ivec2 u_cells;          // (T_k, T_q)
uniform ivec2 u_origin;         // first texel of the map (thumbnails share one atlas texture)
uniform vec2 u_range;           // value mapped to the first and the last LUT entry
uniform vec2 u_cell_px;         // size of one cell in framebuffer pixels
uniform float u_px;             // framebuffer pixels per display unit
uniform vec4 u_hatch_a;
uniform vec4 u_hatch_b;
uniform vec4 u_grid;            // colour of the 1-pixel lines between cells
in vec2 v_uv;
out vec4 frag_color;

void main() {
    vec2 cell_f = v_uv * vec2(u_cells);
    ivec2 cell = clamp(ivec2(floor(cell_f)), ivec2(0), u_cells - 1);
    vec2 rg = texelFetch(u_values, u_origin + cell, 0).rg;
    vec4 color;
    if (rg.g < 0.5) {
        float stripe = fract((gl_FragCoord.x + gl_FragCoord.y) / (7.0 * u_px));
        color = stripe < 0.5 ? u_hatch_a : u_hatch_b;
    } else {
        float span = u_range.y - u_range.x;
        float t = span > 0.0 ? clamp((rg.r - u_range.x) / span, 0.0, 1.0) : 0.5;
        color = texture(u_lut, vec2((t * 255.0 + 0.5) / 256.0, 0.5));
    }
    // Separate cells by a thin line once they are large enough to tell apart.
    vec2 in_cell = fract(cell_f) * u_cell_px;
    if (min(u_cell_px.x, u_cell_px.y) >= 8.0 && (in_cell.x < 1.0 || in_cell.y < 1.0))
        color = mix(color, u_grid, u_grid.a);
    frag_color = vec4(color.rgb, 1.0);
}
