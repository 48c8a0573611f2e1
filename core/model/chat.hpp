// chat.hpp: a model's chat template (jinja.hpp) and the conversation it turns into the text an
// instruct model was trained on, as transformers' apply_chat_template does it.
//
// [SECTION] The template a model carries
// [SECTION] A conversation's text
#pragma once

#include "files.hpp"
#include "jinja.hpp"

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace attn {

// [SECTION] The template a model carries ---------------------------------------------------------

struct ChatFormat {
    std::shared_ptr<const ChatTemplate> chat_template;
    std::string file, field;           // where it was read: "MODEL/tokenizer_config.json", "chat_template"
    nlohmann::ordered_json specials;   // bos_token, eos_token, unk_token, pad_token: those the model names
};

// The chat template of a model's files, in transformers' order: chat_template.jinja, else
// tokenizer_config.json's "chat_template" (a string, or a list of {name, template}: the one
// named "default"), else a GGUF file's tokenizer.chat_template; the special tokens from
// tokenizer_config.json (strings or {"content": …}) or the GGUF's token ids. nullopt when the
// model has none (a base model). Throws ModelError naming the file and field of a template
// that does not read.
std::optional<ChatFormat> chat_format(const ModelFiles& files);

// [SECTION] A conversation's text ----------------------------------------------------------------

// The text of `chat` (SPEC.md §5 --chat): a list of turns {"role", "content"}, or an object with
// "messages" (that list) and any other variables the template reads ("tools",
// "enable_thinking", …). add_generation_prompt is on unless the last turn is the assistant's
// (then the text is the conversation as it stands). Throws ModelError(`shown`, FIELD, …) for a
// conversation that is not one, naming the turn ("[2].role"), and ModelError(format.file, format.field, …) when
// the template fails or refuses it (its raise_exception's message).
std::string render_chat(const ChatFormat& format, const nlohmann::ordered_json& chat, const std::string& shown,
                        const TemplateOptions& options = {});

}  // namespace attn
