// chat.cpp: chat.hpp's template lookup and rendering.
#include "chat.hpp"

#include "gguf.hpp"

namespace attn {

// [SECTION] The template a model carries ---------------------------------------------------------

namespace {

using Json = nlohmann::ordered_json;

std::shared_ptr<const ChatTemplate> read_template(const std::string& source, const std::string& file, const std::string& field) {
    try {
        return std::make_shared<const ChatTemplate>(source);
    } catch (const TemplateError& e) {
        throw ModelError(file, field, e.what());
    }
}

constexpr const char* kSpecials[] = {"bos_token", "eos_token", "unk_token", "pad_token"};

// tokenizer_config.json's special tokens: "<s>", or an AddedToken {"content": "<s>", …}.
Json config_specials(const Json& config) {
    Json out = Json::object();
    for (const char* k : kSpecials) {
        const auto it = config.find(k);
        if (it == config.end()) continue;
        if (it->is_string()) out[k] = *it;
        else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) out[k] = (*it)["content"];
    }
    return out;
}

Json gguf_specials(const GgufFile& g) {
    Json out = Json::object();
    const GgufValue* tokens = g.find("tokenizer.ggml.tokens");
    if (!tokens || tokens->type != GgufValue::Type::Array) return out;
    const std::pair<const char*, const char*> ids[] = {{"bos_token", "tokenizer.ggml.bos_token_id"},
                                                       {"eos_token", "tokenizer.ggml.eos_token_id"},
                                                       {"unk_token", "tokenizer.ggml.unknown_token_id"},
                                                       {"pad_token", "tokenizer.ggml.padding_token_id"}};
    for (const auto& [name, key] : ids) {
        const GgufValue* v = g.find(key);
        if (v && v->is_integer() && v->integer >= 0 && v->integer < static_cast<std::int64_t>(tokens->items.size()))
            out[name] = tokens->items[static_cast<std::size_t>(v->integer)].text;
    }
    return out;
}

}  // namespace

std::optional<ChatFormat> chat_format(const ModelFiles& files) {
    ChatFormat f;
    Json config = Json::object();
    if (const FileBytes* c = files.find("tokenizer_config.json")) {
        config = Json::parse(c->text(), nullptr, false);
        if (!config.is_object()) throw ModelError(files.shown("tokenizer_config.json"), "", "not a JSON object");
        f.specials = config_specials(config);
    }
    if (const FileBytes* j = files.find("chat_template.jinja")) {
        f.file = files.shown("chat_template.jinja");
        f.chat_template = read_template(std::string(j->text()), f.file, "");
        return f;
    }
    if (const auto it = config.find("chat_template"); it != config.end() && !it->is_null()) {
        const std::string shown = files.shown("tokenizer_config.json");
        f.file = shown, f.field = "chat_template";
        if (it->is_string()) {
            f.chat_template = read_template(it->get<std::string>(), shown, "chat_template");
            return f;
        }
        // transformers 4.x: several named templates; the conversation's is "default"
        if (it->is_array())
            for (size_t k = 0; k < it->size(); ++k) {
                const Json& t = (*it)[k];
                if (t.is_object() && t.value("name", Json()) == "default" && t.contains("template") && t["template"].is_string()) {
                    f.field = "chat_template[" + std::to_string(k) + "].template";
                    f.chat_template = read_template(t["template"].get<std::string>(), shown, f.field);
                    return f;
                }
            }
        throw ModelError(shown, "chat_template", "expected a template (a string) or a list of {\"name\", \"template\"} with one named \"default\"");
    }
    if (const std::string g = files.gguf(); !g.empty()) {
        const GgufFile gguf = read_gguf(files.need(g), files.shown(g));
        const GgufValue* t = gguf.find("tokenizer.chat_template");
        if (!t) return std::nullopt;
        if (t->type != GgufValue::Type::String) throw ModelError(files.shown(g), "tokenizer.chat_template", "expected a string");
        f.file = files.shown(g), f.field = "tokenizer.chat_template";
        f.chat_template = read_template(t->text, f.file, f.field);
        f.specials = gguf_specials(gguf);
        return f;
    }
    return std::nullopt;
}

// [SECTION] A conversation's text ----------------------------------------------------------------

std::string render_chat(const ChatFormat& format, const Json& chat, const std::string& shown, const TemplateOptions& options) {
    Json vars = Json::object();
    const Json* turns = &chat;
    if (chat.is_object()) {
        if (!chat.contains("messages")) throw ModelError(shown, "messages", "missing: the conversation's turns");
        for (const auto& [k, v] : chat.items())
            if (k != "messages") vars[k] = v;
        turns = &chat["messages"];
    } else if (!chat.is_array()) {
        throw ModelError(shown, "", "expected a list of turns [{\"role\": \"user\", \"content\": \"…\"}, …]");
    }
    if (!turns->is_array() || turns->empty()) throw ModelError(shown, chat.is_object() ? "messages" : "", "expected a list of at least one turn");
    for (size_t k = 0; k < turns->size(); ++k) {
        const Json& t = (*turns)[k];
        const std::string at = (chat.is_object() ? "messages[" : "[") + std::to_string(k) + "]";
        if (!t.is_object()) throw ModelError(shown, at, "expected a turn {\"role\", \"content\"}");
        if (!t.contains("role") || !t["role"].is_string()) throw ModelError(shown, at + ".role", "expected a string (system, user, assistant, tool)");
        if (!t.contains("content")) throw ModelError(shown, at + ".content", "missing");
    }
    // As apply_chat_template: the conversation, its flags, the special tokens, then the caller's variables.
    Json all = {{"messages", *turns},
                {"add_generation_prompt", turns->back()["role"] != "assistant"},
                {"tools", nullptr},
                {"documents", nullptr}};
    for (const auto& [k, v] : format.specials.items()) all[k] = v;
    for (const auto& [k, v] : vars.items()) all[k] = v;
    try {
        return format.chat_template->render(all, options);
    } catch (const TemplateError& e) {
        throw ModelError(format.file, format.field, e.raised ? std::string("the template refused the conversation: ") + e.what() : e.what());
    }
}

}  // namespace attn
