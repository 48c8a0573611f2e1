// heatmap.vert: one quad (triangle strip of 4 vertices, no vertex buffer) covering the grid.
// The platform prepends the #version line (web/platform/platform.hpp).
uniform vec4 u_rect;        // grid corners in ImGui display units: x0, y0, x1, y1 (y down)
uniform vec4 u_display;     // display pos (x, y) and size (w, h) of the ImGui draw data
out vec2 v_uv;              // 0..1 across the grid: x along keys, y along queries

void main() {
    vec2 corner = vec2(float(gl_VertexID & 1), float((gl_VertexID >> 1) & 1));
    vec2 p = mix(u_rect.xy, u_rect.zw, corner);
    vec2 ndc = (p - u_display.xy) / u_display.zw * 2.0 - 1.0;
    v_uv = corner;
    gl_Position = vec4(ndc.x, -ndc.y, 0.0, 1.0);
}
