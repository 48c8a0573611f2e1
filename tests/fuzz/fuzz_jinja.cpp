// fuzz_jinja.cpp: libFuzzer target for chat templates (jinja.hpp). Any bytes as a template,
// rendered for a conversation with tools: either a TemplateError, or a text within the render's
// bounds; never a crash, a hang or unbounded memory.
//
// Invariants, for every input:
//   1. ChatTemplate reads the bytes or throws TemplateError ("line N: …");
//   2. a render ends within TemplateOptions' steps and output (TemplateError past them);
//   3. the same template renders the same text twice (no state kept between renders).
// Seeds: tests/fuzz/corpus/jinja, the real templates of tests/model/chat_templates/ (a link).
#include "jinja.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

void require(bool ok) {
    if (!ok) __builtin_trap();
}

const nlohmann::ordered_json& conversation() {
    static const nlohmann::ordered_json j = nlohmann::ordered_json::parse(R"({
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": " Hi 你好 "},
                     {"role": "assistant", "content": "<think>x</think>Hello", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
                     {"role": "tool", "content": "42"}, {"role": "user", "content": "More?"}],
        "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}],
        "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
    return j;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    attn::TemplateOptions o;
    o.max_steps = 200'000;
    o.max_output = 1u << 20;
    try {
        const attn::ChatTemplate t(source);
        std::string first;
        try {
            first = t.render(conversation(), o);
        } catch (const attn::TemplateError&) {
            return 0;
        }
        require(first.size() <= o.max_output);
        require(t.render(conversation(), o) == first);
    } catch (const attn::TemplateError& e) {
        require(e.what()[0] != '\0');
    }
    return 0;
}
