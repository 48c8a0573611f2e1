// file_kind_check.hpp: a fuzz invariant shared by fuzz_import and fuzz_scene. Whenever nlohmann
// parses the input as a JSON object, attn::file_kind's scan of the top-level keys must give
// the verdict of looking those keys up in the parsed object. Broken JSON is decided by the
// names (import.hpp), and only needs not to crash.
#pragma once

#include "import.hpp"

#include <nlohmann/json.hpp>

#include <string_view>

inline void check_file_kind(std::string_view text) {
    const attn::FileKind kind = attn::file_kind(text);
    const auto j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) return;
    bool import = false;
    for (const char* name : {"attention", "encoder_attention", "decoder_attention", "cross_attention"})
        import = import || j.contains(name);
    if ((kind == attn::FileKind::Import) != import) __builtin_trap();
}
