// layer.frag: a cached layer's texel under this pixel (the layer is the framebuffer's size).
// Its colour is premultiplied by its alpha: it was drawn over transparent black with the
// straight-alpha blend, so blending it with (1, 1 − α) gives what drawing directly would have.
uniform sampler2D u_layer;
out vec4 frag_color;

void main() {
    frag_color = texelFetch(u_layer, ivec2(gl_FragCoord.xy), 0);
}
