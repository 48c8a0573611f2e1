// config.cpp: config.json's fields, checked (family.hpp's ConfigFields), and read_config, which
// hands the fields to the family model_type names (families/*.cpp).
//
// [SECTION] Fields
// [SECTION] read_config
#include "config.hpp"

#include "family.hpp"
#include "files.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace attn {

namespace {

using nlohmann::json;

// Sizes and ids beyond this are no model's: 2^24 keeps every product of the shapes' sizes that
// the loader forms (3·d_model, 4·d_model) inside an int.
constexpr long long kMaxField = 1 << 24;

}  // namespace

// [SECTION] Fields ---------------------------------------------------------------------------

void ConfigFields::fail(const std::string& field, const std::string& message) const {
    throw ModelError(file, path + field, message);
}

const json* ConfigFields::find(const std::string& field) const {
    auto it = j.find(field);
    if (read && it != j.end()) read->insert(path + field);
    return it == j.end() || it->is_null() ? nullptr : &*it;
}

int ConfigFields::integer(const std::string& field, int minimum, std::optional<int> fallback) const {
    const json* v = find(field);
    if (!v) {
        if (fallback) return *fallback;
        fail(field, "missing");
    }
    const std::string what = minimum == 1 ? "a positive integer" : minimum == 0 ? "a non-negative integer" : "an integer";
    if (!v->is_number_integer()) fail(field, "expected " + what + ", got " + v->dump());
    const long long n = v->get<long long>();
    if (n < minimum) fail(field, "expected " + what + ", got " + v->dump());
    if (n > kMaxField) fail(field, "expected " + what + " up to " + std::to_string(kMaxField) + ", got " + v->dump());
    return static_cast<int>(n);
}

int ConfigFields::token(const std::string& field) const {
    const json* v = find(field);
    if (v && v->is_array()) {  // Llama 3's eos_token_id: [128001, 128008, 128009]; the first
        if (v->empty()) return -1;
        if (!(*v)[0].is_number_integer() || (*v)[0].get<long long>() < 0 || (*v)[0].get<long long>() > kMaxField)
            fail(field, "expected token ids, got " + v->dump());
        return static_cast<int>((*v)[0].get<long long>());
    }
    return integer(field, 0, -1);
}

float ConfigFields::positive(const std::string& field, float fallback) const {
    const json* v = find(field);
    if (!v) return fallback;
    // Positive as a float too: 1e-50 is 0 in F32, and the runtime computes in F32.
    const double d = v->is_number() ? v->get<double>() : 0.0;
    if (!v->is_number() || !(d > 0) || !std::isfinite(d) || !(static_cast<float>(d) > 0) || !std::isfinite(static_cast<float>(d)))
        fail(field, "expected a positive number (of float's range), got " + v->dump());
    return static_cast<float>(d);
}

double ConfigFields::real(const std::string& field, std::optional<double> fallback) const {
    const json* v = find(field);
    if (!v) {
        if (fallback) return *fallback;
        fail(field, "missing");
    }
    if (!v->is_number() || !std::isfinite(v->get<double>())) fail(field, "expected a number, got " + v->dump());
    return v->get<double>();
}

bool ConfigFields::boolean(const std::string& field, bool fallback) const {
    const json* v = find(field);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(field, "expected true or false, got " + v->dump());
    return v->get<bool>();
}

std::string ConfigFields::text(const std::string& field, const std::string& fallback) const {
    const json* v = find(field);
    if (!v) return fallback;
    if (!v->is_string()) fail(field, "expected a string, got " + v->dump());
    return v->get<std::string>();
}

std::vector<double> ConfigFields::reals(const std::string& field, std::size_t n) const {
    const json* v = find(field);
    if (!v) fail(field, "missing");
    if (!v->is_array() || v->size() != n) fail(field, "expected a list of " + std::to_string(n) + " numbers");
    std::vector<double> out;
    for (const json& e : *v) {
        if (!e.is_number() || !std::isfinite(e.get<double>())) fail(field, "expected a list of " + std::to_string(n) + " numbers");
        out.push_back(e.get<double>());
    }
    return out;
}

std::vector<std::string> ConfigFields::texts(const std::string& field, std::size_t n) const {
    const json* v = find(field);
    if (!v) fail(field, "missing");
    if (!v->is_array() || v->size() != n) fail(field, "expected a list of " + std::to_string(n) + " strings");
    std::vector<std::string> out;
    for (const json& e : *v) {
        if (!e.is_string()) fail(field, "expected a list of " + std::to_string(n) + " strings");
        out.push_back(e.get<std::string>());
    }
    return out;
}

Activation ConfigFields::activation(const std::string& field, const std::string& fallback) const {
    const std::string a = text(field, fallback);
    if (a == "gelu") return Activation::GeluExact;
    if (a == "gelu_new" || a == "gelu_pytorch_tanh") return Activation::GeluTanh;
    if (a == "relu") return Activation::Relu;
    if (a == "silu" || a == "swish") return Activation::Silu;
    if (a == "quick_gelu") return Activation::QuickGelu;
    fail(field, "\"" + a + "\" is not one of gelu, gelu_new, gelu_pytorch_tanh, relu, silu, swish, quick_gelu");
}

int ConfigFields::heads(const std::string& field, int d, const std::string& d_field) const {
    find(field);
    const json* v = j.contains(field) ? &j.at(field) : nullptr;
    const int n = v && v->is_number_integer() && v->get<long long>() > 0 && v->get<long long>() <= kMaxField
                      ? static_cast<int>(v->get<long long>())
                      : 0;
    if (!v) fail(field, "missing");
    if (n <= 0 || d % n != 0)
        fail(field, "expected a positive integer that divides " + d_field + " (" + std::to_string(d) + ")" +
                        (n > 0 || !v ? "" : ", got " + v->dump()));
    return n;
}

std::optional<ConfigFields> ConfigFields::object(const std::string& field) const {
    const json* v = find(field);
    if (!v) return std::nullopt;
    if (!v->is_object()) fail(field, "expected an object, got " + v->dump());
    return ConfigFields{*v, file, path + field + ".", read};
}

// [SECTION] read_config ----------------------------------------------------------------------

namespace {

// Fields of config.json that change the math: present (not null, not false) but never looked at
// by the family that read the file, they are refused, not ignored. Every field whose name starts
// with "rope_" is one of them too.
constexpr const char* kMathFields[] = {
    "partial_rotary_factor", "layer_types", "no_rope_layers", "no_rope_layer_interval", "attention_chunk_size",
    "use_bidirectional_attention", "sliding_window_pattern", "attention_multiplier", "embedding_multiplier",
    "residual_multiplier", "logits_scaling", "logit_scale", "num_local_experts", "num_experts", "mrope_section",
    "use_parallel_residual", "parallel_attn", "qk_layernorm", "use_qk_norm", "clip_qkv", "alibi", "position_embedding_type",
    "quantization_config",
};

void refuse_unread(const ConfigFields& f, const std::set<std::string>& read, const std::string& model_type) {
    for (auto it = f.j.begin(); it != f.j.end(); ++it) {
        const std::string& key = it.key();
        if (read.count(key) || it.value().is_null() || it.value() == false) continue;
        bool math = key.rfind("rope_", 0) == 0;
        for (const char* m : kMathFields) math = math || key == m;
        if (math)
            f.fail(key, "changes the attention, and attnviz's " + model_type +
                            " does not read it: refused rather than ignored (the figure would be wrong)");
    }
}

constexpr const FamilyDef* kFamilies[] = {&kGpt2Family,   &kBertFamily,   &kMarianFamily, &kLlamaFamily,
                                          &kMistralFamily, &kQwen2Family, &kQwen3Family,  &kGemma2Family,
                                          &kGemma3Family, &kPhi3Family,   &kSmolLM3Family, &kGraniteFamily,
                                          &kOlmo2Family,  &kExaone4Family, &kCohere2Family, &kGlm4Family,
                                          &kSeedOssFamily, &kQwen3MoeFamily, &kGptOssFamily, &kVitFamily,
                                          &kClipFamily, &kClipVisionFamily, &kSiglipFamily, &kSiglipVisionFamily,
                                          &kDinov2Family, &kDinov2RegistersFamily, &kIdefics3Family, &kSmolVlmFamily,
                                          &kGemma3VlmFamily, &kQwen25VlFamily, &kQwen25VisionFamily};

}  // namespace

const FamilyDef* find_family(const std::string& model_type) {
    for (const FamilyDef* f : kFamilies)
        if (f->read && model_type == f->model_type) return f;
    return nullptr;
}

const FamilyDef& family_of(const ModelConfig& c) {
    // kFamilies lists the families in the enum's order (a test holds it), so a config's family
    // is always its own: never another's by default.
    return *kFamilies[static_cast<int>(c.family)];
}

std::string supported_model_types() {
    std::string s;
    for (const FamilyDef* f : kFamilies)
        if (f->read) (s += s.empty() ? "" : ", ") += f->model_type;
    return s;
}

ModelConfig read_config(std::string_view text, const std::string& file) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        std::string what = e.what();  // "[json.exception.parse_error.101] parse error at …"
        if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
        throw ModelError(file, "", "not JSON: " + what);
    }
    if (!j.is_object()) throw ModelError(file, "", "expected a JSON object");
    std::set<std::string> read;
    const ConfigFields f{j, file, "", &read};
    ModelConfig c;
    const json* type = f.find("model_type");
    if (!type) f.fail("model_type", "missing");
    if (!type->is_string()) f.fail("model_type", "expected a string, got " + type->dump());
    c.model_type = type->get<std::string>();
    const FamilyDef* family = find_family(c.model_type);
    if (!family) f.fail("model_type", type->dump() + " is not one of " + supported_model_types());
    c.family = family->family;
    family->read(f, c);
    refuse_unread(f, read, c.model_type);
    c.name = f.text("_name_or_path", "");
    return c;
}

}  // namespace attn
