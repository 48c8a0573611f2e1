// jinja.hpp: a Jinja engine for the chat templates models carry (tokenizer_config.json's
// `chat_template`, chat_template.jinja, GGUF's `tokenizer.chat_template`). transformers renders
// them with Jinja2 (an ImmutableSandboxedEnvironment, trim_blocks and lstrip_blocks on, the
// loopcontrols extension, its own `tojson`, `raise_exception` and `strftime_now`); this reads
// the subset real templates use and renders it as Jinja2 does, checked against Hugging Face's
// own @huggingface/jinja on real templates (tests/test_jinja.cpp, tests/model/chat_templates/):
//   text and tags        {{ … }} {% … %} {# … #}, `-` on either side trims the whitespace there
//                        ({%+ keeps it), trim_blocks and lstrip_blocks as transformers sets them
//   statements           if / elif / else, for (tuple targets, `if` filter, else, loop.index,
//                        index0, revindex(0), first, last, length, previtem, nextitem, cycle),
//                        break, continue, set (targets, `ns.attr`, block set), macro (defaults,
//                        caller), call, filter, raw, generation (transformers' assistant mask:
//                        rendered as its body)
//   expressions          literals (strings, numbers, true/True/none/None, lists, tuples,
//                        dicts), `.attr`, [i], [a:b:c], calls with keywords, + - * / // % **
//                        ~, comparisons, in / not in, and / or / not, `x if c else y`
//   filters              abs capitalize count d default dictsort e escape first float indent
//                        int items join last length list lower map max min reject rejectattr
//                        replace reverse round safe select selectattr sort string sum title
//                        tojson trim unique upper wordcount
//   tests                boolean callable defined divisibleby eq equalto even false float ge gt
//                        in integer iterable le lower lt mapping ne none number odd sameas
//                        sequence string true undefined upper
//   globals              range, namespace, dict, raise_exception, strftime_now
//   methods              str: strip lstrip rstrip split startswith endswith upper lower title
//                        capitalize replace find count; dict: items keys values get
// Values print as Python prints them (True, None, ['a', 1]); `tojson` writes json.dumps'
// separators and keeps every key in the order given (ensure_ascii off, as transformers').
// Anything else is refused with the line it is on; renders are bounded (output, loops,
// recursion), so a hostile template ends in an error, never a hang.
//
// [SECTION] Rendering
#pragma once

#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace attn {

// [SECTION] Rendering --------------------------------------------------------------------------

// A template that does not read (line N: what) or a render that fails; `raised` is set when
// the template itself raised (raise_exception), `what()` is then its own message.
struct TemplateError : std::runtime_error {
    TemplateError(const std::string& what, bool by_template = false) : std::runtime_error(what), raised(by_template) {}
    bool raised;
};

struct TemplateOptions {
    std::tm now{};                       // what strftime_now formats (chat_template_now(): the local time)
    std::size_t max_output = 16u << 20;  // bytes
    long max_steps = 10'000'000;         // statements and loop iterations together
};

class ChatTemplate {
public:
    struct Node;  // jinja.cpp

    explicit ChatTemplate(std::string_view source);  // throws TemplateError
    ~ChatTemplate();
    ChatTemplate(ChatTemplate&&) noexcept;
    ChatTemplate& operator=(ChatTemplate&&) noexcept;

    // The text for `variables` (an object: messages, add_generation_prompt, bos_token, tools, …).
    std::string render(const nlohmann::ordered_json& variables, const TemplateOptions& options = {}) const;

private:
    std::unique_ptr<Node> root_;
};

// The local time now, as transformers' strftime_now reads it.
std::tm chat_template_now();

}  // namespace attn
