// scene_cases.hpp: scene files the long-trace tests share: shapes × masks (self, causal, cross
// with key padding, an explicit mask with a fully masked row), as JSON text.
#pragma once

#include <string>
#include <vector>

namespace attn::cases {

// ["w0","w1",…] with n tokens; with `distinct`, names repeat (w0 … w{distinct−1}): equal
// tokens have equal generated embeddings, so their weights tie exactly.
inline std::string tokens_json(int n, int distinct = 1 << 30) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) s += (i ? ",\"w" : "\"w") + std::to_string(i % distinct) + "\"";
    return s + "]";
}

inline std::vector<std::string> mask_scenes() {
    std::string padding = "[", mask = "[";
    for (int i = 0; i < 45; ++i) padding += i % 7 == 6 ? "0," : "1,";
    padding.back() = ']';
    for (int i = 0; i < 18; ++i) {  // row 17 fully masked, and a band above the diagonal
        mask += '[';
        for (int j = 0; j < 18; ++j) mask += i == 17 || j > i + 2 ? "0," : "1,";
        mask.back() = ']';
        mask += ',';
    }
    mask.back() = ']';
    return {
        R"({"tokens": )" + tokens_json(37) + R"(, "d_model": 16, "heads": 2, "weights": {"seed": 3}})",
        R"({"kind": "masked", "tokens": )" + tokens_json(70) + R"(, "d_model": 12, "heads": 3, "weights": {"seed": 5}})",
        R"({"kind": "cross", "tokens": )" + tokens_json(21) + R"(, "source_tokens": )" + tokens_json(45) +
            R"(, "d_model": 8, "heads": 4, "weights": {"seed": 9}, "key_padding": )" + padding + "}",
        R"({"tokens": )" + tokens_json(18) + R"(, "d_model": 4, "positional": "sinusoidal", "mask": )" + mask + "}",
    };
}

}  // namespace attn::cases
