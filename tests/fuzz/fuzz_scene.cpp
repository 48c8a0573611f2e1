// libFuzzer target: any bytes given to the scene reader either give a valid scene that
// computes to finite numbers and round-trips, or a SceneError. Nothing else may escape.
// file_kind gives the verdict of parsing the input whenever it is a JSON object.
#include "scene.hpp"
#include "file_kind_check.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    check_file_kind(text);  // import or scene: the same verdict as parsing it
    attn::Scene scene;
    try {
        scene = attn::read_scene(text);
    } catch (const attn::SceneError&) {
        return 0;
    }
    if (!(attn::read_scene(attn::write_scene(scene)) == scene)) __builtin_trap();
    // Keep each input fast: compute only scenes of a modest size.
    if (scene.tokens.size() * scene.key_tokens().size() * static_cast<size_t>(scene.d_model) > (1u << 20)) return 0;
    const attn::Trace trace = attn::compute(scene);
    if (!trace.attention.output.allFinite()) __builtin_trap();
    for (const attn::HeadTrace& h : trace.attention.heads)
        if (!h.weights.allFinite()) __builtin_trap();
    return 0;
}
