// lines.vert: one instanced quad per query-key line; 4 vertices (triangle strip) per instance.
// Per instance: both end points in display units, the colour (alpha from the weight) and the
// width. The quad is widened by one framebuffer pixel on each side for the anti-aliased edge.
uniform vec4 u_display;     // display pos (x, y) and size (w, h)
uniform float u_px;         // framebuffer pixels per display unit
in vec2 a_p0;
in vec2 a_p1;
in vec4 a_color;
in float a_width;
out vec4 v_color;
out float v_across;         // signed distance from the centre line, in framebuffer pixels
out float v_half;           // half the line width, in framebuffer pixels

void main() {
    float along = float(gl_VertexID & 1);
    float side = float((gl_VertexID >> 1) & 1) * 2.0 - 1.0;
    vec2 dir = a_p1 - a_p0;
    float len = max(length(dir), 1e-4);
    vec2 normal = vec2(-dir.y, dir.x) / len;
    float half_px = 0.5 * a_width * u_px;
    float reach = half_px + 1.0;
    vec2 p = mix(a_p0, a_p1, along) + normal * side * (reach / u_px);
    vec2 ndc = (p - u_display.xy) / u_display.zw * 2.0 - 1.0;
    v_color = a_color;
    v_across = side * reach;
    v_half = half_px;
    gl_Position = vec4(ndc.x, -ndc.y, 0.0, 1.0);
}
