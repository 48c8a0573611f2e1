// layer.vert: one triangle covering the viewport (3 vertices, no vertex buffer); the scissor
// keeps it to the draw's clip rectangle. Composites a cached layer (web/gpu/renderer.cpp).
void main() {
    vec2 p = vec2(float((gl_VertexID & 1) << 2), float((gl_VertexID & 2) << 1)) - 1.0;
    gl_Position = vec4(p, 0.0, 1.0);
}
