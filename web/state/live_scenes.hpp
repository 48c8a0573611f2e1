// live_scenes.hpp: built-in scenes that run a built-in model (core/model/builtin.hpp) on a
// chosen text, listed after the seeds' scenes: a trained model's attention with nothing to
// bring. Choosing one opens its model (loaded on demand), sets the text and shows the view,
// with the head the scene is about selected once the model is in.
#pragma once

#include "app_state.hpp"

#include <optional>
#include <span>
#include <string_view>

namespace attn {

struct LiveScene {
    const char* name;    // "induction"
    const char* model;   // the built-in model: "tiny-lm"
    const char* text;    // gpt2: the text; marian: "" (it translates `source`)
    const char* source;  // marian: the source
    View view;
    std::optional<HeadKind> pick;  // select the head whose score of this kind is highest
    const char* map;     // or this map ("cross_attention:2:1"), or ""
    const char* about;   // what it shows (data, as the seeds' scene descriptions are)
    const char* compare = "";  // the Compare text ("" none): with `why`, the corrupted text patched into
    bool why = false;          // the why views on: attribution, the logit lens, patching (why.hpp)
    const char* picture = "";  // a vision model's picture: one of its example files ("example-7.png"), or ""
};
std::span<const LiveScene> live_scenes();
const LiveScene* find_live_scene(std::string_view name);

// The live scene on screen: its model in use on its texts (nullptr: none).
const LiveScene* shown_live_scene(const AppState& st);

// Opens the scene's model (if another is in use) and shows the scene's text, view and head.
void open_live_scene(AppState& st, const LiveScene& scene);

}  // namespace attn
