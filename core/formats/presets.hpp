// presets.hpp: the seeds' worked examples as built-in scenes (shared/seeds/README.md).
#pragma once

#include "scene.hpp"

#include <string_view>
#include <vector>

namespace attn {

// Every built-in scene, each named after what it shows and carrying a description that
// says where its numbers come from.
const std::vector<Scene>& presets();

// nullptr when there is no preset of that name.
const Scene* find_preset(std::string_view name);

}  // namespace attn
