// lines.frag: coverage of a line of width 2·v_half, with a one-pixel soft edge.
in vec4 v_color;
in float v_across;
in float v_half;
out vec4 frag_color;

void main() {
    // Thin lines (under one pixel) keep their width as coverage instead of vanishing.
    float half_w = max(v_half, 0.5);
    float coverage = clamp(half_w + 0.5 - abs(v_across), 0.0, 1.0) * min(v_half / 0.5, 1.0);
    frag_color = vec4(v_color.rgb, v_color.a * coverage);
}
